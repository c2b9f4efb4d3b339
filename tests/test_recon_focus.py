"""Reconciliation reads commitments the FOCUS way (issue 21): EffectiveCost beside BilledCost, the unused part of a
commitment and its purchase on their own lines, tied to the invoice, and PricingCategory against the planned tier.

The bill, in the plan's currency (CNY), July 2026, worked out by hand:

| line | BilledCost | EffectiveCost | what it is |
|---|---|---|---|
| i-aaa, T1, Used of ri-1, Committed | 2,400.00 | 2,400.00 | T1's card on the reservation |
| i-bbb, T1, Standard | 1,500.00 | 1,500.00 | T1's second card on demand: planned monthly (Committed) |
| i-ccc, T2, Standard | 260.00 | 260.00 | T2 on demand, as planned (21.18 GPU-hours x 12 = 254.18) |
| Unused of ri-1 (tagged T1) | 1,234.56 | 1,234.56 | the reservation's unused hours: no task's usage |
| Purchase of sp-9 | 6,000.00 | 0.00 | a savings plan's upfront fee (amortised into later usage) |
| vol-1, storage | 80.00 | 80.00 | non-GPU |

BilledCost total 11,474.56 = non-GPU 80 + GPU to tasks 4,160 (T1 3,900, T2 260) + commitment lines 7,234.56
(unused 1,234.56, purchase 6,000); EffectiveCost total 5,474.56.
"""

from __future__ import annotations

import csv
import json

import openpyxl
import pandas as pd
import pytest
from click.testing import CliRunner
from conftest import formula_cells, local_recalc, make_input, prove, same
from lo_recalc import recalc_many, soffice_path

from budgetgen.cli import main

# On one xdist worker: the CSV and the Parquet bill build the same workbook, whose proof (formula_proof) is kept.
pytestmark = pytest.mark.xdist_group("recon_focus")

TASKS = [
    {"task_id": "T1", "kind": "inference", "model_params_b": 7, "method": "int4", "requests_per_day": 10000,
     "tokens_per_request": 500, "tokens_per_sec": 100, "serving_hours_per_day": 8, "gpu": "RTX 4090",
     "tier": "monthly"},
    {"task_id": "T2", "kind": "finetune", "model_params_b": 7, "method": "lora", "train_tokens": "180M", "epochs": 1.5,
     "gpu": "A100 80G", "tier": "on_demand"},
]
HEADER = ["ChargePeriodStart", "BilledCost", "EffectiveCost", "BillingCurrency", "ResourceId", "ChargeDescription",
          "ServiceName", "ServiceCategory", "ChargeCategory", "ConsumedQuantity", "ConsumedUnit", "Tags",
          "CommitmentDiscountId", "CommitmentDiscountStatus", "CommitmentDiscountType", "PricingCategory"]
T1, T2 = '{"task_id": "T1"}', '{"task_id": "T2"}'
LINES = [
    ["2026-07-01", 2400.00, 2400.00, "CNY", "i-aaa", "g5.xlarge reserved instance hour", "Amazon EC2", "Compute",
     "Usage", 730, "Hours", T1, "ri-1", "Used", "Reserved Instance", "Committed"],
    ["2026-07-01", 1500.00, 1500.00, "CNY", "i-bbb", "g5.xlarge on-demand", "Amazon EC2", "Compute", "Usage", 730,
     "Hours", T1, "", "", "", "Standard"],
    ["2026-07-02", 260.00, 260.00, "CNY", "i-ccc", "A100 on demand gpu instance hour", "GPU Cloud", "Compute",
     "Usage", 21.5, "Hours", T2, "", "", "", "Standard"],
    ["2026-07-01", 1234.56, 1234.56, "CNY", "", "g5.xlarge reserved instance unused hours", "Amazon EC2", "Compute",
     "Usage", 300, "Hours", T1, "ri-1", "Unused", "Reserved Instance", "Committed"],
    ["2026-07-01", 6000.00, 0.00, "CNY", "", "Compute Savings Plan upfront fee", "Savings Plans", "Compute",
     "Purchase", 1, "Commitment", "", "sp-9", "", "Savings Plan", "Committed"],
    ["2026-07-31", 80.00, 80.00, "CNY", "vol-1", "S3 standard", "Amazon S3", "Storage", "Usage", 500, "GB-Mo", "",
     "", "", "", "Standard"],
]
BILLED = 2400.00 + 1500.00 + 260.00 + 1234.56 + 6000.00 + 80.00           # 11,474.56
EFFECTIVE = 2400.00 + 1500.00 + 260.00 + 1234.56 + 0.00 + 80.00          # 5,474.56
T1_BILLED = 2400.00 + 1500.00                                            # the unused 1,234.56 is not T1's


