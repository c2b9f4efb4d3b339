"""One `Recon YYYY-MM` tab per billed month: plan versus bill versus usage, flags and next month's actions.

Every rule of the tab (variances, status, buffer share, flags, actions, cards to drop, saving, totals, partial
month) is declared once in `budgetgen.recon.rules` with its Excel and Python views; this module only says
which cells fill each rule's placeholders and caches the Python view's value.
"""

from __future__ import annotations

import datetime as dt
import math

from ..i18n import word
from ..recon import rules as R
from .book import Book
from .checks import Check
from .layout import (
    ReconLayout,
    extras_cost,
    gpu_cost,
    month_buffer,
    recon_billed_input,
    recon_billed_total,
    recon_partial,
)
from .printing import print_setup

TASK_HEADERS = ["task id", "planned", "billed", "variance", "variance %", "status", "non-GPU billed", "buffer share",
                "buffer left", "cards held", "planned GPU hours", "GPU hours billed", "rate variance",
                "usage variance", "EffectiveCost", "compared with plan", "planned PricingCategory"]
RESOURCE_HEADERS = ["resource", "task id", "services", "lines", "billed", "hours", "avg util %", "peak memory share",
                    "OOM events", "flags", "action next month", "cards", "cards to drop", "saving if acted on",
                    "PricingCategory"]
COMMITMENT_HEADERS = ["commitment lines", "billed", "EffectiveCost", "commitment id", "commitment type"]
COMMITMENT_KINDS = {"unused": "unused commitment", "purchase": "commitment purchase"}
"""The words of a commitment line's kind (pipeline.COMMITMENT_KINDS)."""
DATE_FORMAT = "yyyy-mm-dd"


_WIDTHS = [36, 14, 14, 14, 14, 14, 14, 14, 14, 26, 78, 14, 14, 14, 16, 16, 16]   # the action column is wide
FLAGS_COL, ACTION_COL = 9, 10
TITLE_HEIGHT = 21.0    # one line of the 14 pt title (a height of its own: no reader resizes it)


def recon_check(at: ReconLayout, billed_input: float, billed_total: float) -> Check:
    """The Checks row of one month: the tab's billed total equals the BilledCost of the month's input lines."""
    return Check("billed total = BilledCost of the month", recon_billed_total(at.month),
                 recon_billed_input(at.month), billed_total, billed_input, sheet=at.sheet)


def write_recon(book: Book, ws, plan, mr, at: ReconLayout, billed_input: float) -> None:
    for col, width in enumerate(_WIDTHS):
        ws.set_column(col, col, width)
    ws.set_row(at.resource_header, 30)   # wrapped headers
    # The title and its subtitle fit column A, which every printed page repeats: nothing runs off its edge.
    ws.set_row(0, TITLE_HEIGHT)
    ws.write_string(0, 0, f"{book.t('Reconciliation')} {at.month}", book.f.title_wrap)
    ws.write_string(1, 0, f"{book.t('plan versus bill versus usage')} ({book.currency})", book.f.note)
    limits = _limits(book, plan)
    in_plan = at.month in plan.months
    _tasks(book, ws, plan, mr, at, limits)
    heights = _resources(book, ws, mr, at, limits)
    _totals(book, ws, mr, at, billed_input, in_plan)
    _coverage(book, ws, mr, at)
    _like_for_like(book, ws, mr, at, in_plan)
    _commitments(book, ws, mr, at)
    ws.freeze_panes(1, 0)
    print_setup(ws, book.lang, _WIDTHS, at.last_row, repeat_cols=(0, 0), blocks=at.blocks,
                heights={0: TITLE_HEIGHT, at.resource_header: 30, **heights})


def _plan_row(cell: str) -> str:
    """The task's row on Tasks: MATCH of the id taken literally (`~`, `*` and `?` escaped, not wildcards)."""
    literal = f'SUBSTITUTE(SUBSTITUTE(SUBSTITUTE({cell},"~","~~"),"*","~*"),"?","~?")'
    return f"MATCH({literal},TaskId,0)"


