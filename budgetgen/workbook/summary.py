"""Summary: the checks banner, the period total, each month (GPU + extras + hidden-cost buffer), GPU cost by
tier, kind and cost center, warnings (those that follow the numbers as formulas) and the tier chart."""

from __future__ import annotations

import math

from xlsxwriter.utility import xl_col_to_name

from .. import rules
from ..engine import Plan
from ..i18n import say, word
from ..recon.rules import REFORECAST, VARIANCE, VARIANCE_PCT
from ..scenarios import SCENARIO_BUFFER
from ..schema import TASK_TIERS, TIER, TIER_NAMES
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
BUFFER_NOTE = "the hidden-cost buffer is charged on the GPU cost only, commitments included (BufferRate x (GPU + commitments))"


def write_summary(book: Book, ws, plan: Plan, at: SummaryLayout, checks_pass: bool) -> None:
    months = list(at.months)
    widths = [28, *[15] * (len(months) + 1), 12, 12]
    for col, width in enumerate(widths):
        ws.set_column(col, col, width)
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
    ws.write_string(at.period_row, 2, book.t(BUFFER_NOTE), book.f.note)
    write_scenario_selector(book, ws, at.period_row + 1)
    write_budget_line(book, ws, at.period_row + 1, plan)
    _month_table(book, ws, plan, at)
    _by_tier(book, ws, plan, at)
    _by_group(book, ws, plan, at.kind_header, "by kind", "kind", at.kinds, KIND_COSTS)
    _by_group(book, ws, plan, at.center_header, "by cost center", "cost_center", at.centers, COST_CENTER_COSTS)
    _warnings(book, ws, plan, at)
    _chart(book, ws, at)
    print_setup(ws, book.lang, widths, at.last_row, blocks=at.blocks,
                heights=dict.fromkeys((at.tier_header, at.kind_header, at.center_header), 30))


def _month_table(book: Book, ws, plan: Plan, at: SummaryLayout) -> None:
    """Per month the GPU rent, the commitments' adjustment (Commitments), extras, the buffer and the total."""
    book.header(ws, at.month_header, list(at.columns))
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
    ws.write_string(at.total_row, 0, book.t("Total"), book.f.bold)
    totals = [math.fsum(getattr(plan.month_totals[m], k) for m in at.months)
              for k in ("gpu", "commitments", "extras", "buffer")]
    for c, (name, value) in enumerate(zip(_TOTAL_NAMES, [*totals, plan.period_total], strict=True), start=1):
        col = xl_col_to_name(c)
        book.formula(ws, at.total_row, c, f"SUM({col}{at.first_month_row + 1}:{col}{at.total_row})", value,
                     "money", "total")
        book.define(name, SHEET, at.total_row, c)


def _by_tier(book: Book, ws, plan: Plan, at: SummaryLayout) -> None:
    """GPU cost per tier and month (the tier's key in the formulas, its word in column A), the period, the cap
    and the months over it, and a total row."""
    s = plan.inputs.settings
    months = list(at.months)
    r, period = at.tier_header, 1 + len(months)
    last_month = xl_col_to_name(len(months))
    book.header(ws, r, ["by tier", *months, book.t("period") + f" ({book.t('GPU only')})",
                        book.titled("cap a month", "currency"), "months over cap"])
    ws.set_row(r, 30)
    for i, tier in enumerate(TIER_NAMES, start=1):
        row, n = r + i, r + i + 1
        ws.write_string(row, 0, word(tier, book.lang))
        for j, month in enumerate(months):
            book.formula(ws, row, 1 + j, f'SUMIFS({gpu_cost(month)},{MONTHLY_TIER},"{tier}")',
                         plan.tier_totals[tier][month], "money")
        book.formula(ws, row, period, f"SUM(B{n}:{last_month}{n})", math.fsum(plan.tier_totals[tier].values()),
                     "money", "total")
        cap = getattr(s, TIER[tier].cap_setting)
        lookup = f'INDEX(TierCaps,MATCH("{tier}",TierList,0))'
        book.formula(ws, row, period + 1, f'IF({lookup}="","",{lookup})', cap, "money", "link")
        cap_cell = f"{xl_col_to_name(period + 1)}{n}"
        book.formula(ws, row, period + 2, rules.OVER_CAP_MONTHS.formula(cap=cap_cell, costs=f"B{n}:{last_month}{n}"),
                     rules.OVER_CAP_MONTHS(s, cap=cap, costs=list(plan.tier_totals[tier].values())), "int")
    total = at.tier_total_row
    ws.write_string(total, 0, book.t("Total"), book.f.bold)
    for col in range(1, period + 1):
        name = xl_col_to_name(col)
        value = math.fsum(plan.tier_totals[t][months[col - 1]] for t in TIER_NAMES) if col < period else \
            math.fsum(v for t in TIER_NAMES for v in plan.tier_totals[t].values())
        book.formula(ws, total, col, f"SUM({name}{r + 2}:{name}{total})", value, "money", "total")
    book.define_range(TIER_PERIOD_COSTS, SHEET, r + 1, r + len(TASK_TIERS), period)


