"""GPU utilisation (Usage sheet, monthly or raw CSV, nvidia-smi CSV) → one row per resource and month."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from budgetgen.bills import Table, load_table
from budgetgen.errors import Code, InputError, Problem

USAGE_COLUMNS = ("resource_id", "month", "avg_util_pct", "mem_avg_gb", "mem_peak_gb", "mem_total_gb", "oom_events")
GB_PER_UNIT = {"b": 1e-9, "kib": 1024 / 1e9, "mib": 1048576 / 1e9, "gib": 2**30 / 1e9, "mb": 1e-3, "gb": 1.0}
_SOURCES = {
    "resource_id": ("resource_id", "resource", "instance_id"),
    "month": ("month",),
    "timestamp": ("timestamp", "time", "date"),
    "gpu_util_pct": ("gpu_util_pct", "utilization.gpu", "gpu_util"),
    "mem_used_gb": ("mem_used_gb", "memory.used"),
    "mem_total_gb": ("mem_total_gb", "memory.total"),
    "oom_events": ("oom_events", "oom"),
}
_VALUE_UNIT = r"(?i)\s*(?:%|[kmg]i?b)\s*$"


def read_usage(source: str | Path | pd.DataFrame, name: str) -> pd.DataFrame:
    """Read utilisation samples or monthly rows into one row per (resource_id, month), see USAGE_COLUMNS."""
    table = load_table(source, name)
    found = {key: table.find(*aliases) for key, aliases in _SOURCES.items()}
    _require(table, found, from_file=not isinstance(source, pd.DataFrame))
    month_column = found["month"] or found["timestamp"]
    month, problems = table.months(month_column)
    util, more = _values(table, found["gpu_util_pct"])
    problems += more + table.row_problems(
        ~util.between(0, 100) & util.notna(), found["gpu_util_pct"], Code.OUT_OF_RANGE,
        lambda v: f'"{v}" is not a percentage between 0 and 100',
    )
    memory, more = _values(table, found["mem_used_gb"])
    total, more_total = _values(table, found["mem_total_gb"])
    oom, more_oom = table.numbers(found["oom_events"])
    resource_id, more_id = _resource_ids(table, found["resource_id"], source)
    problems += more + more_total + more_oom + more_id
    if problems:
        raise InputError(problems)
    samples = pd.DataFrame({
        "resource_id": resource_id, "month": month, "util": util, "mem": memory, "total": total, "oom": oom,
    })
    return _per_month(samples)


def _require(table: Table, found: dict[str, str | None], from_file: bool) -> None:
    """Fail when a required usage column is absent (resource_id may come from a file's name)."""
    wanted = {
        "gpu_util_pct": "gpu_util_pct (or nvidia-smi utilization.gpu)",
        "mem_used_gb": "mem_used_gb (or nvidia-smi memory.used)",
    }
    if not from_file:
        wanted["resource_id"] = "resource_id"
    missing = [label for key, label in wanted.items() if found[key] is None]
    if found["month"] is None and found["timestamp"] is None:
        missing.append("month or timestamp")
    if missing:
        raise InputError([
            Problem(Code.MISSING_COLUMN, table.name, "", f'has no "{label}" column; add it') for label in missing
        ])


def _values(table: Table, column: str | None) -> tuple[pd.Series, list[Problem]]:
    """A number column without its value units (`45 %`, `1234 MiB`), memory converted to GB."""
    if column is None:
        return table.numbers(None)
    text = table.text(column).str.replace(_VALUE_UNIT, "", regex=True)
    text = text.mask(text.str.fullmatch(r"\[.*\]"))
    values, problems = table.numbers(column, text)
    return values * _gb_factor(column), problems


def _gb_factor(header: str) -> float:
    """GB per unit of a memory header: `[MiB]` in nvidia-smi's headers (its default unit), GB otherwise."""
    unit = re.search(r"\[([^\]]*)\]", header)
    if unit:
        return GB_PER_UNIT.get(unit.group(1).strip().lower(), 1.0)
    return GB_PER_UNIT["mib"] if header.strip().lower().startswith("memory.") else 1.0


def _resource_ids(table: Table, column: str | None, source: object) -> tuple[pd.Series, list[Problem]]:
    """The resource_id column, or the file's stem for every row (nvidia-smi has no id column)."""
    if column is None:
        return pd.Series(Path(str(source)).stem, index=table.frame.index, dtype="str"), []
    ids = table.text(column)
    return ids, table.row_problems(ids.isna(), column, Code.REQUIRED, lambda _v: "is empty; name the resource")


def _per_month(samples: pd.DataFrame) -> pd.DataFrame:
    """Average utilisation and memory, peak memory, card memory and OOM events per resource and month."""
    grouped = samples.groupby(["resource_id", "month"], sort=True)
    result = grouped.agg(
        avg_util_pct=("util", "mean"),
        mem_avg_gb=("mem", "mean"),
        mem_peak_gb=("mem", "max"),
        mem_total_gb=("total", "max"),
    )
    result["oom_events"] = grouped["oom"].sum(min_count=1)
    return result.reset_index()[list(USAGE_COLUMNS)]
