"""The plan a finance user should sign (issue 30): the choice weighs every card on every tier and offer, a
commitment is proposed only where it beats the rent it replaces, and the Order nets reservations against rent so
that its total is the plan's.

The choice is checked against an enumeration made here from the shipped price file itself (csv, not budgetgen's
reader): every USD offer of every card the engine sized for the task, on every tier an online service may use."""

from __future__ import annotations

import csv
import math
from importlib import resources

import openpyxl
import pytest
from conftest import make_input, shipped_catalogs
from order_sheet import read_order
from usd_plan import TASKS, make_usd_plan

import budgetgen
from budgetgen.io.reader import read_inputs
from budgetgen.plan.engine import Exclusion, plan_budget

DATA = resources.files("budgetgen") / "data"
HPM = 730  # hours_per_month's default


@pytest.fixture(scope="module")
def shipped_catalog():
    """The shipped GPU, offer and model catalogs in force (the suite otherwise fixes a test copy of them)."""
    with shipped_catalogs():
        yield


def _csv(name: str) -> list[dict[str, str]]:
    with (DATA / name).open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def usd_offers() -> dict[str, list[dict[str, str]]]:
    """Per card, the USD offers a USD plan may order from, read from the shipped files: a marketplace's only for the
    card classes it counts for (providers.csv), the market median only where no provider's own offer is left."""
    classes = {row["gpu"]: row["class"] for row in _csv("gpus.csv")}
    counts = {row["provider"]: row["counts_for"].split() for row in _csv("providers.csv")}
    out: dict[str, list[dict[str, str]]] = {}
    for row in _csv("prices.csv"):
        if row["currency"] != "USD" or classes.get(row["gpu"], "datacenter") not in counts.get(
                row["provider"], [classes.get(row["gpu"], "datacenter")]):
            continue
        out.setdefault(row["gpu"], []).append(row)
    return {gpu: [o for o in rows if o["provider"] != "market"] or rows for gpu, rows in out.items()}


def cheapest(offers: list[dict[str, str]], column: str) -> tuple[float, str] | None:
    priced = [(float(o[column]), o["provider"]) for o in offers if o[column]]
    return min(priced) if priced else None


def chatbot_options(chat, quoted: dict[str, float] | None = None) -> list[tuple]:
    """(monthly cost, card, tier) of every option of a 24/7 service: each card the engine sized for it (excluded for
    no reason but a missing price) on `monthly` at its cheapest USD offer's rent and on `on_demand` at 730 hours of
    its cheapest hourly offer, with the offer's provider last; a card in `quoted` is a monthly quote of that price."""
    offers = usd_offers()
    options = []
    for c in chat.candidates:
        if c.exclusion not in (None, Exclusion.NO_PRICE):
            continue
        held = c.row["cards_held"]
        if c.gpu in (quoted or {}):
            options.append((held * quoted[c.gpu], c.gpu, "monthly", "quote"))
            continue
        for tier, column, per_card in (("monthly", "monthly_per_card", 1), ("on_demand", "on_demand_per_hour", HPM)):
            best = cheapest(offers.get(c.gpu, []), column)
            if best is not None:
                options.append((held * per_card * best[0], c.gpu, tier, best[1]))
    return options


@pytest.fixture(scope="module")
def usd_plan(tmp_path_factory, shipped_catalog):
    path = make_usd_plan(tmp_path_factory.mktemp("usd") / "plan.xlsx")
    return plan_budget(read_inputs(path))


def test_the_70b_chatbot_takes_the_cheapest_option_over_cards_tiers_and_offers(usd_plan):
    """CHAT70 runs around the clock: on `monthly` a card costs its monthly rent, on `on_demand` 730 hours at the
    hourly price. Every card the engine could size for it (excluded for no reason but a missing price) is costed
    here on both tiers at its cheapest USD offer; the plan's choice is the cheapest of them all."""
    chat = next(t for t in usd_plan.tasks if t.task.task_id == "CHAT70")
    options = chatbot_options(chat)
    assert len({o[1] for o in options}) >= 5   # H100, H200, A100, B200, MI300X at least: not one card with a price
    low = min(options)
    assert (chat.row["gpu"], chat.row["tier"]) == low[1:3]
    assert chat.row["monthly_cost"] == pytest.approx(low[0], rel=1e-9)
    assert usd_plan.inputs.gpu(chat.row["gpu"]).provider_of(chat.row["tier"]) == low[3]