def _tasks(book: Book, ws, plan, mr, at: ReconLayout, limits: R.Limits) -> None:
    book.header(ws, at.task_header, TASK_HEADERS)
    planned_tasks = {tp.task.task_id: tp for tp in plan.tasks}
    totals = at.non_gpu_last + 1
    for i, t in enumerate(mr.tasks):
        row = at.task_first + i
        n = row + 1
        ws.write_string(row, 0, t.task_id)
        linked = t.task_id in planned_tasks and at.month in plan.months
        match = _plan_row(f"$A{n}")
        if linked:
            book.formula(ws, row, 1, f"INDEX({gpu_cost(at.month)},{match})", t.planned, "money", "link")
        else:
            book.value(ws, row, 1, t.planned, "input", "money")
        book.value(ws, row, 2, t.billed, "input", "money")
        # The variances compare the plan with column P: the EffectiveCost where the bill gives it, else C.
        cells = {"planned": f"B{n}", "billed": f"P{n}", "variance": f"D{n}", "partial": f"$B${at.partial_row + 1}",
                 "non_gpu": f"G{n}", "reserved": f"$B${totals + 1}", "planned_total": f"$B${totals + 6}",
                 "hours": f"L{n}", "planned_hours": f"K{n}", "tier": f"INDEX(TaskTier,{match})",
                 "cards_billed": f"INDEX(TaskCardsBilled,{match})", "gpu_hours": f"INDEX(TaskGpuHours,{match})",
                 "hours_per_month": "HoursPerMonth"}
        book.formula(ws, row, 3, R.VARIANCE.formula(cells), t.variance, "money")
        book.formula(ws, row, 4, R.VARIANCE_PCT.formula(cells), t.variance_pct, "percent")
        book.formula(ws, row, 5, R.STATUS.formula(cells), word(t.status(limits), book.lang), "text")
        book.value(ws, row, 6, t.non_gpu_billed, "input", "money")
        book.formula(ws, row, 7, R.BUFFER_SHARE.formula(cells), t.buffer_share, "money")
        book.formula(ws, row, 8, R.BUFFER_LEFT.formula({**cells, "reserved": f"H{n}"}), t.buffer_left, "money")
        if linked:
            book.formula(ws, row, 9, f"INDEX(TaskCardsHeld,{match})", t.cards, "int", "link")
            book.formula(ws, row, 10, R.PLANNED_HOURS.formula(cells), t.planned_hours, "number")
        else:
            book.value(ws, row, 9, t.cards, "input", "int")
            book.value(ws, row, 10, _number(t.planned_hours), "input", "number")
        book.value(ws, row, 11, _number(t.hours), "input", "number")
        book.formula(ws, row, 12, R.RATE_VARIANCE.formula(cells), t.rate_variance, "money")
        book.formula(ws, row, 13, R.USAGE_VARIANCE.formula(cells), t.usage_variance, "money")
        book.value(ws, row, 14, t.effective, "input", "money")
        book.formula(ws, row, 15, R.COMPARED.formula({"billed": f"C{n}", "effective": f"O{n}"}), t.compared, "money")
        if linked:
            book.formula(ws, row, 16, f"INDEX(TierPricingCategory,MATCH(INDEX(TaskTier,{match}),TierList,0))",
                         t.planned_pricing, "text", "link")
        else:
            book.value(ws, row, 16, t.planned_pricing, "input", "text")
    if mr.tasks:
        chart = book.wb.add_chart({"type": "column"})
        for col, label in ((1, "planned"), (2, "billed")):
            chart.add_series({"name": book.t(label), "categories": [ws.name, at.task_first, 0, at.task_last, 0],
                              "values": [ws.name, at.task_first, col, at.task_last, col]})
        chart.set_title({"name": book.t("Plan versus bill by task")})
        ws.insert_chart(1, max(len(TASK_HEADERS), len(RESOURCE_HEADERS)) + 1, chart)


def _number(value: float | None) -> float | None:
    """None for an unknown (NaN) number: a blank cell."""
    return None if value is None or math.isnan(value) else value


def _limits(book: Book, plan) -> R.Limits:
    """The rules' settings, with the action sentences in the workbook's language."""
    s = plan.inputs.settings
    return R.Limits(s.low_util_threshold, s.oom_threshold, s.variance_tolerance,
                    {r.key: book.t(r.action) for r in R.FLAG_RULES})


