"""Planning like finance: demand ramps and scenarios.

Ramps: a service growing 10% a month holds more cards month by month, its cost follows the cards, and the one-year
commitment is proposed from that rising profile. Scenarios: low/base/high drivers, the selector moved to "high" in
LibreOffice gives the engine's high total, and the tornado's largest row is the one a hand re-plan moves most.
The expectations are worked out by hand: every service is sized from a measured throughput, so its replicas are
its requests over what one replica serves. The workbooks are recalculated by LibreOffice in one run."""

from __future__ import annotations

import openpyxl
import pytest
from click.testing import CliRunner
from conftest import make_input
from lo_recalc import recalc_many, soffice_path
from openpyxl.utils import get_column_letter

import budgetgen
from budgetgen.cli import main
from budgetgen.core.errors import InputError

# One worker builds the module's plans and runs LibreOffice once (the fixtures are per module, per worker).
pytestmark = pytest.mark.xdist_group("planning")

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


# Owning an H100 (the growing plan's GPU row): 20,000 USD, 700 W, 3 years, 10% back at the end, 8% a year, PUE 1.5,
# colocation 100 USD per kW-month, electricity 0.10 USD/kWh, upkeep 200 USD a year.
OWNED = {"purchase_price": 20_000, "power_w": 700}
TCO = {"pue": 1.5, "colocation_per_kw_month": 100, "residual_value": 0.10, "discount_rate": 0.08,
       "electricity_per_kwh": 0.10, "upkeep_per_year": 200}


def _build(folder, task):
    book = make_input(folder / "in.xlsx", [task], gpus=[{**H100, **OWNED}],
                      settings={"currency": "USD", "period_months": 12, "build_date": "2026-06-15", **TCO})
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


# Scenarios: two services on the H100 at 2.0 an hour for 3 months (no commitment: a term is longer than the plan),
# its prices expected 20% lower a year on: month m pays 0.8^((m - 1)/12) of them, 1 + 0.98158 + 0.96350 = 2.94508
# over the three months (a plain 3 without the trend).
# Base: SVC 4 one-card replicas, API 2: 6 cards x 730 h x 2.0 = 8,760 a month, x 1.25 buffer x 2.94508 = 32,249.
API = {**SERVICE, "task_id": "API", "requests_per_day": 2 * PER_REPLICA_DAY, "growth_per_month": None}
SCENARIO_ROWS = [
    {"driver": "requests", "low": 0.5, "base": 1, "high": 1.5, "source": "sales range"},
    {"driver": "requests", "task_id": "API", "low": 1, "high": 3},   # its own row wins over the row for all
    {"driver": "price_on_demand", "low": 0.9, "high": 1.1},
    {"driver": "buffer", "low": 0.20, "base": 0.25, "high": 0.30},
]
CARD_MONTH = HPM * ON_DEMAND  # 1,460
TREND = 1 + 0.8 ** (1 / 12) + 0.8 ** (2 / 12)  # 2.94508: the three months' share of the first month's prices
BASE_TOTAL = 6 * CARD_MONTH * 1.25 * TREND  # 32,249
# High: SVC 4 x 1.5 = 6 replicas, API 2 x 3 = 6: 12 cards x 1,460 x 1.1 = 19,272 a month, x 1.30 x 2.94508 = 73,786.
HIGH_TOTAL = 12 * CARD_MONTH * 1.1 * 1.30 * TREND
# Low: SVC 4 x 0.5 = 2, API 2 x 1 = 2: 4 cards x 1,460 x 0.9 = 5,256 a month, x 1.20 x 2.94508 = 18,575.
LOW_TOTAL = 4 * CARD_MONTH * 0.9 * 1.20 * TREND
SELECTOR_CELL = "B4"   # Summary: the named cell Scenario


@pytest.fixture(scope="module")
def scenarios(tmp_path_factory):
    folder = tmp_path_factory.mktemp("scenarios")
    svc = {**SERVICE, "growth_per_month": None, "cost_center": "search"}
    book = make_input(folder / "in.xlsx", [svc, {**API, "cost_center": "platform"}],
                      gpus=[{**H100, "price_change_per_year": -0.2}],
                      settings={"currency": "USD", "period_months": 3, "build_date": "2026-06-15"},
                      extra_sheets={"Scenarios": [list(ROW_HEADERS)] + [[r.get(h) for h in ROW_HEADERS]
                                                                         for r in SCENARIO_ROWS],
                                    "Budgets": [["cost_center", "monthly_budget"], [None, WHOLE_BUDGET],
                                                ["search", SEARCH_BUDGET]]})
    out = folder / "out.xlsx"
    return budgetgen.build_budget(book, out).plan, out


