"""BuyVsRent: per GPU type the plan uses, whether owning a card pays (the rules of §3.7); a GPU without a purchase
price has its row, the owning side blank until a price is typed on GPUs."""

from __future__ import annotations

from .. import rules
from ..engine import Plan
from ..i18n import word
from .book import Book
from .layout import shown
from .printing import print_setup

SHEET = "BuyVsRent"
# The verdict of a GPU without a purchase price: a named text cell under the table, so that the formula is the
# same in every language.
ENTER_PURCHASE_PRICE = "enter purchase_price on GPUs to compare"
NO_PRICE_NAME = "VerdictNoPurchasePrice"
_WIDTHS = [14, 14, 10, 14, 14, 12, 14, 16, 10]


def write_buy_vs_rent(book: Book, ws, plan: Plan) -> None:
    t, cur = book.t, book.currency
    book.header(ws, 0, ["gpu", f"{t('purchase')} ({cur}{t('/card')})", "power (W)",
                        f"{t('on demand')} ({cur}{t('/h')})", f"{t('fixed')} ({cur}{t('/day')})",
                        f"{t('energy')} ({cur}{t('/h')})", "break-even (h/day)", "plan use (h/day/card)",
                        "verdict"], _WIDTHS)
    ws.set_row(0, 30)
    prompt = t(ENTER_PURCHASE_PRICE)
    for i, b in enumerate(plan.buy_vs_rent, start=1):
        g = plan.inputs.gpu(b.gpu)
        n = i + 1
        ws.write_string(i, 0, b.gpu)
        purchase = f"INDEX(GpuPurchase,MATCH($A{n},GpuName,0))"  # blank stays blank: the price is yet to be typed
        book.formula(ws, i, 1, f'IF(ISNUMBER({purchase}),{purchase},"")', g.purchase_price, "money", "link")
        for col, name, value, fmt in ((2, "GpuPowerW", g.power_w or 0, "int"),
                                      (3, "GpuOnDemand", g.prices["on_demand"] or 0, "price")):
            book.formula(ws, i, col, f"INDEX({name},MATCH($A{n},GpuName,0))", value, fmt, "link")
        book.formula(ws, i, 4, rules.DAILY_FIXED.formula(purchase=f"B{n}"), b.daily_fixed, "price")
        book.formula(ws, i, 5, rules.ENERGY_PER_HOUR.formula(power_w=f"C{n}"), b.energy_per_hour, "price")
        book.formula(ws, i, 6, rules.BREAK_EVEN.formula(on_demand=f"D{n}", energy=f"F{n}", daily_fixed=f"E{n}"),
                     b.break_even_hours_per_day, "number")
        used = f"(TaskGpu=$A{n})*TaskActiveMonths"
        book.formula(ws, i, 7, rules.PLAN_HOURS_PER_DAY.formula(gpu_hour_months=f"SUMPRODUCT({used}*TaskGpuHours)",
                                                                card_months=f"SUMPRODUCT({used}*TaskCardsHeld)"),
                     b.plan_hours_per_day, "number")
        verdict = rules.VERDICT.formula(daily_fixed=f"E{n}", break_even=f"G{n}", plan_hours=f"H{n}",
                                        no_price=NO_PRICE_NAME)
        book.formula(ws, i, 8, shown(verdict),
                     prompt if b.verdict == rules.NO_PURCHASE_PRICE else word(b.verdict, book.lang), "text")
    note = len(plan.buy_vs_rent) + 2
    ws.write_string(note, 0, t("Buy when each owned card would be used more hours a day than the "
                               "break-even; owning pays only for steady, long daily use."), book.f.note)
    ws.write_string(note + 1, 0, t("verdict without a purchase price:"), book.f.note)
    ws.write_string(note + 1, 8, prompt, book.f.note)
    book.define(NO_PRICE_NAME, SHEET, note + 1, 8)
    print_setup(ws, book.lang, _WIDTHS, note + 1, header_rows=(0, 0))
