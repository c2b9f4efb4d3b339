"""The built-in catalog: shipped as package data, and replaced in every test by a fixed copy."""

from __future__ import annotations

import csv
import math
from importlib import resources
from pathlib import Path

from click.testing import CliRunner
from conftest import SAMPLE, TEST_CATALOG

import budgetgen
from budgetgen import catalog
from budgetgen.cli import main
from budgetgen.schema import GPU_COLUMNS, GPU_PRECISION_COLUMNS, TIER_NAMES

SHIPPED = resources.files("budgetgen") / "data" / "gpus.csv"


def names_in(path) -> list[str]:
    with path.open("r", newline="", encoding="utf-8") as fh:
        return [row["gpu"] for row in csv.DictReader(fh)]


def test_every_test_sees_the_fixed_test_catalog():
    assert catalog.CATALOG_RESOURCE == TEST_CATALOG
    assert [g.name for g in catalog.builtin_catalog()] == names_in(TEST_CATALOG)
    listed = CliRunner().invoke(main, ["catalog"]).output.splitlines()[2:]
    assert [line[:12].strip() for line in listed] == names_in(TEST_CATALOG)


def test_a_gpu_added_to_the_shipped_catalog_moves_no_number_the_tests_see(tmp_path, monkeypatch):
    """A faster, cheaper card in a copy of the shipped catalog wins tasks of the sample; the tests' catalog does not
    have it, so the numbers the tests assert are those of the fixed catalog."""
    with SHIPPED.open("r", encoding="utf-8") as fh:
        shipped = fh.read()
    extended = tmp_path / "gpus.csv"
    header = shipped.splitlines()[0].split(",")
    card = {"gpu": "Z9 Test", "class": "datacenter", "vram_gb": "192", "bandwidth_gbs": "8000", "tflops": "2000",
            "interconnect": "nvlink", "scaling": "0.9", "on_demand_per_hour": "0.5", "monthly_per_card": "300",
            "idle_per_hour": "0.25", "spot_per_hour": "0.2", "power_w": "700", "source": "a card no catalog has",
            "as_of": "2026-07"}
    extended.write_text(shipped.rstrip("\n") + "\n" + ",".join(card.get(h, "") for h in header) + "\n",
                        encoding="utf-8")
    fixed = budgetgen.build_budget(SAMPLE, tmp_path / "fixed.xlsx").plan
    monkeypatch.setattr(catalog, "CATALOG_RESOURCE", extended)
    moved = budgetgen.build_budget(SAMPLE, tmp_path / "moved.xlsx").plan
    assert "Z9 Test" in {c.gpu for tp in moved.tasks for c in tp.candidates if c.chosen}
    assert moved.period_total < fixed.period_total
    monkeypatch.setattr(catalog, "CATALOG_RESOURCE", TEST_CATALOG)
    again = budgetgen.build_budget(SAMPLE, tmp_path / "again.xlsx").plan
    assert again.period_total == fixed.period_total


def test_the_shipped_catalog_is_package_data_every_row_usable(monkeypatch):
    assert Path(str(SHIPPED)).is_relative_to(Path(budgetgen.__file__).parent)
    monkeypatch.setattr(catalog, "CATALOG_RESOURCE", SHIPPED)
    records = catalog.builtin_records()
    with SHIPPED.open("r", newline="", encoding="utf-8") as fh:
        header = next(csv.reader(fh))
    assert set(header) == {c.name for c in GPU_COLUMNS + GPU_PRECISION_COLUMNS}
    names = [r["gpu"] for r in records]
    assert len(names) == len(set(names)) and names
    for gpu in catalog.builtin_catalog():
        assert min(gpu.vram_gb, gpu.bandwidth_gbs, gpu.tflops) > 0 and 0 < gpu.scaling <= 1, gpu
        prices = [gpu.prices[t] for t in TIER_NAMES if gpu.prices[t] is not None]  # a card may have none (H200)
        assert all(math.isfinite(p) and p > 0 for p in prices), gpu
