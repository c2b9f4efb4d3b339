"""A bill or usage file (CSV, Parquet, xlsx) or sheet as a Table: typed columns by their declarations, and problems.

Numbers are finite and within the reader's magnitudes (values.LARGEST), so no sum of a bill overflows;
months come from values.parse_month, as in the input sheets. Every problem names the file (or sheet) and
the row (or cell) and is an i18n Message.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from openpyxl.utils import get_column_letter

from ..core.errors import Code, InputError, Problem
from ..core.i18n import Message
from ..core.values import LARGEST, BadValue, parse_month
from ..io.safefile import EXCEL_MAX_ROWS, iter_rows, load_input_workbook
from .columns import FileColumn, duplicate_headers, match_headers

MAX_ROW_PROBLEMS = 20
NULL_TEXTS = ("", "NULL")
_NAN_TEXTS = ("nan", "+nan", "-nan")
_DATE = re.compile(r"(\d{4})[-/.](\d{1,2})(?:[-/.](\d{1,2}))?")


def map_unique(values: pd.Series, fn: Callable[[str], Any]) -> np.ndarray:
    """Apply fn once per distinct text and spread the results over the rows."""
    codes, uniques = pd.factorize(values.fillna(""))
    results = np.empty(len(uniques), dtype=object)
    results[:] = [fn(u) for u in uniques]
    return results[codes]


def timestamp_month(text: str) -> str | None:
    """`YYYY-MM` of a date or date-time text (`2026-07-31T10:00Z`, `2026/7/31 10:00`, `2026-07`), None if none.

    The date part (before `T` or a space) must be a real date or a month; the time of day is not read.
    """
    found = _DATE.fullmatch(re.split(r"[T\s]", text.strip(), maxsplit=1)[0])
    if not found:
        return None
    year, month, day = found.groups()
    try:
        if day is not None:
            return parse_month(dt.date(int(year), int(month), int(day)))
        return parse_month(f"{year}-{month}")
    except (ValueError, BadValue):
        return None


@dataclass(frozen=True)
class Table:
    """A loaded file or sheet, its index the row number the user sees, its columns matched to declarations."""

    frame: pd.DataFrame
    name: str
    a1: bool  # a sheet: places are cells (B7); a file: rows (row 7)
    declared: Mapping[str, FileColumn]
    headers: Mapping[str, str]  # declared name → the header as the file spells it
    texts: dict = field(default_factory=dict, compare=False, repr=False)  # text() per column, computed once

    def header(self, name: str) -> str | None:
        return self.headers.get(name)

    def missing(self, names: Iterable[str]) -> list[Problem]:
        """A problem for each of the declared columns named that the file lacks."""
        return [self.problem(Code.MISSING_COLUMN, "", Message("file_missing_column", column=n))
                for n in names if n not in self.headers]

    def problem(self, code: Code, cell: str, message: Message) -> Problem:
        return Problem(code, self.name, cell, message)

    def cell(self, header: str, row: int) -> str:
        """Where a value sits: `C14` in a sheet, `row 14` in a file."""
        if self.a1:
            return f"{get_column_letter(self.frame.columns.get_loc(header) + 1)}{row}"
        return f"row {row}"

    def text(self, name: str) -> pd.Series:
        """A column as stripped text, with empty cells and the text NULL as missing (all missing if absent)."""
        return self.header_text(self.headers.get(name))

    def header_text(self, header: str | None) -> pd.Series:
        """text() of a column by its header in the file (also for undeclared columns such as x_InstanceType)."""
        if header is None:
            return pd.Series(pd.NA, index=self.frame.index, dtype="str")
        if header not in self.texts:
            text = self.frame[header].astype("str").str.strip()
            self.texts[header] = text.mask(text.str.upper().isin(NULL_TEXTS) | self.frame[header].isna())
        return self.texts[header]

    def strings(self, name: str) -> pd.Series:
        """A column as stripped text, missing values as ""."""
        return self.text(name).fillna("")

    def numbers(self, name: str, text: pd.Series | None = None) -> tuple[pd.Series, list[Problem]]:
        """A number column as floats (missing → NaN), with a problem for each text that is no number and each
        value that is not finite, beyond ±values.LARGEST or outside the column's bounds."""
        header = self.headers.get(name)
        if header is None:
            return pd.Series(np.nan, index=self.frame.index), []
        column = self.declared[name]
        raw = self.frame[header]
        if text is None and pd.api.types.is_numeric_dtype(raw) and not pd.api.types.is_bool_dtype(raw):
            values = raw.astype("float64")
            nan_text = pd.Series(False, index=raw.index)
            problems = []
        else:
            text = self.text(name) if text is None else text
            values = pd.to_numeric(text, errors="coerce").astype("float64")
            unparsed = text[text.notna() & values.isna()]  # few lines: look at their texts only
            nan_text = unparsed.str.lower().isin(_NAN_TEXTS).reindex(values.index, fill_value=False).astype(bool)
            problems = self.row_problems(text.notna() & values.isna() & ~nan_text, header, Code.NOT_A_NUMBER,
                                         lambda v: Message("not_a_number", raw=v, what=_what(column),
                                                           example=Message("example_plain")))
        infinite = nan_text | np.isinf(values)
        problems += self.row_problems(infinite, header, Code.OUT_OF_RANGE,
                                      lambda v: Message("not_finite", raw=v, what=_what(column)))
        finite = values.where(~infinite)
        too_large, too_small = finite > LARGEST, finite < -LARGEST
        problems += self.row_problems(too_large, header, Code.OUT_OF_RANGE, lambda v: Message(
            "too_large", shown=_quoted(v), what=_what(column), bound=LARGEST))
        problems += self.row_problems(too_small, header, Code.OUT_OF_RANGE, lambda v: Message(
            "too_small", shown=_quoted(v), what=_what(column), bound=-LARGEST))
        outside = pd.Series(False, index=values.index)
        if column.minimum is not None:
            outside |= finite < column.minimum
        if column.maximum is not None:
            outside |= finite > column.maximum
        problems += self.row_problems(outside & ~too_large & ~too_small, header, Code.OUT_OF_RANGE,
                                      lambda v: _outside(column, v))
        return finite.where(~too_large & ~too_small), problems

    def months(self, name: str) -> tuple[pd.Series, list[Problem]]:
        """`YYYY-MM` of a month, date or timestamp column, and a problem for each value that is none (missing:
        NA, no problem; see `empty`)."""
        header = self.headers[name]
        raw = self.frame[header]
        if pd.api.types.is_datetime64_any_dtype(raw):
            return raw.dt.strftime("%Y-%m").astype("str"), []
        text = self.text(name)
        if self.declared[name].type == "month":
            month = pd.Series(map_unique(text, _month_or_none), index=text.index, dtype="str")
        else:
            # The date part decides (at most 10 characters, then T or a space); parsing each distinct start once
            # keeps a bill of many lines fast.
            dates = text.str.slice(0, 11)
            month = pd.Series(map_unique(dates, timestamp_month), index=text.index, dtype="str")
        bad = text.notna() & month.isna()
        return month, self.row_problems(bad, header, Code.BAD_MONTH, lambda v: Message("not_a_timestamp", raw=v))

    def empty(self, name: str, mask: pd.Series | None = None) -> list[Problem]:
        """A problem for each row whose value of a required column is empty (only within mask when given)."""
        missing = self.text(name).isna() if mask is None else self.text(name).isna() & mask
        return self.row_problems(missing, self.headers[name], Code.REQUIRED, lambda _v: Message("line_empty"))

    def row_problems(self, mask: pd.Series, header: str, code: Code,
                     describe: Callable[[Any], Message]) -> list[Problem]:
        """One problem per masked row (the first MAX_ROW_PROBLEMS, then one counting the rest)."""
        rows = mask[mask.fillna(False).astype(bool)].index
        found: list[tuple[str | None, int, Any]] = [(None, row, v) for row, v in self.frame.loc[rows[:MAX_ROW_PROBLEMS + 1], header].items()]
        return listed_problems(lambda _file: self.name, lambda row: self.cell(header, row), header, code, describe,
                               found, len(rows))


