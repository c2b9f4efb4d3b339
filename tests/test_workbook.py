"""Whole-workbook tests: every formula, evaluated from the cached values it reads, equals the engine's cached value
(tests/formula_proof.py); one small plan recalculated in full by `formulas`, edits and all."""

from __future__ import annotations

import re

import openpyxl
import pytest
from conftest import (
    TODAY,
    disagreements,
    formula_cells,
    formulas_disagree,
    local_recalc,
    make_input,
    recalc_formulas,
    same,
)
from openpyxl.utils import get_column_letter

from budgetgen.io.reader import read_inputs
from budgetgen.model.columns import CALCS
from budgetgen.plan.engine import plan_budget
from budgetgen.workbook import write_workbook
from budgetgen.workbook.layout import plan_layout


def build(tmp_path, source, name="out.xlsx"):
    plan = plan_budget(read_inputs(source, today=TODAY))
    return plan, write_workbook(plan, tmp_path / name)


@pytest.fixture(scope="module")
def sample(sample_book):
    """The sample's plan and workbook, its formula cells, and every cell's value with each formula evaluated from
    the cached values it reads."""
    plan, out = sample_book
    return plan, out, formula_cells(out), local_recalc(out)


def mismatches(cells, recalculated):
    return [(k, f, v, recalculated.get(k, "<missing>")) for k, (f, v) in cells.items()
            if not same(recalculated.get(k), v)]


def test_sample_every_formula_recalculates_to_the_cached_value(sample):
    plan, _, cells, recalculated = sample
    assert len(cells) > 1000
    assert mismatches(cells, recalculated) == []
    tasks = len(plan.tasks)
    per_sheet = {}
    for sheet, _ in cells:
        per_sheet[sheet] = per_sheet.get(sheet, 0) + 1
    # and the live choice's cheaper GPU and its saving, the GPU's row on GPUs, and the eleven catalog-model figures the
    # formulas read (every Models column but the name, native_context and the source)
    assert per_sheet["TASKS"] == tasks * (len(CALCS) + 2 + 1 + 11)
    assert per_sheet["MONTHLY"] == tasks * (8 + len(plan.months))  # 7 links, the plan total, the months


def test_derived_columns_hold_formulas_not_values(sample):
    _, out, cells, _ = sample
    wb = openpyxl.load_workbook(out)
    ws = wb["Tasks"]
    headers = {c.value: c.column_letter for c in ws[1]}
    for calc in CALCS:
        title = next(h for h in headers if h.startswith(calc.header.removesuffix("?")))
        column = headers[title]
        for row in range(2, ws.max_row + 1):
            assert ("TASKS", f"{column}{row}") in cells, f"Tasks!{column}{row} ({calc.key}) is not a formula"
    monthly = wb["Monthly"]
    for row in monthly.iter_rows(min_row=3, min_col=8):
        assert all(c.data_type == "f" for c in row)
    summary = wb["Summary"]
    assert summary["B3"].data_type == "f" and summary["B7"].data_type == "f"


def test_checks_all_true(sample):
    _, out, _, recalculated = sample
    ws = openpyxl.load_workbook(out, data_only=True)["Checks"]
    assert ws["D2"].value is True
    checks = [ws.cell(r, 4).value for r in range(3, ws.max_row + 1) if ws.cell(r, 1).value]
    assert len(checks) >= 8 and all(v is True for v in checks)
    assert recalculated[("CHECKS", "D2")] is True


def test_summary_shows_the_engine_totals(sample):
    plan, out, _, _ = sample
    ws = openpyxl.load_workbook(out, data_only=True)["Summary"]
    assert ws["B3"].value == pytest.approx(plan.period_total)
    first = plan.month_totals[plan.months[0]]
    assert [ws["B7"].value, ws["C7"].value, ws["D7"].value, ws["E7"].value, ws["F7"].value] == pytest.approx(
        [first.gpu, first.commitments, first.extras, first.buffer, first.total])


