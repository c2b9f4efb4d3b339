"""Checks: every total tied out to its parts through the names of the sheets it reads, with one master check."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import rules
from ..engine import Exclusion, Plan
from ..order import Order
from ..scenarios import SCENARIO_BUFFER
from ..schema import KINDS, TIER, TIER_NAMES
from .book import Book
from .choice import live_choice
from .layout import (
    ALL_CHECKS,
    BUFFER_TOTAL,
    COMMIT_TOTAL,
    COMMITMENTS_TOTAL,
    COST_CENTER_COSTS,
    EXTRAS_COST_MATRIX,
    EXTRAS_TOTAL,
    GPU_COST_MATRIX,
    GPU_TOTAL,
    KIND_COSTS,
    ORDER_PLAN_TOTAL,
    ORDER_TOTAL,
    PERIOD_TOTAL,
    TIER_PERIOD_COSTS,
    TIERS_COST,
    task_name,
)
from .printing import print_setup


@dataclass(frozen=True)
class Check:
    """One tie-out: a computed total against the expected one, each as a formula and as the engine's number."""

    label: str
    computed: str
    expected: str
    computed_value: float
    expected_value: float
    fmt: str = "money"
    sheet: str = ""   # the sheet the check is about, before the label (a Recon tab's name)


def plan_checks(plan: Plan, order: Order) -> list[Check]:
    """The tie-outs of the budget sheets."""
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
    gpus = [g.name for g in plan.inputs.gpus]
    best = live_choice(plan)[1]
    cheaper_now = rules.CHEAPER_TASKS(s, cheaper=[b["cheaper_gpu"] for b in best], named=[b["gpu_named"] for b in best])
    return [
        Check("every task's GPU is on the GPUs sheet", rules.GPUS_IN_CATALOG.formula(gpus="TaskGpu", catalog="GpuName"),
              rules.TASK_COUNT.formula(ids="TaskId"),
              rules.GPUS_IN_CATALOG(s, gpus=[tp.row["gpu"] for tp in plan.tasks], catalog=gpus),
              rules.TASK_COUNT(s, ids=[tp.task.task_id for tp in plan.tasks]), "int"),
        Check("task x month matrix = Summary GPU total", f"SUM({GPU_COST_MATRIX})", GPU_TOTAL, matrix, gpu),
        Check("tasks' period cost = Summary GPU total", "SUM(TaskPeriodCost)", GPU_TOTAL,
              math.fsum(tp.row["period_cost"] for tp in plan.tasks), gpu),
        Check("by tier = Summary GPU total", f"SUM({TIER_PERIOD_COSTS})", GPU_TOTAL, by_tier, gpu),
        Check("Tiers sheet cost = Summary GPU total", f"SUM({TIERS_COST})", GPU_TOTAL, by_tier, gpu),
        Check("by kind = Summary GPU total", f"SUM({KIND_COSTS})", GPU_TOTAL, group_sum("kind", KINDS), gpu),
        Check("by cost center = Summary GPU total", f"SUM({COST_CENTER_COSTS})", GPU_TOTAL,
              group_sum("cost_center", centers), gpu),
        Check("Order GPU total = Summary GPU + commitments total", ORDER_TOTAL, f"{GPU_TOTAL}+{COMMITMENTS_TOTAL}",
              order.gpu_total, gpu + commitments),
        Check("Order plan total = Summary period total", ORDER_PLAN_TOTAL, PERIOD_TOTAL,
              order.gpu_total + extras + buffer, plan.period_total),
        Check("extras matrix = Summary extras total", f"SUM({EXTRAS_COST_MATRIX})", EXTRAS_TOTAL,
              math.fsum(v for values in plan.extras_by_month.values() for v in values), extras),
        Check("GPU + commitments + extras + buffer = period total",
              rules.MONTH_TOTAL.formula(gpu=GPU_TOTAL, commitments=COMMITMENTS_TOTAL, extras=EXTRAS_TOTAL,
                                        buffer=BUFFER_TOTAL), PERIOD_TOTAL,
              rules.MONTH_TOTAL(s, gpu=gpu, commitments=commitments, extras=extras, buffer=buffer), plan.period_total),
        Check("buffer = rate x (GPU + commitments) total",
              rules.BUFFER.formula(gpu=GPU_TOTAL, commitments=COMMITMENTS_TOTAL, rate=SCENARIO_BUFFER), BUFFER_TOTAL,
              rules.BUFFER(s, gpu=gpu, commitments=commitments, rate=plan.buffer_rate), buffer),
        Check("Commitments sheet adjustment = Summary commitments total", COMMIT_TOTAL, COMMITMENTS_TOTAL,
              math.fsum(v for c in plan.commitments for v in c.adjustment), commitments),
        # 0 at build unless a chosen GPU tied another's cost; a GPU named in the input is kept, cheaper or not
        Check("tasks a cheaper GPU could run now = at build (if not: rebuild to choose again)",
              rules.CHEAPER_TASKS.formula(cheaper=task_name("cheaper_gpu"), named=task_name("gpu_named")),
              str(cheaper_now), cheaper_now, cheaper_now, "int"),
        _priced_now(plan),
    ]


