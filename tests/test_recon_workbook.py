"""Reconciliation end to end: bills and usage in, Recon tabs, Checks and JSON out (§5, §6)."""

from __future__ import annotations

import csv
import datetime as dt
import json
import math

import openpyxl
import pandas as pd
import pytest
from click.testing import CliRunner
from conftest import formula_cells, make_input, prove, same
from lo_recalc import recalc_many, soffice_path

from budgetgen.cli import main
from budgetgen.io.reader import read_inputs
from budgetgen.plan.engine import plan_budget
from budgetgen.recon import (
    DEFAULT_GPU_LINE_PATTERN,
    OUTPUT_COLUMNS,
    aggregate_lines,
    plan_facts,
    plan_targets,
    read_bills,
    reconcile,
)
from budgetgen.workbook import write_workbook

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
     '{"task_id": "t1"}', "g5.xlarge on-demand"],                     # t1 is T1
    ["2026-07-02", 300, "i-ccc", "Amazon EC2", "Compute", "Usage", 100, "Hours", "USD", "NULL",
     "p4d.24xlarge on-demand"],
    ["2026-07-03", 80, "vol-1", "Amazon S3", "Storage", "Usage", 500, "GB-Mo", "USD", "NULL", "S3 standard"],
    ["2026-07-05", -20, "NULL", "Support", "Other", "Credit", "NULL", "NULL", "USD", "NULL", "promotional credit"],
    ["2026-07-06", 25, "i-wild", "Amazon EC2", "Compute", "Usage", 24.85, "Hours", "USD", '{"task_id": "T?9"}',
     "g5.xlarge on-demand"],                                          # no such task, and ? is no wildcard
    ["2026-07-31 23:00:00", 0, "i-aaa", "Amazon EC2", "Compute", "Usage", 0, "Hours", "USD", '{"task_id": "T1"}',
     "g5.xlarge on-demand"],                                          # the bill covers July to its last day
    ["2026-08-01", 40, "i-ddd", "Amazon EC2", "Compute", "Usage", 50, "Hours", "USD", "NULL", "g5.xlarge"],
]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The build's workbook and JSON; what it printed is kept beside them in printed.txt."""
    tmp = tmp_path_factory.mktemp("recon")
    book = make_input(tmp / "in.xlsx", TASKS, settings={"currency": "USD", "catalog_fx": FX, "period_months": 2},
                      extra_sheets={"Assignments": [["resource_id", "task_id"], ["i-ddd", "T2"]],
                                    "Usage": [["resource_id", "month", "gpu_util_pct", "mem_used_gb", "mem_total_gb",
                                               "oom_events"],
                                              ["i-aaa", "2026-07", 10, "5120 MiB", 24, 0],
                                              ["i-bbb", "2026-07", 50, 20, 24, 5]]})
    bill = tmp / "bill.csv"
    with bill.open("w", newline="") as fh:
        csv.writer(fh).writerows([HEADER, *LINES])
    smi = tmp / "i-ddd.csv"
    smi.write_text("timestamp, name, utilization.gpu [%], memory.used [MiB], memory.total [MiB]\n"
                   "2026/08/03 10:00:00.000, NVIDIA A10G, 4 %, 20500 MiB, 22888 MiB\n"
                   "2026/08/03 10:05:00.000, NVIDIA A10G, 6 %, 20700 MiB, 22888 MiB\n")
    stray = tmp / "usage.csv"    # nvidia-smi output under a name that is no resource
    stray.write_text(smi.read_text())
    out, js = tmp / "out.xlsx", tmp / "out.json"
    result = CliRunner().invoke(main, ["build", str(book), "-o", str(out), "--bills", str(bill), "--usage", str(smi),
                                       "--usage", str(stray), "--json", str(js)])
    assert result.exit_code == 0, result.output
    (tmp / "printed.txt").write_text(result.output)
    return out, json.loads(js.read_text())


