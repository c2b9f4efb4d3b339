"""What every sheet writer needs of the workbook: formats, language, defined names and cell writers."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from xlsxwriter.utility import xl_cell_to_rowcol, xl_col_to_name, xl_rowcol_to_cell
from xlsxwriter.workbook import Workbook
from xlsxwriter.worksheet import Worksheet

from ..core.errors import CellWriteError
from ..core.i18n import name, tr, word
from ..io.safefile import EXCEL_MAX_ROWS
from .formats import Formats, cached
from .xlsx_private import (
    RowCells,
    StreamedSheet,
    escape_control_characters,
    extend_dimensions,
    formula_cell,
    place_cell,
    preserve_whitespace,
    row_written_out,
    style_index,
    utf16_len,
    writes_rows_in_order,
)

# Every function budgetgen writes; all exist in Excel 2010+, LibreOffice 7.4 and `formulas`, none needs
# xlsxwriter's `_xlfn.` future-function prefix (a test holds every generated formula to this list).
SAFE_FUNCTIONS = frozenset({"IF", "AND", "OR", "INDEX", "MATCH", "MIN", "MAX", "CEILING", "CHOOSE", "IFERROR",
                            "ISNUMBER", "SUM", "SUMIFS", "SUMPRODUCT", "ABS", "TRIM", "SEARCH", "EXACT",
                            "ROUND", "ROUNDDOWN", "N", "DATE", "DAY", "MONTH", "YEAR", "SUBSTITUTE",
                            "FLOOR", "INT", "POWER", "LOG", "SQRT", "MOD", "FIXED", "PMT", "MEDIAN", "COUNT"})

XLS_STRMAX = 32_767  # UTF-16 units of text a cell holds; xlsxwriter cuts longer strings (and returns -2)
EXCEL_MAX_COLS = 16_384
# The cached values xlsxwriter writes as errors (t="e") rather than as text.
ERROR_VALUES = frozenset(("#DIV/0!", "#N/A", "#NAME?", "#NULL!", "#NUM!", "#REF!", "#VALUE!"))

# The worksheet methods that return a code, negative when xlsxwriter refuses, cuts or drops what was asked
# (after a warning at most): a Sheet raises CellWriteError on each instead.
CHECKED_METHODS = ("write", "write_string", "write_number", "write_blank", "write_boolean", "write_formula",
                   "write_array_formula", "write_dynamic_array_formula", "write_datetime", "write_url",
                   "write_rich_string", "write_row", "write_column", "write_comment", "merge_range",
                   "data_validation", "conditional_format", "autofilter", "insert_chart", "insert_image",
                   "insert_textbox", "add_table", "add_sparkline", "print_area", "set_row", "set_column")
_TEXT_METHODS = frozenset({"write", "write_string", "write_rich_string", "write_row", "write_column",
                           "merge_range"})


def refused(ws, method: str, code: int, row: int, col: int, cell: str | None = None) -> CellWriteError:
    """The error for a write xlsxwriter answered with a negative `code` at row, col (0-based) of `ws`."""
    inside = 0 <= row < EXCEL_MAX_ROWS and 0 <= col < EXCEL_MAX_COLS
    if cell is None:
        cell = xl_rowcol_to_cell(row, col) if inside else f"row {row + 1:,}, column {col + 1:,}"
    if not inside:
        reason = f"outside the sheet (Excel has {EXCEL_MAX_ROWS:,} rows and {EXCEL_MAX_COLS:,} columns)"
    elif row_written_out(ws, row):
        reason = "its row was already written out (a constant_memory sheet is written row by row, in order)"
    elif code == -2 and method in _TEXT_METHODS:
        reason = f"a text longer than the {XLS_STRMAX:,} characters a cell holds, which xlsxwriter cuts"
    else:
        reason = "xlsxwriter refused it (a warning may say why)"
    return CellWriteError(ws.name, cell, method, code, reason)


def _position(method: str, args: tuple) -> tuple[int, int, str | None]:
    """Row, column (0-based) and, when given so, the A1 text of where a worksheet method was asked to write."""
    if not args:
        return 0, 0, "?"
    first = args[0]
    if method == "set_row":
        return first, 0, f"row {first + 1:,}"
    if method == "set_column":
        return 0, first, None if isinstance(first, str) else f"column {first + 1:,}"
    if isinstance(first, str):  # A1 notation: a cell or a range
        row, col = xl_cell_to_rowcol(first.split(":")[0])
        return row, col, first
    return first, args[1] if len(args) > 1 else 0, None


def _checked(method):
    """`method` of a worksheet, raising CellWriteError where xlsxwriter returns a negative code."""
    @functools.wraps(method)
    def write(self, *args, **kwargs):
        code = method(self, *args, **kwargs)
        if code.__class__ is int and code < 0:
            raise refused(self, method.__name__, code, *_position(method.__name__, args))
        return code
    return write


class Sheet(StreamedSheet):
    """xlsxwriter's worksheet with every write checked: a cell xlsxwriter refuses, cuts or drops (its write_*
    returns a negative code and goes on) raises CellWriteError naming the sheet and the cell. Every sheet
    budgetgen writes is one (`wb.add_worksheet(name, Sheet)`)."""


for _name in CHECKED_METHODS:
    setattr(Sheet, _name, _checked(getattr(Worksheet, _name)))
_checked_set_column, _checked_set_row = Sheet.set_column, Sheet.set_row


def _set_column(self, first_col, last_col, width=None, *args, **kwargs):
    """Sheet.set_column, the widths kept (`column_widths`, in characters) for the headers that fit them."""
    code = _checked_set_column(self, first_col, last_col, width, *args, **kwargs)
    if width is not None and isinstance(first_col, int):
        widths = self.__dict__.setdefault("column_widths", {})
        widths.update(dict.fromkeys(range(first_col, last_col + 1), width))
    return code


def _set_row(self, row, height=None, *args, **kwargs):
    """Sheet.set_row, never lower than the height a header row's texts need (`least_heights`, Book.header)."""
    if height is not None:
        height = max(height, self.__dict__.get("least_heights", {}).get(row, 0))
    return _checked_set_row(self, row, height, *args, **kwargs)