def test_no_constants_inside_task_formulas(sample):
    _, _, cells, _ = sample
    for (sheet, cell), (formula, _) in cells.items():
        if sheet not in ("TASKS", "CANDIDATES"):
            continue
        without_refs = re.sub(r"\$?[A-Z]{1,3}\$?\d+|\"[^\"]*\"", "", formula)
        numbers = set(re.findall(r"(?<![A-Za-z_\d.])\d+(?:\.\d+)?", without_refs))
        assert numbers <= {"0", "1"}, f"{sheet}!{cell} {formula} has constants {numbers}"


def _engine_rerun(tmp_path, settings_change: dict, gpu_change: dict):
    path = make_input(tmp_path / "second.xlsx", SMALL_TASKS, settings={**BASE_SETTINGS, **settings_change},
                      gpus=[gpu_change] if gpu_change else None)
    return plan_budget(read_inputs(path, today=TODAY))


BASE_SETTINGS = {"hidden_cost_buffer": 0.25, "mfu": 0.4}
BASE_TASKS = [
    {"task_id": "A", "kind": "finetune", "model_params_b": 7, "method": "lora", "train_tokens": "500M",
     "gpu": "A100 80G", "tier": "on_demand"},
    {"task_id": "B", "kind": "inference", "model_params_b": 13, "requests_per_day": 20000, "tokens_per_request": 300,
     "gpu": "L40S", "concurrency": 8},
    {"task_id": "C", "kind": "batch", "model_params_b": 7, "method": "int8", "batch_requests": 50000,
     "tokens_per_request": 200, "runs_per_month": 4, "gpu": "RTX 4090", "start_month": "2026-08"},
]
SMALL_TASKS = BASE_TASKS[:1]  # a training task: what `formulas` recalculates in full (8 s of CPU a task)


def _address(wb, name: str) -> str:
    sheet, ref = wb.defined_names[name].attr_text.split("!")
    return f"{sheet.strip(chr(39))}!{ref.replace('$', '')}"


@pytest.mark.slow
def test_changing_an_assumption_and_a_price_moves_totals_like_a_second_engine_run(tmp_path):
    """The small plan whose workbook `formulas` recalculates in full (8 s of CPU a task), edits and all; the cell by
    cell evaluation the rest of the suite relies on gives the same values."""
    base = make_input(tmp_path / "base.xlsx", SMALL_TASKS, settings=BASE_SETTINGS)
    _, out = build(tmp_path, base)
    wb = openpyxl.load_workbook(out)
    gpus = wb["GPUs"]
    a100_row = next(r for r in range(2, gpus.max_row + 1) if gpus.cell(r, 1).value == "A100 80G")
    on_demand_col = next(c.column_letter for c in gpus[1] if c.value.startswith("on_demand_per_hour"))
    changes = {_address(wb, "MfuRate"): 0.5, _address(wb, "BufferRate"): 0.2, f"GPUs!{on_demand_col}{a100_row}": 15}
    recalculated = recalc_formulas(out, changes)
    assert disagreements(recalculated, local_recalc(out, changes)) == []   # the local evaluation agrees after edits
    assert formulas_disagree(out) == []                                     # and before them
    second = _engine_rerun(tmp_path, {"mfu": 0.5, "hidden_cost_buffer": 0.2},
                           {"gpu": "A100 80G", "on_demand_per_hour": 15})
    first = plan_budget(read_inputs(base, today=TODAY))
    assert second.period_total != pytest.approx(first.period_total)
    assert recalculated[("SUMMARY", "B3")] == pytest.approx(second.period_total, rel=1e-9)
    for j, month in enumerate(second.months):
        t = second.month_totals[month]
        row = 7 + j   # Summary's month rows start at 7 (title, banner, total, selector, note, header)
        assert [recalculated[("SUMMARY", f"{c}{row}")] for c in "BCDEF"] == pytest.approx(
            [t.gpu, t.commitments, t.extras, t.buffer, t.total], rel=1e-9)
    tasks = openpyxl.load_workbook(out)["Tasks"]
    cost_col = next(c.column_letter for c in tasks[1] if c.value.startswith("cost a month"))
    for i, tp in enumerate(second.tasks, start=2):
        assert recalculated[("TASKS", f"{cost_col}{i}")] == pytest.approx(tp.row["monthly_cost"], rel=1e-9)
    assert recalculated[("CHECKS", "D2")] is True
    tiers = openpyxl.load_workbook(out)["Tiers"]
    for r in range(2, tiers.max_row + 1):
        tier, month = tiers.cell(r, 1).value, tiers.cell(r, 2).value
        assert recalculated[("TIERS", f"F{r}")] == pytest.approx(second.tier_totals[tier][month], rel=1e-9)
    candidates = openpyxl.load_workbook(out)["Candidates"]
    head = {c.value: c.column_letter for c in candidates[1]}
    cost = next(v for k, v in head.items() if k.startswith("cost a month"))
    expected = [c.row["monthly_cost"] for tp in second.tasks for c in tp.candidates]
    got = [recalculated[("CANDIDATES", f"{cost}{r}")] for r in range(2, candidates.max_row + 1)]
    assert [None if e is None else pytest.approx(e, rel=1e-9) for e in expected] == [None if g == "" else g
                                                                                       for g in got]


