"""Bills and usage from files and sheets, reconciled against a plan (the glue around recon.py)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from .bills import DEFAULT_GPU_LINE_PATTERN, read_bills
from .engine import Plan
from .errors import InputError
from .recon import MonthRecon, reconcile
from .usage import USAGE_COLUMNS, read_usage


def _gather(sources: list, read) -> tuple[pd.DataFrame | None, list]:
    frames, problems = [], []
    for source, name in sources:
        try:
            frames.append(read(source, name))
        except InputError as exc:
            problems.extend(exc.problems)
    return (pd.concat(frames) if frames else None), problems


def reconcile_plan(plan: Plan, bill_paths: list[Path], usage_paths: list[Path]) -> tuple[dict[str, MonthRecon],
                                                                                        dict[str, float]]:
    """Every billed month reconciled; also each month's BilledCost sum as read (for the Checks tie-out)."""
    inputs = plan.inputs
    s = inputs.settings
    bill_sources = [(p, Path(p).name) for p in bill_paths]
    if inputs.bills_sheet is not None:
        bill_sources.insert(0, (inputs.bills_sheet, "Bills"))
    usage_sources = [(p, Path(p).name) for p in usage_paths]
    if inputs.usage_sheet is not None:
        usage_sources.insert(0, (inputs.usage_sheet, "Usage"))
    if not bill_sources:
        return {}, {}
    gpu_names = [g.name for g in inputs.gpus]

    def bills_reader(source, name):
        return read_bills(source, name, s.currency, s.gpu_line_pattern or DEFAULT_GPU_LINE_PATTERN, dict(inputs.assignments), gpu_names)

    bills, problems = _gather(bill_sources, bills_reader)
    usage, usage_problems = _gather(usage_sources, read_usage)
    if problems or usage_problems:
        raise InputError(problems + usage_problems)
    if usage is None:
        usage = pd.DataFrame(columns=USAGE_COLUMNS)
    planned = {tp.task.task_id: {m: tp.cost_in(i) for i, m in enumerate(plan.months, start=1)} for tp in plan.tasks}
    buffers = {m: t.buffer for m, t in plan.month_totals.items()}
    recon = reconcile(bills, usage, planned, buffers, s.low_util_threshold, s.oom_threshold, s.variance_tolerance)
    billed = {m: math.fsum(group) for m, group in bills.groupby("month")["billed_cost"]}
    return recon, billed
