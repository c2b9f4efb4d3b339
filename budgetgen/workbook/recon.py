"""One `Recon YYYY-MM` tab per billed month: plan versus bill versus usage, flags and next month's actions.

Every rule of the tab (variance, status, flags, actions, saving, totals) is declared once in
`budgetgen.recon.rules` with its Excel and Python views; this module only says which cells fill each
rule's placeholders and caches the Python view's value.
"""

from __future__ import annotations

import math

from ..recon import rules as R
from .book import Book
from .checks import Check
from .layout import ReconLayout, gpu_cost, month_buffer, recon_billed_input, recon_billed_total


def recon_check(at: ReconLayout, billed_input: float, billed_total: float) -> Check:
    """The Checks row of one month: the tab's billed total equals the BilledCost of the month's input lines."""
    return Check(f"{at.sheet}: billed total = BilledCost of the month", recon_billed_total(at.month),
                 recon_billed_input(at.month), billed_total, billed_input)


def write_recon(book: Book, ws, plan, mr, at: ReconLayout, billed_input: float) -> None:
    ws.set_column(0, 0, 22)
    ws.set_column(1, 11, 14)
    ws.set_column(10, 10, 60)
    ws.write_string(0, 0, f"{book.t('Reconciliation')} {at.month}: {book.t('plan versus bill versus usage')} "
                          f"({book.currency})", book.f.title)
    _tasks(book, ws, plan, mr, at)
    _resources(book, ws, mr, at, _limits(book, plan))
    _totals(book, ws, mr, at, billed_input, at.month in plan.months)
    ws.freeze_panes(1, 0)


def _tasks(book: Book, ws, plan, mr, at: ReconLayout) -> None:
    book.header(ws, at.task_header, ["task", "planned", "billed", "variance", "variance %", "status"])
    planned_tasks = {tp.task.task_id for tp in plan.tasks}
    limits = _limits(book, plan)
    for i, t in enumerate(mr.tasks):
        row = at.task_first + i
        n = row + 1
        ws.write_string(row, 0, t.task_id)
        if t.task_id in planned_tasks and at.month in plan.months:
            book.formula(ws, row, 1, f"INDEX({gpu_cost(at.month)},MATCH($A{n},TaskId,0))", t.planned, "money", "link")
        else:
            book.value(ws, row, 1, t.planned, "input", "money")
        book.value(ws, row, 2, t.billed, "input", "money")
        cells = {"planned": f"B{n}", "billed": f"C{n}", "variance": f"D{n}"}
        book.formula(ws, row, 3, R.VARIANCE.formula(cells), t.variance, "money")
        book.formula(ws, row, 4, R.VARIANCE_PCT.formula(cells), t.variance_pct, "percent")
        book.formula(ws, row, 5, R.STATUS.formula(cells), t.status(limits), "text")
    if mr.tasks:
        chart = book.wb.add_chart({"type": "column"})
        for col, label in ((1, "planned"), (2, "billed")):
            chart.add_series({"name": book.t(label), "categories": [ws.name, at.task_first, 0, at.task_last, 0],
                              "values": [ws.name, at.task_first, col, at.task_last, col]})
        chart.set_title({"name": book.t("Plan versus bill by task")})
        ws.insert_chart(1, 13, chart)


def _limits(book: Book, plan) -> R.Limits:
    """The rules' settings, with the action sentences in the workbook's language."""
    s = plan.inputs.settings
    return R.Limits(s.low_util_threshold, s.oom_threshold, s.variance_tolerance,
                    {r.key: book.t(r.action) for r in R.FLAG_RULES})


