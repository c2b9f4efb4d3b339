"""A bill in another currency than the plan's is converted at a dated rate, never refused and never shown under the
plan's currency unconverted (issue 30).

The plan is in CNY; its FX sheet types USD at 7.1234 CNY per USD as of 2026-07-31 (a quote the user took). The bill,
July 2026, mixes USD lines and one CNY line; worked out by hand:

| line | BilledCost | in CNY |
|---|---|---|
| i-gpu1, T1, GPU | 100.00 USD | 100.00 x 7.1234 = 712.34 |
| vol-1, storage | 12.34 USD | 12.34 x 7.1234 = 87.902756 |
| credit | -5.00 USD | -5.00 x 7.1234 = -35.617 |
| vol-2, storage | 50.00 CNY | 50.00 (the plan's currency: not converted) |

USD lines 107.34 USD = 764.625756 CNY; billed total 814.625756 CNY (814.63).
"""

from __future__ import annotations

import csv
import json

import openpyxl
import pytest
from click.testing import CliRunner
from conftest import make_input, prove
from test_bill_sql import build_both, recon_values, same_values

from budgetgen.cli import main

RATE = 7.1234
TASKS = [{"task_id": "T1", "kind": "inference", "model_params_b": 7, "method": "int4", "requests_per_day": 10000,
          "tokens_per_request": 500, "tokens_per_sec": 100, "serving_hours_per_day": 8, "gpu": "RTX 4090",
          "tier": "monthly"}]
FX_SHEET = [["currency", "rate", "as_of", "source"], ["USD", RATE, "2026-07-31", "bank quote"]]
HEADER = ["ChargePeriodStart", "BilledCost", "BillingCurrency", "ResourceId", "ServiceName", "ServiceCategory",
          "ChargeCategory", "ConsumedQuantity", "ConsumedUnit", "Tags", "ChargeDescription"]
LINES = [
    ["2026-07-01", "100.00", "USD", "i-gpu1", "Amazon EC2", "Compute", "Usage", 730, "Hours", '{"task_id": "T1"}',
     "g5.xlarge on-demand"],
    ["2026-07-03", "12.34", "usd", "vol-1", "Amazon S3", "Storage", "Usage", 500, "GB-Mo", "", "S3 standard"],
    ["2026-07-05", "-5.00", "USD", "", "Support", "Other", "Credit", 0, "", "", "promotional credit"],
    ["2026-07-31", "50.00", "CNY", "vol-2", "OSS", "Storage", "Usage", 100, "GB-Mo", "", "object storage"],
]
USD_TOTAL = 100.00 + 12.34 - 5.00                  # 107.34 USD
USD_IN_CNY = 712.34 + 87.902756 - 35.617            # 764.625756 CNY, line by line by hand
BILLED_TOTAL = USD_IN_CNY + 50.00                   # 814.625756 CNY


def _bill(path, lines=LINES):
    with path.open("w", newline="") as fh:
        csv.writer(fh).writerows([HEADER, *lines])
    return path


def _plan(tmp_path, fx=True):
    return make_input(tmp_path / "cny.xlsx", TASKS, settings={"currency": "CNY", "period_start": "2026-07",
                                                              "period_months": 2},
                      extra_sheets={"FX": FX_SHEET} if fx else None)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("currency")
    out, js = tmp / "out.xlsx", tmp / "out.json"
    result = CliRunner().invoke(main, ["build", str(_plan(tmp)), "-o", str(out), "--bills", str(_bill(tmp / "b.csv")),
                                       "--json", str(js)])
    assert result.exit_code == 0, result.output
    assert "total billed 814.63 CNY" in result.output
    assert "; 107.34 USD billed in USD converted at 7.1234 CNY per 1 USD (2026-07-31)" in result.output
    return out, json.loads(js.read_text())


