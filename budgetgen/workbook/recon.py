"""One `Recon YYYY-MM` tab per billed month: plan versus bill versus usage, flags and next month's actions.

Every rule of the tab (variances, status, buffer share, flags, actions, cards to drop, saving, totals, partial
month) is declared once in `budgetgen.recon.rules` with its Excel and Python views; this module only says
which cells fill each rule's placeholders and caches the Python view's value.
"""

from __future__ import annotations

import datetime as dt
import math

import pandas as pd
from xlsxwriter.utility import xl_col_to_name

from ..i18n import word
from ..recon import rules as R
from ..recon.pipeline import CREDIT_KINDS, ResourceRecon, ResourceTable
from .book import Book, ColumnBlock
from .checks import Check
from .layout import (
    EXTRAS_CATEGORY,
    ReconLayout,
    commit_adjustment,
    extras_cost,
    gpu_cost,
    month_buffer,
    recon_billed_input,
    recon_billed_total,
    recon_partial,
    recon_rest,
    recon_saving,
    recon_task_column,
)
from .printing import print_setup

TASK_HEADERS = ["task id", "planned", "billed", "variance", "variance %", "status", "non-GPU billed", "buffer share",
                "buffer left", "cards held", "planned GPU hours", "GPU hours billed", "rate variance",
                "usage variance", "EffectiveCost", "compared with plan", "planned PricingCategory", "GPU resources"]
RESOURCE_HEADERS = ["resource", "task id", "services", "lines", "billed", "hours", "avg util %", "peak memory share",
                    "OOM events", "flags", "action next month", "cards", "idle cards", "saving if acted on",
                    "PricingCategory", "to attribute or stop"]
COMMITMENT_HEADERS = ["commitment lines", "billed", "EffectiveCost", "commitment id", "commitment type"]
DAILY_HEADERS = ["daily GPU bill, task id", "day", "billed", "median of previous days", "spike"]
COMMITMENT_KINDS = {"unused": "unused commitment", "purchase": "commitment purchase"}
"""The words of a commitment line's kind (pipeline.COMMITMENT_KINDS)."""
DATE_FORMAT = "yyyy-mm-dd"
CREDIT_WORDS = {"credit": "credits", "refund": "refunds and adjustments"}
"""The words of a credit line's kind (pipeline.CREDIT_KINDS)."""


_WIDTHS = [36, 14, 14, 14, 14, 14, 14, 14, 14, 26, 78, 14, 14, 14, 16, 16, 16, 14]   # the action column is wide
FLAGS_COL, ACTION_COL = 9, 10
TITLE_HEIGHT = 21.0    # one line of the 14 pt title (a height of its own: no reader resizes it)


def recon_check(at: ReconLayout, billed_input: float, billed_total: float) -> Check:
    """The Checks row of one month: the tab's billed total equals the BilledCost of the month's input lines."""
    return Check("billed total = BilledCost of the month", recon_billed_total(at.month),
                 recon_billed_input(at.month), billed_total, billed_input, sheet=at.sheet)


def write_recon(book: Book, ws, plan, mr, at: ReconLayout, billed_input: float, stem: str = "") -> None:
    """The month's tab; `stem` names the workbook, for the CSV file of the resources the tab does not list.

    The rows are written in order (constant-memory mode): first the one-page summary the print area holds, then
    the detail below it, which prints only when asked."""
    for col, width in enumerate(_WIDTHS):
        ws.set_column(col, col, width)
    ws.set_row(at.resource_header, 30)   # wrapped headers
    ws.set_row(0, TITLE_HEIGHT)
    ws.write_string(0, 0, f"{book.t('Reconciliation')} {at.month}", book.f.title)
    ws.write_string(1, 0, f"{book.t('plan versus bill versus usage')} ({book.currency})", book.f.note)
    limits = _limits(book, plan)
    in_plan = at.month in plan.months
    _like_for_like(book, ws, mr, at, in_plan)
    heights = {0: TITLE_HEIGHT, **_currencies(book, ws, mr, at)}
    _usage(book, ws, mr, at, limits)
    heights.update(_actions(book, ws, mr, at, limits))
    _coverage(book, ws, mr, at)
    heights.update(_note(book, ws, mr, at, stem))
    _tasks(book, ws, plan, mr, at, limits)
    _resources(book, ws, mr, at, limits, stem)
    _totals(book, ws, mr, at, billed_input, in_plan)
    _commitments(book, ws, mr, at)
    _daily(book, ws, mr, at, limits)
    ws.freeze_panes(1, 0)
    print_setup(ws, book.lang, _WIDTHS[:SUMMARY_COLUMNS], at.summary_last, heights=heights)
    ws.fit_to_pages(1, 1)   # the summary is one page: the print area is only it