def listed_problems(name_of: Callable[[str | None], str], cell_of: Callable[[int], str], header: str, code: Code,
                    describe: Callable[[Any], Message], found: list[tuple[str | None, int, Any]],
                    count: int) -> list[Problem]:
    """One problem per found (file, row, value), the first MAX_ROW_PROBLEMS, then one counting the other lines.

    found holds the first MAX_ROW_PROBLEMS + 1 rows with the problem, count how many rows have it in all.
    """
    problems = [
        Problem(code, name_of(file), cell_of(row), Message("cell_value", column=header.strip(),
                                                          problem=describe(shown(v))))
        for file, row, v in found[:MAX_ROW_PROBLEMS]
    ]
    if count > MAX_ROW_PROBLEMS:
        file, row, _ = found[MAX_ROW_PROBLEMS]
        more = Message("more_lines", count=count - MAX_ROW_PROBLEMS)
        problems.append(Problem(code, name_of(file), cell_of(row), Message("cell_value", column=header.strip(),
                                                                          problem=more)))
    return problems


def _month_or_none(text: str) -> str | None:
    """A month column's `YYYY-MM`, also from a date or date-time text; None when it is neither."""
    return timestamp_month(text) if text else None


def _what(column: FileColumn) -> str:
    return column.unit or column.help


def _outside(column: FileColumn, value: str) -> Message:
    """The message for a number outside the column's bounds."""
    shown, what, lo, hi = _quoted(value), _what(column), column.minimum, column.maximum
    if lo is not None and hi is not None:
        return Message("not_between", shown=shown, what=what, lo=lo, hi=hi)
    if lo is not None:
        return Message("below_minimum", shown=shown, what=what, lo=lo)
    return Message("above_maximum", shown=shown, what=what, hi=hi)


