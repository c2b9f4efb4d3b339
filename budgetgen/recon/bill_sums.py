"""FOCUS bills of any size read and summed by DuckDB (embedded, out of core): only the sums come back to Python.

A bill source is a file (CSV, Parquet, xlsx), a folder or a glob of them (a provider's export of Parquet
parts), or the input workbook's `Bills` sheet. Parquet and CSV are scanned by DuckDB; xlsx workbooks (every
sheet) and the Bills sheet go through openpyxl's safe path and are handed to DuckDB as registered frames.

The rules of a line, all in SQL over every line: its invoice month (BillingPeriodStart, else
ChargePeriodStart, in `billing_timezone`, timestamps with offsets converted), GPU or not (the line's own
texts against `gpu_line_pattern` in RE2 and its ServiceCategory; never its tag), its task (the Tags'
task_id, else the Assignments sheet), its non-GPU category. A line found again in a later source (same
ResourceId, ChargePeriodStart, ChargePeriodEnd, SkuId or ChargeDescription, BilledCost) is counted once.
Bad values are found by SQL and reported by file and row, the first MAX_ROW_PROBLEMS of each kind.
"""

from __future__ import annotations

import glob
import hashlib
import json
import math
import re
import tempfile
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
from openpyxl.utils import get_column_letter

from ..catalog.fx import Rate
from ..core.errors import Code, InputError, Problem
from ..core.i18n import Message
from ..core.values import LARGEST, SPREADSHEET_ERRORS
from ..io.safefile import EXCEL_MAX_ROWS, iter_rows, load_input_workbook, read_input_file, unsaved_formulas
from .columns import BILL_INPUT_COLUMNS, PRICING_CATEGORIES, duplicate_headers, match_headers
from .table import MAX_ROW_PROBLEMS, csv_header, listed_problems, parquet_headers, sheet_frame, shown

SUM_KEYS = ("month", "resource_id", "task_id", "is_gpu", "category", "service_name", "hours_unit", "commitment",
            "commitment_id", "commitment_type", "pricing_category")
"""The keys of the sums (pipeline.LINE_GROUP_KEYS)."""
_SUM_TEXTS = dict.fromkeys(("month", "resource_id", "task_id", "service_name", "commitment", "commitment_id",
                            "commitment_type", "pricing_category"), "str")
GPU_TEXT_COLUMNS = ("ChargeDescription", "SkuId", "ResourceType", "ServiceName", "ResourceName")
NETWORK_TEXT = r"egress|data transfer|bandwidth"
IMAGES_TEXT = r"container registry|artifact registry|\becr\b|\bacr\b|image storage"
PLATFORM_TEXT = r"kubernetes|\beks\b|\bgke\b|\baks\b|cloudwatch|monitor|logging|sagemaker studio|vertex ai pipelines"
"""How a non-GPU line's category is told (with its ServiceCategory: Storage, Networking): egress, container images
and platform services by the words of its ServiceName (and ChargeDescription); the categories are the Extras'
(schema.EXTRA_CATEGORIES). A Credit line is a credit and an Adjustment line a refund, whatever it bills."""
DEFAULT_MEMORY_LIMIT = "1GB"
MACHINE_MEMORY_SHARE = 4   # recon_memory_limit left blank: 1 GB, or a quarter of the machine's memory where less
THREADS = 2
PROGRESS_SECONDS = 5.0
_SUFFIXES = (".parquet", ".csv", ".xlsx")
DAYS_BEFORE = 32
"""Coverage counts the days from 32 days before an invoice month to 95 days into it (a line beyond counts at
the edge); first and last charge day are exact."""
_LINE_FOCUS = ("effective_cost", "commitment", "commitment_id", "commitment_type", "pricing_category")
_GLOB = re.compile(r"[*?\[]")
_NUMERIC = re.compile(r"^(?:DOUBLE|FLOAT|REAL|DECIMAL.*|(?:U?(?:TINY|SMALL|BIG|HUGE)?INT(?:EGER)?))$")


@dataclass(frozen=True)
class BillSums:
    """The bills summed for reconciliation: what `reconcile` and the workbook need, never a line.

    sums: one row per month × resource_id × task_id × is_gpu × category × service_name × hours_unit
        (SUM_KEYS, sorted by them), with `billed` (Σ BilledCost, Kahan-summed), `quantity` (Σ ConsumedQuantity,
        NaN when the group has none), `lines` (count), `first_charge` and `last_charge` (earliest and latest
        ChargePeriodStart, tz-aware timestamps in the billing time zone). Duplicates are left out. month is
        `YYYY-MM`; resource_id, task_id and service_name are "" when absent; a tagged storage or egress
        line keeps its task_id with is_gpu False and its category (one of the Extras' categories: storage,
        egress, images, platform, other); a Credit line has category "credit" and an Adjustment line "refund"
        (never GPU); GPU lines have category "gpu".
    billed: {month: Σ BilledCost of the de-duplicated lines}, what Checks ties to (= Σ sums.billed).
    coverage: {month: (first charge day, last charge day, number of distinct days with lines)} as
        datetime.date, date, int; the days are those of ChargePeriodStart in the billing time zone, so a month
        whose last day is before its end (or with days missing) is partial.
    duplicates: {month: (lines counted once and left out, their Σ BilledCost)}, only months with some.
    warnings: Messages for the duplicates (one per month), for the terminal, the workbook and the JSON.
    """

    sums: pd.DataFrame
    billed: Mapping[str, float]
    coverage: Mapping[str, tuple]
    duplicates: Mapping[str, tuple[int, float]]
    warnings: tuple[Message, ...] = ()
    daily: pd.DataFrame | None = None
    """daily: the GPU lines (commitment lines apart) summed per month × task_id × charge day (in the billing
    time zone): columns month, task_id ("" untagged), day (datetime.date), billed; from the same grouping."""
    currencies: Mapping[str, tuple[tuple[str, float, Rate], ...]] = field(default_factory=dict)
    """currencies: {month: ((currency, its lines' BilledCost in it, the Rate that converted them), ...)} for the
    lines billed in another currency than the plan's; every amount above is in the plan currency."""


@dataclass(frozen=True)
class BillSource:
    """One bill as given: a path (file, folder or glob) or the Bills sheet's frame, and its name in messages."""

    source: str | Path | pd.DataFrame
    name: str


@dataclass(frozen=True)
class _Part:
    """A relation DuckDB reads: one Parquet set, one CSV file or one registered frame (an xlsx sheet)."""

    name: str  # the name in messages
    relation: str  # SQL FROM item
    a1: bool  # places are cells (B7), else rows
    columns: tuple[str, ...]  # its headers, in order
    types: Mapping[str, str]
    row: str | None  # SQL of the row number the user sees; None: numbered by scan order (CSV)
    file: str | None = None  # SQL of the file name, when the part is several files
    headers: tuple[str, ...] | None = None  # the headers as the file writes them (twice, if so); None: columns


@dataclass
class _Options:
    currency: str
    pattern: str
    assignments: Mapping[str, str]
    timezone: str
    progress: Callable[[str], None]
    frames: dict = field(default_factory=dict)
    problems: list = field(default_factory=list)  # found while the sources are opened, raised with the headers'
    rate_of: Callable[[str, str], Rate | None] | None = None  # (currency, month) -> the rate into the plan's
    rates: dict = field(default_factory=dict)  # {(currency, month): Rate} of the bill's other currencies
    missing: dict = field(default_factory=dict)  # {currency: [months]} that no rate converts


