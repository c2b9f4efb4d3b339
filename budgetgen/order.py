"""What to order: per GPU type and price tier the plan uses, the cards, quantity, unit price and cost, grouped
by the provider whose offer the GPU's prices are (procurement places one order per provider).

The Python view of the Order sheet, computed with the `rules` the sheet writes as formulas. No I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from . import rules
from .prices import OFFER_SEPARATOR
from .schema import TIER, TIER_NAMES


@dataclass(frozen=True)
class OrderLine:
    """One GPU type on one price tier: what procurement buys or reserves for the plan."""

    gpu: str
    tier: str
    cards_by_month: tuple[int, ...]
    peak_cards: int
    average_cards: float
    months: int
    card_months: float
    gpu_hours: float
    quantity: float
    unit_price: float
    total: float
    tasks: tuple[str, ...]
    provider: str = ""  # whose offer the GPU's prices are (GPUs sheet); blank: not said
    region: str = ""

    @property
    def quantity_unit(self) -> str:
        return TIER[self.tier].quantity_unit


def _region(offer: str) -> str:
    """The region of an offer label (blank: not regional)."""
    return offer.split(OFFER_SEPARATOR, 1)[1] if OFFER_SEPARATOR in offer else ""


def order_keys(plan) -> tuple[tuple[str, str], ...]:
    """The (GPU, tier) pairs the plan uses, grouped by provider (the providers in the order their first GPU comes
    in the catalog), in catalog order, then tier order, within a provider."""
    used = {(tp.row["gpu"], tp.row["tier"]) for tp in plan.tasks}
    keys = [(g.name, t) for g in plan.inputs.gpus for t in TIER_NAMES if (g.name, t) in used]
    providers = list(dict.fromkeys(plan.inputs.gpu(gpu).provider_of(tier) for gpu, tier in keys))
    return tuple(sorted(keys, key=lambda k: providers.index(plan.inputs.gpu(k[0]).provider_of(k[1]))))


def order_groups(plan) -> tuple[tuple[str, int], ...]:
    """Each provider of the order lines (blank: not said) and its number of lines, in order_keys' order."""
    providers = [plan.inputs.gpu(gpu).provider_of(tier) for gpu, tier in order_keys(plan)]
    return tuple((p, providers.count(p)) for p in dict.fromkeys(providers))


def plan_order(plan) -> tuple[OrderLine, ...]:
    """One order line per (GPU, tier) the plan uses."""
    s = plan.inputs.settings
    rows = [tp.row for tp in plan.tasks]
    columns = {k: [r[k] for r in rows] for k in ("gpu", "tier")}
    over_plan_amounts = {"cards_billed": [sum(m.cards_billed for m in tp.months) for tp in plan.tasks],
                         "gpu_hours_per_month": [math.fsum(m.gpu_hours for m in tp.months) for tp in plan.tasks]}
    lines = []
    for gpu, tier in order_keys(plan):
        sel = {"gpus": columns["gpu"], "gpu": gpu, "tiers": columns["tier"], "tier": tier}
        by_month = tuple(rules.ORDER_CARDS_IN_MONTH(s, **sel, cards=[tp.months[j].cards_billed for tp in plan.tasks])
                         for j in range(len(plan.months)))
        over_plan = {k: rules.ORDER_OVER_PLAN(s, **sel, amounts=amounts) for k, amounts in over_plan_amounts.items()}
        quantity = over_plan[TIER[tier].quantity_column]
        price = plan.inputs.gpu(gpu).prices[tier]
        lines.append(OrderLine(
            gpu, tier, by_month, rules.ORDER_PEAK(s, by_month=by_month),
            rules.ORDER_AVERAGE(s, card_months=over_plan["cards_billed"]), rules.ORDER_MONTHS(s, by_month=by_month),
            over_plan["cards_billed"], over_plan["gpu_hours_per_month"], quantity, price,
            rules.ORDER_TOTAL(s, quantity=quantity, price=price),
            tuple(tp.task.task_id for tp in plan.tasks if (tp.row["gpu"], tp.row["tier"]) == (gpu, tier)),
            plan.inputs.gpu(gpu).provider_of(tier), _region(plan.inputs.gpu(gpu).offer(tier))))
    return tuple(lines)