def _resources(book: Book, ws, mr, at: ReconLayout, limits: R.Limits) -> dict[int, float]:
    """The resources' rows (the flags and the action wrapped in their columns); the rows' heights in points."""
    book.header(ws, at.resource_header, RESOURCE_HEADERS)
    heights: dict[int, float] = {}
    a, b = at.resource_first + 1, at.resource_last + 1
    task_rows = {t.task_id: at.task_first + 1 + i for i, t in enumerate(mr.tasks)}
    for i, res in enumerate(mr.resources):
        row = at.resource_first + i
        n = row + 1
        ws.write_string(row, 0, res.resource_id or "")
        ws.write_string(row, 1, res.task_id or "")
        ws.write_string(row, 2, ", ".join(res.services))
        ws.write_number(row, 3, res.lines)
        book.value(ws, row, 14, res.pricing, "input", "text")   # blank when the bill gives no PricingCategory
        book.value(ws, row, 4, res.billed, "input", "money")
        for col, value, fmt in ((5, res.hours, "number"), (6, res.avg_util_pct, "number"),
                                (7, res.mem_peak_share, "percent"), (8, res.oom_events, "int")):
            book.value(ws, row, col, _number(value), "input", fmt)
        # The task's own cells, referred to directly: no lookup of a bill's id that might hold * ? or ~.
        task_row = task_rows.get(res.task_id)
        cells = {"task": f"B{n}", "billed": f"E{n}", "util": f"G{n}", "mem_share": f"H{n}", "oom": f"I{n}",
                 "flags": f"J{n}", "cards": f"L{n}", "drop": f"M{n}", "tasks": f"$B${a}:$B${b}",
                 "task_status": f"$F${task_row}" if task_row else '""',
                 "task_cards": f"$J${task_row}" if task_row else '""',
                 "pricing": f"O{n}", "planned_pricing": f"$Q${task_row}" if task_row else '""'}
        values = {"flags": " ".join(res.flags)}
        action = R.ACTION.py(values, limits)
        shown = " ".join(word(flag, book.lang) for flag in res.flags)
        book.formula(ws, row, FLAGS_COL, R.FLAGS.formula(cells), shown, "wrap")
        book.formula(ws, row, ACTION_COL, R.ACTION.formula(cells), action, "wrap")
        heights[row] = max(book.fit_height(ws, row, shown, _WIDTHS[FLAGS_COL]),
                           book.fit_height(ws, row, action, _WIDTHS[ACTION_COL], slack=0.75))
        ws.set_row(row, heights[row])
        book.formula(ws, row, 11, R.RESOURCE_CARDS.formula(cells), res.cards, "int")
        book.formula(ws, row, 12, R.CARDS_TO_DROP.formula(cells), res.cards_to_drop, "int")
        book.formula(ws, row, 13, R.SAVING.formula(cells), res.saving, "money")
    return heights


def _totals(book: Book, ws, mr, at: ReconLayout, billed_input: float, in_plan: bool) -> None:
    book.header(ws, at.non_gpu_header, ["non-GPU lines", "billed"])
    for i, (category, amount) in enumerate(sorted(mr.non_gpu.items())):
        ws.write_string(at.non_gpu_first + i, 0, word(category, book.lang))
        book.value(ws, at.non_gpu_first + i, 1, amount, "input", "money")
    last = at.non_gpu_last
    a, b = at.resource_first + 1, at.resource_last + 1
    n = last + 1
    buffer = (month_buffer(at.month), "link") if in_plan else (None, "input")
    cells = {"non_gpu": f"B{n}", "reserved": f"B{n + 1}", "allocated": f"B{n + 3}", "unallocated": f"B{n + 4}",
             "tasks": f"$B${a}:$B${b}", "billed": f"$E${a}:$E${b}", "commitments": f"B{at.commitment_total + 1}"}
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


