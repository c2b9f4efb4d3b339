"""Order: what procurement buys or reserves, per GPU type and tier the plan uses, as live formulas over Tasks; a block
per provider with its subtotal, each printed on a page of its own."""

from __future__ import annotations

import math

from xlsxwriter.utility import xl_col_to_name

from .. import __version__, rules
from ..engine import Plan
from ..i18n import word
from ..order import OrderLine
from ..schema import TIER
from .book import Book
from .layout import ORDER_TOTAL, OrderLayout, commit_name, demand_name
from .printing import print_setup

SHEET = "Order"
_WIDTHS = (13, 10, 7, 8, 7, 10, 12, 11, 12, 14, 16, 18)
_MONTH_WIDTH = 11


def _selection(n: int, tier: str) -> dict[str, str]:
    """The placeholders that pick one order line's tasks: the GPU in column A, the tier by its key."""
    return {"gpus": "TaskGpu", "gpu": f"$A{n}", "tiers": "TaskTier", "tier": f'"{tier}"'}


def write_order(book: Book, ws, plan: Plan, lines: tuple[OrderLine, ...], at: OrderLayout) -> None:
    s, t = plan.inputs.settings, book.t
    for col, width in enumerate(_WIDTHS):
        ws.set_column(col, col, width)
    ws.write_string(0, 0, f"{t('Order list')}: {t('GPUs for')} {at.months[0]} {t('to')} {at.months[-1]} "
                          f"({book.currency})", book.f.title)
    heading = [("made by", f"budgetgen {__version__}"), ("build date", s.build_date),
               ("input file", plan.inputs.source_name),
               ("note", t("GPU cost only: extras and the hidden-cost buffer are on Summary."))]
    for i, (label, text) in enumerate(heading):
        ws.write_string(at.heading_first + i, 0, t(label), book.f.bold)
        ws.write_string(at.heading_first + i, 2, text)
    book.header(ws, at.header, [book.titled(c, "currency") if c in ("unit price", "total") else c
                                for c in at.columns])
    ws.set_row(at.header, 30)
    _lines(book, ws, plan, lines, at)
    _cards_by_month(book, ws, lines, at)
    _commitments(book, ws, plan, at)
    _signoff(book, ws, at)
    widths = [*_WIDTHS, *[_MONTH_WIDTH] * max(0, len(at.months) + 2 - len(_WIDTHS))]
    print_setup(ws, book.lang, widths, at.last_row, header_rows=(at.header, at.header), repeat_cols=(0, 0),
                blocks=at.blocks, heights=at.heights, breaks=at.breaks)


def _lines(book: Book, ws, plan: Plan, lines: tuple[OrderLine, ...], at: OrderLayout) -> None:
    """Each provider's block: its title (provider and regions), its lines, its subtotal; then the total over them."""
    c = at.col
    total = c("total")
    col = xl_col_to_name(total)
    i = 0
    for (provider, n), (title, subtotal) in zip(at.groups, at.group_rows, strict=True):
        group = lines[i:i + n]
        name = provider or book.t("provider not given")
        regions = ", ".join(dict.fromkeys(book.t(line.region) for line in group if line.region))
        ws.write_string(title, 0, book.t("provider: {provider}").format(provider=name)
                        + (book.t(" · region: {regions}").format(regions=regions) if regions else ""), book.f.bold)
        for line in group:
            _line(book, ws, at, line, i)
            i += 1
        ws.write_string(subtotal, 0, book.t("Subtotal {provider}").format(provider=name), book.f.bold)
        book.formula(ws, subtotal, total, f"SUM({col}{title + 2}:{col}{subtotal})",
                     math.fsum(line.total for line in group), "money", "total")
    ws.write_string(at.total_row, 0, book.t("Total"), book.f.bold)
    subtotals = ",".join(f"{col}{subtotal + 1}" for _, subtotal in at.group_rows)
    book.formula(ws, at.total_row, total, f"SUM({subtotals})" if subtotals else "0",
                 math.fsum(line.total for line in lines), "money", "total")
    book.define(ORDER_TOTAL, SHEET, at.total_row, total)


