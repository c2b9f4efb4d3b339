"""Order: what procurement reserves and rents, a block per provider printed on a page of its own, as live formulas
over Tasks, Demand and Commitments; the totals down to the plan total, which a check ties to Summary's.

A rent line's cards, quantity and rent by month are read from Demand (working rows below the printed area) and
multiplied by the share of its GPU type's rent the commitments leave rented (order.rent_left), so a reservation
and the rent it replaces are never both counted."""

from __future__ import annotations

from xlsxwriter.utility import xl_col_to_name, xl_rowcol_to_cell

from .. import __version__
from ..core.i18n import word
from ..core.schema import TIER
from ..model import rules
from ..plan.engine import Plan
from ..plan.order import Order, OrderLine, Reservation, rent_left
from .book import Book
from .layout import (
    BUFFER_TOTAL,
    EXTRAS_TOTAL,
    ORDER_PLAN_TOTAL,
    ORDER_TOTAL,
    OrderLayout,
    commit_name,
    demand_name,
    gpu_cost,
)
from .printing import print_setup

SHEET = "Order"
# One landscape page wide at 12 months (printing.MIN_SCALE or larger): a month's header on two lines (year, month)
_LEAD_WIDTHS = (12, 10)
_MONTH_WIDTH = 5
_TAIL_WIDTHS = (10, 10, 8, 11, 15)   # quantity, unit, unit price, total, tasks served / a month
HEADER_HEIGHT = 30   # points: a header's two lines
LINE_HEIGHT = 15   # points: one line of wrapped text at the default font
RESERVE_HEADERS = ("reserve", "term", "card-hours in plan", "card-hours", "rate a card-hour", "total in plan",
                   "a month, 0 upfront")
RENT_HEADERS = ("rent", "tier", "quantity", "unit", "unit price", "total", "tasks served")
WORKING = ("cards billed by month before the commitments", "quantity by month before the commitments",
           "rent by month before the commitments", "share of the GPU type's rent still rented")
NOTE = "Reservations replace the rent they cover: the rent lines are net of them, so nothing is counted twice."


def widths(at: OrderLayout) -> list[float]:
    return [*_LEAD_WIDTHS, *[_MONTH_WIDTH] * len(at.months), *_TAIL_WIDTHS]


def write_order(book: Book, ws, plan: Plan, order: Order, at: OrderLayout) -> None:
    s, t = plan.inputs.settings, book.t
    sizes = widths(at)
    for col, width in enumerate(sizes):
        ws.set_column(col, col, width)
    ws.write_string(0, 0, f"{t('Order list')}: {t('GPUs for')} {at.months[0]} {t('to')} {at.months[-1]} "
                          f"({book.currency})", book.f.title)
    heading = [("made by", f"budgetgen {__version__}"), ("build date", s.build_date),
               ("input file", plan.inputs.source_name), ("note", t(NOTE))]
    for i, (label, text) in enumerate(heading):
        ws.write_string(at.heading_first + i, 0, t(label), book.f.bold)
        ws.write_string(at.heading_first + i, 2, text)
    subtotals = []
    line_index = reservation_index = 0
    total_col = at.col("total")
    total_letter = xl_col_to_name(total_col)
    for block, rows in zip(order.blocks, at.block_rows, strict=True):
        regions = ", ".join(t(r) for r in block.regions)
        name = block.provider or t("provider not given")
        ws.write_string(rows["title"], 0, t("provider: {provider}").format(provider=name)
                        + (t(" · region: {regions}").format(regions=regions) if regions else ""), book.f.bold)
        if block.reservations:
            book.header(ws, rows["reserve_header"], _header(book, at, RESERVE_HEADERS))
            ws.set_row(rows["reserve_header"], HEADER_HEIGHT)
            for r in block.reservations:
                _reservation(book, ws, at, r, at.reservation_row(reservation_index))
                reservation_index += 1
        if block.lines:
            book.header(ws, rows["rent_header"], _header(book, at, RENT_HEADERS))
            ws.set_row(rows["rent_header"], HEADER_HEIGHT)
            for line in block.lines:
                _line(book, ws, at, line, line_index)
                line_index += 1
        first = rows.get("reserve_first", rows.get("rent_first", rows["subtotal"]))
        ws.write_string(rows["subtotal"], 0, t("Subtotal {provider}").format(provider=name), book.f.bold)
        book.formula(ws, rows["subtotal"], total_col,
                     f"SUM({total_letter}{first + 1}:{total_letter}{rows['subtotal']})", block.subtotal, "money",
                     "total")
        subtotals.append(f"{total_letter}{rows['subtotal'] + 1}")
    _totals(book, ws, plan, order, at, subtotals)
    _signoff(book, ws, at)
    _working(book, ws, plan, order, at)   # rows below: a constant-memory sheet is written in row order
    heights = {r: HEADER_HEIGHT for rows in at.block_rows for k, r in rows.items() if k.endswith("_header")}
    heights.update({at.signoff_header + 1: 24, at.signoff_header + 2: 24})
    print_setup(ws, book.lang, sizes, at.last_printed, repeat_cols=(0, 0), breaks=at.breaks, heights=heights,
                blocks=[(rows["title"], rows["subtotal"]) for rows in at.block_rows]
                + [(at.total_row, at.plan_total_row), (at.signoff_header, at.last_printed)])