def test_flags_exactly_as_expected(built):
    _, data = built
    july = {r["resource_id"]: r for r in data["reconciliation"]["2026-07"]["resources"]}
    august = {r["resource_id"]: r for r in data["reconciliation"]["2026-08"]["resources"]}
    assert july["i-aaa"]["flags"] == ["low_utilization", "over_plan"]   # 10% busy; T1 billed 30% over plan
    assert july["i-bbb"]["flags"] == ["oom", "over_plan"]               # 5 OOM events
    assert july["i-ccc"]["flags"] == ["untagged_gpu"] and july["i-ccc"]["task_id"] is None   # unassigned GPU
    assert july["i-wild"]["flags"] == ["over_plan"] and july["i-wild"]["task_id"] == "T?9"
    assert july["i-aaa"]["mem_peak_share"] == pytest.approx(5120 * 1048576 / 1e9 / 24)   # MiB in a GB column
    assert august["i-ddd"]["flags"] == ["low_utilization", "data_starved"]     # 5% busy, 90% memory
    assert august["i-ddd"]["task_id"] == "T2"
    assert august["i-ddd"]["mem_peak_share"] == pytest.approx(20700 / 22888)


def test_every_line_lands_somewhere(built):
    _, data = built
    for month, lines in (("2026-07", LINES[:7]), ("2026-08", LINES[7:])):
        r = data["reconciliation"][month]
        expected = sum(line[1] for line in lines)
        assert r["billed_total"] == pytest.approx(expected, abs=0.005)
        resources = sum(x["billed"] for x in r["resources"])
        assert resources + r["non_gpu_billed"] + r["credit_billed"] == pytest.approx(expected, abs=0.005)
        assert r["unallocated"] == pytest.approx(300 if month == "2026-07" else 0)
    july = data["reconciliation"]["2026-07"]
    t1 = next(t for t in july["tasks"] if t["task_id"] == "T1")
    assert t1["planned"] == pytest.approx(T1_PLANNED) and t1["variance"] == pytest.approx(0.3 * T1_PLANNED)
    assert july["non_gpu_billed"] == pytest.approx(80)   # storage 80; the credit -20 is apart
    assert july["credits"] == {"credit": -20.0, "refund": 0.0}


@pytest.mark.slow
def test_recon_tabs_recalculate_and_check(built):
    out, _ = built
    wb = openpyxl.load_workbook(out, data_only=True)
    assert {"Recon 2026-07", "Recon 2026-08"} <= set(wb.sheetnames)
    checks = wb["Checks"]
    labels = [checks.cell(r, 1).value for r in range(3, checks.max_row + 1)]
    assert sum("Recon" in (label or "") for label in labels) == 2
    assert checks["D2"].value is True
    cells = formula_cells(out)
    recon_cells = [k for k in cells if k[0].startswith("RECON")]
    assert len(recon_cells) > 20
    # every formula cell's cached value is its formula evaluated from its precedents' cached values (a whole
    # recalculation by `formulas` cost 23 s of the suite; LibreOffice recalculates the Recon tabs of the contract book
    # below, and every sheet of the sample in tests/test_libreoffice.py)
    assert prove(out) == []
    ws = wb["Recon 2026-07"]
    flags = {ws.cell(r, 1).value: ws.cell(r, 10).value for r in range(1, ws.max_row + 1)}
    assert flags["i-aaa"] == "low_utilization over_plan"
    assert flags["i-bbb"] == "oom over_plan"
    assert flags["i-wild"] == "over_plan"       # the T?9 task row matched literally after recalculation
    assert flags["i-ccc"] == "untagged_gpu"


def test_warnings_name_the_file_and_value(built):
    output = (built[0].parent / "printed.txt").read_text()
    assert 'bill.csv: task_id T?9 matches no task of the plan' in output
    assert "usage.csv: resource usage matches no billed ResourceId" in output
    assert "t1" not in output.split("Warning")[-1]      # t1 is T1: no warning
    assert "Recon 2026-07: GPU and commitments billed" in output and "total billed" in output


