"""Reading FOCUS bills: the real sample, tolerant parsing, GPU lines, categories and bad input."""

from __future__ import annotations

import csv
import json
import math
import re
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest
from conftest import FOCUS_SAMPLE, make_input

from budgetgen.core.errors import Code, InputError
from budgetgen.io.reader import read_inputs
from budgetgen.recon import (
    DEFAULT_GPU_LINE_PATTERN,
    MAX_ROW_PROBLEMS,
    OUTPUT_COLUMNS,
    aggregate_lines,
    gpu_matcher,
    read_bills,
    reconcile,
)

pytestmark = pytest.mark.filterwarnings("error")

CATALOG = ["RTX 4090", "RTX A6000", "L40S", "A100 80G", "H100 80G", "H200", "L4"]
HEADER = [
    "ChargePeriodStart", "BilledCost", "BillingCurrency", "ResourceId", "ResourceName", "ServiceName",
    "ServiceCategory", "ChargeCategory", "ChargeDescription", "ConsumedQuantity", "ConsumedUnit", "Tags",
]
BASE = {
    "ChargePeriodStart": "2026-07-01 00:00:00", "BilledCost": "1.00", "BillingCurrency": "USD",
    "ResourceId": "NULL", "ResourceName": "NULL", "ServiceName": "AmazonCloudWatch",
    "ServiceCategory": "Management and Governance", "ChargeCategory": "Usage",
    "ChargeDescription": "$0.30 per metric-month", "ConsumedQuantity": "1", "ConsumedUnit": "Metrics", "Tags": "NULL",
}


def write_csv(folder: Path, lines: list[dict], name: str = "focus.csv", header: list[str] = HEADER) -> Path:
    """A FOCUS CSV of BASE lines overridden by each dict, quoted like real exports."""
    path = folder / name
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=header, quoting=csv.QUOTE_ALL, extrasaction="ignore")
        writer.writeheader()
        writer.writerows({**BASE, **line} for line in lines)
    return path


def bills(source, assignments: dict[str, str] | None = None, currency: str = "USD") -> pd.DataFrame:
    """read_bills with the default pattern and the built-in catalog's names."""
    name = source.name if isinstance(source, Path) else "Bills"
    return read_bills(source, name, currency, DEFAULT_GPU_LINE_PATTERN, assignments or {}, CATALOG)


@pytest.fixture(scope="module")
def sample_path() -> Path:
    """The FinOps Foundation's FOCUS 1.0 sample, vendored in tests/data with its licence notice."""
    return FOCUS_SAMPLE


@pytest.fixture(scope="module")
def sample_rows(sample_path: Path) -> list[dict[str, str]]:
    """The sample's lines as the csv module reads them (row 2 is the first line)."""
    with sample_path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def sample_bills(sample_path: Path) -> pd.DataFrame:
    return bills(sample_path)


def test_sample_loads_with_every_line_and_the_output_columns(sample_bills, sample_rows):
    assert tuple(sample_bills.columns) == OUTPUT_COLUMNS
    assert len(sample_bills) == len(sample_rows) == 1000
    assert list(sample_bills.index[:2]) == [2, 3]


def month_sums(rows: list[dict[str, str]]) -> dict[str, Decimal]:
    """Σ BilledCost per invoice month (BillingPeriodStart, else ChargePeriodStart) of csv rows, in decimal."""
    totals: dict[str, Decimal] = defaultdict(Decimal)
    for row in rows:
        month = row.get("BillingPeriodStart") or row["ChargePeriodStart"]
        totals[month[:7]] += Decimal(row["BilledCost"])
    return totals


def test_sample_month_totals_equal_the_files_billed_cost_to_the_cent(sample_bills, sample_rows):
    expected = month_sums(sample_rows)
    totals = sample_bills.groupby("month")["billed_cost"].agg(math.fsum)
    assert set(totals.index) == set(expected)
    for month, total in expected.items():
        assert abs(Decimal(float(totals[month])) - total) < Decimal("0.005"), month