COUNT_ARGUMENTS = 200  # prices one COUNT takes (Excel's limit is 255 arguments)


def _priced_now(plan: Plan) -> Check:
    """The GPUs a task whose GPU the build chose fits but that had no price for its tier (Candidates: "no ...
    price"), counted by their price cells on GPUs now: 0 at the build, more once a price is typed there, so Checks
    fails until a rebuild weighs them."""
    s = plan.inputs.settings
    pairs = list(dict.fromkeys((c.gpu, c.row["tier"]) for tp in plan.tasks if not tp.task.values["gpu"]
                               for c in tp.candidates if c.exclusion is Exclusion.NO_PRICE))
    cells = [f'INDEX({TIER[tier].price_name},MATCH("{gpu.replace(chr(34), chr(34) * 2)}",GpuName,0))'
             for gpu, tier in pairs]
    formula = "+".join(rules.PRICED_NOW.formula(prices=",".join(cells[i:i + COUNT_ARGUMENTS]))
                       for i in range(0, len(cells), COUNT_ARGUMENTS)) or "0"
    now = rules.PRICED_NOW(s, prices=[plan.inputs.gpu(gpu).prices.get(tier) for gpu, tier in pairs])
    return Check("GPUs priced on GPUs since the build for a task they fit = 0 (if not: rebuild to weigh them)",
                 formula, "0", now, 0, "int")


def tie_outs(plan: Plan, checks: list[Check]) -> list[bool]:
    """Whether each check ties out (the Python view of its `ties out?` cell)."""
    s = plan.inputs.settings
    return [rules.TIES_OUT(s, computed=c.computed_value, expected=c.expected_value) for c in checks]


def write_checks(book: Book, ws, plan: Plan, checks: list[Check]) -> None:
    s = plan.inputs.settings
    widths = [72, 16, 16, 10]   # the labels wrap in A (a Recon tab's tie-out names its tab)
    book.header(ws, 0, ["check", "computed", "expected", "ties out?"], widths)
    ws.write_string(1, 0, book.t("ALL CHECKS"), book.f.bold)
    last = len(checks) + 2
    ties = tie_outs(plan, checks)
    book.formula(ws, 1, 3, rules.ALL_CHECKS.formula(checks=f"D3:D{last}"), rules.ALL_CHECKS(s, checks=ties),
                 "general", "total")
    book.define(ALL_CHECKS, "Checks", 1, 3)
    for i, (check, ok) in enumerate(zip(checks, ties, strict=True), start=2):
        n = i + 1
        book.wrapped(ws, i, 0, f"{check.sheet}: {book.t(check.label)}" if check.sheet else book.t(check.label),
                     widths[0])
        book.formula(ws, i, 1, check.computed, check.computed_value, check.fmt)
        book.formula(ws, i, 2, check.expected, check.expected_value, check.fmt, "link")
        book.formula(ws, i, 3, rules.TIES_OUT.formula(computed=f"B{n}", expected=f"C{n}"), ok, "general")
    ws.conditional_format(1, 3, last - 1, 3, {"type": "cell", "criteria": "==", "value": "FALSE",
                                              "format": book.f.warn})
    ws.freeze_panes(2, 0)
    print_setup(ws, book.lang, widths, last - 1, header_rows=(0, 0))
