"""Commitments (issue 21, acceptance 3): a 24/7 service on 16 H100 for 12 months plus a 3-month training burst
commits the 16 on one year and rents the burst; raising the committed cards in LibreOffice raises the unused cost
and the total; a 3-month plan commits nothing. The expectations are worked out by hand from the typed price."""

from __future__ import annotations

import shutil

import openpyxl
import pytest
from conftest import local_recalc, make_input, prove
from lo_recalc import recalc_with_libreoffice, soffice_path
from order_sheet import read_order

import budgetgen
from budgetgen.core.inputs import Settings
from budgetgen.model import expr, rules
from budgetgen.workbook.layout import SummaryLayout

ON_DEMAND = 2.0  # USD per card-hour, typed on the GPUs row
HPM = 730  # hours_per_month's default
RATE_1Y = ON_DEMAND * (1 - 0.20)  # reserved_1y left blank: on-demand x (1 - the 20% default discount) = 1.6
EXTRAS = 1000.0
SERVICE_HOURS = 16 * HPM  # 16 cards around the clock: 11,680 GPU-hours a month
COMMITTED_MONTH = 16 * RATE_1Y * HPM  # 18,688 a month
EXTRA_CARD_MONTH = RATE_1Y * HPM  # 1,168: one more committed card a month

H100 = {"gpu": "H100 80G", "on_demand_per_hour": ON_DEMAND, "provider": "quote", "currency": "USD",
        "source": "test quote", "as_of": "2026-06-01"}
SERVICE = {"task_id": "SVC", "kind": "inference", "model_params_b": "7B", "requests_per_day": 1000,
           "tokens_per_request": 200, "tokens_per_sec": 5000, "cards": 1, "min_replicas": 16, "gpu": "H100 80G",
           "tier": "on_demand", "serving_hours_per_day": 24}
BURST = {"task_id": "TRN", "kind": "finetune", "model_params_b": "7B", "train_tokens": 2e10, "cards": 8,
         "gpu": "H100 80G", "tier": "on_demand", "start_month": "2026-07", "end_month": "2026-09"}


def _build(folder, tasks, months):
    book = make_input(folder / "in.xlsx", tasks, gpus=[H100],
                      settings={"currency": "USD", "period_months": months, "build_date": "2026-06-15"},
                      extras=[{"item": "storage", "category": "storage", "monthly_cost": EXTRAS}])
    out = folder / "out.xlsx"
    return budgetgen.build_budget(book, out).plan, out


@pytest.fixture(scope="module")
def year(tmp_path_factory):
    return _build(tmp_path_factory.mktemp("commit"), [SERVICE, BURST], 12)


def _cell(out, gpu: str, tier: str, header: str) -> str:
    """The Commitments cell under `header` on the figures row of the GPU's `tier` block (its header one row above)."""
    ws = openpyxl.load_workbook(out)["Commitments"]
    for row in ws.iter_rows(min_col=1, max_col=2):
        if (row[0].value, row[1].value) == (gpu, tier):
            r = row[0].row
            for c in ws[r - 1]:
                if str(c.value or "").startswith(header):
                    return f"{c.column_letter}{r}"
    raise AssertionError(f"no {gpu} {tier} / {header} on Commitments")


def test_the_service_holds_exactly_16_cards_around_the_clock(year):
    plan, _ = year
    svc = next(t for t in plan.tasks if t.task.task_id == "SVC").row
    burst = next(t for t in plan.tasks if t.task.task_id == "TRN").row
    assert svc["cards_held"] == 16 and svc["gpu_hours_per_month"] == pytest.approx(SERVICE_HOURS)
    assert burst["gpu_hours_per_month"] > HPM  # the burst needs more than a 17th card's month


def test_the_plan_commits_the_16_on_one_year_and_rents_the_burst(year):
    plan, _ = year
    by_tier = {c.tier: c for c in plan.commitments if c.gpu == "H100 80G"}
    one, three = by_tier["reserved_1y"], by_tier["reserved_3y"]
    # Three years: a card busy all 12 plan months is busy 12/36 of the term, under the 53% break-even.
    assert three.break_even == pytest.approx(0.53) and three.proposed == three.cards == 0
    # One year: the 16th card is busy the whole term (100% >= 80%); the 17th only in the 3 burst months (25%).
    assert one.rate == pytest.approx(RATE_1Y) and one.break_even == pytest.approx(0.80)
    assert one.proposed == one.cards == 16
    assert one.committed_cost == pytest.approx((COMMITTED_MONTH,) * 12)
    assert one.unused_cost == pytest.approx((0.0,) * 12) and one.months_after_plan == 0
    assert one.term_total == pytest.approx(12 * COMMITTED_MONTH)
    # The covered hours replace on-demand rent at 2.0 an hour: 23,360 a month, so each month gains 18,688 - 23,360.
    assert one.adjustment == pytest.approx((COMMITTED_MONTH - SERVICE_HOURS * ON_DEMAND,) * 12)


