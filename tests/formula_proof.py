"""Formula agreement proven cell by cell: each formula cell of a built workbook evaluated by `formulas` from the
cached values of the cells, ranges and defined names it reads, and compared with its own cached value.

If every formula cell agrees with its precedents' cached values, the cached values are what a spreadsheet computes
on opening the file (by induction over the dependency order), without compiling the whole workbook: the formula
texts are compiled once each, with every reference replaced by a placeholder, so a column of formulas that differ
only in their row (or a month row that differs only in its columns) is one compiled function. `formulas` evaluates
it with the spreadsheet rounding that tests/conftest.py patches in (15 significant digits before CEILING, FLOOR,
ROUNDUP and ROUND, as the SPEC asks).

`prove(path)` lists the cells that disagree. `local_recalc(path)` gives every cell's value, each formula evaluated
from the cached values it reads (what a whole recalculation gives when the proof holds); `local_recalc(path,
changes)` recalculates what typed values reach, the formulas evaluated again in dependency order over the new values
and the cached values of the rest (proven by the tests that prove the workbook), as a spreadsheet does after an edit. Both keep the workbook read (`proof_of`, by
the file's content) for the session. tests/test_workbook.py checks both against `formulas` recalculating a small
plan's whole workbook; tests/test_formula_proof.py plants wrong formulas and values and sees them caught.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import openpyxl
from openpyxl.utils import column_index_from_string, get_column_letter
from openpyxl.utils.datetime import to_excel

# One token of a formula's text, in the order tried: a text literal, a cell or range reference (sheet optional),
# a function name, a defined name (or TRUE/FALSE), a number, anything else one character at a time.
_SHEET = r"(?:'(?:[^']|'')+'|[A-Za-z_][\w.]*)!"
_CELL = r"\$?[A-Z]{1,3}\$?\d+"
_TOKEN = re.compile(
    rf"""(?P<text>"(?:[^"]|"")*")
        |(?P<ref>(?P<sheet>{_SHEET})?(?P<first>{_CELL})(?::(?P<last>{_CELL}))?)(?![\w.(!])
        |(?P<function>[A-Za-z_][\w.]*)(?=\()
        |(?P<name>[A-Za-z_\\][\w.]*)(?![\w.!(])
        |(?P<number>\d+\.?\d*(?:[Ee][+-]?\d+)?)
        |(?P<other>.)""",
    re.VERBOSE | re.DOTALL,
)
_A1 = re.compile(r"\$?([A-Z]{1,3})\$?(\d+)")
_ERRORS = frozenset({"#NULL!", "#DIV/0!", "#VALUE!", "#REF!", "#NAME?", "#NUM!", "#N/A"})

Area = tuple[str, int, int, int, int]   # sheet (upper case), first row, first column, last row, last column


@dataclass(frozen=True)
class Mismatch:
    """A formula cell whose formula, evaluated from its precedents' cached values, is not its own cached value."""
    sheet: str
    cell: str
    formula: str
    cached: object
    computed: object

    def __str__(self) -> str:
        return f"{self.sheet}!{self.cell} {self.formula}: cached {self.cached!r}, computed {self.computed!r}"


def _area(sheet: str, first: str, last: str | None) -> Area:
    c1, r1 = _A1.fullmatch(first).groups()
    c2, r2 = _A1.fullmatch(last or first).groups()
    return (sheet, int(r1), column_index_from_string(c1), int(r2), column_index_from_string(c2))


def _sheet_name(token: str, here: str) -> str:
    if not token:
        return here
    name = token[:-1]
    if name.startswith("'"):
        name = name[1:-1].replace("''", "'")
    return name.upper()


def split_formula(formula: str, sheet: str) -> tuple[str, list[tuple[str, str]]]:
    """The formula with each distinct reference (cell, range, defined name) replaced by a placeholder `_P<i>`, and
    the references in placeholder order as ("ref", "SHEET!A1:B2") or ("name", "NAME"): cells in one column share
    the template though their references move with the row."""
    refs: dict[tuple[str, str], str] = {}
    out = []
    for m in _TOKEN.finditer(formula):
        if m.group("ref"):
            key = ("ref", f"{_sheet_name(m.group('sheet'), sheet)}!{m.group('first').replace('$', '')}"
                          + (f":{m.group('last').replace('$', '')}" if m.group("last") else ""))
        elif m.group("name") and m.group("name").upper() not in ("TRUE", "FALSE"):
            key = ("name", m.group("name").upper())
        else:
            out.append(m.group(0))
            continue
        out.append(refs.setdefault(key, f"_P{len(refs)}"))
    return "".join(out), list(refs)


class _Compiler:
    """`formulas` functions by template text, compiled once per process."""

    def __init__(self):
        from conftest import _patched_formulas

        self.formulas = _patched_formulas()
        self.functions: dict[str, tuple[object, list[int]]] = {}
        self.pipes: dict[str, object] = {}   # the compiled function as `formulas` dispatches it (see _Steps)

    def __call__(self, template: str):
        """The function of the template and, for each of its arguments, the placeholder's number."""
        found = self.functions.get(template)
        if found is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                func = self.pipes[template] = self.formulas.Parser().ast(template)[1].compile()
            order = [int(name.removeprefix("_P")) for name in func.inputs]
            found = self.functions[template] = (_Steps.of(func) or func, order)
        return found


class _Steps:
    """A compiled formula's function nodes run in dependency order, without schedula's dispatcher (which costs
    some 50 microseconds a node): the same functions on the same values, for graphs where each value has one
    producer and no node has a domain (what `formulas` compiles a single formula to). `of` returns None for a
    graph outside that shape, which is then called through schedula."""

    def __init__(self, inputs, defaults, steps, output):
        self.inputs, self.defaults, self.steps, self.output = inputs, defaults, steps, output

    @classmethod
    def of(cls, func) -> _Steps | None:
        dsp = func.dsp
        nodes, pred = dsp.nodes, dsp.dmap.pred
        functions = {k: v for k, v in nodes.items() if v["type"] == "function"}
        if any(v["type"] not in ("function", "data") for v in nodes.values()) or len(func.outputs) != 1:
            return None
        if any(len(pred[k]) > 1 for k, v in nodes.items() if v["type"] == "data"):
            return None
        if any(not v.get("wait_inputs", True) or "input_domain" in v for v in functions.values()):
            return None
        known = set(dsp.default_values) | set(func.inputs)
        steps, waiting = [], dict(functions)
        while waiting:
            ready = [k for k, v in waiting.items() if all(i in known for i in v.get("inputs") or ())]
            if not ready:
                return None
            for k in ready:
                v = waiting.pop(k)
                outputs = tuple(v["outputs"])
                filters = tuple(tuple(nodes[o].get("filters") or ()) for o in outputs)
                steps.append((v["function"], tuple(v.get("inputs") or ()), outputs, filters))
                known.update(outputs)
        if func.outputs[0] not in known:
            return None
        defaults = {k: v["value"] for k, v in dsp.default_values.items()}
        return cls(tuple(func.inputs), defaults, steps, func.outputs[0])

    def __call__(self, *args):
        env = dict(self.defaults)
        env.update(zip(self.inputs, args))
        for function, inputs, outputs, filters in self.steps:
            result = function(*(env[i] for i in inputs))
            results = (result,) if len(outputs) == 1 else result
            for out, value, chain in zip(outputs, results, filters, strict=True):
                for f in chain:
                    value = f(value)
                env[out] = value
        return env[self.output]


_COMPILER: _Compiler | None = None


def _compiler() -> _Compiler:
    global _COMPILER
    if _COMPILER is None:
        _COMPILER = _Compiler()
    return _COMPILER


def _plain(value):
    from conftest import _plain as plain
    return plain(value)


def _cached(value, is_formula: bool):
    """A cached value as the evaluation reads it: a formula's blank result is "", a blank input cell is empty,
    a date its serial number, an error text the error."""
    import schedula as sh

    if value is None:
        return "" if is_formula else sh.EMPTY
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return float(to_excel(value))
    if isinstance(value, str) and value in _ERRORS:
        from formulas.functions import Error
        return Error.errors[value]
    return value


Cell = tuple[str, int, int]   # sheet (upper case), row, column


def _a1(cell: Cell) -> tuple[str, str]:
    return cell[0], f"{get_column_letter(cell[2])}{cell[1]}"


def _cell(sheet: str, a1: str) -> Cell:
    column, row = _A1.fullmatch(a1).groups()
    return sheet.upper(), int(row), column_index_from_string(column)


class Proof:
    """A built workbook read once (formulas and cached values) for proving and recalculating its formula cells.

    `mismatches()` is the proof; `values()` every cell's value with each formula evaluated from its precedents'
    cached values (what a whole recalculation gives when the proof holds); `values(changes)` the same after typing
    values into cells, the formulas that read them (directly or not) evaluated again in dependency order."""

    def __init__(self, path: Path | str):
        import schedula as sh

        self.path = Path(path)
        formulas_wb = openpyxl.load_workbook(self.path)
        values_wb = openpyxl.load_workbook(self.path, data_only=True)
        self.names: dict[str, Area] = {}
        for name, defined in formulas_wb.defined_names.items():
            sheet, ref = defined.attr_text.rsplit("!", 1)
            first, _, last = ref.partition(":")
            self.names[name.upper()] = _area(_sheet_name(sheet + "!", ""), first, last or None)
        self.titles: dict[str, str] = {}
        self.cells: dict[Cell, object] = {}      # every non-blank cell's cached value, as the evaluation reads it
        self.formulas: dict[Cell, str] = {}      # every formula cell's text
        for ws in formulas_wb.worksheets:
            sheet = ws.title.upper()
            self.titles[sheet] = ws.title
            for row, cached_row in zip(ws.iter_rows(), values_wb[ws.title].iter_rows(), strict=True):
                for cell, cached in zip(row, cached_row, strict=True):
                    is_formula = cell.data_type == "f"
                    if is_formula:
                        self.formulas[(sheet, cell.row, cell.column)] = cell.value
                    if is_formula or cached.value is not None:
                        self.cells[(sheet, cell.row, cell.column)] = _cached(cached.value, is_formula)
        self._empty = sh.EMPTY
        self._inputs: dict[Area, object] = {}                 # a cached area's `Ranges`, by area
        self._parts: dict[Cell, tuple[str, list[Area]]] = {}  # a formula's template and the areas it reads
        self._computed: dict[Cell, object] = {}               # a formula cell evaluated from cached values
        self._readers: tuple[dict, dict] | None = None        # who reads a cell: see _reader_index

    # ------------------------------------------------------------------ one cell

    def parts(self, cell: Cell) -> tuple[str, list[Area]]:
        """The formula's template (references as placeholders) and the area each placeholder reads."""
        found = self._parts.get(cell)
        if found is None:
            template, refs = split_formula(self.formulas[cell], cell[0])
            areas = []
            for kind, text in refs:
                if kind == "name":
                    areas.append(self.names[text])
                else:
                    sheet, cells = text.rsplit("!", 1)
                    first, _, last = cells.partition(":")
                    areas.append(_area(sheet, first, last or None))
            found = self._parts[cell] = (template, areas)
        return found

    def _ranges(self, area: Area, values: dict[Cell, object]):
        """An area's values as `formulas` hands them to a function: a `Ranges` (which INDEX reads as a reference)."""
        import numpy as np
        from formulas.ranges import Ranges

        sheet, r1, c1, r2, c2 = area
        array = np.array([[values.get((sheet, r, c), self._empty) for c in range(c1, c2 + 1)]
                          for r in range(r1, r2 + 1)], dtype=object)
        return Ranges().push(f"'{sheet}'!{get_column_letter(c1)}{r1}:{get_column_letter(c2)}{r2}", array)

    def _cached_input(self, area: Area):
        found = self._inputs.get(area)
        if found is None:
            found = self._inputs[area] = self._ranges(area, self.cells)
        return found

    def _evaluate(self, cell: Cell, inputs) -> object:
        template, areas = self.parts(cell)
        func, order = _compiler()(template)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _plain(func(*(inputs(areas[i]) for i in order)))

    def evaluate_dispatched(self, cell: Cell) -> object:
        """`evaluate` through schedula's dispatcher, as `formulas` runs a compiled function: ten times slower, for the
        test that `_Steps` computes the same."""
        template, areas = self.parts(cell)
        _, order = _compiler()(template)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _plain(_compiler().pipes[template](*(self._cached_input(areas[i]) for i in order)))

    def evaluate(self, cell: Cell) -> object:
        """The formula of `cell` evaluated from the cached values it reads."""
        found = self._computed.get(cell, self)
        if found is self:
            found = self._computed[cell] = self._evaluate(cell, self._cached_input)
        return found

    def cached(self, cell: Cell) -> object:
        value = self.cells.get(cell)
        return None if value is self._empty else value

    # ------------------------------------------------------------------ the proof

    def _cells_of(self, sheets: Iterable[str] | None) -> list[Cell]:
        wanted = None if sheets is None else {s.upper() for s in sheets}
        return [c for c in self.formulas if wanted is None or c[0] in wanted]

    def mismatches(self, sheets: Iterable[str] | None = None, rel: float = 1e-9) -> list[Mismatch]:
        """Every formula cell (of `sheets`, all by default) whose evaluation is not its cached value."""
        from conftest import same

        out = []
        for cell in self._cells_of(sheets):
            cached, computed = self.cached(cell), self.evaluate(cell)
            if not same(computed, cached, rel=rel):
                sheet, a1 = _a1(cell)
                out.append(Mismatch(self.titles[sheet], a1, self.formulas[cell], cached, computed))
        return out

    # ------------------------------------------------------------------ recalculation after typed values

    def _reader_index(self) -> tuple[dict, dict]:
        """Who reads a cell: formula cells by the single cell they read, and by column the multi-cell areas read
        (each area once, with its readers)."""
        if self._readers is None:
            single: dict[Cell, list[Cell]] = {}
            areas: dict[Area, list[Cell]] = {}
            for cell in self.formulas:
                for area in set(self.parts(cell)[1]):
                    sheet, r1, c1, r2, c2 = area
                    if (r1, c1) == (r2, c2):
                        single.setdefault((sheet, r1, c1), []).append(cell)
                    else:
                        areas.setdefault(area, []).append(cell)
            by_column: dict[tuple[str, int], list[tuple[int, int, list[Cell]]]] = {}
            for (sheet, r1, c1, r2, c2), readers in areas.items():
                for c in range(c1, c2 + 1):
                    by_column.setdefault((sheet, c), []).append((r1, r2, readers))
            self._readers = single, by_column
        return self._readers

    def _readers_of(self, cell: Cell) -> Iterable[Cell]:
        single, by_column = self._reader_index()
        yield from single.get(cell, ())
        sheet, row, column = cell
        for r1, r2, readers in by_column.get((sheet, column), ()):
            if r1 <= row <= r2:
                yield from readers

    def values(self, changes: dict[str, object] | None = None,
               sheets: Iterable[str] | None = None) -> dict[tuple[str, str], object]:
        """Every cell's value, (SHEET, A1) -> value: without `changes`, the input cells' and each formula cell's of
        `sheets` (all by default) evaluated from its precedents' cached values. After `changes` ("Sheet!A1" -> typed
        value), the formula cells they reach, directly or not, on any sheet, are evaluated again in dependency order
        from the new values, and the others keep their cached values (their evaluation, where the proof holds)."""
        typed = {}
        for ref, value in (changes or {}).items():
            sheet, a1 = ref.rsplit("!", 1)
            typed[_cell(sheet.strip("'"), a1.replace("$", ""))] = value
        out = {cell: self.cached(cell) for cell in self.cells if cell not in self.formulas}
        if not typed:
            out.update((cell, self.evaluate(cell)) for cell in self._cells_of(sheets))
            return {_a1(c): v for c, v in out.items()}
        out.update((cell, self.cached(cell)) for cell in self.formulas)
        current = dict(self.cells)
        current.update((c, self._empty if v is None else v) for c, v in typed.items())

        # what the typed cells reach, each reader with the reached cells it reads; then evaluated in dependency
        # order (Kahn), the areas that hold a typed or reached cell read from the new values
        edges: dict[Cell, set[Cell]] = {}
        stack = list(typed)
        while stack:
            cell = stack.pop()
            for reader in self._readers_of(cell):
                if reader in typed:
                    continue   # a formula overwritten by a typed value
                if reader not in edges:
                    edges[reader] = set()
                    stack.append(reader)
                if cell not in typed:
                    edges[reader].add(cell)
        dirty: dict[tuple[str, int], set[int]] = {}
        for sheet, row, column in (*edges, *typed):
            dirty.setdefault((sheet, column), set()).add(row)
        volatile: dict[Area, bool] = {}

        def inputs(area: Area):
            if area not in volatile:
                sheet, r1, c1, r2, c2 = area
                volatile[area] = any(r1 <= r <= r2 for c in range(c1, c2 + 1) for r in dirty.get((sheet, c), ()))
            return self._ranges(area, current) if volatile[area] else self._cached_input(area)

        waiting = {cell: set(before) for cell, before in edges.items()}
        ready = [cell for cell, before in waiting.items() if not before]
        readers_of: dict[Cell, list[Cell]] = {}
        for cell, before in waiting.items():
            for b in before:
                readers_of.setdefault(b, []).append(cell)
        done = 0
        while ready:
            cell = ready.pop()
            done += 1
            value = self._evaluate(cell, inputs)
            current[cell] = _cached(value, is_formula=True)
            out[cell] = value
            for after in readers_of.get(cell, ()):
                waiting[after].discard(cell)
                if not waiting[after]:
                    ready.append(after)
        assert done == len(waiting), "a circular reference among the recalculated cells"
        out.update(typed)
        return {_a1(c): v for c, v in out.items()}


_PROOFS: dict[str, Proof] = {}
_PROOFS_KEPT = 8


def proof_of(path: Path | str) -> Proof:
    """The workbook's `Proof`, read once per content (by the SHA-256 of its bytes) and kept for the session."""
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    found = _PROOFS.pop(digest, None) or Proof(path)
    _PROOFS[digest] = found
    while len(_PROOFS) > _PROOFS_KEPT:
        _PROOFS.pop(next(iter(_PROOFS)))
    return found


def prove(path: Path | str, sheets: Iterable[str] | None = None) -> list[Mismatch]:
    """The formula cells of the workbook at `path` (of `sheets`, all by default) that do not evaluate to their
    cached values: none, when it is right."""
    return proof_of(path).mismatches(sheets)


def local_recalc(path: Path | str, changes: dict[str, object] | None = None,
                 sheets: Iterable[str] | None = None) -> dict[tuple[str, str], object]:
    """`Proof.values` of the workbook at `path`: every cell's value, the formulas evaluated cell by cell."""
    return proof_of(path).values(changes, sheets)