def test_usage_without_bills_is_read_and_warned(tmp_path):
    book = make_input(tmp_path / "in.xlsx", TASKS, settings={"currency": "USD", "catalog_fx": FX})
    smi = tmp_path / "i-aaa.csv"
    smi.write_text("timestamp, utilization.gpu [%], memory.used [MiB]\n2026/07/03 10:00:00.000, 4 %, 20500 MiB\n")
    result = CliRunner().invoke(main, ["build", str(book), "-o", str(tmp_path / "o.xlsx"), "--usage", str(smi)])
    assert result.exit_code == 0, result.output
    assert "usage i-aaa.csv given without a bill" in result.output
    smi.write_text("timestamp, utilization.gpu [%], memory.used [MiB]\n2026/07/03 10:00:00.000, busy, 2 G\n")
    result = CliRunner().invoke(main, ["build", str(book), "-o", str(tmp_path / "p.xlsx"), "--usage", str(smi)])
    assert result.exit_code == 1
    assert "i-aaa.csv" in result.output and '"busy" is not a number' in result.output and '"2 G"' in result.output
    assert not (tmp_path / "p.xlsx").exists()


def test_bill_in_another_currency_without_an_fx_row_converts_at_the_months_reference_rate(tmp_path):
    """The USD bill against the CNY plan, no FX row for USD: each month converts at the ECB reference rate of a day
    in that month (never the plan's ¥ on a USD amount); the JSON says which rate, and every total is the lines'
    USD total times it."""
    book = make_input(tmp_path / "in.xlsx", TASKS)   # CNY plan
    bill = tmp_path / "bill.csv"
    with bill.open("w", newline="") as fh:
        csv.writer(fh).writerows([HEADER, *LINES])
    out, js = tmp_path / "o.xlsx", tmp_path / "o.json"
    result = CliRunner().invoke(main, ["build", str(book), "-o", str(out), "--bills", str(bill), "--json", str(js)])
    assert result.exit_code == 0, result.output
    recon = json.loads(js.read_text())["reconciliation"]
    for month in ("2026-07", "2026-08"):
        (usd,) = recon[month]["currencies"]
        usd_lines = math.fsum(float(line[1]) for line in LINES if line[0][:7] == month)
        assert usd["currency"] == "USD" and usd["source"].startswith("ECB reference rate")
        assert usd["as_of"][:7] == month and 5 < usd["rate"] < 9   # a day of the month; CNY per USD
        assert usd["billed"] == pytest.approx(usd_lines)
        assert recon[month]["billed_total"] == pytest.approx(usd_lines * usd["rate"])


# The bill as the line-based reader hands it over, with its coverage and the duplicates it counted once: a
# storage volume tagged T1 is a non-GPU line; August is billed on its 1st only.
TAGGED_STORAGE = {"month": "2026-07", "billed_cost": 15.0, "resource_id": "vol-t1", "resource_name": "",
                  "service_name": "Amazon S3", "charge_category": "Usage", "consumed_quantity": 100.0,
                  "consumed_unit": "GB-Mo", "task_id": "T1", "is_gpu": False, "category": "storage"}
COVERAGE = {"2026-07": (dt.date(2026, 7, 1), dt.date(2026, 7, 31), 6), "2026-08": (dt.date(2026, 8, 1),
                                                                                 dt.date(2026, 8, 1), 1)}
DUPLICATES = {"2026-07": (1, 80.0)}


