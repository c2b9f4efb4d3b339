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

from ..core.i18n import word
from ..plan.checks import Check
from ..recon import rules as R
from ..recon.pipeline import CREDIT_KINDS, ResourceRecon, ResourceTable
from .book import Book, ColumnBlock
from .checks import CheckRow
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

COMMITMENT_KINDS = {"unused": "unused commitment", "purchase": "commitment purchase"}
"""The words of a commitment line's kind (pipeline.COMMITMENT_KINDS)."""
DATE_FORMAT = "yyyy-mm-dd"
CREDIT_WORDS = {"credit": "credits", "refund": "refunds and adjustments"}
"""The words of a credit line's kind (pipeline.CREDIT_KINDS)."""


WIDE = {"effective": 16, "compared": 16, "planned_pricing": 16, "flags": 26, "action": 78}
"""Task and resource columns wider than 14 (the first, the labels', is 36): the flags and the action wrap in
theirs."""


def _widths() -> list[float]:
    """The tab's column widths: a column is as wide as the widest of the task and resource columns in it."""
    tasks, resources = ReconLayout.TASKS, ReconLayout.RESOURCES
    widths = [14.0] * max(len(tasks), len(resources))
    widths[0] = 36.0
    for table in (tasks, resources):
        for name in table.names:
            widths[table[name]] = max(widths[table[name]], WIDE.get(name, 14))
    return widths
TITLE_HEIGHT = 21.0    # one line of the 14 pt title (a height of its own: no reader resizes it)


def recon_check(at: ReconLayout, check: Check) -> CheckRow:
    """The Checks row of one month (budgetgen.plan.checks.recon_checks): the tab's billed total equals the BilledCost of
    the month's input lines."""
    return CheckRow(check, recon_billed_total(at.month), recon_billed_input(at.month))


def write_recon(book: Book, ws, plan, mr, at: ReconLayout, billed_input: float, stem: str = "") -> None:
    """The month's tab; `stem` names the workbook, for the CSV file of the resources the tab does not list.

    The rows are written in order (constant-memory mode): first the one-page summary the print area holds, then
    the detail below it, which prints only when asked."""
    widths = _widths()
    for col, width in enumerate(widths):
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
    print_setup(ws, book.lang, widths[:SUMMARY_COLUMNS], at.summary_last, heights=heights)
    ws.fit_to_pages(1, 1)   # the summary is one page: the print area is only it


SUMMARY_COLUMNS = len(ReconLayout.LIKE)   # the summary's columns, A to D: a label and three amounts


def _sentence(book: Book, ws, row: int, text: str, formula: str | None = None, slack: float = 1.0) -> float:
    """A sentence across the summary's columns (merged), wrapped, its row made tall enough; its height in points."""
    ws.merge_range(row, 0, row, SUMMARY_COLUMNS - 1, "", book.f.wrap)
    if formula is None:
        ws.write_string(row, 0, text, book.f.wrap)
    else:
        book.formula(ws, row, 0, formula, text, "wrap", "link")
    return book.fit_height(ws, row, text, sum(_widths()[:SUMMARY_COLUMNS]), slack=slack)


def _listed(mr, at: ReconLayout) -> tuple:
    """The resources the summary's formulas count: the tab's rows and its Resources sheet's (not a CSV file's)."""
    shown, rest = _split(mr, at)
    return shown if at.rest_in_csv else (*shown, *rest)


def _over_resources(rule: R.Rule, cells: dict[str, str], at: ReconLayout, columns: dict[str, str]) -> str:
    """`rule` over the tab's resource rows (`columns`: placeholder -> resource column), plus over the Resources
    sheet's (the same columns, through its names) when it lists the rest."""
    a, b = at.resource_first + 1, at.listed_last + 1
    tab = {key: at.RESOURCES.span(name, a, b) for key, name in columns.items()}
    formula = rule.formula({**cells, **tab})
    if at.rest_rows and not at.rest_in_csv:
        parts = {name: part for part, name in _REST_COLUMNS.items()}
        formula += "+" + rule.formula({**cells, **{key: recon_rest(at.month, parts[name]) for key, name in
                                                   columns.items()}})
    return formula


