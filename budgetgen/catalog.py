"""The built-in GPU catalog (package data `budgetgen/data/gpus.csv`), prices in CNY, and the consistency check
every catalog (built-in or a GPUs sheet) gets at load."""

from __future__ import annotations

import calendar
import csv
import datetime as dt
import re
from collections.abc import Mapping
from importlib import resources

from .i18n import Message
from .model import Gpu, Settings
from .schema import GPU_COLUMNS, PRICE_COLUMN, TIERS
from .values import add_months

CATALOG_RESOURCE = resources.files("budgetgen") / "data" / "gpus.csv"
CATALOG_CURRENCY = "CNY"
SPEC_COLUMNS = ("vram_gb", "bandwidth_gbs", "tflops")  # a GPU needs all three to be sized


def _number(text: str) -> float | None:
    return float(text) if text.strip() else None


def gpu_from_record(rec: dict[str, object]) -> Gpu:
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
        interconnect=str(rec.get("interconnect") or "pcie"),
        scaling=float(rec["scaling"] if rec.get("scaling") is not None else 0.5),
        prices={t: rec.get(PRICE_COLUMN[t]) for t in TIERS},
        purchase_price=rec.get("purchase_price"),
        power_w=rec.get("power_w"),
        source=str(rec.get("source") or ""),
        as_of=str(rec.get("as_of") or ""),
    )


def gpu_record(g: Gpu) -> dict[str, object]:
    """A GPU by the GPUs sheet's column names, in their order: gpu_from_record's inverse."""
    fields = {"gpu": g.name, "class": g.gpu_class, "vram_gb": g.vram_gb, "bandwidth_gbs": g.bandwidth_gbs,
              "tflops": g.tflops, "tflops_fp8": g.tflops_fp8, "tflops_fp4": g.tflops_fp4,
              "form_factor": g.form_factor or None, "bandwidth_efficiency": g.bandwidth_efficiency,
              "matmul_efficiency": g.matmul_efficiency, "interconnect": g.interconnect, "scaling": g.scaling,
              "purchase_price": g.purchase_price, "power_w": g.power_w, "source": g.source, "as_of": g.as_of}
    fields.update({PRICE_COLUMN[t]: g.prices.get(t) for t in TIERS})
    return {c.name: fields[c.name] for c in GPU_COLUMNS}


def builtin_records() -> list[dict[str, object]]:
    """The built-in catalog as records with numbers parsed (prices in CNY).

    A row whose memory, bandwidth or BF16 peak is blank (sources conflict) stays in the file but is not
    offered: a GPUs sheet row of that name with all three figures brings it in."""
    text_columns = {"gpu", "class", "interconnect", "form_factor", "source", "as_of"}
    with CATALOG_RESOURCE.open("r", newline="", encoding="utf-8") as fh:
        records = [{k: (v if k in text_columns else _number(v)) for k, v in row.items()} for row in csv.DictReader(fh)]
    return [rec for rec in records if all(rec[c] is not None for c in SPEC_COLUMNS)]


def builtin_catalog() -> list[Gpu]:
    """The built-in catalog as Gpu values (prices in CNY)."""
    return [gpu_from_record(rec) for rec in builtin_records()]


# ---------------------------------------------------------------- the consistency check

PRICES_FRESH_MONTHS = 6  # prices dated more than this many months before the build date are flagged
_AS_OF = re.compile(r"(\d{4})-(\d{2})(?:-(\d{2}))?")


def _as_of_date(text: str) -> dt.date | None:
    """The day an `as_of` text stands for: a YYYY-MM-DD date, or the last day of a YYYY-MM month (prices dated
    by month may be from any of its days); None for any other text."""
    m = _AS_OF.fullmatch(text.strip())
    if m is None:
        return None
    year, month = int(m[1]), int(m[2])
    try:
        day = int(m[3]) if m[3] else calendar.monthrange(year, month)[1]
        return dt.date(year, month, day)
    except ValueError:
        return None


def _months_later(day: dt.date, months: int) -> dt.date:
    """The same day `months` later (the month's last day where it is shorter)."""
    year, month = map(int, add_months(f"{day.year:04d}-{day.month:02d}", months).split("-"))
    return dt.date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


def _place(cells: Mapping[str, str], *columns: str) -> Message:
    """Where a flagged figure comes from: the GPUs sheet cell of the first of `columns` typed there, else the
    built-in catalog."""
    typed = [cells[c] for c in columns if c in cells]
    return Message("catalog_cell", cell=f"GPUs!{typed[0]}") if typed else Message("catalog_builtin")


def catalog_warnings(gpus: list[Gpu], settings: Settings, cells: Mapping[str, Mapping[str, str]] | None = None) -> list[Message]:
    """Prices that contradict each other or are old, at most one warning per GPU and rule, in catalog order.

    A monthly rent above hours_per_month x the on-demand price (on demand would then be the cheaper way to run
    a card around the clock), an idle or spot price above on-demand, and prices whose `as_of` is more than
    PRICES_FRESH_MONTHS before the build date, or before the plan's last month when that is later, are warnings, not errors: the user may know better. `cells` maps a
    GPU's lower-case name to the GPUs sheet cell of each column typed there, so that a warning names the cell."""
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
        on_demand, monthly = g.prices.get("on_demand"), g.prices.get("monthly")
        if on_demand is not None and monthly is not None and monthly > settings.hours_per_month * on_demand:
            out.append(Message("catalog_monthly_over_on_demand", gpu=g.name, monthly=monthly,
                               hours=settings.hours_per_month, on_demand=on_demand,
                               around_the_clock=settings.hours_per_month * on_demand,
                               place=_place(where, "monthly_per_card", "on_demand_per_hour")))
        for tier, key in (("idle", "catalog_idle_over_on_demand"), ("spot", "catalog_spot_over_on_demand")):
            price = g.prices.get(tier)
            if on_demand is not None and price is not None and price > on_demand:
                out.append(Message(key, gpu=g.name, price=price, on_demand=on_demand,
                                   place=_place(where, PRICE_COLUMN[tier], "on_demand_per_hour")))
        dated = _as_of_date(g.as_of)
        priced = g.purchase_price is not None or any(p is not None for p in g.prices.values())
        if priced and dated and build and _months_later(dated, PRICES_FRESH_MONTHS) < build:
            out.append(Message("catalog_prices_old", gpu=g.name, as_of=g.as_of, months=PRICES_FRESH_MONTHS,
                               when=when, place=_place(where, "as_of")))
    return out
