"""Summary: the checks banner, the period total, each month (GPU + extras + hidden-cost buffer), GPU cost by
tier, kind and cost center, warnings (those that follow the numbers as formulas) and the tier chart."""

from __future__ import annotations

import math

from xlsxwriter.utility import xl_col_to_name

from ..core.i18n import say, word
from ..core.schema import TASK_TIERS, TIER, TIER_NAMES
from ..model import rules
from ..plan.engine import Plan
from ..plan.scenarios import SCENARIO_BUFFER
from ..recon.rules import REFORECAST, VARIANCE, VARIANCE_PCT
from .book import Book
from .budgets import write_budget_line
from .layout import (
    ALL_CHECKS,
    BUFFER_TOTAL,
    COMMITMENTS_TOTAL,
    COST_CENTER_COSTS,
    EXTRAS_TOTAL,
    GPU_TOTAL,
    KIND_COSTS,
    MONTHLY_TIER,
    PERIOD_TOTAL,
    SENTENCES,
    TIER_PERIOD_COSTS,
    SummaryLayout,
    commit_adjustment,
    extras_cost,
    gpu_cost,
    month_buffer,
    recon_billed_total,
    recon_partial,
    sentence,
    shown,
)
from .printing import print_setup
from .scenarios import write_scenario_selector

SHEET = "Summary"
_TOTAL_NAMES = (GPU_TOTAL, COMMITMENTS_TOTAL, EXTRAS_TOTAL, BUFFER_TOTAL, PERIOD_TOTAL)
LABEL_WIDTH, NUMBER_WIDTH = 24, 12     # column A (months, labels) and every other column, in characters
TITLE_HEIGHT = 21.0                   # the 14 pt title's row, set so that no reader resizes it under the charts
SIDE_HEADER = 30.0                    # the by-kind and by-cost-center headers: two lines in a number column
CHART_GAP = 10                        # pixels between a chart and the block on its left
REFORECAST_HEADERS = ("re-forecast", "planned", "billed", "partial month", "estimate")
BUFFER_NOTE = "the hidden-cost buffer is charged on the GPU cost only, commitments included (BufferRate x (GPU + commitments))"


def write_summary(book: Book, ws, plan: Plan, at: SummaryLayout, checks_pass: bool) -> None:
    """The Summary's blocks top to bottom (a streamed sheet is written row by row, in order)."""
    widths = [LABEL_WIDTH, *[NUMBER_WIDTH] * (at.width - 1)]
    for col, width in enumerate(widths):
        ws.set_column(col, col, width)
    months = list(at.months)
    ws.set_row(0, TITLE_HEIGHT)
    ws.write_string(0, 0, f"{book.t('GPU budget')} {months[0]} {book.t('to')} {months[-1]} ({book.currency})",
                    book.f.title)
    ok, fail = book.t(SENTENCES["BannerOk"]), book.t(SENTENCES["BannerFail"])
    book.formula(ws, at.banner_row, 0, rules.BANNER.formula(all_checks=ALL_CHECKS, ok=sentence("BannerOk"),
                                                            fail=sentence("BannerFail")),
                 rules.BANNER(None, all_checks=checks_pass, ok=ok, fail=fail), "text", "total")
    ws.conditional_format(at.banner_row, 0, at.banner_row, 0, {
        "type": "text", "criteria": "not containing", "value": ok, "format": book.f.alarm})
    ws.write_string(at.period_row, 0, book.t("Period total"), book.f.bold)
    book.formula(ws, at.period_row, 1, PERIOD_TOTAL, plan.period_total, "money", "total")
    write_scenario_selector(book, ws, at.selector_row)
    write_budget_line(book, ws, at.selector_row, plan)
    heights = {0: TITLE_HEIGHT, at.note_row: _across(book, ws, at, at.note_row, book.t(BUFFER_NOTE), book.f.note),
               at.month_header: 30.0}
    _month_table(book, ws, plan, at)
    _by_group(book, ws, plan, at.kind_header, "by kind, GPU only", "kind", at.kinds, KIND_COSTS)
    _by_group(book, ws, plan, at.center_header, "by cost center, GPU only", "cost_center", at.centers, COST_CENTER_COSTS)
    _tier_chart(book, ws, at)
    heights.update(_warnings(book, ws, plan, at))
    heights.update(dict.fromkeys((at.kind_header, at.center_header), SIDE_HEADER))
    print_setup(ws, book.lang, widths, at.last_row, blocks=at.blocks, heights=heights)


