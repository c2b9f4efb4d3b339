"""Formula agreement proven cell by cell: each formula cell of a built workbook evaluated by `formulas` from the
cached values of the cells, ranges and defined names it reads, and compared with its own cached value.

If every formula cell agrees with its precedents' cached values, the cached values are what a spreadsheet computes
on opening the file (by induction over the dependency order), without compiling the whole workbook: the formula
texts are compiled once each, with every reference replaced by a placeholder, so a column of formulas that differ
only in their row (or a month row that differs only in its columns) is one compiled function. `formulas` evaluates
it with the spreadsheet rounding that tests/conftest.py patches in (15 significant digits before CEILING, FLOOR,
ROUNDUP and ROUND, as the SPEC asks).

`prove(path)` lists the cells that disagree; `Proof(path)` keeps the workbook read for several questions, and
`Proof.recalculate(changes)` recalculates only what an edit of input cells reaches (the formulas evaluated in
dependency order over the cached values of the rest), as a spreadsheet does after a typed value.
"""

from __future__ import annotations

import datetime as dt
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

    def __call__(self, template: str):
        found = self.functions.get(template)
        if found is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                func = self.formulas.Parser().ast(template)[1].compile()
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


class Proof:
    """A built workbook read once (formulas and cached values) for proving and recalculating its formula cells."""

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
        self.values: dict[str, dict[tuple[int, int], object]] = {}   # sheet -> (row, column) -> cached value
        self.formulas: dict[tuple[str, str], str] = {}                # (sheet, A1) -> formula text
        for ws in formulas_wb.worksheets:
            sheet = ws.title.upper()
            self.titles[sheet] = ws.title
            grid = self.values[sheet] = {}
            cached = values_wb[ws.title]
            for row, cached_row in zip(ws.iter_rows(), cached.iter_rows(), strict=True):
                for cell, value in zip(row, cached_row, strict=True):
                    is_formula = cell.data_type == "f"
                    if is_formula:
                        self.formulas[(sheet, cell.coordinate)] = cell.value
                    if is_formula or value.value is not None:
                        grid[(cell.row, cell.column)] = _cached(value.value, is_formula)
        self._empty = sh.EMPTY
        self._inputs: dict[tuple[str, str], object] = {}   # a reference's value for the evaluation, by reference
        self._parts: dict[tuple[str, str], tuple[str, list[tuple[str, str]]]] = {}

    # ------------------------------------------------------------------ evaluation of one cell

    def _area_of(self, ref: tuple[str, str]) -> Area:
        kind, text = ref
        if kind == "name":
            return self.names[text]
        sheet, cells = text.rsplit("!", 1)
        first, _, last = cells.partition(":")
        return _area(sheet, first, last or None)

    def _input(self, ref: tuple[str, str]):
        """A reference's value as `formulas` would hand it to a function: a `Ranges` of the cached values."""
        value = self._inputs.get(ref)
        if value is None:
            import numpy as np
            from formulas.ranges import Ranges

            sheet, r1, c1, r2, c2 = area = self._area_of(ref)
            grid = self.values[sheet]
            array = np.array([[grid.get((r, c), self._empty) for c in range(c1, c2 + 1)] for r in range(r1, r2 + 1)],
                             dtype=object)
            name = f"'{sheet}'!{get_column_letter(c1)}{r1}:{get_column_letter(c2)}{r2}"
            value = self._inputs[ref] = (Ranges().push(name, array), area)
        return value[0]

    def parts(self, key: tuple[str, str]) -> tuple[str, list[tuple[str, str]]]:
        found = self._parts.get(key)
        if found is None:
            found = self._parts[key] = split_formula(self.formulas[key], key[0])
        return found

    def evaluate(self, key: tuple[str, str]):
        """The formula of cell `key` ((SHEET, A1)) evaluated from the cached values it reads."""
        template, refs = self.parts(key)
        func, order = _compiler()(template)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _plain(func(*(self._input(refs[i]) for i in order)))

    def cached(self, key: tuple[str, str]):
        sheet, a1 = key
        column, row = _A1.fullmatch(a1).groups()
        value = self.values[sheet].get((int(row), column_index_from_string(column)))
        return None if value is self._empty else value

    # ------------------------------------------------------------------ the proof

    def mismatches(self, sheets: Iterable[str] | None = None, rel: float = 1e-9) -> list[Mismatch]:
        """Every formula cell (of `sheets`, all by default) whose evaluation is not its cached value."""
        from conftest import same

        wanted = None if sheets is None else {s.upper() for s in sheets}
        out = []
        for key, formula in self.formulas.items():
            if wanted is not None and key[0] not in wanted:
                continue
            cached, computed = self.cached(key), self.evaluate(key)
            if not same(computed, cached, rel=rel):
                out.append(Mismatch(self.titles[key[0]], key[1], formula, cached, computed))
        return out


def prove(path: Path | str, sheets: Iterable[str] | None = None) -> list[Mismatch]:
    """The formula cells of the workbook at `path` that do not evaluate to their cached values (none, if it is
    right)."""
    return Proof(path).mismatches(sheets)
