"""FOCUS bill lines (CSV, Parquet, xlsx or a `Bills` sheet) → one normalised row per line, for small bills.

The bill's columns are declared in columns.BILL_INPUT_COLUMNS; the rules of a line are bill_sums' SQL (DuckDB),
the GPU line pattern an RE2 expression (linear time: no pattern can stall a build).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path

import pandas as pd

from ..core.errors import Code, InputError, Problem
from ..core.i18n import Message
from .bill_sums import gpu_regex, read_bill_lines

DEFAULT_GPU_LINE_PATTERN = (
    r"\b(?:g2|g3s?|g4dn|g4ad|g5g?|g6e?|gr6|p2|p3dn|p3|p4de?|p5e?n?)\."  # AWS (and SageMaker ml.*)
    r"|\ba[23]-(?:high|mega|ultra|edge)gpu"  # GCP A2/A3
    r"|\bg2-standard-"  # GCP G2 (L4)
    r"|(?:\b|_)n[cdv]\d+[a-z]*(?:_[a-z0-9]+)*\b"  # Azure sizes: NC6s_v3, Standard_ND96asr_v4
    r"|(?:\b|_)n[cdv]\w*[\s_]series\b"  # Azure meter sub-categories: NCv3 Series
    r"|\bgpus?\b"
)
"""Default `gpu_line_pattern`: GPU instance families of AWS, GCP and Azure, and the word GPU."""

OUTPUT_COLUMNS = (
    "month", "billed_cost", "resource_id", "resource_name", "service_name", "charge_category",
    "consumed_quantity", "consumed_unit", "task_id", "is_gpu", "category", "charge_start", "effective_cost",
    "commitment", "commitment_id", "commitment_type", "pricing_category",
)
CHARGE_CATEGORIES = ("Usage", "Purchase", "Tax", "Credit", "Adjustment")


def read_bills(
    source: str | Path | pd.DataFrame,
    name: str,
    plan_currency: str,
    gpu_line_pattern: str,
    assignments: Mapping[str, str],
    gpu_names: Iterable[str],
    billing_timezone: str = "UTC",
) -> pd.DataFrame:
    """Read a small FOCUS bill into one row per line (index: the line's row), see OUTPUT_COLUMNS.

    The lines follow the same SQL as bill_sums.sum_bills, which sums bills of any size without loading them.
    """
    lines = read_bill_lines(source, name, plan_currency, gpu_line_pattern, assignments, gpu_names, billing_timezone)
    lines["charge_category"] = _charge_categories(lines["charge_category"])
    return lines.reindex(columns=list(OUTPUT_COLUMNS))


def gpu_matcher(pattern: str, gpu_names: Iterable[str]) -> re.Pattern:
    """The GPU line expression (bill_sums.gpu_regex, run by DuckDB's RE2) compiled by Python's re, to try it."""
    try:
        return re.compile(gpu_regex(pattern, gpu_names), re.IGNORECASE)
    except re.error as exc:
        raise InputError([Problem(Code.WRONG_FORMAT, "Settings", "",
                                  Message("bad_gpu_pattern", pattern=pattern, reason=str(exc)))]) from exc


def _charge_categories(values: pd.Series) -> pd.Series:
    """FOCUS ChargeCategory spelled canonically whatever its case (`usage` → `Usage`)."""
    canonical = {c.lower(): c for c in CHARGE_CATEGORIES}
    return values.str.lower().map(canonical).fillna(values).astype("str")
