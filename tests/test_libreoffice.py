"""LibreOffice recalculates the sample, the `init` template and a small plan to the engine's cached values."""

from __future__ import annotations

import csv
import math
import os
import shutil
from pathlib import Path

import openpyxl
import pytest
from click.testing import CliRunner
from conftest import SAMPLE, TODAY, formula_cells, make_input
from lo_recalc import SheetValues, is_error, read_values, recalc_many, soffice_path
from order_sheet import read_order
from test_order_providers import ACME_REQUOTED, ZETA, formulas_by_label, quoted, requote_h100  # noqa: F401
from test_workbook import BASE_SETTINGS, BASE_TASKS

from budgetgen.cli import main
from budgetgen.io.reader import read_inputs
from budgetgen.io.template import write_template
from budgetgen.plan.engine import plan_budget
from budgetgen.workbook import write_workbook

SKIP_REASON = "LibreOffice (soffice) not installed: apt-get install libreoffice-calc-nogui"
pytestmark = pytest.mark.slow

if soffice_path() is None:
    if os.environ.get("CI") == "true":
        pytest.fail(SKIP_REASON + " (required when CI=true)", pytrace=False)
    pytest.skip(SKIP_REASON, allow_module_level=True)

ERROR_MARKERS = ("#NAME?", "#REF!", "#VALUE!", "#DIV/0!", "#N/A", "#NUM!", "#NULL!", "Err:")
# plus "broken", a sample copy with one formula doubled, and "requoted", test_order_providers' plan re-quoted
BOOKS = ("sample", "template", "base", "recon-zh")


def lo_same(lo, cached) -> bool:
    """LibreOffice's value equals the cached one: numbers to 1e-9 relative, text and booleans exactly."""
    lo = "" if lo is None else lo
    cached = "" if cached is None else cached
    if isinstance(lo, bool) or isinstance(cached, bool):
        return type(lo) is type(cached) and lo == cached
    if isinstance(lo, (int, float)) and isinstance(cached, (int, float)):
        return math.isclose(lo, cached, rel_tol=1e-9, abs_tol=1e-12)
    return lo == cached


def lo_mismatches(cells: dict, values: SheetValues) -> list[tuple]:
    """(sheet, cell, formula, cached, LibreOffice) for every formula cell LibreOffice disagrees with."""
    by_upper = {name.upper(): cells_ for name, cells_ in values.items()}
    out = []
    for (sheet, cell), (formula, cached) in cells.items():
        lo = by_upper[sheet].get(cell) if sheet in by_upper else "<missing sheet>"
        if not lo_same(lo, cached):
            out.append((sheet, cell, formula, cached, lo))
    return out


def errors_in(values: SheetValues) -> list[tuple[str, str, object]]:
    """Every cell of every sheet that holds a spreadsheet error."""
    return [(sheet, cell, v) for sheet, cells in values.items() for cell, v in cells.items()
            if is_error(v) or (isinstance(v, str) and v.startswith(ERROR_MARKERS))]


def _build(source: Path, out: Path) -> Path:
    return write_workbook(plan_budget(read_inputs(source, today=TODAY)), out)


def _break_one_cost(good: Path, broken: Path) -> str:
    """Copy `good` to `broken` with one non-zero Monthly cost cell's formula doubled; returns that cell."""
    shutil.copyfile(good, broken)
    cached = openpyxl.load_workbook(good, data_only=True)["Monthly"]
    wb = openpyxl.load_workbook(broken)
    ws = wb["Monthly"]
    target = next(c for row in ws.iter_rows(min_row=3, min_col=8) for c in row
                  if c.data_type == "f" and isinstance(cached[c.coordinate].value, (int, float))
                  and cached[c.coordinate].value > 0)
    target.value = f"=({target.value[1:]})*2"
    wb.save(broken)
    return target.coordinate


CHEAP_GPU, CHEAP_PRICE = "RTX A6000", 0.001   # a card-hour at a thousandth: cheaper than any other card for any task


def _cheap_gpu(good: Path, edited: Path) -> float:
    """Copy `good` to `edited` with CHEAP_GPU's listed on-demand price set to CHEAP_PRICE, as a user edits the GPUs
    sheet; returns the price it had."""
    wb = openpyxl.load_workbook(good)
    ws = wb["GPUs"]
    header = [c.value for c in ws[1]]
    col = next(i for i, h in enumerate(header, start=1) if h and h.startswith("on_demand_per_hour ("))
    row = next(r for r in range(2, ws.max_row + 1) if ws.cell(r, 1).value == CHEAP_GPU)
    old = ws.cell(row, col).value
    ws.cell(row, col).value = CHEAP_PRICE
    wb.save(edited)
    return old


