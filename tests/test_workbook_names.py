"""The workbook's sheets read each other only through defined names, and each name points where it says."""

from __future__ import annotations

import re

import openpyxl
import pytest
from conftest import SAMPLE, TODAY, formula_cells
from openpyxl.utils.cell import range_boundaries
from test_recon_workbook import built  # noqa: F401  (a build with bills and usage, by the CLI)

from budgetgen.io.reader import read_inputs
from budgetgen.plan.engine import plan_budget
from budgetgen.workbook import SAFE_FUNCTIONS, write_workbook


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    plan = plan_budget(read_inputs(SAMPLE, today=TODAY))
    return plan, write_workbook(plan, tmp_path_factory.mktemp("names") / "q3.xlsx")


def names_of(wb) -> dict[str, tuple[str, tuple[int, int, int, int]]]:
    """Defined name -> (sheet, (min_col, min_row, max_col, max_row))."""
    out = {}
    for name, dn in wb.defined_names.items():
        sheet, ref = dn.attr_text.split("!")
        out[name] = (sheet.strip("'"), range_boundaries(ref.replace("$", "")))
    return out


def _words(formula: str) -> set[str]:
    text = re.sub(r'"[^"]*"', "", formula)
    text = re.sub(r"'[^']+'!|[A-Za-z]+!", "", text)
    text = re.sub(r"\$?\b[A-Z]{1,3}\$?\d+\b", "", text)
    return set(re.findall(r"[A-Za-z_][A-Za-z_0-9.]*", text))


@pytest.mark.parametrize("which", ["sample", "bills"])
def test_formulas_reach_other_sheets_only_through_defined_names(sample, built, which):  # noqa: F811
    path = sample[1] if which == "sample" else built[0]
    wb = openpyxl.load_workbook(path)
    defined = {n.upper() for n in wb.defined_names}
    cells = formula_cells(path)
    assert [(k, f) for k, (f, _) in cells.items() if "!" in f] == []
    unknown = {w for f, _ in cells.values() for w in _words(f)} - SAFE_FUNCTIONS - {"TRUE", "FALSE"}
    assert {w for w in unknown if w.upper() not in defined} == set()
    assert {"GpuTotal", "PeriodTotal", "TaskMonthlyCost"} <= unknown


def test_month_names_point_at_their_month(sample):
    plan, path = sample
    wb = openpyxl.load_workbook(path)
    names = names_of(wb)
    n = len(plan.tasks)
    for month in plan.months:
        key = month.replace("-", "_")
        sheet, (c0, r0, c1, r1) = names[f"GpuCost_{key}"]
        assert (sheet, c0 == c1, r0, r1) == ("Monthly", True, 3, 2 + n)
        assert wb["Monthly"].cell(1, c0).value == month
        sheet, (c0, r0, c1, r1) = names[f"ExtrasCost_{key}"]
        assert (sheet, r0, r1) == ("Extras", 3, 2 + len(plan.inputs.extras))
        assert wb["Extras"].cell(1, c0).value == month
        sheet, (c0, r0, _, _) = names[f"Buffer_{key}"]
        assert wb[sheet].cell(r0, 1).value == month and wb[sheet].cell(6, c0).value == "hidden-cost buffer"


def test_summary_totals_are_named_on_the_total_row(sample):
    plan, path = sample
    wb = openpyxl.load_workbook(path, data_only=True)
    names = names_of(wb)
    totals = {}
    for name in ("GpuTotal", "ExtrasTotal", "BufferTotal", "PeriodTotal"):
        sheet, (c0, r0, _, _) = names[name]
        assert wb[sheet].cell(r0, 1).value == "Total"
        totals[name] = wb[sheet].cell(r0, c0).value
    by_hand = {k: sum(getattr(t, k) for t in plan.month_totals.values()) for k in ("gpu", "extras", "buffer")}
    assert totals["GpuTotal"] == pytest.approx(by_hand["gpu"])
    assert totals["ExtrasTotal"] == pytest.approx(by_hand["extras"])
    assert totals["BufferTotal"] == pytest.approx(by_hand["gpu"] * plan.inputs.settings.hidden_cost_buffer)
    assert totals["PeriodTotal"] == pytest.approx(sum(by_hand.values()))


def test_xlsxwriter_keeps_its_temporary_files_in_tmpdir(tmp_path):
    plan = plan_budget(read_inputs(SAMPLE, today=TODAY))
    staging = tmp_path / "staging"
    staging.mkdir()
    seen = []
    write_workbook(plan, tmp_path / "out.xlsx", progress=lambda m: seen.append((m, len(list(staging.iterdir())))),
                   tmpdir=staging)
    during = dict(seen)
    assert during["writing Candidates (56 rows)"] > 0    # one row file per sheet while the sheets stream
    assert list(staging.iterdir()) == []
    assert (tmp_path / "out.xlsx").stat().st_size > 0
