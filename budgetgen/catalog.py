"""The built-in GPU catalog (package data `budgetgen/data/gpus.csv`), prices in CNY."""

from __future__ import annotations

import csv
from importlib import resources

from .model import Gpu
from .schema import PRICE_COLUMN, TIERS

CATALOG_RESOURCE = resources.files("budgetgen") / "data" / "gpus.csv"
CATALOG_CURRENCY = "CNY"


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
        interconnect=str(rec.get("interconnect") or "pcie"),
        scaling=float(rec["scaling"] if rec.get("scaling") is not None else 0.5),
        prices={t: rec.get(PRICE_COLUMN[t]) for t in TIERS},
        purchase_price=rec.get("purchase_price"),
        power_w=rec.get("power_w"),
        source=str(rec.get("source") or ""),
        as_of=str(rec.get("as_of") or ""),
    )


def builtin_records() -> list[dict[str, object]]:
    """The built-in catalog as records with numbers parsed (prices in CNY)."""
    text_columns = {"gpu", "class", "interconnect", "source", "as_of"}
    with CATALOG_RESOURCE.open("r", newline="", encoding="utf-8") as fh:
        return [{k: (v if k in text_columns else _number(v)) for k, v in row.items()} for row in csv.DictReader(fh)]


def builtin_catalog() -> list[Gpu]:
    """The built-in catalog as Gpu values (prices in CNY)."""
    return [gpu_from_record(rec) for rec in builtin_records()]
