"""Demand ramps: per task and plan month the demand factor and the cards, GPU-hours and cost that follow. No I/O.

The Python view of the Demand sheet and the Monthly sheet's costs, computed with the `rules` the sheets write as
formulas. The Tasks row is the task at its typed demand (factor 1); a month's figures are the row's, sized again
for the month's factor (an online service's replicas) or scaled by it (a training or batch task's runs).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.schema import KIND, TIER
from ..model import rules


@dataclass(frozen=True)
class TaskMonth:
    """One task in one plan month."""

    factor: float  # the month's demand over the typed demand (0: not active)
    cards: int  # cards held
    cards_billed: int  # cards billed (per-card-month tiers: at least the GPU-hours in whole cards)
    gpu_hours: float
    cost: float  # GPU cost in the plan currency


def task_months(row: dict, growth: float, settings, scale: float = 1.0, price: float = 1.0,
                price_change: float = 0.0, ramp: dict | None = None) -> tuple[TaskMonth, ...]:
    """Every plan month of one task's evaluated row (the chosen GPU's) growing by `growth` a month, its demand
    times `scale` and its prices times `price` (the scenario's multipliers) and the GPU's yearly `price_change`
    compounded by month; `ramp` gives a month's multiplier instead of the growth (plan month index -> value)."""
    ramp = ramp or {}
    s = settings
    online = KIND[row["kind"]].online
    per_card_month = TIER[row["tier"]].per_card_month
    min_replicas = row["min_replicas"] if row["min_replicas"] is not None else s.min_replicas
    out = []
    for month in range(1, len(s.plan_months) + 1):
        factor = rules.DEMAND_FACTOR(s, month=month, start=row["start_index"], end=row["end_index"], growth=growth,
                                    scale=scale, ramp=ramp.get(month))
        cards = rules.MONTH_CARDS(s, factor=factor, online=online, requests=row["requests_per_day"],
                                  hours_per_day=row["serving_hours_per_day"], req_s=row["requests_per_sec"],
                                  min_replicas=min_replicas, cards_per_run=row["cards_per_run"],
                                  cards_held=row["cards_held"])
        hours = rules.MONTH_GPU_HOURS(s, online=online, hours=row["gpu_hours_per_month"], cards=cards,
                                      cards_held=row["cards_held"], factor=factor)
        billed = rules.MONTH_CARDS_BILLED(s, per_card_month=per_card_month, cards=cards, hours=hours)
        cost = rules.MONTH_COST(s, per_card_month=per_card_month, cost=row["monthly_cost"], billed=billed,
                                cards_billed=row["cards_billed"], hours=hours, hours_row=row["gpu_hours_per_month"],
                                price=price * rules.PRICE_TREND(s, change=price_change, month=month))
        out.append(TaskMonth(factor, cards, billed, hours, cost))
    return tuple(out)