Sheet.set_column, Sheet.set_row = _set_column, _set_row
DEFAULT_WIDTH = 8.43  # a column's width in characters where none was set
LINE_PT = 13.5  # a line of wrapped text (a header's bold one too), with its share of the cell's padding
HEADER_SLACK = 0.9  # a header's letter against the width of a column's digit (letters are narrower; bold wider)


def text_columns(text: str) -> int:
    """How many characters of a column's width `text` takes: a CJK character two."""
    return sum(2 if ord(c) >= 0x2E80 else 1 for c in text)


def header_lines(text: str, width: float) -> int:
    """How many lines `text` takes in a header cell `width` characters wide, wrapped as spreadsheets wrap it: after
    a space or a `-` (a CJK character is a word of its own, twice as wide), each character HEADER_SLACK wide;
    a word wider than the column breaks where it must. Over-estimates rather than under (a taller header is only
    taller; a lower one hides its unit)."""
    lines, used = 1, 0.0
    for word_, space in re.findall(r"([\u2e80-\uffff]|[^\s\u2e80-\uffff-]*-?)(\s*)", text):
        if not word_:
            continue
        size = HEADER_SLACK * text_columns(word_)
        if used and used + size > width:
            lines, used = lines + 1, 0.0
        used += size
        while used > width:   # a word wider than the column breaks where it must
            lines, used = lines + 1, used - width
        used += HEADER_SLACK * len(space)
    return lines


def store_formula(ws, row: int, col: int, formula: str, cell_format, value) -> None:
    """Store one of budgetgen's formulas (written without `=`) with its cached value, checked as a Sheet's writes
    are. Not write_formula: see xlsx_private (its regular-expression rewriting dominated a large build)."""
    code = place_cell(ws, row, col, formula_cell(formula, cell_format, value))
    if code:
        raise refused(ws, "store_formula", code, row, col)


def _xml_text(text: str) -> str:
    """Text escaped for an XML element the way xlsxwriter escapes a formula and its cached text."""
    if "&" in text or "<" in text or ">" in text:
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text


BlockColumn = tuple[int, str, str | None, Any]  # ColumnBlock's column: column, key, formula or None, format