def _build_recon_zh(tmp: Path) -> Path:
    """A Chinese build with Recon tabs: the bill and usage scenario of test_recon_workbook."""
    from test_recon_workbook import FX, HEADER, LINES, TASKS
    book = make_input(tmp / "recon.xlsx", TASKS, settings={"currency": "USD", "catalog_fx": FX, "period_months": 2},
                      extra_sheets={"Assignments": [["resource_id", "task_id"], ["i-ddd", "T2"]],
                                    "Usage": [["resource_id", "month", "gpu_util_pct", "mem_used_gb", "mem_total_gb",
                                               "oom_events"], ["i-aaa", "2026-07", 10, 5, 24, 0],
                                              ["i-bbb", "2026-07", 50, 20, 24, 5]]})
    bill = tmp / "bill.csv"
    with bill.open("w", newline="") as fh:
        csv.writer(fh).writerows([HEADER, *LINES])
    out = tmp / "recon-zh-budget.xlsx"
    result = CliRunner().invoke(main, ["build", str(book), "-o", str(out), "--bills", str(bill), "--lang", "zh",
                                       "--quiet"])
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def books(tmp_path_factory, quoted) -> dict[str, tuple[Path, dict, SheetValues]]:  # noqa: F811
    """Each workbook's path, formula cells with cached values, and LibreOffice's values, from one soffice run."""
    tmp = tmp_path_factory.mktemp("lo")
    paths = {
        "sample": _build(SAMPLE, tmp / "sample-budget.xlsx"),
        "template": _build(write_template(tmp / "template.xlsx"), tmp / "template-budget.xlsx"),
        "base": _build(make_input(tmp / "base.xlsx", BASE_TASKS, settings=BASE_SETTINGS), tmp / "base-budget.xlsx"),
    }
    paths["recon-zh"] = _build_recon_zh(tmp)
    paths["broken"] = tmp / "broken-budget.xlsx"
    broken_cell = _break_one_cost(paths["sample"], paths["broken"])
    paths["requoted"] = requote_h100(quoted[1], tmp / "requoted-budget.xlsx")
    paths["cheap-gpu"] = tmp / "cheap-gpu-budget.xlsx"
    old_price = _cheap_gpu(paths["sample"], paths["cheap-gpu"])
    recalculated = recalc_many(list(paths.values()), tmp / "recalc")
    out = {name: (path, formula_cells(path), recalculated[path]) for name, path in paths.items()}
    # The broken copy is compared with the cached values of the original it was made from.
    out["broken"] = (paths["broken"], formula_cells(paths["sample"]), recalculated[paths["broken"]], broken_cell)
    out["requoted"] = (quoted[1], {}, recalculated[paths["requoted"]])
    out["cheap-gpu"] = (paths["cheap-gpu"], old_price, recalculated[paths["cheap-gpu"]])
    return out


def test_order_subtotals_follow_an_edited_quote(books):
    """test_order_providers' plan with the H100 80G re-quoted at 3.0 on GPUs: acme's subtotal 16,425 and the total
    18,615 (worked out there), zeta's 2,190 unchanged; the Order total still ties to the Summary's GPU total."""
    original, _, values = books["requoted"]
    header = [str(c.value) for c in openpyxl.load_workbook(original)["Order"][read_order(original).header_rows[0]]]
    total = openpyxl.utils.get_column_letter(next(i for i, h in enumerate(header) if h.startswith("total")) + 1)
    got = {label: values["Order"][f"{total}{r}"] for label, r in formulas_by_label(original).items()}
    assert got == pytest.approx({"Subtotal zeta": ZETA, "Subtotal acme": ACME_REQUOTED, "Total": ZETA + ACME_REQUOTED})
    assert values["Checks"]["D2"] is True


@pytest.mark.parametrize("name", BOOKS)
def test_libreoffice_recalculates_every_formula_to_the_cached_value(books, name):
    """Every formula cell's LibreOffice value equals the engine's cached value."""
    _, cells, values = books[name][:3]
    assert len(cells) > 400
    assert lo_mismatches(cells, values) == []