SUMMARY_COLUMNS = 4   # the summary's columns, A to D: a label and three amounts
SUMMARY_WIDTH = sum(_WIDTHS[:SUMMARY_COLUMNS])   # a sentence across them (merged)


def _sentence(book: Book, ws, row: int, text: str, formula: str | None = None, slack: float = 1.0) -> float:
    """A sentence across the summary's columns (merged), wrapped, its row made tall enough; its height in points."""
    ws.merge_range(row, 0, row, SUMMARY_COLUMNS - 1, "", book.f.wrap)
    if formula is None:
        ws.write_string(row, 0, text, book.f.wrap)
    else:
        book.formula(ws, row, 0, formula, text, "wrap", "link")
    return book.fit_height(ws, row, text, SUMMARY_WIDTH, slack=slack)


def _listed(mr, at: ReconLayout) -> tuple:
    """The resources the summary's formulas count: the tab's rows and its Resources sheet's (not a CSV file's)."""
    shown, rest = _split(mr, at)
    return shown if at.rest_in_csv else (*shown, *rest)


def _over_resources(rule: R.Rule, cells: dict[str, str], at: ReconLayout, columns: dict[str, int]) -> str:
    """`rule` over the tab's resource rows (`columns`: placeholder -> column), plus over the Resources sheet's
    (the same columns, through its names) when it lists the rest."""
    a, b = at.resource_first + 1, at.listed_last + 1
    tab = {key: f"${xl_col_to_name(col)}${a}:${xl_col_to_name(col)}${b}" for key, col in columns.items()}
    formula = rule.formula({**cells, **tab})
    if at.rest_rows and not at.rest_in_csv:
        parts = {col: part for part, col in _REST_COLUMNS.items()}
        formula += "+" + rule.formula({**cells, **{key: recon_rest(at.month, parts[col]) for key, col in
                                                   columns.items()}})
    return formula


def _usage(book: Book, ws, mr, at: ReconLayout, limits: R.Limits) -> None:
    """The tasks' GPU variance split into rate and usage (and what the bill's hours cannot split), the tasks over
    plan, the resources flagged and the saving if the actions are taken: over the detail's rows below."""
    book.header(ws, at.usage_header, ["usage and variance", "value"])
    a, b = at.task_first + 1, at.task_last + 1
    known = (lambda values: math.fsum(v for v in values if v is not None and not math.isnan(v)))
    variance = math.fsum(t.variance for t in mr.tasks)
    rate, usage = known(t.rate_variance for t in mr.tasks), known(t.usage_variance for t in mr.tasks)
    row = {key: at.usage(key) + 1 for key in at.USAGE}
    listed = _listed(mr, at)
    flags = [_shown_flags(r, book.lang) for r in listed]
    rows = {
        "task_variance": ("tasks' GPU variance", f"SUM(D{a}:D{b})", variance, "money"),
        "rate_variance": ("of it, rate variance", f"SUM(M{a}:M{b})", rate, "money"),
        "usage_variance": ("of it, usage variance", f"SUM(N{a}:N{b})", usage, "money"),
        "not_split": (R.NOT_SPLIT.header, R.NOT_SPLIT.formula({
            "variance": f"B{row['task_variance']}", "rate": f"B{row['rate_variance']}",
            "usage": f"B{row['usage_variance']}"}), R.NOT_SPLIT.py({"variance": variance, "rate": rate,
                                                                      "usage": usage}, limits), "money"),
        "tasks_over": (R.TASKS_OVER.header, R.TASKS_OVER.formula({"statuses": f"$F${a}:$F${b}"}),
                       R.TASKS_OVER.py({"statuses": [t.status(limits) for t in mr.tasks]}, limits), "int"),
        "flagged": (R.FLAGGED.header, _over_resources(R.FLAGGED, {}, at, {"flags": FLAGS_COL}),
                    R.FLAGGED.py({"flags": flags}, limits), "int"),
        "saving": ("saving if the actions are taken", f"B{at.total('saving')}", mr.achievable_saving, "money"),
    }
    for key in at.USAGE:
        label, formula, value, fmt = rows[key]
        ws.write_string(at.usage(key), 0, book.t(label), book.f.bold)
        book.formula(ws, at.usage(key), 1, formula, value, fmt, "link" if key == "saving" else "calc")


