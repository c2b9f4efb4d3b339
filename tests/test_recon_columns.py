"""Bill and usage columns declared once: header matching, memory units, timestamps and the tables of docs/reconciliation.md."""

from __future__ import annotations

import pytest
from conftest import REPO

from budgetgen.recon.columns import (
    BILL_INPUT_COLUMNS,
    USAGE_INPUT_COLUMNS,
    columns_reference,
    gb_per_unit,
    match_headers,
)
from budgetgen.recon.table import timestamp_month

USAGE = {c.name: c for c in USAGE_INPUT_COLUMNS}


@pytest.mark.parametrize("header, column", [
    ("gpu_util_pct", "gpu_util_pct"), ("GPU Util Pct", "gpu_util_pct"), ("gpu-util-pct", "gpu_util_pct"),
    (" utilization.gpu [%]", "gpu_util_pct"), ("utilization.gpu", "gpu_util_pct"), ("gpu_util", "gpu_util_pct"),
    ("gpu_util_pct [%]", "gpu_util_pct"), ("memory.used [MiB]", "mem_used_gb"), ("Mem Used GB", "mem_used_gb"),
    ("资源编号", "resource_id"), ("Instance_ID", "resource_id"), ("Time", "timestamp"), ("OOM", "oom_events"),
])
def test_usage_headers_match_names_and_aliases(header, column):
    assert match_headers([header], USAGE_INPUT_COLUMNS) == {column: header}


def test_the_name_wins_over_an_alias_then_the_first_header_and_unknown_headers_are_left_alone():
    found = match_headers(["name", "utilization.gpu [%]", "gpu_util_pct", "pci.bus_id"], USAGE_INPUT_COLUMNS)
    assert found == {"gpu_util_pct": "gpu_util_pct"}
    found = match_headers(["Memory Used", "memory.used [MiB]", "memory.used"], USAGE_INPUT_COLUMNS)
    assert found == {"mem_used_gb": "memory.used [MiB]"}


def test_bill_headers_ignore_case_spaces_and_underscores():
    found = match_headers(["charge period start", "BILLED_COST", "x_InstanceType"], BILL_INPUT_COLUMNS)
    assert found == {"ChargePeriodStart": "charge period start", "BilledCost": "BILLED_COST"}


@pytest.mark.parametrize("header, column, factor", [
    ("mem_used_gb", "mem_used_gb", 1.0),
    ("memory.used [MiB]", "mem_used_gb", 1048576 / 1e9),
    ("memory.used", "mem_used_gb", 1048576 / 1e9),           # nvidia-smi without its unit: MiB
    ("mem_used_gb [GiB]", "mem_used_gb", 2**30 / 1e9),
    ("memory.total [MB]", "mem_total_gb", 1e-3),
    ("mem_total_gb [GB]", "mem_total_gb", 1.0),
])
def test_memory_units(header, column, factor):
    assert gb_per_unit(header, USAGE[column]) == pytest.approx(factor)


@pytest.mark.parametrize("text, month", [
    ("2026-07-31T23:00:00Z", "2026-07"), ("2026/7/31 10:00:00.123", "2026-07"), ("2026-07", "2026-07"),
    ("2026.07.01", "2026-07"), (" 2026-7-31 ", "2026-07"), ("2026-02-29", None), ("2024-02-29", "2024-02"),
    ("2026-13-01", None), ("2026-07-32", None), ("July 2026", None), ("31/07/2026", None), ("", None),
])
def test_timestamp_month(text, month):
    assert timestamp_month(text) == month


def test_the_reconciliation_page_lists_the_declared_columns():
    page = (REPO / "docs" / "reconciliation.md").read_text(encoding="utf-8")
    assert columns_reference() in page, "regenerate it: python -m budgetgen.recon.columns"
