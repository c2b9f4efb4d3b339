"""Writes the baseline the same-outputs test compares with: the sample plan (tests/data/q3.xlsx, the frozen sample,
with the FOCUS sample bill) built with the tests' fixed catalogs and build date, as the JSON results and every cell's cached value.

Run on the commit whose outputs are the reference: `python3 tests/data/baseline/make_baseline.py --write`
(without --write it only builds, so that an accidental run cannot move the reference).
"""

import datetime as dt
import gzip
import json
import sys
import tempfile
from pathlib import Path

import openpyxl

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from budgetgen import api
from budgetgen.catalog import gpus as catalog
from budgetgen.catalog import models, prices

BUILD_DATE = dt.date(2026, 6, 15)
HERE = Path(__file__).parent


def cell_values(path: Path) -> dict[str, dict[str, object]]:
    """Every non-empty cell's cached value, by sheet and A1 reference."""
    wb = openpyxl.load_workbook(path, data_only=True, read_only=True)
    out = {}
    for ws in wb.worksheets:
        cells = {}
        for row in ws.iter_rows():
            for cell in row:
                if cell.value is not None and hasattr(cell, "coordinate"):
                    cells[cell.coordinate] = cell.value if not isinstance(cell.value, dt.datetime) \
                        else cell.value.isoformat()
        out[ws.title] = cells
    return out


def build_sample(folder: Path) -> tuple[dict, dict]:
    catalog.CATALOG_RESOURCE = ROOT / "tests" / "data" / "gpus.csv"
    models.MODELS_RESOURCE = ROOT / "tests" / "data" / "models.csv"
    prices.OFFERS_RESOURCE = ROOT / "tests" / "data" / "prices.csv"
    models.builtin_models.cache_clear()
    result = api.build_budget(ROOT / "tests" / "data" / "q3.xlsx", folder / "q3.xlsx", json_path=folder / "q3.json",
                              bills=[HERE / "bill_cny.csv"], build_date=BUILD_DATE)
    return json.loads(result.json.read_text(encoding="utf-8")), cell_values(result.workbook)


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: make_baseline.py --write  (replaces the reference the same-outputs test compares with)")
    with tempfile.TemporaryDirectory() as tmp:
        results, cells = build_sample(Path(tmp))
    with gzip.open(HERE / "q3.json.gz", "wt", encoding="utf-8") as fh:
        json.dump({"results": results, "cells": cells}, fh, sort_keys=True, default=str)