def shown(value: object) -> str:
    """A value as quoted in a message: text without its surrounding spaces, a number as Python writes it."""
    return value.strip() if isinstance(value, str) else str(value)


def _quoted(value: str) -> str:
    return f'"{value}"'


def read_table(source: str | Path | pd.DataFrame, name: str, declared: Iterable[FileColumn]) -> Table:
    """Read a path (CSV, Parquet, xlsx first sheet) or take a sheet's DataFrame, its headers matched to declared."""
    by_name = {c.name: c for c in declared}
    if isinstance(source, pd.DataFrame):
        frame, a1, headers = source, True, tuple(str(c) for c in source.columns)
    else:
        frame, a1 = _read_file(Path(source), name)
        headers = _file_headers(Path(source)) or tuple(str(c) for c in frame.columns)
    twice = duplicate_headers(headers, by_name.values())
    if twice:  # the first would be read and the other silently dropped
        raise InputError([Problem(Code.DUPLICATE_COLUMN, name, "", Message(
            "file_duplicate_column", column=column, count=len(found), headers=", ".join(found)))
            for column, found in twice.items()])
    return Table(frame, name, a1, by_name, match_headers(frame.columns, by_name.values()))


def _file_headers(path: Path) -> tuple[str, ...] | None:
    """The headers as a CSV or Parquet file writes them (a reader renames a header written twice)."""
    if path.suffix.lower() == ".csv":
        return csv_header(path)[0]
    if path.suffix.lower() == ".parquet":
        return parquet_headers([path])
    return None


def parquet_headers(paths: list[Path]) -> tuple[str, ...] | None:
    """The column names the Parquet files declare: each once, plus every repeat within one file."""
    try:
        import pyarrow.parquet as pq

        schemas = [pq.read_schema(path).names for path in paths]
    except Exception:  # noqa: BLE001 - DuckDB reads the file next and names what is wrong with it
        return None
    names = list(dict.fromkeys(n for own in schemas for n in own))
    return tuple(names + [n for own in schemas for n, k in Counter(own).items() for _ in range(k - 1)])


def csv_header(path: Path) -> tuple[tuple[str, ...], str]:
    """A CSV file's header fields and delimiter (comma, else semicolon, tab or bar, whichever the header uses
    most); a file that is no UTF-8 text (UTF-16, binary) is refused by name."""
    try:
        with path.open("rb") as handle:
            head = handle.read(1 << 20)
    except OSError as exc:
        raise InputError([Problem(Code.UNREADABLE, path.name, "", Message(
            "unreadable_file", reason=exc.strerror or str(exc)))]) from None
    reason = None
    if head.startswith((b"\xff\xfe", b"\xfe\xff")) or b"\x00" in head:
        reason = "it holds NUL bytes: UTF-16 or a binary file"
    else:
        try:
            text = head.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            if exc.start < len(head) - 4:  # not merely a character cut at the end of the 1 MB read
                reason = f"byte {exc.start + 1:,} is not UTF-8"
            text = head[:exc.start].decode("utf-8-sig")
    if reason is not None:
        raise InputError([Problem(Code.WRONG_FORMAT, path.name, "", Message("not_utf8_text", reason=reason))])
    first = text.split("\n", 1)[0]
    delimiter = max((",", ";", "\t", "|"), key=lambda d: (first.count(d), d == ","))
    header = next(csv.reader(io.StringIO(text), delimiter=delimiter), [])
    return tuple(h.strip() for h in header), delimiter


def _read_file(path: Path, name: str) -> tuple[pd.DataFrame, bool]:
    if not path.is_file():
        raise InputError([Problem(Code.NOT_A_FILE, name, "", Message("not_a_file", path=str(path)))])
    readers = {".csv": _read_csv, ".parquet": _read_parquet, ".xlsx": _read_xlsx}
    reader = readers.get(path.suffix.lower())
    if reader is None:
        raise InputError([Problem(Code.WRONG_FORMAT, name, "", Message("not_a_table_file", file=path.name))])
    try:
        return reader(path), reader is _read_xlsx
    except (ValueError, OSError, ImportError) as exc:
        raise InputError([Problem(Code.UNREADABLE, name, "", Message("unreadable_file", reason=str(exc)))]) from exc


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
    return sheet_frame(rows) if rows else pd.DataFrame()


def sheet_frame(rows: list[tuple[int, tuple]]) -> pd.DataFrame:
    """A sheet's (row number, values) rows as a frame: its first row the header, indexed by sheet row."""
    width = max(len(values) for _, values in rows)
    header = [*rows[0][1], *[None] * width][:width]
    columns = [f"column {get_column_letter(i + 1)}" if h is None else str(h) for i, h in enumerate(header)]
    body = [(*values, *[None] * (width - len(values))) for _, values in rows[1:]]
    index = pd.Index([number for number, _ in rows[1:]], name="row")
    return pd.DataFrame(body, columns=columns, index=index, dtype=object)
