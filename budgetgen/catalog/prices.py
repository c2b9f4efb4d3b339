"""Price offers: who rents a GPU at which tier prices, where, in which currency, as of when, on whose word.

The built-in offers are package data (`budgetgen/data/prices.csv`, one row per offer); `choose_offer` picks the
one a plan uses for each GPU. The USD offers there are derived from a dated snapshot of public list prices by
`derive_offers` (run by `tools/make_prices.py`); the snapshot's GPU labels map to catalog names through
`budgetgen/data/gpu_aliases.csv` (by label, and by instance type where the label does not tell the card), and
which providers count towards a "market" price is `budgetgen/data/providers.csv`. Reading such files (the
snapshot's format, SkyPilot's vms.csv, a quote sheet) is `price_files.py`. How each row is sourced and dated:
docs/prices.md.
"""

from __future__ import annotations

import calendar
import csv
import datetime as dt
import math
import re
import statistics
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path

from ..core.records import TIERS
from ..core.schema import Value

DATA = resources.files("budgetgen") / "data"
OFFERS_RESOURCE = DATA / "prices.csv"
ALIASES_RESOURCE = DATA / "gpu_aliases.csv"
PROVIDERS_RESOURCE = DATA / "providers.csv"

MARKET = "market"  # the provider name of an offer that stands for a market (a median over providers)
ANY_REGION = "any"  # an offer's region when it is not regional
# The price columns in the order of the GPUs sheet: the reference (list) price first.
PRICE_COLUMNS = tuple(t.price_column for t in sorted(TIERS, key=lambda t: not t.reference))
OFFER_COLUMNS = ("gpu", "provider", "region", "currency", *PRICE_COLUMNS, "purchase_price", "source", "as_of")
# The columns an offer fills on a GPUs row (everything but the GPU's name and its specs).
OFFER_FIELDS = OFFER_COLUMNS[1:]

# Derived offers' sources start with this, so that regenerating prices.csv keeps the hand-entered rows.
SNAPSHOT_SOURCE = "price snapshot"
# Words in a row_flags.csv flag that make a row unusable: a suspected catalog error, columns swapped in the
# source, a price missing its host VM, a spot price equal to on-demand. Other flags say how a value was derived.
SUSPECT_FLAG_WORDS = ("suspect", "swapped", "accelerator-only", "spot equals on-demand")
# Words in a row_flags.csv flag or a row's as_of that mark the figures stale (superseded by a later price list): such
# rows are left out like suspect ones (docs/prices.md, "Stale rows").
STALE_WORDS = ("vintage:", "stale", "superseded", "outdated")
# Snapshot regions that mean "every region the provider lists, at one price".
ALL_REGIONS = ("all-listed-regions", "default", "unspecified", "")
_SNAPSHOT_COMMIT = re.compile(r"^(?P<repo>[\w.-]+/[\w.-]+)@(?P<commit>[0-9a-f]{7,40}):(?P<path>\S+)$")


@dataclass(frozen=True)
class Offer:
    """One provider's prices for one GPU: per tier (None: not offered), in `currency`, dated and sourced."""

    gpu: str
    provider: str
    region: str
    currency: str
    prices: Mapping[str, float | None] = field(default_factory=dict)  # tier name -> price in the tier's unit
    purchase_price: float | None = None
    source: str = ""
    as_of: str = ""

    def fields(self) -> dict[str, Value]:
        """The GPUs columns it fills, by name: provider, region, currency, the tier prices, purchase, source, date."""
        return {"provider": self.provider, "region": self.region, "currency": self.currency,
                **{t.price_column: self.prices.get(t.name) for t in TIERS},
                "purchase_price": self.purchase_price, "source": self.source, "as_of": self.as_of}

    @property
    def priced(self) -> bool:
        return self.purchase_price is not None or any(p is not None for p in self.prices.values())


@dataclass(frozen=True)
class ListedPrice:
    """One row of a price snapshot (gpu_prices.csv): an instance type's price per GPU-hour, in USD."""

    provider: str
    region: str
    instance_type: str
    label: str  # the snapshot's GPU label, e.g. A100-80GB
    on_demand: float | None  # USD per GPU-hour
    spot: float | None
    source: str = ""
    as_of: str = ""
    row: int = 0
    gpu_count: float | None = None  # GPUs in the instance (its host shape, with vCPUs and memory where given)
    vcpus: float | None = None
    memory_gib: float | None = None

    @property
    def key(self) -> tuple[str, str, str, str]:
        """How row_flags.csv names the row."""
        return (self.provider, self.region, self.instance_type, self.label)


