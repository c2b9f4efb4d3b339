"""Commitments: per GPU type the plan uses and commitment tier, the proposed and committed cards, and each plan month's
committed cost, covered and unused hours, rent displaced and adjustment, as live formulas over Tasks and GPUs
(budgetgen/plan/commitments.py is the Python view)."""

from __future__ import annotations

import math

from xlsxwriter.utility import xl_col_to_name

from ..core.i18n import word
from ..core.schema import REFERENCE_TIER, TIER
from ..model import rules
from ..plan.commitments import Commitment
from ..plan.engine import Plan
from .book import Book
from .layout import COMMIT_TOTAL, CommitmentsLayout, commit_adjustment, commit_name, demand_name, gpu_cost
from .printing import print_setup

SHEET = "Commitments"
_WIDTHS = [13, 12, 12, 12, 12, 12, 13, 12, 12, 13, 14, 12, 14]
NOTE_COLUMNS = 8   # A:H, about 100 characters: what an A4 landscape page prints of the sheet at full size
NOTE = ("A commitment starts with the plan and bills every hour of its term at its rate; it covers up to cards x "
        "HoursPerMonth of the GPU's demand and replaces the rent of the hours it covers. Proposed: the most cards "
        "whose last card is busy at least the break-even share of the term (months after the plan count 0); the "
        "longer term takes the demand first. Committed cards are an input: procurement may change them.")
# Block month columns Order reads by name: the key in month_columns -> the name's suffix (Commit1Rent, ...).
NAMED_MONTHS = {"GPU rent": "rent", "rent displaced": "displaced"}
# Block figures other sheets read by name (Order): the key in summary_columns -> the name's suffix.
NAMED_FIGURES = {"commitment rate": "rate", "committed cards": "cards", "monthly cost": "monthly_cost", "term total": "term_total",
                 "months after plan": "months_after", "term (months)": "term"}


def write_commitments(book: Book, ws, plan: Plan, at: CommitmentsLayout) -> None:
    """Row by row (the workbook is streamed): the title and note, the month totals of all commitments, the blocks."""
    ws.write_string(0, 0, book.t("Commitments: 1- and 3-year terms proposed from the plan's demand"), book.f.title)
    book.note_across(ws, at.note_row, book.t(NOTE), _WIDTHS[:NOTE_COLUMNS])   # the columns a printed page holds
    _totals(book, ws, plan, at)
    gpu_first: dict[str, int] = {}
    for i, c in enumerate(plan.commitments):
        _block(book, ws, plan, at, i, c, gpu_first.setdefault(c.gpu, i))
    for col, width in enumerate(_WIDTHS):
        ws.set_column(col, col, width)
    ws.freeze_panes(at.totals_first, 1)
    print_setup(ws, book.lang, _WIDTHS, at.last_row, header_rows=(at.totals_header, at.totals_header),
                blocks=at.blocks_spans)


def _totals(book: Book, ws, plan: Plan, at: CommitmentsLayout) -> None:
    """Per plan month, the sum over the blocks of committed cost, unused cost, rent displaced and adjustment."""
    headers = [book.titled(c, "currency") if i else c for i, c in enumerate(at.totals_columns)]
    book.header(ws, at.totals_header, headers)
    ws.set_row(at.totals_header, 30)
    keys = ("committed cost", "unused cost", "rent displaced", "adjustment")
    attrs = ("committed_cost", "unused_cost", "displaced", "adjustment")
    for j, month in enumerate(at.months):
        r = at.totals_first + j
        ws.write_string(r, 0, month)
        for col, (key, attr) in enumerate(zip(keys, attrs, strict=True), start=1):
            cells = [f"{xl_col_to_name(at.month_col(key))}{at.block_first(i) + j + 1}" for i in range(len(at.blocks))]
            value = math.fsum(getattr(c, attr)[j] for c in plan.commitments)
            book.formula(ws, r, col, "+".join(cells) if cells else "0", value, "money")
        book.define(commit_adjustment(month), SHEET, r, len(keys))
    ws.write_string(at.totals_row, 0, book.t("Total"), book.f.bold)
    for col, attr in enumerate(attrs, start=1):
        name = xl_col_to_name(col)
        value = math.fsum(v for c in plan.commitments for v in getattr(c, attr))
        book.formula(ws, at.totals_row, col, f"SUM({name}{at.totals_first + 1}:{name}{at.totals_row})", value,
                     "money", "total")
    book.define(COMMIT_TOTAL, SHEET, at.totals_row, len(attrs))