def _usage(book: Book, ws, mr, at: ReconLayout, limits: R.Limits) -> None:
    """The tasks' GPU variance split into rate and usage (and what the bill's hours cannot split), the tasks over
    plan, the resources flagged and the saving if the actions are taken: over the detail's rows below."""
    a, b = at.task_first + 1, at.task_last + 1
    tc, value = at.TASKS, (lambda r: at.VALUES.cell("value", r))
    known = (lambda values: math.fsum(v for v in values if v is not None and not math.isnan(v)))
    variance = math.fsum(t.variance for t in mr.tasks)
    rate, usage = known(t.rate_variance for t in mr.tasks), known(t.usage_variance for t in mr.tasks)
    row = {key: at.usage(key) + 1 for key in at.USAGE}
    listed = _listed(mr, at)
    flags = [_shown_flags(r, book.lang) for r in listed]
    rows = {
        "task_variance": ("tasks' GPU variance", f"SUM({tc.range('variance', a, b)})", variance, "money"),
        "rate_variance": ("of it, rate variance", f"SUM({tc.range('rate_variance', a, b)})", rate, "money"),
        "usage_variance": ("of it, usage variance", f"SUM({tc.range('usage_variance', a, b)})", usage, "money"),
        "not_split": (R.NOT_SPLIT.header, R.NOT_SPLIT.formula({
            "variance": value(row["task_variance"]), "rate": value(row["rate_variance"]),
            "usage": value(row["usage_variance"])}), R.NOT_SPLIT.py({"variance": variance, "rate": rate,
                                                                       "usage": usage}, limits), "money"),
        "tasks_over": (R.TASKS_OVER.header, R.TASKS_OVER.formula({"statuses": tc.span("status", a, b)}),
                       R.TASKS_OVER.py({"statuses": [t.status(limits) for t in mr.tasks]}, limits), "int"),
        "flagged": (R.FLAGGED.header, _over_resources(R.FLAGGED, {}, at, {"flags": "flags"}),
                    R.FLAGGED.py({"flags": flags}, limits), "int"),
        "saving": ("saving if the actions are taken", value(at.total("saving")), mr.achievable_saving, "money"),
    }
    book.header(ws, at.usage_header, at.VALUES.header_row(label="usage and variance"))
    for key in at.USAGE:
        label, formula, amount, fmt = rows[key]
        ws.write_string(at.usage(key), at.VALUES["label"], book.t(label), book.f.bold)
        book.formula(ws, at.usage(key), at.VALUES["value"], formula, amount, fmt,
                     "link" if key == "saving" else "calc")


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
        book.formula(ws, row, 1, _over_resources(R.FLAG_COUNT, cells, at, {"flags": "flags"}),
                     R.FLAG_COUNT.py(values, limits), "int")
        book.formula(ws, row, 2, _over_resources(R.FLAG_AMOUNT, cells, at, {"flags": "flags", "amounts": "billed"}),
                     R.FLAG_AMOUNT.py({**values, "amounts": [r.billed for r in listed]}, limits), "money")
        if rule.saving:   # the resource column of what the action saves has the rule's key for name
            amounts = [getattr(r, rule.saving) for r in listed]
            book.formula(ws, row, 3, _over_resources(R.FLAG_AMOUNT, cells, at, {
                "flags": "flags", "amounts": rule.saving}),
                R.FLAG_AMOUNT.py({**values, "amounts": amounts}, limits), "money")
        heights[row + 1] = _sentence(book, ws, row + 1, limits.action(rule.key), rule.action_name, slack=0.9)
    return heights


