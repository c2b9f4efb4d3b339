"""Every total agrees everywhere (issue 30): on a plan with commitments and a bill with a reservation fee, the
command line's month lines, Summary, the Recon tab and the JSON give the same totals to the cent, the commitments
and the reservation fee on both sides; Summary's scenario selector gives each scenario's printed total, with every
check passing, in `formulas` and in LibreOffice.

The plan, worked out by hand (USD, 12 months from 2026-07):
- SVC: a service measured at 2,000 output tokens/s a replica, 200 tokens a request: 10 requests/s, 864,000 a day
  around the clock; 6,912,000 requests a day need 8 one-card H100 replicas, typed at 2.00 an hour on demand:
  8 x 730 h = 5,840 GPU-hours, 11,680.00 a month.
- One-year reservation at 2.00 x (1 - 20%) = 1.60: a card busy all 12 months (100% >= the 80% break-even) is
  committed, so 8 cards, 8 x 730 x 1.60 = 9,344.00 a month; they cover the 5,840 hours and displace the whole rent:
  commitments -2,336.00 a month. (Three years: busy 12 of 36 months, under its break-even: none.)
- Extras 1,000.00; buffer 25% x (11,680 - 2,336) = 2,336.00; month total 12,680.00; period total 152,160.00.

Scenarios (requests x 0.5 / 1 / 1.5, buffer 20% / 25% / 30%), the 8 committed cards kept (Commitments' input):
- high: 12 replicas, rent 17,520; the 8 cards cover 5,840 of 8,760 hours, displacing 11,680: commitments -2,336;
  15,184 + 1,000 + 30% x 15,184 (4,555.20) = 20,739.20 a month, 248,870.40 over the plan.
- low: 4 replicas, rent 5,840 for 2,920 hours, all covered: commitments 9,344 - 5,840 = +3,504 (the unused half of
  the reservation); 9,344 + 1,000 + 20% x 9,344 (1,868.80) = 12,212.80 a month, 146,553.60 over the plan.

The bill, July 2026: SVC's reserved card-hours (BilledCost 0.00), the reservation's monthly fee (ChargeCategory
Purchase, 9,344.00), one more SVC card on demand (1,460.00), storage 1,050.00: billed 11,854.00; GPU and
commitments billed 0 + 1,460 + 9,344 = 10,804.00 against 9,344.00 planned.
"""

from __future__ import annotations

import csv
import json
import re
import shutil

import openpyxl
import pytest
from click.testing import CliRunner
from conftest import local_recalc, make_input
from lo_recalc import recalc_many, soffice_path

from budgetgen.cli import main

pytestmark = pytest.mark.xdist_group("totals")   # one worker compiles the workbook's formulas once

MONTHS = ["2026-07", "2026-08", "2026-09", "2026-10", "2026-11", "2026-12", "2027-01", "2027-02", "2027-03", "2027-04",
          "2027-05", "2027-06"]
GPU, COMMITMENTS, EXTRAS, BUFFER, TOTAL = 11_680.00, -2_336.00, 1_000.00, 2_336.00, 12_680.00
PERIOD = 12 * TOTAL   # 152,160.00
SCENARIO_TOTALS = {"low": 12 * 12_212.80, "base": PERIOD, "high": 12 * 20_739.20}
BILLED, BILLED_GPU_ALL, PLANNED_GPU_ALL = 11_854.00, 10_804.00, 9_344.00

H100 = {"gpu": "H100 80G", "on_demand_per_hour": 2.0, "provider": "quote", "currency": "USD", "source": "test quote",
        "as_of": "2026-06-01"}
SVC = {"task_id": "SVC", "kind": "inference", "model_params_b": "7B", "requests_per_day": 8 * 864_000,
       "tokens_per_request": 200, "tokens_per_sec": 2000, "cards": 1, "gpu": "H100 80G", "tier": "on_demand",
       "serving_hours_per_day": 24}