def test_sample_october_line_is_its_own_month(sample_bills, sample_rows):
    october = [n for n, line in enumerate(sample_rows, start=2) if line["BillingPeriodStart"].startswith("2024-10")]
    assert len(october) == 1
    row = october[0]
    # Its charge period starts 2024-09-30 22:00 but it is billed on the October invoice: the invoice month wins.
    assert sample_rows[row - 2]["ChargePeriodStart"] == "2024-09-30 22:00:00"
    assert sample_bills.loc[row, "month"] == "2024-10"
    assert list(sample_bills["month"]).count("2024-10") == 1
    assert sample_bills.loc[row, "billed_cost"] == pytest.approx(0.24)


def test_sample_gpu_lines_are_the_g5_and_g3_instance_lines(sample_bills, sample_rows):
    g5 = {n for n, line in enumerate(sample_rows, start=2) if " g5." in line["ChargeDescription"]}
    g3 = {n for n, line in enumerate(sample_rows, start=2) if " g3." in line["ChargeDescription"]}
    assert len(g5) == 8 and len(g3) == 2
    gpu_rows = set(sample_bills.index[sample_bills["is_gpu"]])
    assert gpu_rows == g5 | g3
    assert set(sample_bills.loc[sorted(gpu_rows), "category"]) == {"gpu"}


def test_sample_gpu_inside_sku_ids_and_lambda_names_is_not_a_gpu_line(sample_bills, sample_rows):
    lookalikes = [
        n for n, line in enumerate(sample_rows, start=2)
        if "GPU" in line["SkuId"] or "-gpu-" in line["ResourceId"]
    ]
    assert len(lookalikes) == 20
    assert not sample_bills.loc[lookalikes, "is_gpu"].any()


def test_sample_reconciles_to_the_file(sample_bills, sample_rows):
    expected = month_sums(sample_rows)
    gpu_expected = month_sums([r for r in sample_rows if re.search(r" g[35]\.", r["ChargeDescription"])])
    recons = reconcile(aggregate_lines(sample_bills), pd.DataFrame(), {}, {}, 0.2, 3, 0.1)
    assert list(recons) == sorted(expected)
    for month, recon in recons.items():
        assert abs(Decimal(recon.billed_total) - expected[month]) < Decimal("0.005")
        assert abs(Decimal(recon.gpu_billed) - gpu_expected[month]) < Decimal("0.005")
        assert recon.unallocated == recon.gpu_billed
    assert len(recons["2024-09"].resources) == 10   # the ten g5/g3 instance lines are all September's
    assert recons["2024-10"].resources == ()


def test_sample_nulls_mixed_case_and_credit(sample_bills, sample_rows):
    assert sample_rows[456]["ChargeCategory"] == "Credit" and sample_rows[456]["ResourceId"] == "NULL"
    credit = sample_bills.loc[458]
    assert (credit["charge_category"], credit["resource_id"], credit["billed_cost"]) == ("Credit", "", -2.6137)
    assert math.isnan(credit["consumed_quantity"])
    assert set(sample_bills["charge_category"]) == {"Usage", "Adjustment", "Credit"}
    assert sample_bills["resource_name"].eq("NULL").sum() == 0


@pytest.mark.parametrize("stamp", [
    "2026-07-31T23:00:00Z", "2026-07-31 23:00:00", "2026-07-31", "2026/07/31 10:00:00.123",
    "2026-07-31T23:00:00.000+00:00", " 2026-7-31 ",
])
def test_timestamp_forms_give_the_month(tmp_path, stamp):
    assert bills(write_csv(tmp_path, [{"ChargePeriodStart": stamp}]))["month"].tolist() == ["2026-07"]


