"""FOCUS bill lines (CSV, Parquet, xlsx or a `Bills` sheet) → one normalised row per line.

The bill's columns are declared in columns.BILL_INPUT_COLUMNS; GPU lines are told by `gpu_matcher`, a
user's regular expression run under a time bound (the `regex` package's timeout).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import pandas as pd
import regex

from ..errors import Code, InputError, Problem
from ..i18n import Message
from .columns import BILL_INPUT_COLUMNS
from .table import Table, map_unique, read_table

DEFAULT_GPU_LINE_PATTERN = (
    r"\b(?:g2|g3s?|g4dn|g4ad|g5g?|g6e?|gr6|p2|p3dn|p3|p4de?|p5e?n?)\."  # AWS (and SageMaker ml.*)
    r"|\ba[23]-(?:high|mega|ultra|edge)gpu"  # GCP A2/A3
    r"|\bg2-standard-"  # GCP G2 (L4)
    r"|(?:\b|_)n[cdv]\d+[a-z]*(?:_[a-z0-9]+)*\b"  # Azure sizes: NC6s_v3, Standard_ND96asr_v4
    r"|(?:\b|_)n[cdv]\w*[\s_]series\b"  # Azure meter sub-categories: NCv3 Series
    r"|\bgpus?\b"
)
"""Default `gpu_line_pattern`: GPU instance families of AWS, GCP and Azure, and the word GPU."""

GPU_TEXT_COLUMNS = ("ChargeDescription", "SkuId", "ResourceType", "ServiceName", "ResourceName")
OUTPUT_COLUMNS = (
    "month", "billed_cost", "resource_id", "resource_name", "service_name", "charge_category",
    "consumed_quantity", "consumed_unit", "task_id", "is_gpu", "category",
)
CHARGE_CATEGORIES = ("Usage", "Purchase", "Tax", "Credit", "Adjustment")
PATTERN_SECONDS = 1.0
"""Longest time the GPU line pattern may take on one line's text before the bill is refused."""
_NETWORK_TEXT = r"egress|data transfer|bandwidth"


def read_bills(
    source: str | Path | pd.DataFrame,
    name: str,
    plan_currency: str,
    gpu_line_pattern: str,
    assignments: Mapping[str, str],
    gpu_names: Iterable[str],
) -> pd.DataFrame:
    """Read a FOCUS bill into one row per line (index: the line's row), see OUTPUT_COLUMNS."""
    table = read_table(source, name, BILL_INPUT_COLUMNS)
    missing = table.missing(c.name for c in BILL_INPUT_COLUMNS if c.required)
    if missing:
        raise InputError(missing)
    matcher = gpu_matcher(gpu_line_pattern, gpu_names)
    month, problems = table.months("ChargePeriodStart")
    if table.header("BillingPeriodStart") is not None:
        # The invoice month wins where the bill gives it: BilledCost ties to the invoice.
        invoice_month, _ = table.months("BillingPeriodStart")
        month = invoice_month.where(invoice_month.notna(), month)
    cost, cost_problems = table.numbers("BilledCost")
    quantity, quantity_problems = table.numbers("ConsumedQuantity")
    tag_task, tag_problems = _tag_task_ids(table)
    problems += (
        cost_problems + quantity_problems + tag_problems + table.empty("ChargePeriodStart") + table.empty("BilledCost")
        + _currency_problems(table, plan_currency)
    )
    if problems:
        raise InputError(problems)
    resource_id = table.strings("ResourceId")
    task_id = tag_task.where(tag_task != "", resource_id.map(dict(assignments)).astype("str").fillna(""))
    is_gpu = (task_id != "") | _names_gpu(table, matcher, gpu_line_pattern)
    return pd.DataFrame({
        "month": month,
        "billed_cost": cost,
        "resource_id": resource_id,
        "resource_name": table.strings("ResourceName"),
        "service_name": table.strings("ServiceName"),
        "charge_category": _charge_categories(table.strings("ChargeCategory")),
        "consumed_quantity": quantity,
        "consumed_unit": table.strings("ConsumedUnit"),
        "task_id": task_id.astype("str"),
        "is_gpu": is_gpu.astype(bool),
        "category": _categories(table).where(~is_gpu, "gpu"),
    }, index=table.frame.index)


def gpu_matcher(pattern: str, gpu_names: Iterable[str]) -> regex.Pattern:
    """One case-insensitive regular expression for the GPU line pattern and the catalog's GPU names.

    It is compiled by the `regex` package so that each search can be given a timeout (PATTERN_SECONDS).
    """
    alternatives = [f"(?:{pattern})"] if pattern else []
    alternatives += [_gpu_name_regex(n) for n in gpu_names if n.strip()]
    try:
        return regex.compile("|".join(alternatives) or r"(?!)", regex.IGNORECASE)
    except regex.error as exc:
        raise InputError([Problem(Code.WRONG_FORMAT, "Settings", "",
                                  Message("bad_gpu_pattern", pattern=pattern, reason=str(exc)))]) from exc