SCENARIOS = [["driver", "low", "base", "high"], ["requests", 0.5, 1, 1.5], ["buffer", 0.20, 0.25, 0.30]]
HEADER = ["ChargePeriodStart", "BilledCost", "EffectiveCost", "BillingCurrency", "ResourceId", "ChargeDescription",
          "ServiceName", "ServiceCategory", "ChargeCategory", "ConsumedQuantity", "ConsumedUnit", "Tags",
          "CommitmentDiscountId", "CommitmentDiscountStatus", "CommitmentDiscountType", "PricingCategory"]
TAG = '{"task_id": "SVC"}'
LINES = [
    ["2026-07-01", 0.00, 9344.00, "USD", "i-res", "H100 gpu instance hour, reserved", "GPU Cloud", "Compute", "Usage",
     5840, "Hours", TAG, "ri-1", "Used", "Reserved Instance", "Committed"],
    ["2026-07-01", 9344.00, 0.00, "USD", "", "H100 reservation monthly fee", "GPU Cloud", "Compute", "Purchase", 1,
     "Commitment", "", "ri-1", "", "Reserved Instance", "Committed"],
    ["2026-07-01", 1460.00, 1460.00, "USD", "i-od", "H100 gpu instance hour", "GPU Cloud", "Compute", "Usage", 730,
     "Hours", TAG, "", "", "", "Standard"],
    ["2026-07-31", 1050.00, 1050.00, "USD", "vol-1", "object storage", "Storage", "Storage", "Usage", 500, "GB-Mo", "",
     "", "", "", "Standard"],
]
SELECTOR = "B4"   # Summary: the named cell Scenario


@pytest.fixture(scope="module")
def year(tmp_path_factory):
    """The plan built with the bill on the command line: its output, the workbook and the JSON."""
    folder = tmp_path_factory.mktemp("totals")
    book = make_input(folder / "in.xlsx", [SVC], gpus=[H100],
                      settings={"currency": "USD", "period_months": 12, "build_date": "2026-06-15"},
                      extras=[{"item": "storage", "category": "storage", "monthly_cost": EXTRAS}],
                      extra_sheets={"Scenarios": SCENARIOS})
    bill = folder / "bill.csv"
    with bill.open("w", newline="") as fh:
        csv.writer(fh).writerows([HEADER, *LINES])
    out, js = folder / "out.xlsx", folder / "out.json"
    result = CliRunner().invoke(main, ["build", str(book), "-o", str(out), "--bills", str(bill), "--json", str(js),
                                       "-q"])
    assert result.exit_code == 0, result.output
    return result.output, out, json.loads(js.read_text())


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def _labels(ws, col: int = 1) -> dict[str, int]:
    rows = {}
    for r in range(1, ws.max_row + 1):
        rows.setdefault(ws.cell(r, col).value, r)
    return rows


def test_the_month_lines_add_up_to_the_cent_with_the_commitments(year):
    output, _, _ = year
    line = re.compile(r"  (\d{4}-\d\d): GPU ([-\d,.]+) \+ commitments ([-\d,.]+) \+ extras ([-\d,.]+) \+ buffer "
                      r"([-\d,.]+) = ([-\d,.]+) USD$")
    found = [m.groups() for m in map(line.match, output.splitlines()) if m]
    assert [month for month, *_ in found] == MONTHS
    for _, *parts in found:
        assert [_number(p) for p in parts] == [GPU, COMMITMENTS, EXTRAS, BUFFER, TOTAL]
    assert f"Period total 2026-07 to 2027-06: {PERIOD:,.2f} USD" in output