def test_task_from_tags_then_assignments(tmp_path):
    path = write_csv(tmp_path, [
        {"ResourceId": "i-a", "Tags": json.dumps({"task_id": "T01", "team": "nlp"})},
        {"ResourceId": "i-a", "Tags": json.dumps({"Task ID": " T09 "})},
        {"ResourceId": "i-b", "Tags": "NULL"},
        {"ResourceId": "i-b", "Tags": json.dumps({"task_id": "T02"})},
        {"ResourceId": "i-c", "Tags": json.dumps({"taskforce": "infra"})},
        {"ResourceId": "i-d", "Tags": ""},
        {"ResourceId": "i-e", "Tags": json.dumps({"user:task_id": 7})},
    ])
    frame = bills(path, assignments={"i-b": "T05", "i-c": "T06"})
    assert frame["task_id"].tolist() == ["T01", "T09", "T05", "T02", "T06", "", "7"]
    # A line's task never makes it a GPU line: these CloudWatch lines keep their task and stay "platform".
    assert frame["is_gpu"].tolist() == [False] * 7
    assert frame["category"].tolist() == ["platform"] * 7


def test_headers_match_ignoring_case_spaces_and_underscores(tmp_path):
    header = ["charge period start", "BILLED_COST", "resource_id", "Charge Description"]
    path = write_csv(tmp_path, [{
        "charge period start": "2026-08-02", "BILLED_COST": "12.5", "resource_id": "i-x",
        "Charge Description": "$1.006 per On Demand Linux g5.xlarge Instance Hour",
    }], header=header)
    line = bills(path).iloc[0]
    assert (line["month"], line["billed_cost"], line["resource_id"], line["is_gpu"]) == ("2026-08", 12.5, "i-x", True)
    assert line["task_id"] == "" and line["category"] == "gpu"


def test_x_columns_and_resource_names_can_name_the_gpu(tmp_path):
    header = [*HEADER, "x_InstanceType"]
    path = write_csv(tmp_path, [
        {"x_InstanceType": "p5.48xlarge"},
        {"ResourceName": "train-h100-node"},
        {"ResourceId": "fn-gpu-resizer", "x_InstanceType": "NULL"},
    ], header=header)
    assert bills(path)["is_gpu"].tolist() == [True, True, False]


@pytest.mark.parametrize("category, service, description, expected", [
    ("Storage", "Amazon Elastic Compute Cloud", "$0.08 per GB-month of gp3", "storage"),
    ("Networking", "Amazon Virtual Private Cloud", "$0.005 per In-use public IPv4 address per hour", "egress"),
    ("Compute", "Amazon Elastic Compute Cloud", "$0.09 per GB - data transfer out", "egress"),
    ("NULL", "Bandwidth", "Standard Data Transfer Out", "egress"),
    ("Other", "Azure Egress", "Inter-region", "egress"),
    ("NULL", "Amazon Simple Storage Service", "$0.023 per GB-month", "storage"),
    ("Management and Governance", "AmazonCloudWatch", "$0.30 per metric-month", "platform"),
    ("Containers", "Amazon Elastic Container Registry", "$0.10 per GB-month", "images"),
    ("Compute", "Amazon Elastic Kubernetes Service", "$0.10 per cluster hour", "platform"),
    ("Other", "Support", "promotional credit", "other"),
    ("Compute", "Amazon Elastic Compute Cloud", "$0.0116 per On Demand Linux t2.micro Instance Hour", "other"),
])
def test_non_gpu_categories(tmp_path, category, service, description, expected):
    path = write_csv(tmp_path, [{"ServiceCategory": category, "ServiceName": service, "ChargeDescription": description}])
    assert bills(path)["category"].tolist() == [expected]


