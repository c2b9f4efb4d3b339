"""Extras: the non-GPU lines x month matrix, each month column a name (ExtrasCost_2026_07)."""

from __future__ import annotations

from ..core.schema import EXTRA_CATEGORIES
from ..plan.engine import Plan
from .book import Book
from .layout import EXTRAS_CATEGORY, EXTRAS_COST_MATRIX, MonthMatrix, extras_cost
from .monthly import month_number, name_month_columns, write_matrix_header
from .printing import print_setup

SHEET = "Extras"
_WIDTHS = [28, 12, 14, 12, 12, 8, 8]


def write_extras(book: Book, ws, plan: Plan, matrix: MonthMatrix) -> None:
    write_matrix_header(book, ws, matrix, _WIDTHS)
    months = list(matrix.months)
    for i, e in enumerate(plan.inputs.extras):
        r = matrix.first + i
        n = r + 1
        for col, (value, fmt) in enumerate(((e.item, "text"), (e.category, "text"), (e.monthly_cost, "money"),
                                            (e.start_month, "text"), (e.end_month, "text"))):
            book.value(ws, r, col, value, "input", fmt)
        book.formula(ws, r, 5, f"MATCH(D{n},PlanMonths,0)", months.index(e.start_month) + 1, "int")
        book.formula(ws, r, 6, f"MATCH(E{n},PlanMonths,0)", months.index(e.end_month) + 1, "int")
        for j, month in enumerate(months):
            k = month_number(matrix, j)
            book.formula(ws, r, matrix.first_month_col + j, f"IF(AND({k}>=$F{n},{k}<=$G{n}),$C{n},0)",
                         plan.extras_by_month[month][i], "money")
    name_month_columns(book, SHEET, matrix, extras_cost, EXTRAS_COST_MATRIX)
    book.define_range(EXTRAS_CATEGORY, SHEET, matrix.first, matrix.last, 1)   # Recon sums the Extras by category
    book.dropdown(ws, matrix.first, matrix.last, 1, "category", EXTRA_CATEGORIES)
    ws.freeze_panes(2, 1)
    print_setup(ws, book.lang, _WIDTHS + [13] * len(months), matrix.last, header_rows=(0, 1), repeat_cols=(0, 0))
