"""Shared test helpers: input workbooks from dicts, the sample's workbook built once per session, recalculation
with the `formulas` package (whole workbooks, kept for a few small plans; tests/formula_proof.py proves the rest cell
by cell), the fixed test catalog, a private $TMPDIR for every test, and a check that failed commands leave nothing
behind."""

from __future__ import annotations

import collections
import contextlib
import datetime as dt
import functools
import hashlib
import math
import tempfile
import warnings
from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path

import openpyxl
import pytest
from formula_proof import local_recalc, prove  # noqa: F401  (the tests' way to check formulas, see formula_proof)

import budgetgen
from budgetgen.catalog import gpus as catalog
from budgetgen.catalog import models, prices

REPO = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
SAMPLE = DATA / "q3.xlsx"  # the sample inventory as the tests know it (frozen; see tests/data/README.md)
SHIPPED_SAMPLE = REPO / "inputs" / "q3.xlsx"  # the sample as shipped: what another interpreter, with the shipped
# catalogs (not the tests' fixed copies), builds
TEST_CATALOG = DATA / "gpus.csv"  # the built-in catalog as the tests know it (see tests/data/NOTICE.md)
TEST_PRICES = DATA / "prices.csv"  # the built-in offers as the tests know them
TEST_MODELS = DATA / "models.csv"  # the built-in model catalog as the tests know it
FOCUS_SAMPLE = DATA / "focus_sample.csv"  # the FinOps Foundation's FOCUS 1.0 sample bill, CC BY 4.0


def pytest_report_header() -> str:
    """Which budgetgen the tests exercise: the work tree's, or (in CI) the installed package's."""
    return f"budgetgen {budgetgen.__version__} from {Path(budgetgen.__file__).parent}"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests of a module that share a module-scoped fixture (a build, a LibreOffice run, a wheel) run on one
    xdist worker (`--dist loadgroup`), so the fixture is made once, not once per worker; a test with a group of its
    own keeps it."""
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        info = getattr(item, "_fixtureinfo", None)
        scopes = {d.scope for defs in (info.name2fixturedefs.values() if info else ()) for d in defs}
        if "module" in scopes:
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))


@pytest.fixture(autouse=True, scope="session")
def fixed_catalog() -> Iterator[Path]:
    """Every test (and every module-scoped fixture: hence the session scope) sees the fixed test catalog as the
    built-in one, so adding a GPU to the product breaks no test. A test running budgetgen in another
    interpreter sets `catalog.CATALOG_RESOURCE` there too (see `test_bad_input.ISOLATED`). The offers (prices) and
    the model catalog likewise are the fixed `TEST_PRICES` and `TEST_MODELS`."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(catalog, "CATALOG_RESOURCE", TEST_CATALOG)
        patch.setattr(prices, "OFFERS_RESOURCE", TEST_PRICES)
        patch.setattr(models, "MODELS_RESOURCE", TEST_MODELS)
        models.builtin_models.cache_clear()
        yield TEST_CATALOG
    models.builtin_models.cache_clear()


@contextlib.contextmanager
def shipped_catalogs() -> Iterator[None]:
    """Within it, the catalogs the package ships (GPUs, offers, models) in place of the tests' fixed copies: what a
    user's `init` and `build` see."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(catalog, "CATALOG_RESOURCE", files("budgetgen") / "data" / "gpus.csv")
        patch.setattr(prices, "OFFERS_RESOURCE", files("budgetgen") / "data" / "prices.csv")
        patch.setattr(models, "MODELS_RESOURCE", files("budgetgen") / "data" / "models.csv")
        models.builtin_models.cache_clear()
        try:
            yield
        finally:
            models.builtin_models.cache_clear()


@pytest.fixture(scope="session")
def sample_book(tmp_path_factory: pytest.TempPathFactory, fixed_catalog: Path):
    """inputs/q3.xlsx planned and written once per session (once per xdist worker) for every module that reads it:
    (plan, workbook path). A test that changes the file works on a copy."""
    from budgetgen.io.reader import read_inputs
    from budgetgen.plan.engine import plan_budget
    from budgetgen.workbook import write_workbook

    plan = plan_budget(read_inputs(SAMPLE, today=TODAY))
    return plan, write_workbook(plan, tmp_path_factory.mktemp("sample") / "q3.xlsx")


@pytest.fixture(scope="session")
def sample_book_zh(tmp_path_factory: pytest.TempPathFactory, fixed_catalog: Path):
    """The sample's workbook in Chinese (`lang="zh"`), once per session: (plan, workbook path)."""
    from budgetgen.io.reader import read_inputs
    from budgetgen.plan.engine import plan_budget
    from budgetgen.workbook import write_workbook

    plan = plan_budget(read_inputs(SAMPLE, today=TODAY))
    return plan, write_workbook(plan, tmp_path_factory.mktemp("sample_zh") / "q3-zh.xlsx", lang="zh")