@pytest.mark.parametrize("text", [
    "$1.006 per On Demand Linux g5.xlarge Instance Hour", "BoxUsage:g4dn.2xlarge", "ml.g5.12xlarge",
    "USW2-BoxUsage:g6e.xlarge", "$3.06 per On Demand Linux p3.2xlarge Instance Hour", "p4d.24xlarge",
    "p5.48xlarge", "a2-highgpu-1g", "a3-megagpu-8g", "Standard_NC6s_v3", "Standard_ND96asr_v4",
    "NC24ads A100 v4", "NCv3 Series", "Nvidia Tesla T4 GPU running in Americas", "GPU", "gpus",
])
def test_default_pattern_names_gpu_families(text):
    assert gpu_matcher(DEFAULT_GPU_LINE_PATTERN, []).search(text)


@pytest.mark.parametrize("text", [
    "F9GPUA3E29X6GJVE", "4GQUNXTFWVSGPUZK", "gpuless", "$0.0116 per On Demand Linux t2.micro Instance Hour",
    "m5.xlarge", "Standard_D11_v2", "sync1", "bg5.large", "ag5.x", "p30.text", "data-a2-backup",
    "Premium SSD Managed Disks - P6 LRS", "Standard - E5", "Virtual Machines Dv2/DSv2 Series",
])
def test_default_pattern_leaves_other_lines_alone(text):
    assert not gpu_matcher(DEFAULT_GPU_LINE_PATTERN, []).search(text)


@pytest.mark.parametrize("text, hit", [
    ("NVIDIA A100 80GB", True), ("A100-SXM4", True), ("a100 80g", True), ("rtx4090 box", True), ("L4 node", True),
    ("l40s", True), ("L40", False), ("ocid.L4QW2", False), ("H1000", False), ("A1000", False),
])
def test_catalog_names_match_as_whole_words(text, hit):
    assert bool(gpu_matcher("", CATALOG).search(text)) is hit


def test_parquet_source(tmp_path):
    frame = pd.DataFrame({
        "ChargePeriodStart": pd.to_datetime(["2026-07-01", "2026-09-30 23:00"], utc=True, format="ISO8601"),
        "BilledCost": [2.5, -1.0], "ResourceId": ["i-a", None], "ChargeDescription": ["g5.xlarge", None],
    })
    path = tmp_path / "bill.parquet"
    frame.to_parquet(path)
    result = bills(path)
    assert result["month"].tolist() == ["2026-07", "2026-09"]
    assert result["billed_cost"].tolist() == [2.5, -1.0]
    assert result["resource_id"].tolist() == ["i-a", ""]
    assert result["is_gpu"].tolist() == [True, False]


def test_xlsx_source_names_cells(tmp_path):
    path = tmp_path / "bill.xlsx"
    pd.DataFrame({"ChargePeriodStart": ["2026-07-01"] * 2, "BilledCost": [3.0, "three"]}).to_excel(path, index=False)
    with pytest.raises(InputError) as caught:
        bills(path)
    problem, = caught.value.problems
    assert (problem.code, problem.sheet, problem.cell) == (Code.NOT_A_NUMBER, "bill.xlsx", "B3")
    assert '"three"' in problem.message


def test_bills_sheet_frame_keeps_sheet_rows():
    frame = pd.DataFrame(
        {"ChargePeriodStart": ["2026-07-01", "2026-08-01"], "BilledCost": [1.25, 2.0]}, index=[2, 5],
    )
    assert bills(frame)["month"].to_dict() == {2: "2026-07", 5: "2026-08"}


def test_missing_billed_cost_column(tmp_path):
    path = write_csv(tmp_path, [{}], header=[h for h in HEADER if h != "BilledCost"])
    with pytest.raises(InputError) as caught:
        bills(path)
    problem, = caught.value.problems
    assert (problem.code, problem.sheet) == (Code.MISSING_COLUMN, "focus.csv")
    assert "BilledCost" in problem.message


def test_bill_in_eur_for_a_usd_plan(tmp_path):
    path = write_csv(tmp_path, [{}, {"BillingCurrency": "EUR"}, {"BillingCurrency": "eur"}, {"BillingCurrency": "NULL"}])
    with pytest.raises(InputError) as caught:
        bills(path)
    problem, = caught.value.problems
    assert (problem.code, problem.sheet, problem.cell) == (Code.CURRENCY, "focus.csv", "row 3")
    assert '"EUR" on 2 lines' in problem.message and "USD" in problem.message


