"""Monthly: the task x month matrix of GPU cost, each month column a name (GpuCost_2026_07)."""

from __future__ import annotations

from collections.abc import Sequence

from xlsxwriter.utility import xl_col_to_name, xl_rowcol_to_cell

from ..model import rules
from ..plan.engine import Plan
from .book import Book
from .layout import GPU_COST_MATRIX, MONTHLY_TIER, MonthMatrix, demand_name, gpu_cost, task_name
from .printing import print_setup

SHEET = "Monthly"
LEAD_HEADERS = {"task_row": "task row #", "period_cost": "cost over the plan"}
PERIOD_COST, TASK_ID = "MonthlyPeriodCost", "MonthlyTaskId"  # the Tasks sheet's period_cost reads its row's total
_WIDTHS = [8, 10, 20, 10, 10, 12, 12, 12, 12]  # one page wide for a short plan, as before the plan total


def write_matrix_header(book: Book, ws, matrix: MonthMatrix, widths: Sequence[float]) -> None:
    """Row 0: the lead headers and every month; row 1: the month numbers (in that order: rows are streamed)."""
    book.header(ws, 0, [LEAD_HEADERS.get(k, k) for k in matrix.lead], widths)
    book.header(ws, 0, list(matrix.months), [13] * len(matrix.months), matrix.first_month_col)
    ws.write_string(1, 0, book.t("month #"), book.f.note)
    for j in range(len(matrix.months)):
        ws.write_number(1, matrix.first_month_col + j, j + 1, book.f.get("input", "int"))


def month_number(matrix: MonthMatrix, j: int) -> str:
    """The cell holding the number of the matrix's j-th month (0-based), row-absolute."""
    return xl_rowcol_to_cell(1, matrix.first_month_col + j, row_abs=True)


def name_month_columns(book: Book, sheet: str, matrix: MonthMatrix, name, whole: str) -> None:
    for j, month in enumerate(matrix.months):
        book.define_range(name(month), sheet, matrix.first, matrix.last, matrix.first_month_col + j)
    book.define_range(whole, sheet, matrix.first, matrix.last, matrix.first_month_col, matrix.last_col)


def write_monthly(book: Book, ws, plan: Plan, matrix: MonthMatrix) -> None:
    write_matrix_header(book, ws, matrix, _WIDTHS)
    cost_col = matrix.lead.index("monthly_cost")
    position_col = matrix.lead.index("task_row")
    total_col = matrix.lead.index("period_cost")
    first, last = xl_col_to_name(matrix.first_month_col), xl_col_to_name(matrix.last_col)
    for i, tp in enumerate(plan.tasks):
        r = matrix.first + i
        position = xl_rowcol_to_cell(r, position_col, col_abs=True)   # the task's row number on Tasks
        ws.write_number(r, position_col, i + 1)
        values = {**tp.task.values, **tp.row}
        for col, key in enumerate(matrix.lead):
            if col in (position_col, total_col):
                continue
            link = f"INDEX({task_name(key)},{position})"
            book.formula(ws, r, col, f'IF({link}="","",{link})', values.get(key),
                         "money" if key == "monthly_cost" else "text", "link")
        book.formula(ws, r, total_col, f"SUM({first}{r + 1}:{last}{r + 1})", tp.row["period_cost"], "money")
        cost = xl_rowcol_to_cell(r, cost_col, col_abs=True)
        gpu = xl_rowcol_to_cell(r, matrix.lead.index("gpu"), col_abs=True)
        for j, month in enumerate(matrix.months):
            book.formula(ws, r, matrix.first_month_col + j, rules.MONTH_COST.formula(
                per_card_month=f"INDEX(DemandPerCardMonth,{position})=1", cost=cost,
                billed=f"INDEX({demand_name('cards_billed', month)},{position})",
                cards_billed=f"INDEX({task_name('cards_billed')},{position})",
                hours=f"INDEX({demand_name('gpu_hours', month)},{position})",
                hours_row=f"INDEX({task_name('gpu_hours_per_month')},{position})",
                price=f"INDEX(DemandPriceScale,{position})*" + rules.PRICE_TREND.formula(
                    change=f"INDEX(GpuPriceChange,MATCH({gpu},GpuName,0))", month=month_number(matrix, j))),
                tp.cost_in(j + 1), "money")
    name_month_columns(book, SHEET, matrix, gpu_cost, GPU_COST_MATRIX)
    book.define_range(PERIOD_COST, SHEET, matrix.first, matrix.last, total_col)
    book.define_range(TASK_ID, SHEET, matrix.first, matrix.last, matrix.lead.index("task_id"))
    book.define_range(MONTHLY_TIER, SHEET, matrix.first, matrix.last, matrix.lead.index("tier"))
    ws.freeze_panes(2, 3)
    print_setup(ws, book.lang, _WIDTHS + [13] * len(matrix.months), matrix.last, header_rows=(0, 1),
                repeat_cols=(0, 2))
    ws.autofilter(0, 0, matrix.last, matrix.last_col)
