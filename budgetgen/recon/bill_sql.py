"""The bill's grouping as one portable query, for a bill kept in a warehouse (DuckDB, Spark, BigQuery, Athena).

`grouping_sql(dialect)` is the reconciliation's line grouping written once (in DuckDB's SQL) and transpiled by
sqlglot: every line of a FOCUS table summed per invoice month, charge day and the line's texts (normalised as
the local reading does: trimmed, "" and the text NULL as missing). Its result, saved as CSV or Parquet, is what
`read_bill_sums` reads in place of the lines: the texts are classified (task from Tags or Assignments, GPU or
not, category) and summed to the same BillSums as `sum_bills`, on a table of a few rows per resource and day.

The table is a FOCUS export with the FOCUS column names (timestamps in UTC, as FOCUS writes them); the query
converts each line's instants to the billing time zone given, and writes that zone in every row, so a result
made for another zone is refused rather than read with shifted months.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import duckdb
import pandas as pd

from ..catalog.fx import Rate
from ..core.errors import Code, InputError, Problem
from ..core.i18n import Message
from ..core.values import LARGEST
from .bill_sums import (
    _BAD_CHOICES,
    _COVERAGE,
    _CURRENCY_OTHER,
    _KEY_TEXTS,
    _OUTSIDE_DATES,
    _SUM_TEXTS,
    _SUMS,
    _TEXTS,
    DAYS_BEFORE,
    DEFAULT_MEMORY_LIMIT,
    BillSums,
    _bill_rates,
    _check_pattern,
    _classify,
    _connection,
    _convert,
    _daily,
    _first,
    _literal,
    _Options,
    _quiet,
    _sql,
    _tags_problem,
    add_day_sums,
    create_all_groups,
    gpu_regex,
    no_rate,
)
from .dialects import DEFAULT_TABLE, DIALECTS
from .table import MAX_ROW_PROBLEMS

_TEXT_COLUMNS = (
    # the grouping's text key: FOCUS column → its name in the result (bill_sums._TEXTS)
    ("ResourceId", "resource_id"), ("ResourceName", "resource_name"), ("ResourceType", "resource_type"),
    ("ServiceName", "service_name"), ("ServiceCategory", "service_category"), ("ChargeDescription", "description"),
    ("SkuId", "sku"), ("ConsumedUnit", "consumed_unit"), ("Tags", "tags"), ("BillingCurrency", "currency"),
    ("ChargeCategory", "charge_category"), ("CommitmentDiscountId", "commitment_id"),
    ("CommitmentDiscountStatus", "commitment_status"), ("CommitmentDiscountType", "commitment_type"),
    ("PricingCategory", "pricing_category"),
)
FOCUS_COLUMNS = (*(column for column, _ in _TEXT_COLUMNS), "BilledCost", "ConsumedQuantity", "EffectiveCost",
                 "ChargePeriodStart", "BillingPeriodStart")
"""The FOCUS columns the query reads (a table without one of them fails in the warehouse: give it as NULL)."""
MEASURES = ("billed", "quantity", "lines", "cost_missing", "first_charge", "last_charge", "effective",
            "effective_missing")
RESULT_COLUMNS = ("billing_timezone", "month", "day", *(name for _, name in _TEXT_COLUMNS), *MEASURES)
"""The query's result columns, in order: what `--bill-sums` requires."""


def _text(column: str) -> str:
    value = f"TRIM(CAST({column} AS VARCHAR))"
    return f"CASE WHEN UPPER({value}) IN ('', 'NULL') THEN NULL ELSE {value} END"


def _local(column: str, timezone: str) -> str:
    return f"(CAST({column} AS TIMESTAMPTZ) AT TIME ZONE {_literal(timezone)})"


