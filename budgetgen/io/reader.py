"""Input workbook to validated Inputs; every problem collected, then reported at once."""

from __future__ import annotations

import datetime as dt
import difflib
import itertools
import math
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from xlsxwriter.utility import xl_col_to_name

from ..catalog.fx import FxTable, Rate, fx_table, money_default
from ..catalog.gpus import (
    CATALOG_CURRENCY,
    TIER_OFFER_COLUMNS,
    builtin_records,
    catalog_warnings,
    gpu_from_record,
    in_plan_currency,
    is_catalog_price,
)
from ..catalog.models import MODEL_COLUMNS, ModelCatalog, ModelRecordError, UnknownModelError, builtin_models
from ..catalog.prices import (
    ANY_REGION,
    OFFER_FIELDS,
    builtin_offers,
    name_key,
    offer_regions,
    providers_table,
    read_as_of,
    split_names,
)
from ..core.errors import Code, InputError, Problem
from ..core.i18n import SHEETS_ZH, Message, canonical_name, canonical_sheet
from ..core.inputs import Extra, Gpu, Inputs, Settings, Task
from ..core.records import BUFFER
from ..core.schema import (
    BUDGET_COLUMNS,
    EXTRA_COLUMNS,
    FX_COLUMNS,
    GPU_COLUMNS,
    KIND,
    MAX_DEMAND_FACTOR,
    PRICE_COLUMNS,
    RAMP_COLUMNS,
    SCENARIO_COLUMNS,
    SCENARIO_LEVELS,
    SETTINGS_BY_KEY,
    SETTINGS_COLUMNS,
    TASK_COLUMNS,
    TASK_TIERS,
    Column,
    Value,
    normalise_header,
)
from ..core.values import BadValue, add_months, is_blank, parse_cell, parse_month, text_length
from ..plan.budgets import Budget
from ..plan.scenarios import DRIVER, ScenarioRow
from .safefile import MAX_TEXT, iter_rows, load_input_workbook, read_input_file, unsaved_formulas
from .template import example_rows_left

if TYPE_CHECKING:
    import pandas as pd

# Rows below the header read from an inventory sheet: room for 50,000 tasks (a large company's inventory is
# thousands; 50,000 build on a 2-core machine with a few GB), while a bloated or hostile sheet is refused within
# seconds (openpyxl reads some thousands of rows a second). Bills and Usage sheets keep safefile's larger default.
MAX_TABLE_ROWS = 50_000


@dataclass
class Record:
    """One non-blank table row: parsed values by column, their cells, unknown columns."""

    row: int
    values: dict[str, Value]
    cells: dict[str, str]
    extra: dict[str, Value]


class Collector:
    """Problems found so far, for one fail at the end."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []
        self.setting_cells: dict[str, str] = {}  # setting key -> the cell its value was read from
        self.ramp_cells: dict[str, str] = {}  # task id -> the cell of its Ramp row's task_id

    def add(self, code: Code, sheet: str, cell: str, message: Message) -> None:
        self.problems.append(Problem(code, sheet, cell, message))


def _find_columns(header: tuple, sheet: str, columns: tuple[Column, ...], out: Collector):
    """Map declared columns to sheet column indexes; unknown headers kept by their text."""
    by_key = {normalise_header(c.name): c for c in columns}
    found: dict[str, int] = {}
    unknown: dict[str, int] = {}
    for index, text in enumerate(header):
        if is_blank(text):
            continue
        column = by_key.get(normalise_header(canonical_name(text)))
        if column is None:
            unknown[str(text).strip()] = index
        elif column.name in found:
            out.add(Code.DUPLICATE_COLUMN, sheet, f"{xl_col_to_name(index)}1",
                    Message("duplicate_column", text=str(text)))
        else:
            found[column.name] = index
    for column in columns:
        if column.required and column.name not in found:
            out.add(Code.MISSING_COLUMN, sheet, "A1",
                    Message("missing_column", column=column.name, help=column.help))
    return found, unknown


def read_table(ws, sheet: str, columns: tuple[Column, ...], out: Collector) -> list[Record]:
    """Every non-blank row of a table sheet, cells parsed by their column's declaration."""
    return read_rows(iter_rows(ws, max_rows=MAX_TABLE_ROWS, header=True), sheet, columns, out)


def read_rows(rows: Iterator[tuple[int, tuple]], sheet: str, columns: tuple[Column, ...], out: Collector) -> list[Record]:
    """Every non-blank row of a table, from (row number, values) pairs whose first is the header (a sheet's rows
    or a CSV file's): cells parsed by their column's declaration, problems at `sheet`!A1-style cells."""
    first = next(rows, None)
    if first is None:
        if any(c.required for c in columns):
            out.add(Code.MISSING_COLUMN, sheet, "A1", Message("sheet_empty"))
        return []
    if first[0] != 1:
        out.add(Code.MISSING_COLUMN, sheet, "A1", Message("header_not_in_row_1"))
    found, unknown = _find_columns(first[1], sheet, columns, out)
    for header, i in unknown.items():
        _too_long(header, sheet, f"{xl_col_to_name(i)}1", "header", out)
    declared = {c.name: c for c in columns}
    records = []
    for row_no, values in rows:
        cell = {name: f"{xl_col_to_name(i)}{row_no}" for name, i in found.items()}
        raw = {name: values[i] if i < len(values) else None for name, i in found.items()}
        if all(is_blank(v) for v in raw.values()):
            continue
        parsed: dict[str, object] = {}
        for name, value in raw.items():
            if is_blank(value) or _too_long(value, sheet, cell[name], name, out):
                continue
            try:
                parsed[name] = parse_cell(value, declared[name])
            except BadValue as exc:
                out.add(exc.code, sheet, cell[name], Message("cell_value", column=name, problem=exc.message))
        extra = {h: values[i] if i < len(values) else None for h, i in unknown.items()}
        for header, i in unknown.items():
            _too_long(extra[header], sheet, f"{xl_col_to_name(i)}{row_no}", header, out)
        records.append(Record(row_no, parsed, cell, extra))
    return records