def _coverage(book: Book, ws, mr, at: ReconLayout) -> None:
    """The days the bill covers and whether the month is partial; the duplicate lines counted once.

    Written row by row, label and value together (the workbook is written in constant-memory mode)."""
    r = at.coverage_header
    book.header(ws, r, ["bill coverage", "value"])
    cov = mr.coverage
    unknown = (lambda row: ws.write_string(row, 1, book.t("not known"), book.f.note))
    not_reported = (lambda row: ws.write_string(row, 1, book.t("not reported"), book.f.note))
    if cov is None:
        first = last = days = unknown
        partial = (lambda row: book.value(ws, row, 1, False, "input", "flag"))
    else:
        first = (lambda row: _date(book, ws, row, cov.first))
        last = (lambda row: _date(book, ws, row, cov.last))
        days = (lambda row: book.value(ws, row, 1, cov.days_with_lines, "input", "int"))
        partial = (lambda row: book.formula(ws, row, 1, R.PARTIAL.formula({"first": f"B{r + 2}", "last": f"B{r + 3}"}),
                                            cov.partial, "flag"))
    if mr.duplicates is None:
        count = amount = not_reported
    else:
        count = (lambda row: book.value(ws, row, 1, mr.duplicates[0], "input", "int"))
        amount = (lambda row: book.value(ws, row, 1, mr.duplicates[1], "input", "money"))
    rows = [("first charge day", first), ("last charge day", last), ("days with lines", days),
            ("partial month", partial), ("duplicate lines counted once", count), ("their BilledCost", amount)]
    for i, (label, write_value) in enumerate(rows, start=1):
        ws.write_string(r + i, 0, book.t(label), book.f.bold)
        write_value(r + i)
    book.define(recon_partial(at.month), at.sheet, at.partial_row, 1)


def _date(book: Book, ws, row: int, day: dt.date) -> None:
    ws.write_datetime(row, 1, dt.datetime.combine(day, dt.time()), book.f.get("input", DATE_FORMAT))


def _like_for_like(book: Book, ws, mr, at: ReconLayout, in_plan: bool) -> None:
    """GPU billed against GPU planned, non-GPU billed against Extras + buffer, total against total."""
    r = at.like_header
    book.header(ws, r, ["like for like", "planned", "billed", "variance"])
    t = at.non_gpu_last + 1   # the totals block's first row, 1-based
    extras = f"SUM({extras_cost(at.month)})+B{t + 1}" if in_plan else f"B{t + 1}"   # no Extras outside the plan
    rows = [
        # The plan's GPU cost holds its committed cards busy or not: the commitment lines are GPU billed here.
        ("GPU", f"B{t + 6}", mr.planned_total, f"B{t + 3}+B{t + 4}+B{at.commitment_total + 1}",
         mr.gpu_billed + mr.commitment_billed),
        ("non-GPU (extras + buffer)", extras, mr.planned_extras + mr.buffer_reserved, f"B{t}", mr.non_gpu_billed),
        ("total", f"B{r + 2}+B{r + 3}", mr.planned_all, f"B{t + 5}", mr.billed_total),
    ]
    for i, (label, planned, planned_value, billed, billed_value) in enumerate(rows, start=1):
        n = r + i + 1
        ws.write_string(r + i, 0, book.t(label), book.f.bold)
        book.formula(ws, r + i, 1, planned, planned_value, "money")
        book.formula(ws, r + i, 2, billed, billed_value, "money")
        values = {"billed": billed_value, "planned": planned_value}
        book.formula(ws, r + i, 3, R.VARIANCE.formula({"billed": f"C{n}", "planned": f"B{n}"}),
                     R.VARIANCE.py(values, None), "money")


def _commitments(book: Book, ws, mr, at: ReconLayout) -> None:
    """The commitment lines apart from the tasks (unused commitment, purchases) with their total, which the
    billed total adds; then the month's EffectiveCost (amortised), or a note when the bill does not give it for
    every line."""
    book.header(ws, at.commitment_header, COMMITMENT_HEADERS)
    for i, c in enumerate(mr.commitments):
        row = at.commitment_first + i
        ws.write_string(row, 0, book.t(COMMITMENT_KINDS[c.kind]))
        book.value(ws, row, 1, c.billed, "input", "money")
        book.value(ws, row, 2, c.effective, "input", "money")
        ws.write_string(row, 3, c.commitment_id)
        ws.write_string(row, 4, c.commitment_type)
    total = at.commitment_total
    ws.write_string(total, 0, book.t("commitment lines billed"), book.f.bold)
    book.formula(ws, total, 1, f"SUM(B{at.commitment_first + 1}:B{total})", mr.commitment_billed, "money")
    ws.write_string(total + 1, 0, book.t("EffectiveCost of the month"), book.f.bold)
    if mr.effective_total is None:
        ws.write_string(total + 1, 1, book.t("not in every line of the bill"), book.f.note)
    else:
        book.value(ws, total + 1, 1, mr.effective_total, "input", "money")
