"""Bad bills and usage files: numbers that are not finite or overflow a sum, and a GPU line pattern that would
run for minutes. Each is a clear error naming the file and the row, with no traceback and nothing written."""

from __future__ import annotations

import csv
import json
import os
import tempfile

import pandas as pd
import pytest
from click.testing import CliRunner
from conftest import make_input
from test_bills import bills, write_csv

from budgetgen.cli import main
from budgetgen.core.errors import Code, InputError
from budgetgen.recon import bills as bills_module
from budgetgen.recon import read_usage

pytestmark = pytest.mark.filterwarnings("error")


def problems_of(call) -> list:
    with pytest.raises(InputError) as caught:
        call()
    return caught.value.problems


@pytest.mark.parametrize("cost", ["inf", "-inf", "Infinity", "1e309", "-1e309", "nan", "NaN"])
def test_billed_cost_that_is_not_finite(tmp_path, cost):
    path = write_csv(tmp_path, [{}, {"BilledCost": cost}])
    problem, = problems_of(lambda: bills(path))
    assert (problem.code, problem.sheet, problem.cell) == (Code.OUT_OF_RANGE, "focus.csv", "row 3")
    assert problem.message.startswith(f'BilledCost: "{cost}" is not a finite number')


def test_two_lines_whose_sum_overflows(tmp_path):
    # Each 1e308 is a float, their sum is not: no month total may be infinite.
    path = write_csv(tmp_path, [{"BilledCost": "1e308"}, {"BilledCost": "1e308"}, {"BilledCost": "-2e15"}])
    problems = problems_of(lambda: bills(path))
    assert [(p.code, p.cell) for p in problems] == [
        (Code.OUT_OF_RANGE, "row 2"), (Code.OUT_OF_RANGE, "row 3"), (Code.OUT_OF_RANGE, "row 4"),
    ]
    assert "is too large" in problems[0].message and "at most 1e+15" in problems[0].message
    assert "is too small" in problems[2].message


def test_largest_cost_a_bill_may_hold(tmp_path):
    path = write_csv(tmp_path, [{"BilledCost": "1e15"}, {"BilledCost": "-1e15"}, {"BilledCost": "0.01"}])
    assert bills(path)["billed_cost"].tolist() == [1e15, -1e15, 0.01]


def test_parquet_floats_that_are_not_finite(tmp_path):
    frame = pd.DataFrame({"ChargePeriodStart": ["2026-07-01"] * 3, "BilledCost": [1.0, float("inf"), 1e300],
                          "ConsumedQuantity": [1.0, 2.0, float("-inf")]})
    path = tmp_path / "bill.parquet"
    frame.to_parquet(path)
    problems = problems_of(lambda: bills(path))
    # Parquet's first record is row 1.
    assert [(p.code, p.cell, p.message.split(":")[0]) for p in problems] == [
        (Code.OUT_OF_RANGE, "row 2", "BilledCost"), (Code.OUT_OF_RANGE, "row 3", "BilledCost"),
        (Code.OUT_OF_RANGE, "row 3", "ConsumedQuantity"),
    ]


def test_bills_sheet_cell_that_overflows():
    sheet = pd.DataFrame({"ChargePeriodStart": ["2026-07-01", "2026-07-02"], "BilledCost": [1e308, 2.0]}, index=[2, 3])
    problem, = problems_of(lambda: bills(sheet))
    assert (problem.code, problem.sheet, problem.cell) == (Code.OUT_OF_RANGE, "Bills", "B2")


@pytest.mark.parametrize("column, value", [
    ("gpu_util_pct", "inf"), ("mem_used_gb", "inf"), ("mem_used_gb", "1e309"), ("oom_events", "nan"),
    ("mem_total_gb", "-inf"),
])
def test_usage_that_is_not_finite(tmp_path, column, value):
    good = {"resource_id": "i-a", "month": "2026-07", "gpu_util_pct": "50", "mem_used_gb": "10",
            "mem_total_gb": "24", "oom_events": "0"}
    bad = {**good, column: value}
    path = tmp_path / "usage.csv"
    path.write_text("\n".join(",".join(row) for row in (good, good.values(), bad.values())) + "\n")
    problem, = problems_of(lambda: read_usage(path, path.name))
    assert (problem.code, problem.sheet, problem.cell) == (Code.OUT_OF_RANGE, "usage.csv", "row 3")
    assert problem.message.startswith(f"{column}: ")