def sum_bills(
    sources: Iterable[BillSource],
    plan_currency: str,
    gpu_line_pattern: str,
    assignments: Mapping[str, str],
    gpu_names: Iterable[str],
    *,
    billing_timezone: str = "UTC",
    memory_limit: str = DEFAULT_MEMORY_LIMIT,
    temp_parent: Path | None = None,
    progress: Callable[[str], None] | None = None,
    rate_of: Callable[[str, str], Rate | None] | None = None,
) -> BillSums:
    """Every source read and summed by DuckDB (see BillSums); InputError with every problem found by SQL.

    memory_limit bounds DuckDB (it spills to a private folder under temp_parent, removed at the end);
    progress is told how far a long read has gone; rate_of gives the rate (plan currency per 1 unit) that
    converts a month's lines in another currency (fx.bill_rate), None where there is none (an error naming the
    file, row and currency); without it, a line in another currency is such an error.
    """
    sources = list(sources)
    _refuse_same_files(sources)
    pattern = gpu_regex(gpu_line_pattern, gpu_names)
    with _connection(memory_limit, temp_parent, billing_timezone) as con:
        options = _Options(plan_currency, pattern, dict(assignments), billing_timezone, progress or _quiet,
                           rate_of=rate_of)
        parts = [(i, part) for i, s in enumerate(sources) for part in _parts(con, s, options)]
        _check_pattern(con, pattern, gpu_line_pattern)
        _check_headers(parts, options.problems)
        lines = " UNION ALL ".join(_line_select(p, i, with_rows=False) for i, p in parts)
        keyed = _deduplicated(lines) if len(sources) > 1 else f"SELECT *, false AS dup FROM ({lines})"
        # (a constant false dup folds away: one source costs no de-duplication)
        with _reporting(con, options.progress, f"reading {len(sources)} bill source(s)"):
            effective = any("EffectiveCost" in match_headers(p.columns, BILL_INPUT_COLUMNS) for _, p in parts)
            local = _local_lines(keyed, billing_timezone)
            one_source = _KEYED.format(lines=local)   # (one source's lines keyed, read by both its groupings)
            measures = _measures(len(sources) > 1).format(effective=_EFFECTIVE[effective, len(sources) > 1])
            if len(sources) > 1:
                con.execute(_sql(f"CREATE TEMP TABLE all_groups AS {_GROUPS.format(lines=local, measures=measures)}",
                                 options))
            else:
                create_all_groups(con, one_source, measures, _constant_texts(p for _, p in parts))
            con.execute("CREATE TEMP VIEW groups AS SELECT * EXCLUDE (daily) FROM all_groups WHERE NOT daily")
        _raise_problems(con, parts, options)
        notes = _part_warnings(con, [p for _, p in parts], plan_currency)
        currencies = _convert(con, options, "all_groups", daily=True)
        _classify(con, options)
        if len(sources) == 1:
            with _reporting(con, options.progress, "reading the bill's GPU lines by day"):
                add_day_sums(con, one_source, _DAY_SUMS, options)
        sums = con.execute(_SUMS).df()
        daily = _daily(con)
        coverage = con.execute(_COVERAGE).fetchall()
        dups = con.execute("SELECT month, sum(dup_lines)::BIGINT, fsum(dup_billed) FROM groups "
                           "WHERE dup_lines > 0 GROUP BY month ORDER BY month").fetchall()
    sums = sums.astype(_SUM_TEXTS)
    billed = {m: math.fsum(g.to_numpy()) for m, g in sums.groupby("month", sort=True)["billed"]}
    duplicates = {m: (int(n), float(amount)) for m, n, amount in dups}
    warnings = (*notes, *(Message("duplicate_lines", month=m, lines=n, amount=a) for m, (n, a) in duplicates.items()))
    return BillSums(sums, billed, {m: (first, last, days.bit_count()) for m, first, last, days in coverage},
                    duplicates, warnings, daily, currencies)


def _bill_rates(con: duckdb.DuckDBPyConnection, options: _Options, table: str) -> None:
    """The rate of each month and currency of `table` other than the plan's (options.rates), and the currencies
    and months that no rate converts (options.missing)."""
    pairs = con.execute(_sql(f"SELECT DISTINCT upper(txt(currency)), CAST(month AS VARCHAR) FROM {table} "
                             f"WHERE {_CURRENCY_OTHER} ORDER BY 1, 2", options)).fetchall()
    options.rates.clear()
    options.missing.clear()
    for code, month in pairs:
        rate = options.rate_of(code, month) if options.rate_of is not None and month is not None else None
        if rate is None:
            options.missing.setdefault(code, []).append(month or "")
        else:
            options.rates[(code, month)] = rate


def _convert(con: duckdb.DuckDBPyConnection, options: _Options, table: str, daily: bool = False
             ) -> dict[str, tuple[tuple[str, float, Rate], ...]]:
    """Every amount of `table`'s groups in another currency than the plan's converted at its month's rate
    (options.rates); each month's other currencies with their BilledCost before conversion and the rate.
    `daily`: the table also holds the charge days' rows, whose lines' currency their line_key decides."""
    if not options.rates:
        return {}
    rows = ", ".join(f"({_literal(c)}, {_literal(m)}, {r.rate!r}::DOUBLE)" for (c, m), r in options.rates.items())
    con.execute(f"CREATE OR REPLACE TEMP TABLE fx_rates AS SELECT * FROM (VALUES {rows}) t(currency, month, rate)")
    join = _RATE_JOIN
    groups = " AND NOT g.daily" if daily else ""
    totals = con.execute(f"SELECT r.month, r.currency, fsum(g.billed) FROM {table} g JOIN fx_rates r ON {join} "
                         f"WHERE g.lines > 0{groups} GROUP BY ALL ORDER BY 1, 2").fetchall()
    if daily:
        _convert_days(con, table)
    con.execute(f"UPDATE {table} AS g SET billed = g.billed * r.rate, dup_billed = g.dup_billed * r.rate, "
                f"effective = g.effective * r.rate FROM fx_rates r WHERE {join}{groups}")
    out: dict[str, list] = {}
    for month, code, billed in totals:
        out.setdefault(month, []).append((code, float(billed), options.rates[(code, month)]))
    return {m: tuple(v) for m, v in out.items()}


_RATE_JOIN = "upper(txt(g.currency)) = r.currency AND CAST(g.month AS VARCHAR) = r.month"


def _convert_days(con: duckdb.DuckDBPyConnection, table: str) -> None:
    """The charge days' rows of `table` converted at the rates of fx_rates (_convert), by their lines' key (each key
    is one currency: it is one of the key's texts) and the groups' currency."""
    con.execute(f"UPDATE {table} AS d SET billed = d.billed * k.rate, dup_billed = d.dup_billed * k.rate, "
                f"effective = d.effective * k.rate FROM (SELECT DISTINCT g.month, g.line_key, r.rate "
                f"FROM {table} g JOIN fx_rates r ON {_RATE_JOIN} WHERE NOT g.daily) k "
                f"WHERE d.daily AND d.month = k.month AND d.line_key = k.line_key")


def add_day_sums(con: duckdb.DuckDBPyConnection, keyed: str, day_sums: str, options: _Options) -> None:
    """all_groups' charge days' rows, after the groups are classified (view `final`): day_sums over `keyed` (SQL of
    the lines with month, day and line_key), of the lines whose line_key is a GPU group's (table gpu_keys; the
    daily view reads no other) in a second scan that sums BilledCost alone, converted as their groups were.

    Apart from the month's grouping because in a grouping set every grouping computes every measure (6 million
    resource-days of a dozen measures spilled); after the classification because only then is a GPU group known,
    so no line's day needs a test of its texts (storage, networking) and no storage or networking day is grouped."""
    con.execute("CREATE TEMP TABLE gpu_keys AS SELECT DISTINCT line_key FROM final "
                "WHERE lines > 0 AND is_gpu AND commitment = ''")
    con.execute(f"INSERT INTO all_groups BY NAME WITH keyed AS NOT MATERIALIZED ({keyed}) {day_sums}")
    con.execute("DROP TABLE gpu_keys")
    if options.rates:
        _convert_days(con, "all_groups")


def _daily(con: duckdb.DuckDBPyConnection, query: str | None = None) -> pd.DataFrame:
    """BillSums.daily from the classified groups (table `final`) and the day sums (query: _DAILY by default)."""
    rows = con.execute(query or _DAILY).fetchall()
    return pd.DataFrame({"month": pd.Series([r[0] for r in rows], dtype=object),
                         "task_id": pd.Series([r[1] for r in rows], dtype=object),
                         "day": pd.Series([r[2] for r in rows], dtype=object),
                         "billed": pd.Series([r[3] for r in rows], dtype="float64")})


def read_bill_lines(
    source: str | Path | pd.DataFrame,
    name: str,
    plan_currency: str,
    gpu_line_pattern: str,
    assignments: Mapping[str, str],
    gpu_names: Iterable[str],
    billing_timezone: str = "UTC",
) -> pd.DataFrame:
    """One source's lines, each with the same rules as sum_bills (for a small bill: it comes to Python whole).

    Index: the line's row; columns: month, billed_cost, resource_id, resource_name, service_name,
    charge_category, consumed_quantity, consumed_unit, task_id, is_gpu, category, charge_start, effective_cost
    (NaN when the line has none), commitment ("unused", "purchase" or ""), commitment_id, commitment_type and
    pricing_category (FOCUS spelling, "" when none).
    """
    pattern = gpu_regex(gpu_line_pattern, gpu_names)
    with _connection(DEFAULT_MEMORY_LIMIT, None, billing_timezone) as con:
        options = _Options(plan_currency, pattern, dict(assignments), billing_timezone, _quiet)
        parts = [(0, p) for p in _parts(con, BillSource(source, name), options)]
        _check_pattern(con, pattern, gpu_line_pattern)
        _check_headers(parts, options.problems)
        lines = " UNION ALL ".join(_line_select(p, i, with_rows=True) for i, p in parts)
        lines = _LINES.format(lines=_local_lines(lines, billing_timezone))
        con.execute(_sql(f"CREATE TEMP TABLE groups AS {lines}", options))
        _raise_problems(con, parts, options)
        _classify(con, options)
        frame = con.execute(_LINE_OUTPUT).df()
    frame = frame.set_index(pd.Index(frame.pop("row").astype("int64"), name="row"))
    return frame.astype({c: "str" for c in frame.columns if frame[c].dtype == object})