def _too_long(value: object, sheet: str, cell: str, name: str, out: Collector) -> bool:
    """Whether a text is longer than an output cell holds (written whole or not at all); a problem if so."""
    if not isinstance(value, str) or text_length(value) <= MAX_TEXT:
        return False
    out.add(Code.OUT_OF_RANGE, sheet, cell, Message("text_too_long", column=name, length=text_length(value),
                                                    limit=MAX_TEXT))
    return True


# ---------------------------------------------------------------- Settings

_CURRENCY = re.compile(r"[A-Z]{3}")
_SETTING_COLUMN_TYPE = {"number": "number", "count": "count", "percent": "percent", "month": "month",
                        "text": "text", "choice": "choice", "date": "date"}


def _setting_column(setting) -> Column:
    return Column(setting.key, _SETTING_COLUMN_TYPE[setting.type], setting.unit, choices=setting.choices,
                  help=setting.help, positive=setting.positive)


def _read_settings(ws, out: Collector, today: dt.date | None) -> Settings:
    """Settings with defaults; the build date is `today` (--date), else the build_date setting, else today."""
    values: dict[str, Value] = {}
    seen: dict[str, str] = {}
    if ws is not None:
        for rec in read_table(ws, "Settings", SETTINGS_COLUMNS, out):
            _read_setting(rec, values, seen, out)
    if today is not None or not values.get("build_date"):
        values["build_date"] = (today or dt.date.today()).isoformat()
    today = dt.date.fromisoformat(values["build_date"])
    currency = _given(values, "currency")
    for setting in SETTINGS_BY_KEY.values():  # money-sized defaults follow the plan currency
        if setting.money and setting.key not in values and setting.money != currency:
            amount = money_default(setting.default, setting.money, currency, today)
            if amount is None:
                out.add(Code.REQUIRED, "Settings", out.setting_cells.get("currency", ""), Message(
                    "money_default_no_rate", setting=setting.key, plan=currency, value=setting.default,
                    currency=setting.money))
            values[setting.key] = amount
    start = values.get("period_start") or add_months(f"{today.year:04d}-{today.month:02d}", 1)
    months = int(_given(values, "period_months"))
    last = add_months(start, months - 1)
    if len(last) > len(LAST_MONTH) or last > LAST_MONTH:  # as text, a 5-digit year sorts before 9999
        latest = add_months(LAST_MONTH, 1 - months)
        out.add(Code.OUT_OF_RANGE, "Settings", seen.get("period_start", "") if ws is not None else "", Message(
            "plan_past_last_month", start=start, months=months, last=LAST_MONTH, latest=latest))
        start = latest
    values["period_start"] = start
    values["plan_months"] = tuple(add_months(start, i) for i in range(months))
    return Settings.of(values)


def _given(values: dict[str, Value], key: str) -> Value:
    """A setting's value as given, else its default."""
    return values[key] if key in values else SETTINGS_BY_KEY[key].default


LAST_MONTH = "9999-12"
"""The last month a workbook can show (Excel's dates end in 9999)."""


def _read_setting(rec: Record, values: dict[str, Value], seen: dict[str, str], out: Collector) -> None:
    cell = rec.cells.get("setting", f"A{rec.row}")
    if "setting" not in rec.values:
        if not _had_problem(out, cell, "Settings"):
            out.add(Code.REQUIRED, "Settings", cell, Message("setting_blank"))
        return
    key = canonical_name(str(rec.values["setting"]).strip()).lower().replace(" ", "_")
    setting = SETTINGS_BY_KEY.get(key)
    if setting is None:
        guess = difflib.get_close_matches(key, SETTINGS_BY_KEY, n=1)
        hint = Message("did_you_mean", guess=guess[0]) if guess else Message("see_settings")
        out.add(Code.UNKNOWN_VALUE, "Settings", cell,
                Message("unknown_setting", setting=str(rec.values.get("setting")), hint=hint))
        return
    if key in seen:
        out.add(Code.DUPLICATE_SETTING, "Settings", cell, Message("duplicate_setting", setting=key, first=seen[key]))
        return
    seen[key] = cell
    value_cell = rec.cells.get("value", f"B{rec.row}")
    raw = rec.values.get("value")
    if raw is None:
        return
    try:
        value = parse_cell(raw, _setting_column(setting))
    except BadValue as exc:
        out.add(exc.code, "Settings", value_cell, Message("cell_value", column=key, problem=exc.message))
        return
    if setting.key == "currency":
        value = str(value).upper()
        if not _CURRENCY.fullmatch(value):  # shown in number formats: never free text
            out.add(Code.UNKNOWN_VALUE, "Settings", value_cell, Message("currency_code", raw=str(raw)))
            return
    lo, hi = setting.minimum, setting.maximum
    if isinstance(value, (int, float)) and ((lo is not None and value < lo) or (hi is not None and value > hi)):
        bounds = Message("setting_between", setting=key, value=value, lo=lo, hi=hi) if hi is not None else \
            Message("setting_at_least", setting=key, value=value, lo=lo)
        out.add(Code.NEGATIVE if lo == 0 and value < 0 else Code.OUT_OF_RANGE, "Settings", value_cell, bounds)
        return
    if key in OFFER_FILTERS and not _offer_filter_names(key, str(value), value_cell, out):
        return
    values[setting.key] = value
    out.setting_cells[key] = value_cell


# The settings that narrow the built-in offers: what each names, and the names it may give.
OFFER_FILTERS = {"providers": ("provider", lambda offers: {o.provider for o in offers} | set(providers_table())),
                 "regions": ("region", offer_regions)}


def _offer_filter_names(key: str, text: str, cell: str, out: Collector) -> bool:
    """Whether a providers or regions setting names only names the built-in offers know (a typo would silently take
    every offer of the any-region kind, or none), at least one; else a problem at its cell."""
    what, names_of = OFFER_FILTERS[key]
    known = sorted(names_of(builtin_offers()), key=str.lower)
    names = split_names(text, known)
    if not names:
        out.add(Code.REQUIRED, "Settings", cell, Message("offer_filter_empty", setting=key, raw=text, what=what))
        return False
    keys = {name_key(k): k for k in known}
    bad = [n for n in names if name_key(n) not in keys]
    for name in bad:
        guess = difflib.get_close_matches(name_key(name), list(keys), n=1, cutoff=0.6)
        hint = Message("did_you_mean", guess=keys[guess[0]]) if guess else Message("offer_filter_known",
                                                                                  names=tuple(known))
        out.add(Code.UNKNOWN_VALUE, "Settings", cell, Message("offer_filter_unknown", setting=key, name=name,
                                                              what=what, hint=hint))
    return not bad