def grouping_sql(dialect: str = "duckdb", table: str = DEFAULT_TABLE, timezone: str = "UTC") -> str:
    """The grouping query in a dialect of DIALECTS, over `table`, with months and days in `timezone`."""
    import sqlglot

    if dialect not in DIALECTS:
        raise ValueError(f"dialect {dialect!r} is none of {', '.join(DIALECTS)}")
    texts = ",\n    ".join(f"{_text(column)} AS {name}" for column, name in _TEXT_COLUMNS)
    keys = ", ".join(name for _, name in _TEXT_COLUMNS)
    local_start, local_invoice = _local("ChargePeriodStart", timezone), _local("BillingPeriodStart", timezone)
    query = f"""SELECT {_literal(timezone)} AS billing_timezone, month, day, {keys},
    SUM(cost) AS billed, SUM(quantity) AS quantity, COUNT(*) AS lines,
    COUNT(*) - COUNT(cost) AS cost_missing, MIN(start) AS first_charge, MAX(start) AS last_charge,
    SUM(effective) AS effective, COUNT(*) - COUNT(effective) AS effective_missing
FROM (SELECT
    STRFTIME(CAST(COALESCE({local_invoice}, {local_start}) AS DATE), '%Y-%m') AS month,
    CAST({local_start} AS DATE) AS day,
    {texts},
    CAST(BilledCost AS DOUBLE) AS cost, CAST(ConsumedQuantity AS DOUBLE) AS quantity,
    CAST(EffectiveCost AS DOUBLE) AS effective, CAST(ChargePeriodStart AS TIMESTAMPTZ) AS start
  FROM {table}) AS line
GROUP BY month, day, {keys}"""
    return sqlglot.transpile(query, read="duckdb", write=dialect,
                             pretty=True)[0] + ";"


def read_bill_sums(
    path: Path,
    plan_currency: str,
    gpu_line_pattern: str,
    assignments: Mapping[str, str],
    gpu_names: Iterable[str],
    *,
    billing_timezone: str = "UTC",
    memory_limit: str = DEFAULT_MEMORY_LIMIT,
    rate_of: Callable[[str, str], Rate | None] | None = None,
) -> BillSums:
    """The result of grouping_sql (CSV or Parquet) classified and summed like sum_bills' (one source: no
    de-duplication; the query's result holds no line to find again), a month's rows in another currency
    converted at rate_of's rate (as sum_bills). Problems name the file and its row."""
    path = Path(path)
    name = path.name
    if not path.is_file():
        raise InputError([Problem(Code.NOT_A_FILE, name, "", Message("not_a_file", path=str(path)))])
    kind = path.suffix.lower()
    if kind not in (".csv", ".parquet"):
        raise InputError([Problem(Code.WRONG_FORMAT, name, "", Message("not_a_table_file", file=name))])
    pattern = gpu_regex(gpu_line_pattern, gpu_names)
    with _connection(memory_limit, None, billing_timezone) as con:
        options = _Options(plan_currency, pattern, dict(assignments), billing_timezone, _quiet, rate_of=rate_of)
        _check_pattern(con, pattern, gpu_line_pattern)
        reader = (f"read_parquet({_literal(str(path))}, file_row_number=true)" if kind == ".parquet" else
                  f"read_csv({_literal(str(path))}, header=true, all_varchar=true)")
        try:
            columns = [c for c, *_ in con.execute(f"DESCRIBE SELECT * FROM {reader}").fetchall()]
        except duckdb.Error as exc:
            raise InputError([Problem(Code.UNREADABLE, name, "", Message(
                "unreadable_file", reason=str(exc).split("\n")[0]))]) from None
        lowered = {c.lower(): c for c in columns}
        missing = [c for c in RESULT_COLUMNS if c not in lowered]
        if missing:
            raise InputError([Problem(Code.MISSING_COLUMN, name, "", Message("file_missing_column", column=c))
                              for c in missing])
        types = dict(con.execute(f"SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM {reader})").fetchall())
        rows = ", ".join(_result_column(lowered[c], c, types[lowered[c]]) for c in RESULT_COLUMNS)
        read = ", ".join(_read_value(c, target, types[lowered[c]]) for c, target in _READ.items())
        # A Parquet file is read where it lies (its rows numbered by the reader: no copy, no window); a CSV file,
        # read as text, is numbered in one copy.
        relation = "VIEW" if kind == ".parquet" else "TABLE"
        row = "file_row_number + 2" if kind == ".parquet" else "row_number() OVER () + 1"
        con.execute(f"CREATE TEMP {relation} sums_file AS SELECT *, {read} FROM (SELECT {row} AS row, {rows} "
                    f"FROM {reader})")
        problems = _check_sums(con, name, options)
        if problems:  # (the grouping reads months and days: only rows whose values read)
            raise InputError(problems)
        constant = _sums_constants(con)
        create_all_groups(con, _KEYED_SUMS, _SUMS_MEASURES, constant, keep_texts=True)
        problems = _tag_problems(con, name, constant) + _repeated_keys(con, name, constant)
        if problems:
            raise InputError(problems)
        con.execute("DROP TABLE IF EXISTS text_keys")
        con.execute("CREATE TEMP VIEW groups AS SELECT * EXCLUDE (daily, result_rows) FROM all_groups WHERE NOT daily")
        currencies = _convert(con, options, "all_groups", daily=True)
        _classify(con, options)
        add_day_sums(con, _KEYED_SUMS, _SUMS_DAY_SUMS, options)
        con.execute(f"DROP {relation} sums_file")
        sums = con.execute(_SUMS).df()
        daily = _daily(con)
        coverage = con.execute(_COVERAGE).fetchall()
    sums = sums.astype(_SUM_TEXTS)
    billed = {m: float(g.sum()) for m, g in sums.groupby("month", sort=True)["billed"]}
    return BillSums(sums, billed, {m: (first, last, days.bit_count()) for m, first, last, days in coverage}, {}, (),
                    daily, currencies)