def _currencies(book: Book, ws, mr, at: ReconLayout) -> dict[int, float]:
    """The bill's lines in other currencies: their BilledCost in that currency, the rate (plan currency per 1 unit)
    and its date, and the BilledCost in the plan currency; nothing when the whole bill is in the plan's."""
    if not mr.currencies:
        return {}
    col = at.CURRENCIES
    book.header(ws, at.currency_header, col.header_row(rate=f"rate ({book.currency} per 1)",
                                                       converted=f"billed ({book.currency})"))
    heights = {at.currency_header: 30.0}
    ws.set_row(at.currency_header, 30.0)
    for i, c in enumerate(mr.currencies):
        row = at.currency_header + 1 + i
        label = f"{c.currency}, {book.t('rate of')} {c.as_of} ({c.source})"
        ws.write_string(row, col["label"], label, book.f.wrap)
        heights[row] = book.fit_height(ws, row, label, _widths()[col["label"]])
        book.value(ws, row, col["billed"], c.billed, "input", _currency_format(c.currency))
        book.value(ws, row, col["rate"], c.rate, "input", "rate")
        book.formula(ws, row, col["converted"], f"{col.cell('billed', row + 1)}*{col.cell('rate', row + 1)}",
                     c.converted, "money")
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
    tc, value = at.TASKS, (lambda key: at.VALUES.fixed("value", at.total(key)))
    book.header(ws, at.task_header, tc.headers)
    planned_tasks = {tp.task.task_id: tp for tp in plan.tasks}
    for i, t in enumerate(mr.tasks):
        row = at.task_first + i
        n = row + 1
        write = (lambda name, formula, v, fmt, role="calc", row=row:
                 _put(book, ws, row, tc[name], formula, v, fmt, role))
        ws.write_string(row, tc["task_id"], t.task_id)
        linked = t.task_id in planned_tasks and at.month in plan.months
        match = _plan_row(f"${tc.letter('task_id')}{n}")
        write("planned", f"INDEX({gpu_cost(at.month)},{match})" if linked else None, t.planned, "money", "link")
        write("billed", None, t.billed, "money")
        # The variances compare the plan with `compared`: the EffectiveCost where the bill gives it, else billed.
        cells = {"planned": tc.cell("planned", n), "billed": tc.cell("compared", n), "variance": tc.cell("variance", n),
                 "partial": at.VALUES.fixed("value", at.partial_row + 1), "non_gpu": tc.cell("non_gpu", n),
                 "reserved": value("reserved"), "planned_total": value("planned"),
                 "hours": tc.cell("hours", n), "planned_hours": tc.cell("planned_hours", n),
                 "tier": f"INDEX(TaskTier,{match})", "cards_billed": f"INDEX(TaskCardsBilled,{match})",
                 "gpu_hours": f"INDEX(TaskGpuHours,{match})", "hours_per_month": "HoursPerMonth"}
        write("variance", R.VARIANCE.formula(cells), t.variance, "money")
        write("variance_pct", R.VARIANCE_PCT.formula(cells), t.variance_pct, "percent")
        write("status", R.STATUS.formula(cells), word(t.status(limits), book.lang), "text")
        write("non_gpu", None, t.non_gpu_billed, "money")
        write("buffer_share", R.BUFFER_SHARE.formula(cells), t.buffer_share, "money")
        write("buffer_left", R.BUFFER_LEFT.formula({**cells, "reserved": tc.cell("buffer_share", n)}), t.buffer_left,
              "money")
        write("cards", f"INDEX(TaskCardsHeld,{match})" if linked else None, t.cards, "int", "link")
        write("planned_hours", R.PLANNED_HOURS.formula(cells) if linked else None,
              t.planned_hours if linked else _number(t.planned_hours), "number")
        write("hours", None, _number(t.hours), "number")
        write("rate_variance", R.RATE_VARIANCE.formula(cells), t.rate_variance, "money")
        write("usage_variance", R.USAGE_VARIANCE.formula(cells), t.usage_variance, "money")
        write("effective", None, t.effective, "money")
        write("compared", R.COMPARED.formula({"billed": tc.cell("billed", n), "effective": tc.cell("effective", n)}),
              t.compared, "money")
        write("planned_pricing", f"INDEX(TierPricingCategory,MATCH(INDEX(TaskTier,{match}),TierList,0))"
              if linked else None, t.planned_pricing, "text", "link")
        write("resources", None, t.resources, "int")   # counted once per task by the grouping
    if mr.tasks:
        chart = book.wb.add_chart({"type": "column"})
        first = tc["task_id"]
        for name in ("planned", "billed"):
            chart.add_series({"name": book.t(name), "categories": [ws.name, at.task_first, first, at.task_last, first],
                              "values": [ws.name, at.task_first, tc[name], at.task_last, tc[name]]})
        chart.set_title({"name": book.t("Plan versus bill by task")})
        ws.insert_chart(1, max(len(tc), len(at.RESOURCES)) + 1, chart)


def _put(book: Book, ws, row: int, col: int, formula: str | None, value, fmt: str, role: str) -> None:
    """A formula with `value` cached, or the value as an input when `formula` is None."""
    if formula is None:
        book.value(ws, row, col, value, "input", fmt)
    else:
        book.formula(ws, row, col, formula, value, fmt, role)


