"""Demand ramps: a service growing 10% a month holds more cards month by month, its cost follows the cards, and the
one-year commitment is proposed from that rising profile. The expectations are worked out by hand: the service is
sized from a measured throughput, so its replicas are the requests over what one replica serves."""

from __future__ import annotations

import openpyxl
import pytest
from conftest import make_input, recalc_formulas
from openpyxl.utils import get_column_letter

import budgetgen
from budgetgen.errors import InputError

ON_DEMAND = 2.0  # USD per card-hour, typed on the GPUs row
HPM = 730  # hours_per_month's default
REQ_S = 2000 / 200  # measured 2,000 output tokens/s over 200 tokens a request: 10 requests/s per replica
PER_REPLICA_DAY = REQ_S * 24 * 3600  # 864,000 requests a day one replica serves around the clock
REQUESTS = 4 * PER_REPLICA_DAY  # 3,456,000 a day: exactly 4 one-card replicas in the first month
# Month m needs 4 x 1.1^(m-1) replicas, rounded up: 4, 4.4, 4.84, 5.32, 5.86, 6.44, 7.09, 7.79, 8.57, 9.43, 10.37,
# 11.41 (none within rounding of a whole number but the first).
CARDS = [4, 5, 5, 6, 6, 7, 8, 8, 9, 10, 11, 12]
H100 = {"gpu": "H100 80G", "on_demand_per_hour": ON_DEMAND, "provider": "quote", "currency": "USD",
        "source": "test quote", "as_of": "2026-06-01"}
SERVICE = {"task_id": "SVC", "kind": "inference", "model_params_b": "7B", "requests_per_day": REQUESTS,
           "tokens_per_request": 200, "tokens_per_sec": 2000, "cards": 1, "gpu": "H100 80G", "tier": "on_demand",
           "serving_hours_per_day": 24, "growth_per_month": 0.10}


def _build(folder, task):
    book = make_input(folder / "in.xlsx", [task], gpus=[H100],
                      settings={"currency": "USD", "period_months": 12, "build_date": "2026-06-15"})
    out = folder / "out.xlsx"
    return budgetgen.build_budget(book, out).plan, out


@pytest.fixture(scope="module")
def growing(tmp_path_factory):
    return _build(tmp_path_factory.mktemp("ramp"), SERVICE)


def test_cards_rise_month_by_month_with_the_demand(growing):
    plan, _ = growing
    months = plan.tasks[0].months
    assert [m.factor for m in months] == pytest.approx([1.1 ** k for k in range(12)])
    assert [m.cards for m in months] == CARDS
    assert [m.cost for m in months] == pytest.approx([c * HPM * ON_DEMAND for c in CARDS])  # 5,840 ... 17,520
    assert plan.tasks[0].row["period_cost"] == pytest.approx(sum(CARDS) * HPM * ON_DEMAND)  # 91 card-months


def test_the_commitment_proposal_follows_the_profile(growing):
    plan, _ = growing
    one = next(c for c in plan.commitments if c.tier == "reserved_1y")
    # One year at on-demand x (1 - 20%) = 1.6: a committed card must be busy 80% of the 12 months, 9.6 of them.
    # Card 5 is busy in the 11 months holding 5 or more cards; card 6 in 9 months only. A flat plan would commit 4.
    assert one.demand == pytest.approx([c * HPM for c in CARDS])
    assert one.break_even == pytest.approx(0.8) and one.proposed == 5
    three = next(c for c in plan.commitments if c.tier == "reserved_3y")
    assert three.proposed == 0  # 12 busy months of a 36-month term are under its 53% break-even


def _proposed_cell(out) -> tuple[str, str]:
    """The Commitments cell of the one-year block's proposed cards (its header one row above the figures)."""
    ws = openpyxl.load_workbook(out)["Commitments"]
    for row in ws.iter_rows(min_col=1, max_col=2):
        if (row[0].value, row[1].value) == ("H100 80G", "reserved_1y"):
            header = next(c for c in ws[row[0].row - 1] if str(c.value or "").startswith("proposed cards"))
            return "COMMITMENTS", f"{header.column_letter}{row[0].row}"
    raise AssertionError("no one-year H100 block on Commitments")


def test_the_workbook_sizes_the_months_as_the_engine_and_follows_an_edit(growing):
    plan, out = growing
    layout = budgetgen.workbook.layout.plan_layout(plan)
    cards = [("DEMAND", f"{get_column_letter(layout.demand.col('cards', j) + 1)}3") for j in range(12)]
    period_cost = ("MONTHLY", f"{get_column_letter(layout.monthly.lead.index('period_cost') + 1)}3")
    sheets = ("Demand", "Monthly", "Commitments")
    values = recalc_formulas(out, sheets=sheets)
    assert [values[c] for c in cards] == CARDS
    assert values[period_cost] == pytest.approx(sum(CARDS) * HPM * ON_DEMAND)  # 91 card-months: 132,860
    assert values[_proposed_cell(out)] == 5
    growth = f"Tasks!{get_column_letter(layout.tasks.columns['growth_per_month'] + 1)}2"
    flat = recalc_formulas(out, {growth: 0}, sheets=sheets)
    assert [flat[c] for c in cards] == [4] * 12
    assert flat[period_cost] == pytest.approx(12 * 4 * HPM * ON_DEMAND)  # 70,080
    assert flat[_proposed_cell(out)] == 4  # every month's 4 cards busy all year


def test_a_growth_below_minus_99_percent_is_refused_at_its_cell(tmp_path):
    with pytest.raises(InputError) as caught:
        _build(tmp_path, {**SERVICE, "growth_per_month": -1.5})
    problem = caught.value.problems[0]
    assert problem.sheet == "Tasks" and problem.cell.startswith(
        get_column_letter(list(SERVICE).index("growth_per_month") + 1)) and "growth_per_month" in str(problem)
