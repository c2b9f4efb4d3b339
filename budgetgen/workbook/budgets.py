"""Budgets: per budget line (the whole plan, a cost center) and plan month the plan against the budget, OVER
flagged, as live formulas over Summary's and Monthly's months (budgetgen/plan/budgets.py is the Python view)."""

from __future__ import annotations

from ..core.i18n import word
from ..model import rules
from ..plan.engine import Plan
from .book import Book
from .layout import commit_adjustment, extras_cost, gpu_cost, month_buffer, shown
from .printing import print_setup

SHEET = "Budgets"
OVER_MONTHS = "BudgetOverMonths"  # months over budget, every line: Summary's budget line reads it
_WIDTHS = [22, 10, 16, 16, 16, 10]
NOTE = ("The whole plan's budget is held against each month's total (GPU, commitments, extras, buffer); a cost "
        "center's against the GPU cost of its tasks that month (Monthly). The budgets are inputs.")


def _planned(line, month: str) -> str:
    if line.budget.cost_center:
        center = line.budget.cost_center.replace('"', '""')   # a quote in the name, doubled inside the string
        return f'SUMPRODUCT(EXACT(TaskCostCenter,"{center}")*{gpu_cost(month)})'
    return rules.MONTH_TOTAL.formula(gpu=f"SUM({gpu_cost(month)})", commitments=commit_adjustment(month),
                                     extras=f"SUM({extras_cost(month)})", buffer=month_buffer(month))


def write_budgets(book: Book, ws, plan: Plan) -> None:
    """Row by row (the workbook is streamed): the note, the header, a block of months per budget line."""
    ws.write_string(0, 0, book.t("Budgets: the plan against the budget, month by month"), book.f.title)
    book.note_across(ws, 1, book.t(NOTE), _WIDTHS)
    book.header(ws, 3, ["cost center", "month", book.titled("plan", "currency"), book.titled("budget", "currency"),
                        book.titled("over budget by", "currency"), "over budget?"], _WIDTHS)
    r = 4
    for line in plan.budgets:
        label = line.budget.cost_center or book.t("the whole plan")
        for j, month in enumerate(plan.months):
            n = r + 1
            ws.write_string(r, 0, label)
            ws.write_string(r, 1, month)
            book.formula(ws, r, 2, _planned(line, month), line.planned[j], "money")
            book.value(ws, r, 3, line.budget.monthly_budget, "input", "money")
            book.formula(ws, r, 4, rules.OVER_BUDGET_BY.formula(planned=f"C{n}", budget=f"D{n}"), line.over_by[j],
                         "money")
            book.formula(ws, r, 5, shown(f'IF({rules.OVER_BUDGET.formula(planned=f"C{n}", budget=f"D{n}")},"OVER","ok")'),
                         word("OVER" if line.over[j] else "ok", book.lang), "text")
            r += 1
    if not plan.budgets:
        ws.write_string(r, 0, book.t("(no Budgets sheet in the input)"), book.f.note)
    last = max(r - 1, 4)
    book.formula(ws, last + 2, 5, rules.OVER_BUDGET_MONTHS.formula(planned=f"C5:C{last + 1}",
                                                                   budgets=f"D5:D{last + 1}"),
                 over_months(plan), "int")
    ws.write_string(last + 2, 0, book.t("months over budget"), book.f.bold)
    book.define(OVER_MONTHS, SHEET, last + 2, 5)
    ws.conditional_format(4, 5, last, 5, {"type": "formula", "criteria": "=$C5>$D5", "format": book.f.warn})
    ws.freeze_panes(4, 1)
    print_setup(ws, book.lang, _WIDTHS, last + 2, header_rows=(3, 3))


def write_budget_line(book: Book, ws, row: int, plan: Plan) -> None:
    """Summary's budget line: the months over budget (Budgets), next to the scenario selector."""
    ws.write_string(row, 3, book.t("months over budget (Budgets)"), book.f.bold)   # its text runs over E:F
    book.formula(ws, row, 6, OVER_MONTHS, over_months(plan), "int", "link")


def over_months(plan: Plan) -> int:
    """Months over budget over every budget line (rules.OVER_BUDGET_MONTHS)."""
    planned = [p for line in plan.budgets for p in line.planned]
    budgets = [line.budget.monthly_budget for line in plan.budgets for _ in line.planned]
    return rules.OVER_BUDGET_MONTHS(plan.inputs.settings, planned=planned, budgets=budgets)