def _write(path, kind):
    if kind == "csv":
        with path.open("w", newline="") as fh:
            csv.writer(fh).writerows([HEADER, *LINES])
    else:   # Parquet: typed columns, the empty texts as nulls
        frame = pd.DataFrame(LINES, columns=HEADER).replace("", None)
        frame["ChargePeriodStart"] = pd.to_datetime(frame["ChargePeriodStart"], utc=True)
        frame.to_parquet(path, index=False)
    return path


@pytest.fixture(scope="module", params=["csv", "parquet"])
def built(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"focus-{request.param}")
    book = make_input(tmp / "in.xlsx", TASKS, settings={"period_months": 2})
    bill = _write(tmp / f"bill.{request.param}", request.param)
    out, js = tmp / "out.xlsx", tmp / "out.json"
    result = CliRunner().invoke(main, ["build", str(book), "-o", str(out), "--bills", str(bill), "--json", str(js)])
    assert result.exit_code == 0, result.output
    return out, json.loads(js.read_text())


def _rows(ws) -> dict[str, int]:
    rows = {}
    for r in range(1, ws.max_row + 1):
        rows.setdefault(ws.cell(r, 1).value, r)
    return rows


def test_unused_commitment_is_its_own_line_tied_to_the_invoice(built):
    out, _ = built
    ws = openpyxl.load_workbook(out, data_only=True)["Recon 2026-07"]
    rows = _rows(ws)
    unused = rows["unused commitment"]
    assert (ws.cell(unused, 2).value, ws.cell(unused, 4).value, ws.cell(unused, 5).value) == \
        (pytest.approx(1234.56), "ri-1", "Reserved Instance")
    purchase = rows["commitment purchase"]
    assert (ws.cell(purchase, 2).value, ws.cell(purchase, 3).value, ws.cell(purchase, 4).value) == \
        (pytest.approx(6000.0), 0.0, "sp-9")
    assert ws.cell(rows["commitment lines billed"], 2).value == pytest.approx(1234.56 + 6000.0)
    assert ws.cell(rows["billed total"], 2).value == pytest.approx(BILLED)
    assert ws.cell(rows["BilledCost in the input"], 2).value == pytest.approx(BILLED)
    assert ws.cell(rows["GPU billed to tasks"], 2).value == pytest.approx(T1_BILLED + 260.0)
    assert ws.cell(rows["unallocated GPU"], 2).value == 0.0
    assert ws.cell(rows["EffectiveCost of the month"], 2).value == pytest.approx(EFFECTIVE)
    checks = openpyxl.load_workbook(out, data_only=True)["Checks"]
    assert checks["D2"].value is True


def test_task_billed_excludes_the_unused_line_and_compares_effective_cost(built):
    out, data = built
    ws = openpyxl.load_workbook(out, data_only=True)["Recon 2026-07"]
    t1 = _rows(ws)["T1"]
    assert ws.cell(t1, 3).value == pytest.approx(T1_BILLED)       # billed: its GPU lines, not the unused 1,234.56
    assert ws.cell(t1, 15).value == pytest.approx(T1_BILLED)      # EffectiveCost
    assert ws.cell(t1, 16).value == pytest.approx(T1_BILLED)      # compared with plan
    assert ws.cell(t1, 4).value == pytest.approx(T1_BILLED - ws.cell(t1, 2).value)   # variance on it
    assert ws.cell(t1, 17).value == "Committed"                   # the monthly tier's FOCUS category
    july = data["reconciliation"]["2026-07"]
    assert july["billed_total"] == pytest.approx(BILLED) and july["effective_total"] == pytest.approx(EFFECTIVE)
    assert july["gpu_billed"] + july["non_gpu_billed"] + july["commitment_billed"] == pytest.approx(BILLED)
    assert [(c["kind"], c["commitment_id"], c["billed"]) for c in july["commitments"]] == \
        [("unused", "ri-1", pytest.approx(1234.56)), ("purchase", "sp-9", pytest.approx(6000.0))]
    assert sum(r["billed"] for r in july["resources"]) == pytest.approx(T1_BILLED + 260.0)


