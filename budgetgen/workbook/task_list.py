"""TaskList: the tasks' key columns as links to Tasks by name, a view that prints readably on paper.

Tasks holds every input and calculated column (over fifty), too wide to print; a print area cannot pick
scattered columns, so the printable view is a sheet of its own that follows every edit on Tasks.
"""

from __future__ import annotations

from ..core.i18n import word
from ..core.schema import Value
from ..plan.engine import Plan
from .book import Book
from .layout import Table, shown, task_name
from .printing import ROW_PT, print_setup

SHEET = "TaskList"
# (key on Tasks, header, unit, number format, width)
_DESCRIPTION = ("task", "task", "", "wrap", 24)
COLUMNS = (("task_id", "task_id", "", "text", 10), _DESCRIPTION,
           ("kind", "kind", "", "text", 11), ("model", "model", "", "text", 14),
           ("params_used", "model size", "B params", "echo", 9),
           ("gpu", "gpu", "", "text", 12), ("tier", "tier", "", "text", 11), ("cards_held", "cards held", "cards", "int", 8),
           ("gpu_hours_per_month", "GPU-hours a month", "", "int", 11),
           ("monthly_cost", "cost a month", "currency/month", "money", 13),
           ("period_cost", "cost over the plan", "currency", "money", 14))
_CHARS_PER_WIDTH = 1.2   # characters of the links' type per unit of column width (measured on the printed page)
_WORDS = ("kind", "tier")   # enumerations shown in the workbook's language


def write_task_list(book: Book, ws, plan: Plan, table: Table) -> None:
    widths = [5] + [w for *_, w in COLUMNS]
    book.header(ws, 0, ["#", *(book.titled(title, unit) for _, title, unit, _, _ in COLUMNS)], widths)
    ws.set_row(0, 42)
    heights: dict[int, float] = {}
    for i, tp in enumerate(plan.tasks):
        r = table.first + i
        lines = _wrapped_lines(tp.task.values.get("task"), _CHARS_PER_WIDTH * _DESCRIPTION[-1])
        if lines > 1:   # a wrapped description gets the rows it needs (spreadsheets do not grow a written row)
            heights[r] = lines * ROW_PT
            ws.set_row(r, heights[r])
        ws.write_number(r, 0, i + 1)
        values = {**tp.task.values, **tp.row}
        for col, (key, _, _, fmt, _) in enumerate(COLUMNS, start=1):
            link = f"INDEX({task_name(key)},$A{r + 1})"
            value: Value = values.get(key)
            if key in _WORDS:
                formula, value = shown(link), word(value, book.lang)
            elif fmt in ("text", "wrap"):
                formula = f'IF({link}="","",{link})'
            else:
                formula = link
            book.formula(ws, r, col, formula, value, fmt, "link")
    ws.freeze_panes(1, 2)
    ws.autofilter(0, 0, table.last, len(COLUMNS))
    print_setup(ws, book.lang, widths, table.last, header_rows=(0, 0), heights=heights)


def _wrapped_lines(text, width: float) -> int:
    """Lines a description takes in a wrapped column `width` characters wide (words kept whole)."""
    lines, used = 1, 0
    for word_ in str(text or "").split():
        if used and used + 1 + len(word_) > width:
            lines, used = lines + 1, len(word_)
        else:
            used += len(word_) + (1 if used else 0)
    return lines