def test_nvidia_smi_infinite_memory(tmp_path):
    path = tmp_path / "i-gpu.csv"
    path.write_text("timestamp, utilization.gpu [%], memory.used [MiB], memory.total [MiB]\n"
                    "2026/07/03 10:00:00.123, 40 %, inf MiB, 81920 MiB\n")
    problem, = problems_of(lambda: read_usage(path, path.name))
    assert (problem.code, problem.cell) == (Code.OUT_OF_RANGE, "row 2")
    assert problem.message.startswith("memory.used [MiB]: ")


def test_negative_usage_is_refused(tmp_path):
    path = tmp_path / "u.csv"
    path.write_text("resource_id,month,gpu_util_pct,mem_used_gb,oom_events\ni-a,2026-07,-1,10,0\ni-a,2026-07,5,-3,-1\n")
    problems = problems_of(lambda: read_usage(path, path.name))
    assert [(p.cell, p.message.split(":")[0]) for p in problems] == [
        ("row 2", "gpu_util_pct"), ("row 3", "mem_used_gb"), ("row 3", "oom_events"),
    ]
    assert "between 0 and 100" in problems[0].message and "at least 0" in problems[1].message


def test_bill_problems_speak_chinese(tmp_path):
    path = write_csv(tmp_path, [{"BilledCost": "inf"}, {"BilledCost": "twelve"}])
    first, second = problems_of(lambda: bills(path))
    assert first.render("zh") == 'focus.csv!row 2 BilledCost："inf" 不是有限的数（currency）'
    assert "不是数字" in second.render("zh") and "不带货币符号" in second.render("zh")


CATASTROPHIC = "(a|aa)+$"
LINE = "a" * 40 + "b"  # 41 characters: `re` backtracks over it for more than a minute


def test_catastrophic_gpu_line_pattern_runs_in_linear_time(tmp_path):
    # RE2 never backtracks: the pattern that stalls `re` for minutes answers at once, and correctly.
    path = write_csv(tmp_path, [{"ChargeDescription": "g5.xlarge"}, {"ChargeDescription": LINE},
                                {"ChargeDescription": "NULL", "ResourceName": "NULL", "ServiceName": "aaaa"}])
    frame = bills_module.read_bills(path, path.name, "USD", CATASTROPHIC, {}, [])
    # The joined text ends with the last column read (ResourceName), so only a line ending in a's matches.
    assert frame["is_gpu"].tolist() == [False, False, False]
    frame = bills_module.read_bills(path, path.name, "USD", "(a|aa)+ [|]", {}, [])
    assert frame["is_gpu"].tolist() == [False, False, True]   # the second line's a's are followed by b


@pytest.mark.parametrize("pattern, reason", [(r"(?<![a-z])g5", "invalid perl operator"), (r"(g5)\1", "")])
def test_pattern_re2_cannot_run_is_refused(tmp_path, pattern, reason):
    path = write_csv(tmp_path, [{}])
    problem, = problems_of(lambda: bills_module.read_bills(path, path.name, "USD", pattern, {}, []))
    assert (problem.code, problem.sheet) == (Code.WRONG_FORMAT, "Settings")
    assert problem.message.startswith(f'gpu_line_pattern: "{pattern}" is not a regular expression (RE2: ')
    assert reason in problem.message


def test_ordinary_user_pattern_still_matches(tmp_path):
    path = write_csv(tmp_path, [{"ChargeDescription": "aaaa"}, {"ChargeDescription": LINE}])
    frame = bills_module.read_bills(path, path.name, "USD", "^(a|b)+$", {}, [])
    assert frame["is_gpu"].tolist() == [False, False]   # the pattern sees "desc | sku | ..." joined: no full match
    frame = bills_module.read_bills(path, path.name, "USD", r"\baaaa\b", {}, [])
    assert frame["is_gpu"].tolist() == [True, False]


def test_invalid_user_pattern(tmp_path):
    path = write_csv(tmp_path, [{}])
    problem, = problems_of(lambda: bills_module.read_bills(path, path.name, "USD", "(g5", {}, []))
    assert (problem.code, problem.sheet) == (Code.WRONG_FORMAT, "Settings")
    assert problem.message.startswith('gpu_line_pattern: "(g5" is not a regular expression')


TASK = {"task_id": "T1", "kind": "inference", "model_params_b": 7, "method": "int4", "requests_per_day": 1000,
        "tokens_per_request": 500, "tokens_per_sec": 100, "gpu": "RTX 4090", "tier": "monthly"}


@pytest.fixture
def clean_tmp(tmp_path, monkeypatch):
    """A private $TMPDIR, to prove a failing build leaves nothing in it."""
    tmp = tmp_path / "tmpdir"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", None)
    return tmp


