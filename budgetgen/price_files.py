"""Price files read into offers: a price snapshot (the columns of gpu_prices.csv, with its row_flags.csv beside it)
or a quote sheet (gpu, provider, region, tier, price, currency, as_of), as CSV or xlsx.

Every problem is collected and reported at once with its file, row and column (`prices.csv!F7 price: ...`), as the
input reader reports a sheet's, through the same column declarations and parser (`reader.read_rows`).
"""

from __future__ import annotations

import csv
import datetime as dt
import difflib
import io
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .errors import Code, InputError, Problem
from .i18n import Message
from .prices import (
    ANY_REGION,
    ListedPrice,
    Offer,
    catalog_name,
    derive_offers,
    gpu_aliases,
    is_suspect,
    name_key,
)
from .reader import Collector, Record, read_rows
from .records import TIERS
from .safefile import MAX_FILE, iter_rows, load_input_workbook, read_input_file, unsaved_formulas
from .schema import Column, normalise_header

C = Column
# A listed price of 0 is a missing price, not a free GPU (a median with it, or a quote of it, plans a zero budget).
_PRICE = ("number", "USD per GPU-hour")  # a price column's type and unit (positive)
SNAPSHOT_COLUMNS: tuple[Column, ...] = (
    C("provider", "text", required=True, help="the provider, e.g. lambda"),
    C("region", "text", help="the provider's region; all-listed-regions or default: every region"),
    C("instance_type", "text", help="the provider's instance type"),
    C("gpu", "text", required=True, help="the GPU label, e.g. H100 or A100-80GB"),
    C("gpu_count", "count", "GPUs", positive=True, help="GPUs in the instance"),
    C("on_demand_usd_per_gpu_hour", *_PRICE, positive=True, required=True, help="on-demand price per GPU-hour"),
    C("spot_usd_per_gpu_hour", *_PRICE, positive=True, help="spot price per GPU-hour; blank: no spot"),
    C("source", "text", help="repository@commit:path the row was copied from"),
    C("as_of", "text", help="retrieved:YYYY-MM-DD;..."),
)
FLAG_COLUMNS: tuple[Column, ...] = (
    C("provider", "text", required=True), C("region", "text"), C("instance_type", "text"),
    C("gpu", "text", required=True), C("flag", "text", required=True, help="the note on the row"),
)
QUOTE_COLUMNS: tuple[Column, ...] = (
    C("gpu", "text", required=True, help="a catalog GPU name or a snapshot label", example="H100 80G"),
    C("provider", "text", required=True, help="who quotes the price", example="lambda"),
    C("region", "text", default=ANY_REGION, help="the provider's region; blank: any"),
    C("tier", "choice", required=True, choices=tuple(t.name for t in TIERS), help="the price tier"),
    C("price", "number", "currency per the tier's unit (card-hour, or card-month for monthly)", required=True,
      positive=True, help="the quoted price (blank the row for a tier not offered)"),
    C("currency", "text", required=True, help="ISO code of the price's currency, e.g. USD"),
    C("as_of", "date", "YYYY-MM-DD", required=True, help="the date of the quote"),
    C("source", "text", help="where the quote came from (blank: the file and row)"),
)
FLAGS_FILE = "row_flags.csv"  # a snapshot's notes on its rows, read from the snapshot's folder when there


@dataclass(frozen=True)
class PriceFile:
    """What a price file gave: its kind, the offers, the labels that name no catalog GPU, the flags file used."""

    kind: str  # "snapshot" | "quotes"
    offers: tuple[Offer, ...]
    skipped: tuple[str, ...] = ()
    flags: str = ""