def _number(value: float | None) -> float | None:
    """None for an unknown (NaN) number: a blank cell."""
    return None if value is None or math.isnan(value) else value


def _limits(book: Book, plan) -> R.Limits:
    """The rules' settings, with the action sentences in the workbook's language."""
    s = plan.inputs.settings
    return R.Limits(s.low_util_threshold, s.oom_threshold, s.variance_tolerance,
                    {r.key: book.t(r.action) for r in R.FLAG_RULES})


_TASK_CELLS = {"task_status": ("Status", "status"), "task_cards": ("Cards", "cards"),
               "planned_pricing": ("Pricing", "planned_pricing"), "task_rows": ("Resources", "resources")}
"""The task block's cells a resource row reads: placeholder -> (name part, task column)."""
_REST_COLUMNS = {"Task": "task", "Lines": "lines", "Billed": "billed", "Flags": "flags", "Saving": "saving",
                 "Attribute": "to_attribute"}
"""The Resources sheet's columns the Recon tab's totals and its rest line read: name part -> resource column."""


def _resources(book: Book, ws, mr, at: ReconLayout, limits: R.Limits, stem: str) -> None:
    """The resources the tab lists (recon_top_resources, flagged first by the money at stake), then one line
    summing the others, which the month's Resources sheet lists (or two, when a CSV file lists them); the flags
    and the action wrap in their columns."""
    rc = at.RESOURCES
    book.header(ws, at.resource_header, rc.headers)
    position = {t.task_id: i for i, t in enumerate(mr.tasks)}
    shown, rest = _split(mr, at)
    for i, res in enumerate(shown):
        k = position.get(res.task_id)
        # The task's own cells, referred to directly: no lookup of a bill's id that might hold * ? or ~.
        task = {key: at.TASKS.fixed(name, at.task_first + 1 + k) if k is not None else '""'
                for key, (_, name) in _TASK_CELLS.items()}
        _resource_row(book, ws, at, at.resource_first + i, res, task, limits)
    if not rest:
        return
    if at.rest_in_csv:
        _csv_lines(book, ws, rest, at, stem)
        return
    for key, (part, name) in _TASK_CELLS.items():
        book.define_range(recon_task_column(at.month, part), at.sheet, at.task_first, at.task_last, at.TASKS[name])
    row = at.rest_row
    ws.write_string(row, rc["resource"], f"{len(rest):,} {book.t('more resources, listed on')} {at.detail_sheet}",
                    book.f.bold)
    ws.write_string(row, rc["flags"], f"{rest.flagged():,} {book.t('flagged')}")
    for key, value in (("Lines", sum(rest.column("lines"))), ("Billed", math.fsum(rest.column("billed"))),
                       ("Saving", math.fsum(rest.column("saving"))),
                       ("Attribute", math.fsum(rest.column("to_attribute")))):
        book.formula(ws, row, rc[_REST_COLUMNS[key]], f"SUM({recon_rest(at.month, key)})", value,
                     "int" if key == "Lines" else "money", "link")


def _csv_lines(book: Book, ws, rest, at: ReconLayout, stem: str) -> None:
    """The resources the CSV file beside the workbook lists, summed as values in two rows of the resource range:
    the tasks' (task column "*", so the totals count them as billed to tasks) and the untagged."""
    rc = at.RESOURCES
    for row, tagged, words in ((at.rest_row, True, "more resources of tasks, listed in"),
                               (at.rest_row + 1, False, "more untagged resources, listed in")):
        part = rest.tagged(tagged)
        ws.write_string(row, rc["resource"], f"{len(part):,} {book.t(words)} {at.csv_name(stem)}", book.f.bold)
        ws.write_string(row, rc["task"], "*" if tagged else "")
        ws.write_string(row, rc["flags"], f"{part.flagged():,} {book.t('flagged')}")
        for name, value, fmt in (("lines", sum(part.column("lines")), "int"),
                                 ("billed", math.fsum(part.column("billed")), "money"),
                                 ("saving", math.fsum(part.column("saving")), "money"),
                                 ("to_attribute", math.fsum(part.column("to_attribute")), "money")):
            book.value(ws, row, rc[name], value, "input", fmt)


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