def test_the_period_total_is_committed_cost_plus_burst_rent_plus_extras_plus_buffer(year):
    plan, _ = year
    burst = next(t for t in plan.tasks if t.task.task_id == "TRN").row
    burst_rent = 3 * burst["gpu_hours_per_month"] * ON_DEMAND
    gpu = 12 * COMMITTED_MONTH + burst_rent
    assert plan.period_total == pytest.approx(gpu + 12 * EXTRAS + 0.25 * gpu, rel=1e-12)
    first = plan.month_totals[plan.months[0]]
    assert first.commitments == pytest.approx(COMMITTED_MONTH - SERVICE_HOURS * ON_DEMAND)


@pytest.mark.slow
def test_the_workbook_recalculates_to_the_engine_and_ties_out(year):
    """Each formula cell of the committed year, evaluated from the cached values it reads, is its own cached value:
    the cached values are what a spreadsheet computes on opening the file, and they are the engine's numbers. The
    Commitments formulas have the same shapes on every plan: `formulas` recalculates a small plan's whole workbook,
    Commitments sheet included, in tests/test_workbook.py (which shows the cell-by-cell evaluation reads every
    precedent), and LibreOffice recalculates this year in full after an edit (below)."""
    plan, out = year
    assert prove(out) == []
    values = local_recalc(out)
    assert values[("SUMMARY", "B3")] == pytest.approx(plan.period_total, rel=1e-9)
    assert values[("CHECKS", "D2")] is True
    (reserve,) = read_order(out).reservations
    assert (reserve["reserve"], reserve["term"]) == ("H100 80G", "reserved_1y")
    assert [reserve[m] for m in plan.months] == [16] * 12
    assert reserve["a month, 0 upfront"] == pytest.approx(COMMITTED_MONTH)
    assert reserve["total in plan"] == pytest.approx(12 * COMMITTED_MONTH)


@pytest.mark.slow
@pytest.mark.skipif(soffice_path() is None, reason="LibreOffice is not installed")
def test_raising_the_commitment_to_17_in_libreoffice_raises_the_unused_cost_and_the_total(year, tmp_path):
    plan, out = year
    cards = _cell(out, "H100 80G", "reserved_1y", "committed cards")
    ws = openpyxl.load_workbook(out)["Commitments"]
    assert cards.startswith("I") and ws[cards].value == 16  # an input, prefilled with the proposal (H, a formula)
    assert str(ws[cards.replace("I", "H")].value).startswith("=MAX(")
    row = int(cards[1:])
    edited = tmp_path / "edited.xlsx"
    shutil.copy(out, edited)
    wb = openpyxl.load_workbook(edited)
    wb["Commitments"][cards] = 17
    wb.save(edited)
    values = recalc_with_libreoffice(edited, tmp_path / "lo")
    sheet, summary = values["Commitments"], values["Summary"]
    first = row + 2  # the block's first month row (1-based): figures, month header, months
    one = next(c for c in plan.commitments if c.tier == "reserved_1y")
    burst_months = 3
    for j in range(12):
        r = first + j
        assert sheet[f"G{r}"] == pytest.approx(17 * RATE_1Y * HPM)  # committed cost
        if j < burst_months:  # the 17th card works in the burst: no unused hours, it displaces 730 h of rent
            assert sheet[f"J{r}"] == pytest.approx(0, abs=1e-9)
            assert sheet[f"L{r}"] == pytest.approx(one.adjustment[j] + EXTRA_CARD_MONTH - HPM * ON_DEMAND)
        else:  # idle: unused cost and the month's commitments line rise by exactly one card-month at the rate
            assert sheet[f"J{r}"] == pytest.approx(EXTRA_CARD_MONTH)
            assert sheet[f"L{r}"] == pytest.approx(one.adjustment[j] + EXTRA_CARD_MONTH)
        month_row = SummaryLayout.first_month_row + 1 + j   # Summary's month rows, 1-based
        old = plan.month_totals[plan.months[j]]
        rise = EXTRA_CARD_MONTH - (HPM * ON_DEMAND if j < burst_months else 0)
        assert summary[f"C{month_row}"] == pytest.approx(old.commitments + rise)
        assert summary[f"F{month_row}"] == pytest.approx(old.total + 1.25 * rise)
    assert sheet[f"J{first + 12}"] == pytest.approx(9 * EXTRA_CARD_MONTH)  # the unused cost over the plan
    assert sheet[cards.replace("I", "K")] == pytest.approx(12 * 17 * RATE_1Y * HPM)  # the term total
    assert sheet[cards.replace("I", "M")] == pytest.approx(0)  # a 1-year term ends with a 12-month plan
    period = plan.period_total + 1.25 * (9 * EXTRA_CARD_MONTH + 3 * (EXTRA_CARD_MONTH - HPM * ON_DEMAND))
    assert summary["B3"] == pytest.approx(period, rel=1e-9)
    assert values["Checks"]["D2"] is True