@pytest.mark.parametrize("lines, pattern, expected", [
    ([["2026-07-01", "inf", "i-a", "g5.xlarge"]], "", 'Error: bill.csv!row 2 BilledCost: "inf" is not a finite number'),
    ([["2026-07-01", "1e308", "i-a", "g5.xlarge"], ["2026-07-02", "1e308", "i-a", "g5.xlarge"]], "",
     'Error: bill.csv!row 2 BilledCost: "1e308" is too large'),
    ([["2026-07-01", "3", "i-a", LINE]], "(?=g5)", 'Error: Settings gpu_line_pattern: "(?=g5)" is not a regular'),
])
def test_build_with_a_bad_bill_writes_nothing(tmp_path, clean_tmp, lines, pattern, expected):
    settings = {"currency": "USD", "catalog_fx": 0.14, **({"gpu_line_pattern": pattern} if pattern else {})}
    book = make_input(tmp_path / "in.xlsx", [TASK], settings=settings)
    bill = tmp_path / "bill.csv"
    with bill.open("w", newline="") as handle:
        csv.writer(handle).writerows([["ChargePeriodStart", "BilledCost", "ResourceId", "ChargeDescription"], *lines])
    out = tmp_path / "out"
    before = set(os.listdir(tmp_path))
    result = CliRunner().invoke(main, ["build", str(book), "-o", str(out / "b.xlsx"), "--json", str(out / "b.json"),
                                       "--bills", str(bill)])
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit)   # a clean exit, no traceback
    assert expected in result.output
    assert "Traceback" not in result.output
    assert set(os.listdir(tmp_path)) == before and not out.exists()
    assert os.listdir(clean_tmp) == []


def test_build_with_infinite_usage_writes_nothing(tmp_path, clean_tmp):
    book = make_input(tmp_path / "in.xlsx", [TASK], settings={"currency": "USD", "catalog_fx": 0.14})
    bill = tmp_path / "bill.csv"
    bill.write_text("ChargePeriodStart,BilledCost,ResourceId,ChargeDescription\n2026-07-01,3,i-a,g5.xlarge\n")
    usage = tmp_path / "i-a.csv"
    usage.write_text("timestamp,gpu_util_pct,mem_used_gb\n2026-07-01T00:00:00Z,inf,3\n")
    result = CliRunner().invoke(main, ["build", str(book), "-o", str(tmp_path / "b.xlsx"), "--bills", str(bill),
                                       "--usage", str(usage)])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    assert 'Error: i-a.csv!row 2 gpu_util_pct: "inf" is not a finite number' in result.output
    assert not (tmp_path / "b.xlsx").exists() and os.listdir(clean_tmp) == []


def test_a_line_with_a_bad_cost_and_tags_that_are_no_json_is_two_errors_not_a_traceback(tmp_path):
    """A row problem found before the Tags check once left a DuckDB result open, and the check ended in a
    ResourceInUseException traceback."""
    path = write_csv(tmp_path, [{"BilledCost": "", "Tags": "task_id=T1"}, {"BilledCost": "x"}])
    problems = problems_of(lambda: bills(path))
    assert sorted((p.cell, p.message.split(":")[0], p.code.value) for p in problems) == [
        ("row 2", "BilledCost", "required"), ("row 2", "Tags", "wrong_format"), ("row 3", "BilledCost", "not_a_number"),
    ]


@pytest.mark.parametrize("start", ["0001-01-01", "1899-12-31", "9999-12-31T23:59:59Z"])
def test_a_charge_date_no_workbook_can_show_is_refused(tmp_path, start):
    """Year 1 reached the Recon sheet as a date Excel cannot show; 9999-12-31 ended in an OverflowError."""
    path = write_csv(tmp_path, [{"ChargePeriodStart": start}, {}])
    problem, = problems_of(lambda: bills(path))
    assert (problem.code, problem.cell) == (Code.OUT_OF_RANGE, "row 2")
    assert problem.message.startswith(f'ChargePeriodStart: "{start}" is outside the dates a workbook shows')


def test_a_bill_of_december_9999_is_reconciled(tmp_path):
    path = write_csv(tmp_path, [{"ChargePeriodStart": "9999-12-15", "BillingCurrency": "CNY"}])
    book = make_input(tmp_path / "q3.xlsx", [{"task_id": "T1", "kind": "finetune", "model_params_b": 7,
                                             "train_tokens": "5M"}])
    result = CliRunner().invoke(main, ["build", str(book), "-o", str(tmp_path / "b.json.xlsx"), "--json",
                                       str(tmp_path / "b.json"), "--bills", str(path)])
    assert result.exit_code == 0, result.output
    month = json.loads((tmp_path / "b.json").read_text())["reconciliation"]["9999-12"]
    assert (month["billed_total"], month["partial"]) == (1.0, True)   # one day of 31
