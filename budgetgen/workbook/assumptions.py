"""Assumptions: every setting, constant, tier cap, plan month and next-month action as a named cell."""

from __future__ import annotations

from ..catalog.fx import Rate
from ..core.i18n import name as input_name
from ..core.i18n import word
from ..core.schema import CONSTANTS, SETTINGS_BY_KEY, TASK_TIERS
from ..model import serving
from ..model.columns import NAMES
from ..model.rules import CHECK_TOLERANCE
from ..recon import ACTIONS
from .book import Book
from .layout import FX_CURRENCY, FX_HEADER, FX_RATE, AssumptionsLayout, camel
from .printing import print_setup

SHEET = "Assumptions"
_WIDTHS = [26, 14, 16, 56, 20, 16]  # 148 wide in all: one landscape page wide


def write_assumptions(book: Book, ws, s, months: tuple[str, ...], at: AssumptionsLayout, rates: tuple[Rate, ...]) \
        -> None:
    t = book.t
    book.header(ws, 0, ["setting", "value", "unit", "meaning", "name"], _WIDTHS)
    ws.set_column(5, 5, _WIDTHS[5])   # the tier table's FOCUS PricingCategory
    for key, row in at.settings.items():
        setting = SETTINGS_BY_KEY[key]
        ws.write_string(row, 0, input_name(key, book.lang))
        book.value(ws, row, 1, s.value(key), "input", "percent" if setting.type == "percent" else "general")
        note = " (structure: change it in the input workbook and rebuild)" if setting.structural else ""
        # the unit wrapped too: "plan currency per CNY" is wider than its column
        book.wrapped_row(ws, row, [(2, t(setting.unit), _WIDTHS[2]), (3, t(setting.help) + t(note), _WIDTHS[3])])
        ws.write_string(row, 4, setting.name)
        book.define(setting.name, SHEET, row, 1)
        if setting.choices:
            book.dropdown(ws, row, row, 1, key, setting.choices)
    row = at.days_row
    ws.write_string(row, 0, "days_per_month")
    book.formula(ws, row, 1, "HoursPerMonth/HoursPerDay", s.hours_per_month / 24)
    ws.write_string(row, 2, t("days"))
    book.wrapped(ws, row, 3, t("billing days in a month = hours_per_month / 24"), _WIDTHS[3])
    ws.write_string(row, 4, "DaysPerMonth")
    book.define("DaysPerMonth", SHEET, row, 1)
    row = at.kv_bytes_row
    ws.write_string(row, 0, "kv_bytes")
    book.formula(ws, row, 1, serving.KV_BYTES_EXCEL.removeprefix("="), NAMES.derived["KvBytes"](s))
    ws.write_string(row, 2, t("bytes"))
    book.wrapped(ws, row, 3, t("bytes of one cached KV element = 1 when kv_cache_dtype is fp8, else 2"), _WIDTHS[3])
    ws.write_string(row, 4, "KvBytes")
    book.define("KvBytes", SHEET, row, 1)

    book.header(ws, at.constants_header, ["constant", "value", "", "meaning", "name"])
    constants = CONSTANTS + (("CheckTolerance", CHECK_TOLERANCE, "relative tolerance of Checks"),)
    for name, value, meaning in constants:
        row = at.constants[name]
        ws.write_string(row, 0, name)
        book.value(ws, row, 1, value, "input", "General")
        book.wrapped(ws, row, 3, t(meaning), _WIDTHS[3])
        ws.write_string(row, 4, name)
        book.define(name, SHEET, row, 1)

    book.header(ws, at.tiers_header, ["tier", "cap a month", "unit", "meaning", "name", "FOCUS PricingCategory"])
    for i, tier in enumerate(TASK_TIERS):
        row = at.tiers_first + i
        ws.write_string(row, 0, tier.name, book.f.get("input", "text"))
        book.value(ws, row, 1, s.tier_cap(tier), "input", "money")
        ws.write_string(row, 2, t("currency/month"))
        ws.write_string(row, 3, t("optional budget cap for the {tier} tier (blank: none)").format(
            tier=word(tier.name, book.lang)))
        ws.write_string(row, 4, tier.cap_name)
        ws.write_string(row, 5, tier.focus_category)   # what its bill lines carry: Recon checks them against it
        book.define(tier.cap_name, SHEET, row, 1)
    last_tier = at.tiers_first + len(TASK_TIERS) - 1
    book.define_range("TierList", SHEET, at.tiers_first, last_tier, 0)
    book.define_range("TierCaps", SHEET, at.tiers_first, last_tier, 1)
    book.define_range("TierPricingCategory", SHEET, at.tiers_first, last_tier, 5)

    book.header(ws, at.months_header, ["plan month", "#", "", "", ""])
    for i, month in enumerate(months):
        ws.write_string(at.months_first + i, 0, month, book.f.get("input", "text"))
        ws.write_number(at.months_first + i, 1, i + 1)
    book.define_range("PlanMonths", SHEET, at.months_first, at.months_first + len(months) - 1, 0)

    book.header(ws, at.actions_header, ["flag", "action next month", "", "", "name"])
    for row, (flag, action) in enumerate(ACTIONS.items(), start=at.actions_first):
        ws.write_string(row, 0, flag)
        ws.write_string(row, 1, t(action), book.f.get("input", "text"))
        ws.write_string(row, 4, f"Action{camel(flag)}")
        book.define(f"Action{camel(flag)}", SHEET, row, 1)
    book.header(ws, at.fx_header, [FX_HEADER, "rate", "unit", "as of, source", "name"])
    for row, rate in enumerate(rates, start=at.fx_first):
        ws.write_string(row, 0, rate.currency)
        book.value(ws, row, 1, rate.rate, "input", "General")
        ws.write_string(row, 2, f"{s.currency}/{rate.currency}")
        ws.write_string(row, 3, f"{rate.as_of}, {t(rate.source)}")
        ws.write_string(row, 4, rate.name)
        book.define(rate.name, SHEET, row, 1)
    book.define_range(FX_CURRENCY, SHEET, at.fx_first, at.last_row, 0)
    book.define_range(FX_RATE, SHEET, at.fx_first, at.last_row, 1)
    ws.freeze_panes(1, 0)
    print_setup(ws, book.lang, _WIDTHS, at.last_row, header_rows=(0, 0), blocks=at.blocks)
