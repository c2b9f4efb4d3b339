"""What to order: per provider, what to reserve (the commitments with cards) and what to rent (per GPU type and tier
the plan uses, net of what the commitments cover), so that the order's total is the plan's GPU spend, no line
counted twice.

A commitment covers part of its GPU type's demand and replaces the rent of the hours it covers (`commitments`); the
rent it replaces is taken from every line of that GPU type in proportion, month by month (rules.RENT_LEFT): a line's
rented cards, quantity and cost are its amounts times the share of its GPU type's rent still rented. The Python
view of the Order sheet, computed with the `rules` the sheet writes as formulas. No I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..catalog.prices import OFFER_SEPARATOR
from ..core.schema import REFERENCE_TIER, TIER, TIER_NAMES
from ..model import rules
from .commitments import Commitment


@dataclass(frozen=True)
class OrderLine:
    """One GPU type on one price tier: what procurement rents once the commitments are in place."""

    gpu: str
    tier: str
    provider: str  # whose offer the tier's price is (blank: not said)
    region: str
    tasks: tuple[str, ...]
    cards_billed: tuple[float, ...]  # per plan month, before the commitments
    amounts: tuple[float, ...]  # the tier's billed quantity per plan month (card-months or GPU-hours), before
    rent: tuple[float, ...]  # per plan month, before
    shares: tuple[float, ...]  # per plan month, the share of the GPU type's rent still rented
    cards_by_month: tuple[float, ...]  # rented, after the commitments
    quantity: float  # rented over the plan, in quantity_unit
    total: float  # rent over the plan after the commitments
    peak_cards: float
    unit_price: float | None  # total / quantity: the average price paid per unit

    @property
    def quantity_unit(self) -> str:
        return TIER[self.tier].quantity_unit


@dataclass(frozen=True)
class Reservation:
    """One commitment with cards: what procurement reserves, from the plan's first month."""

    block: int  # its block on the Commitments sheet (plan.commitments' index)
    gpu: str
    tier: str
    provider: str
    region: str
    cards: int
    term_months: int
    start: str
    rate: float
    monthly_cost: float
    cards_by_month: tuple[int, ...]
    card_hours: float  # within the plan
    total: float  # billed within the plan
    after_plan_cost: float
    upfront: float = 0.0  # an effective hourly rate: nothing upfront


@dataclass(frozen=True)
class ProviderBlock:
    """One provider's order: its reservations, its rent lines and their subtotal."""

    provider: str
    reservations: tuple[Reservation, ...]
    lines: tuple[OrderLine, ...]

    @property
    def entries(self) -> tuple[Reservation | OrderLine, ...]:
        """Its reservations, then its rent lines."""
        return (*self.reservations, *self.lines)

    @property
    def regions(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(x.region for x in self.entries if x.region))

    @property
    def subtotal(self) -> float:
        return math.fsum(x.total for x in self.entries)


@dataclass(frozen=True)
class Order:
    """The whole order, a block per provider; its GPU total is the plan's GPU rent plus the commitments' adjustment."""

    blocks: tuple[ProviderBlock, ...]

    @property
    def lines(self) -> tuple[OrderLine, ...]:
        return tuple(line for b in self.blocks for line in b.lines)

    @property
    def reservations(self) -> tuple[Reservation, ...]:
        return tuple(r for b in self.blocks for r in b.reservations)

    @property
    def gpu_total(self) -> float:
        return math.fsum(b.subtotal for b in self.blocks)


def _split(offer: str) -> tuple[str, str]:
    provider, _, region = offer.partition(OFFER_SEPARATOR)
    return provider, region


def rent_left(plan, gpu: str) -> tuple[float, ...]:
    """Per plan month, the share of `gpu`'s rent still rented once its commitments cover what they can."""
    mine = [c for c in plan.commitments if c.gpu == gpu]
    if not mine:
        return (1.0,) * len(plan.months)
    s = plan.inputs.settings
    return tuple(rules.RENT_LEFT(s, rent=mine[0].rent[j], displaced=math.fsum(c.displaced[j] for c in mine))
                 for j in range(len(plan.months)))