def read_price_file(path: Path, classes: Mapping[str, str], today: dt.date | None = None) -> PriceFile:
    """The offers of a snapshot or a quote sheet (told apart by their headers), for the catalog GPUs in `classes`
    (name -> GPU class, in catalog order); InputError with every problem at its file, row and column."""
    path = Path(path)
    rows = table_rows(path)
    header = {normalise_header(h) for h in (rows[0][1] if rows else ())}
    out = Collector()
    if normalise_header("on_demand_usd_per_gpu_hour") in header:
        listed = _listed(read_rows(iter(rows), path.name, SNAPSHOT_COLUMNS, out))
        flags = path.with_name(FLAGS_FILE)
        suspect = _suspect(read_rows(iter(table_rows(flags)), flags.name, FLAG_COLUMNS, out)) if flags.is_file() else set()
        _fail_on(out)
        skipped = sorted({r.label for r in listed if catalog_name(r.label, classes) is None})
        return PriceFile("snapshot", tuple(derive_offers(listed, classes, suspect)), tuple(skipped),
                         str(flags) if flags.is_file() else "")
    if {normalise_header("tier"), normalise_header("price")} <= header:
        offers = _quotes(read_rows(iter(rows), path.name, QUOTE_COLUMNS, out), path.name, classes, out,
                         today or dt.date.today())
        _fail_on(out)
        return PriceFile("quotes", tuple(offers))
    raise InputError([Problem(Code.MISSING_COLUMN, path.name, "A1", Message(
        "price_file_format", snapshot=tuple(c.name for c in SNAPSHOT_COLUMNS if c.required),
        quotes=tuple(c.name for c in QUOTE_COLUMNS if c.required)))])


def _fail_on(out: Collector) -> None:
    if out.problems:
        raise InputError(out.problems)


def table_rows(path: Path) -> list[tuple[int, tuple]]:
    """A CSV file's or an xlsx workbook's first sheet's rows as (row number, values), the header first."""
    if path.suffix.lower() in (".xlsx", ".xlsm"):
        source = read_input_file(path)
        wb = load_input_workbook(source)
        try:
            title = wb.worksheets[0].title
            unsaved = unsaved_formulas(source.data, path.name, {title}).get(title, [])
            if unsaved:  # read as blank, =1+1.5 was "price: required"; ="A100 80G" a blank GPU
                raise InputError([Problem(Code.FORMULA_WITHOUT_VALUE, path.name, cell, Message("formula_without_value"))
                                  for cell in unsaved])
            return list(iter_rows(wb.worksheets[0]))
        finally:
            wb.close()
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_FILE + 1)
    except OSError as exc:
        raise InputError([Problem(Code.NOT_A_FILE, path.name, "", f"cannot be read ({exc.strerror})")]) from None
    if len(data) > MAX_FILE:
        raise InputError([Problem(Code.TOO_LARGE, path.name, "", f"is larger than {MAX_FILE:,} bytes")])
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError([Problem(Code.WRONG_FORMAT, path.name, "",
                                  "is neither UTF-8 CSV nor an xlsx workbook: save it as one of them")]) from None
    rows = []
    for n, values in enumerate(csv.reader(io.StringIO(text, newline="")), start=1):
        if any(v.strip() for v in values):
            rows.append((n, tuple(values)))
            if len(rows) > MAX_ROWS:  # as an xlsx sheet's (safefile.iter_rows): a million quotes is no quote sheet
                raise InputError([Problem(Code.TOO_LARGE, path.name, f"row {n}", Message(
                    "file_too_many_rows", rows=MAX_ROWS, row=n))])
    return rows


MAX_ROWS = 100_000
"""Filled rows (the header included) of a price file or a measured-runs file: a snapshot of every provider's
instance types is some thousands."""


def _listed(records: list[Record]) -> list[ListedPrice]:
    return [ListedPrice(provider=v["provider"], region=v.get("region", ""), instance_type=v.get("instance_type", ""),
                        label=v["gpu"], on_demand=v.get("on_demand_usd_per_gpu_hour"),
                        spot=v.get("spot_usd_per_gpu_hour"), source=v.get("source", ""), as_of=v.get("as_of", ""),
                        row=rec.row)
            for rec in records if (v := rec.values).get("provider") and v.get("gpu")]