@pytest.mark.parametrize("name", BOOKS)
def test_libreoffice_finds_no_error_values(books, name):
    """No #NAME?, #REF!, #VALUE!, #DIV/0!, #N/A or Err: anywhere in any sheet after recalculation."""
    path, _, values = books[name][:3]
    assert {s.upper() for s in values} >= {"SUMMARY", "TASKS", "MONTHLY", "CHECKS"}
    assert errors_in(values) == []
    # The cached file is clean too, so an error would come from the recalculation.
    assert errors_in(read_values(path)) == []


@pytest.mark.parametrize("name", BOOKS)
def test_libreoffice_checks_all_true(books, name):
    """Checks!D2 (every tie-out) reads TRUE after LibreOffice recalculates."""
    checks = books[name][2]["Checks"]
    assert checks["D2"] is True
    rows = [checks.get(f"D{r}") for r in range(3, 30) if checks.get(f"A{r}")]
    assert len(rows) >= 8 and all(v is True for v in rows)


def test_libreoffice_catches_a_wrong_formula(books):
    """A Monthly cost formula doubled on purpose shows up as a mismatch at that cell and at every total that reads it
    (Monthly is the one source of a task's month cost: Summary, Tiers, Commitments and Order all read it, so they
    move together and the tie-outs between them hold; the recalculation against the cached values catches it)."""
    _, cells, values, broken_cell = books["broken"]
    bad = lo_mismatches(cells, values)
    assert ("MONTHLY", broken_cell) in [(s, c) for s, c, *_ in bad]
    *_, cached, lo = next(m for m in bad if m[:2] == ("MONTHLY", broken_cell))
    assert lo == pytest.approx(2 * cached, rel=1e-9)
    assert {"SUMMARY", "ORDER"} <= {s for s, *_ in bad}


def _column(values: dict, header: str) -> str:
    """The column letter of the row-1 cell whose text starts with `header`."""
    return next(ref.rstrip("0123456789") for ref, v in values.items()
                if ref.rstrip("0123456789") + "1" == ref and isinstance(v, str) and v.startswith(header))


def test_a_price_edit_that_makes_another_gpu_cheaper_shows_on_tasks_and_checks(books):
    """RTX A6000's on-demand price edited down to a thousandth: ML01 (on demand, its GPU chosen by the build: A100 80G
    with the tests' CNY offers) now has a cheaper card. A candidate's cost is linear in its price, so RTX A6000 now
    costs ML01 its built cost x CHEAP_PRICE / the old price, and saves the rest of its chosen card's cost; Tasks names RTX A6000 with
    that saving, and Checks counts one task a rebuild would move where the build counted none (KB03 names its GPU in
    the input, A100 80G: a cheaper one is shown on Tasks but not counted), so its tie-out and the master check
    turn FALSE."""
    plan = plan_budget(read_inputs(SAMPLE, today=TODAY))
    ml01 = next(tp for tp in plan.tasks if tp.task.task_id == "ML01")
    assert ml01.row["gpu"] != CHEAP_GPU and ml01.row["tier"] == "on_demand" and ml01.task.values["gpu"] is None
    cheap = next(c for c in ml01.candidates if c.gpu == CHEAP_GPU)
    _, old_price, values = books["cheap-gpu"]
    cheap_now = cheap.row["monthly_cost"] * CHEAP_PRICE / old_price
    tasks = values["Tasks"]
    row = next(ref[1:] for ref, v in tasks.items() if ref.startswith("A") and v == "ML01")
    assert tasks[f"{_column(tasks, 'cheaper GPU now')}{row}"] == CHEAP_GPU
    assert tasks[f"{_column(tasks, 'saving on it')}{row}"] == pytest.approx(ml01.row["monthly_cost"] - cheap_now)
    checks = values["Checks"]
    label = next(ref for ref, v in checks.items() if isinstance(v, str) and v.startswith("tasks a cheaper GPU"))
    n = label[1:]
    assert (checks[f"B{n}"], checks[f"C{n}"], checks[f"D{n}"]) == (1, 0, False)
    kb03 = next(ref[1:] for ref, v in tasks.items() if ref.startswith("A") and v == "KB03")
    assert tasks[f"{_column(tasks, 'cheaper GPU now')}{kb03}"] == CHEAP_GPU
    assert checks["D2"] is False