# ---------------------------------------------------------------- GPUs and Models

def _keyed_rows(ws, sheet: str, columns: tuple[Column, ...], key: str, out: Collector) -> Iterator[tuple[str, Record]]:
    """The rows of a catalog sheet that name their key (`gpu`, `model`), each name once, ignoring case; a repeated
    name is a problem at its cell."""
    seen: dict[str, str] = {}
    for rec in read_table(ws, sheet, columns, out):
        name = rec.values.get(key)
        if name is None:
            continue
        _check_key(name, key, sheet, rec.cells[key], out)
        if name.lower() in seen:
            out.add(Code.DUPLICATE_GPU, sheet, rec.cells[key],
                    Message(f"duplicate_{key}", **{key: name}, first=seen[name.lower()]))
            continue
        seen[name.lower()] = rec.cells[key]
        yield name, rec


def _read_currency(value: object, sheet: str, cell: str, out: Collector) -> str | None:
    code = str(value).strip().upper()
    if _CURRENCY.fullmatch(code):
        return code
    out.add(Code.UNKNOWN_VALUE, sheet, cell, Message("currency_code", raw=str(value)))
    return None


def _read_fx(ws, settings: Settings, out: Collector) -> dict[str, Rate]:
    """The rates the user gives: the FX sheet's rows, and catalog_fx for CNY (an FX row for CNY wins)."""
    rates: dict[str, Rate] = {}
    if settings.catalog_fx is not None and settings.currency != CATALOG_CURRENCY:
        rates[CATALOG_CURRENCY] = Rate(CATALOG_CURRENCY, settings.catalog_fx, settings.build_day.isoformat(),
                                       "Settings: catalog_fx")
    if ws is None:
        return rates
    seen: dict[str, str] = {}
    for rec in read_table(ws, "FX", FX_COLUMNS, out):
        if "currency" not in rec.values or "rate" not in rec.values:
            continue
        cell = rec.cells["currency"]
        code = _read_currency(rec.values["currency"], "FX", cell, out)
        if code is None:
            continue
        if code in seen:
            out.add(Code.DUPLICATE_GPU, "FX", cell, Message("duplicate_fx", currency=code, first=seen[code]))
            continue
        seen[code] = cell
        if code == settings.currency and rec.values["rate"] != 1:
            out.add(Code.OUT_OF_RANGE, "FX", rec.cells["rate"],
                    Message("fx_plan_currency", currency=code, rate=rec.values["rate"]))
            continue
        rates[code] = Rate(code, float(rec.values["rate"]), str(rec.values.get("as_of") or settings.build_date),
                           str(rec.values.get("source") or f"FX!{rec.cells['rate']}"))
    return rates


FX_FRESH_DAYS = 30  # an FX rate dated more than this many days before the plan's first day is warned about


def _old_rates(fx, currencies: set[str], settings: Settings) -> list[Message]:
    """A warning per rate that converts prices of the plan and is dated more than FX_FRESH_DAYS before the plan's
    first day: the plan pays at the rates of its months, not of the rate's day."""
    if not settings.plan_months:
        return []
    start = dt.date.fromisoformat(f"{settings.plan_months[0]}-01")
    out = []
    for currency in sorted(currencies - {settings.currency}):
        rate = fx.rates.get(currency)
        try:
            day = dt.date.fromisoformat(rate.as_of) if rate is not None else None
        except ValueError:
            day = None
        if day is not None and (start - day).days > FX_FRESH_DAYS:
            out.append(Message("fx_rate_old", currency=currency, plan=settings.currency, rate=rate.rate,
                               as_of=rate.as_of, start=settings.plan_months[0], days=FX_FRESH_DAYS))
    return out


def _default_offer_policy(settings: Settings) -> bool:
    """Whether the built-in offers are taken as `init` takes them: every provider and region, the plan's currency."""
    return settings.providers is None and settings.regions is None and settings.offer_currency == "auto"


def _written_by_init(typed: dict, written: dict | None, settings: Settings) -> bool:
    """Whether a GPUs row is the built-in one as `init` wrote it (its provider, tier offers and prices): under
    another offer policy (providers, regions, offer_currency) the catalog's row under that policy replaces it."""
    if written is None or not typed.get("provider"):
        return False
    same_offers = all((typed.get(c) or None) == (written.get(c) or None) for c in ("provider", *TIER_OFFER_COLUMNS))
    return same_offers and is_catalog_price({c: typed.get(c) for c in PRICE_COLUMNS}, settings.currency, written,
                                            settings.build_day)


def _priced(records) -> bool:
    return any(rec.get(c) is not None for rec in records for c in PRICE_COLUMNS)


def _offer_currencies(providers: str | None, regions: str | None) -> set[str]:
    """The currencies of the built-in offers from `providers` in `regions` (blank: any)."""
    offers = builtin_offers()
    names = {name_key(n) for n in split_names(providers)}
    places = {name_key(n) for n in split_names(regions, offer_regions(offers))} | {ANY_REGION}
    return {o.currency.upper() for o in offers if o.priced and (not names or name_key(o.provider) in names)
            and (not split_names(regions) or name_key(o.region) in places)}


