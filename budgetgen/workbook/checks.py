"""Checks: every total tied out to its parts through the names of the sheets it reads, with one master check.

The values are the plan's (Plan.checks, budgetgen.plan.checks); this module renders each check's formulas beside them."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.schema import TIER
from ..model import rules
from ..plan.checks import Check, no_price_pairs
from ..plan.engine import Plan
from ..plan.scenarios import SCENARIO_BUFFER
from .book import Book
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
class CheckRow:
    """One row of the Checks sheet: the plan's check (its values) and the formulas that render them."""

    check: Check
    computed: str
    expected: str

    @property
    def fmt(self) -> str:
        return "int" if self.check.unit == "count" else "money"


def plan_check_rows(plan: Plan) -> list[CheckRow]:
    """The budget sheets' tie-outs: each of plan.checks beside its formulas."""
    formulas = _formulas(plan)
    return [CheckRow(c, *formulas[c.key]) for c in plan.checks]


def _formulas(plan: Plan) -> dict[str, tuple[str, str]]:
    """Each check's formulas (computed, expected), by the check's key."""
    cheaper_now = next(c for c in plan.checks if c.key == "cheaper_now").expected
    return {
        "gpus_in_catalog": (rules.GPUS_IN_CATALOG.formula(gpus="TaskGpu", catalog="GpuName"),
                            rules.TASK_COUNT.formula(ids="TaskId")),
        "matrix": (f"SUM({GPU_COST_MATRIX})", GPU_TOTAL),
        "period_cost": ("SUM(TaskPeriodCost)", GPU_TOTAL),
        "by_tier": (f"SUM({TIER_PERIOD_COSTS})", GPU_TOTAL),
        "tiers_sheet": (f"SUM({TIERS_COST})", GPU_TOTAL),
        "by_kind": (f"SUM({KIND_COSTS})", GPU_TOTAL),
        "by_cost_center": (f"SUM({COST_CENTER_COSTS})", GPU_TOTAL),
        "order_gpu": (ORDER_TOTAL, f"{GPU_TOTAL}+{COMMITMENTS_TOTAL}"),
        "order_plan": (ORDER_PLAN_TOTAL, PERIOD_TOTAL),
        "extras": (f"SUM({EXTRAS_COST_MATRIX})", EXTRAS_TOTAL),
        "month_total": (rules.MONTH_TOTAL.formula(gpu=GPU_TOTAL, commitments=COMMITMENTS_TOTAL, extras=EXTRAS_TOTAL,
                                                  buffer=BUFFER_TOTAL), PERIOD_TOTAL),
        "buffer": (rules.BUFFER.formula(gpu=GPU_TOTAL, commitments=COMMITMENTS_TOTAL, rate=SCENARIO_BUFFER),
                   BUFFER_TOTAL),
        "commitments": (COMMIT_TOTAL, COMMITMENTS_TOTAL),
        "cheaper_now": (rules.CHEAPER_TASKS.formula(cheaper=task_name("cheaper_gpu"), named=task_name("gpu_named")),
                        str(int(cheaper_now))),
        "priced_now": (_priced_now(plan), "0"),
    }


COUNT_ARGUMENTS = 200  # prices one COUNT takes (Excel's limit is 255 arguments)


def _priced_now(plan: Plan) -> str:
    """The GPUs a task whose GPU the build chose fits but that had no price for its tier (Candidates: "no ...
    price"), counted by their price cells on GPUs now: 0 at the build, more once a price is typed there, so Checks
    fails until a rebuild weighs them."""
    cells = [f'INDEX({TIER[tier].price_name},MATCH("{gpu.replace(chr(34), chr(34) * 2)}",GpuName,0))'
             for gpu, tier in no_price_pairs(plan)]
    return "+".join(rules.PRICED_NOW.formula(prices=",".join(cells[i:i + COUNT_ARGUMENTS]))
                    for i in range(0, len(cells), COUNT_ARGUMENTS)) or "0"


def all_pass(rows: list[CheckRow]) -> bool:
    """The master check's value (the Python view of ALL_CHECKS over the rows' `ties out?` cells)."""
    return rules.ALL_CHECKS(None, checks=[r.check.passes for r in rows])


def write_checks(book: Book, ws, rows: list[CheckRow]) -> None:
    """The Checks sheet: each check's formulas with the plan's values cached, and the master check."""
    widths = [72, 16, 16, 10]   # the labels wrap in A (a Recon tab's tie-out names its tab)
    book.header(ws, 0, ["check", "computed", "expected", "ties out?"], widths)
    ws.write_string(1, 0, book.t("ALL CHECKS"), book.f.bold)
    last = len(rows) + 2
    book.formula(ws, 1, 3, rules.ALL_CHECKS.formula(checks=f"D3:D{last}"), all_pass(rows), "general", "total")
    book.define(ALL_CHECKS, "Checks", 1, 3)
    for i, row in enumerate(rows, start=2):
        n, check = i + 1, row.check
        book.wrapped(ws, i, 0, f"{check.sheet}: {book.t(check.label)}" if check.sheet else book.t(check.label),
                     widths[0])
        book.formula(ws, i, 1, row.computed, check.computed, row.fmt)
        book.formula(ws, i, 2, row.expected, check.expected, row.fmt, "link")
        book.formula(ws, i, 3, rules.TIES_OUT.formula(computed=f"B{n}", expected=f"C{n}"), check.passes, "general")
    ws.conditional_format(1, 3, last - 1, 3, {"type": "cell", "criteria": "==", "value": "FALSE",
                                              "format": book.f.warn})
    ws.freeze_panes(2, 0)
    print_setup(ws, book.lang, widths, last - 1, header_rows=(0, 0))