_SAVING_COLUMNS = {"saving": 13, "to_attribute": 15}
"""The resource columns of what a flag's action saves (FlagRule.saving): rule key -> column."""


def _actions(book: Book, ws, mr, at: ReconLayout, limits: R.Limits) -> dict[int, float]:
    """Per flag: the resources flagged, their bill and what acting saves (where it saves: alternatives, not a sum),
    then the action sentence (Assumptions' named cell) across the summary, wrapped; the sentences' heights."""
    book.header(ws, at.actions_header, ["actions next month", "resources", "their bill", "saving if acted on"])
    listed = _listed(mr, at)
    flags = [_shown_flags(r, book.lang) for r in listed]
    heights = {}
    for i, rule in enumerate(R.FLAG_RULES):
        row = at.actions_header + 1 + 2 * i
        shown = word(rule.key, book.lang)
        cells = {"word": R.shown_word(rule.key)}
        values = {"word": shown, "flags": flags}
        ws.write_string(row, 0, shown, book.f.bold)
        book.formula(ws, row, 1, _over_resources(R.FLAG_COUNT, cells, at, {"flags": FLAGS_COL}),
                     R.FLAG_COUNT.py(values, limits), "int")
        book.formula(ws, row, 2, _over_resources(R.FLAG_AMOUNT, cells, at, {"flags": FLAGS_COL, "amounts": 4}),
                     R.FLAG_AMOUNT.py({**values, "amounts": [r.billed for r in listed]}, limits), "money")
        if rule.saving:
            amounts = [getattr(r, rule.saving) for r in listed]
            book.formula(ws, row, 3, _over_resources(R.FLAG_AMOUNT, cells, at, {
                "flags": FLAGS_COL, "amounts": _SAVING_COLUMNS[rule.saving]}),
                R.FLAG_AMOUNT.py({**values, "amounts": amounts}, limits), "money")
        heights[row + 1] = _sentence(book, ws, row + 1, limits.action(rule.key), rule.action_name, slack=0.9)
    return heights


def _currencies(book: Book, ws, mr, at: ReconLayout) -> dict[int, float]:
    """The bill's lines in other currencies: their BilledCost in that currency, the rate (plan currency per 1 unit)
    and its date, and the BilledCost in the plan currency; nothing when the whole bill is in the plan's."""
    if not mr.currencies:
        return {}
    book.header(ws, at.currency_header, ["billed in another currency", "billed in its currency", f"rate ({book.currency} per 1)",
                                         f"billed ({book.currency})"])
    heights = {at.currency_header: 30.0}
    ws.set_row(at.currency_header, 30.0)
    for i, c in enumerate(mr.currencies):
        row = at.currency_header + 1 + i
        label = f"{c.currency}, {book.t('rate of')} {c.as_of} ({c.source})"
        ws.write_string(row, 0, label, book.f.wrap)
        heights[row] = book.fit_height(ws, row, label, _WIDTHS[0])
        book.value(ws, row, 1, c.billed, "input", _currency_format(c.currency))
        book.value(ws, row, 2, c.rate, "input", "rate")
        book.formula(ws, row, 3, f"B{row + 1}*C{row + 1}", c.converted, "money")
    return heights