@dataclass(frozen=True)
class Provider:
    """A provider of the snapshot: its kind and the GPU classes whose market price its rows count towards."""

    name: str
    kind: str  # cloud | aggregator | marketplace
    counts_for: tuple[str, ...]
    note: str = ""


def _rows(resource) -> list[dict[str, str]]:
    with resource.open("r", newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _number(text: str | None) -> float | None:
    return float(text) if text and text.strip() else None


# ---------------------------------------------------------------- the built-in offers

def offer_from_record(rec: Mapping[str, Value]) -> Offer:
    """An Offer from a record keyed by OFFER_COLUMNS (prices already numbers or None)."""
    return Offer(gpu=str(rec["gpu"]), provider=str(rec.get("provider") or ""),
                 region=str(rec.get("region") or ANY_REGION), currency=str(rec.get("currency") or ""),
                 prices={t.name: rec.get(t.price_column) for t in TIERS},
                 purchase_price=rec.get("purchase_price"), source=str(rec.get("source") or ""),
                 as_of=str(rec.get("as_of") or ""))


def read_offers(resource) -> list[Offer]:
    """Offers from a prices.csv (the package's, or a fixed copy in the tests)."""
    numbers = set(PRICE_COLUMNS) | {"purchase_price"}
    return [offer_from_record({k: (_number(v) if k in numbers else v) for k, v in row.items()})
            for row in _rows(resource)]


def builtin_offers() -> list[Offer]:
    """The built-in offers, in file order: each in its source currency, with its source and date."""
    return read_offers(OFFERS_RESOURCE)


def write_offers(offers: Iterable[Offer], path: Path) -> None:
    """Write offers as a prices.csv (what tools/make_prices.py does)."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, OFFER_COLUMNS, lineterminator="\n")
        writer.writeheader()
        for offer in offers:
            writer.writerow({k: "" if v is None else f"{v:g}" if isinstance(v, float) else v
                             for k, v in {"gpu": offer.gpu, **offer.fields()}.items()})


def choose_offer(offers: Iterable[Offer], gpu: str, currency: str | None = None, provider: str | None = None,
                 region: str | None = None) -> Offer | None:
    """The one offer a plan uses for `gpu` (None: no offer fits).

    A provider or region asked for: only its offers (a region also accepts the provider's "any"-region offer,
    the regional one first). Else offers in `currency` first, so that a CNY plan keeps its CNY prices; among
    several, the "market" offer, else the first listed. Else the "market" offer, else the first listed."""
    mine = [o for o in offers if o.gpu.lower() == gpu.lower()]
    if provider or region:
        mine = [o for o in mine if (not provider or o.provider.lower() == provider.lower())
                and (not region or o.region.lower() in (region.lower(), ANY_REGION))]
        mine.sort(key=lambda o: o.region == ANY_REGION)
        return mine[0] if mine else None
    if currency:
        same = [o for o in mine if o.currency.upper() == currency.upper()]
        mine = same or mine
    market = [o for o in mine if o.provider == MARKET]
    return next(iter(market or mine), None)


OFFER_SEPARATOR = " · "  # between an offer's provider and its region in a GPUs `<tier>_offer` cell


def offer_label(provider: str, region: str) -> str:
    """How a GPUs `<tier>_offer` cell names an offer: the provider, and its region where it is regional."""
    return provider if not region or region == ANY_REGION else f"{provider}{OFFER_SEPARATOR}{region}"


def offer_provider(label: str) -> str:
    """The provider of an offer label (offer_label's first part)."""
    return label.split(OFFER_SEPARATOR, 1)[0]


def name_key(text: str) -> str:
    """A provider's or region's name as compared: compatibility forms folded (NFKC: a full-width ａｗｓ is aws),
    format characters (zero-width, bidi) dropped, case folded, spaces around commas and runs of spaces as one."""
    visible = "".join(ch for ch in unicodedata.normalize("NFKC", str(text)) if unicodedata.category(ch) != "Cf")
    return re.sub(r"\s+", " ", re.sub(r"\s*,\s*", ",", visible)).strip().casefold()


def split_names(text: str | None, known: Iterable[str] = ()) -> list[str]:
    """The names of a comma-separated setting (providers, regions), empty items left out; a run of items that
    together are a `known` name holding commas ("The Netherlands, NL, EU", a snapshot region) is that one name."""
    parts = (text or "").split(",")
    keys = {name_key(k) for k in known if "," in k}
    out, i = [], 0
    while i < len(parts):
        j = next((j for j in range(len(parts), i + 1, -1) if name_key(",".join(parts[i:j])) in keys), i + 1)
        item = ",".join(parts[i:j]).strip()
        if name_key(item):
            out.append(item)
        i = j
    return out


def offer_regions(offers: Iterable[Offer]) -> set[str]:
    """Every region an offer names, and ANY_REGION."""
    return {o.region for o in offers if o.region} | {ANY_REGION}


def eligible_offers(offers: Iterable[Offer], gpu: str, gpu_class: str, currencies: Iterable[str] | None,
                    providers: str | None = None, regions: str | None = None) -> list[Offer]:
    """The offers a plan may buy `gpu` from: in one of `currencies` (None: any), from the named `providers` and
    `regions` (blank: any; an offer for any region is in every region), a marketplace's only for the card classes
    it counts for (providers.csv: individual hosts' asks are no datacenter supply), and the market's median only
    where no provider's own offer is left (a median is an estimate, not something procurement can order)."""
    offers = list(offers)
    wanted = {c.upper() for c in currencies} if currencies is not None else None
    names = {name_key(n) for n in split_names(providers)}
    places = {name_key(n) for n in split_names(regions, offer_regions(offers))}
    known = providers_table()
    mine = []
    for o in offers:
        if o.gpu.lower() != gpu.lower() or not o.priced:
            continue
        if wanted is not None and o.currency.upper() not in wanted:
            continue
        if names and name_key(o.provider) not in names:
            continue
        if places and name_key(o.region) not in places and name_key(o.region) != ANY_REGION:
            continue
        record = known.get(o.provider)
        if record is not None and gpu_class not in record.counts_for:
            continue
        mine.append(o)
    named = [o for o in mine if o.provider != MARKET]
    return named or mine


def best_offer_record(offers: list[Offer]) -> dict[str, Value] | None:
    """One GPUs row from several offers of one GPU (all in one currency): per tier the lowest price and whose offer
    it is (`<tier>_offer`), so that a task priced on a tier pays the cheapest offer of it. The row's provider,
    region, purchase price, commitment prices, source and date are those of the offer with the lowest reference
    (on-demand) price, else of the first offer; None without offers."""
    if not offers:
        return None
    reference = next(t.name for t in TIERS if t.reference)
    lead = min(offers, key=lambda o: (o.prices.get(reference) is None, o.prices.get(reference) or 0.0))
    rec = lead.fields()
    sources = []
    for tier in TIERS:
        if not tier.for_tasks:
            continue
        priced = [o for o in offers if o.prices.get(tier.name) is not None]
        best = min(priced, key=lambda o: o.prices[tier.name] or 0.0) if priced else None
        lead_price = lead.prices.get(reference)
        if best is not None and tier.over_reference_message and lead_price is not None \
                and (best.prices[tier.name] or 0.0) > lead_price:
            best = None  # interruptible or idle capacity dearer than another's on-demand: never the cheaper way
        rec[tier.price_column] = best.prices[tier.name] if best else None
        rec[f"{tier.name}_offer"] = offer_label(best.provider, best.region) if best else None
        if best is not None and best is not lead:
            sources.append(f"{tier.name} from {offer_label(best.provider, best.region)}: {best.source} ({best.as_of})")
    if sources:
        rec["source"] = "; ".join([f"{offer_label(lead.provider, lead.region)}: {lead.source}", *sources])
        rec["as_of"] = oldest_as_of([lead.as_of, *(o.as_of for o in offers if o is not lead)])
    return rec


# ---------------------------------------------------------------- dates: stated or only retrieved

RETRIEVED = "retrieved"  # an as_of of "retrieved YYYY-MM-DD": the source states no date; the day it was read
_STATED = re.compile(r"(\d{4})-(\d{2})(?:-(\d{2}))?")
_READ_ON = re.compile(rf"{RETRIEVED}[: ]\s*(\d{{4}}-\d{{2}}-\d{{2}})")


@dataclass(frozen=True)
class AsOf:
    """What an `as_of` text says: the date the source states for its prices, or, when the source states none, the
    day it was read (`stated` False: the prices are at least that old, how much older is unknown)."""

    day: dt.date
    stated: bool


def read_as_of(text: str | None) -> AsOf | None:
    """An as_of text read: YYYY-MM-DD, or YYYY-MM (its last day: prices dated by month may be from any of its
    days), stated by the source; "retrieved YYYY-MM-DD" (also the snapshot's "retrieved:YYYY-MM-DD;..."): read that
    day from a source that states no date. None for any other text."""
    text = (text or "").strip()
    if (m := _STATED.fullmatch(text)) is not None:
        year, month = int(m[1]), int(m[2])
        try:
            return AsOf(dt.date(year, month, int(m[3]) if m[3] else calendar.monthrange(year, month)[1]), True)
        except ValueError:
            return None
    if (m := _READ_ON.match(text)) is not None:
        try:
            return AsOf(dt.date.fromisoformat(m[1]), False)
        except ValueError:
            return None
    return None


def retrieved(day: str) -> str:
    """The as_of of prices read on `day` (YYYY-MM-DD) from a source that states no date."""
    return f"{RETRIEVED} {day}" if day else ""


def oldest_as_of(texts: Iterable[str]) -> str:
    """The as_of, of several, that is oldest (a retrieval day counts as its day; on a tie the undated one, which
    claims less); texts that are no date come last."""
    texts = [t for t in texts if t]

    def key(text):
        read = read_as_of(text)
        return (read is None, read.day if read else dt.date.max, read.stated if read else True)
    return min(texts, key=key, default="")


# ---------------------------------------------------------------- the snapshot's labels and providers

@dataclass(frozen=True)
class AliasRule:
    """One row of gpu_aliases.csv: a price file's GPU label, on rows whose `provider:instance_type` matches
    `instance` (a regular expression, any case; blank: every row), stands for catalog card `gpu` (blank: for no
    card of the catalog, e.g. a label whose form factor the row does not tell)."""

    label: str
    instance: str
    gpu: str
    note: str = ""

    def matches(self, provider: str, instance_type: str) -> bool:
        return not self.instance or re.search(self.instance, f"{provider}:{instance_type}", re.IGNORECASE) is not None


@cache
def alias_rules() -> dict[str, tuple[AliasRule, ...]]:
    """Label (upper case) -> its rules in file order (budgetgen/data/gpu_aliases.csv)."""
    rules: dict[str, list[AliasRule]] = defaultdict(list)
    for row in _rows(ALIASES_RESOURCE):
        rule = AliasRule(row["label"].strip(), (row.get("instance") or "").strip(), row["gpu"].strip(),
                         row.get("note") or "")
        rules[rule.label.upper()].append(rule)
    return {label: tuple(found) for label, found in rules.items()}


@cache
def providers_table() -> dict[str, Provider]:
    """The snapshot's providers by name (budgetgen/data/providers.csv)."""
    return {row["provider"]: Provider(row["provider"], row["kind"], tuple(row["counts_for"].split()), row["note"])
            for row in _rows(PROVIDERS_RESOURCE)}


UNKNOWN_LABEL = "unknown label"
UNTOLD_CARD = "card not told"  # a known label whose row does not tell which card (form factor) it is


def resolve_label(label: str, names: Iterable[str] = (), provider: str = "", instance_type: str = "") -> tuple[str | None, str]:
    """The catalog card a price file's row stands for, and why none: a catalog name (any case) is itself; a label
    goes by its first matching alias rule (gpu_aliases.csv). (card, "") or (None, UNKNOWN_LABEL | UNTOLD_CARD)."""
    text = label.strip()
    by_lower = {n.lower(): n for n in names}
    if text.lower() in by_lower:
        return by_lower[text.lower()], ""
    rules = alias_rules().get(text.upper())
    if not rules:
        return None, UNKNOWN_LABEL
    rule = next((r for r in rules if r.matches(provider, instance_type)), None)
    return (rule.gpu, "") if rule is not None and rule.gpu else (None, UNTOLD_CARD)


def is_suspect(flag: str) -> bool:
    """Whether a row_flags.csv flag makes its row unusable (SUSPECT_FLAG_WORDS)."""
    return any(word in flag.lower() for word in SUSPECT_FLAG_WORDS)


def is_stale(flag_or_as_of: str) -> bool:
    """Whether a row_flags.csv flag or a row's as_of says the source's figures are stale (STALE_WORDS): a
    `vintage:` tag (the snapshot's AWS rows are the price list before AWS's mid-2025 GPU price cut)."""
    return any(word in flag_or_as_of.lower() for word in STALE_WORDS)


# ---------------------------------------------------------------- offers derived from a snapshot

def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 4) if values else None


def _dates(rows: Iterable[ListedPrice]) -> str:
    """The as_of of an offer from `rows`: the oldest date they state, else (a row states none) "retrieved" and the
    latest day they were read (the snapshot's rows are all read on one day and state no date)."""
    read = [(r, read_as_of(r.as_of)) for r in rows]
    if read and all(a is not None and a.stated for _, a in read):
        return oldest_as_of(r.as_of for r, _ in read)
    days = [a.day for _, a in read if a is not None and not a.stated]
    return retrieved(max(days).isoformat()) if days else ""


def _commits(rows: Iterable[ListedPrice]) -> str:
    """The distinct files the rows cite (`repo@commit:path`, else the file), joined by spaces."""
    return " ".join(dict.fromkeys(r.source for r in rows if r.source)) or "(no source given)"


def smallest_shape(rows: list[ListedPrice]) -> list[ListedPrice]:
    """The rows a provider's per-GPU price comes from: its smallest host shape. Those with the fewest GPUs (of all
    its rows for the card); where the file gives the host's size (SkyPilot's vms.csv: vCPUs, MemoryGiB), in each
    region only the smallest host of them (the fewest vCPUs, then the least memory; one instance type in several
    zones keeps all its rows). A price snapshot gives no host size: all its rows of the fewest GPUs are kept."""
    fewest = min((r.gpu_count for r in rows if r.gpu_count), default=None)
    shaped = [r for r in rows if r.gpu_count == fewest] if fewest is not None else list(rows)
    by_region: dict[str, list[ListedPrice]] = defaultdict(list)
    for r in shaped:
        by_region[r.region].append(r)
    kept: list[ListedPrice] = []
    for group in by_region.values():
        def host(r: ListedPrice) -> tuple[float, float]:
            return (r.vcpus if r.vcpus is not None else math.inf, r.memory_gib if r.memory_gib is not None else math.inf)
        smallest = min(host(r) for r in group)
        kept.extend(r for r in group if host(r) == smallest)
    return kept


def _provider_offer(gpu: str, provider: str, rows: list[ListedPrice], left_out: Mapping[str, int], file: str) -> Offer:
    kept = smallest_shape(rows)
    by_region: dict[str, list[ListedPrice]] = defaultdict(list)
    for r in kept:
        by_region[r.region].append(r)
    # per region the median of the smallest shape's rows (its zones, or host sizes a snapshot does not tell apart);
    # the offer: the median over regions
    on_demand = [v for group in by_region.values()
                 if (v := _median([r.on_demand for r in group if r.on_demand is not None])) is not None]
    spot = [v for group in by_region.values() if (v := _median([r.spot for r in group if r.spot is not None]))]
    regions = set(by_region)
    region = regions.pop() if len(regions) == 1 and not {r.lower() for r in regions} & set(ALL_REGIONS) else ANY_REGION
    labels = "/".join(dict.fromkeys(r.label for r in rows))
    shapes = "/".join(dict.fromkeys(r.instance_type for r in kept))
    gpus = f"{kept[0].gpu_count:g}-GPU" if kept and kept[0].gpu_count else "its"
    text = (f"{SNAPSHOT_SOURCE} ({file}) {_dates(rows)}: {provider} {labels}, USD per GPU-hour of its smallest host "
            f"shape ({gpus} {shapes}; {len(kept)} of {len(rows)} row(s)), median over {len(by_region)} region(s) "
            f"(on-demand {len(on_demand)}, spot {len(spot)})")
    if provider in providers_table() and providers_table()[provider].note:
        text += f"; {providers_table()[provider].note}"
    if any(left_out.values()):
        text += "; left out: " + ", ".join(f"{n} row(s) {why}" for why, n in left_out.items() if n)
    return Offer(gpu, provider, region, "USD", {**dict.fromkeys(t.name for t in TIERS),
                                                **_tier_prices(_median(on_demand), _median(spot))},
                 source=f"{text}; {_commits(rows)}", as_of=_dates(rows))


def _tier_prices(on_demand: float | None, spot: float | None) -> dict[str, float | None]:
    """A snapshot's two prices as tier prices: on-demand is the reference tier, spot the tier that reruns."""
    reference = next(t.name for t in TIERS if t.reference)
    interruptible = next(t.name for t in TIERS if t.reruns)
    return {reference: on_demand, interruptible: spot}


def _market_offer(gpu: str, gpu_class: str, offers: list[Offer], rows: dict[str, list[ListedPrice]],
                  left_out: Mapping[str, Mapping[str, int]], file: str) -> Offer | None:
    known = providers_table()
    counted = [o for o in offers if o.provider in known and gpu_class in known[o.provider].counts_for]
    if not counted:
        return None
    reference = next(t.name for t in TIERS if t.reference)
    interruptible = next(t.name for t in TIERS if t.reruns)

    def listing(tier: str) -> str:
        return ", ".join(f"{o.provider} {o.prices[tier]:g}" for o in counted if o.prices[tier] is not None) or "none"

    kinds = "/".join(dict.fromkeys(known[o.provider].kind for o in counted))
    others = [o.provider for o in offers if o not in counted]
    dropped = [f"{p} {n} {why}" for p, reasons in sorted(left_out.items()) for why, n in reasons.items() if n]
    used = [r for o in counted for r in rows[o.provider]]
    text = (f"{SNAPSHOT_SOURCE} ({file}) {_dates(used)}: median of the provider prices (USD per GPU-hour of each "
            f"provider's smallest host shape) of the {kinds} providers whose rows count for {gpu_class} cards; "
            f"on-demand: {listing(reference)}; spot: {listing(interruptible)}")
    if others:
        text += f"; not counted: {', '.join(f'{p} ({known[p].kind})' if p in known else p for p in others)}"
    if dropped:
        text += f"; rows left out: {', '.join(dropped)}"
    return Offer(gpu, MARKET, ANY_REGION, "USD",
                 {**dict.fromkeys(t.name for t in TIERS),
                  **_tier_prices(_median([p for o in counted if (p := o.prices[reference]) is not None]),
                                 _median([p for o in counted if (p := o.prices[interruptible]) is not None]))},
                 source=f"{text}; {_commits(used)}", as_of=_dates(used))


SUSPECT_ROW = "flagged suspect in row_flags.csv"
STALE_ROW = "marked stale by the source"
UNTOLD_ROW = "whose instance type does not tell the card (form factor)"


def derive_offers(listed: Iterable[ListedPrice], classes: Mapping[str, str],
                  suspect: Iterable[tuple[str, str, str, str]] = (), stale: Iterable[tuple[str, str, str, str]] = (),
                  file: str = "gpu_prices.csv") -> list[Offer]:
    """Offers from a price file's rows, for each catalog GPU (`classes`: name -> GPU class, in catalog order) that
    a row stands for (resolve_label: its label, provider and instance type): one offer per provider (USD per
    GPU-hour of its smallest host shape, `smallest_shape`, the median over its regions) and a "market" offer (the
    median of the provider prices of the providers that count for the GPU's class, on-demand and spot apart).

    Left out, and counted in the sources: rows in `suspect` or `stale` (row_flags keys), rows whose as_of says the
    figures are stale (a `vintage:` tag), rows whose label is known but whose card the row does not tell. Rows whose
    label names no catalog GPU are skipped."""
    suspect, stale = set(suspect), set(stale)
    by_gpu: dict[str, dict[str, list[ListedPrice]]] = defaultdict(lambda: defaultdict(list))
    left_out: dict[str, dict[str, dict[str, int]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(int)))
    untold: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))  # label -> provider -> rows
    for row in listed:
        gpu, why = resolve_label(row.label, classes, row.provider, row.instance_type)
        if gpu is None:
            if why == UNTOLD_CARD:
                untold[row.label.upper()][row.provider] += 1
            continue
        if row.key in suspect:
            left_out[gpu][row.provider][SUSPECT_ROW] += 1
        elif row.key in stale or is_stale(row.as_of):
            left_out[gpu][row.provider][STALE_ROW] += 1
        elif row.on_demand is None:
            continue
        else:
            by_gpu[gpu][row.provider].append(row)
    for label, providers in untold.items():  # counted against every card the label can stand for
        for gpu in {r.gpu for r in alias_rules().get(label, ()) if r.gpu and r.gpu in classes}:
            for provider, n in providers.items():
                left_out[gpu][provider][f"{UNTOLD_ROW} ({label})"] += n
    out: list[Offer] = []
    for gpu, gpu_class in classes.items():
        rows = by_gpu.get(gpu)
        if not rows:
            continue
        offers = [_provider_offer(gpu, p, rows[p], left_out[gpu][p], file) for p in sorted(rows)]
        market = _market_offer(gpu, gpu_class, offers, rows, left_out[gpu], file)
        out.extend([market, *offers] if market else offers)
    return out
