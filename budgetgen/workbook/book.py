"""What every sheet writer needs of the workbook: formats, language, defined names and cell writers."""

from __future__ import annotations

from dataclasses import dataclass

from xlsxwriter.utility import xl_col_to_name
from xlsxwriter.worksheet import CellFormulaTuple

from ..i18n import tr
from .formats import Formats, cached

# Every function budgetgen writes; all exist in Excel 2010+, LibreOffice 7.4 and `formulas`, none needs
# xlsxwriter's `_xlfn.` future-function prefix (a test holds every generated formula to this list).
SAFE_FUNCTIONS = frozenset({"IF", "AND", "OR", "INDEX", "MATCH", "MIN", "MAX", "CEILING", "CHOOSE", "IFERROR",
                            "ISNUMBER", "SUM", "SUMIFS", "SUMPRODUCT", "ABS", "TRIM", "SEARCH", "EXACT",
                            "FLOOR", "POWER", "LOG", "SQRT", "MOD"})


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

    def titled(self, title: str, unit: str = "") -> str:
        """A header `title (unit)` in the workbook's language, `currency` in a unit as the plan's currency."""
        unit = self.t(unit).replace("currency", self.currency)
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