def _currency_format(currency: str) -> str:
    """A number format for an amount in `currency` (its ISO code after the number: never the plan's symbol)."""
    return f'#,##0.00 "{currency}";-#,##0.00 "{currency}"'


def _note(book: Book, ws, mr, at: ReconLayout, stem: str) -> dict[int, float]:
    """The summary's last row: the detail below prints only when asked, and where the rest of the resources are."""
    text = book.t("The detail below (by task, by resource, non-GPU lines and totals, commitment lines, daily bill) "
                  "prints only when asked: select its rows and print the selection.")
    if at.rest_in_csv:
        text += f" {at.rest_rows:,} {book.t('more resources are listed in')} {at.csv_name(stem)} " \
                f"{book.t('(the actions above do not count them)')}."
    elif at.rest_rows:
        text += f" {at.rest_rows:,} {book.t('more resources are listed on')} {at.detail_sheet}."
    return {at.note_row: _sentence(book, ws, at.note_row, text, slack=1.15)}


def _plan_row(cell: str) -> str:
    """The task's row on Tasks: MATCH of the id taken literally (`~`, `*` and `?` escaped, not wildcards)."""
    literal = f'SUBSTITUTE(SUBSTITUTE(SUBSTITUTE({cell},"~","~~"),"*","~*"),"?","~?")'
    return f"MATCH({literal},TaskId,0)"


def _tasks(book: Book, ws, plan, mr, at: ReconLayout, limits: R.Limits) -> None:
    book.header(ws, at.task_header, TASK_HEADERS)
    planned_tasks = {tp.task.task_id: tp for tp in plan.tasks}
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
                 "non_gpu": f"G{n}", "reserved": f"$B${at.total('reserved')}",
                 "planned_total": f"$B${at.total('planned')}",
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
        book.value(ws, row, 17, t.resources, "input", "int")   # counted once per task by the grouping
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


_TASK_CELLS = {"task_status": ("Status", 5), "task_cards": ("Cards", 9), "planned_pricing": ("Pricing", 16),
               "task_rows": ("Resources", 17)}
"""The task block's cells a resource row reads: placeholder -> (name part, column)."""
_REST_COLUMNS = {"Task": 1, "Lines": 3, "Billed": 4, "Flags": 9, "Saving": 13, "Attribute": 15}
"""The Resources sheet's columns the Recon tab's totals and its rest line read: name part -> column."""


def _resources(book: Book, ws, mr, at: ReconLayout, limits: R.Limits, stem: str) -> None:
    """The resources the tab lists (recon_top_resources, flagged first by the money at stake), then one line
    summing the others, which the month's Resources sheet lists (or two, when a CSV file lists them); the flags
    and the action wrap in their columns."""
    book.header(ws, at.resource_header, RESOURCE_HEADERS)
    position = {t.task_id: i for i, t in enumerate(mr.tasks)}
    shown, rest = _split(mr, at)
    for i, res in enumerate(shown):
        k = position.get(res.task_id)
        # The task's own cells, referred to directly: no lookup of a bill's id that might hold * ? or ~.
        task = {key: f"${xl_col_to_name(col)}${at.task_first + 1 + k}" if k is not None else '""'
                for key, (_, col) in _TASK_CELLS.items()}
        _resource_row(book, ws, at.resource_first + i, res, task, limits)
    if not rest:
        return
    if at.rest_in_csv:
        _csv_lines(book, ws, rest, at, stem)
        return
    for key, (part, col) in _TASK_CELLS.items():
        book.define_range(recon_task_column(at.month, part), at.sheet, at.task_first, at.task_last, col)
    row = at.rest_row
    ws.write_string(row, 0, f"{len(rest):,} {book.t('more resources, listed on')} {at.detail_sheet}", book.f.bold)
    ws.write_string(row, 9, f"{rest.flagged():,} {book.t('flagged')}")
    for key, col, value in (("Lines", 3, sum(rest.column("lines"))), ("Billed", 4, math.fsum(rest.column("billed"))),
                            ("Saving", 13, math.fsum(rest.column("saving"))),
                            ("Attribute", 15, math.fsum(rest.column("to_attribute")))):
        book.formula(ws, row, col, f"SUM({recon_rest(at.month, key)})", value, "int" if key == "Lines" else "money",
                     "link")