def test_a_card_priced_only_per_month_is_weighed_against_the_others_on_demand(tmp_path, shipped_catalog):
    """An RTX A6000 quoted only per card-month (USD) is the only card with a monthly price: it is one option among
    the on-demand ones, chosen only where it is the cheapest (here the enumeration decides either way)."""
    path = make_usd_plan(tmp_path / "plan.xlsx")
    import openpyxl
    wb = openpyxl.load_workbook(path)
    ws = wb["GPUs"]
    header = [c.value for c in ws[1]]
    row = next(r for r in range(2, ws.max_row + 1) if ws.cell(r, 1).value == "RTX A6000")
    for key, value in (("monthly_per_card", 900), ("currency", "USD"), ("provider", "quote"),
                       ("source", "test quote"), ("as_of", "2026-12-01")):
        ws.cell(row, header.index(key) + 1).value = value
    wb.save(path)
    plan = plan_budget(read_inputs(path))
    chat = next(t for t in plan.tasks if t.task.task_id == "CHAT70")
    options = [o for o in chatbot_options(chat, {"RTX A6000": 900}) if o[2] == "on_demand" or o[1] == "RTX A6000"]
    assert any(o[1] == "RTX A6000" for o in options) and len(options) >= 5
    low = min(options)
    assert (chat.row["gpu"], chat.row["tier"]) == low[1:3]
    assert chat.row["monthly_cost"] == pytest.approx(low[0], rel=1e-9)


def test_no_usd_plan_orders_from_the_chinese_market(usd_plan):
    """offer_currency `plan` (init's default): a USD plan takes USD offers only; no card is priced from cn-market."""
    assert not any(g.provider == "cn-market" or "cn-market" in g.offers.values() for g in usd_plan.inputs.gpus)
    assert all(g.currency in ("USD", "") for g in usd_plan.inputs.gpus)


def test_providers_setting_restricts_the_offers(tmp_path, shipped_catalog):
    """`providers` = aws, lambda: every priced card's offers are theirs, and the choice is among them."""
    path = make_usd_plan(tmp_path / "plan.xlsx", settings={"providers": "aws, lambda"})
    plan = plan_budget(read_inputs(path))
    named = {g.provider_of(t) for g in plan.inputs.gpus for t, p in g.prices.items() if p is not None
             and t in g.offers}
    assert named and named <= {"aws", "lambda"}
    assert {plan.inputs.gpu(t.row["gpu"]).provider_of(t.row["tier"]) for t in plan.tasks} <= {"aws", "lambda"}


# ---------------------------------------------------------------- commitments against the real alternative

def _card(**prices_) -> list[dict]:
    return [{"gpu": "H100 80G", "currency": "USD", "provider": "acme", "source": "test quote", "as_of": "2026-06-01",
             **prices_}]


def _plan(tmp_path, tasks, gpus, months=12):
    book = make_input(tmp_path / "in.xlsx", tasks, gpus=gpus,
                      settings={"currency": "USD", "period_months": months, "build_date": "2026-06-15"})
    out = tmp_path / "out.xlsx"
    return budgetgen.build_budget(book, out).plan, out


TRAINING = {"task_id": "T1", "kind": "finetune", "model_params_b": 7, "method": "full", "train_tokens": "4B",
            "runs_per_month": 4, "gpu": "H100 80G"}


def test_no_commitment_where_spot_covers_the_hours_for_less(tmp_path):
    """The work runs on spot at 1.00 a GPU-hour (the tier the engine chose: 1.00 x 1.15 reruns < 3.00 on demand); a
    1-year reservation at 2.40 a committed hour would replace 1.00 of rent per hour: break-even 2.4 (never), so
    none is proposed, and the 3-year one (3.00 x (1 - 0.47) = 1.59) neither. Against on-demand (the old rule) the
    1-year one broke even at 80% and a card busy all month would have been committed."""
    plan, _ = _plan(tmp_path, [TRAINING], _card(on_demand_per_hour=3.0, spot_per_hour=1.0,
                                                reserved_1y_per_hour=2.4))
    (task,) = plan.tasks
    assert task.row["tier"] == "spot"
    assert task.months[0].gpu_hours > HPM   # more than one card busy all month: the old rule would commit
    by_tier = {c.tier: c for c in plan.commitments}
    assert by_tier["reserved_1y"].replaced_price == pytest.approx(1.0)
    assert by_tier["reserved_1y"].break_even == pytest.approx(2.4)
    assert by_tier["reserved_3y"].break_even == pytest.approx(3.0 * (1 - 0.47))
    assert [c.cards for c in plan.commitments] == [0, 0]
    assert all(t.commitments == 0 for t in plan.month_totals.values())


SERVICE = {"task_id": "S1", "kind": "inference", "model_params_b": "7B", "requests_per_day": 100,
           "tokens_per_request": 200, "tokens_per_sec": 5000, "cards": 1, "min_replicas": 2, "gpu": "H100 80G",
           "serving_hours_per_day": 24}
RATE = 2.0  # the 1-year reservation's listed rate


@pytest.fixture(scope="module")
def committed(tmp_path_factory):
    """Two H100 80G replicas around the clock for 12 months at 3.00 on demand, a 1-year reservation listed at 2.00."""
    return _plan(tmp_path_factory.mktemp("committed"), [SERVICE], _card(on_demand_per_hour=3.0,
                                                                       reserved_1y_per_hour=RATE))