ROW_HEADERS = ("driver", "task_id", "low", "base", "high", "source")
# Budgets: the whole plan's months total 10,950, 10,749 and 10,551 (8,760 x 1.25 x 0.8^((m-1)/12)): against 10,800
# the first is over by 150. SVC (cost center search) costs 5,840, 5,732 and 5,627: against 5,800 the first is over
# by 40. Two months over budget.
WHOLE_BUDGET, SEARCH_BUDGET = 10_800, 5_800
BUDGETS_CELL = "G4"   # Summary: the months over budget, right of the selector and its label


def test_the_build_plans_low_base_and_high(scenarios):
    plan, _ = scenarios
    first, second, _ = (t for t in plan.month_totals.values())
    assert (first.gpu, second.gpu) == pytest.approx((6 * CARD_MONTH, 6 * CARD_MONTH * 0.8 ** (1 / 12)))  # 8,760; 8,599
    assert plan.period_total == pytest.approx(BASE_TOTAL)
    assert plan.scenario_totals == pytest.approx({"low": LOW_TOTAL, "base": BASE_TOTAL, "high": HIGH_TOTAL})


def test_the_tornado_puts_the_row_a_hand_replan_moves_most_first(scenarios):
    plan, _ = scenarios
    # Each row moved alone, the others at base (6 cards, 1.0 price, 25% buffer), in first-month money (x 2.94508
    # for the three months):
    #   requests (API) high: API 6 replicas, SVC 4: 10 cards x 1,460 x 1.25 = 18,250 a month (+7,300); low 1: +0
    #   requests (all): SVC 2 or 6 (API keeps its own row at base, 2): 4 or 8 cards: -/+3,650 a month
    #   price_on_demand: 10,950 x 0.9 or 1.1: -/+1,095;  buffer: 8,760 x (1.20 or 1.30) - 10,950: -/+438
    largest = plan.tornado[0]
    assert largest.label == "requests (API)"
    assert (largest.low, largest.high) == pytest.approx((BASE_TOTAL, 10 * CARD_MONTH * 1.25 * TREND))
    assert [w.label for w in plan.tornado] == ["requests (API)", "requests", "price_on_demand", "buffer"]
    assert [w.size for w in plan.tornado] == pytest.approx([x * TREND for x in (7_300, 3_650, 1_095, 438)])


@pytest.mark.slow
def test_libreoffice_moves_the_total_with_the_selector(scenarios, libreoffice):
    plan, out = scenarios
    ws = openpyxl.load_workbook(out)["Summary"]
    assert (ws[SELECTOR_CELL].value, ws["B3"].value) == ("base", "=PeriodTotal")
    assert libreoffice["high"]["Summary"]["B3"] == pytest.approx(plan.scenario_totals["high"], rel=1e-9)
    # high: every month of both budget lines over (25,054 a month against 10,800; 9,636 against 5,800)
    assert libreoffice["high"]["Summary"][BUDGETS_CELL] == 6


def test_budgets_flag_the_months_over_and_ci_fails_on_them(scenarios):
    plan, out = scenarios
    whole, search = plan.budgets
    assert whole.planned == pytest.approx([6 * CARD_MONTH * 1.25 * 0.8 ** (k / 12) for k in range(3)])
    assert search.planned == pytest.approx([4 * CARD_MONTH * 0.8 ** (k / 12) for k in range(3)])
    assert (whole.over, search.over) == ((True, False, False), (True, False, False))
    assert (whole.overrun, search.overrun) == pytest.approx((10_950 - 10_800, 5_840 - 5_800))
    assert openpyxl.load_workbook(out, data_only=True)["Summary"][BUDGETS_CELL].value == 2
    source = out.parent / "in.xlsx"
    runner = CliRunner()
    over = runner.invoke(main, ["validate", str(source), "--max-total", "30000"])
    within = runner.invoke(main, ["validate", str(source), "--max-total", "33000"])  # the base total is 32,249
    assert (over.exit_code, within.exit_code) == (1, 0)
    assert "Error: the period total 32,249 USD is above --max-total 30,000 USD" in over.output
    built = runner.invoke(main, ["build", str(source), "-o", str(out.parent / "ci.xlsx"), "-q", "--fail-over-budget"])
    assert built.exit_code == 1 and (out.parent / "ci.xlsx").exists()
    assert "Error: over budget: the whole plan 1 month(s), 150 USD; search 1 month(s), 40 USD" in built.output
    # diff against a version with API's demand doubled: +2 cards a month, 2 x 1,460 x 1.25 x 2.94508 = 10,750
    doubled = out.parent / "doubled.xlsx"
    wb = openpyxl.load_workbook(source)
    column = next(c.column_letter for c in wb["Tasks"][1] if c.value == "requests_per_day")
    wb["Tasks"][f"{column}3"] = 2 * API["requests_per_day"]
    wb.save(doubled)
    shown = runner.invoke(main, ["diff", str(source), str(doubled)])
    assert shown.exit_code == 0, shown.output
    # the budget over the plan: 10,800 x 3 = 32,400; old 32,249 is 151 within, new 8 cards' 42,998 is 10,598 over
    old_gap, new_gap = BASE_TOTAL - 32_400, 8 * CARD_MONTH * 1.25 * TREND - 32_400
    assert (round(old_gap), round(new_gap)) == (-151, 10_598)
    assert ("Against the budget of 32,400 USD (Budgets, the whole plan): old -151, new +10,598 (over)"
            in shown.output)