def _csv_lines(book: Book, ws, rest, at: ReconLayout, stem: str) -> None:
    """The resources the CSV file beside the workbook lists, summed as values in two rows of the resource range:
    the tasks' (task column "*", so the totals count them as billed to tasks) and the untagged."""
    for row, tagged, words in ((at.rest_row, True, "more resources of tasks, listed in"),
                               (at.rest_row + 1, False, "more untagged resources, listed in")):
        part = rest.tagged(tagged)
        ws.write_string(row, 0, f"{len(part):,} {book.t(words)} {at.csv_name(stem)}", book.f.bold)
        ws.write_string(row, 1, "*" if tagged else "")
        ws.write_string(row, 9, f"{part.flagged():,} {book.t('flagged')}")
        for col, value, fmt in ((3, sum(part.column("lines")), "int"), (4, math.fsum(part.column("billed")), "money"),
                                (13, math.fsum(part.column("saving")), "money"),
                                (15, math.fsum(part.column("to_attribute")), "money")):
            book.value(ws, row, col, value, "input", fmt)


CSV_COLUMNS = ("resource_id", "task_id", "services", "lines", "billed", "hours", "avg_util_pct", "mem_peak_share",
               "oom_events", "flags", "cards", "idle_cards", "saving", "to_attribute", "pricing")


def write_resources_csv(path, mr, at: ReconLayout) -> None:
    """The resources a Recon tab does not list, one line each (the Resources sheet's columns but the action), from
    the month's resource table's columns (ResourceRecon.to_json's values; services and flags as words)."""
    _, rest = _split(mr, at)
    values = {name: rest.column(name) for name in CSV_COLUMNS}
    values["resource_id"] = [r or None for r in values["resource_id"]]
    for name in ("hours", "avg_util_pct", "mem_peak_share", "oom_events"):
        values[name] = [None if math.isnan(v) else v for v in values[name]]
    values["services"] = [", ".join(s) for s in values["services"]]
    values["flags"] = [" ".join(f) for f in values["flags"]]
    pd.DataFrame(values, columns=list(CSV_COLUMNS)).to_csv(path, index=False)


def _split(mr, at: ReconLayout) -> tuple[tuple[ResourceRecon, ...], ResourceTable]:
    """The resources the tab lists and those its Resources sheet lists, as the layout counted them."""
    return mr.resources.split(len(mr.resources) - at.rest_rows)


def _resource_row(book: Book, ws, row: int, res, task: dict[str, str], limits: R.Limits) -> None:
    """One resource's row: its bill and usage, then its rules (flags, action, cards, idle cards, saving, to
    attribute or stop) over its own cells and its task's (`task`: the task block's cells or their names), the
    flags and the action wrapped in their columns."""
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
    cells = {"task": f"B{n}", "billed": f"E{n}", "util": f"G{n}", "mem_share": f"H{n}", "oom": f"I{n}",
             "flags": f"J{n}", "cards": f"L{n}", "idle": f"M{n}", "pricing": f"O{n}", **task}
    action = R.ACTION.py({"flags": " ".join(res.flags)}, limits)
    shown = _shown_flags(res, book.lang)
    book.formula(ws, row, FLAGS_COL, R.FLAGS.formula(cells), shown, "wrap")
    book.formula(ws, row, ACTION_COL, R.ACTION.formula(cells), action, "wrap")
    ws.set_row(row, max(book.fit_height(ws, row, shown, _WIDTHS[FLAGS_COL]),
                        book.fit_height(ws, row, action, _WIDTHS[ACTION_COL], slack=0.9)))
    book.formula(ws, row, 11, R.RESOURCE_CARDS.formula(cells), res.cards, "int")
    book.formula(ws, row, 12, R.IDLE_CARDS.formula(cells), res.idle_cards, "number")
    book.formula(ws, row, 13, R.SAVING.formula(cells), res.saving, "money")
    book.formula(ws, row, 15, R.TO_ATTRIBUTE.formula(cells), res.to_attribute, "money")