def _across(book: Book, ws, at: SummaryLayout, row: int, text: str, fmt, formula: str | None = None) -> float:
    """`text` (or `formula` showing it) wrapped across the sheet's width; the row's height in points."""
    ws.merge_range(row, 0, row, at.width - 1, "" if formula else text, fmt)
    if formula is not None:
        book.formula(ws, row, 0, formula, text, "wrap")
    # a printed line holds more characters than the columns are wide (187 in 132 in DejaVu Sans): a tenth kept spare
    height = book.fit_height(ws, row, text, LABEL_WIDTH + NUMBER_WIDTH * (at.width - 1), slack=0.78)
    ws.set_row(row, height)   # a height of its own: LibreOffice would grow the row after placing the charts
    return height


def _month_table(book: Book, ws, plan: Plan, at: SummaryLayout) -> None:
    """Per month the GPU rent, the commitments' adjustment (Commitments), extras, the buffer and the total, then
    the GPU rent by tier (the tier's key in the formulas, its word in the header); a total row, each tier's cap a
    month and the months over it."""
    s = plan.inputs.settings
    tiers = list(TIER_NAMES)
    book.header(ws, at.month_header, [*at.columns, *(f"GPU: {word(t, book.lang)}" for t in tiers)])
    ws.set_row(at.month_header, 30)
    first, last = at.first_month_row + 1, at.total_row   # 1-based rows of the first and last month
    for j, month in enumerate(at.months):
        r = at.first_month_row + j
        n = r + 1
        t = plan.month_totals[month]
        ws.write_string(r, 0, month)
        book.formula(ws, r, 1, f"SUM({gpu_cost(month)})", t.gpu, "money")
        book.formula(ws, r, 2, commit_adjustment(month), t.commitments, "money", "link")
        book.formula(ws, r, 3, f"SUM({extras_cost(month)})", t.extras, "money")
        book.formula(ws, r, 4, rules.BUFFER.formula(gpu=f"B{n}", commitments=f"C{n}", rate=SCENARIO_BUFFER), t.buffer, "money")
        book.formula(ws, r, 5, rules.MONTH_TOTAL.formula(gpu=f"B{n}", commitments=f"C{n}", extras=f"D{n}",
                                                         buffer=f"E{n}"), t.total, "money")
        book.define(month_buffer(month), SHEET, r, 4)
        for i, tier in enumerate(tiers):
            book.formula(ws, r, at.first_tier_col + i, f'SUMIFS({gpu_cost(month)},{MONTHLY_TIER},"{tier}")',
                         plan.tier_totals[tier][month], "money")
    ws.write_string(at.total_row, 0, book.t("Total"), book.f.bold)
    totals = [math.fsum(getattr(plan.month_totals[m], k) for m in at.months)
              for k in ("gpu", "commitments", "extras", "buffer")]
    totals += [plan.period_total] + [math.fsum(plan.tier_totals[t].values()) for t in tiers]
    for c, value in enumerate(totals, start=1):
        col = xl_col_to_name(c)
        book.formula(ws, at.total_row, c, f"SUM({col}{first}:{col}{last})", value, "money", "total")
        if c <= len(_TOTAL_NAMES):
            book.define(_TOTAL_NAMES[c - 1], SHEET, at.total_row, c)
    book.define_range(TIER_PERIOD_COSTS, SHEET, at.total_row, at.total_row, at.first_tier_col,
                      at.first_tier_col + len(tiers) - 1)
    ws.write_string(at.cap_row, 0, book.titled("cap a month", "currency"))
    for i, tier in enumerate(tiers):
        col = at.first_tier_col + i
        cap = s.tier_cap(TIER[tier])
        lookup = f'INDEX(TierCaps,MATCH("{tier}",TierList,0))'
        book.formula(ws, at.cap_row, col, f'IF({lookup}="","",{lookup})', cap, "money", "link")
    ws.write_string(at.over_cap_row, 0, book.t("months over cap"))
    for i, tier in enumerate(tiers):
        col = at.first_tier_col + i
        name = xl_col_to_name(col)
        book.formula(ws, at.over_cap_row, col,
                     rules.OVER_CAP_MONTHS.formula(cap=f"{name}{at.cap_row + 1}", costs=f"{name}{first}:{name}{last}"),
                     rules.OVER_CAP_MONTHS(s, cap=s.tier_cap(TIER[tier]),
                                           costs=list(plan.tier_totals[tier].values())), "int")