def test_a_three_month_plan_commits_nothing_on_a_twelve_month_term(tmp_path):
    plan, _ = _build(tmp_path, [SERVICE], 3)
    one = next(c for c in plan.commitments if c.tier == "reserved_1y")
    # 16 cards busy 3 of 12 months: 25% of the term, under the 80% break-even.
    assert one.proposed == one.cards == 0 and one.months_after_plan == 9 and one.after_plan_cost == 0
    assert all(t.commitments == 0 for t in plan.month_totals.values())


@pytest.mark.parametrize(("hours", "months", "term", "card", "expected"), [
    ([730.0] * 12, list(range(1, 13)), 12, 1, 8760.0),
    ([1095.0] * 3, [1, 2, 3], 12, 2, 3 * 365.0),       # half of a second card for 3 months
    ([1095.0] * 3, [1, 2, 3], 2, 2, 2 * 365.0),         # the term ends after month 2
    ([100.0], [1], 12, 3, 0.0),
])
def test_card_hours_clamp_each_month_to_one_card(hours, months, term, card, expected):
    """The card-hours piece of the proposal's formula, compiled as the engine compiles it."""
    card_hours = expr.compile_excel(rules._card_hours_excel(str(card)), rules.NAMES)
    assert card_hours(Settings(), hours=hours, months=months, term=term) == pytest.approx(expected)


def _busy_hours(demand: list[float], card: int) -> float:
    """By hand: the k-th card's busy hours over 12 months, each month min(730, max(0, demand - (k - 1) x 730))."""
    return sum(min(730.0, max(0.0, h - (card - 1) * 730.0)) for h in demand)


@pytest.mark.parametrize(("demand", "be", "expected"), [
    ([16 * 730.0] * 12, 0.8, 16),
    ([16 * 730.0] * 9 + [20 * 730.0] * 3, 0.8, 16),      # the peak is rented
    ([16 * 730.0] * 10 + [20 * 730.0] * 2, 0.15, 20),     # busy 2/12 > 15%: even the peak is committed
    ([16 * 730.0 + 400] * 12, 0.5, 17),                   # the 17th card busy 400/730 = 55% >= 50%
    ([16 * 730.0 + 300] * 12, 0.5, 16),
])
def test_the_proposal_is_the_largest_card_busy_the_break_even_share(demand, be, expected):
    s = Settings()
    months = list(range(1, 13))
    candidates = [rules.COMMIT_CANDIDATE(s, hours=demand, months=months, term=12, break_even=be, demand=h)
                  for h in demand]
    assert rules.COMMIT_PROPOSAL(s, candidates=candidates) == expected
    brute = max([k for k in range(30) if k == 0 or
                 _busy_hours(demand, k) >= be * 12 * 730], default=0)
    assert expected == brute


def test_commitment_tiers_are_not_task_tiers():
    from budgetgen.core.schema import KIND, TASK_COLUMNS, TIER

    tier_column = next(c for c in TASK_COLUMNS if c.name == "tier")
    assert "reserved_1y" not in tier_column.choices and "reserved_3y" not in tier_column.choices
    assert all("reserved_1y" not in k.suited_tiers for k in KIND.values())
    assert TIER["reserved_3y"].term_months == 36 and not TIER["reserved_3y"].for_tasks