def _shown_flags(res, lang: str) -> str:
    """The flags cell's value as the workbook shows it: each flag's word in the workbook's language."""
    return " ".join(word(flag, lang) for flag in res.flags)


def write_resources_detail(book: Book, ws, plan, mr, at: ReconLayout) -> None:
    """The month's Resources sheet: every resource its Recon tab does not list, with the same rules. A resource's
    task cells are read through the tab's task-block names at the task's position (column Q, blank for a
    resource of no task): INDEX by position, no lookup of the id. Every formula is the same down the column, so
    the rows are written a whole row at a time (book.ColumnBlock)."""
    headers = [*RESOURCE_HEADERS, "task # on the Recon tab"]
    widths = [*_WIDTHS[:len(RESOURCE_HEADERS)], 14]
    for col, width in enumerate(widths):
        ws.set_column(col, col, width)
    ws.write_string(0, 0, f"{book.t('Resources')} {at.month}: {book.t('resources of the month not on its Recon tab')} "
                          f"({book.currency})", book.f.title)
    book.header(ws, at.detail_first - 1, headers)
    limits = _limits(book, plan)
    at_task = {key: f'IF(ISNUMBER($Q{{r}}),INDEX({recon_task_column(at.month, part)},$Q{{r}}),"")'
               for key, (part, _) in _TASK_CELLS.items()}
    cells = {"task": "B{r}", "billed": "E{r}", "util": "G{r}", "mem_share": "H{r}", "oom": "I{r}", "flags": "J{r}",
             "cards": "L{r}", "idle": "M{r}", "pricing": "O{r}", **at_task}
    inputs = [(0, "resource_id", "text"), (1, "task_id", "text"), (2, "services", "text"), (3, "lines", "int"),
              (4, "billed", "money"), (5, "hours", "number"), (6, "util", "number"), (7, "mem_share", "percent"),
              (8, "oom", "int"), (14, "pricing", "text"), (16, "position", "int")]
    rules = [(9, R.FLAGS, "text"), (10, R.ACTION, "text"), (11, R.RESOURCE_CARDS, "int"), (12, R.IDLE_CARDS, "number"),
             (13, R.SAVING, "money"), (15, R.TO_ATTRIBUTE, "money")]
    block = ColumnBlock(sorted([(col, key, None, book.f.get("input", fmt)) for col, key, fmt in inputs]
                               + [(col, rule.key, rule.formula(cells), book.f.get("calc", fmt))
                                  for col, rule, fmt in rules]))
    position = {t.task_id: i + 1 for i, t in enumerate(mr.tasks)}
    _, rest = _split(mr, at)
    for i, res in enumerate(rest):
        block.store(ws, at.detail_first + i, {
            "resource_id": res.resource_id or "", "task_id": res.task_id or "", "services": ", ".join(res.services),
            "lines": res.lines, "billed": res.billed, "hours": _number(res.hours), "util": _number(res.avg_util_pct),
            "mem_share": _number(res.mem_peak_share), "oom": _number(res.oom_events), "pricing": res.pricing,
            "position": position.get(res.task_id), "flags": _shown_flags(res, book.lang),
            "action": R.ACTION.py({"flags": " ".join(res.flags)}, limits), "cards": res.cards,
            "idle_cards": res.idle_cards, "saving": res.saving, "to_attribute": res.to_attribute})
    for part, col in _REST_COLUMNS.items():
        book.define_range(recon_rest(at.month, part), at.detail_sheet, at.detail_first, at.detail_last, col)
    ws.freeze_panes(at.detail_first, 1)
    ws.autofilter(at.detail_first - 1, 0, at.detail_last, len(headers) - 1)
    print_setup(ws, book.lang, widths, at.detail_last, header_rows=(1, 1), repeat_cols=(0, 0))