def _header(book: Book, at: OrderLayout, headers: tuple[str, ...]) -> list[str]:
    lead, tail = headers[:2], headers[2:]
    return [*lead, *(month_header(m) for m in at.months),
            *(book.titled(h, "currency") if h in ("total", "total in plan", "a month, 0 upfront") else h for h in tail)]


def month_header(month: str) -> str:
    """A plan month as a narrow column's header: the year over the month (2027-01: 2027, 01)."""
    return month.replace("-", "\n", 1)


def _months(at: OrderLayout, row: int) -> str:
    """The row's month cells, as a range."""
    first, last = at.month_col, at.month_col + len(at.months) - 1
    return f"${xl_col_to_name(first)}${row + 1}:${xl_col_to_name(last)}${row + 1}"


def _reservation(book: Book, ws, at: OrderLayout, r: Reservation, row: int) -> None:
    """A reservation: its committed cards month by month (Commitments' input cell), card-hours, rate, total in the
    plan and what it bills a month."""
    c = at.col
    cards, term = commit_name(r.block, "cards"), str(r.term_months)
    ws.write_string(row, 0, r.gpu)
    ws.write_string(row, 1, word(r.tier, book.lang))
    for j, value in enumerate(r.cards_by_month):
        book.formula(ws, row, at.month_col + j, rules.RESERVED_CARDS.formula(month=str(j + 1), term=term, cards=cards),
                     value, "int")
    book.formula(ws, row, c("quantity"), rules.RESERVED_HOURS.formula(cards=cards, term=term), r.card_hours, "int")
    ws.write_string(row, c("unit"), book.t("card-hours"))
    book.formula(ws, row, c("unit price"), commit_name(r.block, "rate"), r.rate, "price", "link")
    hours, rate = (xl_rowcol_to_cell(row, c(k)) for k in ("quantity", "unit price"))
    book.formula(ws, row, c("total"), rules.RESERVED_COST.formula(hours=hours, rate=rate), r.total, "money")
    book.formula(ws, row, c("tasks served"), commit_name(r.block, "monthly_cost"), r.monthly_cost, "money", "link")


def _line(book: Book, ws, at: OrderLayout, line: OrderLine, i: int) -> None:
    """Rent line `i`: rented cards by month, quantity, average unit price and total, net of the commitments."""
    c = at.col
    row = at.line_row(i)
    share = _share_row(at, line.gpu)
    ws.write_string(row, 0, line.gpu)
    ws.write_string(row, 1, word(line.tier, book.lang))
    for j, value in enumerate(line.cards_by_month):
        col = at.month_col + j
        book.formula(ws, row, col, _rented(at, 0, i, share, col), value, "number")
    quantity, total = (f"SUMPRODUCT({_months(at, at.working_row(k, i))},{_months(at, share)})" if share is not None
                       else f"SUM({_months(at, at.working_row(k, i))})" for k in (1, 2))
    book.formula(ws, row, c("quantity"), quantity, line.quantity, "int")
    ws.write_string(row, c("unit"), book.t(line.quantity_unit))
    book.formula(ws, row, c("total"), total, line.total, "money")
    q, tot = (xl_rowcol_to_cell(row, c(k)) for k in ("quantity", "total"))
    book.formula(ws, row, c("unit price"), rules.ORDER_UNIT_PRICE.formula(quantity=q, total=tot),
                 line.unit_price if line.unit_price is not None else "", "price")
    served = tasks_served(book, line.tasks)
    ws.write_string(row, c("tasks served"), served, book.f.wrap)
    if (lines := wrapped_lines(served, _TAIL_WIDTHS[-1])) > 1:  # a spreadsheet keeps a written row's height: give
        ws.set_row(row, LINE_HEIGHT * lines)  # the wrapped ids their lines, or they run into the row below


def wrapped_lines(text: str, width: float) -> int:
    """Lines `text` takes wrapped at word boundaries in a column `width` characters wide (a character of the column
    width is one digit of the default font; ids are about as wide)."""
    lines, used = 1, 0
    for token in text.split(" "):
        if used and used + 1 + len(token) > width:
            lines, used = lines + 1, len(token)
        else:
            used += (1 if used else 0) + len(token)
    return lines


SERVED_CHARS = 250   # of task ids a line shows; the rest are counted (a line of a large inventory serves thousands)


def tasks_served(book: Book, tasks: tuple[str, ...]) -> str:
    """The task ids an order line serves, as many as fit in SERVED_CHARS, then how many more."""
    text, shown = "", 0
    for task in tasks:
        if text and len(text) + 2 + len(task) > SERVED_CHARS:
            return text + book.t(" and {n} more").format(n=f"{len(tasks) - shown:,}")
        text, shown = f"{text}, {task}" if text else task, shown + 1
    return text


def _share_row(at: OrderLayout, gpu: str) -> int | None:
    return at.working_row(3, at.shared_gpus.index(gpu)) if gpu in at.shared_gpus else None