def _offer_filter_reach(settings: Settings, first: str | None, records, out: Collector) -> list[Message]:
    """What providers and regions leave of the built-in offers under the plan's currency policy: nothing at all is a
    problem at the setting (the plan would silently price no GPU from the catalog, or only what the GPUs sheet
    quotes); a name that adds no offer is a warning."""
    given = [k for k in OFFER_FILTERS if getattr(settings, k) is not None and k in out.setting_cells]
    if not given:
        return []

    def hint(providers, regions) -> Message:
        other = sorted(_offer_currencies(providers, regions) - {settings.currency})
        return Message("offer_filter_other_currency", currencies=tuple(other), policy=settings.offer_currency) \
            if other and settings.offer_currency != "any" else Message("offer_filter_widen")
    if not _priced(records):
        out.add(Code.NO_PRICE, "Settings", out.setting_cells[given[0]], Message(
            "offer_filter_excludes_all", providers=settings.providers or ANY_REGION,
            regions=settings.regions or ANY_REGION,
            policy=settings.offer_currency, currency=settings.currency,
            hint=hint(settings.providers, settings.regions)))
        return []
    warnings = []
    for key in given:
        names = split_names(getattr(settings, key), OFFER_FILTERS[key][1](builtin_offers()))
        if len(names) < 2:
            continue
        for name in names:
            one = {"providers": settings.providers, "regions": settings.regions, key: name}
            if not _priced(builtin_records(settings.currency, one["providers"], one["regions"], first=first,
                                           offer_currency=settings.offer_currency)):
                warnings.append(Message("offer_filter_name_unused", setting=key, name=name, place=Message(
                    "setting_cell", cell=out.setting_cells[key]), hint=hint(one["providers"], one["regions"])))
    return warnings


def _read_gpus(ws, fx_ws, settings: Settings, out: Collector) -> tuple[list[Gpu], list[str], FxTable]:
    """The built-in catalog with the GPUs sheet's rows added or overriding, every price converted into the plan
    currency. A sheet row's prices are in its currency (blank: the plan currency); when that is not the built-in
    prices' currency, the row's prices replace all of them: one row never mixes two currencies."""
    warnings: list[str] = []
    sheet_cells: dict[str, dict[str, str]] = {}  # per GPUs sheet row: the cell of each column typed there
    # catalog_fx asks for the Chinese-market (CNY) offers, converted at its rate, before those in the plan currency
    first = CATALOG_CURRENCY if settings.catalog_fx is not None else None
    records = {rec["gpu"].lower(): dict(rec) for rec in builtin_records(
        settings.currency, settings.providers, settings.regions, first=first, offer_currency=settings.offer_currency)}
    builtin = {k: dict(v) for k, v in records.items()}
    warnings.extend(_offer_filter_reach(settings, first, records.values(), out))
    # the rows `init` wrote are the catalog under the default offer policy: under another, they give way to it
    as_init = {} if _default_offer_policy(settings) else {
        rec["gpu"].lower(): rec for rec in builtin_records(settings.currency, first=first)}
    quoted: set[str] = set()  # GPUs whose prices the user typed
    if ws is not None:
        for name, rec in _keyed_rows(ws, "GPUs", GPU_COLUMNS, "gpu", out):
            if _written_by_init(rec.values, as_init.get(name.lower()), settings):
                continue
            sheet_cells[name.lower()] = {k: rec.cells[k] for k in rec.values}
            merged = records.setdefault(str(name).lower(), {c.name: None for c in GPU_COLUMNS})
            if "provider" in rec.values:  # the row is that provider's offer: none of the built-in one is kept
                merged.update(dict.fromkeys((*OFFER_FIELDS, *TIER_OFFER_COLUMNS)))
            typed_currency = settings.currency if "currency" not in rec.values else \
                _read_currency(rec.values["currency"], "GPUs", rec.cells["currency"], out)
            if ("currency" in rec.values or any(c in rec.values for c in PRICE_COLUMNS)) \
                    and typed_currency != merged.get("currency"):
                # prices in another currency than the built-in ones replace them all: never mixed in one row
                merged.update(dict.fromkeys((*PRICE_COLUMNS, "source", "as_of")))
            merged.update({k: v for k, v in rec.values.items() if k != "gpu" or merged["gpu"] is None})
            if "currency" in rec.values or any(c in rec.values for c in PRICE_COLUMNS):
                merged["currency"] = typed_currency
            catalog = builtin.get(name.lower(), {})
            if any(c in rec.values for c in PRICE_COLUMNS) and merged["currency"] and not (
                    catalog and is_catalog_price({c: merged.get(c) for c in PRICE_COLUMNS}, merged["currency"],
                                                 catalog, settings.build_day)) \
                    and not ("as_of" in rec.values and rec.values["as_of"] != catalog.get("as_of")):
                quoted.add(merged["gpu"])  # the user's quote: dated by the user only if they typed a date of theirs
                if "provider" not in rec.values:  # nor the built-in offer's: its provider and source are not the quote's
                    merged.update(provider=None, region=None)
                    if "source" not in rec.values:
                        merged["source"] = None
            for tier in TASK_TIERS:  # whose offer a price is, on a row that types no such price: a label on
                offer = f"{tier.name}_offer"  # nothing, or on the built-in offer's price (another provider's)
                if offer in rec.values and tier.price_column not in rec.values \
                        and not _had_problem(out, rec.cells.get(tier.price_column, ""), "GPUs"):
                    out.add(Code.REQUIRED, "GPUs", rec.cells[offer], Message(
                        "offer_without_price", column=offer, offer=rec.values[offer], price=tier.price_column))
            if "as_of" in rec.values and read_as_of(str(rec.values["as_of"])) is None:  # 01/06/2026, June 2026:
                out.add(Code.BAD_DATE, "GPUs", rec.cells["as_of"], Message(  # no age check would ever flag them
                    "as_of_not_a_date", raw=str(rec.values["as_of"])))
            for col in ("vram_gb", "bandwidth_gbs", "tflops"):
                if merged.get(col) is None and not _had_problem(out, rec.cells.get(col, ""), "GPUs"):
                    out.add(Code.REQUIRED, "GPUs", rec.cells.get(col, f"A{rec.row}"),
                            Message("gpu_required", column=col, gpu=str(name)))
    priced = [rec for rec in records.values() if rec.get("currency") and any(rec.get(c) is not None
                                                                             for c in PRICE_COLUMNS)]
    fx, missing = fx_table(settings.currency, (rec["currency"] for rec in priced), _read_fx(fx_ws, settings, out),
                           settings.build_day)
    warnings.extend(_old_rates(fx, {rec["currency"] for rec in priced}, settings))
    unpriced = []
    for row in priced:
        if row["currency"] not in missing:
            continue
        cell = sheet_cells.get(row["gpu"].lower(), {}).get("currency")
        if cell:
            out.add(Code.UNKNOWN_VALUE, "GPUs", cell, Message("fx_unknown", currency=row["currency"],
                                                              plan=settings.currency))
        else:  # a built-in price: unknown in the plan currency, so not offered (never read as another currency)
            unpriced.append(row["gpu"])
            row.update(dict.fromkeys(PRICE_COLUMNS), currency=settings.currency)
    if unpriced:
        warnings.append(Message("fx_unknown_builtin", names=", ".join(unpriced), currency=CATALOG_CURRENCY,
                                plan=settings.currency))
    gpus = [in_plan_currency(gpu_from_record({**rec, "currency": rec.get("currency") or settings.currency}), fx)
            for rec in records.values() if all(rec.get(c) is not None for c in ("vram_gb", "bandwidth_gbs", "tflops"))
            and (rec.get("currency") or settings.currency) in fx.rates]
    # a GPU without prices has nothing to convert: its currency is the plan's (the workbook shows rate 1)
    gpus = [g if any(p is not None for p in (*g.listed_prices.values(), g.listed_purchase))
            else replace(g, currency=settings.currency, fx=1.0) for g in gpus]
    warnings.extend(catalog_warnings(gpus, settings, sheet_cells, frozenset(quoted)))
    return gpus, warnings, fx