def _resource_row(book: Book, ws, at: ReconLayout, row: int, res, task: dict[str, str], limits: R.Limits) -> None:
    """One resource's row: its bill and usage, then its rules (flags, action, cards, idle cards, saving, to
    attribute or stop) over its own cells and its task's (`task`: the task block's cells or their names), the
    flags and the action wrapped in their columns."""
    n, rc = row + 1, at.RESOURCES
    ws.write_string(row, rc["resource"], res.resource_id or "")
    ws.write_string(row, rc["task"], res.task_id or "")
    ws.write_string(row, rc["services"], ", ".join(res.services))
    ws.write_number(row, rc["lines"], res.lines)
    book.value(ws, row, rc["pricing"], res.pricing, "input", "text")   # blank when the bill gives no PricingCategory
    book.value(ws, row, rc["billed"], res.billed, "input", "money")
    for name, value, fmt in (("hours", res.hours, "number"), ("util", res.avg_util_pct, "number"),
                             ("mem_share", res.mem_peak_share, "percent"), ("oom", res.oom_events, "int")):
        book.value(ws, row, rc[name], _number(value), "input", fmt)
    cells = {**{key: rc.cell(key, n) for key in RESOURCE_CELLS}, **task}
    action = R.ACTION.py({"flags": " ".join(res.flags)}, limits)
    shown = _shown_flags(res, book.lang)
    book.formula(ws, row, rc["flags"], R.FLAGS.formula(cells), shown, "wrap")
    book.formula(ws, row, rc["action"], R.ACTION.formula(cells), action, "wrap")
    widths = _widths()
    ws.set_row(row, max(book.fit_height(ws, row, shown, widths[rc["flags"]]),
                        book.fit_height(ws, row, action, widths[rc["action"]], slack=0.9)))
    book.formula(ws, row, rc["cards"], R.RESOURCE_CARDS.formula(cells), res.cards, "int")
    book.formula(ws, row, rc["idle"], R.IDLE_CARDS.formula(cells), res.idle_cards, "number")
    book.formula(ws, row, rc["saving"], R.SAVING.formula(cells), res.saving, "money")
    book.formula(ws, row, rc["to_attribute"], R.TO_ATTRIBUTE.formula(cells), res.to_attribute, "money")


RESOURCE_CELLS = ("task", "billed", "util", "mem_share", "oom", "flags", "cards", "idle", "pricing")
"""The resource row's own cells its rules read: each placeholder is the resource column of that name."""


def _shown_flags(res, lang: str) -> str:
    """The flags cell's value as the workbook shows it: each flag's word in the workbook's language."""
    return " ".join(word(flag, lang) for flag in res.flags)


def write_resources_detail(book: Book, ws, plan, mr, at: ReconLayout) -> None:
    """The month's Resources sheet: every resource its Recon tab does not list, with the same rules. A resource's
    task cells are read through the tab's task-block names at the task's position (column Q, blank for a
    resource of no task): INDEX by position, no lookup of the id. Every formula is the same down the column, so
    the rows are written a whole row at a time (book.ColumnBlock)."""
    rc = at.RESOURCES
    headers = [*rc.headers, "task # on the Recon tab"]
    position_col = len(rc)   # after the resource columns
    position_cell = f"${xl_col_to_name(position_col)}{{r}}"
    widths = [*_widths()[:len(rc)], 14]
    for col, width in enumerate(widths):
        ws.set_column(col, col, width)
    ws.write_string(0, 0, f"{book.t('Resources')} {at.month}: {book.t('resources of the month not on its Recon tab')} "
                          f"({book.currency})", book.f.title)
    book.header(ws, at.detail_first - 1, headers)
    limits = _limits(book, plan)
    at_task = {key: f'IF(ISNUMBER({position_cell}),INDEX({recon_task_column(at.month, part)},{position_cell}),"")'
               for key, (part, _) in _TASK_CELLS.items()}
    cells = {**{key: rc.cell(key, "{r}") for key in RESOURCE_CELLS}, **at_task}
    inputs = [(rc["resource"], "resource_id", "text"), (rc["task"], "task_id", "text"),
              (rc["services"], "services", "text"), (rc["lines"], "lines", "int"), (rc["billed"], "billed", "money"),
              (rc["hours"], "hours", "number"), (rc["util"], "util", "number"),
              (rc["mem_share"], "mem_share", "percent"), (rc["oom"], "oom", "int"),
              (rc["pricing"], "pricing", "text"), (position_col, "position", "int")]
    rules = [(rc["flags"], R.FLAGS, "text"), (rc["action"], R.ACTION, "text"), (rc["cards"], R.RESOURCE_CARDS, "int"),
             (rc["idle"], R.IDLE_CARDS, "number"), (rc["saving"], R.SAVING, "money"),
             (rc["to_attribute"], R.TO_ATTRIBUTE, "money")]
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
    for part, name in _REST_COLUMNS.items():
        book.define_range(recon_rest(at.month, part), at.detail_sheet, at.detail_first, at.detail_last, rc[name])
    ws.freeze_panes(at.detail_first, 1)
    ws.autofilter(at.detail_first - 1, 0, at.detail_last, len(headers) - 1)
    print_setup(ws, book.lang, widths, at.detail_last, header_rows=(1, 1), repeat_cols=(0, 0))


