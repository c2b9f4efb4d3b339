"""The built-in catalog: shipped as package data, and replaced in every test by a fixed copy."""

from __future__ import annotations

import csv
import math
from importlib import resources
from pathlib import Path

from click.testing import CliRunner
from conftest import REPO, TEST_CATALOG, TEST_PRICES

import budgetgen
from budgetgen.catalog import gpus as catalog
from budgetgen.catalog import prices
from budgetgen.cli import main
from budgetgen.core.schema import GPU_COLUMNS, TIER_NAMES

SHIPPED = resources.files("budgetgen") / "data" / "gpus.csv"
SHIPPED_PRICES = resources.files("budgetgen") / "data" / "prices.csv"


def names_in(path) -> list[str]:
    with path.open("r", newline="", encoding="utf-8") as fh:
        return [row["gpu"] for row in csv.DictReader(fh)]


def test_every_test_sees_the_fixed_test_catalog():
    assert catalog.CATALOG_RESOURCE == TEST_CATALOG and prices.OFFERS_RESOURCE == TEST_PRICES
    assert [g.name for g in catalog.builtin_catalog()] == names_in(TEST_CATALOG)
    specs, offers = CliRunner().invoke(main, ["catalog"]).output.split("\n\n")
    assert [line[:12].strip() for line in specs.splitlines()[2:]] == names_in(TEST_CATALOG)
    assert {line[:12].strip() for line in offers.splitlines()[2:]} == set(names_in(TEST_CATALOG))


def test_a_gpu_added_to_the_shipped_catalog_moves_no_number_the_tests_see(tmp_path, monkeypatch):
    """A faster, cheaper card in a copy of the shipped catalog wins tasks of the sample; the tests' catalog does not
    have it, so the numbers the tests assert are those of the fixed catalog."""
    card = {"gpu": "Z9 Test", "class": "datacenter", "vram_gb": "192", "bandwidth_gbs": "8000", "tflops": "2000",
            "interconnect": "nvlink", "scaling": "0.9", "power_w": "700", "source": "a card no catalog has",
            "as_of": "2026-07"}
    offer = {"gpu": "Z9 Test", "provider": "cn-market", "region": "cn", "currency": "CNY", "on_demand_per_hour": "0.5",
             "monthly_per_card": "300", "idle_per_hour": "0.25", "spot_per_hour": "0.2", "as_of": "2026-07"}
    extended, extended_prices = tmp_path / "gpus.csv", tmp_path / "prices.csv"
    for shipped, copy, row in ((SHIPPED, extended, card), (SHIPPED_PRICES, extended_prices, offer)):
        text = shipped.read_text(encoding="utf-8")
        header = next(csv.reader([text.splitlines()[0]]))
        copy.write_text(text.rstrip("\n") + "\n" + ",".join(row.get(h, "") for h in header) + "\n", encoding="utf-8")
    sample = REPO / "inputs" / "q3.xlsx"  # the shipped sample, which the shipped catalog prices
    fixed = budgetgen.build_budget(sample, tmp_path / "fixed.xlsx").plan
    monkeypatch.setattr(catalog, "CATALOG_RESOURCE", extended)
    monkeypatch.setattr(prices, "OFFERS_RESOURCE", extended_prices)
    moved = budgetgen.build_budget(sample, tmp_path / "moved.xlsx").plan
    assert "Z9 Test" in {c.gpu for tp in moved.tasks for c in tp.candidates if c.chosen}
    assert moved.period_total < fixed.period_total
    monkeypatch.setattr(catalog, "CATALOG_RESOURCE", TEST_CATALOG)
    monkeypatch.setattr(prices, "OFFERS_RESOURCE", TEST_PRICES)
    again = budgetgen.build_budget(sample, tmp_path / "again.xlsx").plan
    assert again.period_total == fixed.period_total


def test_the_shipped_catalog_is_package_data_every_row_usable(monkeypatch):
    """gpus.csv holds specs (and their source), prices.csv the offers: together they are the GPUs sheet's columns."""
    assert Path(str(SHIPPED)).is_relative_to(Path(budgetgen.__file__).parent)
    monkeypatch.setattr(catalog, "CATALOG_RESOURCE", SHIPPED)
    monkeypatch.setattr(prices, "OFFERS_RESOURCE", SHIPPED_PRICES)
    records = catalog.builtin_records()
    with SHIPPED.open("r", newline="", encoding="utf-8") as fh:
        header = next(csv.reader(fh))
    with SHIPPED_PRICES.open("r", newline="", encoding="utf-8") as fh:
        offer_header = next(csv.reader(fh))
    # price_change_per_year is the plan's expectation, typed on the GPUs sheet: no catalog carries it; nor
    # training_efficiency, which calibrate writes beside a matmul_efficiency it fitted to serving runs
    # a tier's offer (`<tier>_offer`) is where the catalog merges several offers: it names the one behind each price
    assert set(header) | set(offer_header) == {c.name for c in GPU_COLUMNS} - {
        "price_change_per_year", "training_efficiency"} - set(catalog.TIER_OFFER_COLUMNS)
    assert set(records[0]) >= set(catalog.TIER_OFFER_COLUMNS)
    assert set(header) & set(offer_header) == {"gpu", "source", "as_of"}  # the specs' source and date, the offer's
    assert not set(header) & ({t.price_column for t in prices.TIERS} | {"purchase_price", "currency"})
    names = [r["gpu"] for r in records]
    assert len(names) == len(set(names)) and names
    assert {o.gpu for o in prices.builtin_offers()} <= set(names_in(SHIPPED))
    for currency in (None, "CNY", "USD"):
        for gpu in catalog.builtin_catalog(currency):
            assert min(gpu.vram_gb, gpu.bandwidth_gbs, gpu.tflops) > 0 and 0 < gpu.scaling <= 1, gpu
            listed = [gpu.prices[t] for t in TIER_NAMES if gpu.prices[t] is not None]  # a card may have none (H20)
            assert all(math.isfinite(p) and p > 0 for p in listed), gpu
            assert not listed or (gpu.currency and gpu.provider and gpu.source and gpu.as_of), gpu