@pytest.fixture(scope="module")
def contract_book(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("contract")
    book = make_input(tmp / "in.xlsx", TASKS, settings={"currency": "USD", "catalog_fx": FX, "period_months": 2},
                      extra_sheets={"Assignments": [["resource_id", "task_id"], ["i-ddd", "T2"]]})
    plan = plan_budget(read_inputs(book))
    bill = tmp / "bill.csv"
    with bill.open("w", newline="") as fh:
        csv.writer(fh).writerows([HEADER, *LINES])
    bills = read_bills(bill, bill.name, "USD", DEFAULT_GPU_LINE_PATTERN, {"i-ddd": "T2"}, [])
    bills = pd.concat([bills, pd.DataFrame([TAGGED_STORAGE], columns=list(OUTPUT_COLUMNS), index=[99])])
    planned, buffers = plan_targets(plan)
    s = plan.inputs.settings
    recon = reconcile(aggregate_lines(bills), pd.DataFrame(), planned, buffers, s.low_util_threshold, s.oom_threshold,
                      s.variance_tolerance, COVERAGE, DUPLICATES, plan_facts(plan))
    billed = {m: math.fsum(g) for m, g in bills.groupby("month")["billed_cost"]}
    out = write_workbook(plan, tmp / "out.xlsx", recon=recon, billed_input=billed)
    values = openpyxl.load_workbook(out, data_only=True)
    return out, plan, values


def _rows(ws) -> dict[str, int]:
    """Column A's labels to their (first) row."""
    rows = {}
    for r in range(1, ws.max_row + 1):
        rows.setdefault(ws.cell(r, 1).value, r)
    return rows


def test_tagged_non_gpu_line_shows_under_its_task_not_as_gpu(contract_book):
    _, _, wb = contract_book
    ws = wb["Recon 2026-07"]
    t1 = _rows(ws)["T1"]
    assert ws.cell(t1, 3).value == pytest.approx(T1_PLANNED * 1.3)     # GPU billed: the two instances only
    assert ws.cell(t1, 7).value == 15.0                                # non-GPU billed under T1
    assert ws.cell(t1, 9).value == pytest.approx(ws.cell(t1, 8).value - 15.0)   # its buffer share left
    assert ws.cell(t1, 6).value == "over plan"


def test_partial_month_and_like_for_like(contract_book):
    _, plan, wb = contract_book
    july, august = wb["Recon 2026-07"], wb["Recon 2026-08"]
    rows = _rows(august)
    assert august.cell(rows["partial month"], 2).value is True
    assert august.cell(rows["T2"], 6).value == "partial month"
    assert july.cell(_rows(july)["partial month"], 2).value is False
    assert july.cell(_rows(july)["days with lines"], 2).value == 6
    assert july.cell(_rows(july)["duplicate lines counted once"], 2).value == 1
    like = _rows(july)
    gpu_billed = T1_PLANNED * 1.3 + 300 + 25
    non_gpu_billed = 80 + 15
    credits = -20
    month = plan.month_totals["2026-07"]
    assert july.cell(like["GPU and commitments"], 2).value == pytest.approx(month.gpu + month.commitments)
    assert july.cell(like["GPU and commitments"], 3).value == pytest.approx(gpu_billed)
    assert july.cell(like["non-GPU (extras + buffer)"], 2).value == pytest.approx(month.extras + month.buffer)
    assert july.cell(like["non-GPU (extras + buffer)"], 3).value == pytest.approx(non_gpu_billed)
    assert (july.cell(like["credits and refunds"], 2).value, july.cell(like["credits and refunds"], 3).value) == \
        (0, pytest.approx(credits))
    assert july.cell(like["total"], 2).value == pytest.approx(month.total)
    assert july.cell(like["total"], 4).value == pytest.approx(gpu_billed + non_gpu_billed + credits - month.total)


def test_reforecast_on_summary(contract_book):
    _, plan, wb = contract_book
    ws = wb["Summary"]
    rows = _rows(ws)
    july_billed = T1_PLANNED * 1.3 + 300 + 80 - 20 + 25 + 15
    august_plan = plan.month_totals["2026-08"].total
    # July is billed in full: the bill. August is billed in part (40 on the 1st): the larger of bill and plan.
    eac = july_billed + max(40.0, august_plan)
    assert ws.cell(rows["estimate at completion"], 2).value == pytest.approx(eac)
    assert ws.cell(rows["budget"], 2).value == pytest.approx(plan.period_total)
    assert ws.cell(rows["variance at completion"], 2).value == pytest.approx(eac - plan.period_total)


@pytest.mark.slow
def test_contract_book_recalculates_in_formulas_and_libreoffice(contract_book, tmp_path):
    out, _, _ = contract_book
    cells = formula_cells(out)
    assert prove(out) == []
    if soffice_path() is None:
        pytest.skip("LibreOffice (soffice) not installed")
    lo = {sheet.upper(): values for sheet, values in recalc_many([out], tmp_path)[out].items()}
    assert [(k, cells[k], lo[k[0]].get(k[1])) for k in cells if not same(lo[k[0]].get(k[1]), cells[k][1])] == []
    assert lo["CHECKS"]["D2"] is True
