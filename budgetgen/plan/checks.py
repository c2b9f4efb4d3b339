"""The plan's tie-outs: every total against its parts, computed once from the Plan (`Plan.checks`).

The Checks sheet renders each check's formulas beside these values (budgetgen.workbook.checks) and the JSON lists
them (results.checks_json), so the two cannot disagree about a check. Each value is computed with the `rules` the
sheet writes as formulas. No I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from ..core.inputs import Settings
from ..core.schema import KINDS, TIER_NAMES
from ..model import rules


@dataclass(frozen=True)
class Check:
    """One tie-out: a computed total against the expected one, in the plan's currency (unit "money") or a count."""

    key: str  # which check: the workbook pairs its formulas with it
    label: str
    computed: float
    expected: float
    passes: bool
    unit: str = "money"  # "money" (the plan's currency) or "count"
    sheet: str = ""  # the sheet the check is about, when it is not the budget's (a Recon tab's name)


def recon_sheet(month: str) -> str:
    """The name of a billed month's Recon tab."""
    return f"Recon {month}"


def _check(s: Settings, key: str, label: str, computed: float, expected: float, unit: str = "money",
           sheet: str = "") -> Check:
    return Check(key, label, computed, expected, rules.TIES_OUT(s, computed=computed, expected=expected), unit, sheet)


def plan_checks(plan) -> tuple[Check, ...]:
    """The tie-outs of the budget sheets, in the order the Checks sheet lists them."""
    s = plan.inputs.settings
    totals = plan.month_totals.values()
    gpu = math.fsum(t.gpu for t in totals)
    extras = math.fsum(t.extras for t in totals)
    buffer = math.fsum(t.buffer for t in totals)
    commitments = math.fsum(t.commitments for t in totals)
    by_tier = math.fsum(v for tier in TIER_NAMES for v in plan.tier_totals[tier].values())

    def group_sum(key: str, groups) -> float:
        return math.fsum(tp.row["period_cost"] for tp in plan.tasks if tp.task.values[key] in groups)
    centers = {tp.task.values["cost_center"] for tp in plan.tasks}
    matrix = math.fsum(tp.cost_in(j) for tp in plan.tasks for j in range(1, len(plan.months) + 1))
    order = plan.order
    cheaper_now = _cheaper_now(plan)
    c = (lambda *args, **kw: _check(s, *args, **kw))
    return (
        c("gpus_in_catalog", "every task's GPU is on the GPUs sheet",
          rules.GPUS_IN_CATALOG(s, gpus=[tp.row["gpu"] for tp in plan.tasks], catalog=[g.name for g in plan.inputs.gpus]),
          rules.TASK_COUNT(s, ids=[tp.task.task_id for tp in plan.tasks]), "count"),
        c("matrix", "task x month matrix = Summary GPU total", matrix, gpu),
        c("period_cost", "tasks' period cost = Summary GPU total", math.fsum(tp.row["period_cost"] for tp in plan.tasks),
          gpu),
        c("by_tier", "by tier = Summary GPU total", by_tier, gpu),
        c("tiers_sheet", "Tiers sheet cost = Summary GPU total", by_tier, gpu),
        c("by_kind", "by kind = Summary GPU total", group_sum("kind", KINDS), gpu),
        c("by_cost_center", "by cost center = Summary GPU total", group_sum("cost_center", centers), gpu),
        c("order_gpu", "Order GPU total = Summary GPU + commitments total", order.gpu_total, gpu + commitments),
        c("order_plan", "Order plan total = Summary period total", order.gpu_total + extras + buffer, plan.period_total),
        c("extras", "extras matrix = Summary extras total",
          math.fsum(v for values in plan.extras_by_month.values() for v in values), extras),
        c("month_total", "GPU + commitments + extras + buffer = period total",
          rules.MONTH_TOTAL(s, gpu=gpu, commitments=commitments, extras=extras, buffer=buffer), plan.period_total),
        c("buffer", "buffer = rate x (GPU + commitments) total",
          rules.BUFFER(s, gpu=gpu, commitments=commitments, rate=plan.buffer_rate), buffer),
        c("commitments", "Commitments sheet adjustment = Summary commitments total",
          math.fsum(v for cm in plan.commitments for v in cm.adjustment), commitments),
        # 0 at build unless a chosen GPU tied another's cost; a GPU named in the input is kept, cheaper or not
        c("cheaper_now", "tasks a cheaper GPU could run now = at build (if not: rebuild to choose again)",
          cheaper_now, cheaper_now, "count"),
        c("priced_now", "GPUs priced on GPUs since the build for a task they fit = 0 (if not: rebuild to weigh them)",
          rules.PRICED_NOW(s, prices=[plan.inputs.gpu(g).prices.get(tier) for g, tier in no_price_pairs(plan)]), 0,
          "count"),
    )


def no_price_pairs(plan) -> list[tuple[str, str]]:
    """The (GPU, tier) pairs a task whose GPU the build chose fits but that had no price for its tier (Candidates:
    "no ... price"), in the order the tasks list them."""
    from .engine import Exclusion
    return list(dict.fromkeys((c.gpu, c.row["tier"]) for tp in plan.tasks if not tp.task.values["gpu"]
                              for c in tp.candidates if c.exclusion is Exclusion.NO_PRICE))


def _cheaper_now(plan) -> int:
    """The tasks whose GPU the build chose and a cheaper listed GPU could run (the live choice's count)."""
    best = plan.live_choice.tasks
    return rules.CHEAPER_TASKS(plan.inputs.settings, cheaper=[b["cheaper_gpu"] for b in best],
                               named=[b["gpu_named"] for b in best])


def recon_checks(settings: Settings, recon: Mapping, billed_input: Mapping[str, float]) -> tuple[Check, ...]:
    """Per reconciled month: its Recon tab's billed total equals the BilledCost of the month's input lines."""
    return tuple(_check(settings, "recon_billed", "billed total = BilledCost of the month", mr.billed_total,
                        billed_input[month], sheet=recon_sheet(month)) for month, mr in recon.items())