def sum_lines(lines: pd.DataFrame) -> pd.DataFrame:
    """read_bill_lines' frames (possibly concatenated) summed like sum_bills' `sums` (no de-duplication); a frame
    without the FOCUS commitment columns (_LINE_FOCUS) counts as ordinary lines without EffectiveCost."""
    from .pipeline import is_hours_unit  # the hours rule lives with the reconciliation that reads it

    units = {u: is_hours_unit(u) for u in lines["consumed_unit"].unique()}
    lines = lines.reset_index(drop=True).assign(hours_unit=lines["consumed_unit"].map(units).astype(bool).to_numpy())
    lines = lines.reindex(columns=[*lines.columns, *(c for c in _LINE_FOCUS if c not in lines.columns)])
    lines = lines.fillna({c: "" for c in _LINE_FOCUS if c != "effective_cost"}).astype(
        {"effective_cost": "float64", **{c: "str" for c in _LINE_FOCUS if c != "effective_cost"}})
    with _connection(DEFAULT_MEMORY_LIMIT, None, "UTC") as con:
        con.register("line_frame", lines)
        con.execute(_LINE_FRAME)
        sums = con.execute(_SUMS).df()
    return sums.astype(_SUM_TEXTS)


# ---------------------------------------------------------------- the GPU line pattern


def gpu_regex(pattern: str, gpu_names: Iterable[str]) -> str:
    """One RE2 expression for the GPU line pattern and the catalog's GPU names (matched case-insensitively)."""
    alternatives = [f"(?:{pattern})"] if pattern else []
    alternatives += [gpu_name_regex(n) for n in gpu_names if n.strip()]
    return "|".join(alternatives) or r"[^\s\S]"  # a class of no character: matches nothing


def gpu_name_regex(gpu_name: str) -> str:
    """A catalog name as a whole word, its memory size optional (`A100 80G` matches `A100`, `A100-80GB`).

    RE2 has no look-around: the word's edges are matched as a start, an end or a character outside [a-z0-9].
    """
    *words, last = gpu_name.split()
    if words and re.fullmatch(r"\d+G", last, re.IGNORECASE):
        body = r"[\s_-]*".join(map(re.escape, words)) + rf"(?:[\s_-]*{re.escape(last)}B?)?"
    else:
        body = r"[\s_-]*".join(map(re.escape, [*words, last]))
    return rf"(?:^|[^a-z0-9])(?:{body})(?:[^a-z0-9]|$)"


def _check_pattern(con: duckdb.DuckDBPyConnection, regex: str, pattern: str) -> None:
    """Refuse a pattern RE2 cannot compile (look-around, back-references): a clear error, not a slow build."""
    try:
        con.execute(f"SELECT regexp_matches('', {_literal(regex)}, 'i')").fetchall()
    except duckdb.Error as exc:
        reason = str(exc).split("\n")[0].split(": ", 1)[-1]
        raise InputError([Problem(Code.WRONG_FORMAT, "Settings", "", Message(
            "bad_gpu_pattern", pattern=pattern, reason=f"RE2: {reason}"))]) from None


# ---------------------------------------------------------------- sources


def expand_bill_path(path: str | Path, name: str) -> list[Path]:
    """The bill files a path names: itself, the CSV, Parquet and xlsx files under a folder, or a glob's."""
    text = str(path)
    if Path(text).is_dir():
        found = sorted(p for p in Path(text).rglob("*") if p.suffix.lower() in _SUFFIXES and p.is_file())
    elif _GLOB.search(text) and not Path(text).exists():
        found = sorted(Path(p) for p in glob.glob(text, recursive=True) if Path(p).is_file())
    else:
        return [Path(text)]
    if not found:
        raise InputError([Problem(Code.NOT_A_FILE, name, "", Message("no_bill_files", path=text))])
    return found


def _refuse_same_files(sources: list[BillSource]) -> None:
    """The same file given twice, by path or by content (a copy under another name), is refused.

    Only files of equal size can have equal content: those alone are hashed (SHA-256)."""
    files = [path for s in sources if not isinstance(s.source, pd.DataFrame)
             for path in expand_bill_path(s.source, s.name) if path.is_file()]
    sizes = Counter(path.stat().st_size for path in files)
    seen: dict[object, str] = {}
    problems = []
    for path in files:
        keys: list[object] = [path.resolve()]
        if sizes[path.stat().st_size] > 1:
            keys.append((path.stat().st_size, _digest(path)))
        first = next((seen[k] for k in keys if k in seen), None)
        if first is not None:
            problems.append(Problem(Code.DUPLICATE_FILE, path.name, "", Message(
                "same_bill_twice", file=str(path), first=first)))
        seen.update(dict.fromkeys(keys, str(path)))
    if problems:
        raise InputError(problems)


def _digest(path: Path) -> str:
    """SHA-256 of a file's content."""
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _parts(con: duckdb.DuckDBPyConnection, source: BillSource, options: _Options) -> list[_Part]:
    """The relations of one source: its Parquet files as one, each CSV file, each xlsx sheet, or the frame."""
    if isinstance(source.source, pd.DataFrame):
        return [_frame_part(con, source.source, source.name, options)]
    paths = expand_bill_path(source.source, source.name)
    several = len(paths) > 1
    problems, parts = [], []
    for path in paths:
        name = path.name
        if not path.is_file():
            problems.append(Problem(Code.NOT_A_FILE, name, "", Message("not_a_file", path=str(path))))
        elif path.suffix.lower() not in _SUFFIXES:
            problems.append(Problem(Code.WRONG_FORMAT, name, "", Message("not_a_table_file", file=name)))
    if problems:
        raise InputError(problems)
    parquet = [p for p in paths if p.suffix.lower() == ".parquet"]
    try:
        if parquet:
            files = "[" + ", ".join(_literal(str(p)) for p in parquet) + "]"
            relation = (f"read_parquet({files}, union_by_name=true, filename={_literal(_FILE_COLUMN)}, "
                        "file_row_number=true)")
            parts.append(_described(con, relation, parquet[0].name if len(parquet) == 1 else source.name,
                                    row="file_row_number + 1", file=_ident(_FILE_COLUMN) if several else None,
                                    headers=parquet_headers(parquet)))
        for path in (p for p in paths if p.suffix.lower() == ".csv"):
            headers, delimiter = csv_header(path)
            # The header is read here, so DuckDB's sniffer never guesses: a row with more or fewer fields than
            # the header is an error at its line, and a quoted field may hold newlines.
            columns = "{" + ", ".join(f"{_literal(c)}: 'VARCHAR'" for c in _unique(headers)) + "}"
            relation = (f"read_csv({_literal(str(path))}, columns={columns}, header=true, auto_detect=false, "
                        f"delim={_literal(delimiter)}, quote='\"', escape='\"', strict_mode=true)")
            parts.append(_described(con, relation, path.name, row=None, headers=headers))
        for path in (p for p in paths if p.suffix.lower() == ".xlsx"):
            parts += [_frame_part(con, frame, name, options) for frame, name in _xlsx_sheets(path, options)]
    except duckdb.Error as exc:
        raise InputError([_duckdb_problem(exc, source.name)]) from None
    return parts


_FILE_COLUMN = "budgetgen_file"
"""The column DuckDB adds with each line's file (a bill may have a `filename` column of its own)."""


def _unique(headers: Iterable[str]) -> list[str]:
    """Headers made distinct for DuckDB (a header written twice is refused by _check_headers, by its own name)."""
    seen: Counter = Counter()
    out = []
    for h in headers:
        seen[h] += 1
        out.append(h if seen[h] == 1 else f"{h} ({seen[h]})")
    return out


def _duckdb_problem(exc: duckdb.Error, name: str) -> Problem:
    """A DuckDB error reading a bill as one problem: a CSV row with the wrong number of fields at its row, else
    the error's first line."""
    text = str(exc)
    line = re.search(r"CSV Error on Line: (\d+)", text)
    counts = re.search(r"Expected Number of Columns: (\d+) Found: (\d+)", text)
    file = re.search(r"^\s*file = (.+)$", text, re.MULTILINE)
    if line and counts:
        return Problem(Code.WRONG_FORMAT, Path(file.group(1).strip()).name if file else name, f"row {line.group(1)}",
                       Message("csv_bad_row", expected=int(counts.group(1)), found=int(counts.group(2))))
    if isinstance(exc, duckdb.OutOfMemoryException):
        return Problem(Code.UNREADABLE, "Settings", "", Message("bills_out_of_memory", reason=text.split("\n")[0]))
    return Problem(Code.UNREADABLE, name, "", Message("unreadable_file", reason=text.split("\n")[0]))


def _described(con: duckdb.DuckDBPyConnection, relation: str, name: str, row: str | None,
               file: str | None = None, headers: tuple[str, ...] | None = None) -> _Part:
    described = con.execute(f"DESCRIBE SELECT * FROM {relation}").fetchall()
    hidden = {_FILE_COLUMN, "file_row_number"}
    columns = tuple(c for c, *_ in described if c not in hidden)
    types = {c: t for c, t, *_ in described}
    return _Part(name, relation, False, columns, types, row, file, headers)