class ColumnBlock:
    """Adjacent columns of a table sheet (the Tasks and Candidates sheets), each a value or one formula down every
    row, written a whole row at a time. Only for a workbook in constant_memory mode, as budgetgen writes them.

    Each cell comes out exactly as xlsxwriter writes it (`write_string`, `write_number`, `write_boolean`,
    `write_blank` with a format, `store_formula`), byte for byte, but a row of cells costs one string join
    instead of, per cell, a named tuple, a dimension check, an attribute list, the escaping of a formula
    thousands of characters long and a file write: with 150,000 Candidates rows of 39 cells each that per-cell
    work was most of the build. Each column's formula is escaped once and split where its row number goes; a
    cell's format index is looked up when the first row is written, the moment xlsxwriter looks it up, so the
    styles are numbered as before. The row table and the escaping are xlsxwriter's private API (xlsx_private).
    A row that cannot be written (outside the sheet, written out already, a text too long) raises CellWriteError.
    """

    def __init__(self, columns: Sequence[BlockColumn]):
        """`columns`: (column, key of its value, formula without `=` and with `{r}` for the 1-based row (`{p}` for
        the row above) or None for a value column, format), in column order. A formula column caches the value (the engine's result)."""
        cols = [col for col, _, _, _ in columns]
        if cols != list(range(cols[0], cols[0] + len(cols))):
            raise ValueError(f"block columns must be adjacent: {cols}")
        self.first, self.last = cols[0], cols[-1]
        self.keys = [key for _, key, _, _ in columns]
        self._heads = [f'<c r="{xl_col_to_name(col)}' for col in cols]
        # a formula's text split where its row number goes; one reading the row above (`{p}`) kept whole
        self._formulas = [None if formula is None else _xml_text(formula) if "{p}" in formula else
                          _xml_text(formula).split("{r}") for _, _, formula, _ in columns]
        self._formats = [fmt for _, _, _, fmt in columns]
        self._styles: list[str] | None = None
        self._sheet = ""

    def store(self, ws, row: int, values: Mapping) -> None:
        """Row `row` (0-based) of every column, `values[key]` in each cell (a formula's cached value)."""
        if not writes_rows_in_order(ws):
            raise ValueError("a ColumnBlock writes rows of a constant_memory workbook only")
        self._sheet = ws.name
        code = extend_dimensions(ws, row, self.last)
        if code:
            raise refused(ws, "ColumnBlock.store", code, row, self.last)
        code = place_cell(ws, row, self.first, RowCells(self, row, [values[key] for key in self.keys]))
        if code:
            raise refused(ws, "ColumnBlock.store", code, row, self.first)

    def render(self, row: int, values: list) -> str:
        """The XML of the row's cells, as xlsxwriter writes them."""
        if self._styles is None:
            self._styles = [f'" s="{style_index(fmt)}"' for fmt in self._formats]
        number = str(row + 1)
        out = []
        for head, style, formula, value in zip(self._heads, self._styles, self._formulas, values, strict=True):
            if formula is not None:
                if formula.__class__ is str:   # reads the row above
                    formula = [formula.replace("{r}", number).replace("{p}", str(row))]
                kind = value.__class__
                if kind is int or (kind is float and math.isfinite(value)):  # most cells: a number, no type
                    out.append(f"{head}{number}{style}><f>{number.join(formula)}</f><v>{value}</v></c>")
                else:
                    out.append(_formula_cell(head + number + style, number.join(formula), cached(value)))
            elif value is None or value == "":
                out.append(f"{head}{number}{style}/>")
            elif isinstance(value, str):
                if len(value) > XLS_STRMAX // 2 and utf16_len(value) > XLS_STRMAX:  # xlsxwriter would cut it
                    cell = head.removeprefix('<c r="') + number
                    raise CellWriteError(self._sheet, cell, "ColumnBlock.store", -2,
                                         f"a text longer than the {XLS_STRMAX:,} characters a cell holds")
                out.append(_string_cell(head + number + style, value))
            elif isinstance(value, bool):
                out.append(f'{head}{number}{style} t="b"><v>{int(value)}</v></c>')
            elif value.__class__ in (int, float) and math.isfinite(value):
                out.append(f"{head}{number}{style}><v>{value:.16G}</v></c>")
            else:
                raise TypeError(f"not a value xlsxwriter writes to a cell: {value!r}")  # as write_number: no NaN
        return "".join(out)


