"""Commitments: per GPU type the plan uses and commitment tier, the cards to commit and what they cost. No I/O.

The Python view of the Commitments sheet, computed with the `rules` the sheet writes as formulas. A GPU type's
demand h(m) is the GPU-hours its active tasks use in plan month m (held cards all month on a per-card-month tier);
its rent P(m) is what the plan pays for them. A commitment starts with the plan and bills every hour of its term at
its rate; it covers up to its cards x HoursPerMonth of the demand, and replaces the rent of the hours it covers.

The commitments of one GPU type are layered, the longest term first (the deepest discount): each is proposed
from the demand the earlier ones leave, so the base goes to three years only when a card is busy enough over three
years, the next layer to one year, and the peak above stays rented. Months of a term after the plan count 0 (the
demand there is unknown). A GPU without a rate (no listed price and no on-demand price) has no commitment.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..core.schema import COMMITMENT_TIERS, REFERENCE_TIER
from ..model import rules


@dataclass(frozen=True)
class Commitment:
    """One commitment tier on one GPU type: the rate, the proposal, the committed cards and each plan month."""

    gpu: str
    tier: str
    term_months: int
    rate: float  # plan currency per committed card-hour
    on_demand: float
    replaced_price: float  # what an hour of the GPU type's work pays without commitments (rules.REPLACED_PRICE)
    break_even: float  # the share of the term a committed card must be busy to beat that price (1+: never)
    demand: tuple[float, ...]  # the GPU type's GPU-hours per plan month (all its tasks)
    rent: tuple[float, ...]  # the GPU type's rent per plan month
    left: tuple[float, ...]  # the demand left to this commitment by the earlier (longer) ones
    candidates: tuple[int, ...]
    proposed: int
    cards: int  # committed: the proposal (the workbook's input cell, prefilled with it)
    committed_cost: tuple[float, ...]
    covered: tuple[float, ...]
    unused_hours: tuple[float, ...]
    unused_cost: tuple[float, ...]
    displaced: tuple[float, ...]
    adjustment: tuple[float, ...]
    term_total: float
    months_after_plan: int
    after_plan_cost: float
    monthly_cost: float  # what it bills a month of its term: rules.COMMITTED_COST of its first month


def commitment_rate(gpu, tier, settings) -> float | None:
    """The tier's rate for the GPU in the plan currency (rules.COMMIT_RATE): listed, else on-demand x (1 - discount)."""
    return rules.COMMIT_RATE(settings, listed=gpu.listed_prices.get(tier.name), fx=gpu.fx,
                             on_demand=gpu.prices.get(REFERENCE_TIER.name),
                             discount=settings.discount(tier))


def layered_tiers():
    """The commitment tiers in the order they take a GPU type's demand: the longest term first."""
    return tuple(sorted(COMMITMENT_TIERS, key=lambda t: -t.term_months))


def plan_commitments(tasks, inputs, n_months: int, held: dict | None = None) -> tuple[Commitment, ...]:
    """Every commitment tier on every GPU type the plan uses that has a rate and an on-demand price, from the tasks'
    month-by-month cards, GPU-hours and cost (engine.TaskPlan.months). `held` ({(gpu, tier): cards}): the cards
    committed already, kept instead of proposed (a scenario keeps the plan's commitments, as the workbook's committed
    cards are an input)."""
    s = inputs.settings
    months = list(range(1, n_months + 1))
    by_gpu: dict[str, list] = {}   # each GPU type's tasks: the rules select them again, over these alone
    for t in tasks:
        by_gpu.setdefault(t.row["gpu"], []).append(t)
    out = []
    for gpu in inputs.gpus:
        on_demand = gpu.prices.get(REFERENCE_TIER.name)
        mine = by_gpu.get(gpu.name)
        if not mine or on_demand is None:
            continue
        gpus, tiers = [t.row["gpu"] for t in mine], [t.row["tier"] for t in mine]
        demand = tuple(rules.COMMIT_DEMAND(s, gpus=gpus, gpu=gpu.name, tiers=tiers,
                                           cards=[t.months[m - 1].cards_billed for t in mine],
                                           hours=[t.months[m - 1].gpu_hours for t in mine]) for m in months)
        rent = tuple(rules.COMMIT_RENT(s, gpus=gpus, gpu=gpu.name, costs=[t.months[m - 1].cost for t in mine])
                     for m in months)
        left = demand
        for tier in layered_tiers():
            rate = commitment_rate(gpu, tier, s)
            if rate is None:
                continue
            c = _commitment(s, gpu.name, tier, rate, on_demand, demand, rent, left, months,
                            None if held is None else held.get((gpu.name, tier.name), 0))
            out.append(c)
            left = tuple(rules.DEMAND_LEFT(s, demand=h, covered=v) for h, v in zip(left, c.covered, strict=True))
    return tuple(out)


def _commitment(s, gpu, tier, rate, on_demand, demand, rent, left, months, held=None) -> Commitment:
    term = tier.term_months
    replaced = rules.REPLACED_PRICE(s, demand=list(demand), rent=list(rent), on_demand=on_demand)
    break_even = rules.BREAK_EVEN_UTILISATION(s, rate=rate, price=replaced)
    candidates = tuple(rules.COMMIT_CANDIDATE(s, hours=list(left), months=months, term=term, break_even=break_even,
                                              demand=h) for h in left)
    proposed = rules.COMMIT_PROPOSAL(s, candidates=candidates)
    cards = proposed if held is None else held
    committed = tuple(rules.COMMITTED_COST(s, month=m, term=term, cards=cards, rate=rate) for m in months)
    covered = tuple(rules.COVERED_HOURS(s, month=m, term=term, demand=h, cards=cards) for m, h in zip(months, left))
    unused = tuple(rules.UNUSED_HOURS(s, month=m, term=term, cards=cards, covered=v) for m, v in zip(months, covered))
    unused_cost = tuple(rules.UNUSED_COST(s, unused=u, rate=rate) for u in unused)
    displaced = tuple(rules.RENT_DISPLACED(s, demand=h, rent=p, covered=v) for h, p, v in zip(demand, rent, covered))
    adjustment = tuple(rules.COMMIT_ADJUSTMENT(s, committed=c, displaced=d) for c, d in zip(committed, displaced))
    after = rules.MONTHS_AFTER_PLAN(s, term=term)
    return Commitment(gpu, tier.name, term, rate, on_demand, replaced, break_even, demand, rent, left, candidates, proposed,
                      cards, committed, covered, unused, unused_cost, displaced, adjustment,
                      rules.TERM_TOTAL(s, cards=cards, rate=rate, term=term), after,
                      rules.AFTER_PLAN_COST(s, cards=cards, rate=rate, after=after),
                      rules.COMMITTED_COST(s, month=1, term=term, cards=cards, rate=rate))


def adjustment_in(commitments: tuple[Commitment, ...], month_index: int) -> float:
    """The commitments' adjustment of plan month `month_index` (1-based): committed cost - rent displaced."""
    return math.fsum(c.adjustment[month_index - 1] for c in commitments)