def _frame_part(con: duckdb.DuckDBPyConnection, frame: pd.DataFrame, name: str, options: _Options) -> _Part:
    """A sheet's frame (index: its rows) registered as text columns and a `_row` column; a cell holding a
    spreadsheet error (#N/A, #REF!) is a problem at its cell."""
    table = f"frame_{len(options.frames)}"
    texts = pd.DataFrame({f"c{i}": _texts(frame.iloc[:, i]) for i in range(frame.shape[1])}, index=frame.index)
    texts["_row"] = np.asarray(frame.index, dtype="int64")
    options.frames[table] = texts
    con.register(table, texts)
    headers = tuple(str(c) for c in frame.columns)
    columns = tuple(_unique(headers))
    for i, header in enumerate(headers):
        errors = texts[f"c{i}"].str.strip().str.upper().isin(SPREADSHEET_ERRORS)
        options.problems += [
            Problem(Code.FORMULA, name, f"{get_column_letter(i + 1)}{row}", Message(
                "spreadsheet_error", column=header, raw=value))
            for row, value in texts.loc[errors, f"c{i}"].head(MAX_ROW_PROBLEMS).items()]
    renamed = ", ".join(f'c{i} AS {_ident(c)}' for i, c in enumerate(columns))
    relation = f"(SELECT {renamed}{', ' if columns else ''}_row FROM {table})"
    return _Part(name, relation, True, columns, dict.fromkeys(columns, "VARCHAR"), "_row", headers=headers)


def _texts(column: pd.Series) -> pd.Series:
    """A sheet column as text (a number as Python writes it), missing cells as None."""
    return pd.Series([None if v is None or (isinstance(v, float) and math.isnan(v)) else shown(v)
                      for v in column], index=column.index, dtype=object)


def _xlsx_sheets(path: Path, options: _Options) -> Iterator[tuple[pd.DataFrame, str]]:
    """Every non-empty sheet of an xlsx bill, named `bill.xlsx` when it is the only one, else `bill.xlsx[Sheet]`.

    A hidden sheet and a formula without a saved result are problems (options.problems): a hidden copy of the
    bill would be counted twice, a formula read as blank would lose a currency, a tag or a month."""
    source = read_input_file(path)
    workbook = load_input_workbook(source)
    try:
        sheets = [(ws.title, ws.sheet_state, list(iter_rows(ws, max_rows=EXCEL_MAX_ROWS)))
                  for ws in workbook.worksheets]
    finally:
        workbook.close()
    sheets = [(title, state, rows) for title, state, rows in sheets if rows]

    def name(title: str) -> str:
        return path.name if len(sheets) == 1 else f"{path.name}[{title}]"

    unsaved = unsaved_formulas(source.data, path.name, {title for title, _, _ in sheets})
    for title, cells in unsaved.items():
        options.problems += [Problem(Code.FORMULA_WITHOUT_VALUE, name(title), cell, Message("formula_no_value"))
                             for cell in cells[:MAX_ROW_PROBLEMS]]
    for title, state, rows in sheets:
        if state != "visible":
            options.problems.append(Problem(Code.WRONG_FORMAT, name(title), "", Message("hidden_sheet")))
        else:
            yield sheet_frame(rows), name(title)


def _check_headers(parts: list[tuple[int, _Part]], problems: list[Problem] | None = None) -> None:
    """Each part has the required columns once (a sheet that is no bill is named, not ignored) and columns of a
    type that can hold their values; `problems` found while opening the parts are raised with these."""
    problems = list(problems or ())
    for _, part in parts:
        headers = match_headers(part.columns, BILL_INPUT_COLUMNS)
        problems += [Problem(Code.MISSING_COLUMN, part.name, "", Message("file_missing_column", column=c.name))
                     for c in BILL_INPUT_COLUMNS if c.required and c.name not in headers]
        for twice, found in duplicate_headers(part.headers or part.columns, BILL_INPUT_COLUMNS).items():
            problems.append(Problem(Code.DUPLICATE_COLUMN, part.name, "", Message(
                "file_duplicate_column", column=twice, count=len(found), headers=", ".join(found))))
        for column in BILL_INPUT_COLUMNS:
            header = headers.get(column.name)
            kind = part.types.get(header, "VARCHAR") if header else "VARCHAR"
            wanted = {"number": "numbers", "timestamp": "dates or timestamps"}.get(column.type)
            fits = kind == "VARCHAR" or (column.type == "number" and _NUMERIC.match(kind)) or \
                (column.type == "timestamp" and (kind.startswith("TIMESTAMP") or kind == "DATE"))
            if wanted and not fits:
                problems.append(Problem(Code.WRONG_FORMAT, part.name, "", Message(
                    "column_wrong_type", header=header, kind=kind, what=wanted)))
    if problems:
        raise InputError(problems)


def _part_warnings(con: duckdb.DuckDBPyConnection, parts: list[_Part], currency: str) -> list[Message]:
    """A warning for each part without a line (a header alone, a Parquet schema alone) and each without a
    BillingCurrency column (its amounts are taken to be in the plan's currency)."""
    warnings = []
    for part in parts:
        if "BillingCurrency" not in match_headers(part.columns, BILL_INPUT_COLUMNS):
            warnings.append(Message("bill_without_currency", file=part.name, currency=currency))
        if not _first(con.execute(f"SELECT EXISTS (SELECT 1 FROM {part.relation})").fetchone()):
            warnings.append(Message("bill_without_lines", file=part.name))
    return warnings


