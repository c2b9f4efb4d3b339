"""The built-in GPU catalog: specs from package data `budgetgen/data/gpus.csv`, prices from the offers of
`budgetgen/data/prices.csv` (prices.py, one chosen per GPU), and the consistency check every catalog (built-in
or a GPUs sheet) gets at load."""

from __future__ import annotations

import calendar
import csv
import datetime as dt
from collections.abc import Mapping
from dataclasses import replace
from importlib import resources

from ..core.i18n import Message
from ..core.inputs import Gpu, Settings
from ..core.schema import GPU_COLUMNS, REFERENCE_TIER, TASK_TIERS, TIERS, Value
from ..core.values import add_months
from . import prices
from .fx import FxTable, reference_rate
from .prices import OFFER_FIELDS

CATALOG_RESOURCE = resources.files("budgetgen") / "data" / "gpus.csv"
CATALOG_CURRENCY = "CNY"  # the currency `catalog_fx` sets the rate of, and money defaults are declared in
SPEC_COLUMNS = ("vram_gb", "bandwidth_gbs", "tflops")  # a GPU needs all three to be sized
TIER_OFFER_COLUMNS = tuple(f"{t.name}_offer" for t in TASK_TIERS)  # whose offer each task tier's price is


def _number(text: str) -> float | None:
    return float(text) if text.strip() else None


def gpu_from_record(rec: dict[str, Value]) -> Gpu:
    """A Gpu from a record keyed by the GPUs sheet's column names (numbers already parsed)."""
    return Gpu(
        name=str(rec["gpu"]),
        gpu_class=str(rec.get("class") or "datacenter"),
        vram_gb=float(rec["vram_gb"]),
        bandwidth_gbs=float(rec["bandwidth_gbs"]),
        tflops=float(rec["tflops"]),
        tflops_fp8=rec.get("tflops_fp8"),
        tflops_fp4=rec.get("tflops_fp4"),
        form_factor=str(rec.get("form_factor") or ""),
        bandwidth_efficiency=rec.get("bandwidth_efficiency"),
        matmul_efficiency=rec.get("matmul_efficiency"),
        training_efficiency=rec.get("training_efficiency"),
        price_change_per_year=rec.get("price_change_per_year"),
        interconnect=str(rec.get("interconnect") or "pcie"),
        scaling=float(rec["scaling"] if rec.get("scaling") is not None else 0.5),
        prices={t.name: rec.get(t.price_column) for t in TIERS},
        listed_prices={t.name: rec.get(t.price_column) for t in TIERS},
        purchase_price=rec.get("purchase_price"),
        listed_purchase=rec.get("purchase_price"),
        power_w=rec.get("power_w"),
        source=str(rec.get("source") or ""),
        as_of=str(rec.get("as_of") or ""),
        provider=str(rec.get("provider") or ""),
        region=str(rec.get("region") or ""),
        currency=str(rec.get("currency") or ""),
        offers={t.name: str(rec.get(f"{t.name}_offer") or "") for t in TASK_TIERS},
    )


def gpu_record(g: Gpu) -> dict[str, Value]:
    """A Gpu by the GPUs sheet's column names, in their order (blank texts None), its prices as listed (in its
    `currency`): gpu_from_record's inverse, and the one mapping of fields to columns (GPUs sheet, diff)."""
    fields = {"gpu": g.name, "class": g.gpu_class, "vram_gb": g.vram_gb, "bandwidth_gbs": g.bandwidth_gbs,
              "tflops": g.tflops, "tflops_fp8": g.tflops_fp8, "tflops_fp4": g.tflops_fp4,
              "form_factor": g.form_factor or None, "bandwidth_efficiency": g.bandwidth_efficiency,
              "matmul_efficiency": g.matmul_efficiency, "training_efficiency": g.training_efficiency,
              "interconnect": g.interconnect, "scaling": g.scaling,
              **{t.price_column: g.listed_prices.get(t.name) for t in TIERS},
              "purchase_price": g.listed_purchase, "power_w": g.power_w,
              "price_change_per_year": g.price_change_per_year, "provider": g.provider or None,
              "region": g.region or None, **{f"{t.name}_offer": g.offers.get(t.name) or None for t in TASK_TIERS},
              "currency": g.currency or None, "source": g.source, "as_of": g.as_of}
    return {c.name: fields[c.name] for c in GPU_COLUMNS}