def _chart(book: Book, ws, at: SummaryLayout) -> None:
    r, months = at.tier_header, len(at.months)
    chart = book.wb.add_chart({"type": "column", "subtype": "stacked"})
    for i in range(1, len(TASK_TIERS) + 1):
        chart.add_series({"name": [SHEET, r + i, 0], "categories": [SHEET, r, 1, r, months],
                          "values": [SHEET, r + i, 1, r + i, months]})
    chart.set_title({"name": book.t("Monthly GPU cost by tier")})
    chart.set_y_axis({"num_format": book.f.num["money"], "min": 0})
    chart.set_size({"width": 640, "height": int(at.chart_rows * 20)})
    ws.insert_chart(at.chart_row, 0, chart)


def _by_group(book: Book, ws, plan: Plan, r: int, label: str, key: str, groups, name: str) -> None:
    """GPU cost over the plan per kind (the kind's key in the formula) or per cost center."""
    book.header(ws, r, [label, book.titled("period cost", "currency") + f", {book.t('GPU only')}"])
    ws.set_row(r, 30)
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
    book.header(ws, r, ["re-forecast", "planned", "billed", "partial month", "estimate"])
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


def _warnings(book: Book, ws, plan: Plan, at: SummaryLayout) -> None:
    """The tier advice and the caps as formulas over Tasks and the by-tier table; the other warnings as text."""
    s, t = plan.inputs.settings, book.t
    r = at.warnings_row
    ws.write_string(r, 0, t("Warnings"), book.f.bold)
    savings = [tp.row["tier_saving"] for tp in plan.tasks]
    count = rules.CHEAPER_ELSEWHERE.formula(savings="TaskTierSaving")
    cheaper = rules.CHEAPER_ELSEWHERE(s, savings=savings)
    advice = t(SENTENCES["Advice"])
    saving = rules.WHOLE.formula(value="SUM(TaskTierSaving)")
    book.formula(ws, r + 1, 0, f'IF({count}>0,{sentence("Advice", count=count, saving=saving)},"")',
                 advice.format(count=cheaper, saving=rules.WHOLE(s, value=math.fsum(savings))) if cheaper else "",
                 "text")
    over_col = xl_col_to_name(len(at.months) + 3)
    for i, tier in enumerate(TIER_NAMES):
        tier_word = word(tier, book.lang)
        over = rules.OVER_CAP_MONTHS(s, cap=getattr(s, TIER[tier].cap_setting),
                                     costs=list(plan.tier_totals[tier].values()))
        cell = f"${over_col}${at.tier_header + 2 + i}"
        text = sentence("OverCap", tier=shown(f'"{tier}"'), months=cell)
        book.formula(ws, r + 2 + i, 0, f'IF(AND(ISNUMBER({cell}),{cell}>0),{text},"")',
                     t(SENTENCES["OverCap"]).format(tier=tier_word, months=over) if over else "", "text")
    for i, w in enumerate(at.warnings, start=r + 2 + len(TASK_TIERS)):
        ws.write_string(i, 0, say(w, book.lang))
    ws.conditional_format(r + 1, 0, at.warnings_end - 1, 0, {"type": "no_blanks", "format": book.f.warn})
