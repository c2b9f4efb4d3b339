"""FOCUS bill lines (CSV, Parquet, xlsx or a `Bills` sheet) → one normalised row per line."""

from __future__ import annotations

import json
import re
import string
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from budgetgen.errors import Code, InputError, Problem
from budgetgen.safefile import EXCEL_MAX_ROWS, iter_rows, load_input_workbook

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
MAX_ROW_PROBLEMS = 20
NULL_TEXTS = ("", "NULL")
_NETWORK_TEXT = r"egress|data transfer|bandwidth"


def header_key(header: object) -> str:
    """A header as matched: lower case, no `[unit]`, spaces or underscores."""
    return re.sub(r"\[[^\]]*\]|[\s_]", "", str(header)).lower()


def column_letter(position: int) -> str:
    """Spreadsheet column letters of a 0-based position (0 → A, 26 → AA)."""
    letters = ""
    position += 1
    while position:
        position, rest = divmod(position - 1, 26)
        letters = string.ascii_uppercase[rest] + letters
    return letters


def map_unique(values: pd.Series, fn: Callable[[str], Any]) -> np.ndarray:
    """Apply fn once per distinct text and spread the results over the rows."""
    codes, uniques = pd.factorize(values.fillna(""))
    results = np.empty(len(uniques), dtype=object)
    results[:] = [fn(u) for u in uniques]
    return results[codes]


@dataclass(frozen=True)
class Table:
    """A loaded input table whose index is the row number the user sees."""

    frame: pd.DataFrame
    name: str
    a1: bool
    texts: dict = field(default_factory=dict, compare=False, repr=False)  # text() per column, computed once

    def find(self, *keys: str) -> str | None:
        """The first column whose header matches one of keys (case, spaces, underscores ignored)."""
        by_key = {header_key(c): c for c in reversed(self.frame.columns)}
        return next((by_key[header_key(k)] for k in keys if header_key(k) in by_key), None)

    def cell(self, column: str, row: int) -> str:
        """Where a value sits: `C14` in a sheet, `row 14` in a file."""
        if self.a1:
            return f"{column_letter(self.frame.columns.get_loc(column))}{row}"
        return f"row {row}"

    def text(self, column: str | None) -> pd.Series:
        """A column as stripped text, with empty cells and the text NULL as missing."""
        if column is None:
            return pd.Series(pd.NA, index=self.frame.index, dtype="str")
        if column not in self.texts:
            text = self.frame[column].astype("str").str.strip()
            self.texts[column] = text.mask(text.str.upper().isin(NULL_TEXTS))
        return self.texts[column]

    def strings(self, column: str | None) -> pd.Series:
        """A column as stripped text, missing values as ""."""
        return self.text(column).fillna("")

    def numbers(self, column: str | None, text: pd.Series | None = None) -> tuple[pd.Series, list[Problem]]:
        """A number column as floats (missing → NaN) and a problem for each text that is no number."""
        if column is None:
            return pd.Series(np.nan, index=self.frame.index), []
        raw = self.frame[column]
        if text is None and pd.api.types.is_numeric_dtype(raw) and not pd.api.types.is_bool_dtype(raw):
            return raw.astype("float64"), []
        text = self.text(column) if text is None else text
        values = pd.to_numeric(text, errors="coerce").astype("float64")
        bad = text.notna() & values.isna()
        return values, self.row_problems(bad, column, Code.NOT_A_NUMBER, _not_a_number)

    def months(self, column: str) -> tuple[pd.Series, list[Problem]]:
        """`YYYY-MM` of a date/timestamp column (with or without T/Z, date only, / or -)."""
        raw = self.frame[column]
        if pd.api.types.is_datetime64_any_dtype(raw):
            return raw.dt.strftime("%Y-%m").astype("str"), self.row_problems(raw.isna(), column, Code.REQUIRED, _empty)
        text = self.text(column)
        month = pd.Series(map_unique(text.str.slice(0, 8), _month_of), index=text.index, dtype="str")
        bad = text.notna() & month.isna()
        return month, (
            self.row_problems(text.isna(), column, Code.REQUIRED, _empty)
            + self.row_problems(bad, column, Code.BAD_MONTH, lambda v: f'"{v}" is not a date (write e.g. 2026-07-01)')
        )

    def row_problems(self, mask: pd.Series, column: str, code: Code, describe: Callable[[Any], str]) -> list[Problem]:
        """One problem per masked row (the first MAX_ROW_PROBLEMS, then one line counting the rest)."""
        rows = mask[mask.fillna(False).astype(bool)].index
        values = self.frame.loc[rows[:MAX_ROW_PROBLEMS], column]
        problems = [
            Problem(code, self.name, self.cell(column, row), f"{column}: {describe(_shown(value))}")
            for row, value in values.items()
        ]
        if len(rows) > MAX_ROW_PROBLEMS:
            row = rows[MAX_ROW_PROBLEMS]
            problems.append(Problem(
                code, self.name, self.cell(column, row),
                f"{column}: {len(rows) - MAX_ROW_PROBLEMS} more lines with the same problem from here on",
            ))
        return problems


