"""Monthly reconciliation: bill lines and GPU usage against the plan, with flags and next month's actions."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..engine import Plan
from ..errors import InputError
from .bill_sums import BillSource, BillSums, sum_bills, sum_lines
from .bills import DEFAULT_GPU_LINE_PATTERN
from .rules import (
    ACTIONS,
    BUFFER_LEFT,
    STATUS,
    VARIANCE,
    VARIANCE_PCT,
    Limits,
    flag_saving,
    resource_flags,
)
from .usage import USAGE_COLUMNS, read_usage

NON_GPU_CATEGORIES = ("storage", "network", "other")
_RESOURCE_KEYS = ["month", "resource_id", "task_id"]
LINE_GROUP_KEYS = ["month", "resource_id", "task_id", "is_gpu", "category", "service_name", "hours_unit"]


@dataclass(frozen=True)
class TaskRecon:
    """One task's planned and billed cost in a month."""

    task_id: str
    planned: float
    billed: float

    @property
    def variance(self) -> float:
        return VARIANCE.py({"billed": self.billed, "planned": self.planned}, None)

    @property
    def variance_pct(self) -> float | None:
        return VARIANCE_PCT.py({"variance": self.variance, "planned": self.planned}, None)

    def status(self, limits: Limits) -> str:
        """"over plan" when billed beyond planned × (1 + variance_tolerance), else ""."""
        return STATUS.py({"billed": self.billed, "planned": self.planned}, limits)

    def to_json(self) -> dict:
        return {"task_id": self.task_id, "planned": self.planned, "billed": self.billed, "variance": self.variance}


@dataclass(frozen=True)
class ResourceRecon:
    """One billed GPU resource in a month (task_id None: unallocated), its usage and flags."""

    resource_id: str
    task_id: str | None
    services: tuple[str, ...]
    lines: int
    billed: float
    hours: float
    avg_util_pct: float
    mem_peak_share: float
    oom_events: float
    flags: tuple[str, ...]

    @property
    def actions(self) -> tuple[str, ...]:
        return tuple(ACTIONS[f] for f in self.flags)

    def to_json(self) -> dict:
        return {
            "resource_id": self.resource_id or None,
            "task_id": self.task_id,
            "billed": self.billed,
            "hours": _json_number(self.hours),
            "avg_util_pct": _json_number(self.avg_util_pct),
            "mem_peak_share": _json_number(self.mem_peak_share),
            "oom_events": _json_number(self.oom_events),
            "flags": list(self.flags),
        }


@dataclass(frozen=True)
class Action:
    """What to do next month about one flag of one resource, and the change of next month's bill if it is
    taken (− saves; rules.flag_saving)."""

    resource_id: str
    task_id: str | None
    flag: str
    action: str
    plan_change: float


@dataclass(frozen=True)
class MonthRecon:
    """A month's reconciliation; gpu_billed includes unallocated, gpu_billed + non_gpu_billed = billed_total."""

    month: str
    tasks: tuple[TaskRecon, ...]
    resources: tuple[ResourceRecon, ...]
    non_gpu: Mapping[str, float]
    billed_total: float
    gpu_billed: float
    non_gpu_billed: float
    unallocated: float
    planned_total: float
    buffer_reserved: float

    @property
    def allocated_gpu(self) -> float:
        return self.gpu_billed - self.unallocated

    @property
    def buffer_left(self) -> float:
        return BUFFER_LEFT.py({"reserved": self.buffer_reserved, "non_gpu": self.non_gpu_billed}, None)

    @property
    def unallocated_resources(self) -> tuple[ResourceRecon, ...]:
        return tuple(r for r in self.resources if r.task_id is None)

    def to_json(self) -> dict:
        """SPEC §6 `reconciliation[month]`."""
        return {
            "billed_total": self.billed_total,
            "gpu_billed": self.gpu_billed,
            "non_gpu_billed": self.non_gpu_billed,
            "unallocated": self.unallocated,
            "planned_total": self.planned_total,
            "buffer_reserved": self.buffer_reserved,
            "tasks": [t.to_json() for t in self.tasks],
            "resources": [r.to_json() for r in self.resources],
        }


def _json_number(value: float) -> float | None:
    """A float for JSON, None where unknown (NaN)."""
    return None if value is None or math.isnan(value) else float(value)