def _totals(book: Book, ws, mr, at: ReconLayout, billed_input: float, in_plan: bool) -> None:
    """Each non-GPU category billed against its Extras (only what no Extra planned uses the buffer), then the
    month's totals, the credits and refunds apart, and the achievable saving."""
    ng, rc, v = at.NON_GPU, at.RESOURCES, at.VALUES
    book.header(ws, at.non_gpu_header, ng.headers)
    for i, (category, amount) in enumerate(mr.non_gpu.items()):
        row, n = at.non_gpu_first + i, at.non_gpu_first + i + 1
        planned = mr.non_gpu_planned.get(category, 0.0)
        ws.write_string(row, ng["category"], word(category, book.lang))
        book.value(ws, row, ng["billed"], amount, "input", "money")
        # the category's key as the Extras sheet holds it, in either language
        _put(book, ws, row, ng["planned"], f'SUMPRODUCT(({EXTRAS_CATEGORY}="{category}")*{extras_cost(at.month)})'
             if in_plan else None, planned, "money", "link")
        book.formula(ws, row, ng["not_planned"], R.NOT_PLANNED.formula({"billed": ng.cell("billed", n),
                                                                        "planned": ng.cell("planned", n)}),
                     mr.not_planned(category), "money")
    first, last = at.non_gpu_first + 1, at.non_gpu_last
    a, b = at.resource_first + 1, at.resource_last + 1
    t = {key: v.cell("value", at.total(key)) for key in at.TOTALS}
    buffer = (month_buffer(at.month), "link") if in_plan else (None, "input")
    commitments = (commit_adjustment(at.month), "link") if in_plan else (None, "input")
    cells = {"non_gpu": t["non_gpu"], "reserved": t["reserved"], "allocated": t["allocated"],
             "unallocated": t["unallocated"], "tasks": rc.span("task", a, b), "billed": rc.span("billed", a, b),
             "commitments": at.COMMITMENTS.cell("billed", at.commitment_total + 1),
             "credits": f"({t['credit']}+{t['refund']})", "saving": rc.span("saving", a, b),
             "idle_saving": t["idle_saving"]}
    rest = {"tasks": recon_rest(at.month, "Task"), "billed": recon_rest(at.month, "Billed"),
            "saving": recon_rest(at.month, "Saving")}

    def over_all(rule: R.Rule) -> str:
        """A rule over the tab's resource rows, plus over the Resources sheet's when the tab lists only some."""
        return rule.formula(cells) + (f"+{rule.formula(rest)}" if at.rest_rows and not at.rest_in_csv else "")

    values = {"reserved": mr.buffer_reserved, "non_gpu": mr.non_gpu_not_planned,
              "tasks": [t or "" for t in mr.resources.column("task_id")], "billed": mr.resources.column("billed"),
              "saving": mr.resources.column("saving")}
    rows = {
        "non_gpu": ("non-GPU billed", f"SUM({ng.range('billed', first, last)})",
                    mr.non_gpu_billed, "calc"),
        "reserved": ("hidden-cost buffer reserved", buffer[0], mr.buffer_reserved, buffer[1]),
        "buffer_left": ("buffer left", R.BUFFER_LEFT.formula({**cells, "non_gpu": t["not_planned"]}), mr.buffer_left,
                        "calc"),
        "allocated": ("GPU billed to tasks", over_all(R.ALLOCATED_GPU), R.ALLOCATED_GPU.py(values, None), "calc"),
        "unallocated": ("unallocated GPU", over_all(R.UNALLOCATED_GPU), R.UNALLOCATED_GPU.py(values, None), "calc"),
        "billed": ("billed total", R.BILLED_TOTAL.formula(cells), mr.billed_total, "calc"),
        "planned": ("planned GPU total", f"SUM({at.TASKS.range('planned', at.task_first + 1, at.task_last + 1)})",
                    mr.planned_total, "calc"),
        # committed cost less the rent it displaces (Commitments): the plan's GPU cost is the tasks' plus this
        "commitments": ("commitments planned (Commitments)", commitments[0], mr.planned_commitments, commitments[1]),
        "input": ("BilledCost in the input", None, billed_input, "input"),
        "not_planned": ("non-GPU not planned", f"SUM({ng.range('not_planned', first, last)})",
                        mr.non_gpu_not_planned, "calc"),
        **{k: (CREDIT_WORDS[k], None, mr.credits.get(k, 0.0), "input") for k in CREDIT_KINDS},
        "idle_saving": ("saving from idle cards", over_all(R.IDLE_SAVING), mr.idle_saving, "calc"),
        "saving": ("achievable saving", R.ACHIEVABLE_SAVING.formula(cells), mr.achievable_saving, "total"),
    }
    for key in at.TOTALS:
        label, formula, value, role = rows[key]
        row = at.total(key) - 1
        ws.write_string(row, v["label"], book.t(label), book.f.bold)
        if formula is None:
            book.value(ws, row, v["value"], value, role, "money")
        else:
            book.formula(ws, row, v["value"], formula, value, "money", role)
    book.define(recon_billed_total(at.month), at.sheet, at.total("billed") - 1, v["value"])
    book.define(recon_billed_input(at.month), at.sheet, at.total("input") - 1, v["value"])
    book.define(recon_saving(at.month), at.sheet, at.total("saving") - 1, v["value"])


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
    r, v = at.coverage_header, at.VALUES
    col = v["value"]
    book.header(ws, r, v.header_row(label="bill coverage"))
    cov = mr.coverage
    unknown = (lambda row: ws.write_string(row, col, book.t("not known"), book.f.note))
    not_reported = (lambda row: ws.write_string(row, col, book.t("not reported"), book.f.note))
    if cov is None:
        first = last = days = unknown
        partial = (lambda row: book.value(ws, row, col, False, "input", "flag"))
    else:
        first = (lambda row: _date(book, ws, row, col, cov.first))
        last = (lambda row: _date(book, ws, row, col, cov.last))
        days = (lambda row: book.value(ws, row, col, cov.days_with_lines, "input", "int"))
        partial = (lambda row: book.formula(ws, row, col, R.PARTIAL.formula(
            {"first": v.cell("value", r + 2), "last": v.cell("value", r + 3)}), cov.partial, "flag"))
    if mr.duplicates is None:
        count = amount = not_reported
    else:
        count = (lambda row: book.value(ws, row, col, mr.duplicates[0], "input", "int"))
        amount = (lambda row: book.value(ws, row, col, mr.duplicates[1], "input", "money"))
    rows = [("first charge day", first), ("last charge day", last), ("days with lines", days),
            ("partial month", partial), ("duplicate lines counted once", count), ("their BilledCost", amount)]
    for i, (label, write_value) in enumerate(rows, start=1):
        ws.write_string(r + i, v["label"], book.t(label), book.f.bold)
        write_value(r + i)
    book.define(recon_partial(at.month), at.sheet, at.partial_row, col)