def _block(book: Book, ws, plan: Plan, at: CommitmentsLayout, i: int, c: Commitment, first_of_gpu: int) -> None:
    tier = TIER[c.tier]
    sc, mc = at.summary_col, at.month_col
    h, fr = at.block_header(i), at.block_figures(i)
    n = fr + 1
    headers = [book.titled(k, u) for k, u in zip(at.summary_columns, (
        "", "", "", "currency/card-hour", "currency/card-hour", "currency/GPU-hour", "share", "cards", "cards", "currency/month",
        "currency", "months", "currency"), strict=True)]
    book.header(ws, h, headers)
    ws.set_row(h, 30)
    cell = {k: f"${xl_col_to_name(sc(k))}${n}" for k in at.summary_columns}
    first, last = at.block_first(i) + 1, at.block_total(i)
    col_range = {k: f"${xl_col_to_name(mc(k))}${first}:${xl_col_to_name(mc(k))}${last}" for k in at.month_columns}
    ws.write_string(fr, sc("gpu"), c.gpu)
    ws.write_string(fr, sc("term"), word(c.tier, book.lang))
    ws.write_number(fr, sc("term (months)"), c.term_months)
    lookup = f"MATCH({cell['gpu']},GpuName,0)"
    book.formula(ws, fr, sc("commitment rate"), f"INDEX({tier.price_name},{lookup})", c.rate, "price", "link")
    book.formula(ws, fr, sc("on-demand"), f"INDEX({REFERENCE_TIER.price_name},{lookup})", c.on_demand, "price", "link")
    book.formula(ws, fr, sc("replaced price"), rules.REPLACED_PRICE.formula(
        demand=col_range["GPU-hours demand"], rent=col_range["GPU rent"], on_demand=cell["on-demand"]),
        c.replaced_price, "price")
    book.formula(ws, fr, sc("break-even utilisation"),
                 rules.BREAK_EVEN_UTILISATION.formula(rate=cell["commitment rate"], price=cell["replaced price"]),
                 c.break_even, "percent")
    book.formula(ws, fr, sc("proposed cards"),
                 rules.COMMIT_PROPOSAL.formula(candidates=col_range["cards this month suggests"]), c.proposed, "int")
    book.value(ws, fr, sc("committed cards"), c.cards, "input", "int")
    book.formula(ws, fr, sc("monthly cost"), rules.COMMITTED_COST.formula(
        month="1", term=cell["term (months)"], cards=cell["committed cards"], rate=cell["commitment rate"]), c.monthly_cost,
        "money")
    book.formula(ws, fr, sc("term total"), rules.TERM_TOTAL.formula(
        cards=cell["committed cards"], rate=cell["commitment rate"], term=cell["term (months)"]), c.term_total, "money")
    book.formula(ws, fr, sc("months after plan"), rules.MONTHS_AFTER_PLAN.formula(term=cell["term (months)"]),
                 c.months_after_plan, "int")
    book.formula(ws, fr, sc("after-plan cost"), rules.AFTER_PLAN_COST.formula(
        cards=cell["committed cards"], rate=cell["commitment rate"], after=cell["months after plan"]), c.after_plan_cost, "money")
    for key, suffix in NAMED_FIGURES.items():
        book.define(commit_name(i, suffix), SHEET, fr, sc(key))
    for key, suffix in NAMED_MONTHS.items():   # the block's month columns Order reads, one cell a plan month
        book.define_range(commit_name(i, suffix), SHEET, at.block_first(i), at.block_first(i) + len(at.months) - 1,
                          mc(key))

    headers = [book.titled(k, u) for k, u in zip(at.month_columns, (
        "", "", "GPU-h", "currency", "GPU-h", "cards", "currency", "GPU-h", "GPU-h", "currency", "currency",
        "currency"), strict=True)]
    book.header(ws, at.block_month_header(i), headers)
    ws.set_row(at.block_month_header(i), 30)
    for j, month in enumerate(at.months):
        r = at.block_first(i) + j
        m = r + 1
        row = {k: f"{xl_col_to_name(mc(k))}{m}" for k in at.month_columns}
        ws.write_string(r, mc("month"), month)
        ws.write_number(r, mc("month #"), j + 1)
        book.formula(ws, r, mc("GPU-hours demand"), rules.COMMIT_DEMAND.formula(
            gpus="TaskGpu", gpu=cell["gpu"], tiers="TaskTier", cards=demand_name("cards_billed", month),
            hours=demand_name("gpu_hours", month)), c.demand[j], "number")
        book.formula(ws, r, mc("GPU rent"), rules.COMMIT_RENT.formula(gpus="TaskGpu", gpu=cell["gpu"],
                                                                      costs=gpu_cost(month)), c.rent[j], "money")
        if first_of_gpu == i:
            left = row["GPU-hours demand"]
        else:   # the demand the previous (longer) commitment of the GPU leaves
            prev = at.block_first(i - 1) + j + 1
            left = rules.DEMAND_LEFT.formula(demand=f"{xl_col_to_name(mc('demand left to this commitment'))}{prev}",
                                             covered=f"{xl_col_to_name(mc('covered hours'))}{prev}")
        book.formula(ws, r, mc("demand left to this commitment"), left, c.left[j], "number")
        book.formula(ws, r, mc("cards this month suggests"), rules.COMMIT_CANDIDATE.formula(
            hours=col_range["demand left to this commitment"], months=col_range["month #"],
            term=cell["term (months)"], break_even=cell["break-even utilisation"],
            demand=row["demand left to this commitment"]), c.candidates[j], "int")
        book.formula(ws, r, mc("committed cost"), rules.COMMITTED_COST.formula(
            month=row["month #"], term=cell["term (months)"], cards=cell["committed cards"], rate=cell["commitment rate"]),
            c.committed_cost[j], "money")
        book.formula(ws, r, mc("covered hours"), rules.COVERED_HOURS.formula(
            month=row["month #"], term=cell["term (months)"], demand=row["demand left to this commitment"],
            cards=cell["committed cards"]), c.covered[j], "number")
        book.formula(ws, r, mc("unused hours"), rules.UNUSED_HOURS.formula(
            month=row["month #"], term=cell["term (months)"], cards=cell["committed cards"],
            covered=row["covered hours"]), c.unused_hours[j], "number")
        book.formula(ws, r, mc("unused cost"), rules.UNUSED_COST.formula(unused=row["unused hours"], rate=cell["commitment rate"]),
                     c.unused_cost[j], "money")
        book.formula(ws, r, mc("rent displaced"), rules.RENT_DISPLACED.formula(
            demand=row["GPU-hours demand"], rent=row["GPU rent"], covered=row["covered hours"]), c.displaced[j], "money")
        book.formula(ws, r, mc("adjustment"), rules.COMMIT_ADJUSTMENT.formula(
            committed=row["committed cost"], displaced=row["rent displaced"]), c.adjustment[j], "money")
    total = at.block_total(i)
    ws.write_string(total, 0, book.t("Total"), book.f.bold)
    for key, attr, fmt in (("committed cost", "committed_cost", "money"), ("covered hours", "covered", "number"),
                           ("unused hours", "unused_hours", "number"), ("unused cost", "unused_cost", "money"),
                           ("rent displaced", "displaced", "money"), ("adjustment", "adjustment", "money")):
        name = xl_col_to_name(mc(key))
        book.formula(ws, total, mc(key), f"SUM({name}{first}:{name}{last})", math.fsum(getattr(c, attr)), fmt, "total")