def _chart(book: Book, title: str, kind: dict, series: list[dict], rows: int, columns: int):
    """A chart of `series` (name and values as [sheet, row, col, ...]) `rows` rows tall and `columns` of the
    sheet's number columns wide (less CHART_GAP), its text large enough to read on the printed page."""
    chart = book.wb.add_chart(kind)
    for one in series:
        chart.add_series(one)
    chart.set_title({"name": title, "name_font": {"size": 11}})
    chart.set_x_axis({"num_font": {"size": 10}})
    chart.set_y_axis({"num_format": book.f.num["money"], "min": 0, "num_font": {"size": 10}})
    chart.set_legend({"position": "bottom", "font": {"size": 10}})
    chart.set_size({"width": columns * (NUMBER_WIDTH * 7 + 5) - CHART_GAP, "height": rows * 20})
    return chart


def _tier_chart(book: Book, ws, at: SummaryLayout) -> None:
    """The monthly GPU cost by tier, stacked, beside the by-kind and by-cost-center blocks."""
    first, last = at.first_month_row, at.total_row - 1
    series = [{"name": [SHEET, at.month_header, col], "categories": [SHEET, first, 0, last, 0],
               "values": [SHEET, first, col, last, col]}
              for col in range(at.first_tier_col, at.first_tier_col + len(TASK_TIERS))]
    chart = _chart(book, book.t("Monthly GPU cost by tier"), {"type": "column", "subtype": "stacked"}, series,
                   at.side_rows, at.width - at.chart_col)
    ws.insert_chart(at.kind_header, at.chart_col, chart, {"x_offset": CHART_GAP})


def _by_group(book: Book, ws, plan: Plan, r: int, label: str, key: str, groups, name: str) -> None:
    """GPU cost over the plan per kind (the kind's key in the formula) or per cost center."""
    book.header(ws, r, [label, book.titled("period cost", "currency")])
    ws.set_row(r, SIDE_HEADER)
    column = "TaskKind" if key == "kind" else "TaskCostCenter"
    for i, group in enumerate(groups, start=1):
        value = math.fsum(tp.row["period_cost"] for tp in plan.tasks if tp.task.values[key] == group)
        if key == "kind":
            ws.write_string(r + i, 0, word(group, book.lang))
            criterion = f'"{group}"'
        else:
            ws.write_string(r + i, 0, group)
            criterion = f"$A{r + i + 1}"
        # EXACT, not SUMIFS: criteria would ignore case and read * ? ~ as wildcards.
        book.formula(ws, r + i, 1, f"SUMPRODUCT(EXACT({column},{criterion})*TaskPeriodCost)", value, "money")
    book.define_range(name, SHEET, r + 1, r + len(groups), 1)