# ---------------------------------------------------------------- Models

def _read_models(ws, out: Collector) -> ModelCatalog:
    """The built-in model catalog with the Models sheet's rows added or overriding, like the GPUs sheet."""
    catalog = builtin_models()
    if ws is None:
        return catalog
    records: list[dict] = []
    for _, rec in _keyed_rows(ws, "Models", MODEL_COLUMNS, "model", out):
        try:
            catalog.overlay([rec.values])
        except ModelRecordError as exc:
            if not any(_had_problem(out, cell, "Models") for cell in rec.cells.values()):  # else that cell says why
                out.add(Code.REQUIRED, "Models", rec.cells["model"], Message("model_row", problem=str(exc)))
            continue
        records.append(rec.values)
    return catalog.overlay(records)


# ---------------------------------------------------------------- Tasks

_TIER_DEFAULTED = "\0tier defaulted"  # a transient key of a task's values: its tier is the kind's default

def _resolve_model(v: dict, rec: Record, models: ModelCatalog, out: Collector) -> None:
    """The task's `model` as its catalog name; a near miss a problem at the cell with the nearest name."""
    if v.get("model") is None:
        return
    try:
        v["model"] = models.find(v["model"]).name
    except UnknownModelError as exc:
        hint = Message("did_you_mean", guess=exc.suggestion) if exc.suggestion else Message("see_models")
        out.add(Code.UNKNOWN_VALUE, "Tasks", rec.cells["model"], Message("unknown_model", model=exc.name, hint=hint))


def _check_sizes(v: dict, rec: Record, models: ModelCatalog, out: Collector) -> None:
    """active_params_b no more than the total (typed, else the catalog model's); prompt_tokens within the catalog
    model's context."""
    try:
        spec = models.find(v["model"]) if v.get("model") is not None else None
    except UnknownModelError:  # already a problem at its cell
        spec = None
    total = v.get("model_params_b") or (spec.total_params_b if spec else None)
    active = v.get("active_params_b")
    if active is not None and total is not None and active > total:
        out.add(Code.OUT_OF_RANGE, "Tasks", rec.cells["active_params_b"],
                Message("active_above_total", active=active, total=total))
    prompt, context = v.get("prompt_tokens"), spec.native_context if spec else None
    if spec is not None and prompt is not None and context and prompt > context:
        out.add(Code.OUT_OF_RANGE, "Tasks", rec.cells["prompt_tokens"],
                Message("prompt_beyond_context", prompt=prompt, model=spec.name, context=context))


def _task_values(rec: Record, settings: Settings, gpus: dict[str, Gpu], models: ModelCatalog,
                 out: Collector) -> dict[str, Value] | None:
    v = dict(rec.values)
    cell = rec.cells.get
    for col in ("task_id", "kind"):
        at = cell(col)
        if col not in v and at and not _had_problem(out, at):
            out.add(Code.REQUIRED, "Tasks", at, Message("required", column=col, help=_column(col).help))
    if "model" not in v and "model_params_b" not in v and not _had_problem(out, cell("model_params_b", "")) \
            and not _had_problem(out, cell("model", "")):
        out.add(Code.REQUIRED, "Tasks", cell("model_params_b") or cell("model") or f"A{rec.row}",
                Message("required", column="model_params_b", help=_column("model_params_b").help))
    _resolve_model(v, rec, models, out)
    if v.get("kind") is None:
        return None
    kind = KIND[v["kind"]]
    for col in kind.requires:
        if col not in v and not _had_problem(out, cell(col, "")):
            out.add(Code.REQUIRED, "Tasks", cell(col) or f"A{rec.row}",
                    Message("required_for_kind", column=col, kind=kind.name, unit=_column(col).unit))
    _check_sizes(v, rec, models, out)
    method = v.get("method")
    if method is not None and method not in kind.methods:
        out.add(Code.UNKNOWN_VALUE, "Tasks", cell("method", ""),
                Message("method_for_kind", method=method, kind=kind.name, allowed=kind.methods))
    v.setdefault("method", kind.default_method)
    for col in kind.ignores:
        v.pop(col, None)
    for column in TASK_COLUMNS:
        if column.default is not None and column.name not in kind.ignores:
            v.setdefault(column.name, column.default)
        v.setdefault(column.name, None)
    if v["tier"] is None:
        v["tier"] = kind.default_tier
        v[_TIER_DEFAULTED] = True
    if v["mfu"] is not None and not 0 < v["mfu"] <= 1:
        out.add(Code.OUT_OF_RANGE, "Tasks", cell("mfu", ""), Message("mfu_range", mfu=v["mfu"]))
    if v["gpu"] is not None:
        gpu = gpus.get(v["gpu"].lower())
        if gpu is None:
            names = ", ".join(gpus[k].name for k in gpus)
            out.add(Code.UNKNOWN_VALUE, "Tasks", cell("gpu", ""),
                    Message("unknown_gpu", gpu=v["gpu"], names=names))
        else:
            v["gpu"] = gpu.name
    _check_months(v, rec, settings, out)
    return v


