"""The input contract (§2): header matching, suffix numbers, defaults, and every problem at once."""

from __future__ import annotations

import pytest
from conftest import TODAY, make_input

from budgetgen.errors import Code, InputError
from budgetgen.reader import read_inputs
from budgetgen.schema import TASK_COLUMNS
from budgetgen.values import BadValue, parse_number


def column(name):
    return next(c for c in TASK_COLUMNS if c.name == name)


@pytest.mark.parametrize("raw, name, expected", [
    ("7B", "model_params_b", 7), (7, "model_params_b", 7), ("1.5k", "train_tokens", 1500),
    ("5M", "train_tokens", 5_000_000), ("2T", "train_tokens", 2e12), ("70b", "model_params_b", 70),
    ("500M", "model_params_b", 0.5), ("1,000", "requests_per_day", 1000), ("40%", "mfu", 0.4), (0.4, "mfu", 0.4),
    ("3G", "train_tokens", 3e9),
])
def test_suffix_numbers_in_the_column_unit(raw, name, expected):
    assert parse_number(raw, column(name)) == pytest.approx(expected)


@pytest.mark.parametrize("raw, name, fragment", [
    ("seven", "model_params_b", '"seven" is not a number (billions of parameters, e.g. 7 or 7B)'),
    (-3, "train_tokens", "must be greater than zero"), (0, "model_params_b", "must be greater than zero"),
    (1.5, "cards", "must be a whole number"),
])
def test_bad_numbers(raw, name, fragment):
    with pytest.raises(BadValue) as info:
        parse_number(raw, column(name))
    assert fragment in str(info.value)


def test_headers_ignore_case_spaces_and_underscores_and_unknown_columns_are_kept(tmp_path):
    path = make_input(tmp_path / "in.xlsx", [{"Task ID": "T1", "KIND": "Inference", "Model Params B": "7B",
                                              "requests per day": "1k", "TokensPerRequest": 100, "Owner": "Ana"}])
    inputs = read_inputs(path, today=TODAY)
    task = inputs.tasks[0]
    assert task.values["task_id"] == "T1" and task.kind == "inference"
    assert task.values["model_params_b"] == 7 and task.values["requests_per_day"] == 1000
    assert task.values["method"] == "fp16" and task.values["tier"] == "monthly"
    assert task.values["serving_hours_per_day"] == 24 and task.values["concurrency"] == 1
    assert task.extra == {"Owner": "Ana"} and inputs.extra_headers == ("Owner",)
    assert task.values["start_month"] == "2026-07" and task.values["end_month"] == "2026-09"


def test_default_period_starts_the_month_after_today(tmp_path):
    path = tmp_path / "in.xlsx"
    make_input(path, [{"task_id": "T", "kind": "batch", "model_params_b": 1, "batch_requests": 10,
                       "tokens_per_request": 10}])
    import openpyxl
    wb = openpyxl.load_workbook(path)
    wb.remove(wb["Settings"])
    wb.save(path)
    import datetime as dt
    inputs = read_inputs(path, today=dt.date(2026, 12, 2))
    assert inputs.settings.plan_months == ("2027-01", "2027-02", "2027-03")


def test_every_problem_reported_at_once_sorted_by_sheet_and_cell(tmp_path):
    path = make_input(tmp_path / "in.xlsx", [
        {"task_id": "T1", "kind": "finetune", "model_params_b": "seven", "train_tokens": "1M", "gpu": None},
        {"task_id": "T1", "kind": "inference", "model_params_b": 7, "train_tokens": None, "gpu": "RTX 9999"},
        {"task_id": "T3", "kind": "training", "model_params_b": 7},
        {"task_id": "T4", "kind": "pretrain", "model_params_b": 7, "start_month": "2030-01"},
    ], settings={"mfu": "lots"})
    with pytest.raises(InputError) as info:
        read_inputs(path, today=TODAY)
    found = [(p.code, p.sheet, p.cell) for p in info.value.problems]
    assert (Code.NOT_A_NUMBER, "Settings", "B3") in found         # mfu: "lots"
    assert (Code.NOT_A_NUMBER, "Tasks", "C2") in found            # model_params_b "seven"
    assert (Code.DUPLICATE_TASK, "Tasks", "A3") in found               # T1 again
    assert (Code.UNKNOWN_VALUE, "Tasks", "E3") in found           # RTX 9999
    assert (Code.REQUIRED, "Tasks", "A3") in found or any(c == Code.REQUIRED and s == "Tasks" and cell.endswith("3")
                                                           for c, s, cell in found)  # inference without traffic
    assert (Code.UNKNOWN_VALUE, "Tasks", "B4") in found           # kind "training"
    assert (Code.MONTH_OUTSIDE_PLAN, "Tasks", "F5") in found
    assert (Code.REQUIRED, "Tasks", "D5") in found                # pretrain without train_tokens
    assert [p.sheet for p in info.value.problems] == sorted(p.sheet for p in info.value.problems)
    message = next(str(p) for p in info.value.problems if p.cell == "C2")
    assert message == 'Tasks!C2 model_params_b: "seven" is not a number (billions of parameters, e.g. 7 or 7B)'


def test_missing_tasks_sheet_and_columns(tmp_path):
    path = make_input(tmp_path / "in.xlsx", [{"task": "no id", "kind": "batch"}])
    with pytest.raises(InputError) as info:
        read_inputs(path, today=TODAY)
    codes = {(p.code, p.message.split(" (")[0]) for p in info.value.problems}
    assert (Code.MISSING_COLUMN, "missing required column task_id") in codes
    assert (Code.MISSING_COLUMN, "missing required column model_params_b") in codes


def test_gpus_sheet_overrides_and_adds(tmp_path):
    path = make_input(tmp_path / "in.xlsx", [{"task_id": "T", "kind": "batch", "model_params_b": 1,
                                              "batch_requests": 10, "tokens_per_request": 10}],
                      gpus=[{"gpu": "rtx 4090", "on_demand_per_hour": 2.5},
                            {"gpu": "MyCard", "vram_gb": 32, "bandwidth_gbs": 900, "tflops": 100,
                             "idle_per_hour": 0.7}])
    inputs = read_inputs(path, today=TODAY)
    g = inputs.gpu("RTX 4090")
    assert g.prices["on_demand"] == 2.5 and g.prices["monthly"] == 3000 and g.vram_gb == 24
    mine = inputs.gpu("MyCard")
    assert mine.prices == {"monthly": None, "on_demand": None, "idle": 0.7, "spot": None}


def test_catalog_fx_converts_builtin_prices(tmp_path):
    path = make_input(tmp_path / "in.xlsx", [{"task_id": "T", "kind": "batch", "model_params_b": 1,
                                              "batch_requests": 10, "tokens_per_request": 10}],
                      settings={"currency": "usd", "catalog_fx": 0.14})
    inputs = read_inputs(path, today=TODAY)
    assert inputs.settings.currency == "USD"
    assert inputs.gpu("A100 80G").prices["on_demand"] == pytest.approx(12 * 0.14)
    assert inputs.warnings == ()