def _totals(book: Book, ws, mr, at: ReconLayout, billed_input: float, in_plan: bool) -> None:
    """Each non-GPU category billed against its Extras (only what no Extra planned uses the buffer), then the
    month's totals, the credits and refunds apart, and the achievable saving."""
    book.header(ws, at.non_gpu_header, ["non-GPU lines", "billed", "planned (Extras)", "not planned"])
    for i, (category, amount) in enumerate(mr.non_gpu.items()):
        row, n = at.non_gpu_first + i, at.non_gpu_first + i + 1
        planned = mr.non_gpu_planned.get(category, 0.0)
        ws.write_string(row, 0, word(category, book.lang))
        book.value(ws, row, 1, amount, "input", "money")
        if in_plan:   # the category's key as the Extras sheet holds it, in either language
            book.formula(ws, row, 2, f'SUMPRODUCT(({EXTRAS_CATEGORY}="{category}")*{extras_cost(at.month)})', planned,
                         "money", "link")
        else:
            book.value(ws, row, 2, planned, "input", "money")
        book.formula(ws, row, 3, R.NOT_PLANNED.formula({"billed": f"B{n}", "planned": f"C{n}"}),
                     mr.not_planned(category), "money")
    last = at.non_gpu_last
    a, b = at.resource_first + 1, at.resource_last + 1
    t = {key: f"B{at.total(key)}" for key in at.TOTALS}
    buffer = (month_buffer(at.month), "link") if in_plan else (None, "input")
    commitments = (commit_adjustment(at.month), "link") if in_plan else (None, "input")
    cells = {"non_gpu": t["non_gpu"], "reserved": t["reserved"], "allocated": t["allocated"],
             "unallocated": t["unallocated"], "tasks": f"$B${a}:$B${b}", "billed": f"$E${a}:$E${b}",
             "commitments": f"B{at.commitment_total + 1}", "credits": f"({t['credit']}+{t['refund']})",
             "saving": f"$N${a}:$N${b}", "idle_saving": t["idle_saving"]}
    rest = {"tasks": recon_rest(at.month, "Task"), "billed": recon_rest(at.month, "Billed"),
            "saving": recon_rest(at.month, "Saving")}

    def over_all(rule: R.Rule) -> str:
        """A rule over the tab's resource rows, plus over the Resources sheet's when the tab lists only some."""
        return rule.formula(cells) + (f"+{rule.formula(rest)}" if at.rest_rows and not at.rest_in_csv else "")

    values = {"reserved": mr.buffer_reserved, "non_gpu": mr.non_gpu_not_planned,
              "tasks": [t or "" for t in mr.resources.column("task_id")], "billed": mr.resources.column("billed"),
              "saving": mr.resources.column("saving")}
    rows = {
        "non_gpu": ("non-GPU billed", f"SUM(B{at.non_gpu_first + 1}:B{last})", mr.non_gpu_billed, "calc"),
        "reserved": ("hidden-cost buffer reserved", buffer[0], mr.buffer_reserved, buffer[1]),
        "buffer_left": ("buffer left", R.BUFFER_LEFT.formula({**cells, "non_gpu": t["not_planned"]}), mr.buffer_left,
                        "calc"),
        "allocated": ("GPU billed to tasks", over_all(R.ALLOCATED_GPU), R.ALLOCATED_GPU.py(values, None), "calc"),
        "unallocated": ("unallocated GPU", over_all(R.UNALLOCATED_GPU), R.UNALLOCATED_GPU.py(values, None), "calc"),
        "billed": ("billed total", R.BILLED_TOTAL.formula(cells), mr.billed_total, "calc"),
        "planned": ("planned GPU total", f"SUM(B{at.task_first + 1}:B{at.task_last + 1})", mr.planned_total, "calc"),
        # committed cost less the rent it displaces (Commitments): the plan's GPU cost is the tasks' plus this
        "commitments": ("commitments planned (Commitments)", commitments[0], mr.planned_commitments, commitments[1]),
        "input": ("BilledCost in the input", None, billed_input, "input"),
        "not_planned": ("non-GPU not planned", f"SUM(D{at.non_gpu_first + 1}:D{last})", mr.non_gpu_not_planned,
                        "calc"),
        **{k: (CREDIT_WORDS[k], None, mr.credits.get(k, 0.0), "input") for k in CREDIT_KINDS},
        "idle_saving": ("saving from idle cards", over_all(R.IDLE_SAVING), mr.idle_saving, "calc"),
        "saving": ("achievable saving", R.ACHIEVABLE_SAVING.formula(cells), mr.achievable_saving, "total"),
    }
    for key in at.TOTALS:
        label, formula, value, role = rows[key]
        row = at.total(key) - 1
        ws.write_string(row, 0, book.t(label), book.f.bold)
        if formula is None:
            book.value(ws, row, 1, value, role, "money")
        else:
            book.formula(ws, row, 1, formula, value, "money", role)
    book.define(recon_billed_total(at.month), at.sheet, at.total("billed") - 1, 1)
    book.define(recon_billed_input(at.month), at.sheet, at.total("input") - 1, 1)
    book.define(recon_saving(at.month), at.sheet, at.total("saving") - 1, 1)