def write_reforecast(book: Book, ws, plan: Plan, recon, at: SummaryLayout) -> None:
    """The re-forecast: each plan month from its bill when billed (recon.rules.REFORECAST), else from the plan;
    the estimate at completion against the budget (PeriodTotal). Nothing when no plan month is billed."""
    if at.reforecast_header is None:
        return
    r = at.reforecast_header
    book.header(ws, r, list(REFORECAST_HEADERS))
    estimates = []
    for j, month in enumerate(at.months):
        row = r + 1 + j
        n = row + 1
        mr = recon.get(month) if month in at.billed_months else None
        ws.write_string(row, 0, month)
        planned = plan.month_totals[month].total
        book.formula(ws, row, 1, f"F{at.first_month_row + 1 + j}", planned, "money")
        if mr is None:
            book.value(ws, row, 2, None, "input", "money")
            book.value(ws, row, 3, None, "input", "flag")
        else:
            book.formula(ws, row, 2, recon_billed_total(month), mr.billed_total, "money", "link")
            book.formula(ws, row, 3, recon_partial(month), mr.partial, "flag", "link")
        values = {"planned": planned, "billed": None if mr is None else mr.billed_total,
                  "partial": mr is not None and mr.partial}
        estimates.append(REFORECAST.py(values, None))
        book.formula(ws, row, 4, REFORECAST.formula({"planned": f"B{n}", "billed": f"C{n}", "partial": f"D{n}"}),
                     estimates[-1], "money")
    first, last = r + 2, r + 1 + len(at.months)
    eac = math.fsum(estimates)
    end = last   # 0-based row of the first line below the months
    cells = {"billed": f"B{end + 1}", "planned": f"B{end + 2}", "variance": f"B{end + 3}"}
    variance = VARIANCE.py({"billed": eac, "planned": plan.period_total}, None)
    rows = [
        ("estimate at completion", f"SUM(E{first}:E{last})", eac, "total"),
        ("budget", PERIOD_TOTAL, plan.period_total, "link"),
        ("variance at completion", VARIANCE.formula(cells), variance, "calc"),
    ]
    for i, (label, formula, value, role) in enumerate(rows):
        ws.write_string(end + i, 0, book.t(label), book.f.bold)
        book.formula(ws, end + i, 1, formula, value, "money", role)
    pct = VARIANCE_PCT.py({"variance": variance, "planned": plan.period_total}, None)
    book.formula(ws, end + 2, 2, VARIANCE_PCT.formula(cells), pct, "percent")
    series = [{"name": [SHEET, r, col], "categories": [SHEET, r + 1, 0, r + len(at.months), 0],
               "values": [SHEET, r + 1, col, r + len(at.months), col]} for col in (1, 2)]
    right = len(REFORECAST_HEADERS) + 1
    chart = _chart(book, book.t("Plan vs billed"), {"type": "column"}, series, at.reforecast_rows, at.width - right)
    ws.insert_chart(r, right, chart, {"x_offset": CHART_GAP})


def _warnings(book: Book, ws, plan: Plan, at: SummaryLayout) -> dict[int, float]:
    """The tier advice and the caps as formulas over Tasks and the month table; the other warnings as text. Each
    line wrapped across the sheet's width; the rows' heights in points."""
    s, t = plan.inputs.settings, book.t
    r = at.warnings_row
    ws.write_string(r, 0, t("Warnings"), book.f.bold)
    savings = [tp.row["tier_saving"] for tp in plan.tasks]
    count = rules.CHEAPER_ELSEWHERE.formula(savings="TaskTierSaving")
    cheaper = rules.CHEAPER_ELSEWHERE(s, savings=savings)
    advice = t(SENTENCES["Advice"])
    saving = rules.WHOLE.formula(value="SUM(TaskTierSaving)")
    warn = book.f.get("calc", "wrap")
    heights = {r + 1: _across(book, ws, at, r + 1, advice.format(
        count=cheaper, saving=rules.WHOLE(s, value=math.fsum(savings))) if cheaper else "", warn,
        f'IF({count}>0,{sentence("Advice", count=count, saving=saving)},"")')}
    texts, formulas = [], []
    for i, tier in enumerate(TIER_NAMES):
        over = rules.OVER_CAP_MONTHS(s, cap=s.tier_cap(TIER[tier]),
                                     costs=list(plan.tier_totals[tier].values()))
        if over:
            texts.append(t(SENTENCES["OverCap"]).format(tier=word(tier, book.lang), months=over))
        cell = f"${xl_col_to_name(at.first_tier_col + i)}${at.over_cap_row + 1}"
        text = sentence("OverCap", tier=shown(f'"{tier}"'), months=cell)
        formulas.append(f'IF(AND(ISNUMBER({cell}),{cell}>0),{text}&" ","")')
    # one line for every tier over its cap, the sentences one space apart (TRIM drops the last space)
    heights[r + 2] = _across(book, ws, at, r + 2, " ".join(texts), warn, f"TRIM({'&'.join(formulas)})")
    for i, w in enumerate(at.warnings, start=r + 3):
        heights[i] = _across(book, ws, at, i, say(w, book.lang), warn)
    ws.conditional_format(r + 1, 0, at.warnings_end - 1, 0, {"type": "no_blanks", "format": book.f.warn})
    return heights