def _formula_cell(start: str, formula: str, value) -> str:
    """`<c` with its reference and style, then as xlsxwriter writes a formula (escaped) with its cached value."""
    kind = value.__class__
    if kind is float or kind is int:
        return f"{start}><f>{formula}</f><v>{value}</v></c>"
    if isinstance(value, bool):
        return f'{start} t="b"><f>{formula}</f><v>{int(value)}</v></c>'
    if isinstance(value, str):
        kind = "" if value == "" else ' t="e"' if value in ERROR_VALUES else ' t="str"'
        return f"{start}{kind}><f>{formula}</f><v>{_xml_text(value)}</v></c>"
    return f"{start}><f>{formula}</f><v>{value}</v></c>"


def _string_cell(start: str, text: str) -> str:
    """`<c` with its reference and style, then as xlsxwriter writes an in-line string (no longer than a cell
    holds) in constant_memory mode."""
    text = escape_control_characters(text)
    if text.startswith("<r>") and text.endswith("</r>"):
        return f'{start} t="inlineStr"><is>{text}</is></c>'
    space = ' xml:space="preserve"' if preserve_whitespace(text) else ""
    return f'{start} t="inlineStr"><is><t{space}>{_xml_text(text)}</t></is></c>'


def column_range(sheet: str, first_row: int, last_row: int, first_col: int, last_col: int | None = None) -> str:
    """An absolute reference to a block of `sheet` (0-based rows and columns), as a defined name holds it."""
    a, b = xl_col_to_name(first_col), xl_col_to_name(first_col if last_col is None else last_col)
    return f"='{sheet}'!${a}${first_row + 1}:${b}${max(last_row, first_row) + 1}"


def wrapped_lines(text: str, width: float, slack: float = 1.0) -> int:
    """How many lines `text` takes wrapped in a cell `width` characters wide (`slack` times its characters for a
    printer's wider font); CJK characters are twice as wide."""
    return max(1, math.ceil(text_columns(text) * slack / width))


