"""Monthly reconciliation: FOCUS bills and GPU usage against the plan.

Modules: `columns` (what bill and usage files contain), `table` (a file or sheet read by those
declarations), `bill_sums` (bills of any size read and summed by DuckDB), `bills` and `usage` (the readers),
`rules` (flags, actions, saving, over plan, variances and totals, each with its Excel and Python view),
`pipeline` (reconcile: MonthRecon, TaskRecon, ResourceRecon, ResourceTable).
"""

import importlib

# Each name re-exported here and the module it comes from, imported the first time it is asked for (PEP 562): the
# bill engine's DuckDB and pandas load when a command reconciles, not when the CLI starts (`budgetgen --help`).
_FROM = {
    "BillSource": "bill_sums", "BillSums": "bill_sums", "sum_bills": "bill_sums",
    "DEFAULT_GPU_LINE_PATTERN": "bills", "OUTPUT_COLUMNS": "bills", "gpu_matcher": "bills", "read_bills": "bills",
    "BILL_INPUT_COLUMNS": "columns", "USAGE_INPUT_COLUMNS": "columns", "FileColumn": "columns",
    "Action": "pipeline", "Coverage": "pipeline", "MonthRecon": "pipeline", "PlanFacts": "pipeline",
    "PlanRecon": "pipeline", "ResourceRecon": "pipeline", "ResourceTable": "pipeline", "TaskRecon": "pipeline", "aggregate_lines": "pipeline",
    "is_hours_unit": "pipeline", "next_month_actions": "pipeline", "plan_facts": "pipeline",
    "plan_targets": "pipeline", "reconcile": "pipeline", "reconcile_plan": "pipeline",
    "unknown_task_warnings": "pipeline", "unmatched_usage_warnings": "pipeline",
    "ACTIONS": "rules", "DATA_STARVED": "rules", "FLAG_RULES": "rules", "LOW_UTILIZATION": "rules", "OOM": "rules",
    "OVER_PLAN": "rules", "RULES": "rules", "UNTAGGED_GPU": "rules", "FlagRule": "rules", "Limits": "rules",
    "Rule": "rules", "resource_flags": "rules",
    "MAX_ROW_PROBLEMS": "table",
    "USAGE_COLUMNS": "usage", "read_usage": "usage",
}


def __getattr__(name: str):
    """A re-exported name, from its module (imported now if not yet)."""
    if name not in _FROM:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_FROM[name]}", __name__), name)


__all__ = [
    "ACTIONS", "BILL_INPUT_COLUMNS", "DATA_STARVED", "DEFAULT_GPU_LINE_PATTERN", "FLAG_RULES", "LOW_UTILIZATION",
    "MAX_ROW_PROBLEMS", "OOM", "OUTPUT_COLUMNS", "OVER_PLAN", "RULES", "UNTAGGED_GPU", "USAGE_COLUMNS",
    "USAGE_INPUT_COLUMNS", "Action", "BillSource", "BillSums", "Coverage", "FileColumn", "FlagRule", "Limits",
    "MonthRecon", "PlanFacts", "PlanRecon", "ResourceRecon", "ResourceTable", "Rule", "TaskRecon", "aggregate_lines", "gpu_matcher",
    "is_hours_unit", "next_month_actions", "plan_facts", "plan_targets", "read_bills", "read_usage", "reconcile",
    "reconcile_plan", "resource_flags", "sum_bills", "unknown_task_warnings", "unmatched_usage_warnings",
]


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_FROM))