def _month_of(text: str) -> str | None:
    """`YYYY-MM` from the start of a date text (`2026-07-31T…`, `2026/7/31`), None when it is no date."""
    found = re.match(r"(\d{4})[-/.](\d{1,2})(?:\D|$)", text)
    if not found or not 1 <= int(found.group(2)) <= 12:
        return None
    return f"{found.group(1)}-{int(found.group(2)):02d}"


def _shown(value: object) -> object:
    """A value as quoted in a message: text without its surrounding spaces."""
    return value.strip() if isinstance(value, str) else value


def _not_a_number(value: object) -> str:
    """The message for a number cell holding text."""
    return f'"{value}" is not a number; write a plain number such as 12.5 (no currency sign or separators)'


def _empty(_value: object) -> str:
    """The message for a required value left empty."""
    return "is empty; every line needs a value here"


def load_table(source: str | Path | pd.DataFrame, name: str) -> Table:
    """Read a path (CSV, Parquet, xlsx first sheet) or take a sheet's DataFrame as a Table."""
    if isinstance(source, pd.DataFrame):
        return Table(source, name, a1=True)
    path = Path(source)
    if not path.is_file():
        raise InputError([Problem(Code.NOT_A_FILE, name, "", f"{path} is not a file; check the path")])
    readers = {".csv": _read_csv, ".parquet": _read_parquet, ".xlsx": _read_xlsx}
    reader = readers.get(path.suffix.lower())
    if reader is None:
        raise InputError([Problem(
            Code.WRONG_FORMAT, name, "", f'"{path.name}" is not CSV, Parquet or xlsx; export it as one of these',
        )])
    try:
        return Table(reader(path), name, a1=reader is _read_xlsx)
    except (ValueError, OSError, ImportError) as exc:
        message = f"cannot be read ({exc}); save it again as UTF-8 CSV, Parquet or xlsx"
        raise InputError([Problem(Code.UNREADABLE, name, "", message)]) from exc


def _numbered(frame: pd.DataFrame, first_row: int) -> pd.DataFrame:
    """The frame with its rows numbered from first_row."""
    frame.index = pd.RangeIndex(first_row, first_row + len(frame), name="row")
    return frame


def _read_csv(path: Path) -> pd.DataFrame:
    """A CSV file as text columns; its header is row 1."""
    return _numbered(pd.read_csv(path, engine="pyarrow", dtype="str", keep_default_na=False), 2)


def _read_parquet(path: Path) -> pd.DataFrame:
    """A Parquet file; its first record is row 1."""
    return _numbered(pd.read_parquet(path), 1)