def test_a_reservation_that_beats_on_demand_replaces_the_rent(committed):
    """By hand: demand 2 x 730 = 1,460 GPU-hours a month, all on demand at 3.00 (4,380 a month). 1-year break-even
    2.00 / 3.00 = 67%: both cards are busy all year, so 2 are committed (2 x 730 x 2.00 = 2,920 a month). The 3-year
    one (1.59, break-even 53% of 36 months) is not: 12 busy months are a third of its term. The adjustment is
    2,920 - 4,380 = -1,460 a month; GPU spend 2,920 a month, 35,040 over the plan; with the 25% buffer 43,800."""
    plan, _ = committed
    by_tier = {c.tier: c for c in plan.commitments}
    assert by_tier["reserved_1y"].cards == 2 and by_tier["reserved_3y"].cards == 0
    assert [t.commitments for t in plan.month_totals.values()] == pytest.approx([2 * HPM * (RATE - 3.0)] * 12)
    assert plan.period_total == pytest.approx(12 * 2 * HPM * RATE * 1.25)


def test_the_order_reserves_and_rents_nothing_twice(committed):
    """Order: acme's block reserves 2 H100 80G for 12 months (17,520 card-hours at 2.00 = 35,040, 2,920 a month,
    nothing upfront) and rents 0 cards a month on demand (the reservation covers both replicas); the GPU total
    35,040 is the plan's GPU spend and the plan total 43,800 is Summary's."""
    plan, out = committed
    order = read_order(out)
    (block,) = order.blocks
    (reserve,) = block.reservations
    assert (reserve["reserve"], reserve["term"]) == ("H100 80G", "reserved_1y")
    assert [reserve[m] for m in plan.months] == [2] * 12
    assert reserve["card-hours in plan"] == 2 * HPM * 12
    assert reserve["rate a card-hour"] == RATE
    assert reserve["total in plan"] == pytest.approx(2 * HPM * 12 * RATE)
    assert reserve["a month, 0 upfront"] == pytest.approx(2 * HPM * RATE)
    (rent,) = block.lines
    assert [rent[m] for m in plan.months] == pytest.approx([0] * 12, abs=1e-9)
    assert rent["total"] == pytest.approx(0, abs=1e-6)
    assert order.totals["GPU total (reservations and rent)"] == pytest.approx(2 * HPM * 12 * RATE)
    assert order.totals["Plan total"] == pytest.approx(2 * HPM * 12 * RATE * 1.25)
    assert order.totals["Plan total"] == pytest.approx(plan.period_total)


def test_a_partly_covered_line_rents_the_rest(tmp_path):
    """A third replica in the plan's last four months (a second service from 2027-03): its card would be busy 4 of
    12 months (33%, under the 67% break-even), so 2 cards are committed; the rent line rents 1 card in those four
    months and none before, at 3.00 x 730 a card-month."""
    later = {**SERVICE, "task_id": "S2", "min_replicas": 1, "start_month": "2027-03"}
    plan, out = _plan(tmp_path, [SERVICE, later], _card(on_demand_per_hour=3.0, reserved_1y_per_hour=RATE))
    assert {c.tier: c.cards for c in plan.commitments}["reserved_1y"] == 2
    order = read_order(out)
    (rent,) = order.blocks[0].lines
    assert [rent[m] for m in plan.months] == pytest.approx([0] * 8 + [1] * 4)
    assert rent["total"] == pytest.approx(4 * HPM * 3.0)
    assert order.totals["GPU total (reservations and rent)"] == pytest.approx(12 * 2 * HPM * RATE + 4 * HPM * 3.0)
    assert math.isclose(order.totals["Plan total"], plan.period_total, rel_tol=1e-12)


def test_an_order_line_serving_several_tasks_is_as_tall_as_its_wrapped_ids(tmp_path):
    """The Order's "tasks served" column is 15 characters wide: a line serving more ids than fit on one line wraps, and
    its row is given the lines' height (a spreadsheet keeps a written row's height, so the ids would otherwise run
    into the next row). Lines counted by hand from the ids: "QLORA70, PRE7," fits 15 characters, "BATCH8" not with it."""
    from budgetgen.workbook import write_workbook

    tasks = [{**t, "gpu": "H100 80G", "tier": "spot"} for t in TASKS if t["task_id"] in ("QLORA70", "PRE7", "BATCH8")]
    plan = plan_budget(read_inputs(make_usd_plan(tmp_path / "plan.xlsx", tasks=tasks)))
    ws = openpyxl.load_workbook(write_workbook(plan, tmp_path / "budget.xlsx"))["Order"]
    served = [(r, c.value) for r in range(1, ws.max_row + 1) for c in ws[r] if c.value == "QLORA70, PRE7, BATCH8"]
    assert len(served) == 1
    row, _ = served[0]
    assert ws.row_dimensions[row].height == 2 * 15
    one = [r for r in range(1, ws.max_row + 1) if ws.cell(r, 1).value == "H100 80G"]
    assert one and all(ws.row_dimensions[r].height in (None, 30) for r in one)