def test_bill_in_the_plan_currency_is_accepted_whatever_its_case(tmp_path):
    path = write_csv(tmp_path, [{"BillingCurrency": "eur"}])
    assert bills(path, currency="EUR")["billed_cost"].tolist() == [1.0]


def test_cost_that_is_not_a_number(tmp_path):
    path = write_csv(tmp_path, [{}, {"BilledCost": "12,50 €"}])
    with pytest.raises(InputError) as caught:
        bills(path)
    problem, = caught.value.problems
    assert (problem.code, problem.sheet, problem.cell) == (Code.NOT_A_NUMBER, "focus.csv", "row 3")
    assert '"12,50 €"' in problem.message


def test_bills_sheet_problems_name_the_cell():
    frame = pd.DataFrame(
        {"ChargePeriodStart": ["2026-07-01", "July", None], "BilledCost": ["x", 1.0, "NULL"]}, index=[2, 3, 4],
    )
    with pytest.raises(InputError) as caught:
        bills(frame)
    found = [(p.code, p.sheet, p.cell) for p in caught.value.problems]
    assert found == [
        (Code.NOT_A_NUMBER, "Bills", "B2"), (Code.BAD_MONTH, "Bills", "A3"),
        (Code.REQUIRED, "Bills", "A4"), (Code.REQUIRED, "Bills", "B4"),
    ]


def test_tags_that_are_not_json(tmp_path):
    path = write_csv(tmp_path, [{"Tags": "task_id=T01"}])
    with pytest.raises(InputError) as caught:
        bills(path)
    problem, = caught.value.problems
    assert (problem.code, problem.cell) == (Code.WRONG_FORMAT, "row 2")


def test_many_bad_lines_are_counted_not_listed(tmp_path):
    path = write_csv(tmp_path, [{"BilledCost": "n/a"}] * (MAX_ROW_PROBLEMS + 5))
    with pytest.raises(InputError) as caught:
        bills(path)
    problems = caught.value.problems
    assert len(problems) == MAX_ROW_PROBLEMS + 1
    assert problems[-1].cell == f"row {MAX_ROW_PROBLEMS + 2}" and "5 more lines" in problems[-1].message


@pytest.mark.parametrize("name, code", [("missing.csv", Code.NOT_A_FILE), ("bill.json", Code.WRONG_FORMAT)])
def test_unusable_paths(tmp_path, name, code):
    path = tmp_path / name
    if name.endswith(".json"):
        path.write_text("{}")
    with pytest.raises(InputError) as caught:
        bills(path)
    assert [p.code for p in caught.value.problems] == [code]


def test_bills_sheet_of_the_input_is_framed_as_a_bill_file(tmp_path):
    """A Bills sheet in the input workbook is framed as a bill file is: a blank header named by its column letter,
    a value right of the header kept under a named column, indexed by sheet row."""
    rows = [["ChargePeriodStart", None, "BilledCost"], ["2026-07-01", "x", 1.25], ["2026-08-01", None, 2.0, "extra"]]
    task = {"task_id": "T1", "kind": "inference", "model_params_b": 7, "requests_per_day": 1000,
            "tokens_per_request": 200}
    sheet = read_inputs(make_input(tmp_path / "in.xlsx", [task], extra_sheets={"Bills": rows})).bills_sheet
    assert list(sheet.columns) == ["ChargePeriodStart", "column B", "BilledCost", "column D"]
    assert sheet.index.tolist() == [2, 3]
    assert sheet.loc[2].tolist() == ["2026-07-01", "x", 1.25, None]
    assert sheet.loc[3].tolist() == ["2026-08-01", None, 2.0, "extra"]