def _read_xlsx(path: Path) -> pd.DataFrame:
    """The first sheet of an xlsx workbook, opened through safefile's checks, indexed by sheet row."""
    workbook = load_input_workbook(path)
    try:
        rows = list(iter_rows(workbook.worksheets[0], max_rows=EXCEL_MAX_ROWS))
    finally:
        workbook.close()
    if not rows:
        return pd.DataFrame()
    width = max(len(values) for _, values in rows)
    header = [*rows[0][1], *[None] * width][:width]
    columns = [f"column {column_letter(i)}" if h is None else str(h) for i, h in enumerate(header)]
    body = [(*values, *[None] * (width - len(values))) for _, values in rows[1:]]
    index = pd.Index([number for number, _ in rows[1:]], name="row")
    return pd.DataFrame(body, columns=columns, index=index, dtype=object)


def read_bills(
    source: str | Path | pd.DataFrame,
    name: str,
    plan_currency: str,
    gpu_line_pattern: str,
    assignments: Mapping[str, str],
    gpu_names: Iterable[str],
) -> pd.DataFrame:
    """Read a FOCUS bill into one row per line (index: the line's row), see OUTPUT_COLUMNS."""
    table = load_table(source, name)
    _require_columns(table, ("ChargePeriodStart", "BilledCost"))
    matcher = gpu_matcher(gpu_line_pattern, gpu_names)
    month, problems = table.months(table.find("ChargePeriodStart"))
    if table.find("BillingPeriodStart") is not None:
        # The invoice month wins where the bill gives it: BilledCost ties to the invoice.
        invoice_month, _ = table.months(table.find("BillingPeriodStart"))
        month = invoice_month.where(invoice_month.notna(), month)
    cost_column = table.find("BilledCost")
    cost, cost_problems = table.numbers(cost_column)
    quantity, quantity_problems = table.numbers(table.find("ConsumedQuantity"))
    tag_task, tag_problems = _tag_task_ids(table)
    problems += (
        cost_problems + quantity_problems + tag_problems
        + table.row_problems(table.text(cost_column).isna(), cost_column, Code.REQUIRED, _empty)
        + _currency_problems(table, plan_currency)
    )
    if problems:
        raise InputError(problems)
    resource_id = table.strings(table.find("ResourceId"))
    task_id = tag_task.where(tag_task != "", resource_id.map(dict(assignments)).astype("str").fillna(""))
    is_gpu = (task_id != "") | _names_gpu(table, matcher)
    return pd.DataFrame({
        "month": month,
        "billed_cost": cost,
        "resource_id": resource_id,
        "resource_name": table.strings(table.find("ResourceName")),
        "service_name": table.strings(table.find("ServiceName")),
        "charge_category": _charge_categories(table.strings(table.find("ChargeCategory"))),
        "consumed_quantity": quantity,
        "consumed_unit": table.strings(table.find("ConsumedUnit")),
        "task_id": task_id.astype("str"),
        "is_gpu": is_gpu.astype(bool),
        "category": _categories(table).where(~is_gpu, "gpu"),
    }, index=table.frame.index)


def _require_columns(table: Table, columns: Iterable[str]) -> None:
    """Fail when a required FOCUS column is absent."""
    problems = [
        Problem(Code.MISSING_COLUMN, table.name, "", f'has no "{c}" column; add it (FOCUS name, any case)')
        for c in columns if table.find(c) is None
    ]
    if problems:
        raise InputError(problems)


def gpu_matcher(pattern: str, gpu_names: Iterable[str]) -> re.Pattern[str]:
    """One case-insensitive regex for the GPU line pattern and the catalog's GPU names."""
    alternatives = [f"(?:{pattern})"] if pattern else []
    alternatives += [_gpu_name_regex(n) for n in gpu_names if n.strip()]
    try:
        return re.compile("|".join(alternatives) or r"(?!)", re.IGNORECASE)
    except re.error as exc:
        raise InputError([Problem(
            Code.WRONG_FORMAT, "Settings", "", f'gpu_line_pattern: "{pattern}" is not a regular expression ({exc}); fix it',
        )]) from exc