def _date(book: Book, ws, row: int, col: int, day: dt.date) -> None:
    ws.write_datetime(row, col, dt.datetime.combine(day, dt.time()), book.f.get("input", DATE_FORMAT))


def _like_for_like(book: Book, ws, mr, at: ReconLayout, in_plan: bool) -> None:
    """GPU billed against GPU planned (commitments on both sides), non-GPU billed against Extras + buffer, the
    credits and refunds apart, total against total (the planned total is Summary's month total)."""
    r, lk = at.like_header, at.LIKE
    book.header(ws, r, lk.headers)
    t = {key: at.VALUES.cell("value", at.total(key)) for key in at.TOTALS}
    extras = f"SUM({extras_cost(at.month)})+{t['reserved']}" if in_plan else t["reserved"]   # no Extras outside it
    rows = [
        # The plan's GPU cost is the tasks' rent and the commitments' adjustment (committed cost less the rent it
        # displaces); the bill's, its GPU lines and its commitment lines (reservation fees, unused commitment).
        ("GPU and commitments", f"{t['planned']}+{t['commitments']}", mr.planned_gpu_all,
         f"{t['allocated']}+{t['unallocated']}+{at.COMMITMENTS.cell('billed', at.commitment_total + 1)}",
         mr.billed_gpu_all),
        ("non-GPU (extras + buffer)", extras, mr.planned_extras + mr.buffer_reserved, t["non_gpu"], mr.non_gpu_billed),
        # Credits and refunds are planned nowhere and netted into no usage line above.
        ("credits and refunds", "0", 0.0, f"{t['credit']}+{t['refund']}", mr.credit_billed),
        ("total", "+".join(lk.cell("planned", r + k) for k in (2, 3, 4)), mr.planned_all, t["billed"],
         mr.billed_total),
    ]
    for i, (label, planned, planned_value, billed, billed_value) in enumerate(rows, start=1):
        n = r + i + 1
        ws.write_string(r + i, lk["label"], book.t(label), book.f.bold)
        book.formula(ws, r + i, lk["planned"], planned, planned_value, "money")
        book.formula(ws, r + i, lk["billed"], billed, billed_value, "money")
        values = {"billed": billed_value, "planned": planned_value}
        book.formula(ws, r + i, lk["variance"], R.VARIANCE.formula({"billed": lk.cell("billed", n),
                                                                    "planned": lk.cell("planned", n)}),
                     R.VARIANCE.py(values, None), "money")


