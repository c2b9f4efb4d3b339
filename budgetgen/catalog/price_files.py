"""Price files read into offers: a price snapshot (the columns of gpu_prices.csv, with its row_flags.csv beside it),
a SkyPilot catalog file (`vms.csv` as skypilot-org/skypilot-catalog publishes it: InstanceType, AcceleratorName,
AcceleratorCount, vCPUs, MemoryGiB, Price, Region, SpotPrice, ...) or a quote sheet (gpu, provider, region, tier,
price, currency, as_of), as CSV or xlsx.

Every problem is collected and reported at once with its file, row and column (`prices.csv!F7 price: ...`), as the
input reader reports a sheet's, through the same column declarations and parser (`reader.read_rows`).
"""

from __future__ import annotations

import csv
import datetime as dt
import difflib
import io
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import Code, InputError, Problem
from ..core.i18n import Message
from ..core.records import TIERS
from ..core.schema import Column, normalise_header
from ..io.reader import Collector, Record, read_rows
from ..io.safefile import MAX_FILE, iter_rows, load_input_workbook, read_input_file, unsaved_formulas
from .prices import (
    ANY_REGION,
    UNTOLD_CARD,
    ListedPrice,
    Offer,
    alias_rules,
    derive_offers,
    is_stale,
    is_suspect,
    name_key,
    resolve_label,
    retrieved,
)

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
_HOURLY = ("number", "USD per instance-hour")  # a vms.csv price's type and unit (no negative)
VMS_COLUMNS: tuple[Column, ...] = (  # SkyPilot's catalogs/<version>/<cloud>/vms.csv, by its published header
    C("InstanceType", "text", help="the cloud's instance type; blank on GCP's accelerator rows (priced apart from "
                                   "their host)"),
    C("AcceleratorName", "text", help="the GPU label, e.g. H100 or A100-80GB; blank: a CPU instance"),
    C("AcceleratorCount", "number", "GPUs", positive=True, help="GPUs in the instance"),
    C("vCPUs", "number", minimum=0, help="the host's vCPUs"),
    C("MemoryGiB", "number", "GiB", minimum=0, help="the host's memory"),
    C("Price", *_HOURLY, minimum=0, help="on-demand price of the instance; blank: not offered on demand"),
    C("SpotPrice", *_HOURLY, minimum=0,
      help="spot price of the instance; blank, 0 or a placeholder of 1,000,000 or more: no spot"),
    C("Region", "text", required=True, help="the cloud's region"),
    C("AvailabilityZone", "text", help="the zone (AWS): a region's zones are one region's rows"),
)
SPOT_PLACEHOLDER = 1_000_000  # a SpotPrice this high is a placeholder (Prime Intellect writes 99999999), not a price