@pytest.fixture(autouse=True)
def private_tmpdir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """An empty $TMPDIR of the test's own, which must be empty again when the test ends: nothing budgetgen
    does (a build, a failed build, an interrupted one) may leave files in the temporary folder."""
    folder = tmp_path_factory.mktemp("TMPDIR", numbered=True)
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr(tempfile, "tempdir", None)  # forget the cached temporary folder: $TMPDIR is read again
    yield folder
    assert listing(folder) == set(), f"left in $TMPDIR: {sorted(listing(folder))}"


def listing(folder: Path) -> set[str]:
    """Every path under `folder`, relative to it (an absent folder holds nothing)."""
    return {str(p.relative_to(folder)) for p in folder.rglob("*")} if folder.exists() else set()


class Debris:
    """Watches folders (and $TMPDIR) across a command: `check()` asserts nothing in them was added or removed."""

    def __init__(self, tmpdir: Path):
        self.before = {tmpdir: listing(tmpdir)}

    def watch(self, *folders: Path) -> Debris:
        self.before.update({Path(f): listing(Path(f)) for f in folders})
        return self

    def check(self) -> None:
        for folder, before in self.before.items():
            assert listing(folder) == before, f"{folder} changed: {sorted(listing(folder) ^ before)}"


@pytest.fixture
def debris(private_tmpdir: Path) -> Debris:
    """`debris.watch(output_folder)` before a failing command, `debris.check()` after it."""
    return Debris(private_tmpdir)
TODAY = dt.date(2026, 6, 15)  # plans built in tests start 2026-07 unless they say otherwise


def make_input(path: Path, tasks: list[dict], settings: dict | None = None, gpus: list[dict] | None = None,
               extras: list[dict] | None = None, extra_sheets: dict[str, list[list]] | None = None) -> Path:
    """An input workbook with openpyxl, as a finance user would fill it in."""
    wb = openpyxl.Workbook()
    wb.remove(wb.active)

    def table(name: str, rows: list[dict]) -> None:
        ws = wb.create_sheet(name)
        headers = list(dict.fromkeys(k for row in rows for k in row))
        ws.append(headers)
        for row in rows:
            ws.append([row.get(h) for h in headers])

    settings = {"period_start": "2026-07", **(settings or {})}
    table("Settings", [{"setting": k, "value": v} for k, v in settings.items()])
    table("Tasks", tasks)
    if gpus:
        table("GPUs", gpus)
    if extras:
        table("Extras", extras)
    for name, rows in (extra_sheets or {}).items():
        ws = wb.create_sheet(name)
        for row in rows:
            ws.append(row)
    wb.save(path)
    return path


def _sheet_round(value: float) -> float:
    return float(f"{value:.15g}")


