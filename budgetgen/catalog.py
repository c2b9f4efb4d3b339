"""The built-in GPU catalog (package data `budgetgen/data/gpus.csv`), prices in CNY."""

from __future__ import annotations

import csv
from importlib import resources

from .model import Gpu
from .schema import PRICE_COLUMN, TIERS

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
        interconnect=str(rec.get("interconnect") or "pcie"),
        scaling=float(rec["scaling"] if rec.get("scaling") is not None else 0.5),
        prices={t: rec.get(PRICE_COLUMN[t]) for t in TIERS},
        purchase_price=rec.get("purchase_price"),
        power_w=rec.get("power_w"),
        source=str(rec.get("source") or ""),
        as_of=str(rec.get("as_of") or ""),
    )


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
