"""Money to act on, end to end: idle replicas and an untagged GPU as savings, Extras reconciled by category,
credits apart, the tab listing the top resources by money and the month's Resources sheet the others. One July
bill built through the CLI; the Recon tab's and Resources sheet's formulas recalculated by `formulas`."""

from __future__ import annotations

import csv
import json

import openpyxl
import pytest
from click.testing import CliRunner
from conftest import make_input
from formula_proof import proof_of

from budgetgen.cli import main

pytestmark = [pytest.mark.filterwarnings("error"), pytest.mark.xdist_group("recon_savings")]

FX = 0.14
# The RAG service: two RTX 4090 replicas on monthly rent (2 x 3000 CNY = 840 USD a month).
TASKS = [{"task_id": "RAG", "kind": "inference", "model_params_b": 7, "method": "int4", "requests_per_day": 10000,
          "tokens_per_request": 500, "tokens_per_sec": 100, "serving_hours_per_day": 8, "gpu": "RTX 4090",
          "tier": "monthly"}]
VECTOR_DB = 150.0   # planned as an Extra under storage
EXTRAS = [{"item": "Vector database", "category": "storage", "monthly_cost": VECTOR_DB}]
HEADER = ["ChargePeriodStart", "BilledCost", "ResourceId", "ServiceName", "ServiceCategory", "ChargeCategory",
          "ConsumedQuantity", "ConsumedUnit", "BillingCurrency", "Tags", "ChargeDescription"]
LINES = [
    ["2026-07-01", 300.00, "i-rep1", "Amazon EC2", "Compute", "Usage", 720, "Hours", "USD", '{"task_id": "RAG"}',
     "g6e.xlarge on-demand"],
    ["2026-07-01", 280.00, "i-rep2", "Amazon EC2", "Compute", "Usage", 700, "Hours", "USD", '{"task_id": "RAG"}',
     "g6e.xlarge on-demand"],
    ["2026-07-02", 412.00, "i-lost", "Amazon EC2", "Compute", "Usage", 400, "Hours", "USD", "",
     "g5.xlarge on-demand"],                                               # no task: untagged GPU
    ["2026-07-31", VECTOR_DB, "vec-1", "Vector DB", "Storage", "Usage", 200, "GB-Mo", "USD", '{"task_id": "RAG"}',
     "vector database storage"],
    ["2026-07-31", -25.00, "", "Amazon EC2", "Compute", "Credit", "", "", "USD", "", "promotional credit"],
]
USAGE = [["resource_id", "month", "gpu_util_pct", "mem_used_gb", "mem_total_gb"],
         ["i-rep1", "2026-07", 9, 10, 24], ["i-rep2", "2026-07", 12, 10, 24], ["i-lost", "2026-07", 3, 2, 24]]

# Worked by hand: each replica holds one of the task's two cards (2 cards / 2 resources).
REP1_SAVING = 300.00 * (100 - 9) / 100     # 0.91 of a card idle: 273.00
REP2_SAVING = 280.00 * (100 - 12) / 100    # 0.88 idle: 246.40
LOST_IDLE = 412.00 * (100 - 3) / 100       # 399.64, inside its whole bill, which is to attribute or stop
ACHIEVABLE = REP1_SAVING + REP2_SAVING + 412.00   # 931.40: each resource counted once


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out, js = _build(tmp_path_factory.mktemp("savings"), top=2)
    return out, json.loads(js.read_text()), openpyxl.load_workbook(out, data_only=True)


def _build(folder, top: int):
    """The month's plan, bill and usage built in `folder` with `recon_top_resources` `top`: the workbook, the JSON."""
    book = make_input(folder / "in.xlsx", TASKS, settings={"currency": "USD", "catalog_fx": FX, "period_months": 2,
                                                           "recon_top_resources": top},
                      extras=EXTRAS, extra_sheets={"Usage": USAGE})
    bill = folder / "bill.csv"
    with bill.open("w", newline="") as fh:
        csv.writer(fh).writerows([HEADER, *LINES])
    out, js = folder / "out.xlsx", folder / "out.json"
    result = CliRunner().invoke(main, ["build", str(book), "-o", str(out), "--bills", str(bill), "--json", str(js)])
    assert result.exit_code == 0, result.output
    return out, js


def _rows(ws) -> dict:
    return {ws.cell(r, 1).value: r for r in range(1, ws.max_row + 1) if ws.cell(r, 1).value is not None}


def test_idle_replicas_and_untagged_gpu_are_savings(built):
    _, data, wb = built
    july = data["reconciliation"]["2026-07"]
    by_id = {r["resource_id"]: r for r in july["resources"]}
    assert [(by_id[r]["cards"], by_id[r]["idle_cards"]) for r in ("i-rep1", "i-rep2", "i-lost")] == [
        (1, pytest.approx(0.91)), (1, pytest.approx(0.88)), (1, pytest.approx(0.97))]
    assert by_id["i-rep1"]["saving"] == pytest.approx(REP1_SAVING)
    assert by_id["i-rep2"]["saving"] == pytest.approx(REP2_SAVING)
    assert (by_id["i-lost"]["saving"], by_id["i-lost"]["to_attribute"]) == (pytest.approx(LOST_IDLE), 412.0)
    assert july["idle_saving"] == pytest.approx(REP1_SAVING + REP2_SAVING)
    assert july["achievable_saving"] == pytest.approx(ACHIEVABLE) != 0
    ws, rows = wb["Recon 2026-07"], _rows(wb["Recon 2026-07"])
    assert ws.cell(rows["i-rep1"], 14).value == pytest.approx(273.00)
    assert ws.cell(rows["i-lost"], 16).value == pytest.approx(412.00)
    assert ws.cell(rows["achievable saving"], 2).value == pytest.approx(931.40)
    summary = wb["Summary"]
    line = _rows(summary)["achievable saving, bill of 2026-07"]
    assert summary.cell(line, 2).value == pytest.approx(931.40)