def test_a_usd_bill_against_a_cny_plan_is_converted_at_the_typed_rate(built):
    _, data = built
    july = data["reconciliation"]["2026-07"]
    assert july["billed_total"] == pytest.approx(BILLED_TOTAL, abs=0.005)
    assert round(july["billed_total"], 2) == 814.63
    assert {t["task_id"]: t["billed"] for t in july["tasks"]}["T1"] == pytest.approx(712.34, abs=0.005)
    assert july["non_gpu_billed"] == pytest.approx(87.902756 + 50.00, abs=0.005)
    assert july["credit_billed"] == pytest.approx(-35.617, abs=0.005)
    (usd,) = july["currencies"]
    assert (usd["currency"], usd["rate"], usd["as_of"], usd["source"]) == ("USD", RATE, "2026-07-31", "bank quote")
    assert usd["billed"] == pytest.approx(USD_TOTAL) and usd["converted"] == pytest.approx(USD_IN_CNY, abs=0.005)


def test_the_recon_tab_shows_the_usd_total_the_rate_its_date_and_the_cny_total(built):
    """The USD amount prints with its own code, never the plan's ¥; the converted total is a formula in CNY; the
    Checks tie the tab to the converted bill; every formula agrees with its cached value."""
    out, _ = built
    wb = openpyxl.load_workbook(out)
    values = openpyxl.load_workbook(out, data_only=True)
    ws, cached = wb["Recon 2026-07"], values["Recon 2026-07"]
    (row,) = [r for r in range(1, ws.max_row + 1) if str(ws.cell(r, 1).value or "").startswith("USD, rate of")]
    assert ws.cell(r := row, 1).value == "USD, rate of 2026-07-31 (bank quote)"
    assert cached.cell(r, 2).value == pytest.approx(USD_TOTAL) and '"USD"' in ws.cell(r, 2).number_format
    assert "¥" not in ws.cell(r, 2).number_format
    assert cached.cell(r, 3).value == RATE
    assert ws.cell(r, 4).value == f"=B{r}*C{r}" and cached.cell(r, 4).value == pytest.approx(USD_IN_CNY, abs=0.005)
    assert "¥" in ws.cell(r, 4).number_format
    headers = [ws.cell(row - 1 - i, c).value for i in range(2) for c in (1, 4)]
    assert "billed (CNY)" in headers
    assert values["Checks"]["D2"].value is True
    assert prove(out) == []


def test_the_printed_query_result_converts_as_the_lines_do(tmp_path):
    """--bill-sums (bill_sql's result, one row per group with its currency) gives the same tabs and JSON."""
    (lines_json, lines_xlsx), (sums_json, sums_xlsx) = build_both(tmp_path, _plan(tmp_path), _bill(tmp_path / "b.csv"),
                                                                  ".csv")
    assert lines_json["reconciliation"]["2026-07"]["currencies"][0]["converted"] == pytest.approx(USD_IN_CNY,
                                                                                                 abs=0.005)
    assert json.dumps(sums_json["reconciliation"], sort_keys=True) == \
        json.dumps(lines_json["reconciliation"], sort_keys=True)
    same_values(recon_values(lines_xlsx), recon_values(sums_xlsx))


@pytest.mark.parametrize("currency, month, missing", [
    ("XYZ", "2026-07-02", "for 2026-07"),        # no such currency: no rate anywhere
    ("EUR", "2099-03-02", "for 2099-03"),        # a currency the FX sheet lacks, a month the reference rates lack
])
def test_a_currency_without_a_rate_is_refused_naming_file_row_and_currency(tmp_path, currency, month, missing):
    lines = [*LINES[:2], [month, "9.00", currency, "i-x", "Amazon EC2", "Compute", "Usage", 1, "Hours", "", "g5"]]
    result = CliRunner().invoke(main, ["build", str(_plan(tmp_path)), "-o", str(tmp_path / "out.xlsx"),
                                       "--bills", str(_bill(tmp_path / "bill.csv", lines))])
    assert result.exit_code != 0
    assert "\nError: " in result.output and "Traceback" not in result.output
    assert f'bill.csv!row 4 BillingCurrency: "{currency}" on 1 lines but the plan is in CNY' in result.output
    assert missing in result.output
    assert not (tmp_path / "out.xlsx").exists()