def _commitments(book: Book, ws, mr, at: ReconLayout) -> None:
    """The commitment lines apart from the tasks (unused commitment, purchases) with their total, which the
    billed total adds; then the month's EffectiveCost (amortised), or a note when the bill does not give it for
    every line."""
    cm = at.COMMITMENTS
    book.header(ws, at.commitment_header, cm.headers)
    for i, c in enumerate(mr.commitments):
        row = at.commitment_first + i
        ws.write_string(row, cm["kind"], book.t(COMMITMENT_KINDS[c.kind]))
        book.value(ws, row, cm["billed"], c.billed, "input", "money")
        book.value(ws, row, cm["effective"], c.effective, "input", "money")
        ws.write_string(row, cm["commitment_id"], c.commitment_id)
        ws.write_string(row, cm["commitment_type"], c.commitment_type)
    total = at.commitment_total
    ws.write_string(total, cm["kind"], book.t("commitment lines billed"), book.f.bold)
    book.formula(ws, total, cm["billed"], f"SUM({cm.range('billed', at.commitment_first + 1, total)})",
                 mr.commitment_billed, "money")
    # the month's EffectiveCost below the billed total, as the bill's lines give it
    ws.write_string(total + 1, cm["kind"], book.t("EffectiveCost of the month"), book.f.bold)
    if mr.effective_total is None:
        ws.write_string(total + 1, cm["billed"], book.t("not in every line of the bill"), book.f.note)
    else:
        book.value(ws, total + 1, cm["billed"], mr.effective_total, "input", "money")


def _daily(book: Book, ws, mr, at: ReconLayout, limits: R.Limits) -> None:
    """Each task's GPU bill per charge day (sorted by task, then day; "" the untagged lines), the median of its
    previous billed days (at most R.SPIKE_DAYS rows above, the same task's) and the spike flag, live."""
    dc = at.DAILY
    book.header(ws, at.daily_header, dc.headers)
    first_of_task = at.daily_first
    for i, d in enumerate(mr.daily):
        row = at.daily_first + i
        if i == 0 or d.task_id != mr.daily[i - 1].task_id:
            first_of_task = row
        ws.write_string(row, dc["task_id"], d.task_id)
        _date(book, ws, row, dc["day"], d.day)
        book.value(ws, row, dc["billed"], d.billed, "input", "money")
        start = max(first_of_task, row - R.SPIKE_DAYS)
        if start < row:
            book.formula(ws, row, dc["median"], R.TRAILING_MEDIAN.formula(
                {"previous": dc.range('billed', start + 1, row)}), d.median, "money")
        else:
            ws.write_blank(row, dc["median"], None, book.f.get("calc", "money"))
        book.formula(ws, row, dc["spike"], R.SPIKE.formula({"median": dc.cell("median", row + 1),
                                                            "billed": dc.cell("billed", row + 1)}), d.spike, "flag")