def test_a_scenario_row_for_an_unknown_task_is_refused_at_its_cell(tmp_path):
    book = make_input(tmp_path / "in.xlsx", [SERVICE], gpus=[H100], settings={"currency": "USD"},
                      extra_sheets={"Scenarios": [["driver", "task_id", "high"], ["requests", "NOPE", 2],
                                                  ["buffer", "SVC", 0.3]]})
    with pytest.raises(InputError) as caught:
        budgetgen.build_budget(book, tmp_path / "out.xlsx")
    places = [(p.sheet, p.cell, p.code.value) for p in caught.value.problems]
    assert places == [("Scenarios", "B2", "unknown_value"), ("Scenarios", "B3", "unknown_value")]


def _proposed_cell(out) -> str:
    """The Commitments cell of the one-year block's proposed cards (its header one row above the figures)."""
    ws = openpyxl.load_workbook(out)["Commitments"]
    for row in ws.iter_rows(min_col=1, max_col=2):
        if (row[0].value, row[1].value) == ("H100 80G", "reserved_1y"):
            header = next(c for c in ws[row[0].row - 1] if str(c.value or "").startswith("proposed cards"))
            return f"{header.column_letter}{row[0].row}"
    raise AssertionError("no one-year H100 block on Commitments")


def _edited(out, folder, name: str, edits: dict[tuple[str, str], object]):
    edited = folder / f"{name}.xlsx"
    wb = openpyxl.load_workbook(out)
    for (sheet, cell), value in edits.items():
        wb[sheet][cell] = value
    wb.save(edited)
    return edited


@pytest.fixture(scope="module")
def libreoffice(growing, scenarios, tmp_path_factory):
    """The growing plan as built and with its growth typed 0 and the last month's ramp 3, the scenario plan with the
    selector on high: recalculated by LibreOffice in one run."""
    if soffice_path() is None:
        pytest.skip("LibreOffice is not installed")
    folder = tmp_path_factory.mktemp("lo")
    (plan, out), (_, scenario_out) = growing, scenarios
    at = budgetgen.workbook.layout.plan_layout(plan)
    growth = f"{get_column_letter(at.tasks.columns['growth_per_month'] + 1)}2"
    ramp = f"{get_column_letter(at.demand.col('ramp', 11) + 1)}3"
    books = {"growing": out,
             "flat": _edited(out, folder, "flat", {("Tasks", growth): 0, ("Demand", ramp): 3}),
             "high": _edited(scenario_out, folder, "high", {("Summary", SELECTOR_CELL): "high"})}
    values = recalc_many(list(books.values()), folder / "work")
    return {name: values[path] for name, path in books.items()}