def _check_months(v: dict, rec: Record, settings: Settings, out: Collector) -> None:
    months = settings.plan_months
    for col, default in (("start_month", months[0]), ("end_month", months[-1])):
        if v[col] is None:
            v[col] = default
        elif v[col] not in months:
            out.add(Code.MONTH_OUTSIDE_PLAN, "Tasks", rec.cells[col],
                    Message("month_outside_plan", column=col, month=v[col], first=months[0], last=months[-1]))
    if v["start_month"] in months and v["end_month"] in months and v["start_month"] > v["end_month"]:
        out.add(Code.OUT_OF_RANGE, "Tasks", rec.cells["end_month"],
                Message("end_before_start", end=v["end_month"], start=v["start_month"]))


WILDCARDS = "*?~"


def _check_key(value: str, column: str, sheet: str, cell: str, out: Collector) -> None:
    """Keys are looked up with MATCH, where * ? ~ are wildcards: they may not be part of a name."""
    bad = [ch for ch in WILDCARDS if ch in value]
    if bad:
        out.add(Code.UNKNOWN_VALUE, sheet, cell, Message("wildcards", column=column, value=value, chars=" ".join(bad)))


def _had_problem(out: Collector, cell: str, sheet: str = "Tasks") -> bool:
    return any(p.sheet == sheet and p.cell == cell for p in out.problems)


def _column(name: str) -> Column:
    return next(c for c in TASK_COLUMNS if c.name == name)


def id_key(text: str) -> str:
    """An id as compared for sameness: zero-width and other format characters dropped, compatibility forms
    folded (NFKC), case folded (STRASSE and straße are one id; a zero-width space does not make another)."""
    visible = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    return unicodedata.normalize("NFKC", visible).casefold()


def _read_tasks(ws, settings: Settings, gpus: list[Gpu], models: ModelCatalog,
                out: Collector) -> tuple[list[Task], list[str]]:
    by_name = {g.name.lower(): g for g in gpus}
    tasks: list[Task] = []
    seen: dict[str, str] = {}
    headers: dict[str, None] = {}
    for rec in read_table(ws, "Tasks", TASK_COLUMNS, out):
        headers.update(dict.fromkeys(rec.extra))
        values = _task_values(rec, settings, by_name, models, out)
        task_id = rec.values.get("task_id")
        if task_id is not None:
            _check_key(task_id, "task_id", "Tasks", rec.cells["task_id"], out)
            key = id_key(task_id)
            if key in seen:
                out.add(Code.DUPLICATE_TASK, "Tasks", rec.cells["task_id"],
                        Message("duplicate_task_id", task_id=task_id, first=seen[key]))
            seen.setdefault(key, rec.cells["task_id"])
        if values is not None:
            defaulted = frozenset({"tier"}) if values.pop(_TIER_DEFAULTED, False) else frozenset()
            tasks.append(Task(values, rec.row, rec.cells, rec.extra, defaulted))
    if not tasks and not out.problems:
        out.add(Code.REQUIRED, "Tasks", "A2", Message("no_tasks"))
    return tasks, list(headers)


# ---------------------------------------------------------------- Extras

def _read_extras(ws, settings: Settings, out: Collector) -> list[Extra]:
    extras: list[Extra] = []
    if ws is None:
        return extras
    for rec in read_table(ws, "Extras", EXTRA_COLUMNS, out):
        v: dict[str, Value] = {c.name: rec.values.get(c.name, c.default) for c in EXTRA_COLUMNS}
        _check_months(v, rec, settings, out)
        if v["item"] is None or v["monthly_cost"] is None:
            continue
        extras.append(Extra(v["item"], v["category"], v["monthly_cost"], v["start_month"], v["end_month"]))
    return extras


# ---------------------------------------------------------------- Scenarios

def _read_scenarios(ws, settings: Settings, tasks: list[Task], out: Collector) -> tuple[ScenarioRow, ...]:
    """The Scenarios rows: a blank base is 1 (the buffer's: the setting), a blank low or high the base."""
    if ws is None:
        return ()
    ids = {id_key(t.task_id): t.task_id for t in tasks}
    rows: list[ScenarioRow] = []
    seen: dict[tuple[str, str], str] = {}
    for rec in read_table(ws, "Scenarios", SCENARIO_COLUMNS, out):
        v = rec.values
        driver, task = v.get("driver"), v.get("task_id") or ""
        if driver is None:
            continue
        if task and id_key(task) not in ids:
            out.add(Code.UNKNOWN_VALUE, "Scenarios", rec.cells["task_id"], Message("scenario_unknown_task", task=task))
            continue
        if task and DRIVER[driver].effect == BUFFER:
            out.add(Code.UNKNOWN_VALUE, "Scenarios", rec.cells["task_id"], Message("scenario_buffer_per_task"))
            continue
        task = ids.get(id_key(task), "")
        key = (driver, task)
        if key in seen:
            out.add(Code.DUPLICATE_SETTING, "Scenarios", rec.cells["driver"], Message(
                "scenario_duplicate", driver=driver, task=task or Message("scenario_all_tasks"), first=seen[key]))
            continue
        seen[key] = rec.cells["driver"]
        if any(_had_problem(out, rec.cells[level], "Scenarios") for level in SCENARIO_LEVELS if level in rec.cells):
            continue  # a value that could not be read: its cell says why, and no other value is compared with it
        base: float = v.get("base", settings.hidden_cost_buffer if DRIVER[driver].effect == BUFFER else 1.0)
        if not _scenario_values_ordered(rec, base, DRIVER[driver].effect == BUFFER, out):
            continue
        rows.append(ScenarioRow(driver, task, v.get("low", base), base, v.get("high", base), rec.row,
                                v.get("source") or ""))
    return tuple(rows)


