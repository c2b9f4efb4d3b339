"""BuyVsRent: per GPU type the plan uses, whether owning a card pays (the rules of §3.7); a GPU without a purchase
price, an on-demand price or a power figure has its row, what depends on the missing figure blank until it is
typed on GPUs."""

from __future__ import annotations

from ..core.i18n import word
from ..core.schema import COMMITMENT_TIERS
from ..model import rules
from ..plan.engine import Plan
from .book import Book
from .layout import shown
from .printing import print_setup

SHEET = "BuyVsRent"
# The verdict of a GPU without a figure the comparison needs: a named text cell under the table, so that the formula
# is the same in every language. Per missing figure (rules' verdict word): the line before the cell, the prompt in
# it and its name.
MISSING = {
    rules.NO_PURCHASE_PRICE: ("verdict without a purchase price:", "enter purchase_price on GPUs to compare",
                              "VerdictNoPurchasePrice"),
    rules.NO_ON_DEMAND_PRICE: ("verdict without an on-demand price:", "enter on_demand_per_hour on GPUs to compare",
                               "VerdictNoOnDemandPrice"),
    rules.NO_POWER: ("verdict without a power figure:", "enter power_w on GPUs to compare", "VerdictNoPower"),
}
_WIDTHS = [12, 12, 9, 12, 12, 11, 12, 13, 9, 12, 13, 10]  # twelve columns one page wide


def _known(name: str, row: int) -> str:
    """The GPU's figure from the GPUs sheet column `name`; a blank stays blank (unknown), never 0."""
    figure = f"INDEX({name},MATCH($A{row},GpuName,0))"
    return f'IF(ISNUMBER({figure}),{figure},"")'


def write_buy_vs_rent(book: Book, ws, plan: Plan) -> None:
    t, cur = book.t, book.currency
    book.header(ws, 0, ["gpu", f"{t('purchase')} ({cur}{t('/card')})", "power (W)",
                        f"{t('on demand')} ({cur}{t('/h')})", f"{t('fixed')} ({cur}{t('/day')})",
                        f"{t('energy')} ({cur}{t('/h')})", "break-even (h/day)", "plan use (h/day/card)",
                        "verdict", f"{t('best commitment')} ({cur}{t('/h')})", "break-even vs commitment (h/day)",
                        "break-even utilisation"],
                _WIDTHS)
    ws.set_row(0, 45)  # three lines: the narrower headers wrap
    for i, b in enumerate(plan.buy_vs_rent, start=1):
        g = plan.inputs.gpu(b.gpu)
        n = i + 1
        ws.write_string(i, 0, b.gpu)
        for col, name, value, fmt in ((1, "GpuPurchase", g.purchase_price, "money"), (2, "GpuPowerW", g.power_w, "int"),
                                      (3, "GpuOnDemand", g.prices.get("on_demand"), "price")):
            book.formula(ws, i, col, _known(name, n), value, fmt, "link")
        book.formula(ws, i, 4, rules.DAILY_FIXED.formula(purchase=f"B{n}", power_w=f"C{n}"), b.daily_fixed, "price")
        book.formula(ws, i, 5, rules.ENERGY_PER_HOUR.formula(power_w=f"C{n}"), b.energy_per_hour, "price")
        book.formula(ws, i, 6, rules.BREAK_EVEN.formula(on_demand=f"D{n}", energy=f"F{n}", daily_fixed=f"E{n}"),
                     b.break_even_hours_per_day, "number")
        used = f"(TaskGpu=$A{n})"
        book.formula(ws, i, 7, rules.PLAN_HOURS_PER_DAY.formula(gpu_hour_months=f"SUMPRODUCT({used}*DemandGpuHours)",
                                                                card_months=f"SUMPRODUCT({used}*DemandHeldMonths)"),
                     b.plan_hours_per_day, "number")
        verdict = rules.VERDICT.formula(daily_fixed=f"E{n}", on_demand=f"D{n}", energy=f"F{n}", break_even=f"G{n}",
                                        plan_hours=f"H{n}", no_price=MISSING[rules.NO_PURCHASE_PRICE][2],
                                        no_on_demand=MISSING[rules.NO_ON_DEMAND_PRICE][2],
                                        no_power=MISSING[rules.NO_POWER][2])
        shown_value = t(MISSING[b.verdict][1]) if b.verdict in MISSING else word(b.verdict, book.lang)
        book.formula(ws, i, 8, shown(verdict), shown_value, "text")
        rates = [f"INDEX({tier.price_name},MATCH($A{n},GpuName,0))" for tier in COMMITMENT_TIERS]
        known = "OR(" + ",".join(f"ISNUMBER({r})" for r in rates) + ")"
        book.formula(ws, i, 9, rules.BEST_COMMIT_RATE.formula(rates=",".join(rates), known=known),
                     b.best_commitment_rate, "price")
        book.formula(ws, i, 10, rules.BREAK_EVEN.formula(on_demand=f"J{n}", energy=f"F{n}", daily_fixed=f"E{n}"),
                     b.break_even_vs_commitment, "number")
        book.formula(ws, i, 11, rules.BREAK_EVEN_SHARE.formula(hours=f"G{n}"), b.break_even_utilisation, "percent")
    note = len(plan.buy_vs_rent) + 2
    ws.write_string(note, 0, t("Buy when each owned card would be used more hours a day than the "
                               "break-even; owning pays only for steady, long daily use."), book.f.note)
    ws.write_string(note, 9, t("Against the best commitment rate (Commitments), owning pays above this daily use."),
                    book.f.note)
    for row, (line, prompt, name) in enumerate(MISSING.values(), start=note + 1):
        ws.write_string(row, 0, t(line), book.f.note)
        ws.write_string(row, 8, t(prompt), book.f.note)
        book.define(name, SHEET, row, 8)
    print_setup(ws, book.lang, _WIDTHS, note + len(MISSING), header_rows=(0, 0))