def test_summary_recon_and_json_give_the_month_total_the_cli_prints(year):
    _, out, results = year
    summary = openpyxl.load_workbook(out, data_only=True)["Summary"]
    july = _labels(summary)["2026-07"]
    assert [summary.cell(july, c).value for c in range(2, 7)] == pytest.approx([GPU, COMMITMENTS, EXTRAS, BUFFER, TOTAL],
                                                                               abs=0.005)
    assert summary["B3"].value == pytest.approx(PERIOD, abs=0.005)
    assert results["month_totals"]["2026-07"] == pytest.approx(
        {"gpu": GPU, "commitments": COMMITMENTS, "extras": EXTRAS, "buffer": BUFFER, "total": TOTAL}, abs=0.005)
    assert results["period_total"] == pytest.approx(PERIOD, abs=0.005)
    recon = openpyxl.load_workbook(out, data_only=True)["Recon 2026-07"]
    rows = _labels(recon)
    assert recon.cell(rows["commitments planned (Commitments)"], 2).value == pytest.approx(COMMITMENTS, abs=0.005)
    assert recon.cell(rows["GPU and commitments"], 2).value == pytest.approx(PLANNED_GPU_ALL, abs=0.005)
    assert recon.cell(rows["total"], 2).value == pytest.approx(TOTAL, abs=0.005)   # the like-for-like total
    july_recon = results["reconciliation"]["2026-07"]
    assert (july_recon["planned_commitments"], july_recon["planned_gpu_all"], july_recon["planned_all"]) == \
        pytest.approx((COMMITMENTS, PLANNED_GPU_ALL, TOTAL), abs=0.005)


def test_the_json_order_is_what_procurement_buys_and_totals_the_plan(year):
    """The JSON carries the Order (compute once, render twice): quote's block reserves the committed cards and rents
    the rest. By hand: the GPU total is 12 x (11,680 - 2,336) = 112,128, with 12 x 1,000 extras and 12 x 2,336
    buffer the plan total 152,160; the block's subtotal is its reservations' and rent lines' totals."""
    _, _, results = year
    order = results["order"]
    assert order["gpu_total"] == pytest.approx(12 * (GPU + COMMITMENTS), abs=0.005)
    assert (order["extras"], order["buffer"]) == pytest.approx((12 * EXTRAS, 12 * BUFFER), abs=0.005)
    assert order["plan_total"] == pytest.approx(PERIOD, abs=0.005)
    (block,) = order["providers"]
    assert block["provider"] == "quote" and block["reserve"] and block["rent"]
    assert block["subtotal"] == pytest.approx(sum(x["total"] for x in block["reserve"] + block["rent"]))
    assert results["budgets"] == []   # no Budgets sheet


def test_the_json_checks_pass_with_the_commitments_and_the_bill(year):
    """The JSON's checks (the Checks sheet's rows, computed once from the plan) hold the totals worked out by hand:
    the task x month matrix 12 x 11,680 = 140,160 GPU, the Order's GPU total 12 x (11,680 - 2,336) = 112,128, the
    commitments' adjustment 12 x -2,336 = -28,032, and the July Recon tab's billed total 11,854 against the bill's
    BilledCost; every check passes and the sheet shows the same values."""
    _, out, results = year
    checks = {(c["sheet"], c["label"]): c for c in results["checks"]}
    expected = {(None, "task x month matrix = Summary GPU total"): (12 * GPU, 12 * GPU),
                (None, "Order GPU total = Summary GPU + commitments total"): (12 * (GPU + COMMITMENTS),) * 2,
                (None, "Order plan total = Summary period total"): (PERIOD, PERIOD),
                (None, "Commitments sheet adjustment = Summary commitments total"): (12 * COMMITMENTS,) * 2,
                (None, "buffer = rate x (GPU + commitments) total"): (12 * BUFFER,) * 2,
                ("Recon 2026-07", "billed total = BilledCost of the month"): (BILLED, BILLED)}
    for key, (computed, wanted) in expected.items():
        assert (checks[key]["computed"], checks[key]["expected"]) == pytest.approx((computed, wanted), abs=0.005), key
        assert checks[key]["currency"] == "USD"
    assert all(c["passes"] for c in results["checks"])
    ws = openpyxl.load_workbook(out, data_only=True)["Checks"]
    shown = [(ws.cell(r, 2).value, ws.cell(r, 3).value, ws.cell(r, 4).value) for r in range(3, ws.max_row + 1)]
    assert shown == [(pytest.approx(c["computed"]), pytest.approx(c["expected"]), True) for c in results["checks"]]