def _scenario_values_ordered(rec: Record, base: float, buffer: bool, out: Collector) -> bool:
    """Whether a Scenarios row's values can be read as given: a buffer rate at most 100% (25 typed for 25% would be a
    2,500% buffer), and low <= base <= high with a blank base at `base` (a low above the high swaps the scenarios'
    meaning; low 2 beside a blank base 1 is a "low" dearer than the base); else problems, at the typed cell."""
    v, ok = rec.values, True
    if buffer:
        for level in SCENARIO_LEVELS:
            if v.get(level) is not None and v[level] > 1:
                out.add(Code.OUT_OF_RANGE, "Scenarios", rec.cells[level], Message(
                    "scenario_buffer_rate", level=level, value=v[level]))
                ok = False
    if not ok:
        return False
    values = {"base": v.get("base", base)}
    values.update(low=v.get("low", values["base"]), high=v.get("high", values["base"]))
    for lower, upper in itertools.pairwise(SCENARIO_LEVELS):
        if values[lower] > values[upper]:
            typed = upper if upper in v else lower
            out.add(Code.OUT_OF_RANGE, "Scenarios", rec.cells[typed], Message(
                "scenario_order", lower=lower, a=values[lower], upper=upper, b=values[upper]))
            ok = False
    return ok


def _check_demand_factors(tasks: list[Task], ramps: dict[str, dict[int, float]], settings: Settings,
                          out: Collector) -> None:
    """A task's demand in any plan month at most MAX_DEMAND_FACTOR times its typed demand: growth compounded over a
    long plan (or a rate typed as 5 for 5%) would otherwise plan a budget of 1e124 without a word."""
    months = settings.plan_months
    for task in tasks:
        if task.values["start_month"] not in months or task.values["end_month"] not in months:
            continue  # a month outside the plan: already a problem at its cell
        start, end = months.index(task.values["start_month"]), months.index(task.values["end_month"])
        if start > end:
            continue  # end before start: already a problem at its cell
        ramp = ramps.get(task.task_id, {})
        if all(ramp.get(m + 1) == 0 for m in range(start, end + 1)):  # paused in every month: no hour to divide
            out.add(Code.OUT_OF_RANGE, "Ramp", out.ramp_cells[task.task_id], Message(  # by (a ZeroDivisionError)
                "ramp_all_paused", task=task.task_id, first=months[start], last=months[end]))
            continue
        growth = task.values.get("growth_per_month") or 0.0
        if growth <= 0 or "growth_per_month" not in task.cells:
            continue
        grown = [m for m in range(start, end + 1) if m + 1 not in ramp]
        if not grown:
            continue
        last = grown[-1]
        try:
            factor = (1 + growth) ** (last - start)
        except OverflowError:
            factor = math.inf
        if factor > MAX_DEMAND_FACTOR:
            out.add(Code.OUT_OF_RANGE, "Tasks", task.cells["growth_per_month"], Message(
                "growth_too_large", growth=growth, start=months[start], month=months[last], factor=factor,
                bound=MAX_DEMAND_FACTOR))


def _read_ramps(ws, settings: Settings, tasks: list[Task], out: Collector) -> dict[str, dict[int, float]]:
    """The Ramp sheet: per task the multiplier of each plan month it gives (a month column left blank: none)."""
    if ws is None:
        return {}
    rows = iter_rows(ws, max_rows=MAX_TABLE_ROWS, header=True)
    first = next(rows, None)
    if first is None:
        return {}
    key, value_column = RAMP_COLUMNS
    ids = {id_key(t.task_id): t.task_id for t in tasks}
    id_col: int | None = None
    months: dict[int, int] = {}  # column -> plan month index
    month_cells: dict[str, str] = {}
    for i, text in enumerate(first[1]):
        if is_blank(text):
            continue
        cell = f"{xl_col_to_name(i)}1"
        if normalise_header(canonical_name(text)) == normalise_header(key.name):
            id_col = i
            continue
        try:
            month = parse_month(text)
        except BadValue:
            out.add(Code.BAD_MONTH, "Ramp", cell, Message("ramp_header", text=str(text)))
            continue
        if month not in settings.plan_months:
            out.add(Code.MONTH_OUTSIDE_PLAN, "Ramp", cell, Message(
                "month_outside_plan", column="Ramp", month=month, first=settings.plan_months[0],
                last=settings.plan_months[-1]))
            continue
        if month in month_cells:  # 2026-07 and 2026-7: one month's two columns, one of them silently the other's
            out.add(Code.DUPLICATE_COLUMN, "Ramp", cell, Message("ramp_month_twice", text=str(text), month=month,
                                                                 first=month_cells[month]))
            continue
        month_cells[month] = cell
        months[i] = settings.plan_months.index(month) + 1
    if id_col is None:
        out.add(Code.MISSING_COLUMN, "Ramp", "A1", Message("missing_column", column=key.name, help=key.help))
        return {}
    ramps: dict[str, dict[int, float]] = {}
    for row_no, values in rows:
        raw = values[id_col] if id_col < len(values) else None
        if is_blank(raw):
            continue
        cell = f"{xl_col_to_name(id_col)}{row_no}"
        task = ids.get(id_key(str(raw).strip()))
        if task is None:
            out.add(Code.UNKNOWN_VALUE, "Ramp", cell, Message("scenario_unknown_task", task=str(raw)))
            continue
        if task in ramps:
            out.add(Code.DUPLICATE_TASK, "Ramp", cell, Message("duplicate_task_id", task_id=task, first="Ramp"))
            continue
        ramp: dict[int, float] = {}
        ramps[task] = ramp
        out.ramp_cells[task] = cell
        for i, index in months.items():
            value = values[i] if i < len(values) else None
            if is_blank(value):
                continue
            try:
                ramp[index] = parse_cell(value, value_column)
            except BadValue as exc:
                out.add(exc.code, "Ramp", f"{xl_col_to_name(i)}{row_no}",
                        Message("cell_value", column=str(first[1][i]), problem=exc.message))
    return ramps