@functools.cache
def _patched_formulas():
    """`formulas` with CEILING/FLOOR/ROUNDUP/ROUND rounding to 15 significant digits first, as spreadsheets do."""
    import formulas
    from formulas.functions import math as fmath
    from formulas.functions import wrap_ufunc

    funcs = formulas.get_functions()
    funcs["CEILING"] = wrap_ufunc(functools.partial(fmath.xceiling, ceil=lambda v: math.ceil(_sheet_round(v))))
    funcs["FLOOR"] = wrap_ufunc(functools.partial(fmath.xceiling, ceil=lambda v: math.floor(_sheet_round(v)),
                                                  dfl=fmath.Error.errors["#DIV/0!"]))
    funcs["ROUNDUP"] = wrap_ufunc(functools.partial(fmath.xround, func=lambda v: math.ceil(_sheet_round(v))))
    funcs["ROUND"] = wrap_ufunc(functools.partial(fmath.xround, func=lambda v: fmath.round_up(_sheet_round(v))))
    return formulas


def _plain(value):
    """A `formulas` result cell as a plain Python value (errors as their text)."""
    import numpy as np

    while hasattr(value, "value"):
        value = value.value
    if isinstance(value, np.ndarray):
        value = value.ravel()[0]
    if isinstance(value, np.generic):
        value = value.item()
    if type(value).__name__ == "XlError":
        return str(value)
    return value


class _Compiled:
    """One workbook's `formulas` model, compiled once, and its recalculation without edits."""

    def __init__(self, path: Path, sheets: frozenset[str] | None):
        self.book = path.name
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = _patched_formulas().ExcelModel()
            if sheets is None:
                model.loads(str(path))
            else:  # those sheets' cells; finish() adds the cells they refer to, directly or not
                book, context = model.add_book(str(path))
                for name in book.sheetnames:
                    if name.upper() in sheets:
                        model.push(book[name], context)
            self.model = model.finish()
        self.unedited = self._calculate()
        self.ranges: list[tuple[dict, str]] | None = None  # every range node with its bounds, once an edit needs them

    def _calculate(self, **kwargs) -> dict:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return dict(self.model.calculate(**kwargs))

    def _dependents(self, cells: set[str]) -> set[str]:
        """Every data node (cell, range, name) that depends on `cells`, directly or not, and the cells themselves.

        A range reads a cell that is blank in the file from the solution, without an edge from the cell (there
        is no node for it): the ranges that hold a changed cell are its dependents too."""
        from formulas.ranges import Ranges

        succ, data = self.model.dsp.dmap.succ, self.model.dsp.data_nodes
        if self.ranges is None:
            self.ranges = [(Ranges.get_range(n), n) for n in data if isinstance(n, str) and "!" in n
                           and ":" in n.rsplit("!", 1)[1]]
        nodes = set(cells)
        for cell in map(Ranges.get_range, cells):
            nodes.update(n for r, n in self.ranges if r["sheet_id"] == cell["sheet_id"]
                         and int(r["r1"]) <= int(cell["r1"]) <= int(r["r2"]) and r["n1"] <= cell["n1"] <= r["n2"])
        seen, stack = set(nodes), list(nodes)
        while stack:
            for after in succ.get(stack.pop(), ()):
                if after not in seen:
                    seen.add(after)
                    stack.append(after)
        return {n for n in seen if n in data} | cells

    def calculate(self, changes: dict[str, object]) -> dict[tuple[str, str], object]:
        """Every cell's value after setting `changes` ("Sheet!A1" -> value) on the compiled model.

        What does not depend on a changed cell keeps its unedited value; the rest is recalculated (and is absent,
        as in a whole recalculation, where `formulas` cannot calculate it)."""
        inputs = {}
        for ref, value in changes.items():
            sheet, cell = ref.split("!")
            inputs[f"'[{self.book}]{sheet.upper()}'!{cell.upper()}"] = value
        solution = self.unedited
        if inputs:
            dependents = self._dependents(set(inputs))
            edited = self._calculate(inputs=inputs, outputs=sorted(dependents))
            solution = {k: v for k, v in solution.items() if k not in dependents}
            solution.update((k, v) for k, v in edited.items() if k in dependents)
        out = {}
        for key, value in solution.items():
            if "!" not in key or ":" in key.split("!")[1]:
                continue
            book_sheet, cell = key.rsplit("!", 1)
            sheet = book_sheet.split("]", 1)[1].rstrip("'")
            out[(sheet.upper(), cell.upper())] = _plain(value)
        return out


