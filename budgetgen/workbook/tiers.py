"""Tiers: per price tier and month the cards, GPU-hours and cost against the tier's cap."""

from __future__ import annotations

import math

from ..core.i18n import word
from ..core.schema import TASK_TIERS
from ..plan.engine import Plan
from .book import Book
from .layout import TIERS_COST, demand_name, gpu_cost, shown
from .printing import print_setup

SHEET = "Tiers"


def write_tiers(book: Book, ws, plan: Plan, rows: int) -> None:
    widths = [12, 10, 8, 12, 12, 14, 14, 10]
    book.header(ws, 0, ["tier", "month", "month #", "cards billed", "GPU-hours", book.titled("cost", "currency"),
                        book.titled("cap", "currency"), "over cap?"], widths)
    s = plan.inputs.settings
    r = 1
    for record in TASK_TIERS:
        tier = record.name
        tasks = [tp for tp in plan.tasks if tp.row["tier"] == tier]
        cap = s.tier_cap(record)
        for j, month in enumerate(plan.months, start=1):
            n = r + 1
            ws.write_string(r, 0, word(tier, book.lang))
            ws.write_string(r, 1, month)
            ws.write_number(r, 2, j)
            sel = f'(TaskTier="{tier}")'
            book.formula(ws, r, 3, f"SUMPRODUCT({sel}*{demand_name('cards_billed', month)})",
                         sum(tp.months[j - 1].cards_billed for tp in tasks), "int")
            book.formula(ws, r, 4, f"SUMPRODUCT({sel}*{demand_name('gpu_hours', month)})",
                         math.fsum(tp.months[j - 1].gpu_hours for tp in tasks), "number")
            book.formula(ws, r, 5, f"SUMPRODUCT({sel}*{gpu_cost(month)})", plan.tier_totals[tier][month], "money")
            lookup = f'INDEX(TierCaps,MATCH("{tier}",TierList,0))'
            book.formula(ws, r, 6, f'IF({lookup}="","",{lookup})', cap, "money", "link")
            over = "" if cap is None else ("OVER" if plan.tier_totals[tier][month] > cap else "ok")
            book.formula(ws, r, 7, shown(f'IF(G{n}="","",IF(F{n}>G{n},"OVER","ok"))'), word(over, book.lang), "text")
            r += 1
    book.define_range(TIERS_COST, SHEET, 1, rows, 5)
    ws.conditional_format(1, 7, r - 1, 7, {"type": "formula", "criteria": '=AND(ISNUMBER($G2),$F2>$G2)',
                                           "format": book.f.warn})
    ws.freeze_panes(1, 2)
    ws.autofilter(0, 0, r - 1, 7)
    print_setup(ws, book.lang, widths, r - 1, header_rows=(0, 0),
                blocks=[(1 + i * len(plan.months), (i + 1) * len(plan.months)) for i in range(len(TASK_TIERS))])