def _read_budgets(ws, tasks: list[Task], out: Collector) -> tuple[Budget, ...]:
    """The Budgets rows: one per cost center of the Tasks sheet, one (blank cost center) for the whole plan."""
    if ws is None:
        return ()
    centers = {str(t.values["cost_center"]) for t in tasks}
    budgets: list[Budget] = []
    seen: dict[str, str] = {}
    for rec in read_table(ws, "Budgets", BUDGET_COLUMNS, out):
        center, amount = rec.values.get("cost_center") or "", rec.values.get("monthly_budget")
        cell = rec.cells.get("cost_center") or rec.cells.get("monthly_budget") or f"A{rec.row}"
        if center and center not in centers:
            out.add(Code.UNKNOWN_VALUE, "Budgets", cell, Message("budget_unknown_center", center=center,
                                                                 centers=", ".join(sorted(centers))))
            continue
        if center in seen:
            out.add(Code.DUPLICATE_SETTING, "Budgets", cell, Message(
                "budget_duplicate", center=center or Message("budget_whole_plan"), first=seen[center]))
            continue
        seen[center] = cell
        if amount is None:
            if "monthly_budget" not in rec.cells or not _had_problem(out, rec.cells["monthly_budget"], "Budgets"):
                out.add(Code.REQUIRED, "Budgets", rec.cells.get("monthly_budget", f"A{rec.row}"),
                        Message("required", column="monthly_budget", help=BUDGET_COLUMNS[1].help))
            continue
        budgets.append(Budget(center, amount, rec.row, rec.values.get("source") or ""))
    return tuple(budgets)


# ---------------------------------------------------------------- Bills, Usage, Assignments

ASSIGNMENT_COLUMNS = (Column("resource_id", "text", required=True, help="billed resource id"),
                      Column("task_id", "text", required=True, help="the task it serves"))


def _table_sheet(ws) -> pd.DataFrame | None:
    """A Bills or Usage sheet as recon reads a bill file (its header on row 1), or None for an empty one."""
    from ..recon.table import sheet_frame  # pandas, loaded only for an inventory with bills or usage

    rows = list(iter_rows(ws))
    return sheet_frame(rows) if rows and rows[0][0] == 1 else None


def _read_assignments(ws, out: Collector) -> tuple[tuple[str, str], ...]:
    if ws is None:
        return ()
    pairs: dict[str, tuple[str, str]] = {}  # resource -> (task, its cell)
    for rec in read_table(ws, "Assignments", ASSIGNMENT_COLUMNS, out):
        if "resource_id" not in rec.values or "task_id" not in rec.values:
            continue
        resource = rec.values["resource_id"]
        if resource in pairs:  # a resource serves one task: a second row would silently win
            out.add(Code.DUPLICATE_TASK, "Assignments", rec.cells["resource_id"], Message(
                "duplicate_assignment", resource=resource, first=pairs[resource][1]))
            continue
        pairs[resource] = (rec.values["task_id"], rec.cells["resource_id"])
    return tuple((resource, task) for resource, (task, _) in pairs.items())


# ---------------------------------------------------------------- the workbook

def read_inputs(path: Path, today: dt.date | None = None) -> Inputs:
    """Read and validate an input workbook; raises InputError listing every problem."""
    source = read_input_file(Path(path))  # read once: the hash on About is of the bytes the numbers come from
    wb = load_input_workbook(source)
    try:
        out = Collector()
        sheets = _input_sheets(wb, out)
        if "tasks" not in sheets:
            out.add(Code.MISSING_SHEET, "Tasks", "", Message("missing_tasks_sheet"))
        if out.problems:
            raise InputError(out.problems)
        inputs = {ws.title for ws in wb.worksheets if canonical_sheet(ws.title) in SHEETS_ZH}
        for title, cells in unsaved_formulas(source.data, source.name, inputs).items():
            for cell in cells:
                out.add(Code.FORMULA_WITHOUT_VALUE, canonical_sheet(title), cell, Message("formula_without_value"))
        settings = _read_settings(sheets.get("settings"), out, today)
        gpus, warnings, fx = _read_gpus(sheets.get("gpus"), sheets.get("fx"), settings, out)
        models = _read_models(sheets.get("models"), out)
        tasks, extra_headers = _read_tasks(sheets["tasks"], settings, gpus, models, out)
        extras = _read_extras(sheets.get("extras"), settings, out)
        scenarios = _read_scenarios(sheets.get("scenarios"), settings, tasks, out)
        budgets = _read_budgets(sheets.get("budgets"), tasks, out)
        ramps = _read_ramps(sheets.get("ramp"), settings, tasks, out)
        _check_demand_factors(tasks, ramps, settings, out)
        bills_sheet = _table_sheet(sheets["bills"]) if "bills" in sheets else None
        usage_sheet = _table_sheet(sheets["usage"]) if "usage" in sheets else None
        assignments = _read_assignments(sheets.get("assignments"), out)
    finally:
        wb.close()
    if out.problems:
        raise InputError(out.problems)
    warnings += example_rows_left(tasks)
    return Inputs(settings, tuple(gpus), tuple(tasks), tuple(extras), tuple(warnings), tuple(extra_headers),
                  bills_sheet, usage_sheet, assignments, source.name, source.sha256, models, fx, scenarios,
                  budgets, ramps)


def _input_sheets(wb, out: Collector) -> dict:
    """Worksheets by their canonical lower-case name; two titles for one input sheet (Tasks and 任务) a problem."""
    sheets: dict = {}
    for ws in wb.worksheets:
        name = canonical_sheet(ws.title)
        first = sheets.setdefault(name.lower(), ws)
        if first is not ws and name in SHEETS_ZH:
            out.add(Code.DUPLICATE_SHEET, name, "", Message("duplicate_sheet", first=first.title, second=ws.title,
                                                            sheet=name))
    # A sheet named nearly like an absent input sheet (Extra, Setting) would be silently ignored: name it.
    absent = [n.lower() for n in SHEETS_ZH if n.lower() not in sheets]
    for ws in wb.worksheets:
        name = canonical_sheet(ws.title).strip().lower()
        guess = difflib.get_close_matches(name, absent, n=1, cutoff=0.8) if name not in SHEET_KEYS else []
        if guess:
            sheet = next(n for n in SHEETS_ZH if n.lower() == guess[0])
            out.add(Code.MISSING_SHEET, ws.title, "", Message("near_sheet_name", title=ws.title, sheet=sheet))
    return sheets


SHEET_KEYS = frozenset(n.lower() for n in SHEETS_ZH)