def reconcile(
    sums: pd.DataFrame,
    usage: pd.DataFrame,
    planned: Mapping[str, Mapping[str, float]],
    buffer_reserved: Mapping[str, float],
    low_util_threshold: float,
    oom_threshold: float,
    variance_tolerance: float,
) -> dict[str, MonthRecon]:
    """Reconcile every month present in the bills' sums (bill_sums.BillSums.sums, or aggregate_lines of
    read_bills' lines) against the plan and usage; nothing here reads a single line.
    """
    limits = Limits(low_util_threshold, oom_threshold, variance_tolerance)
    gpu, non_gpu_sums = sums[sums["is_gpu"]], sums[~sums["is_gpu"]]
    totals = _fsum_by(sums, ["month"])
    gpu_totals = _fsum_by(gpu, ["month"])
    unallocated_totals = _fsum_by(gpu[gpu["task_id"] == ""], ["month"])
    task_billed = _fsum_by(gpu[gpu["task_id"] != ""], ["month", "task_id"])
    non_gpu = _fsum_by(non_gpu_sums, ["month", "category"])
    non_gpu_totals = _fsum_by(non_gpu_sums, ["month"])
    resources = _resource_frame(gpu, usage)
    result = {}
    for month in sorted(totals.index):
        tasks = _task_recons(month, task_billed, planned)
        status = {t.task_id: t.status(limits) for t in tasks}
        month_resources = resources[resources["month"] == month]
        result[month] = MonthRecon(
            month=month,
            tasks=tasks,
            resources=tuple(
                _resource_recon(row, status, limits)
                for row in month_resources.itertuples(index=False)
            ),
            non_gpu={c: float(non_gpu.get((month, c), 0.0)) for c in NON_GPU_CATEGORIES},
            billed_total=float(totals[month]),
            gpu_billed=float(gpu_totals.get(month, 0.0)),
            non_gpu_billed=float(non_gpu_totals.get(month, 0.0)),
            unallocated=float(unallocated_totals.get(month, 0.0)),
            planned_total=math.fsum(m.get(month, 0.0) for m in planned.values()),
            buffer_reserved=float(buffer_reserved.get(month, 0.0)),
        )
    return result


def aggregate_lines(bills: pd.DataFrame) -> pd.DataFrame:
    """read_bills' lines summed like bill_sums.sum_bills' `sums`: per month, resource, task, GPU or not, category,
    service and whether ConsumedUnit counts hours (LINE_GROUP_KEYS), Σ BilledCost (`billed`), Σ ConsumedQuantity
    (`quantity`, NaN when none), the number of `lines`, and the `first_charge` and `last_charge`.
    """
    return sum_lines(bills)


def _fsum_by(sums: pd.DataFrame, keys: list[str]) -> pd.Series:
    """Exactly rounded sums of `billed` per group (math.fsum), keyed by the group."""
    return sums.groupby(keys, sort=True)["billed"].agg(lambda s: math.fsum(s.to_numpy()))


def _task_recons(
    month: str, task_billed: pd.Series, planned: Mapping[str, Mapping[str, float]]
) -> tuple[TaskRecon, ...]:
    """Every task planned above zero or billed in the month, by task_id."""
    billed = {task: float(v) for (m, task), v in task_billed.items() if m == month}
    planned_now = {task: float(by_month.get(month, 0.0)) for task, by_month in planned.items()}
    task_ids = sorted(set(billed) | {t for t, p in planned_now.items() if p > 0})
    return tuple(TaskRecon(t, planned_now.get(t, 0.0), billed.get(t, 0.0)) for t in task_ids)


def _resource_frame(gpu: pd.DataFrame, usage: pd.DataFrame) -> pd.DataFrame:
    """GPU sums per (month, resource, task) with billed, hours, lines, services and the month's usage."""
    sums = gpu.assign(hours=gpu["quantity"].where(gpu["hours_unit"]))
    grouped = sums.groupby(_RESOURCE_KEYS, sort=True)
    frame = pd.DataFrame({
        "billed": _fsum_by(sums, _RESOURCE_KEYS),
        "hours": grouped["hours"].sum(min_count=1),
        "lines": grouped["lines"].sum(),
        "services": grouped["service_name"].agg(lambda s: tuple(sorted(set(s) - {""}))),
    }).reset_index().astype(dict.fromkeys(_RESOURCE_KEYS, "str"))
    frame = frame.merge(_usage_by_month(usage), on=["resource_id", "month"], how="left")
    frame["mem_peak_share"] = frame["mem_peak_gb"] / frame["mem_total_gb"].where(frame["mem_total_gb"] > 0)
    frame["unallocated"] = frame["task_id"] == ""
    return frame.sort_values(["unallocated", "task_id", "resource_id"], kind="stable", ignore_index=True)


