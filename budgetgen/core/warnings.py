"""Warnings a person reads: one line per kind of warning with its count and its items, money in the plan's currency,
the kinds that cost money or break a service first. No I/O.

A kind is a record (`Kind`): how one of its warnings reads as an item of the grouped line, which parameters the
items share (the grouped line names them once), which are money, and how much it matters. `group_warnings` turns the
warnings gathered for a plan into those lines; it is idempotent (a grouped line keeps its members), so warnings added
later (the bills') are grouped with the rest again.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Self

from .i18n import Message

ITEMS_SHOWN = 20  # items a grouped line names; the rest are counted ("... and 5 more")

# Importance, most important first: the kinds a person must act on before signing or paying come before advice and
# the age of catalog prices (which, once per GPU, would otherwise hide everything else).
BILLS, RISK, PRICES, ADVICE, PRICE_AGE = range(5)


@dataclass(frozen=True)
class Kind:
    """One kind of warning (its template key) as a grouped line: `group` the line's template over {count}, {items}
    and the `shared` parameters, `item` one warning's template in the list; `money` the parameters in the plan's
    currency; `rank` its importance (lower first)."""

    key: str
    rank: int
    group: str = "warnings_grouped"
    item: str | None = None  # None: the whole warning is the item
    shared: tuple[str, ...] = ()
    money: tuple[str, ...] = ()


KINDS = {k.key: k for k in (
    # the bills and the budget: money already spent or over
    Kind("over_budget", BILLS, "over_budget_grouped", "over_budget_item", money=("budget", "overrun")),
    Kind("unknown_bill_task", BILLS, "unknown_bill_task_grouped", "item_value", ("file",)),
    Kind("unmatched_usage", BILLS, "unmatched_usage_grouped", "item_value", ("file",)),
    Kind("unbilled_usage_months", BILLS, "unbilled_usage_months_grouped", "unbilled_usage_months_item", ("file",)),
    Kind("duplicate_lines", BILLS, "duplicate_lines_grouped", "duplicate_lines_item", money=("amount",)),
    Kind("bill_without_lines", BILLS, "bill_without_lines_grouped", "item_file"),
    Kind("bill_without_currency", BILLS, "bill_without_currency_grouped", "item_file", ("currency",)),
    Kind("bill_months_outside_plan", BILLS),
    Kind("usage_without_bills", BILLS),
    # a service or a run at risk, or a plan that cannot be what it says
    Kind("inference_on_spot", RISK, "inference_on_spot_grouped", "item_tid"),
    Kind("no_failover", RISK, "no_failover_grouped", "item_tid"),
    Kind("no_peak_headroom", RISK, "no_peak_headroom_grouped", "no_peak_headroom_item", ("limit", "peak")),
    Kind("consumer_serving", RISK, "consumer_serving_grouped", "consumer_serving_item", ("limit",)),
    Kind("consumer_training", RISK, "consumer_training_grouped", "consumer_training_item", ("limit",)),
    Kind("slow_stream", RISK, "slow_stream_grouped", "slow_stream_item", ("limit",)),
    Kind("cards_over_max_cards", RISK, "cards_over_max_cards_grouped", "cards_over_max_cards_item",
         ("max_cards",)),
    Kind("pcie_scaling", RISK, "pcie_scaling_grouped", "pcie_scaling_item"),
    Kind("default_tier_unpriced", RISK, "default_tier_unpriced_grouped", "default_tier_unpriced_item"),
    Kind("tier_over_cap", RISK, "tier_over_cap_grouped", "tier_over_cap_item", money=("cap",)),
    # prices that contradict each other
    Kind("catalog_monthly_over_on_demand", PRICES, "catalog_monthly_over_on_demand_grouped",
         "catalog_monthly_over_on_demand_item", ("hours",)),
    Kind("catalog_idle_over_on_demand", PRICES, "catalog_idle_over_on_demand_grouped", "catalog_over_on_demand_item"),
    Kind("catalog_spot_over_on_demand", PRICES, "catalog_spot_over_on_demand_grouped", "catalog_over_on_demand_item"),
    # advice, then the age of the catalog's prices
    Kind("tier_saving", ADVICE, "tier_saving_grouped", "tier_saving_item", money=("saving",)),
    Kind("catalog_prices_old", PRICE_AGE, "catalog_prices_old_grouped", "catalog_prices_old_item",
         ("months", "when")),
    Kind("catalog_prices_undated", PRICE_AGE, "catalog_prices_undated_grouped", "catalog_prices_undated_item",
         ("read",)),
    Kind("catalog_prices_undated_old", PRICE_AGE, "catalog_prices_undated_old_grouped",
         "catalog_prices_undated_item", ("read", "months", "when")),
)}
GROUP_KEYS = frozenset({k.group for k in KINDS.values()} | {"warnings_grouped"})


class Money(float):
    """An amount in the plan's currency: formatted as the number then the currency code (`53 USD`); a format spec
    applies to the number (whole units when none is given)."""

    currency: str

    def __new__(cls, value: float, currency: str) -> Self:
        self = super().__new__(cls, value)
        self.currency = currency
        return self

    def __format__(self, spec: str) -> str:
        return f"{format(float(self), spec or ',.0f')} {self.currency}"

    def __reduce__(self):
        return (Money, (float(self), self.currency))


def kind_of(warning: str) -> str:
    """The kind of a warning or of a grouped line (its members' template key); "" for a plain text."""
    params = getattr(warning, "params", {})
    return str(params.get("kind") or getattr(warning, "key", ""))


def warning_count(warnings: Iterable[str]) -> int:
    """How many warnings the lines stand for (a grouped line counts its members)."""
    return len(_members(warnings))


def _kind(key: str) -> Kind:
    return KINDS.get(key) or Kind(key, RISK)  # a kind not declared yet is never ranked below advice


def _members(warnings: Iterable[str]) -> list[str]:
    """The warnings with each grouped line replaced by the warnings it groups."""
    out: list[str] = []
    for w in warnings:
        out.extend(w.params["members"] if isinstance(w, Message) and w.key in GROUP_KEYS else (w,))
    return out


def _in_currency(w: Message, kind: Kind, currency: str) -> Message:
    """The warning with its money parameters in the plan's currency."""
    if not any(p in w.params for p in kind.money):
        return w
    return Message(w.key, **{k: Money(v, currency) if k in kind.money and isinstance(v, int | float) else v
                             for k, v in w.params.items()})


def group_warnings(warnings: Iterable[str], currency: str) -> tuple[str, ...]:
    """One line per kind (per kind and shared parameters: one per file for a file's warnings): a kind that occurs
    once keeps its own sentence, more are one line with their count and items. Money in `currency`; the most
    important kinds first, the order they were gathered in within a rank."""
    groups: dict[tuple, list[Message]] = {}
    plain = []
    for w in _members(warnings):
        if not isinstance(w, Message):
            plain.append(w)
            continue
        kind = _kind(w.key)
        shared = tuple((p, str(w.params.get(p))) for p in kind.shared)
        groups.setdefault((w.key, shared), []).append(_in_currency(w, kind, currency))
    lines: list[tuple[int, str]] = [(_kind(key).rank, _line(_kind(key), members, currency))
                                    for (key, _), members in groups.items()]
    lines += [(RISK, w) for w in plain]
    return tuple(line for _, line in sorted(lines, key=lambda pair: pair[0]))


def _line(kind: Kind, members: list[Message], currency: str) -> Message:
    if len(members) == 1:
        return members[0]
    items = [Message(kind.item, **m.params) if kind.item else m for m in members[:ITEMS_SHOWN]]
    if len(members) > ITEMS_SHOWN:
        items.append(Message("warnings_more", count=len(members) - ITEMS_SHOWN))
    extra = {}
    if kind.key == "tier_saving":  # the savings add up: the line says what they come to
        extra["total"] = Money(math.fsum(m.params["saving"] for m in members), currency)
    shared = {p: members[0].params.get(p) for p in kind.shared}
    return Message(kind.group, count=len(members), items=tuple(items), kind=kind.key, members=tuple(members),
                   **shared, **extra)