def _sums_constants(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """The constant texts of the result's grouping (create_all_groups), as bill_sums._constant_texts gives the lines':
    a text empty on every row of the result (a FOCUS column the bill lacks: the query writes NULL) and `extra_text`
    (always ''), left out of every key (a constant splits no group) and written back. One pass over the result, the
    texts' counts only."""
    counts = con.execute("SELECT " + ", ".join(f"count({n})" for n in _TEXTS) + " FROM sums_file").fetchone() or ()
    types = dict(con.execute("SELECT column_name, column_type FROM (DESCRIBE sums_file)").fetchall())
    constant = {n: f"CAST(NULL AS {types[n]})" for n, count in zip(_TEXTS, counts, strict=True) if count == 0}
    return constant | {"extra_text": "''"}


def _result_column(header: str, name: str, kind: str) -> str:
    """SQL of a column of the query's result as sums_file holds it. A time without a zone (Spark writes its
    TIMESTAMP to Parquet as INT96, which DuckDB reads as a wall-clock time) is the UTC instant the query took from
    ChargePeriodStart: read in UTC, never in the billing time zone (as a zone-less text in a bill is)."""
    column = f'"{header}"'
    if name in ("first_charge", "last_charge") and kind.startswith("TIMESTAMP") and "TIME ZONE" not in kind:
        return f"timezone('UTC', {column}) AS {name}"
    return f"{column} AS {name}"


_READ = {"first_charge": "first_ts", "last_charge": "last_ts", "day": "day_date"}
"""The result's columns read as instants and a date once, as sums_file's columns of these names (_read_value)."""


def _read_value(name: str, target: str, kind: str) -> str:
    """SQL of sums_file's column `target` (_READ) over the result's column `name` as _result_column gives it (of type
    `kind` in the file): a time or day as an instant (first_ts, last_ts) or a date (day_date), NULL where it cannot be
    read. A column of that type (Parquet's) is taken as it is; a text (CSV) is parsed, once per row (at 5.5 million
    rows a parse per check and per use cost seconds)."""
    if target == "day_date":
        return f"{name} AS {target}" if kind == "DATE" else f"TRY_CAST(CAST({name} AS VARCHAR) AS DATE) AS {target}"
    if kind.startswith("TIMESTAMP"):  # an instant (_result_column reads a time without a zone in UTC)
        return f"{name} AS {target}"
    return f"ts(txt(CAST({name} AS VARCHAR))) AS {target}"


_NUMBER = "TRY_CAST({0} AS DOUBLE)"
_SUMS_ROWS = f"""SELECT month, day_date AS day,
    resource_id, resource_name, resource_type,
    service_name, service_category, description, sku, consumed_unit, tags, currency, charge_category, commitment_id,
    commitment_status, commitment_type, pricing_category, '' AS extra_text,
    {_NUMBER.format('billed')} AS billed, {_NUMBER.format('quantity')} AS quantity,
    TRY_CAST(lines AS BIGINT) AS lines, first_ts AS first_charge, last_ts AS last_charge,
    {_NUMBER.format('effective')} AS effective, TRY_CAST(effective_missing AS BIGINT) AS effective_missing,
    1::UHUGEINT << least(greatest(day_date
        - strptime(month || '-01', '%Y-%m-%d')::DATE + {DAYS_BEFORE}, 0), 127)::UHUGEINT AS days
    FROM sums_file"""
_KEYED_SUMS = f"SELECT *, hash({', '.join(_KEY_TEXTS)}) AS line_key FROM ({_SUMS_ROWS})"
_SUMS_MEASURES = """fsum(billed) AS billed, sum(quantity) AS quantity, sum(lines)::BIGINT AS lines,
    min(first_charge) AS first_charge, max(last_charge) AS last_charge, 0 AS dup_lines, 0.0 AS dup_billed,
    fsum(effective) AS effective, sum(effective_missing)::BIGINT AS effective_missing, bit_or(days) AS days,
    0::BIGINT AS problems, count(*) AS result_rows"""
_SUMS_DAY_SUMS = """SELECT month, day, line_key, true AS daily, fsum(billed) AS billed, sum(lines)::BIGINT AS lines
    FROM keyed WHERE line_key IN (SELECT line_key FROM gpu_keys) GROUP BY month, day, line_key"""
"""The result's rows grouped as sum_bills groups the lines (bill_sums.create_all_groups): by month and texts (the
groups every rule reads, once per resource and month rather than once per day), and apart, by month, day and
line_key (the daily sums: BilledCost and the lines alone, of GPU groups' rows: add_day_sums)."""


def _amount(column: str, required: bool) -> str:
    """SQL true where a sums file's amount cannot be read: not a finite number of at most LARGEST (1e308 twice
    overflowed the month's sum, a traceback), or blank where one is required (a text in an optional amount was
    read as none). An optional amount that reads as a number is not read as text (at 5.5 million rows of a
    Parquet result, writing each number as text to find it blank cost 1.5 CPU s an amount)."""
    value = f"TRY_CAST({column} AS DOUBLE)"
    bad = f"NOT isfinite({value}) OR abs({value}) > {LARGEST:g}"
    if required:
        return f"{value} IS NULL OR {bad}"
    return f"CASE WHEN {value} IS NOT NULL THEN {bad} ELSE txt(CAST({column} AS VARCHAR)) IS NOT NULL END"


def _whole(column: str, least: int) -> str:
    """SQL true where a count is no whole number of at least `least` (1.5 lines was read as 2)."""
    return (f"coalesce(TRY_CAST({column} AS DOUBLE), -1) < {least} "
            f"OR TRY_CAST({column} AS DOUBLE) <> floor(TRY_CAST({column} AS DOUBLE))")


_FIRST, _LAST = "first_ts", "last_ts"
_SUMS_CHECKS = (
    # SQL over a row of the sums file, true where it cannot be read; the column the problem names
    ("billing_timezone", "billing_timezone IS DISTINCT FROM $zone"),
    ("month", r"NOT regexp_full_match(coalesce(CAST(month AS VARCHAR), ''), '\d{4}-(0[1-9]|1[0-2])')"),
    ("day", "day_date IS NULL"),
    ("billed", _amount("billed", required=True)),
    ("quantity", _amount("quantity", required=False)),
    ("effective", _amount("effective", required=False)),
    ("cost_missing", "TRY_CAST(cost_missing AS BIGINT) IS DISTINCT FROM 0"),
    ("lines", _whole("lines", 1)),
    ("effective_missing", _whole("effective_missing", 0) + " OR TRY_CAST(effective_missing AS DOUBLE) > "
                                                         "TRY_CAST(lines AS DOUBLE)"),
    # (the instants against the dates' starts in UTC, as a bill's lines are checked: no time zone per row)
    ("first_charge", f"{_FIRST} IS NULL OR {_OUTSIDE_DATES.format(_FIRST)}"),
    ("last_charge", f"{_LAST} IS NULL OR {_OUTSIDE_DATES.format(_LAST)} OR {_LAST} < {_FIRST}"),
)
_SUMS_KEYS = ("billing_timezone", "month", "day", *(name for _, name in _TEXT_COLUMNS))
"""A row of the query's result is one group of these: a key found again is the file appended twice (or two
results put together), and every amount of it would be counted twice."""


def _check_sums(con: duckdb.DuckDBPyConnection, name: str, options: _Options) -> list[Problem]:
    """The problems of the sums file's rows (none where every row is readable, in the plan's currency and billing
    time zone, with readable Tags and choices), each naming the file, the row and the column (the first rows of
    each kind)."""
    problems = []
    checks = [_sql(bad, options).replace("$zone", _literal(options.timezone)) for _, bad in _SUMS_CHECKS]
    checks += list(_BAD_CHOICES.values())
    # One scan finds which checks fail anywhere; only those are looked up row by row.
    found_any = _first(con.execute("SELECT bit_or(" + " | ".join(f"((({where}) IS TRUE)::BIGINT << {i})" for i, where in
                                                      enumerate(checks)) + ") FROM sums_file").fetchone()) or 0
    for i, (column, _) in enumerate(_SUMS_CHECKS):
        if not found_any >> i & 1:
            continue
        found = con.execute(f"SELECT row, CAST({column} AS VARCHAR) FROM sums_file WHERE {checks[i]} "
                            f"ORDER BY row LIMIT {MAX_ROW_PROBLEMS}").fetchall()
        problems += [Problem(Code.WRONG_FORMAT, name, f"row {row}", Message(
            "bill_sums_bad_value", column=column, raw="" if raw is None else raw, zone=options.timezone))
            for row, raw in found]
    _bill_rates(con, options, "sums_file")
    if options.missing:
        codes = ", ".join(_literal(code) for code in options.missing)
        other = con.execute(_sql(f"SELECT upper(txt(currency)), sum(TRY_CAST(lines AS BIGINT))::BIGINT, min(row) "
                                 f"FROM sums_file WHERE {_CURRENCY_OTHER} AND upper(txt(currency)) IN ({codes}) "
                                 "GROUP BY 1 ORDER BY 1", options)).fetchall()
        problems += [Problem(Code.CURRENCY, name, f"row {row}", no_rate(code, lines or 0, options))
                     for code, lines, row in other]
    for i, (column, bad) in enumerate(_BAD_CHOICES.items(), start=len(_SUMS_CHECKS)):
        if not found_any >> i & 1:
            continue
        field = {"CommitmentDiscountStatus": "commitment_status", "PricingCategory": "pricing_category"}[column]
        found = con.execute(f"SELECT row, {field} FROM sums_file WHERE {bad} ORDER BY row "
                            f"LIMIT {MAX_ROW_PROBLEMS}").fetchall()
        problems += [Problem(Code.UNKNOWN_VALUE, name, f"row {row}", Message(
            "bill_sums_bad_value", column=field, raw=raw, zone=options.timezone)) for row, raw in found]
    return problems


def _tag_problems(con: duckdb.DuckDBPyConnection, name: str, constant: Mapping[str, str]) -> list[Problem]:
    """The first rows of each Tags text that is no JSON object or names two tasks, read from the distinct texts
    (create_all_groups' text_keys, kept): checked per row, 3.4 million rows of 12-key Tags cost 36 CPU s (30M lines
    of 40,000 resources, 2026-12-04). Only the texts found are looked up row by row."""
    if "tags" in constant:
        return []
    texts = con.execute("SELECT DISTINCT tags, txt(tags) AS t FROM text_keys WHERE t IS NOT NULL AND "
                        "(contains(lower(t), 'task') OR NOT json_valid(t) OR json_type(t) <> 'OBJECT')").fetchall()
    found = {raw: (text, problem) for raw, text in texts if (problem := _tags_problem(text)) is not None}
    if not found:
        return []
    con.register("bad_tags", pd.DataFrame({"tags": pd.Series(list(found), dtype=object)}))
    first: dict[str, tuple[int, Message]] = {}
    for raw, row in con.execute("SELECT tags, min(row) FROM sums_file WHERE tags IN (SELECT tags FROM bad_tags) "
                                "GROUP BY tags").fetchall():
        text, problem = found[raw]
        first[text] = min(first.get(text, (row, problem)), (row, problem), key=lambda r: r[0])
    return [Problem(Code.WRONG_FORMAT, name, f"row {row}", problem)
            for row, problem in sorted(first.values(), key=lambda r: r[0])][:MAX_ROW_PROBLEMS]


def _repeated_keys(con: duckdb.DuckDBPyConnection, name: str, constant: Mapping[str, str]) -> list[Problem]:
    """The rows of the sums file that repeat an earlier row's key (_SUMS_KEYS, each text as txt reads it): the
    file appended twice, or two results put together, whose every amount would count twice.

    Found from the groups (create_all_groups, with text_keys kept): where no two distinct texts of text_keys read
    alike, a key repeats only where a group (a month and its texts) holds two rows of one day, that is fewer charge
    days (its `days` bits) than rows. Only where either test finds something are the rows compared key by key
    (a scan and a window over every row: 5 CPU s at 5.5 million rows)."""
    keys = [n for n in (*_TEXTS, "extra_text") if n not in constant]
    alike = bool(keys) and bool(_first(con.execute(
        "SELECT count(DISTINCT hash(" + ", ".join(f"txt(CAST({k} AS VARCHAR))" for k in keys) + ")) < count(*) "
        "FROM text_keys"
    ).fetchone()))
    days = ("bit_count((days >> 64)::UBIGINT) + bit_count((days & 18446744073709551615::UHUGEINT)::UBIGINT)")
    # (DuckDB counts the bits of 64 at most: the days' 128 as two halves)
    if not alike and not _first(con.execute(f"SELECT EXISTS (SELECT 1 FROM all_groups WHERE NOT daily AND "
                                            f"{days} < result_rows)").fetchone()):
        return []
    keys_sql = ", ".join(f"txt(CAST({k} AS VARCHAR))" for k in _SUMS_KEYS)
    again = con.execute(f"SELECT row, first FROM (SELECT row, min(row) OVER (PARTITION BY {keys_sql}) AS first "
                        f"FROM sums_file) WHERE row <> first ORDER BY row LIMIT {MAX_ROW_PROBLEMS}").fetchall()
    return [Problem(Code.DUPLICATE_FILE, name, f"row {row}", Message("bill_sums_repeated", first=first))
            for row, first in again]