@dataclass(frozen=True)
class Book:
    """The open workbook, its formats and its language, as each sheet writer receives them."""

    wb: Workbook
    f: Formats
    lang: str
    currency: str

    def t(self, text: str) -> str:
        """A visible text in the workbook's language."""
        return tr(text, self.lang)

    def unit(self, unit: str) -> str:
        """A unit in the workbook's language, `currency` in it as the plan's currency."""
        return re.sub(r"^currency\b", lambda _: self.currency, self.t(unit))

    def titled(self, title: str, unit: str = "") -> str:
        """A header `title (unit)` in the workbook's language, `currency` in a unit as the plan's currency."""
        unit = self.unit(unit)
        return f"{self.t(title)} ({unit})" if unit else self.t(title)

    def define(self, name: str, sheet: str, row: int, col: int) -> None:
        """A workbook-scoped name for one cell."""
        self.wb.define_name(name, f"='{sheet}'!${xl_col_to_name(col)}${row + 1}")

    def define_range(self, name: str, sheet: str, first_row: int, last_row: int, first_col: int,
                     last_col: int | None = None) -> None:
        """A workbook-scoped name for a column (or a block) of `sheet`."""
        self.wb.define_name(name, column_range(sheet, first_row, last_row, first_col, last_col))

    def header(self, ws, row: int, headers: list[str], widths: Sequence[float] | None = None, first_col: int = 0) -> None:
        """A table's header row; its row as tall as its longest text needs wrapped in its column (a header cut to
        its first two lines hid the unit: `commitment rate (USD/card-`)."""
        texts = [self.t(text) for text in headers]
        for i, text in enumerate(texts):
            ws.write_string(row, first_col + i, text, self.f.header)
            if widths:
                ws.set_column(first_col + i, first_col + i, widths[i])
        self.fit_header(ws, row, {first_col + i: text for i, text in enumerate(texts)})

    @staticmethod
    def fit_header(ws, row: int, texts: Mapping[int, str]) -> None:
        """Make header row `row` tall enough for each text ({column: text}) wrapped in its column (as wide as set
        so far), and never lower later (Sheet.set_row)."""
        known = getattr(ws, "column_widths", {})
        lines = max((header_lines(text, known.get(col, DEFAULT_WIDTH)) for col, text in texts.items() if text),
                    default=1)
        least = ws.__dict__.setdefault("least_heights", {})
        least[row] = max(least.get(row, 0.0), LINE_PT * lines if lines > 1 else 0.0)
        if least[row]:
            ws.set_row(row, least[row])

    def wrapped(self, ws, row: int, col: int, text: str, width: float) -> None:
        """A long text wrapped in a column `width` characters wide, its row made tall enough to show it all
        (spreadsheets do not grow a row written with a height of its own, and a streamed row has one)."""
        ws.write_string(row, col, text, self.f.wrap)
        self.fit_height(ws, row, text, width)

    def note_across(self, ws, row: int, text: str, widths: Sequence[float]) -> None:
        """A sheet's note wrapped across the columns of `widths` (characters each, from column A), its row tall enough
        for it: one long line ran past the printed page."""
        ws.merge_range(row, 0, row, len(widths) - 1, text, self.f.note_wrap)
        self.fit_height(ws, row, text, sum(widths), slack=1.2)

    def wrapped_row(self, ws, row: int, cells: list[tuple[int, str, float]]) -> None:
        """Texts wrapped in their columns, (column, text, the column's width in characters) each, the row made tall
        enough for the one that takes the most lines."""
        for col, text, _ in cells:
            ws.write_string(row, col, text, self.f.wrap)
        _, text, width = max(cells, key=lambda c: wrapped_lines(c[1], c[2]))
        self.fit_height(ws, row, text, width)

    @staticmethod
    def fit_height(ws, row: int, text: str, width: float, slack: float = 1.0) -> float:
        """Make row `row` tall enough to show `text` wrapped in cells `width` characters wide, `slack` times the
        characters for a printer's wider font; its height in points."""
        lines = wrapped_lines(text, width, slack)
        if lines > 1:
            ws.set_row(row, LINE_PT * lines)
        return LINE_PT * lines if lines > 1 else 15.0

    def dropdown(self, ws, first: int, last: int, col: int, key: str, source) -> None:
        """A list on the input cells rows first..last of `col`: the enumeration `source` (a tuple of keys,
        each explained in the workbook's language) or a range name (`=GpuName`). Other values are refused."""
        message = "" if isinstance(source, str) else ", ".join(
            f"{c} = {word(c, self.lang)}" for c in source if word(c, self.lang) != c)
        ws.data_validation(first, col, last, col, {
            "validate": "list", "source": source if isinstance(source, str) else list(source), "ignore_blank": True,
            "error_type": "stop", "error_title": self.t("Not on the list"), "error_message": self.t(
                "Choose from the list: formulas compare these values (gpu: a name on the GPUs sheet; model: on the Models "
                "sheet)."),
            **({"input_title": name(key, self.lang), "input_message": message[:255]} if message else {})})

    def value(self, ws, row: int, col: int, value, role: str, fmt: str) -> None:
        fmt_obj = self.f.get(role, fmt)
        if value is None or value == "":
            ws.write_blank(row, col, None, fmt_obj)
        elif isinstance(value, str):
            ws.write_string(row, col, value, fmt_obj)
        elif isinstance(value, bool):
            ws.write_boolean(row, col, value, fmt_obj)
        else:
            ws.write_number(row, col, value, fmt_obj)

    def formula(self, ws, row: int, col: int, formula: str, value, fmt: str = "number", role: str = "calc") -> None:
        """A formula (without `=`) with the engine's value cached.

        A formula answering TRUE or FALSE is shown through the `bool` number format rather than General:
        LibreOffice gives a General formula cell the format of its result type when it first computes it, and
        when that happens while a page is being printed (a conditional format reading the cell) it changes the
        cell's attributes under the printer, which aborts a PDF export with a default profile."""
        if isinstance(value, bool) and self.f.num.get(fmt, fmt) == "General":
            fmt = "bool"
        store_formula(ws, row, col, formula, self.f.get(role, fmt), cached(value))
