"""Monthly reconciliation: FOCUS bills and GPU usage against the plan.

Modules: `columns` (what bill and usage files contain), `table` (a file or sheet read by those
declarations), `bill_sums` (bills of any size read and summed by DuckDB), `bills` and `usage` (the readers),
`rules` (flags, actions, saving, over plan, variances and totals, each with its Excel and Python view),
`pipeline` (reconcile: MonthRecon, TaskRecon, ResourceRecon).
"""

from .bill_sums import BillSource, BillSums, sum_bills
from .bills import DEFAULT_GPU_LINE_PATTERN, OUTPUT_COLUMNS, gpu_matcher, read_bills
from .columns import BILL_INPUT_COLUMNS, USAGE_INPUT_COLUMNS, FileColumn
from .pipeline import (
    Action,
    Coverage,
    MonthRecon,
    PlanFacts,
    PlanRecon,
    ResourceRecon,
    TaskRecon,
    aggregate_lines,
    is_hours_unit,
    next_month_actions,
    plan_facts,
    plan_targets,
    reconcile,
    reconcile_plan,
    unknown_task_warnings,
    unmatched_usage_warnings,
)
from .rules import (
    ACTIONS,
    DATA_STARVED,
    FLAG_RULES,
    LOW_UTILIZATION,
    OOM,
    OVER_PLAN,
    RULES,
    UNTAGGED_GPU,
    FlagRule,
    Limits,
    Rule,
    resource_flags,
)
from .table import MAX_ROW_PROBLEMS
from .usage import USAGE_COLUMNS, read_usage

__all__ = [
    "ACTIONS", "BILL_INPUT_COLUMNS", "DATA_STARVED", "DEFAULT_GPU_LINE_PATTERN", "FLAG_RULES", "LOW_UTILIZATION",
    "MAX_ROW_PROBLEMS", "OOM", "OUTPUT_COLUMNS", "OVER_PLAN", "RULES", "UNTAGGED_GPU", "USAGE_COLUMNS",
    "USAGE_INPUT_COLUMNS", "Action", "BillSource", "BillSums", "Coverage", "FileColumn", "FlagRule", "Limits",
    "MonthRecon", "PlanFacts", "PlanRecon", "ResourceRecon", "Rule", "TaskRecon", "aggregate_lines", "gpu_matcher",
    "is_hours_unit", "next_month_actions", "plan_facts", "plan_targets", "read_bills", "read_usage", "reconcile",
    "reconcile_plan", "resource_flags", "sum_bills", "unknown_task_warnings", "unmatched_usage_warnings",
]
