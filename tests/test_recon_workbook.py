"""Reconciliation end to end: bills and usage in, Recon tabs, Checks and JSON out (§5, §6)."""

from __future__ import annotations

import csv
import json

import openpyxl
import pytest
from click.testing import CliRunner
from conftest import formula_cells, make_input, recalc_formulas, same

from budgetgen.cli import main

FX = 0.14
TASKS = [
    {"task_id": "T1", "kind": "inference", "model_params_b": 7, "method": "int4", "requests_per_day": 10000,
     "tokens_per_request": 500, "tokens_per_sec": 100, "serving_hours_per_day": 8, "gpu": "RTX 4090",
     "tier": "monthly"},
    {"task_id": "T2", "kind": "finetune", "model_params_b": 7, "method": "lora", "train_tokens": "180M", "epochs": 1.5,
     "gpu": "A100 80G", "tier": "on_demand"},   # 1.5 epochs at 4 LoRA FLOPs a token: 29 GPU-hours, 48.6 USD planned
]
T1_PLANNED = 2 * 3000 * FX          # two RTX 4090 on monthly rent, converted from CNY: 840 USD
HEADER = ["ChargePeriodStart", "BilledCost", "ResourceId", "ServiceName", "ServiceCategory", "ChargeCategory",
          "ConsumedQuantity", "ConsumedUnit", "BillingCurrency", "Tags", "ChargeDescription"]
LINES = [
    ["2026-07-01T00:00:00Z", T1_PLANNED * 1.3 / 2, "i-aaa", "Amazon EC2", "Compute", "Usage", 730, "Hours", "USD",
     '{"task_id": "T1"}', "g5.xlarge on-demand"],
    ["2026-07-01 00:00:00", T1_PLANNED * 1.3 / 2, "i-bbb", "Amazon EC2", "Compute", "Usage", 730, "Hours", "USD",
     '{"task_id": "T1"}', "g5.xlarge on-demand"],
    ["2026-07-02", 300, "i-ccc", "Amazon EC2", "Compute", "Usage", 100, "Hours", "USD", "NULL",
     "p4d.24xlarge on-demand"],
    ["2026-07-03", 80, "vol-1", "Amazon S3", "Storage", "Usage", 500, "GB-Mo", "USD", "NULL", "S3 standard"],
    ["2026-07-05", -20, "NULL", "Support", "Other", "Credit", "NULL", "NULL", "USD", "NULL", "promotional credit"],
    ["2026-08-01", 40, "i-ddd", "Amazon EC2", "Compute", "Usage", 50, "Hours", "USD", "NULL", "g5.xlarge"],
]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("recon")
    book = make_input(tmp / "in.xlsx", TASKS, settings={"currency": "USD", "catalog_fx": FX, "period_months": 2},
                      extra_sheets={"Assignments": [["resource_id", "task_id"], ["i-ddd", "T2"]],
                                    "Usage": [["resource_id", "month", "gpu_util_pct", "mem_used_gb", "mem_total_gb",
                                               "oom_events"],
                                              ["i-aaa", "2026-07", 10, 5, 24, 0],
                                              ["i-bbb", "2026-07", 50, 20, 24, 5]]})
    bill = tmp / "bill.csv"
    with bill.open("w", newline="") as fh:
        csv.writer(fh).writerows([HEADER, *LINES])
    smi = tmp / "i-ddd.csv"
    smi.write_text("timestamp, name, utilization.gpu [%], memory.used [MiB], memory.total [MiB]\n"
                   "2026/08/03 10:00:00.000, NVIDIA A10G, 4 %, 20500 MiB, 22888 MiB\n"
                   "2026/08/03 10:05:00.000, NVIDIA A10G, 6 %, 20700 MiB, 22888 MiB\n")
    out, js = tmp / "out.xlsx", tmp / "out.json"
    result = CliRunner().invoke(main, ["build", str(book), "-o", str(out), "--bills", str(bill), "--usage", str(smi),
                                       "--json", str(js)])
    assert result.exit_code == 0, result.output
    return out, json.loads(js.read_text())


def test_flags_exactly_as_expected(built):
    _, data = built
    july = {r["resource_id"]: r for r in data["reconciliation"]["2026-07"]["resources"]}
    august = {r["resource_id"]: r for r in data["reconciliation"]["2026-08"]["resources"]}
    assert july["i-aaa"]["flags"] == ["low_utilization", "over_plan"]   # 10% busy; T1 billed 30% over plan
    assert july["i-bbb"]["flags"] == ["oom", "over_plan"]               # 5 OOM events
    assert july["i-ccc"]["flags"] == [] and july["i-ccc"]["task_id"] is None   # unassigned GPU instance
    assert august["i-ddd"]["flags"] == ["low_utilization", "data_starved"]     # 5% busy, 90% memory
    assert august["i-ddd"]["task_id"] == "T2"
    assert august["i-ddd"]["mem_peak_share"] == pytest.approx(20700 / 22888)


def test_every_line_lands_somewhere(built):
    _, data = built
    for month, lines in (("2026-07", LINES[:5]), ("2026-08", LINES[5:])):
        r = data["reconciliation"][month]
        expected = sum(line[1] for line in lines)
        assert r["billed_total"] == pytest.approx(expected, abs=0.005)
        resources = sum(x["billed"] for x in r["resources"])
        assert resources + r["non_gpu_billed"] == pytest.approx(expected, abs=0.005)
        assert r["unallocated"] == pytest.approx(300 if month == "2026-07" else 0)
    july = data["reconciliation"]["2026-07"]
    t1 = next(t for t in july["tasks"] if t["task_id"] == "T1")
    assert t1["planned"] == pytest.approx(T1_PLANNED) and t1["variance"] == pytest.approx(0.3 * T1_PLANNED)
    assert july["non_gpu_billed"] == pytest.approx(60)   # storage 80, credit -20


def test_recon_tabs_recalculate_and_check(built):
    out, _ = built
    wb = openpyxl.load_workbook(out, data_only=True)
    assert {"Recon 2026-07", "Recon 2026-08"} <= set(wb.sheetnames)
    checks = wb["Checks"]
    labels = [checks.cell(r, 1).value for r in range(3, checks.max_row + 1)]
    assert sum("Recon" in (label or "") for label in labels) == 2
    assert checks["D2"].value is True
    cells = formula_cells(out)
    recalculated = recalc_formulas(out)
    recon_cells = [k for k in cells if k[0].startswith("RECON")]
    assert len(recon_cells) > 20
    assert [(k, cells[k]) for k in cells if not same(recalculated.get(k), cells[k][1])] == []
    ws = wb["Recon 2026-07"]
    flags = {ws.cell(r, 1).value: ws.cell(r, 10).value for r in range(1, ws.max_row + 1)}
    assert flags["i-aaa"] == "low_utilization over_plan"
    assert flags["i-bbb"] == "oom over_plan"


def test_bill_in_another_currency_is_an_error(tmp_path):
    book = make_input(tmp_path / "in.xlsx", TASKS)   # CNY plan
    bill = tmp_path / "bill.csv"
    with bill.open("w", newline="") as fh:
        csv.writer(fh).writerows([HEADER, *LINES])
    result = CliRunner().invoke(main, ["build", str(book), "-o", str(tmp_path / "o.xlsx"), "--bills", str(bill)])
    assert result.exit_code == 1
    assert "bill.csv" in result.output and "never converts" in result.output
    assert not (tmp_path / "o.xlsx").exists()