def _usage_by_month(usage: pd.DataFrame) -> pd.DataFrame:
    """read_usage frames (possibly several concatenated) merged to one row per resource and month."""
    usage = usage.reindex(columns=list(USAGE_COLUMNS)).astype({"resource_id": "str", "month": "str"})
    grouped = usage.groupby(["resource_id", "month"], sort=False)
    merged = grouped.agg(
        avg_util_pct=("avg_util_pct", "mean"), mem_peak_gb=("mem_peak_gb", "max"), mem_total_gb=("mem_total_gb", "max"),
    )
    merged["oom_events"] = grouped["oom_events"].sum(min_count=1)
    return merged.reset_index()


def is_hours_unit(unit: str) -> bool:
    """Whether a ConsumedUnit counts hours (`Hours`, `Hrs`, `GPU-Hours`; not `GB-Hours` or `per Hour`)."""
    text = unit.strip().lower()
    counts_hours = re.search(r"(?:^|[\s_-])(?:h|hrs?|hours?)$", text)
    return bool(counts_hours) and not re.search(r"\bper\b|/|byte|\bgb|\bgib|\btb", text)


def _resource_recon(row: tuple, status: Mapping[str, str], limits: Limits) -> ResourceRecon:
    """One row of the resource frame as a ResourceRecon with its flags."""
    task_id = row.task_id or None
    flags = resource_flags({
        "util": row.avg_util_pct, "mem_share": row.mem_peak_share, "oom": row.oom_events,
        "task": row.task_id, "task_status": status.get(row.task_id, ""),
    }, limits)
    return ResourceRecon(
        resource_id=row.resource_id,
        task_id=task_id,
        services=row.services,
        lines=int(row.lines),
        billed=float(row.billed),
        hours=float(row.hours),
        avg_util_pct=float(row.avg_util_pct),
        mem_peak_share=float(row.mem_peak_share),
        oom_events=float(row.oom_events),
        flags=flags,
    )


def next_month_actions(recon: MonthRecon) -> tuple[Action, ...]:
    """Per flagged resource and flag: the action, and the change of next month's bill if it is taken
    (alternatives, not a sum)."""
    return tuple(
        Action(r.resource_id, r.task_id, flag, ACTIONS[flag], 0.0 - flag_saving(flag, r.billed))
        for r in recon.resources
        for flag in r.flags
    )


def _gather(sources: list, read) -> tuple[pd.DataFrame | None, list]:
    """Every source read, their frames concatenated, and all their problems (not only the first file's)."""
    frames, problems = [], []
    for source, name in sources:
        try:
            frames.append(read(source, name))
        except InputError as exc:
            problems.extend(exc.problems)
    return (pd.concat(frames) if frames else None), problems


def reconcile_plan(plan: Plan, bill_paths: list[Path], usage_paths: list[Path], temp_parent: Path | None = None,
                   progress=None) -> tuple[dict[str, MonthRecon], BillSums | None]:
    """Every billed month of the bill files (files, folders or globs) and Bills sheet reconciled against the plan,
    with the usage files and Usage sheet; also the bills' sums (BillSums: the de-duplicated BilledCost per month
    for the Checks tie-out, coverage, duplicates, warnings), None without bills."""
    inputs = plan.inputs
    s = inputs.settings
    bill_sources = [BillSource(p, Path(p).name) for p in bill_paths]
    if inputs.bills_sheet is not None:
        bill_sources.insert(0, BillSource(inputs.bills_sheet, "Bills"))
    usage_sources = [(p, Path(p).name) for p in usage_paths]
    if inputs.usage_sheet is not None:
        usage_sources.insert(0, (inputs.usage_sheet, "Usage"))
    if not bill_sources:
        return {}, None
    usage, problems = _gather(usage_sources, read_usage)
    try:
        bills = sum_bills(bill_sources, s.currency, s.gpu_line_pattern or DEFAULT_GPU_LINE_PATTERN,
                          dict(inputs.assignments), [g.name for g in inputs.gpus],
                          billing_timezone=s.billing_timezone, memory_limit=s.recon_memory_limit,
                          temp_parent=temp_parent, progress=progress)
    except InputError as exc:
        raise InputError(exc.problems + problems) from None
    if problems:
        raise InputError(problems)
    if usage is None:
        usage = pd.DataFrame(columns=USAGE_COLUMNS)
    planned = {tp.task.task_id: {m: tp.cost_in(i) for i, m in enumerate(plan.months, start=1)} for tp in plan.tasks}
    buffers = {m: t.buffer for m, t in plan.month_totals.items()}
    recon = reconcile(bills.sums, usage, planned, buffers, s.low_util_threshold, s.oom_threshold,
                      s.variance_tolerance)
    return recon, bills