def _rented(at: OrderLayout, k: int, i: int, share: int | None, col: int) -> str:
    amount = xl_rowcol_to_cell(at.working_row(k, i), col)
    return rules.RENTED.formula(amount=amount, share=xl_rowcol_to_cell(share, col) if share is not None else "1")


def _totals(book: Book, ws, plan: Plan, order: Order, at: OrderLayout, subtotals: list[str]) -> None:
    """The GPU total over the providers (reservations and net rent), then extras, the buffer and the plan total."""
    col = at.col("total")
    ws.write_string(at.total_row, 0, book.t("GPU total (reservations and rent)"), book.f.bold)
    book.formula(ws, at.total_row, col, "+".join(subtotals) if subtotals else "0", order.gpu_total, "money", "total")
    book.define(ORDER_TOTAL, SHEET, at.total_row, col)
    extras = sum(t.extras for t in plan.month_totals.values())
    buffer = sum(t.buffer for t in plan.month_totals.values())
    for r, label, name, value in ((at.total_row + 1, "extras (Summary)", EXTRAS_TOTAL, extras),
                                  (at.total_row + 2, "hidden-cost buffer (Summary)", BUFFER_TOTAL, buffer)):
        ws.write_string(r, 0, book.t(label))
        book.formula(ws, r, col, name, value, "money", "link")
    ws.write_string(at.plan_total_row, 0, book.t("Plan total"), book.f.bold)
    letter = xl_col_to_name(col)
    book.formula(ws, at.plan_total_row, col, f"SUM({letter}{at.total_row + 1}:{letter}{at.plan_total_row})",
                 order.gpu_total + extras + buffer, "money", "total")
    book.define(ORDER_PLAN_TOTAL, SHEET, at.plan_total_row, col)


def _working(book: Book, ws, plan: Plan, order: Order, at: OrderLayout) -> None:
    """Below the printed area: each rent line's cards billed, quantity and rent by month before the commitments
    (read from Demand), and each committed GPU type's share of rent still rented (read from Commitments)."""
    lines = order.lines
    for k, title in enumerate(WORKING[:3]):
        book.header(ws, at.working_header(k), [title, "", *at.months])
        for i, line in enumerate(lines):
            n = at.working_row(0, i) + 1
            sel = {"gpus": "TaskGpu", "gpu": f"$A${n}", "tiers": "TaskTier", "tier": f'"{line.tier}"'}
            amounts = "cards_billed" if TIER[line.tier].per_card_month else "gpu_hours"
            values, name = ((line.cards_billed, lambda m: demand_name("cards_billed", m)),
                            (line.amounts, lambda m, a=amounts: demand_name(a, m)), (line.rent, gpu_cost))[k]
            row = at.working_row(k, i)
            if k == 0:
                ws.write_string(row, 0, line.gpu)
            else:
                book.formula(ws, row, 0, f"$A${n}", line.gpu, "general", "link")
            ws.write_string(row, 1, word(line.tier, book.lang))
            for j, month in enumerate(at.months):
                book.formula(ws, row, at.month_col + j, rules.ORDER_IN_MONTH.formula(**sel, amounts=name(month)),
                             values[j], "money" if k == 2 else "number")
    book.header(ws, at.working_header(3), [WORKING[3], "", *at.months])
    blocks: dict[str, list[int]] = {}
    for b, c in enumerate(plan.commitments):
        blocks.setdefault(c.gpu, []).append(b)
    for g, gpu in enumerate(at.shared_gpus):
        row = at.working_row(3, g)
        ws.write_string(row, 0, gpu)
        for j, value in enumerate(rent_left(plan, gpu)):
            rent = f"INDEX({commit_name(blocks[gpu][0], 'rent')},{j + 1})"
            displaced = "+".join(f"INDEX({commit_name(b, 'displaced')},{j + 1})" for b in blocks[gpu])
            book.formula(ws, row, at.month_col + j, rules.RENT_LEFT.formula(rent=rent, displaced=f"({displaced})"),
                         value, "percent")


def _signoff(book: Book, ws, at: OrderLayout) -> None:
    """Prepared by and approved by, each with a name, a date and a signature (merged cells across the printed width),
    for procurement to fill in."""
    last = len(at.columns) - 1
    spans = {"name": (2, max(2, last - 5)), "date": (last - 4, last - 3), "signature": (last - 2, last)}
    book.header(ws, at.signoff_header, ["sign-off", ""])
    for key, (first, end) in spans.items():
        if end > first:
            ws.merge_range(at.signoff_header, first, at.signoff_header, end, book.t(key), book.f.header)
        else:
            ws.write_string(at.signoff_header, first, book.t(key), book.f.header)
    for i, role in enumerate(("prepared by", "approved by"), start=1):
        r = at.signoff_header + i
        ws.write_string(r, 0, book.t(role), book.f.bold)
        for first, end in spans.values():
            if end > first:
                ws.merge_range(r, first, r, end, "", book.f.get("input", "text"))
            else:
                ws.write_blank(r, first, None, book.f.get("input", "text"))
        ws.set_row(r, 24)