def _gpu_name_regex(gpu_name: str) -> str:
    """A catalog name as a whole word, its memory size optional (`A100 80G` matches `A100`, `A100-80GB`)."""
    *words, last = gpu_name.split()
    if words and re.fullmatch(r"\d+G", last, re.IGNORECASE):
        body = r"[\s_-]*".join(map(re.escape, words)) + rf"(?:[\s_-]*{re.escape(last)}B?)?"
    else:
        body = r"[\s_-]*".join(map(re.escape, [*words, last]))
    return rf"(?<![a-z0-9])(?:{body})(?![a-z0-9])"


def _names_gpu(table: Table, matcher: re.Pattern[str]) -> pd.Series:
    """Whether a line's description, SKU, type, service, name or x_ columns name a GPU."""
    extras = [c for c in table.frame.columns if str(c).lower().startswith("x_")]
    columns = [table.find(c) for c in GPU_TEXT_COLUMNS] + extras
    text = pd.Series("", index=table.frame.index, dtype="str")
    for column in columns:
        if column is not None:
            text = text + " | " + table.strings(column)
    return pd.Series(map_unique(text, lambda t: bool(matcher.search(t))).astype(bool), index=text.index)


def _tag_task_ids(table: Table) -> tuple[pd.Series, list[Problem]]:
    """The `task_id` in each line's Tags JSON ("" when none), parsing only tags that mention it."""
    column = table.find("Tags")
    tags = table.strings(column)
    mentions = tags.str.lower().str.contains("task", regex=False)
    task = pd.Series(map_unique(tags[mentions], _task_of_tags), index=tags[mentions].index, dtype=object)
    bad = task.isna().reindex(tags.index, fill_value=False)
    problems = table.row_problems(bad, column, Code.WRONG_FORMAT, _bad_tags) if column else []
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


def _bad_tags(value: object) -> str:
    """The message for Tags that are not a JSON object."""
    return f'"{value}" is not a JSON object; write tags as {{"task_id": "T01"}}'


def _currency_problems(table: Table, plan_currency: str) -> list[Problem]:
    """One problem per billing currency that is not the plan's, at its first line (never converted)."""
    column = table.find("BillingCurrency")
    currency = table.text(column).str.upper()
    other = currency.notna() & (currency != plan_currency.strip().upper())
    problems = []
    for code, rows in currency[other].groupby(currency[other], sort=True).groups.items():
        problems.append(Problem(
            Code.CURRENCY, table.name, table.cell(column, rows.min()),
            f'BillingCurrency: "{code}" on {len(rows)} lines but the plan is in {plan_currency}; budgetgen '
            f"never converts: export the bill in {plan_currency} or set the plan currency to {code}",
        ))
    return problems


def _charge_categories(values: pd.Series) -> pd.Series:
    """FOCUS ChargeCategory spelled canonically whatever its case (`usage` → `Usage`)."""
    canonical = {c.lower(): c for c in CHARGE_CATEGORIES}
    return values.str.lower().map(canonical).fillna(values).astype("str")


def _categories(table: Table) -> pd.Series:
    """storage, network or other, from ServiceCategory, then ServiceName and ChargeDescription."""
    service_category = table.strings(table.find("ServiceCategory")).str.lower()
    service_name = table.strings(table.find("ServiceName"))
    description = table.strings(table.find("ChargeDescription"))
    network_text = (service_name + " " + description).str.contains(_NETWORK_TEXT, case=False, regex=True)
    storage_name = service_name.str.contains("storage", case=False, regex=False)
    choices = np.select(
        [service_category == "storage", service_category == "networking", network_text, storage_name],
        ["storage", "network", "network", "storage"],
        default="other",
    )
    return pd.Series(choices, index=table.frame.index, dtype="str")