def order_keys(plan) -> tuple[tuple[str, str], ...]:
    """The (GPU, tier) pairs the plan uses, in catalog order, then tier order."""
    used = {(tp.row["gpu"], tp.row["tier"]) for tp in plan.tasks}
    return tuple((g.name, t) for g in plan.inputs.gpus for t in TIER_NAMES if (g.name, t) in used)


def _line(plan, gpu: str, tier: str) -> OrderLine:
    s = plan.inputs.settings
    n = len(plan.months)
    mine = [tp for tp in plan.tasks if tp.row["gpu"] == gpu and tp.row["tier"] == tier]  # the rule selects these
    sel = {"gpus": [tp.row["gpu"] for tp in mine], "gpu": gpu, "tiers": [tp.row["tier"] for tp in mine], "tier": tier}

    def by_month(amount) -> tuple[float, ...]:
        return tuple(rules.ORDER_IN_MONTH(s, **sel, amounts=[amount(tp.months[j]) for tp in mine]) for j in range(n))
    per_card_month = TIER[tier].per_card_month
    cards = by_month(lambda m: m.cards_billed)
    amounts = cards if per_card_month else by_month(lambda m: m.gpu_hours)
    rent = by_month(lambda m: m.cost)
    shares = rent_left(plan, gpu)
    rented = tuple(rules.RENTED(s, amount=c, share=f) for c, f in zip(cards, shares, strict=True))
    quantity = rules.ORDER_SUM(s, by_month=[rules.RENTED(s, amount=a, share=f) for a, f in zip(amounts, shares,
                                                                                              strict=True)])
    total = rules.ORDER_SUM(s, by_month=[rules.RENTED(s, amount=r, share=f) for r, f in zip(rent, shares, strict=True)])
    provider, region = _split(plan.inputs.gpu(gpu).offer(tier))
    return OrderLine(gpu, tier, provider, region, tuple(tp.task.task_id for tp in mine),
                     cards, amounts, rent, shares, rented, quantity, total, rules.ORDER_PEAK(s, by_month=rented),
                     rules.ORDER_UNIT_PRICE(s, quantity=quantity, total=total))


def _reservation(plan, i: int, c: Commitment) -> Reservation:
    s = plan.inputs.settings
    gpu = plan.inputs.gpu(c.gpu)
    # a listed commitment price is the GPUs row's offer; a rate off on-demand is the on-demand offer's
    offer = gpu.offer(c.tier) if gpu.listed_prices.get(c.tier) is not None else gpu.offer(REFERENCE_TIER.name)
    provider, region = _split(offer)
    hours = rules.RESERVED_HOURS(s, cards=c.cards, term=c.term_months)
    return Reservation(i, c.gpu, c.tier, provider, region, c.cards, c.term_months, plan.months[0], c.rate,
                       c.monthly_cost, tuple(rules.RESERVED_CARDS(s, month=j, term=c.term_months, cards=c.cards)
                                             for j in range(1, len(plan.months) + 1)),
                       hours, rules.RESERVED_COST(s, hours=hours, rate=c.rate), c.after_plan_cost)


def plan_order(plan) -> Order:
    """A block per provider (in the order their first reservation or line comes): its reservations (the commitments
    with cards), then its rent lines (one per GPU type and tier the plan uses), net of the commitments."""
    reservations = [_reservation(plan, i, c) for i, c in enumerate(plan.commitments) if c.cards > 0]
    lines = [_line(plan, gpu, tier) for gpu, tier in order_keys(plan)]
    items: list[Reservation | OrderLine] = [*reservations, *lines]
    providers = list(dict.fromkeys(x.provider for x in items))
    return Order(tuple(ProviderBlock(p, tuple(r for r in reservations if r.provider == p),
                                     tuple(line for line in lines if line.provider == p)) for p in providers))