def test_planned_extra_uses_its_category_not_the_buffer(built):
    _, data, wb = built
    july = data["reconciliation"]["2026-07"]
    assert july["non_gpu"]["storage"] == VECTOR_DB
    assert july["non_gpu_planned"]["storage"] == VECTOR_DB
    assert july["non_gpu_not_planned"] == 0.0
    assert july["buffer_left"] == pytest.approx(july["buffer_reserved"]) != 0   # the buffer untouched
    ws, rows = wb["Recon 2026-07"], _rows(wb["Recon 2026-07"])
    storage = rows["storage"]
    assert [ws.cell(storage, c).value for c in (2, 3, 4)] == [VECTOR_DB, VECTOR_DB, 0]
    assert ws.cell(rows["buffer left"], 2).value == pytest.approx(ws.cell(rows["hidden-cost buffer reserved"], 2).value)


def test_credit_shows_as_a_credit(built):
    _, data, wb = built
    july = data["reconciliation"]["2026-07"]
    assert july["credits"] == {"credit": -25.0, "refund": 0.0}
    assert july["non_gpu_billed"] == VECTOR_DB                     # not netted into any usage
    assert july["gpu_billed"] == pytest.approx(300 + 280 + 412)
    assert july["billed_total"] == pytest.approx(300 + 280 + 412 + 150 - 25)
    ws, rows = wb["Recon 2026-07"], _rows(wb["Recon 2026-07"])
    assert ws.cell(rows["credits"], 2).value == -25.0
    assert ws.cell(rows["credits and refunds"], 3).value == -25.0


def test_top_resources_by_money_on_the_tab_the_rest_on_the_resources_sheet(built):
    _, _, wb = built
    ws, rows = wb["Recon 2026-07"], _rows(wb["Recon 2026-07"])
    header = rows["resource"]
    # recon_top_resources = 2: i-lost (412 to attribute or stop), then i-rep1 (273.00 saving); i-rep2 (246.40) is
    # summed in one line and listed on the Resources sheet.
    assert [ws.cell(header + i, 1).value for i in (1, 2)] == ["i-lost", "i-rep1"]
    rest = header + 3
    assert ws.cell(rest, 1).value == "1 more resources, listed on Resources 2026-07"
    assert (ws.cell(rest, 5).value, ws.cell(rest, 14).value) == (280.0, pytest.approx(246.40))
    detail = wb["Resources 2026-07"]
    assert [detail.cell(3, c).value for c in (1, 2, 10, 12)] == ["i-rep2", "RAG", "low_utilization", 1]
    assert detail.cell(3, 14).value == pytest.approx(REP2_SAVING)
    # The totals still count every resource once.
    assert ws.cell(rows["GPU billed to tasks"], 2).value == pytest.approx(300 + 280)
    assert ws.cell(rows["saving from idle cards"], 2).value == pytest.approx(REP1_SAVING + REP2_SAVING)


@pytest.mark.slow
def test_recon_tab_formulas_recalculate_to_the_same_money(built):
    out, _, _ = built
    proof = proof_of(out)
    cells = [c for c in proof.formulas if c[0] in ("RECON 2026-07", "RESOURCES 2026-07")]
    assert len(cells) > 50 and any(c[0] == "RESOURCES 2026-07" for c in cells)
    assert proof.mismatches() == []


def test_past_the_sheet_size_the_rest_goes_to_a_csv_beside_the_workbook(tmp_path, monkeypatch):
    from budgetgen.workbook import layout

    monkeypatch.setattr(layout, "RESOURCES_SHEET_MAX", 0)   # every resource beyond the top one goes to the CSV
    out, _ = _build(tmp_path, top=1)
    wb = openpyxl.load_workbook(out, data_only=True)
    assert "Resources 2026-07" not in wb.sheetnames
    ws, rows = wb["Recon 2026-07"], _rows(wb["Recon 2026-07"])
    # The tab lists i-lost (412 at stake); the replicas are summed as tasks' resources, nothing is untagged.
    assert ws.cell(rows["resource"] + 1, 1).value == "i-lost"
    tasks_line = rows["2 more resources of tasks, listed in out Resources 2026-07.csv"]
    untagged_line = rows["0 more untagged resources, listed in out Resources 2026-07.csv"]
    assert [ws.cell(tasks_line, c).value for c in (2, 5, 14)] == ["*", 300 + 280, pytest.approx(273.00 + 246.40)]
    assert ws.cell(untagged_line, 5).value == 0
    assert ws.cell(rows["GPU billed to tasks"], 2).value == pytest.approx(580.0)
    assert ws.cell(rows["unallocated GPU"], 2).value == pytest.approx(412.0)
    assert ws.cell(rows["achievable saving"], 2).value == pytest.approx(ACHIEVABLE)
    with (tmp_path / "out Resources 2026-07.csv").open(newline="") as fh:
        listed = list(csv.DictReader(fh))
    assert [(r["resource_id"], r["task_id"], float(r["saving"])) for r in listed] == [
        ("i-rep1", "RAG", pytest.approx(REP1_SAVING)), ("i-rep2", "RAG", pytest.approx(REP2_SAVING))]