def write_saving_line(book: Book, ws, recon, at) -> None:
    """One Summary line, in the blank row between the re-forecast and the chart: the achievable saving of the
    latest billed plan month, by its Recon tab's name. Nothing when no plan month is billed."""
    if at.reforecast_header is None:
        return
    month = at.billed_months[-1]
    row = at.reforecast_header + len(at.months) + 4
    ws.write_string(row, 0, f"{book.t('achievable saving, bill of')} {month}", book.f.bold)
    book.formula(ws, row, 1, recon_saving(month), recon[month].achievable_saving, "money", "link")


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
    """GPU billed against GPU planned (commitments on both sides), non-GPU billed against Extras + buffer, the
    credits and refunds apart, total against total (the planned total is Summary's month total)."""
    r = at.like_header
    book.header(ws, r, ["like for like", "planned", "billed", "variance"])
    t = {key: f"B{at.total(key)}" for key in at.TOTALS}
    extras = f"SUM({extras_cost(at.month)})+{t['reserved']}" if in_plan else t["reserved"]   # no Extras outside it
    rows = [
        # The plan's GPU cost is the tasks' rent and the commitments' adjustment (committed cost less the rent it
        # displaces); the bill's, its GPU lines and its commitment lines (reservation fees, unused commitment).
        ("GPU and commitments", f"{t['planned']}+{t['commitments']}", mr.planned_gpu_all,
         f"{t['allocated']}+{t['unallocated']}+B{at.commitment_total + 1}", mr.billed_gpu_all),
        ("non-GPU (extras + buffer)", extras, mr.planned_extras + mr.buffer_reserved, t["non_gpu"], mr.non_gpu_billed),
        # Credits and refunds are planned nowhere and netted into no usage line above.
        ("credits and refunds", "0", 0.0, f"{t['credit']}+{t['refund']}", mr.credit_billed),
        ("total", f"B{r + 2}+B{r + 3}+B{r + 4}", mr.planned_all, t["billed"], mr.billed_total),
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


def _daily(book: Book, ws, mr, at: ReconLayout, limits: R.Limits) -> None:
    """Each task's GPU bill per charge day (sorted by task, then day; "" the untagged lines), the median of its
    previous billed days (at most R.SPIKE_DAYS rows above, the same task's) and the spike flag, live."""
    book.header(ws, at.daily_header, DAILY_HEADERS)
    first_of_task = at.daily_first
    for i, d in enumerate(mr.daily):
        row = at.daily_first + i
        if i == 0 or d.task_id != mr.daily[i - 1].task_id:
            first_of_task = row
        ws.write_string(row, 0, d.task_id)
        _date(book, ws, row, d.day)
        book.value(ws, row, 2, d.billed, "input", "money")
        start = max(first_of_task, row - R.SPIKE_DAYS)
        if start < row:
            book.formula(ws, row, 3, R.TRAILING_MEDIAN.formula({"previous": f"C{start + 1}:C{row}"}), d.median,
                         "money")
        else:
            ws.write_blank(row, 3, None, book.f.get("calc", "money"))
        book.formula(ws, row, 4, R.SPIKE.formula({"median": f"D{row + 1}", "billed": f"C{row + 1}"}), d.spike,
                     "flag")
