"""Checks computed once, rendered twice (issue 32): the plan holds every tie-out (`Plan.checks`), the Checks sheet
writes its formulas beside those values and the JSON lists them, so a check that fails fails in both.

The small plan, worked out by hand (USD, 3 months from 2026-07): one service measured at 2,000 output tokens/s a
replica, 200 tokens a request: 10 requests/s, 864,000 requests a day around the clock on one one-card H100 replica,
typed at 2.00 an hour on demand: 730 h x 2.00 = 1,460.00 a month, 4,380.00 over the plan; a 3-month plan commits
nothing, so the Order's GPU total is the GPU total, 4,380.00.
"""

from __future__ import annotations

import dataclasses

import openpyxl
import pytest
from conftest import make_input, prove

from budgetgen.io.reader import read_inputs
from budgetgen.io.results import plan_json
from budgetgen.plan.engine import plan_budget
from budgetgen.workbook import write_workbook

MONTH_GPU = 730 * 2.00
H100 = {"gpu": "H100 80G", "on_demand_per_hour": 2.0, "provider": "quote", "currency": "USD", "source": "test quote",
        "as_of": "2026-06-01"}
SVC = {"task_id": "SVC", "kind": "inference", "model_params_b": "7B", "requests_per_day": 864_000,
       "tokens_per_request": 200, "tokens_per_sec": 2000, "cards": 1, "gpu": "H100 80G", "tier": "on_demand",
       "serving_hours_per_day": 24}
ORDER_GPU = "Order GPU total = Summary GPU + commitments total"
ORDER_PLAN = "Order plan total = Summary period total"


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    folder = tmp_path_factory.mktemp("checks-json")
    book = make_input(folder / "in.xlsx", [SVC], gpus=[H100],
                      settings={"currency": "USD", "period_months": 3, "build_date": "2026-06-15"})
    plan = plan_budget(read_inputs(book))
    return plan, write_workbook(plan, folder / "out.xlsx")


def _sheet_rows(path) -> dict[str, tuple]:
    """The Checks sheet's rows as the workbook caches them: label -> (computed, expected, ties out?)."""
    ws = openpyxl.load_workbook(path, data_only=True)["Checks"]
    return {ws.cell(r, 1).value: (ws.cell(r, 2).value, ws.cell(r, 3).value, ws.cell(r, 4).value)
            for r in range(3, ws.max_row + 1) if ws.cell(r, 1).value}


def _json_rows(plan) -> dict[str, dict]:
    return {c["label"]: c for c in plan_json(plan)["checks"]}


def test_the_checks_are_the_hand_derived_totals(small):
    plan, _ = small
    checks = _json_rows(plan)
    gpu = 3 * MONTH_GPU   # 4,380.00
    matrix = checks["task x month matrix = Summary GPU total"]
    assert (matrix["computed"], matrix["expected"]) == pytest.approx((gpu, gpu), abs=0.005)
    assert (checks[ORDER_GPU]["computed"], checks[ORDER_GPU]["expected"]) == pytest.approx((gpu, gpu), abs=0.005)
    assert checks["every task's GPU is on the GPUs sheet"]["computed"] == 1   # one task, its GPU listed
    assert checks["every task's GPU is on the GPUs sheet"]["currency"] is None   # a count
    assert matrix["currency"] == "USD"
    assert all(c["passes"] for c in checks.values())


def test_the_checks_sheet_renders_the_plans_checks(small):
    """The sheet's cached values are the JSON's, row for row, and its formulas compute them from the cells they
    read (proven cell by cell)."""
    plan, out = small
    rows = _sheet_rows(out)
    assert list(rows) == [c["label"] for c in plan_json(plan)["checks"]]
    for label, c in _json_rows(plan).items():
        assert rows[label] == (pytest.approx(c["computed"]), pytest.approx(c["expected"]), c["passes"])
    assert prove(out, sheets=["Checks"]) == []


def test_the_sample_checks_pass_in_the_json_and_on_the_sheet(sample_book):
    plan, out = sample_book
    checks = plan_json(plan)["checks"]
    assert len(checks) == 15 and all(c["passes"] for c in checks)
    assert {c["currency"] for c in checks} == {"CNY", None}
    rows = _sheet_rows(out)
    assert [rows[c["label"]][2] for c in checks] == [True] * len(checks)


def test_a_planted_order_mismatch_fails_in_the_json_and_on_the_checks_sheet(small, tmp_path):
    """An Order whose first rent line costs 100.00 more than the plan's: both Order checks fail in the JSON, the
    Checks sheet shows FALSE beside them and the master check is FALSE."""
    plan, _ = small
    order = plan.order
    block = order.blocks[0]
    line = dataclasses.replace(block.lines[0], total=block.lines[0].total + 100.0)
    planted = dataclasses.replace(plan)   # a new plan: its checks are computed again, from the planted Order
    planted.__dict__["order"] = dataclasses.replace(order, blocks=(dataclasses.replace(block, lines=(line,)),
                                                                   *order.blocks[1:]))
    checks = _json_rows(planted)
    assert checks[ORDER_GPU]["computed"] == pytest.approx(3 * MONTH_GPU + 100.0, abs=0.005)
    assert (checks[ORDER_GPU]["passes"], checks[ORDER_PLAN]["passes"]) == (False, False)
    assert [label for label, c in checks.items() if not c["passes"]] == [ORDER_GPU, ORDER_PLAN]
    out = write_workbook(planted, tmp_path / "planted.xlsx")
    rows = _sheet_rows(out)
    assert (rows[ORDER_GPU][2], rows[ORDER_PLAN][2]) == (False, False)
    ws = openpyxl.load_workbook(out, data_only=True)["Checks"]
    assert ws["D2"].value is False