@dataclass(frozen=True)
class PriceFile:
    """What a price file gave: its kind, the offers, the labels that name no catalog GPU, the flags file used."""

    kind: str  # "snapshot" | "vms" | "quotes"
    offers: tuple[Offer, ...]
    skipped: tuple[str, ...] = ()
    flags: str = ""
    notes: tuple[str, ...] = ()  # what else the reader did: the provider it assumed, rows it could not use

    @property
    def description(self) -> str:
        return {"snapshot": "price snapshot", "vms": "SkyPilot catalog file (vms.csv)"}.get(self.kind, "quote sheet")


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
        flagged = read_rows(iter(table_rows(flags)), flags.name, FLAG_COLUMNS, out) if flags.is_file() else []
        _fail_on(out)
        return PriceFile("snapshot", tuple(derive_offers(listed, classes, _flagged(flagged, is_suspect),
                                                         _flagged(flagged, is_stale), file=path.name)),
                         _unknown_labels(listed, classes), str(flags) if flags.is_file() else "")
    if {normalise_header("AcceleratorName"), normalise_header("Price")} <= header:
        listed, notes = _vms(read_rows(iter(rows), path.name, VMS_COLUMNS, out), path)
        _fail_on(out)
        return PriceFile("vms", tuple(derive_offers(listed, classes, file=path.name)),
                         _unknown_labels(listed, classes), notes=notes)
    if {normalise_header("tier"), normalise_header("price")} <= header:
        offers = _quotes(read_rows(iter(rows), path.name, QUOTE_COLUMNS, out), path.name, classes, out,
                         today or dt.date.today())
        _fail_on(out)
        return PriceFile("quotes", tuple(offers))
    raise InputError([Problem(Code.MISSING_COLUMN, path.name, "A1", Message(
        "price_file_format", snapshot=tuple(c.name for c in SNAPSHOT_COLUMNS if c.required),
        vms=("InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "Region"),
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
                        row=rec.row, gpu_count=v.get("gpu_count"))
            for rec in records if (v := rec.values).get("provider") and v.get("gpu")]


def _flagged(records: list[Record], rule) -> set[tuple[str, str, str, str]]:
    """The row_flags keys of the rows whose flag `rule` picks (prices.is_suspect: unusable; prices.is_stale)."""
    return {(v["provider"], v.get("region", ""), v.get("instance_type", ""), v["gpu"])
            for rec in records if (v := rec.values).get("flag") and rule(v["flag"]) and "gpu" in v}


def _unknown_labels(listed: list[ListedPrice], classes: Mapping[str, str]) -> tuple[str, ...]:
    """The labels that can stand for no card of the catalog (`classes`): neither a catalog name nor a label with an
    alias rule naming one of its cards. A label whose card only some rows tell (H100) is not one of them."""
    lower = {name.lower() for name in classes}

    def unknown(label: str) -> bool:
        return label.strip().lower() not in lower and not any(
            rule.gpu in classes for rule in alias_rules().get(label.strip().upper(), ()))
    return tuple(sorted({r.label for r in listed if unknown(r.label)}))


def _vms(records: list[Record], path: Path) -> tuple[list[ListedPrice], tuple[str, ...]]:
    """A SkyPilot vms.csv's GPU instances as listed prices per GPU-hour (Price and SpotPrice over AcceleratorCount).

    The file names no provider and states no date: the provider is the folder's name (SkyPilot publishes
    catalogs/<version>/<cloud>/vms.csv), the date the day the file was last written, as a retrieval day (the
    prices are at least that old). Rows without an InstanceType (GCP prices an accelerator apart from its host)
    or without a Price are not whole on-demand prices and are left out, counted in the notes."""
    provider = path.resolve().parent.name.lower() or path.stem
    day = dt.date.fromtimestamp(path.stat().st_mtime).isoformat()
    listed: list[ListedPrice] = []
    unused: Counter[str] = Counter()
    for rec in records:
        v = rec.values
        if not v.get("AcceleratorName"):
            continue  # a CPU instance
        if not v.get("InstanceType"):
            unused["without an InstanceType (an accelerator priced apart from its host)"] += 1
            continue
        if v.get("Price") is None or "AcceleratorCount" not in v:
            unused["without a Price or an AcceleratorCount"] += 1
            continue
        count = v["AcceleratorCount"]
        spot = v.get("SpotPrice")
        listed.append(ListedPrice(
            provider=provider, region=v.get("Region", ""), instance_type=v["InstanceType"], label=v["AcceleratorName"],
            on_demand=round(v["Price"] / count, 4),
            spot=round(spot / count, 4) if spot is not None and 0 < spot < SPOT_PLACEHOLDER else None,
            source=f"{path.name} (SkyPilot catalog file, {provider})", as_of=retrieved(day), row=rec.row,
            gpu_count=count, vcpus=v.get("vCPUs"), memory_gib=v.get("MemoryGiB")))
    notes = (f"provider {provider} (the folder's name), prices dated {retrieved(day)} (the file states no date)",
             *(f"{n} GPU row(s) {why} left out" for why, n in unused.items()))
    return listed, notes


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
        gpu, why = resolve_label(str(v.get("gpu", "")), classes)
        cards = sorted({r.gpu for r in alias_rules().get(str(v.get("gpu", "")).strip().upper(), ()) if r.gpu in classes})
        if "gpu" in v and gpu is None and why == UNTOLD_CARD and cards:
            out.add(Code.UNKNOWN_VALUE, name, cell["gpu"], Message("quote_ambiguous_gpu", gpu=v["gpu"], cards=cards))
        elif "gpu" in v and gpu is None:
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
    names = [*classes, *alias_rules()]
    guess = difflib.get_close_matches(str(text), names, n=1, cutoff=0.5) or \
        difflib.get_close_matches(str(text).upper(), list(alias_rules()), n=1, cutoff=0.5)
    return Message("did_you_mean", guess=guess[0]) if guess else Message("see_catalog")