@pytest.mark.slow
def test_libreoffice_sizes_the_months_as_the_engine_and_follows_an_edit(growing, libreoffice):
    plan, out = growing
    at = budgetgen.workbook.layout.plan_layout(plan)
    cards = [f"{get_column_letter(at.demand.col('cards', j) + 1)}3" for j in range(12)]
    period_cost = f"{get_column_letter(at.monthly.lead.index('period_cost') + 1)}3"
    proposed = _proposed_cell(out)
    grown, flat = libreoffice["growing"], libreoffice["flat"]
    assert [grown["Demand"][c] for c in cards] == CARDS
    assert grown["Monthly"][period_cost] == pytest.approx(sum(CARDS) * HPM * ON_DEMAND)  # 91 card-months: 132,860
    assert grown["Commitments"][proposed] == 5
    assert grown["Summary"]["B3"] == pytest.approx(plan.period_total, rel=1e-9)
    owned = next(b for b in plan.buy_vs_rent if b.gpu == "H100 80G")
    assert (grown["BuyVsRent"]["E2"], grown["BuyVsRent"]["L2"]) == pytest.approx(
        (owned.daily_fixed, owned.break_even_utilisation), rel=1e-9)   # PMT and the PUE, recalculated
    # flat, and the last month ramped to 3 times the typed demand: 12 one-card replicas in December
    assert [flat["Demand"][c] for c in cards] == [4] * 11 + [12]
    assert flat["Monthly"][period_cost] == pytest.approx((11 * 4 + 12) * HPM * ON_DEMAND)  # 81,760
    assert flat["Commitments"][proposed] == 4  # 4 cards busy all year; the 5th only in December


def test_owning_pays_above_the_break_even_utilisation_worked_out_by_hand(growing):
    plan, _ = growing
    b = next(b for b in plan.buy_vs_rent if b.gpu == "H100 80G")
    r, n = 0.08 / 12, 36                  # a month's rate, the months of depreciation
    g = (1 + r) ** n                      # 1.27024
    payment = (20_000 * g - 2_000) * r / (g - 1)   # PMT: 577.39 a month recovers the price less the 2,000 back
    colocation = 100 * 12 * 0.7 * 1.5     # 1,260 a year for 1.05 kW at the PUE
    daily = (payment * 12 + 200 + colocation) / 365   # 22.98 a day
    energy = 0.7 * 1.5 * 0.10             # 0.105 an hour busy
    assert (b.daily_fixed, b.energy_per_hour) == pytest.approx((daily, energy))
    assert b.break_even_hours_per_day == pytest.approx(daily / (2.0 - energy))   # 12.13 h a day
    assert b.break_even_utilisation == pytest.approx(daily / (2.0 - energy) / 24)  # 50.5%
    assert b.verdict == "buy"  # the service's cards are busy around the clock


def test_a_ramp_row_starts_pauses_and_scales_a_task_month_by_month(tmp_path):
    """SVC ramped 0 in July (not yet live), as typed in August, 2.5 times in September: 0, 4 and 10 one-card
    replicas at 1,460 a card-month; API has no Ramp row and keeps its 2 cards."""
    book = make_input(tmp_path / "in.xlsx", [{**SERVICE, "growth_per_month": None}, API], gpus=[H100],
                      settings={"currency": "USD", "period_months": 3, "build_date": "2026-06-15"},
                      extra_sheets={"Ramp": [["task_id", "2026-07", "2026-08", "2026-09"], ["SVC", 0, None, 2.5]]})
    plan = budgetgen.plan_budget(budgetgen.read_inputs(book))
    svc, api = plan.tasks
    assert [m.cards for m in svc.months] == [0, 4, 10] and [m.cards for m in api.months] == [2, 2, 2]
    assert [t.gpu for t in plan.month_totals.values()] == pytest.approx([2 * CARD_MONTH, 6 * CARD_MONTH,
                                                                          12 * CARD_MONTH])


def test_ramp_headers_and_tasks_are_checked_at_their_cells(tmp_path):
    book = make_input(tmp_path / "in.xlsx", [SERVICE], gpus=[H100], settings={"currency": "USD"},
                      extra_sheets={"Ramp": [["task_id", "July", "2026-08"], ["NOPE", 1, 2], ["SVC", 1, -1]]})
    with pytest.raises(InputError) as caught:
        budgetgen.read_inputs(book)
    places = [(p.sheet, p.cell, p.code.value) for p in caught.value.problems]
    assert places == [("Ramp", "B1", "bad_month"), ("Ramp", "A2", "unknown_value"), ("Ramp", "C3", "negative")]


def test_a_growth_below_minus_99_percent_is_refused_at_its_cell(tmp_path):
    with pytest.raises(InputError) as caught:
        _build(tmp_path, {**SERVICE, "growth_per_month": -1.5})
    problem = caught.value.problems[0]
    assert problem.sheet == "Tasks" and problem.cell.startswith(
        get_column_letter(list(SERVICE).index("growth_per_month") + 1)) and "growth_per_month" in str(problem)
