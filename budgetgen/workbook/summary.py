"""Summary: the period total, each month (GPU + extras + hidden-cost buffer), by tier, kind and cost center."""

from __future__ import annotations

import math

from xlsxwriter.utility import xl_col_to_name

from .. import rules
from ..engine import Plan
from ..i18n import say
from ..recon.rules import REFORECAST, VARIANCE, VARIANCE_PCT
from ..schema import TIERS
from .book import Book
from .layout import (
    BUFFER_TOTAL,
    COST_CENTER_COSTS,
    EXTRAS_TOTAL,
    GPU_TOTAL,
    KIND_COSTS,
    MONTHLY_TIER,
    PERIOD_TOTAL,
    TIER_PERIOD_COSTS,
    SummaryLayout,
    extras_cost,
    gpu_cost,
    month_buffer,
    recon_billed_total,
    recon_partial,
)

SHEET = "Summary"
_TOTAL_NAMES = (GPU_TOTAL, EXTRAS_TOTAL, BUFFER_TOTAL, PERIOD_TOTAL)


def write_summary(book: Book, ws, plan: Plan, at: SummaryLayout) -> None:
    months = list(at.months)
    ws.set_column(0, 0, 26)
    ws.set_column(1, 1 + len(months), 15)
    ws.write_string(0, 0, f"{book.t('GPU budget')} {months[0]} {book.t('to')} {months[-1]} ({book.currency})",
                    book.f.title)
    ws.write_string(at.period_row, 0, book.t("Period total"), book.f.bold)
    book.formula(ws, at.period_row, 1, PERIOD_TOTAL, plan.period_total, "money", "total")
    _month_table(book, ws, plan, at)
    _by_tier(book, ws, plan, at)
    _by_group(book, ws, plan, at.kind_header, "by kind", "kind", at.kinds, KIND_COSTS)
    _by_group(book, ws, plan, at.center_header, "by cost center", "cost_center", at.centers, COST_CENTER_COSTS)
    ws.write_string(at.warnings_row, 0, book.t("Warnings"), book.f.bold)
    for i, w in enumerate(plan.warnings or ("none",), start=1):
        ws.write_string(at.warnings_row + i, 0, say(w, book.lang), book.f.warn if plan.warnings else book.f.note)


def _month_table(book: Book, ws, plan: Plan, at: SummaryLayout) -> None:
    book.header(ws, at.month_header, list(at.columns))
    for j, month in enumerate(at.months):
        r = at.first_month_row + j
        n = r + 1
        t = plan.month_totals[month]
        ws.write_string(r, 0, month)
        book.formula(ws, r, 1, f"SUM({gpu_cost(month)})", t.gpu, "money")
        book.formula(ws, r, 2, f"SUM({extras_cost(month)})", t.extras, "money")
        book.formula(ws, r, 3, rules.BUFFER.formula(gpu=f"B{n}"), t.buffer, "money")
        book.formula(ws, r, 4, rules.MONTH_TOTAL.formula(gpu=f"B{n}", extras=f"C{n}", buffer=f"D{n}"), t.total, "money")
        book.define(month_buffer(month), SHEET, r, 3)
    ws.write_string(at.total_row, 0, book.t("Total"), book.f.bold)
    totals = [math.fsum(getattr(plan.month_totals[m], k) for m in at.months) for k in ("gpu", "extras", "buffer")]
    for c, (name, value) in enumerate(zip(_TOTAL_NAMES, [*totals, plan.period_total], strict=True), start=1):
        col = xl_col_to_name(c)
        book.formula(ws, at.total_row, c, f"SUM({col}{at.first_month_row + 1}:{col}{at.total_row})", value,
                     "money", "total")
        book.define(name, SHEET, at.total_row, c)


def _by_tier(book: Book, ws, plan: Plan, at: SummaryLayout) -> None:
    months = list(at.months)
    r = at.tier_header
    book.header(ws, r, ["by tier", *months, "period"])
    for i, tier in enumerate(TIERS, start=1):
        row = r + i
        ws.write_string(row, 0, tier)
        for j, month in enumerate(months):
            book.formula(ws, row, 1 + j, f"SUMIFS({gpu_cost(month)},{MONTHLY_TIER},$A{row + 1})",
                         plan.tier_totals[tier][month], "money")
        book.formula(ws, row, 1 + len(months), f"SUM(B{row + 1}:{xl_col_to_name(len(months))}{row + 1})",
                     math.fsum(plan.tier_totals[tier].values()), "money", "total")
    book.define_range(TIER_PERIOD_COSTS, SHEET, r + 1, r + len(TIERS), 1 + len(months))
    chart = book.wb.add_chart({"type": "column", "subtype": "stacked"})
    for i in range(1, len(TIERS) + 1):
        chart.add_series({"name": [SHEET, r + i, 0], "categories": [SHEET, r, 1, r, len(months)],
                          "values": [SHEET, r + i, 1, r + i, len(months)]})
    chart.set_title({"name": book.t("Monthly GPU cost by tier")})
    chart.set_y_axis({"num_format": book.f.num["money"]})
    ws.insert_chart(1, len(months) + 3, chart, {"x_scale": 1.3, "y_scale": 1.1})


def _by_group(book: Book, ws, plan: Plan, r: int, label: str, key: str, groups, name: str) -> None:
    book.header(ws, r, [label, book.titled("period cost", "currency")])
    column = "TaskKind" if key == "kind" else "TaskCostCenter"
    for i, group in enumerate(groups, start=1):
        ws.write_string(r + i, 0, group)
        value = math.fsum(tp.row["period_cost"] for tp in plan.tasks if tp.task.values[key] == group)
        # EXACT, not SUMIFS: criteria would ignore case and read * ? ~ as wildcards.
        book.formula(ws, r + i, 1, f"SUMPRODUCT(EXACT({column},$A{r + i + 1})*TaskPeriodCost)", value, "money")
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
        book.formula(ws, row, 1, f"E{at.first_month_row + 1 + j}", planned, "money")
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