# Compiled models by the SHA-256 of the file's bytes (and the sheets compiled, None for all): the sample's
# workbook, built alike (byte for byte) by several modules under several names, is compiled once per session. A
# model keeps the name it was compiled under, which only its cell keys carry. A model of the sample holds some
# 350 MB, a small plan's 100-150 MB: the last 8 are kept, enough that the property tests' workbooks, compiled
# between test_order and test_summary_live, do not push the sample's out.
_COMPILED: collections.OrderedDict[tuple[str, frozenset[str] | None], _Compiled] = collections.OrderedDict()
_COMPILED_KEPT = 8


def _compiled(path: Path, sheets: frozenset[str] | None) -> _Compiled:
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    key = (digest, None) if (digest, None) in _COMPILED else (digest, sheets)
    if key in _COMPILED:
        _COMPILED.move_to_end(key)
    else:
        _COMPILED[key] = _Compiled(path, sheets)
        while len(_COMPILED) > _COMPILED_KEPT:
            _COMPILED.popitem(last=False)
    return _COMPILED[key]


def recalc_formulas(path: Path, changes: dict[str, object] | None = None,
                    sheets: tuple[str, ...] | None = None) -> dict[tuple[str, str], object]:
    """Every cell's value after `formulas` recalculates the workbook, optionally after changing input cells.

    Keys are (sheet, A1). `changes` maps "Sheet!A1" to a new input value. `sheets` names the sheets a test reads:
    only their cells and those they depend on are compiled and returned (the sample's Candidates sheet alone is
    two thirds of its formulas); all sheets by default. The workbook is compiled once per content (the file is
    not read again while its bytes stay the same); a call with changes recalculates the cells that depend on them.
    """
    wanted = None if sheets is None else frozenset(s.upper() for s in sheets)
    return _compiled(Path(path), wanted).calculate(changes or {})


def formula_cells(path: Path) -> dict[tuple[str, str], tuple[str, object]]:
    """(sheet, A1) -> (formula, cached value) for every formula cell."""
    formulas_wb = openpyxl.load_workbook(path)
    values_wb = openpyxl.load_workbook(path, data_only=True)
    out = {}
    for ws in formulas_wb.worksheets:
        vs = values_wb[ws.title]
        for row in ws.iter_rows():
            for cell in row:
                if cell.data_type == "f":
                    out[(ws.title.upper(), cell.coordinate)] = (cell.value, vs[cell.coordinate].value)
    return out


def disagreements(whole: dict, local: dict) -> list[tuple]:
    """The cells where a whole recalculation by `formulas` (`recalc_formulas`) and the cell-by-cell evaluation of
    tests/formula_proof.py (`local_recalc`) of the same workbook and edits disagree: none, when the local evaluation
    reads every precedent a formula has. Checked on one small plan per feature; the rest of the suite uses the local
    evaluation only."""
    import schedula as sh

    return [(k, v, local.get(k, "<missing>")) for k, v in whole.items()
            if k[0] and not same(v, local.get(k)) and not (v is sh.EMPTY and k not in local)]   # names; blanks


def formulas_disagree(path: Path, changes: dict[str, object] | None = None) -> list[tuple]:
    """`disagreements` of the workbook at `path` after `changes`."""
    return disagreements(recalc_formulas(path, changes), local_recalc(path, changes))


def same(a, b, rel: float = 1e-9) -> bool:
    """Cell values agree: numbers to `rel`, blanks as empty strings, the rest exactly."""
    a = "" if a is None else a
    b = "" if b is None else b
    if isinstance(a, bool) or isinstance(b, bool):
        return bool(a) == bool(b) and type(a) is type(b) or a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=rel, abs_tol=1e-9)
    return a == b


@pytest.fixture
def inputs_dir(tmp_path: Path) -> Path:
    return tmp_path
