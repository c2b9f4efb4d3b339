"""What every sheet writer needs of the workbook: formats, language, defined names and cell writers."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from xlsxwriter.utility import _preserve_whitespace, _utf16_len, _utf16_truncate, xl_col_to_name
from xlsxwriter.worksheet import CellFormulaTuple, Worksheet
from xlsxwriter.xmlwriter import XMLwriter

from ..i18n import name, tr, word
from .formats import Formats, cached

# Every function budgetgen writes; all exist in Excel 2010+, LibreOffice 7.4 and `formulas`, none needs
# xlsxwriter's `_xlfn.` future-function prefix (a test holds every generated formula to this list).
SAFE_FUNCTIONS = frozenset({"IF", "AND", "OR", "INDEX", "MATCH", "MIN", "MAX", "CEILING", "CHOOSE", "IFERROR",
                            "ISNUMBER", "SUM", "SUMIFS", "SUMPRODUCT", "ABS", "TRIM", "SEARCH", "EXACT",
                            "ROUND", "ROUNDDOWN", "N", "DATE", "DAY", "MONTH", "YEAR", "SUBSTITUTE",
                            "FLOOR", "POWER", "LOG", "SQRT", "MOD", "FIXED"})


def store_formula(ws, row: int, col: int, formula: str, cell_format, value) -> None:
    """Store one of budgetgen's formulas (written without `=`) with its cached value.

    Private xlsxwriter API, on purpose: the public write_formula runs some 40 regular expressions over
    every formula (dynamic-array and future-function prefixes) that budgetgen's formulas never need
    (SAFE_FUNCTIONS), and on the Tasks and Candidates sheets of a large inventory (millions of formulas)
    that rewriting dominated the build time. xlsxwriter is pinned below 4 in setup.cfg for this call.
    """
    if ws.constant_memory and row > ws.previous_row:
        ws._write_single_row(row)
    ws._check_dimensions(row, col)
    ws.table[row][col] = CellFormulaTuple(formula, cell_format, value)


XLS_STRMAX = 32_767  # UTF-16 units of text a cell holds; xlsxwriter truncates longer strings
# The cached values xlsxwriter writes as errors (t="e") rather than as text.
ERROR_VALUES = frozenset(("#DIV/0!", "#N/A", "#NAME?", "#NULL!", "#NUM!", "#REF!", "#VALUE!"))


def _xml_text(text: str) -> str:
    """Text escaped for an XML element the way xlsxwriter escapes a formula and its cached text."""
    if "&" in text or "<" in text or ">" in text:
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text


class BlockRow(NamedTuple):
    """One row of a ColumnBlock, kept in xlsxwriter's row table (at the block's first column) until the row is
    written out."""

    block: ColumnBlock
    row: int
    values: list


class Sheet(Worksheet):
    """xlsxwriter's worksheet, which also writes a BlockRow as the cells of its block's columns."""

    def _write_cell(self, row, col, cell) -> None:
        if cell.__class__ is BlockRow:
            self.fh.write(cell.block.render(cell.row, cell.values))
        else:
            super()._write_cell(row, col, cell)


class ColumnBlock:
    """Adjacent columns of a table sheet (the Tasks and Candidates sheets), each a value or one formula down every
    row, written a whole row at a time. Only for a workbook in constant_memory mode, as budgetgen writes them.

    Each cell comes out exactly as xlsxwriter writes it (`write_string`, `write_number`, `write_boolean`,
    `write_blank` with a format, `store_formula`), byte for byte, but a row of cells costs one string join
    instead of, per cell, a named tuple, a dimension check, an attribute list, the escaping of a formula
    thousands of characters long and a file write: with 150,000 Candidates rows of 39 cells each that per-cell
    work was most of the build. Each column's formula is escaped once and split where its row number goes; a
    cell's format index is looked up when the first row is written, the moment xlsxwriter looks it up, so the
    styles are numbered as before. Private xlsxwriter API (the row table, `_write_cell` in `Sheet`, its text
    escaping), like `store_formula`; xlsxwriter is pinned below 4 in setup.cfg.
    """

    def __init__(self, columns: Sequence[tuple[int, str, str | None, object]]):
        """`columns`: (column, key of its value, formula without `=` and with `{r}` for the 1-based row or None
        for a value column, format), in column order. A formula column caches the value (the engine's result)."""
        cols = [col for col, _, _, _ in columns]
        if cols != list(range(cols[0], cols[0] + len(cols))):
            raise ValueError(f"block columns must be adjacent: {cols}")
        self.first, self.last = cols[0], cols[-1]
        self.keys = [key for _, key, _, _ in columns]
        self._heads = [f'<c r="{xl_col_to_name(col)}' for col in cols]
        self._formulas = [None if formula is None else _xml_text(formula).split("{r}") for _, _, formula, _ in columns]
        self._formats = [fmt for _, _, _, fmt in columns]
        self._styles: list[str] | None = None

    def store(self, ws, row: int, values: Mapping) -> None:
        """Row `row` (0-based) of every column, `values[key]` in each cell (a formula's cached value)."""
        if not ws.constant_memory:
            raise ValueError("a ColumnBlock writes rows of a constant_memory workbook only")
        if row > ws.previous_row:
            ws._write_single_row(row)
        ws._check_dimensions(row, self.first)
        ws._check_dimensions(row, self.last)
        ws.table[row][self.first] = BlockRow(self, row, [values[key] for key in self.keys])

    def render(self, row: int, values: list) -> str:
        """The XML of the row's cells, as xlsxwriter writes them."""
        if self._styles is None:
            self._styles = [f'" s="{fmt._get_xf_index()}"' for fmt in self._formats]
        number = str(row + 1)
        out = []
        for head, style, formula, value in zip(self._heads, self._styles, self._formulas, values, strict=True):
            if formula is not None:
                kind = value.__class__
                if kind is int or (kind is float and math.isfinite(value)):  # most cells: a number, no type
                    out.append(f"{head}{number}{style}><f>{number.join(formula)}</f><v>{value}</v></c>")
                else:
                    out.append(_formula_cell(head + number + style, number.join(formula), cached(value)))
            elif value is None or value == "":
                out.append(f"{head}{number}{style}/>")
            elif isinstance(value, str):
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
    """`<c` with its reference and style, then as xlsxwriter writes an in-line string in constant_memory mode."""
    if len(text) > XLS_STRMAX // 2 and _utf16_len(text) > XLS_STRMAX:
        text = _utf16_truncate(text, XLS_STRMAX)
    text = XMLwriter._escape_control_characters(text)
    if text.startswith("<r>") and text.endswith("</r>"):
        return f'{start} t="inlineStr"><is>{text}</is></c>'
    space = ' xml:space="preserve"' if _preserve_whitespace(text) else ""
    return f'{start} t="inlineStr"><is><t{space}>{_xml_text(text)}</t></is></c>'


def column_range(sheet: str, first_row: int, last_row: int, first_col: int, last_col: int | None = None) -> str:
    """An absolute reference to a block of `sheet` (0-based rows and columns), as a defined name holds it."""
    a, b = xl_col_to_name(first_col), xl_col_to_name(first_col if last_col is None else last_col)
    return f"='{sheet}'!${a}${first_row + 1}:${b}${max(last_row, first_row) + 1}"


@dataclass(frozen=True)
class Book:
    """The open workbook, its formats and its language, as each sheet writer receives them."""

    wb: object
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

    def header(self, ws, row: int, headers: list[str], widths: list[float] | None = None, first_col: int = 0) -> None:
        for i, text in enumerate(headers):
            ws.write_string(row, first_col + i, self.t(text), self.f.header)
            if widths:
                ws.set_column(first_col + i, first_col + i, widths[i])

    def wrapped(self, ws, row: int, col: int, text: str, width: float) -> None:
        """A long text wrapped in a column `width` characters wide, its row made tall enough to show it all
        (spreadsheets do not grow a row written with a height of its own, and a streamed row has one)."""
        ws.write_string(row, col, text, self.f.wrap)
        chars = sum(2 if ord(c) >= 0x2E80 else 1 for c in text)   # CJK characters are twice as wide
        lines = math.ceil(chars / width)
        if lines > 1:
            ws.set_row(row, 13.5 * lines)

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
        """A formula (without `=`) with the engine's value cached."""
        store_formula(ws, row, col, formula, self.f.get(role, fmt), cached(value))