def _line(book: Book, ws, at: OrderLayout, line: OrderLine, i: int) -> None:
    """Order line `i`: the GPU in column A, the tier, and its figures as formulas over the Tasks names."""
    c = at.col
    last_month = xl_col_to_name(2 + len(at.months) - 1)
    r = at.line_row(i)
    n = r + 1
    m = at.month_first + i + 1      # the line's row in the cards-by-month block
    by_month = f"$C${m}:${last_month}${m}"
    over_plan = {key: rules.ORDER_OVER_PLAN.formula(**_selection(n, line.tier), amounts=amounts)
                 for key, amounts in (("cards_billed", "DemandBilledMonths"),
                                      ("gpu_hours_per_month", "DemandGpuHours"))}
    ws.write_string(r, c("gpu"), line.gpu)
    ws.write_string(r, c("tier"), word(line.tier, book.lang))
    book.formula(ws, r, c("peak cards"), rules.ORDER_PEAK.formula(by_month=by_month), line.peak_cards, "int")
    book.formula(ws, r, c("average cards"), rules.ORDER_AVERAGE.formula(card_months=over_plan["cards_billed"]),
                 line.average_cards, "number")
    book.formula(ws, r, c("months"), rules.ORDER_MONTHS.formula(by_month=by_month), line.months, "int")
    book.formula(ws, r, c("quantity"), over_plan[TIER[line.tier].quantity_column], line.quantity, "int")
    ws.write_string(r, c("unit"), book.t(line.quantity_unit))
    book.formula(ws, r, c("unit price"), f"INDEX({TIER[line.tier].price_name},MATCH($A{n},GpuName,0))",
                 line.unit_price, "price", "link")
    quantity, price = (f"{xl_col_to_name(c(k))}{n}" for k in ("quantity", "unit price"))
    book.formula(ws, r, c("total"), rules.ORDER_TOTAL.formula(quantity=quantity, price=price), line.total, "money")
    ws.write_string(r, c("tasks served"), ", ".join(line.tasks), book.f.wrap)
    for key in ("provider / SKU", "notes"):
        ws.write_blank(r, c(key), None, book.f.get("input", "text"))


def _cards_by_month(book: Book, ws, lines: tuple[OrderLine, ...], at: OrderLayout) -> None:
    """Cards billed per line and plan month; a month's number is its header's place among PlanMonths."""
    book.header(ws, at.month_header, ["cards by month", "tier", *at.months])
    for i, line in enumerate(lines):
        r = at.month_first + i
        ws.write_string(r, 0, line.gpu)
        ws.write_string(r, 1, word(line.tier, book.lang))
        for j, cards in enumerate(line.cards_by_month):
            formula = rules.ORDER_CARDS_IN_MONTH.formula(**_selection(r + 1, line.tier),
                                                         cards=demand_name("cards_billed", at.months[j]))
            book.formula(ws, r, 2 + j, formula, cards, "int")


COMMIT_NOTE = "effective hourly rate: nothing upfront, every hour of the term billed monthly"


def _commitments(book: Book, ws, plan: Plan, at: OrderLayout) -> None:
    """Each commitment of the Commitments sheet (its committed cards there, an input): the term, the cards, what it
    bills a month, upfront (0: an effective rate), the term's total and the months it binds after the plan."""
    book.header(ws, at.commit_header, [book.titled(c, "currency") if c in ("monthly cost", "upfront", "term total")
                                       else c for c in at.commit_columns])
    ws.set_row(at.commit_header, at.heights[at.commit_header])   # its headers wrap on three lines
    for i, c in enumerate(plan.commitments):
        r = at.commit_first + i
        ws.write_string(r, 0, c.gpu)
        ws.write_string(r, 1, word(c.tier, book.lang))
        for col, (suffix, value, fmt) in enumerate((("cards", c.cards, "int"), ("monthly_cost", c.monthly_cost, "money")),
                                                   start=2):
            book.formula(ws, r, col, commit_name(i, suffix), value, fmt, "link")
        ws.write_number(r, 4, 0, book.f.get("calc", "money"))
        book.formula(ws, r, 5, commit_name(i, "term_total"), c.term_total, "money", "link")
        book.formula(ws, r, 6, commit_name(i, "months_after"), c.months_after_plan, "int", "link")
    total = at.commit_last + 1
    ws.write_string(total, 0, book.t("Total"), book.f.bold)
    for col, attr in ((3, "monthly_cost"), (5, "term_total")):
        name = xl_col_to_name(col)
        book.formula(ws, total, col, f"SUM({name}{at.commit_first + 1}:{name}{at.commit_last + 1})",
                     sum(getattr(c, attr) for c in plan.commitments), "money", "total")
    # once for every line, across the block's width (a note on each line ran past the printed page)
    ws.merge_range(total + 1, 0, total + 1, len(at.commit_columns) - 1, book.t(COMMIT_NOTE), book.f.note)


def _signoff(book: Book, ws, at: OrderLayout) -> None:
    """Prepared by and approved by, each with a name, a date and a signature, for procurement to fill in."""
    book.header(ws, at.signoff_header, ["sign-off", "", "name", "", "date", "", "signature", "", ""])
    for i, role in enumerate(("prepared by", "approved by"), start=1):
        r = at.signoff_header + i
        ws.write_string(r, 0, book.t(role), book.f.bold)
        for first, last in ((2, 3), (4, 5), (6, 8)):
            ws.merge_range(r, first, r, last, "", book.f.get("input", "text"))
        ws.set_row(r, 24)