def test_task_planned_committed_but_billed_on_demand_is_flagged(built):
    _, data = built
    flags = {r["resource_id"]: (r["flags"], r["pricing"]) for r in data["reconciliation"]["2026-07"]["resources"]}
    assert flags["i-bbb"] == (["off_plan_pricing"], "Standard")   # T1 planned monthly (Committed)
    assert flags["i-aaa"] == ([], "Committed")
    assert flags["i-ccc"] == ([], "Standard")                      # T2 planned on demand (Standard)


@pytest.mark.slow
def test_focus_tab_recalculates_to_its_cached_values(built):
    out, _ = built
    assert prove(out) == []   # every formula evaluated from the cells it reads
    recalculated = local_recalc(out)
    assert len([k for k in formula_cells(out) if k[0] == "RECON 2026-07"]) > 30
    ws = openpyxl.load_workbook(out, data_only=True)["Recon 2026-07"]
    flags = {ws.cell(r, 1).value: ws.cell(r, 10).value for r in range(1, ws.max_row + 1)}
    assert recalculated[("RECON 2026-07", f"J{_rows(ws)['i-bbb']}")] == flags["i-bbb"] == "off_plan_pricing"


@pytest.mark.slow
@pytest.mark.skipif(soffice_path() is None, reason="LibreOffice is not installed")
@pytest.mark.parametrize("built", ["csv"], indirect=True)   # the Parquet bill builds the same workbook
def test_libreoffice_recalculates_the_focus_tab_to_its_cached_values(built, tmp_path):
    out, _ = built
    cells = formula_cells(out)
    lo = {sheet.upper(): values for sheet, values in recalc_many([out], tmp_path)[out].items()}
    assert [(k, cells[k], lo[k[0]].get(k[1])) for k in cells if not same(lo[k[0]].get(k[1]), cells[k][1])] == []


@pytest.mark.parametrize("column, value, expected", [
    ("CommitmentDiscountStatus", "Partly", '"Partly" is not one of'),
    ("PricingCategory", "Spot", '"Spot" is not one of'),
    ("EffectiveCost", "n/a", '"n/a" is not a number'),
])
@pytest.mark.parametrize("kind", ["csv", "xlsx"])
def test_bad_focus_values_name_file_row_and_column(tmp_path, column, value, expected, kind):
    book = make_input(tmp_path / "in.xlsx", TASKS, settings={"period_months": 2})
    lines = [list(line) for line in LINES]
    lines[2][HEADER.index(column)] = value
    if kind == "csv":
        bill = tmp_path / "bill.csv"
        with bill.open("w", newline="") as fh:
            csv.writer(fh).writerows([HEADER, *lines])
        place = f"bill.csv!row 4 {column}"
    else:
        bill = tmp_path / "bill.xlsx"
        wb = openpyxl.Workbook()
        for line in [HEADER, *lines]:
            wb.active.append(line)
        wb.save(bill)
        place = f"bill.xlsx!{openpyxl.utils.get_column_letter(HEADER.index(column) + 1)}4 {column}"
    result = CliRunner().invoke(main, ["build", str(book), "-o", str(tmp_path / "o.xlsx"), "--bills", str(bill)])
    assert result.exit_code == 1
    assert f"Error: {place}: {expected}" in result.output
    assert not (tmp_path / "o.xlsx").exists()


def test_every_tier_carries_a_focus_pricing_category():
    from budgetgen.core.records import TIERS
    from budgetgen.recon.columns import PRICING_CATEGORIES

    assert {t.focus_category for t in TIERS} <= set(PRICING_CATEGORIES)