def _resources(book: Book, ws, mr, at: ReconLayout, limits: R.Limits) -> None:
    book.header(ws, at.resource_header, ["resource", "task", "services", "lines", "billed", "hours", "avg util %",
                                         "peak memory share", "OOM events", "flags", "action next month",
                                         "saving if acted on"])
    t0, t1 = at.task_first + 1, at.task_last + 1
    for i, res in enumerate(mr.resources):
        row = at.resource_first + i
        n = row + 1
        ws.write_string(row, 0, res.resource_id or "")
        ws.write_string(row, 1, res.task_id or "")
        ws.write_string(row, 2, ", ".join(res.services))
        ws.write_number(row, 3, res.lines)
        book.value(ws, row, 4, res.billed, "input", "money")
        for col, value, fmt in ((5, res.hours, "number"), (6, res.avg_util_pct, "number"),
                                (7, res.mem_peak_share, "percent"), (8, res.oom_events, "int")):
            book.value(ws, row, col, None if value is None or math.isnan(value) else value, "input", fmt)
        cells = {"task": f"B{n}", "billed": f"E{n}", "util": f"G{n}", "mem_share": f"H{n}", "oom": f"I{n}",
                 "flags": f"J{n}",
                 "task_status": f'IFERROR(INDEX($F${t0}:$F${t1},MATCH(B{n},$A${t0}:$A${t1},0)),"")'}
        values = {"flags": " ".join(res.flags), "billed": res.billed}
        book.formula(ws, row, 9, R.FLAGS.formula(cells), values["flags"], "text")
        book.formula(ws, row, 10, R.ACTION.formula(cells), R.ACTION.py(values, limits), "text")
        book.formula(ws, row, 11, R.SAVING.formula(cells), R.SAVING.py(values, None), "money")


def _totals(book: Book, ws, mr, at: ReconLayout, billed_input: float, in_plan: bool) -> None:
    book.header(ws, at.non_gpu_header, ["non-GPU lines", "billed"])
    for i, (category, amount) in enumerate(sorted(mr.non_gpu.items())):
        ws.write_string(at.non_gpu_first + i, 0, book.t(category))
        book.value(ws, at.non_gpu_first + i, 1, amount, "input", "money")
    last = at.non_gpu_last
    a, b = at.resource_first + 1, at.resource_last + 1
    n = last + 1
    buffer = (month_buffer(at.month), "link") if in_plan else (None, "input")
    cells = {"non_gpu": f"B{n}", "reserved": f"B{n + 1}", "allocated": f"B{n + 3}", "unallocated": f"B{n + 4}",
             "tasks": f"$B${a}:$B${b}", "billed": f"$E${a}:$E${b}"}
    values = {"non_gpu": mr.non_gpu_billed, "reserved": mr.buffer_reserved,
              "tasks": [r.task_id or "" for r in mr.resources], "billed": [r.billed for r in mr.resources]}
    rows = [
        ("non-GPU billed", f"SUM(B{at.non_gpu_first + 1}:B{last})", mr.non_gpu_billed, "calc"),
        ("hidden-cost buffer reserved", buffer[0], mr.buffer_reserved, buffer[1]),
        ("buffer left", R.BUFFER_LEFT.formula(cells), R.BUFFER_LEFT.py(values, None), "calc"),
        ("GPU billed to tasks", R.ALLOCATED_GPU.formula(cells), R.ALLOCATED_GPU.py(values, None), "calc"),
        ("unallocated GPU", R.UNALLOCATED_GPU.formula(cells), R.UNALLOCATED_GPU.py(values, None), "calc"),
        ("billed total", R.BILLED_TOTAL.formula(cells), mr.billed_total, "calc"),
        ("planned GPU total", f"SUM(B{at.task_first + 1}:B{at.task_last + 1})", mr.planned_total, "calc"),
        ("BilledCost in the input", None, billed_input, "input"),
    ]
    for i, (label, formula, value, role) in enumerate(rows):
        row = last + i
        ws.write_string(row, 0, book.t(label), book.f.bold)
        if formula is None:
            book.value(ws, row, 1, value, role, "money")
        else:
            book.formula(ws, row, 1, formula, value, "money", role)
    book.define(recon_billed_total(at.month), at.sheet, last + 5, 1)
    book.define(recon_billed_input(at.month), at.sheet, last + 7, 1)
