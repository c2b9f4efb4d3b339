"""One `Recon YYYY-MM` tab per billed month: plan versus bill versus usage, flags and next month's actions.

The flag, action, saving and over-plan formulas are in `_FORMULAS`, the one place to change them.
"""

from __future__ import annotations

import math

from ..recon import ACTIONS, LOW_UTILIZATION
from .book import Book
from .checks import Check
from .layout import ReconLayout, camel, gpu_cost, month_buffer, recon_billed_input, recon_billed_total
from .printing import print_setup

# Over the same row `{n}` of the task block (B planned, C billed) or the resource block (E billed,
# G avg util %, H peak memory share, I OOM events, J flags); `{t0}:{t1}` are the task block's rows.
_FORMULAS = {
    "status": 'IF(C{n}>B{n}*(1+VarianceTolerance),"over plan","")',
    "flags": ('TRIM(IF(AND(ISNUMBER(G{n}),G{n}/PercentScale<LowUtilThreshold),"low_utilization ","")'
              '&IF(AND(ISNUMBER(I{n}),I{n}>=OomThreshold),"oom ","")'
              '&IF(AND(ISNUMBER(H{n}),ISNUMBER(G{n}),H{n}>DataStarvedMemShare,G{n}/PercentScale<DataStarvedUtil),'
              '"data_starved ","")&IF(B{n}="","",IF(IFERROR(INDEX($F${t0}:$F${t1},MATCH(B{n},$A${t0}:$A${t1},0)),'
              '"")="over plan","over_plan","")))'),
    "actions": "TRIM(" + "&".join(f'IF(ISNUMBER(SEARCH("{flag}",J{{n}})),Action{camel(flag)}&". ","")'
                                  for flag in ACTIONS) + ")",
    "saving": f'IF(ISNUMBER(SEARCH("{LOW_UTILIZATION}",J{{n}})),E{{n}},0)',
}


_WIDTHS = [22, 14, 14, 14, 14, 14, 14, 14, 14, 14, 48, 14]


def recon_check(at: ReconLayout, billed_input: float, billed_total: float) -> Check:
    """The Checks row of one month: the tab's billed total equals the BilledCost of the month's input lines."""
    return Check(f"{at.sheet}: billed total = BilledCost of the month", recon_billed_total(at.month),
                 recon_billed_input(at.month), billed_total, billed_input)


def write_recon(book: Book, ws, plan, mr, at: ReconLayout, billed_input: float) -> None:
    for col, width in enumerate(_WIDTHS):
        ws.set_column(col, col, width)
    ws.set_row(at.resource_header, 30)   # wrapped headers
    ws.write_string(0, 0, f"{book.t('Reconciliation')} {at.month}: {book.t('plan versus bill versus usage')} "
                          f"({book.currency})", book.f.title)
    _tasks(book, ws, plan, mr, at)
    _resources(book, ws, mr, at)
    _totals(book, ws, mr, at, billed_input, at.month in plan.months)
    ws.freeze_panes(1, 0)
    print_setup(ws, book.lang, _WIDTHS, at.last_row, repeat_cols=(0, 0), blocks=at.blocks,
                heights={at.resource_header: 30})


def _tasks(book: Book, ws, plan, mr, at: ReconLayout) -> None:
    book.header(ws, at.task_header, ["task id", "planned", "billed", "variance", "variance %", "status"])
    planned_tasks = {tp.task.task_id for tp in plan.tasks}
    tol = plan.inputs.settings.variance_tolerance
    for i, t in enumerate(mr.tasks):
        row = at.task_first + i
        n = row + 1
        ws.write_string(row, 0, t.task_id)
        if t.task_id in planned_tasks and at.month in plan.months:
            book.formula(ws, row, 1, f"INDEX({gpu_cost(at.month)},MATCH($A{n},TaskId,0))", t.planned, "money", "link")
        else:
            book.value(ws, row, 1, t.planned, "input", "money")
        book.value(ws, row, 2, t.billed, "input", "money")
        book.formula(ws, row, 3, f"C{n}-B{n}", t.variance, "money")
        book.formula(ws, row, 4, f'IF(B{n}=0,"",D{n}/B{n})', t.variance_pct, "percent")
        status = "over plan" if t.billed > t.planned * (1 + tol) else ""
        book.formula(ws, row, 5, _FORMULAS["status"].format(n=n), status, "text")
    if mr.tasks:
        chart = book.wb.add_chart({"type": "column"})
        for col, label in ((1, "planned"), (2, "billed")):
            chart.add_series({"name": book.t(label), "categories": [ws.name, at.task_first, 0, at.task_last, 0],
                              "values": [ws.name, at.task_first, col, at.task_last, col]})
        chart.set_title({"name": book.t("Plan versus bill by task")})
        ws.insert_chart(1, 13, chart)


def _resources(book: Book, ws, mr, at: ReconLayout) -> None:
    book.header(ws, at.resource_header, ["resource", "task id", "services", "lines", "billed", "hours", "avg util %",
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
        book.formula(ws, row, 9, _FORMULAS["flags"].format(n=n, t0=t0, t1=t1), " ".join(res.flags), "text")
        book.formula(ws, row, 10, _FORMULAS["actions"].format(n=n),
                     " ".join(book.t(ACTIONS[f]) + "." for f in res.flags), "text")
        book.formula(ws, row, 11, _FORMULAS["saving"].format(n=n),
                     res.billed if LOW_UTILIZATION in res.flags else 0, "money")


def _totals(book: Book, ws, mr, at: ReconLayout, billed_input: float, in_plan: bool) -> None:
    book.header(ws, at.non_gpu_header, ["non-GPU lines", "billed"])
    for i, (category, amount) in enumerate(sorted(mr.non_gpu.items())):
        ws.write_string(at.non_gpu_first + i, 0, book.t(category))
        book.value(ws, at.non_gpu_first + i, 1, amount, "input", "money")
    last = at.non_gpu_last
    a, b = at.resource_first + 1, at.resource_last + 1
    n = last + 1
    buffer = (month_buffer(at.month), "link") if in_plan else (None, "input")
    rows = [
        ("non-GPU billed", f"SUM(B{at.non_gpu_first + 1}:B{last})", mr.non_gpu_billed, "calc"),
        ("hidden-cost buffer reserved", buffer[0], mr.buffer_reserved, buffer[1]),
        ("buffer left", f"B{n + 1}-B{n}", mr.buffer_reserved - mr.non_gpu_billed, "calc"),
        ("GPU billed to tasks", f'SUMPRODUCT(($B${a}:$B${b}<>"")*$E${a}:$E${b})', mr.allocated_gpu, "calc"),
        ("unallocated GPU", f'SUMPRODUCT(($B${a}:$B${b}="")*$E${a}:$E${b})', mr.unallocated, "calc"),
        ("billed total", f"B{n}+B{n + 3}+B{n + 4}", mr.billed_total, "calc"),
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
