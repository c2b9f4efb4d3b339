"""GPU utilisation (Usage sheet, monthly or raw CSV, nvidia-smi CSV) → one row per resource and month.

The file's columns are declared in columns.USAGE_INPUT_COLUMNS (with nvidia-smi's headers as aliases).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..core.errors import Code, InputError
from ..core.i18n import Message
from .columns import GB_PER_UNIT, USAGE_INPUT_COLUMNS, gb_per_unit
from .table import Table, read_table

USAGE_COLUMNS = ("resource_id", "month", "avg_util_pct", "mem_avg_gb", "mem_peak_gb", "mem_total_gb", "oom_events")
_VALUE_UNIT = r"(?i)^\s*(?P<number>.*?(?:\d\.?|inf|infinity|nan))\s*(?P<unit>%|[a-z]+)\s*$"
"""A number followed by a unit (`45 %`, `1234 MiB`, `2 G`): the unit is checked, then converted or refused."""


def read_usage(source: str | Path | pd.DataFrame, name: str) -> pd.DataFrame:
    """Read utilisation samples or monthly rows into one row per (resource_id, month), see USAGE_COLUMNS."""
    table = read_table(source, name, USAGE_INPUT_COLUMNS)
    _require(table, from_file=not isinstance(source, pd.DataFrame))
    month_column = "month" if table.header("month") is not None else "timestamp"
    month, problems = table.months(month_column)
    util, more_util = _values(table, "gpu_util_pct")
    memory, more_memory = _values(table, "mem_used_gb")
    total, more_total = _values(table, "mem_total_gb")
    oom, more_oom = table.numbers("oom_events")
    resource_id, more_id = _resource_ids(table, source)
    problems += table.empty(month_column) + more_util + more_memory + more_total + more_oom + more_id
    if problems:
        raise InputError(problems)
    samples = pd.DataFrame({
        "resource_id": resource_id, "month": month, "util": util, "mem": memory, "total": total, "oom": oom,
    })
    return _per_month(samples)


def _require(table: Table, from_file: bool) -> None:
    """Fail when a required usage column is absent (resource_id may come from a file's name)."""
    problems = table.missing(
        c.name for c in USAGE_INPUT_COLUMNS if c.required or (c.name == "resource_id" and not from_file))
    if table.header("month") is None and table.header("timestamp") is None:
        problems.append(table.problem(Code.MISSING_COLUMN, "", Message("usage_missing_time")))
    if problems:
        raise InputError(problems)


def _values(table: Table, name: str) -> tuple[pd.Series, list]:
    """A number column without its value units, memory converted to GB by each value's own unit (`1000 MiB` is
    1.048576 GB), else by the header's; a unit of another kind, or one that does not say whether it counts in
    1000s or 1024s (`2 G`), is refused."""
    header = table.header(name)
    if header is None:
        return table.numbers(name)
    column = table.declared[name]
    text = table.text(name)
    text = text.mask(text.str.fullmatch(r"\[.*\]"))
    parts = text.str.extract(_VALUE_UNIT)
    unit = parts["unit"].str.lower()
    values, problems = table.numbers(name, parts["number"].where(unit.notna(), text))
    memory = column.unit == "GB"
    refused = unit.notna() & ~unit.isin(list(GB_PER_UNIT) if memory else ["%"])
    problems += table.row_problems(refused, header, Code.UNKNOWN_VALUE, lambda v: Message(
        "usage_value_unit" if memory else "usage_percent_unit", raw=v))
    if not memory:
        return values, problems
    return values * unit.map(GB_PER_UNIT).fillna(gb_per_unit(header, column)).astype("float64"), problems


def _resource_ids(table: Table, source: object) -> tuple[pd.Series, list]:
    """The resource_id column, or the file's stem for every row (nvidia-smi has no id column)."""
    header = table.header("resource_id")
    if header is None:
        return pd.Series(Path(str(source)).stem, index=table.frame.index, dtype="str"), []
    ids = table.text("resource_id")
    return ids, table.row_problems(ids.isna(), header, Code.REQUIRED, lambda _v: Message("resource_empty"))


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