def _suspect(records: list[Record]) -> set[tuple[str, str, str, str]]:
    """The row_flags keys of the rows a flag marks unusable (prices.SUSPECT_FLAG_WORDS)."""
    return {(v["provider"], v.get("region", ""), v.get("instance_type", ""), v["gpu"])
            for rec in records if (v := rec.values).get("flag") and is_suspect(v["flag"]) and "gpu" in v}


def _quotes(records: list[Record], name: str, classes: Mapping[str, str], out: Collector,
            today: dt.date) -> list[Offer]:
    """One offer per GPU, provider and region, in one currency: its tiers' quoted prices, dated by its oldest
    quote. A quote dated after `today`, or a second currency for one offer, is a problem at its cell."""
    groups: dict[tuple[str, str, str, str], dict] = {}
    currencies: dict[tuple[str, str, str], tuple[str, str]] = {}  # an offer's currency and the cell that gave it
    for rec in records:
        v, cell = rec.values, rec.cells
        missing = [c for c in QUOTE_COLUMNS if c.required and c.name not in v and c.name in cell]
        for column in missing:
            if not any(p.cell == cell[column.name] for p in out.problems):
                out.add(Code.REQUIRED, name, cell[column.name], Message("required", column=column.name,
                                                                        help=column.help))
        gpu = catalog_name(str(v.get("gpu", "")), classes)
        if "gpu" in v and gpu is None:
            out.add(Code.UNKNOWN_VALUE, name, cell["gpu"], Message("quote_unknown_gpu", gpu=v["gpu"],
                                                                   hint=_hint(v["gpu"], classes)))
        currency = str(v.get("currency", "")).strip().upper()
        if "currency" in v and not (len(currency) == 3 and currency.isalpha() and currency.isascii()):
            out.add(Code.UNKNOWN_VALUE, name, cell["currency"], Message("currency_code", raw=str(v["currency"])))
        if missing or gpu is None or not currency.isalpha():
            continue
        if v["as_of"] > today.isoformat():
            out.add(Code.BAD_DATE, name, cell["as_of"], Message("quote_in_future", as_of=v["as_of"],
                                                                today=today.isoformat()))
            continue
        region = v.get("region") or ANY_REGION
        first = currencies.setdefault((gpu, name_key(v["provider"]), name_key(region)), (currency, cell["currency"]))
        if first[0] != currency:  # the import would keep one of the two and silently drop the other
            out.add(Code.CURRENCY, name, cell["currency"], Message(
                "quote_two_currencies", gpu=gpu, provider=v["provider"], region=region, currency=currency,
                first=first[0], cell=first[1]))
            continue
        key = (gpu, v["provider"].lower(), region.lower(), currency)
        group = groups.setdefault(key, {"gpu": gpu, "provider": v["provider"], "region": region, "currency": currency,
                                        "prices": {}, "cells": {}, "dates": [], "sources": []})
        tier = v["tier"]
        if tier in group["prices"]:
            out.add(Code.DUPLICATE_GPU, name, cell["tier"], Message("quote_duplicate", gpu=gpu, provider=v["provider"],
                                                                    region=region, tier=tier,
                                                                    first=group["cells"][tier]))
            continue
        group["prices"][tier], group["cells"][tier] = v["price"], cell["tier"]
        group["dates"].append(v["as_of"])
        group["sources"].append(v.get("source") or f"{name} row {rec.row}")
    return [Offer(g["gpu"], g["provider"], g["region"], g["currency"],
                  {t.name: g["prices"].get(t.name) for t in TIERS}, None,
                  "; ".join(dict.fromkeys(g["sources"])), min(g["dates"]))
            for g in groups.values()]


def _hint(text: str, classes: Mapping[str, str]) -> Message:
    names = [*classes, *gpu_aliases()]
    guess = difflib.get_close_matches(str(text), names, n=1, cutoff=0.5) or \
        difflib.get_close_matches(str(text).upper(), list(gpu_aliases()), n=1, cutoff=0.5)
    return Message("did_you_mean", guess=guess[0]) if guess else Message("see_catalog")