def _gpu_name_regex(gpu_name: str) -> str:
    """A catalog name as a whole word, its memory size optional (`A100 80G` matches `A100`, `A100-80GB`)."""
    *words, last = gpu_name.split()
    if words and re.fullmatch(r"\d+G", last, re.IGNORECASE):
        body = r"[\s_-]*".join(map(re.escape, words)) + rf"(?:[\s_-]*{re.escape(last)}B?)?"
    else:
        body = r"[\s_-]*".join(map(re.escape, [*words, last]))
    return rf"(?<![a-z0-9])(?:{body})(?![a-z0-9])"


def _names_gpu(table: Table, matcher: regex.Pattern, pattern: str) -> pd.Series:
    """Whether a line's description, SKU, type, service, name or x_ columns name a GPU.

    Each distinct text is searched once, for at most PATTERN_SECONDS: a pattern that backtracks without end
    (`(a|aa)+$`) is refused at the first line it stalls on instead of hanging the build.
    """
    extras = [c for c in table.frame.columns if str(c).lower().startswith("x_")]
    columns = [table.header(c) for c in GPU_TEXT_COLUMNS] + extras
    text = pd.Series("", index=table.frame.index, dtype="str")
    for column in columns:
        if column is not None:
            text = text + " | " + table.header_text(column).fillna("")
    codes, uniques = pd.factorize(text)
    hits = np.zeros(len(uniques), dtype=bool)
    for i, line in enumerate(uniques):
        try:
            hits[i] = matcher.search(line, timeout=PATTERN_SECONDS) is not None
        except TimeoutError:
            row = text.index[int(np.argmax(codes == i))]
            raise InputError([Problem(Code.WRONG_FORMAT, "Settings", "", Message(
                "slow_gpu_pattern", pattern=pattern, seconds=PATTERN_SECONDS, file=table.name, place=f"row {row}",
            ))]) from None
    return pd.Series(hits[codes], index=text.index)


def _tag_task_ids(table: Table) -> tuple[pd.Series, list[Problem]]:
    """The `task_id` in each line's Tags JSON ("" when none), parsing only tags that mention it."""
    tags = table.strings("Tags")
    mentions = tags.str.lower().str.contains("task", regex=False)
    task = pd.Series(map_unique(tags[mentions], _task_of_tags), index=tags[mentions].index, dtype=object)
    bad = task.isna().reindex(tags.index, fill_value=False)
    header = table.header("Tags")
    problems = table.row_problems(bad, header, Code.WRONG_FORMAT, lambda v: Message("tags_not_json", raw=v)) \
        if header else []
    return task.fillna("").reindex(tags.index, fill_value="").astype("str"), problems


def _task_of_tags(tags: str) -> str | None:
    """The task_id key of a JSON object ("" when absent, None when not a JSON object)."""
    try:
        parsed = json.loads(tags)
    except ValueError:
        return None
    if not isinstance(parsed, dict):
        return None
    for key, value in parsed.items():
        if re.sub(r"^user:|[\s_-]", "", str(key).lower()) == "taskid" and value not in (None, ""):
            return str(value).strip()
    return ""


def _currency_problems(table: Table, plan_currency: str) -> list[Problem]:
    """One problem per billing currency that is not the plan's, at its first line (never converted)."""
    header = table.header("BillingCurrency")
    currency = table.text("BillingCurrency").str.upper()
    other = currency.notna() & (currency != plan_currency.strip().upper())
    return [
        table.problem(Code.CURRENCY, table.cell(header, rows.min()), Message(
            "currency_mismatch", code=code, lines=len(rows), plan=plan_currency))
        for code, rows in currency[other].groupby(currency[other], sort=True).groups.items()
    ]


def _charge_categories(values: pd.Series) -> pd.Series:
    """FOCUS ChargeCategory spelled canonically whatever its case (`usage` → `Usage`)."""
    canonical = {c.lower(): c for c in CHARGE_CATEGORIES}
    return values.str.lower().map(canonical).fillna(values).astype("str")


def _categories(table: Table) -> pd.Series:
    """storage, network or other, from ServiceCategory, then ServiceName and ChargeDescription."""
    service_category = table.strings("ServiceCategory").str.lower()
    service_name = table.strings("ServiceName")
    description = table.strings("ChargeDescription")
    network_text = (service_name + " " + description).str.contains(_NETWORK_TEXT, case=False, regex=True)
    storage_name = service_name.str.contains("storage", case=False, regex=False)
    choices = np.select(
        [service_category == "storage", service_category == "networking", network_text, storage_name],
        ["storage", "network", "network", "storage"],
        default="other",
    )
    return pd.Series(choices, index=table.frame.index, dtype="str")