def test_formulas_use_only_functions_every_spreadsheet_has(sample):
    """The writer skips xlsxwriter's future-function rewriting, so no formula may need an _xlfn. prefix."""
    from budgetgen.workbook import SAFE_FUNCTIONS
    _, _, cells, _ = sample
    used = set()
    for formula, _ in cells.values():
        used |= set(re.findall(r"([A-Z][A-Z0-9.]*)\(", re.sub(r'"[^"]*"', "", formula)))
    assert used <= SAFE_FUNCTIONS, used - SAFE_FUNCTIONS
    assert {"CEILING", "INDEX", "MATCH", "SUMPRODUCT"} <= used


def test_a_sheet_past_excels_rows_is_refused_before_writing(tmp_path):
    from types import SimpleNamespace

    from budgetgen.core.errors import OutputError
    from budgetgen.workbook import check_excel_limits
    every_card = SimpleNamespace(candidates_per_task=60)   # at least the catalog's 53 cards: every card listed
    plan = SimpleNamespace(tasks=[None] * 20_000, months=("2026-07",),
                           inputs=SimpleNamespace(gpus=[None] * 53, settings=every_card))
    with pytest.raises(OutputError) as info:
        check_excel_limits(plan)
    assert "Candidates sheet would need 1,060,001 rows, more than Excel's 1,048,576" in str(info.value)
    plan.inputs.gpus = [None] * 52   # 1,040,001 rows fit
    check_excel_limits(plan)
    plan.inputs.gpus = [None] * 53
    plan.inputs.settings = SimpleNamespace(candidates_per_task=None)   # 20,000 tasks: 3 cheapest + the chosen
    check_excel_limits(plan)   # 80,001 rows


def test_ml03_unit_costs_are_its_monthly_cost_over_its_monthly_tokens_and_requests(sample):
    """The worked example's ML03 (docs/finance-guide.md) on the tests' offers: 1 replica of 2 A100 80G on the monthly tier, 2 x 8,250 = 16,500 a month.
    50,000 requests a day x 400 output tokens x 730 / 24 days = 608,333,333 tokens a month: 27.12 per million;
    50,000 x 30.42 = 1,520,833 requests a month: 10.85 per thousand. The workbook recalculates to the same."""
    plan, _, _, recalculated = sample
    ml03 = next(tp for tp in plan.tasks if tp.task.task_id == "ML03")
    monthly = 2 * 8250
    tokens, requests = 50_000 * 400 * 730 / 24, 50_000 * 730 / 24
    assert ml03.row["monthly_cost"] == pytest.approx(monthly)
    assert ml03.row["cost_per_m_tokens"] == pytest.approx(monthly / tokens * 1e6)  # 27.12
    assert ml03.row["cost_per_k_requests"] == pytest.approx(monthly / requests * 1e3)  # 10.85
    columns = plan_layout(plan).tasks.columns
    row = 2 + plan.tasks.index(ml03)
    for key, expected in (("cost_per_m_tokens", 27.1233), ("cost_per_k_requests", 10.8493)):
        cell = f"{get_column_letter(columns[key] + 1)}{row}"
        assert recalculated[("TASKS", cell)] == pytest.approx(expected, abs=1e-4)