def test_the_reservation_fee_is_billed_against_the_commitments_planned(year):
    output, out, results = year
    assert (f"Recon 2026-07: GPU and commitments billed {BILLED_GPU_ALL:,.2f} USD against planned "
            f"{PLANNED_GPU_ALL:,.2f} USD; total billed {BILLED:,.2f} USD against planned {TOTAL:,.2f} USD") in output
    recon = openpyxl.load_workbook(out, data_only=True)["Recon 2026-07"]
    rows = _labels(recon)
    assert recon.cell(rows["GPU and commitments"], 3).value == pytest.approx(BILLED_GPU_ALL, abs=0.005)
    assert recon.cell(rows["total"], 3).value == pytest.approx(BILLED, abs=0.005)
    assert results["reconciliation"]["2026-07"]["billed_gpu_all"] == pytest.approx(BILLED_GPU_ALL, abs=0.005)


def _printed_totals(out) -> dict[str, float]:
    """The period total of each scenario as the Scenarios sheet prints it (values the build computed)."""
    ws = openpyxl.load_workbook(out, data_only=True)["Scenarios"]
    header = next(r for r in range(1, ws.max_row + 1) if ws.cell(r, 1).value == "scenario")
    return {ws.cell(r, 1).value: ws.cell(r, 2).value for r in range(header + 1, header + 4)}


def test_the_scenarios_printed_totals_keep_the_committed_cards(year):
    _, out, results = year
    assert _printed_totals(out) == pytest.approx(SCENARIO_TOTALS, abs=0.005)
    assert results["scenarios"]["totals"] == pytest.approx(SCENARIO_TOTALS, abs=0.005)


@pytest.mark.slow
@pytest.mark.parametrize("level", ["high", "low", "base"])
def test_the_selector_gives_the_printed_total_and_every_check_passes_in_formulas(year, level):
    """Each formula the selector reaches re-evaluated by `formulas` from its precedents (formula_proof.local_recalc;
    its agreement with a whole recalculation is checked in test_formula_proof and on one small plan per feature);
    the LibreOffice test below recalculates the whole workbook."""
    _, out, _ = year
    values = local_recalc(out, {f"Summary!{SELECTOR}": level})
    assert values[("SUMMARY", "B3")] == pytest.approx(SCENARIO_TOTALS[level], abs=0.005)
    assert values[("SUMMARY", "B3")] == pytest.approx(_printed_totals(out)[level], abs=0.005)   # live = printed
    checks = openpyxl.load_workbook(out)["Checks"]
    failing = [checks.cell(r, 1).value for r in range(3, checks.max_row + 1) if values[("CHECKS", f"D{r}")] is not True]
    assert failing == [] and values[("CHECKS", "D2")] is True
    assert values[("SUMMARY", "A2")] == "All checks pass"


@pytest.mark.slow
@pytest.mark.skipif(soffice_path() is None, reason="LibreOffice is not installed")
def test_the_selector_gives_the_printed_total_and_every_check_passes_in_libreoffice(year, tmp_path):
    _, out, _ = year
    books = {}
    for level in ("high", "low"):
        books[level] = tmp_path / f"{level}.xlsx"
        shutil.copy(out, books[level])
        wb = openpyxl.load_workbook(books[level])
        wb["Summary"][SELECTOR] = level
        wb.save(books[level])
    values = recalc_many(list(books.values()), tmp_path / "lo")
    for level, path in books.items():
        sheets = values[path]
        assert sheets["Summary"]["B3"] == pytest.approx(SCENARIO_TOTALS[level], abs=0.005)
        checks = sheets["Checks"]
        assert [k for k, v in checks.items() if k.startswith("D") and k != "D1" and v is not True] == []
        assert sheets["Summary"]["A2"] == "All checks pass"