def machine_memory_limit() -> str:
    """The memory DuckDB may use when recon_memory_limit is blank: DEFAULT_MEMORY_LIMIT's 1 GB, or a
    MACHINE_MEMORY_SHARE-th of the machine's memory, or half the process's address-space limit (`ulimit -v`) or its
    cgroup's memory limit, where lower; never below MIN_MEMORY_MB. DuckDB spills beyond it: every bill shape of
    docs/speed-and-scale.md (10 million lines of 400,000 resources a month, 30 million of 40,000 with 12 tag keys)
    builds in 1 GB, the whole build within 2 GB; a quarter of a 24 GB machine let DuckDB's grouping hold 3-4 GB
    and made no build faster."""
    import os
    import resource

    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    caps = [resource.getrlimit(resource.RLIMIT_AS)[0], _cgroup_memory_max()]
    cap = min((c for c in caps if c not in (None, resource.RLIM_INFINITY) and c > 0), default=None)
    mib = min(1024, total // MACHINE_MEMORY_SHARE // 2**20)
    if cap is not None:
        mib = min(mib, cap // 2 // 2**20)
    return f"{max(mib, MIN_MEMORY_MB)}MiB"


def _cgroup_memory_max() -> int | None:
    """The memory limit of the process's cgroup (v2's memory.max), or None."""
    try:
        text = Path("/sys/fs/cgroup/memory.max").read_text(encoding="ascii").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _check_memory_limit(limit: str) -> None:
    """Refuse a recon_memory_limit DuckDB could not read a bill in (below MIN_MEMORY_MB), by the setting's name."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(i?)B?\s*", limit or "", re.IGNORECASE)
    if found is None:
        return  # DuckDB's own reading decides, and names the setting (bad_memory_limit)
    number, prefix, binary = found.groups()
    size = float(number) * (1024 if binary else 1000) ** " KMGT".index(prefix.upper() or " ") / 1e6
    if size < MIN_MEMORY_MB:
        raise InputError([Problem(Code.OUT_OF_RANGE, "Settings", "", Message(
            "memory_limit_small", limit=limit, least=f"{MIN_MEMORY_MB}MB"))])


MIN_MEMORY_MB = 64
"""The least recon_memory_limit budgetgen accepts: DuckDB needs some tens of MB to scan and group a bill."""


# ---------------------------------------------------------------- SQL


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


_MACROS = (
    # A text cell: trimmed, with "" and NULL (any case) as missing.
    "CREATE MACRO txt(x) AS CASE WHEN upper(trim(x)) IN ('', 'NULL') THEN NULL ELSE trim(x) END",
    # A date (or month) with separators - / . and one-digit parts, then an optional time: as ISO text.
    """CREATE MACRO ts_parts(p) AS CASE WHEN p.y <> '' THEN try_cast(p.y || '-' || lpad(p.m, 2, '0') || '-'
        || lpad(CASE WHEN p.d = '' THEN '1' ELSE p.d END, 2, '0') || p.rest AS TIMESTAMPTZ) END""",
    # A date or date-time text (2026-07-31T23:00:00Z, 2026/7/31 10:00, 2026-07): its instant. A text without an
    # offset is in the session's TimeZone, the billing time zone.
    # Only a text that starts with a four-digit year is a date (DuckDB also reads 'epoch', 'infinity'); a UTC offset
    # beyond the ±14:00 any zone uses (+99:00) is no instant.
    r"""CREATE MACRO ts(x) AS CASE WHEN regexp_matches(x, '^\d{4}[-/.]')
        AND NOT regexp_matches(x, '[T ][\d:.]+\s*[+-](?:(?:1[5-9]|[2-9]\d)(?::?\d{2})?|\d{2}:?[6-9]\d)$')
        THEN coalesce(try_cast(x AS TIMESTAMPTZ), ts_parts(
        regexp_extract(x, '^(\d{4})[-/.](\d{1,2})(?:[-/.](\d{1,2}))?([T ].*)?$', ['y', 'm', 'd', 'rest']))) END""",
)


def _raw(part: _Part, headers: Mapping[str, str], name: str) -> str:
    """SQL of a declared column as it is written, as text (NULL when absent); txt() normalises it later, once
    per group rather than once per line."""
    header = headers.get(name)
    if header is None:
        return "NULL::VARCHAR"
    column = _ident(header)
    return column if part.types[header] == "VARCHAR" else f"CAST({column} AS VARCHAR)"


def _present(part: _Part, headers: Mapping[str, str], name: str) -> str:
    """SQL: whether a line has a value in the column (not empty, not the text NULL)."""
    header = headers.get(name)
    if header is None:
        return "false"
    column = _ident(header)
    return f"txt({column}) IS NOT NULL" if part.types[header] == "VARCHAR" else f"{column} IS NOT NULL"


def _number(part: _Part, headers: Mapping[str, str], name: str) -> str:
    header = headers.get(name)
    if header is None:
        return "NULL::DOUBLE"
    if _NUMERIC.match(part.types[header]):
        return f"CAST({_ident(header)} AS DOUBLE)"
    return f"try_cast(txt({_ident(header)}) AS DOUBLE)"


def _instant(part: _Part, headers: Mapping[str, str], name: str) -> str:
    header = headers.get(name)
    if header is None:
        return "NULL::TIMESTAMPTZ"
    kind = part.types[header]
    if kind.startswith("TIMESTAMP") or kind == "DATE":
        return f"CAST({_ident(header)} AS TIMESTAMPTZ)"
    return f"ts(txt({_ident(header)}))"


def _line_select(part: _Part, source: int, with_rows: bool) -> str:
    """SQL of one part's lines in the common shape: texts, parsed values, and a flag per problem."""
    headers = match_headers(part.columns, BILL_INPUT_COLUMNS)
    extras = [c for c in part.columns if c.lower().startswith("x_")]
    t = {c.name: _raw(part, headers, c.name) for c in BILL_INPUT_COLUMNS}
    p = {c: _present(part, headers, c) for c in ("BilledCost", "ConsumedQuantity", "ChargePeriodStart",
                                                   "BillingPeriodStart", "EffectiveCost")}
    cost, quantity = _number(part, headers, "BilledCost"), _number(part, headers, "ConsumedQuantity")
    effective = _number(part, headers, "EffectiveCost")
    start, invoice = _instant(part, headers, "ChargePeriodStart"), _instant(part, headers, "BillingPeriodStart")
    extra_text = " || ".join(f"' | ' || coalesce(txt(CAST({_ident(c)} AS VARCHAR)), '')" for c in extras) or "''"
    raw = ""
    if with_rows:
        raw = ", ".join(f"{_ident(headers[c]) if c in headers else 'NULL'} AS {key}_raw" for c, key in _RAW) + \
            f", {part.file or 'NULL::VARCHAR'} AS file, "
    row = (part.row or "row_number() OVER () + 1") if with_rows else "NULL::BIGINT"
    return f"""SELECT {raw}{source} AS source, {row} AS row,
        {t['ResourceId']} AS resource_id, {t['ResourceName']} AS resource_name, {t['ResourceType']} AS resource_type,
        {t['ServiceName']} AS service_name, {t['ServiceCategory']} AS service_category,
        {t['ChargeCategory']} AS charge_category, {t['ChargeDescription']} AS description, {t['SkuId']} AS sku,
        {t['ConsumedUnit']} AS consumed_unit, {t['Tags']} AS tags, {extra_text} AS extra_text,
        {t['BillingCurrency']} AS currency, {t['CommitmentDiscountId']} AS commitment_id,
        {t['CommitmentDiscountStatus']} AS commitment_status, {t['CommitmentDiscountType']} AS commitment_type,
        {t['PricingCategory']} AS pricing_category, {p['BilledCost']} AS cost_present, {cost} AS cost,
        {p['EffectiveCost']} AS effective_present, {effective} AS effective,
        {p['ConsumedQuantity']} AS quantity_present, {quantity} AS quantity,
        {p['ChargePeriodStart']} AS start_present, {start} AS start, {_instant(part, headers, 'ChargePeriodEnd')} AS
        period_end, {p['BillingPeriodStart']} AS invoice_present, {invoice} AS invoice
        FROM {part.relation}"""


def _local_lines(lines: str, timezone: str) -> str:
    """The lines with `local_start` and `local_invoice`: their instants as wall-clock times in the billing time
    zone, converted once per line (in UTC by arithmetic, elsewhere by ICU), so months and days are cheap."""
    if timezone.upper() in ("UTC", "ETC/UTC", "GMT"):
        local = "make_timestamp(epoch_us({0}))"
    else:
        local = "CAST({0} AS TIMESTAMP)"  # the session's TimeZone is the billing time zone
    return (f"SELECT *, {local.format('start')} AS local_start, {local.format('invoice')} AS local_invoice "
            f"FROM ({lines})")


_RAW = (("BilledCost", "cost"), ("ConsumedQuantity", "quantity"), ("ChargePeriodStart", "start"),
        ("BillingPeriodStart", "invoice"), ("Tags", "tags"), ("EffectiveCost", "effective"))


def _deduplicated(lines: str) -> str:
    """Lines with `dup`: the line's key was already in an earlier source (the first source's copies count)."""
    return f"""SELECT *, source > min(source) OVER (PARTITION BY txt(resource_id), start, period_end,
        coalesce(txt(sku), txt(description)), cost) AS dup FROM ({lines})"""


FIRST_DATE, LAST_DATE = "1900-01-02", "9999-12-30"
"""Charge and invoice dates a workbook can show as dates (Excel's run from 1900 to 9999), a day inside either
end whatever the billing time zone."""
_OUTSIDE_DATES = f"({{0}} < TIMESTAMPTZ '{FIRST_DATE} 00:00:00+00' OR {{0}} > TIMESTAMPTZ '{LAST_DATE} 00:00:00+00')"
_CHECKS = {
    # flag name: SQL over a line, true where the line has that problem
    "cost_empty": "NOT cost_present",
    "cost_nan": "cost_present AND cost IS NULL",
    "cost_infinite": "isinf(cost) OR isnan(cost)",
    "cost_large": f"cost > {LARGEST!r} AND isfinite(cost)",
    "cost_small": f"cost < {-LARGEST!r} AND isfinite(cost)",
    "quantity_nan": "quantity_present AND quantity IS NULL",
    "quantity_infinite": "isinf(quantity) OR isnan(quantity)",
    "quantity_large": f"quantity > {LARGEST!r} AND isfinite(quantity)",
    "quantity_small": f"quantity < {-LARGEST!r} AND isfinite(quantity)",
    "effective_nan": "effective_present AND effective IS NULL",
    "effective_infinite": "isinf(effective) OR isnan(effective)",
    "effective_large": f"effective > {LARGEST!r} AND isfinite(effective)",
    "effective_small": f"effective < {-LARGEST!r} AND isfinite(effective)",
    "start_empty": "NOT start_present AND start IS NULL",
    "start_bad": "start_present AND start IS NULL",
    "invoice_bad": "invoice_present AND invoice IS NULL",
    "start_outside": _OUTSIDE_DATES.format("start"),
    "invoice_outside": _OUTSIDE_DATES.format("invoice"),
}
_CURRENCY_OTHER = "upper(txt(currency)) <> $currency"  # $currency: the plan's, see _sql
_CHOICE_FIELDS = {"CommitmentDiscountStatus": "commitment_status", "PricingCategory": "pricing_category"}
_BAD_CHOICES = {
    # declared column: SQL over a line or a group, true where its text is none of the column's choices (any case)
    c.name: f"lower(txt({_CHOICE_FIELDS[c.name]})) NOT IN ({', '.join(_literal(v.lower()) for v in c.choices)})"
    for c in BILL_INPUT_COLUMNS if c.type == "choice"
}
_DAY_BIT = ("1::UHUGEINT << least(greatest(local_start::DATE - date_trunc('month', coalesce(local_invoice, "
            "local_start))::DATE + "
            f"{DAYS_BEFORE}, 0), 127)::UHUGEINT")
"""A line's charge day as one bit of 128, from DAYS_BEFORE days before its invoice month's first day."""
_PROBLEMS = " | ".join(f"((({sql}) IS TRUE)::BIGINT << {i})" for i, sql in enumerate(_CHECKS.values()))


def _measures(dup: bool) -> str:
    """SQL of a group's measures over the lines; with dup (several sources) each measure counts the lines that are
    no copy, and dup_lines and dup_billed the copies; without (one source, no copy) no FILTER and no copy's sums:
    at 400,000 resources a month the copies' two empty states made the grouping spill (10M lines, 2026-12-04)."""
    kept = " FILTER (WHERE NOT dup)" if dup else ""
    copies = ("count(*) FILTER (WHERE dup) AS dup_lines, fsum(cost) FILTER (WHERE dup) AS dup_billed" if dup else
              "0::BIGINT AS dup_lines, NULL::DOUBLE AS dup_billed")  # (fsum over no line is NULL)
    return (f"fsum(cost){kept} AS billed, sum(quantity){kept} AS quantity, count(*){kept} AS lines, "
            f"min(start){kept} AS first_charge, max(start){kept} AS last_charge, {copies}, {{effective}}, "
            f"bit_or({_DAY_BIT}){kept} AS days, bit_or({_PROBLEMS}) AS problems")


_EFFECTIVE = {
    # (whether any part has an EffectiveCost column, whether there are copies): its sums, else nothing to sum
    (True, True): "fsum(effective) FILTER (WHERE NOT dup) AS effective, "
                  "count(*) FILTER (WHERE NOT dup AND effective IS NULL) AS effective_missing",
    (True, False): "fsum(effective) AS effective, count(*) - count(effective) AS effective_missing",
    (False, True): "NULL::DOUBLE AS effective, count(*) FILTER (WHERE NOT dup) AS effective_missing",
    (False, False): "NULL::DOUBLE AS effective, count(*) AS effective_missing",
}
_MONTH = "strftime(coalesce(local_invoice, local_start), '%Y-%m')"
_TEXTS = ("resource_id", "resource_name", "resource_type", "service_name", "service_category", "description", "sku",
          "consumed_unit", "tags", "currency", "charge_category", "commitment_id", "commitment_status",
          "commitment_type", "pricing_category")
_TEXT_KEYS = ", ".join(_TEXTS) + ", extra_text"
_NORMALISED = "SELECT * REPLACE (" + ", ".join(f"txt({k}) AS {k}" for k in _TEXTS) + ") FROM groups"
_DAY = "CAST(local_start AS DATE)"
_KEY_TEXTS = ("resource_id", "tags", "description", "sku", "resource_type", "service_name", "resource_name",
              "service_category", "charge_category", "commitment_status", "commitment_id", "extra_text", "currency")
"""The texts that decide a line's task, GPU class, commitment kind and currency: their hash (`line_key`) ties a
day's sums to the classified group (and to the rate that converts it)."""
_GPU_DAY = (f"CASE WHEN lower(trim(coalesce(service_category, ''))) NOT IN ('storage', 'networking') AND "
            f"lower(trim(coalesce(charge_category, ''))) NOT IN ('credit', 'adjustment') THEN {_DAY} END")
"""A line's charge day where it may be a GPU line (storage, networking, credits and adjustments never are), else
NULL: the others share one day-less row per key in _GROUPS' daily grouping."""
_GROUPS = f"""SELECT month, day, {_TEXT_KEYS}, line_key, NULL::BIGINT AS row, grouping(day) = 0 AS daily,
    {{measures}} FROM (SELECT *, {_MONTH} AS month, {_GPU_DAY} AS day, hash({", ".join(_KEY_TEXTS)}) AS line_key
    FROM ({{lines}})) GROUP BY GROUPING SETS ((month, {_TEXT_KEYS}, line_key), (month, day, line_key))"""
"""One scan, two groupings: the lines by month and texts (the groups every rule reads), and by month, charge day
and line_key (the daily sums, narrow). Used where the lines are de-duplicated (several sources: the window that
finds copies runs once); one source is grouped by create_all_groups."""
_KEYED = f"""SELECT *, {_MONTH} AS month, {_DAY} AS day, hash({", ".join(_KEY_TEXTS)}) AS line_key
    FROM ({{lines}})"""
"""One source's lines with their month, charge day and line_key (the day sums read only GPU groups' lines,
add_day_sums: no line needs _GPU_DAY's test)."""
_DAY_SUMS = ("SELECT month, day, line_key, true AS daily, fsum(cost) AS billed, count(*) AS lines FROM keyed "
             "WHERE day IS NOT NULL AND line_key IN (SELECT line_key FROM gpu_keys) GROUP BY month, day, line_key")
"""The daily sums of keyed lines of GPU groups (add_day_sums): only what the daily view reads (BilledCost and the lines
counted), by month, charge day and line_key; the other columns of all_groups are NULL in these rows."""


def create_all_groups(con: duckdb.DuckDBPyConnection, keyed: str, measures: str, constant: Mapping[str, str], *,
                      keep_texts: bool = False) -> None:
    """Table all_groups of one source: a row per month and texts with `measures` over its lines (the groups every
    rule reads; the charge days' rows follow once the groups are classified, add_day_sums).

    keyed: SQL of the lines (or a warehouse result's rows) with month, day, the texts and line_key, read as `keyed`;
    constant: {text: its SQL value} of the texts no line holds (_constant_texts), left out of every key.
    The texts are grouped by their hash: first the distinct texts (a row per resource and charge kind, not per
    month), then the lines by month and that hash alone, a narrow key, joined to their texts. Grouping by the nine
    texts themselves held every measure in a hash table of nine texts a group and spilled at 1 GB (10M lines of
    400,000 resources a month, 2026-12-04: the grouping 20.5 CPU s; the distinct texts 4.9 and the narrow grouping
    4.9). The hash is checked: where two distinct texts share one (about once in 10^8 bills of a million texts),
    the lines are grouped by the texts themselves. keep_texts: the distinct texts stay as table text_keys (for
    the caller to drop), where the bill holds any text.
    """
    names = (*_TEXTS, "extra_text")
    keys = ", ".join(n for n in names if n not in constant)
    lines = f"WITH keyed AS NOT MATERIALIZED ({keyed})"
    unique = False
    if keys:
        con.execute(f"CREATE TEMP TABLE text_keys AS {lines} SELECT *, {text_hash(keys)} AS text_key "
                    f"FROM (SELECT DISTINCT {keys}, line_key FROM keyed)")
        unique = _first(con.execute("SELECT count(*) = count(DISTINCT text_key) FROM text_keys").fetchone())
    if unique:
        texts = ", ".join(f"{constant[n]} AS {n}" if n in constant else f"t.{n}" for n in names)
        con.execute(f"""CREATE TEMP TABLE all_groups AS {lines}, narrow AS (SELECT month, {text_hash(keys)} AS
            text_key, {measures} FROM keyed GROUP BY month, text_key)
            SELECT n.month, NULL::DATE AS day, {texts}, t.line_key, NULL::BIGINT AS row, false AS daily,
            n.* EXCLUDE (month, text_key) FROM narrow n JOIN text_keys t USING (text_key)""")
    else:
        grouping = grouping_texts(constant)
        con.execute(f"""CREATE TEMP TABLE all_groups AS {lines} SELECT month, NULL::DATE AS day, {grouping["texts"]},
            line_key, NULL::BIGINT AS row, false AS daily, {measures}
            FROM keyed GROUP BY month, {grouping["keys"]}line_key""")
    if not keep_texts:
        con.execute("DROP TABLE IF EXISTS text_keys")


def text_hash(keys: str) -> str:
    """SQL of the hash that stands for the texts `keys` in create_all_groups' grouping."""
    return f"hash({keys})"


_TEXT_HEADERS = {"resource_id": "ResourceId", "resource_name": "ResourceName", "resource_type": "ResourceType",
                 "service_name": "ServiceName", "service_category": "ServiceCategory", "description": "ChargeDescription",
                 "sku": "SkuId", "consumed_unit": "ConsumedUnit", "tags": "Tags", "currency": "BillingCurrency",
                 "charge_category": "ChargeCategory", "commitment_id": "CommitmentDiscountId",
                 "commitment_status": "CommitmentDiscountStatus", "commitment_type": "CommitmentDiscountType",
                 "pricing_category": "PricingCategory"}
"""_TEXTS: the declared column each is read from (_line_select)."""


def _constant_texts(parts: Iterable[_Part]) -> dict[str, str]:
    """{text: its SQL value} of the texts no part holds (its column absent from every part: NULL; extra_text
    without an x_ column: ''). They are left out of the grouping's key (a constant splits no group) and written
    back as constants: at 400,000 resources a month each text in the key costs the hash table tens of MB and the
    grouping spilled (10M lines with 7 of the 16 texts absent, 2026-12-04)."""
    held = [set(match_headers(p.columns, BILL_INPUT_COLUMNS)) for p in parts]
    constant = {name: "NULL::VARCHAR" for name, header in _TEXT_HEADERS.items() if all(header not in h for h in held)}
    if not any(c.lower().startswith("x_") for p in parts for c in p.columns):
        constant["extra_text"] = "''"
    return constant


def grouping_texts(constant: Mapping[str, str]) -> dict[str, str]:
    """A grouping's {texts} (each text, or its constant's SQL value written back) and {keys} (the texts that are not
    constant, each followed by ', '), over _TEXTS and extra_text."""
    names = (*_TEXTS, "extra_text")
    return {"texts": ", ".join(f"{constant[n]} AS {n}" if n in constant else n for n in names),
            "keys": "".join(f"{n}, " for n in names if n not in constant)}


_LINES = f"""SELECT {_MONTH} AS month, {_DAY} AS day, {_TEXT_KEYS}, row, cost AS billed, quantity, 1 AS lines,
    start AS first_charge, start AS last_charge, 0 AS dup_lines, 0.0 AS dup_billed, effective,
    (effective IS NULL)::BIGINT AS effective_missing, 0::UHUGEINT AS days,
    {_PROBLEMS} AS problems
    FROM ({{lines}})"""
_COVERAGE = """SELECT month, min(first_charge)::DATE, max(last_charge)::DATE, bit_or(days) FROM groups
    WHERE lines > 0 GROUP BY 1 ORDER BY 1"""
_CLASSIFIED_DROPS = ("day", "description", "sku", "resource_type", "tags", "service_category", "extra_text",
                     "commitment_status", "days", "problems", "dup_lines", "dup_billed")
"""The groups' columns the classification reads but nothing after it (the table holds a row per group: at 400,000
resources a month, each column left out is tens of MB)."""
_PRICING_CASES = " ".join(f"WHEN {_literal(c.lower())} THEN {_literal(c)}" for c in PRICING_CATEGORIES)
"""SQL CASE arms: a PricingCategory in any case → its FOCUS spelling."""
_CLASSIFIED = f"""CREATE TEMP TABLE classified AS SELECT g.* EXCLUDE ({", ".join(_CLASSIFIED_DROPS)}),
    coalesce(t.task_id, '') AS tag_task,
    coalesce(u.hours_unit, false) AS hours_unit,
    CASE WHEN lower(coalesce(charge_category, '')) = 'credit' THEN 'credit'
         WHEN lower(coalesce(charge_category, '')) = 'adjustment' THEN 'refund'
         WHEN lower(coalesce(service_category, '')) = 'storage' THEN 'storage'
         WHEN lower(coalesce(service_category, '')) = 'networking' THEN 'egress'
         WHEN regexp_matches(coalesce(service_name, '') || ' ' || coalesce(description, ''), $network, 'i')
              THEN 'egress'
         WHEN contains(lower(coalesce(service_name, '')), 'storage') THEN 'storage'
         WHEN regexp_matches(coalesce(service_name, '') || ' ' || coalesce(description, ''), $images, 'i')
              THEN 'images'
         WHEN regexp_matches(coalesce(service_name, ''), $platform, 'i') THEN 'platform'
         ELSE 'other' END AS base_category,
    CASE WHEN lower(commitment_status) = 'unused' THEN 'unused'
         WHEN lower(charge_category) = 'purchase' AND commitment_id IS NOT NULL THEN 'purchase'
         ELSE '' END AS commitment,
    CASE lower(pricing_category) {_PRICING_CASES} ELSE '' END AS pricing,
    regexp_matches(' | ' || coalesce(description, '') || ' | ' || coalesce(sku, '') || ' | '
        || coalesce(resource_type, '') || ' | ' || coalesce(service_name, '') || ' | '
        || coalesce(resource_name, '') || extra_text, {{pattern}}, 'i') AS names_gpu
    FROM ({_NORMALISED}) g LEFT JOIN tag_tasks t ON g.tags = t.tags LEFT JOIN hours_units u
    ON g.consumed_unit = u.unit"""
_FINAL = """CREATE TEMP VIEW final AS SELECT *, CASE WHEN is_gpu THEN 'gpu' ELSE base_category END AS category FROM (
    SELECT *, names_gpu AND base_category NOT IN ('storage', 'egress', 'credit', 'refund') AS is_gpu,
    coalesce(nullif(tag_task, ''), a.assigned, '') AS task_id FROM classified c
    LEFT JOIN assigned a ON c.resource_id = a.resource)"""
_SUMS = f"""SELECT month, coalesce(resource_id, '') AS resource_id, task_id, is_gpu, category,
    coalesce(service_name, '') AS service_name, hours_unit, commitment,
    CASE WHEN commitment <> '' THEN coalesce(commitment_id, '') ELSE '' END AS commitment_id,
    CASE WHEN commitment <> '' THEN coalesce(commitment_type, '') ELSE '' END AS commitment_type,
    pricing AS pricing_category, fsum(billed) AS billed, sum(quantity) AS quantity,
    sum(lines)::BIGINT AS lines, min(first_charge) AS first_charge, max(last_charge) AS last_charge,
    fsum(effective) AS effective, sum(effective_missing)::BIGINT AS effective_missing
    FROM final WHERE lines > 0 GROUP BY ALL ORDER BY {", ".join(SUM_KEYS)}"""
_DAILY = """SELECT d.month, f.task_id, d.day, fsum(d.billed) AS billed FROM all_groups d JOIN (
    SELECT DISTINCT month, line_key, task_id FROM final WHERE lines > 0 AND is_gpu AND commitment = '') f
    ON d.month = f.month AND d.line_key = f.line_key WHERE d.daily AND d.lines > 0 AND d.day IS NOT NULL
    GROUP BY ALL ORDER BY 1, 2, 3"""
_LINE_OUTPUT = """SELECT row, month, billed AS billed_cost, coalesce(resource_id, '') AS resource_id,
    coalesce(resource_name, '') AS resource_name, coalesce(service_name, '') AS service_name,
    coalesce(charge_category, '') AS charge_category, quantity AS consumed_quantity,
    coalesce(consumed_unit, '') AS consumed_unit, task_id, is_gpu, category, first_charge AS charge_start,
    effective AS effective_cost, commitment, coalesce(commitment_id, '') AS commitment_id,
    coalesce(commitment_type, '') AS commitment_type, pricing AS pricing_category
    FROM final ORDER BY row"""
_LINE_FRAME = """CREATE TEMP VIEW final AS SELECT month, resource_id, task_id, is_gpu, category, service_name, hours_unit,
    billed_cost AS billed, consumed_quantity AS quantity, 1 AS lines, charge_start AS first_charge,
    charge_start AS last_charge, commitment, commitment_id, commitment_type, pricing_category AS pricing,
    effective_cost AS effective, (effective_cost IS NULL)::BIGINT AS effective_missing FROM line_frame"""


@contextmanager
def _connection(memory_limit: str, temp_parent: Path | None, timezone: str) -> Iterator[duckdb.DuckDBPyConnection]:
    """An in-memory DuckDB bounded to memory_limit and THREADS, spilling to a private folder removed at the end."""
    _check_memory_limit(memory_limit)
    with tempfile.TemporaryDirectory(prefix="budgetgen-duckdb-", dir=temp_parent) as spill:
        try:
            con = duckdb.connect(":memory:", config={
                "memory_limit": memory_limit, "threads": THREADS, "temp_directory": spill,
                "preserve_insertion_order": True,
            })
        except duckdb.Error:
            raise InputError([Problem(Code.OUT_OF_RANGE, "Settings", "", Message(
                "bad_memory_limit", limit=memory_limit))]) from None
        try:
            try:
                con.execute(f"SET TimeZone = {_literal(timezone)}")
                con.execute("SET enable_progress_bar = true; SET enable_progress_bar_print = false")
            except duckdb.Error:
                raise InputError([Problem(Code.UNKNOWN_VALUE, "Settings", "", Message(
                    "unknown_timezone", zone=timezone))]) from None
            for macro in _MACROS:
                con.execute(macro)
            yield con
        except duckdb.Error as exc:  # any query over the bills (a CSV row's fields are counted as it is read)
            raise InputError([_duckdb_problem(exc, "Bills")]) from None
        finally:
            con.close()


@contextmanager
def _reporting(con: duckdb.DuckDBPyConnection, progress: Callable[[str], None], what: str) -> Iterator[None]:
    """Tell progress how far the running query is, every PROGRESS_SECONDS (from a second thread)."""
    done = threading.Event()

    def watch() -> None:
        while not done.wait(PROGRESS_SECONDS):
            share = con.query_progress()
            if share >= 0:
                progress(f"{what}: {share:.0f}%")

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield
    except duckdb.Error as exc:
        raise InputError([_duckdb_problem(exc, "Bills")]) from None
    finally:
        done.set()
        watcher.join()


def _classify(con: duckdb.DuckDBPyConnection, options: _Options) -> None:
    """The groups' task (tags, then assignments), hours unit, category and GPU class (table `classified`)."""
    from .pipeline import is_hours_unit  # the hours rule lives with the reconciliation that reads it

    units = [u for (u,) in con.execute("SELECT DISTINCT txt(consumed_unit) AS u FROM groups WHERE u IS NOT NULL"
                                       ).fetchall()]
    con.register("hours_units", pd.DataFrame({"unit": pd.Series(units, dtype=object),
                                              "hours_unit": pd.Series([is_hours_unit(u) for u in units], dtype=bool)}))
    tags = _tag_tasks(con)
    con.register("tag_tasks", pd.DataFrame({"tags": pd.Series(list(tags), dtype=object),
                                            "task_id": pd.Series(list(tags.values()), dtype=object)}))
    con.register("assigned", pd.DataFrame({"resource": pd.Series(list(options.assignments), dtype=object),
                                           "assigned": pd.Series(list(options.assignments.values()), dtype=object)}))
    con.execute(_CLASSIFIED.format(pattern=_literal(options.pattern)),
                {"network": NETWORK_TEXT, "images": IMAGES_TEXT, "platform": PLATFORM_TEXT})
    con.execute(_FINAL)


def _tag_tasks(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """task_id of each distinct Tags text that mentions a task (the groups hold each text once per month)."""
    texts = con.execute("SELECT DISTINCT txt(tags) AS t FROM groups WHERE contains(lower(t), 'task')").fetchall()
    return {t: task for (t,) in texts if (task := task_of_tags(t))}


def task_of_tags(tags: str) -> str | None:
    """The task_id key of a JSON object ("" when absent, None when not a JSON object or naming two tasks)."""
    tasks = _tag_task_values(tags)
    return None if tasks is None or len(tasks) > 1 else next(iter(tasks), "")


def _tag_task_values(tags: str) -> list[str] | None:
    """The distinct task ids a Tags text names (task_id, user:task_id, Task-ID, ...); None: no JSON object."""
    try:
        parsed = json.loads(tags)
    except ValueError:
        return None
    if not isinstance(parsed, dict):
        return None
    values = [str(value).strip() for key, value in parsed.items()
              if re.sub(r"^user:|[\s_-]", "", str(key).lower()) == "taskid" and value not in (None, "")]
    return list(dict.fromkeys(values))


def _tags_problem(tags: str) -> Message | None:
    """Why a Tags text cannot be read (not a JSON object, or two task ids), None when it can."""
    tasks = _tag_task_values(tags)
    if tasks is None:
        return Message("tags_not_json", raw=tags)
    if len(tasks) > 1:
        return Message("tags_two_tasks", raw=tags, tasks=", ".join(tasks))
    return None


# ---------------------------------------------------------------- problems, found by SQL


@dataclass(frozen=True)
class _Check:
    flag: str
    column: str  # the declared column whose header the message names
    value: str  # SQL of the value shown
    code: Code
    describe: Callable[[str], Message]


def _number_checks(flag: str, column: str) -> list[_Check]:
    what = next(c for c in BILL_INPUT_COLUMNS if c.name == column).unit or \
        next(c for c in BILL_INPUT_COLUMNS if c.name == column).help
    raw = f"{flag}_raw"
    return [
        _Check(f"{flag}_nan", column, raw, Code.NOT_A_NUMBER, lambda v: Message(
            "not_a_number", raw=v, what=what, example=Message("example_plain"))),
        _Check(f"{flag}_infinite", column, raw, Code.OUT_OF_RANGE, lambda v: Message(
            "not_finite", raw=v, what=what)),
        _Check(f"{flag}_large", column, raw, Code.OUT_OF_RANGE, lambda v: Message(
            "too_large", shown=f'"{v}"', what=what, bound=LARGEST)),
        _Check(f"{flag}_small", column, raw, Code.OUT_OF_RANGE, lambda v: Message(
            "too_small", shown=f'"{v}"', what=what, bound=-LARGEST)),
    ]


_ROW_CHECKS = (
    *_number_checks("cost", "BilledCost"),
    *_number_checks("quantity", "ConsumedQuantity"),
    *_number_checks("effective", "EffectiveCost"),
    _Check("start_bad", "ChargePeriodStart", "start_raw", Code.BAD_MONTH, lambda v: Message("not_a_timestamp", raw=v)),
    _Check("invoice_bad", "BillingPeriodStart", "invoice_raw", Code.BAD_MONTH,
           lambda v: Message("not_a_timestamp", raw=v)),
    _Check("start_outside", "ChargePeriodStart", "start_raw", Code.OUT_OF_RANGE, lambda v: Message(
        "date_outside", raw=v, first=FIRST_DATE, last=LAST_DATE)),
    _Check("invoice_outside", "BillingPeriodStart", "invoice_raw", Code.OUT_OF_RANGE, lambda v: Message(
        "date_outside", raw=v, first=FIRST_DATE, last=LAST_DATE)),
    _Check("start_empty", "ChargePeriodStart", "start_raw", Code.REQUIRED, lambda _v: Message("line_empty")),
    _Check("cost_empty", "BilledCost", "cost_raw", Code.REQUIRED, lambda _v: Message("line_empty")),
)


def _not_a_choice(choices: tuple[str, ...]) -> Callable[[Any], Message]:
    return lambda v: Message("not_a_choice", raw=v, choices=list(choices))


def _first(row: tuple[Any, ...] | None) -> Any:
    """The first value of an aggregate query's row (an aggregate always returns one row)."""
    if row is None:
        raise ValueError("an aggregate query returned no row")
    return row[0]


def _raise_problems(con: duckdb.DuckDBPyConnection, parts: list[tuple[int, _Part]], options: _Options) -> None:
    """If the groups counted any problem (or a Tags text is no JSON object), find its first rows and raise."""
    found = _first(con.execute("SELECT bit_or(problems) FROM groups").fetchone()) or 0
    counts = {flag: found >> i & 1 for i, flag in enumerate(_CHECKS)}
    # Every Tags text is a JSON object (DuckDB checks each distinct one) naming at most one task (Python reads
    # those that mention a task).
    bad_tags = {t: problem for (t,) in con.execute(
        "SELECT DISTINCT txt(tags) AS t FROM groups WHERE t IS NOT NULL AND (contains(lower(t), 'task') "
        "OR NOT json_valid(t) OR json_type(t) <> 'OBJECT')").fetchall() if (problem := _tags_problem(t))}
    _bill_rates(con, options, "groups")
    counts["currency_other"] = len(options.missing)
    for column, bad in _BAD_CHOICES.items():  # checked once per group, not per line
        counts[column] = _first(con.execute(f"SELECT count(*) FROM groups WHERE {bad}").fetchone())
    if not any(counts.values()) and not bad_tags:
        return
    problems = []
    for _, part in parts:
        problems += _part_problems(con, part, counts, bad_tags, options)
    raise InputError(problems)


def _part_problems(con: duckdb.DuckDBPyConnection, part: _Part, counts: Mapping[str, int],
                   bad_tags: Mapping[str, Message],
                   options: _Options) -> list[Problem]:
    """The problems of one part: its first rows of each kind by SQL, with their row numbers."""
    headers = match_headers(part.columns, BILL_INPUT_COLUMNS)
    con.execute(_sql(f"CREATE OR REPLACE TEMP TABLE numbered AS {_line_select(part, 0, with_rows=True)}", options))
    problems = []
    place = _Places(part, con)
    for check in _ROW_CHECKS:
        if not counts.get(check.flag):
            continue
        header = headers[check.column]
        found = con.execute(f"SELECT file, row, {check.value} FROM numbered WHERE {_CHECKS[check.flag]} "
                            f"ORDER BY file, row LIMIT {MAX_ROW_PROBLEMS + 1}").fetchall()
        # fetchall, not fetchone: a result left open makes DuckDB refuse the register of bad tags below
        (total,), = con.execute(f"SELECT count(*) FROM numbered WHERE {_CHECKS[check.flag]}").fetchall()
        problems += listed_problems(place.name_of, place.cell_of(header), header, check.code, check.describe,
                                    found, total)
    for column, bad in _BAD_CHOICES.items():
        if not counts.get(column):
            continue
        header, choices = headers[column], next(c.choices for c in BILL_INPUT_COLUMNS if c.name == column)
        found = con.execute(f"SELECT file, row, {_CHOICE_FIELDS[column]} FROM numbered WHERE {bad} "
                            f"ORDER BY file, row LIMIT {MAX_ROW_PROBLEMS + 1}").fetchall()
        (total,), = con.execute(f"SELECT count(*) FROM numbered WHERE {bad}").fetchall()
        problems += listed_problems(place.name_of, place.cell_of(header), header, Code.UNKNOWN_VALUE,
                                    _not_a_choice(choices),
                                    found, total)
    if bad_tags and headers.get("Tags"):
        con.register("bad_tags", pd.DataFrame({"tags": pd.Series(list(bad_tags), dtype=object)}))
        where = "txt(tags) IN (SELECT tags FROM bad_tags)"
        found = con.execute(f"SELECT file, row, tags_raw FROM numbered WHERE {where} ORDER BY file, row "
                            f"LIMIT {MAX_ROW_PROBLEMS + 1}").fetchall()
        (total,), = con.execute(f"SELECT count(*) FROM numbered WHERE {where}").fetchall()
        problems += listed_problems(place.name_of, place.cell_of(headers["Tags"]), headers["Tags"], Code.WRONG_FORMAT,
                                    lambda v: bad_tags.get(v) or Message("tags_not_json", raw=v), found, total)
    if counts.get("currency_other") and headers.get("BillingCurrency"):
        header = headers["BillingCurrency"]
        codes = ", ".join(_literal(code) for code in options.missing)
        other = con.execute(_sql("SELECT upper(txt(currency)) AS code, count(*), min((coalesce(file, ''), row)) "
                                 f"FROM numbered WHERE {_CURRENCY_OTHER} AND upper(txt(currency)) IN ({codes}) GROUP BY 1 ORDER BY 1",
                                 options)).fetchall()
        problems += [Problem(Code.CURRENCY, place.name_of(file), place.cell_of(header)(row), no_rate(
            code, lines, options)) for code, lines, (file, row) in other]
    return problems


def no_rate(code: str, lines: int, options: _Options) -> Message:
    """Lines in currency `code` that no rate converts into the plan's: the months, and how to give a rate."""
    return Message("currency_mismatch", code=code, lines=lines, plan=options.currency,
                   months=", ".join(m for m in options.missing.get(code, ()) if m) or "?")


def _sql(text: str, options: _Options) -> str:
    """SQL with the plan's currency in place of $currency."""
    return text.replace("$currency", _literal(options.currency.strip().upper()))


@dataclass
class _Places:
    """Where a problem sits: the part's (or its file's) name, and its cell (B7) or row (row 7)."""

    part: _Part
    con: duckdb.DuckDBPyConnection

    def name_of(self, file: str | None) -> str:
        return Path(file).name if file else self.part.name

    def cell_of(self, header: str) -> Callable[[int], str]:
        if self.part.a1:
            letter = get_column_letter(self.part.columns.index(header) + 1)
            return lambda row: f"{letter}{row}"
        return lambda row: f"row {row}"


def _quiet(message: str) -> None:
    """No progress messages."""