def spec_records() -> list[dict[str, Value]]:
    """The rows of gpus.csv with numbers parsed: specs, and the source and date of the specs.

    A row whose memory, bandwidth or BF16 peak is blank (sources conflict) stays in the file but is not
    offered: a GPUs sheet row of that name with all three figures brings it in."""
    text_columns = {"gpu", "class", "interconnect", "form_factor", "source", "as_of"}
    with CATALOG_RESOURCE.open("r", newline="", encoding="utf-8") as fh:  # type: ignore[call-overload]  # typeshed: no newline
        records = [{k: (v if k in text_columns else _number(v)) for k, v in row.items()} for row in csv.DictReader(fh)]
    return [rec for rec in records if all(rec[c] is not None for c in SPEC_COLUMNS)]


MARKET_CURRENCY = "USD"  # the market a plan whose currency the catalog has no offers in buys in (offer_currency auto)


def market_currency(offers, currency: str) -> str:
    """The currency whose offers a plan in `currency` takes under offer_currency `auto`: its own where the catalog
    has offers in it, else MARKET_CURRENCY's (converted at the plan's FX rate)."""
    return currency if any(o.currency.upper() == currency.upper() for o in offers) else MARKET_CURRENCY


def builtin_records(currency: str | None = None, provider: str | None = None, region: str | None = None,
                    first: str | None = None, offer_currency: str = "auto") -> list[dict[str, Value]]:
    """The built-in catalog as records: each GPU's specs and its offers merged by `prices.best_offer_record` (per
    tier the cheapest eligible offer and whose it is). Eligible (`prices.eligible_offers`): offers from the named
    providers and regions (comma-separated; blank: any), in `first` (a currency asked for before the plan's: CNY
    when `catalog_fx` is set) where the GPU has such offers, else in `currency` (with `offer_currency` "auto", the
    market_currency of it); with "any" and no offer in either, the offers in any currency (the first currency, by
    file order, whose offers are eligible).
    The prices stay in their own currency (the reader converts them with the plan's FX table); a GPU without an
    eligible offer has none (its prices blank)."""
    offers = prices.builtin_offers()
    if offer_currency == "auto" and currency is not None:
        currency = market_currency(offers, currency)
    out = []
    for rec in spec_records():
        gpu, gpu_class = str(rec["gpu"]), str(rec["class"] or "datacenter")

        def eligible(currencies, gpu=gpu, gpu_class=gpu_class):
            return prices.eligible_offers(offers, gpu, gpu_class, currencies, provider, region)
        chosen = (eligible([first]) if first else []) or (eligible([currency]) if currency else [])
        if not chosen and (offer_currency == "any" or currency is None):
            found = eligible(None)
            chosen = [o for o in found if o.currency == found[0].currency] if found else []
        rec = {**rec, **dict.fromkeys(OFFER_FIELDS[:-2]), **dict.fromkeys(TIER_OFFER_COLUMNS)}
        merged = prices.best_offer_record(chosen)
        if merged is not None:
            rec.update(merged)
        out.append(rec)
    return out


def builtin_catalog(currency: str | None = None, provider: str | None = None, region: str | None = None) -> list[Gpu]:
    """The built-in catalog as Gpu values, each priced by its eligible offers in their currency (`Gpu.currency`),
    not converted."""
    return [gpu_from_record(rec) for rec in builtin_records(currency, provider, region, offer_currency="any")]


QUOTE_TOLERANCE = 0.02  # a typed price this close to the catalog's (converted) is the catalog's, with its date


def is_catalog_price(typed: Mapping[str, float | None], currency: str, builtin: Mapping[str, Value],
                     on: dt.date) -> bool:
    """Whether a GPUs sheet row's prices (by column) are the built-in ones, as `init` writes them: the same
    prices offered, each within QUOTE_TOLERANCE of the catalog's converted at the reference rate."""
    listed_in = builtin.get("currency")
    rate = reference_rate(str(listed_in), currency, on) if listed_in else None
    if rate is None:
        return False
    for column, price in typed.items():
        listed = builtin.get(column)
        if (price is None) != (listed is None):
            return False
        if price is not None and listed is not None and abs(price - listed * rate.rate) > QUOTE_TOLERANCE * abs(listed * rate.rate):
            return False
    return True


def in_plan_currency(gpu: Gpu, fx: FxTable) -> Gpu:
    """The GPU with its listed prices converted into the plan currency (unknown prices stay unknown)."""
    rate = fx.rate(gpu.currency).rate
    return replace(gpu, prices={t: fx.convert(p, gpu.currency) for t, p in gpu.listed_prices.items()},
                   purchase_price=fx.convert(gpu.listed_purchase, gpu.currency), fx=rate)


def catalog_classes() -> dict[str, str]:
    """Catalog GPU name -> its class, in catalog order (every row of gpus.csv, sized or not)."""
    with CATALOG_RESOURCE.open("r", newline="", encoding="utf-8") as fh:  # type: ignore[call-overload]  # typeshed: no newline
        return {row["gpu"]: row["class"] or "datacenter" for row in csv.DictReader(fh)}


# ---------------------------------------------------------------- the consistency check

PRICES_FRESH_MONTHS = 6  # prices dated more than this many months before the build date are flagged


def _months_later(day: dt.date, months: int) -> dt.date:
    """The same day `months` later (the month's last day where it is shorter)."""
    year, month = map(int, add_months(f"{day.year:04d}-{day.month:02d}", months).split("-"))
    return dt.date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


def _place(cells: Mapping[str, str], *columns: str) -> Message:
    """Where a flagged figure comes from: the GPUs sheet cell of the first of `columns` typed there, else the
    built-in catalog."""
    typed = [cells[c] for c in columns if c in cells]
    return Message("catalog_cell", cell=f"GPUs!{typed[0]}") if typed else Message("catalog_builtin")


def _same_offer(g: Gpu, tier: str, other: str) -> bool:
    """Whether two tiers' prices are one offer's (a GPUs row, or the built-in tiers of one provider and region): a
    spot price above another provider's on-demand one contradicts nothing, it is only the dearer offer."""
    mine, theirs = g.offers.get(tier) or "", g.offers.get(other) or ""
    return not (mine and theirs) or mine == theirs


def catalog_warnings(gpus: list[Gpu], settings: Settings, cells: Mapping[str, Mapping[str, str]] | None = None,
                     quoted: frozenset[str] = frozenset()) -> list[Message]:
    """Prices that contradict each other or are old, at most one warning per GPU and rule, in catalog order.

    A monthly rent above hours_per_month x the on-demand price (on demand would then be the cheaper way to run
    a card around the clock), an idle or spot price above on-demand, and prices whose `as_of` is more than
    PRICES_FRESH_MONTHS before the build date, or before the plan's last month when that is later, are warnings, not
    errors: the user may know better. Prices whose source states no date (`as_of` "retrieved YYYY-MM-DD") are
    warned of as undated, never as being of the day they were read; if even that day is too old, the warning says
    they are older than the limit. `cells` maps a
    GPU's lower-case name to the GPUs sheet cell of each column typed there, so that a warning names the cell.
    `quoted` names the GPUs whose prices the user typed (not the catalog's): their age is the user's to judge."""
    build = dt.date.fromisoformat(settings.build_date) if settings.build_date else None
    last_month = max(settings.plan_months, default=None)
    if last_month and (build is None or dt.date.fromisoformat(f"{last_month}-01") > build):
        # the prices are paid until the plan's last month: their age counts up to it
        build, when = dt.date.fromisoformat(f"{last_month}-01"), Message("catalog_age_plan_month", month=last_month)
    else:
        when = Message("catalog_age_build_date", build_date=settings.build_date)
    out = []
    for g in gpus:
        where = (cells or {}).get(g.name.lower(), {})
        on_demand, reference = g.prices.get(REFERENCE_TIER.name), REFERENCE_TIER.price_column
        for tier in TIERS:
            price = g.prices.get(tier.name)
            if on_demand is None or price is None:
                continue
            if tier.per_card_month and price > settings.hours_per_month * on_demand:
                out.append(Message("catalog_monthly_over_on_demand", gpu=g.name, monthly=price,
                                   hours=settings.hours_per_month, on_demand=on_demand,
                                   around_the_clock=settings.hours_per_month * on_demand,
                                   place=_place(where, tier.price_column, reference)))
            elif tier.over_reference_message and price > on_demand and _same_offer(g, tier.name, REFERENCE_TIER.name):
                out.append(Message(tier.over_reference_message, gpu=g.name, price=price, on_demand=on_demand,
                                   place=_place(where, tier.price_column, reference)))
        dated = prices.read_as_of(g.as_of)
        priced = g.purchase_price is not None or any(p is not None for p in g.prices.values())
        if not (priced and dated and build and g.name not in quoted):
            continue
        old = _months_later(dated.day, PRICES_FRESH_MONTHS) < build
        if dated.stated and old:
            out.append(Message("catalog_prices_old", gpu=g.name, as_of=g.as_of, months=PRICES_FRESH_MONTHS,
                               when=when, place=_place(where, "as_of")))
        elif not dated.stated:  # the source states no date: the day it was read bounds the age from below only
            out.append(Message("catalog_prices_undated_old" if old else "catalog_prices_undated", gpu=g.name,
                               read=dated.day.isoformat(), months=PRICES_FRESH_MONTHS, when=when,
                               place=_place(where, "as_of")))
    return out
