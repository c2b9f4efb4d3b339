"""The input contract (§2): header matching, suffix numbers, defaults, and every problem at once."""

from __future__ import annotations

import hashlib
import io
import zipfile

import openpyxl
import pytest
import xlsxwriter
from conftest import TODAY, make_input

from budgetgen.core.errors import Code, InputError
from budgetgen.core.schema import KINDS, TASK_COLUMNS, TASK_KINDS, TIER_NAMES, Column
from budgetgen.core.values import BadValue, parse_number
from budgetgen.io import reader
from budgetgen.io.reader import read_inputs
from budgetgen.io.safefile import formulas_without_result
from budgetgen.io.template import EXAMPLE_TASKS

EXAMPLE_KINDS = {t["kind"] for t in EXAMPLE_TASKS}


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
    assert task.values["serving_hours_per_day"] == 24 and task.values["concurrency"] is None
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
    assert (Code.REQUIRED, "model_params_b: required") in codes   # neither model nor model_params_b


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
    assert mine.prices == {"monthly": None, "on_demand": None, "idle": 0.7, "spot": None,
                           "reserved_1y": None, "reserved_3y": None}


def test_catalog_fx_converts_builtin_prices(tmp_path):
    path = make_input(tmp_path / "in.xlsx", [{"task_id": "T", "kind": "batch", "model_params_b": 1,
                                              "batch_requests": 10, "tokens_per_request": 10}],
                      settings={"currency": "usd", "catalog_fx": 0.14})
    inputs = read_inputs(path, today=TODAY)
    assert inputs.settings.currency == "USD"
    # catalog_fx: the CNY offers, converted at its rate
    a6000 = inputs.gpu("RTX A6000")
    assert a6000.prices["on_demand"] == pytest.approx(5 * 0.14) and a6000.currency == "CNY"  # listed in CNY
    # catalog_fx asks for the Chinese-market offers first: the A100 80G's too, not its USD market one
    assert a6000.provider == "cn-market" and inputs.gpu("A100 80G").provider == "cn-market"
    # the test catalog's RTX 4090 rent contradicts its on-demand price in any currency:
    # 3,000 x 0.14 = 420 a month against 730 h x 3 x 0.14 = 306.6 on demand
    (rent,) = inputs.warnings
    assert rent.key == "catalog_monthly_over_on_demand" and rent.params["gpu"] == "RTX 4090"
    assert rent.params["monthly"] == pytest.approx(420) and rent.params["around_the_clock"] == pytest.approx(306.6)


# ------------------------------------------------------------------ task kinds as records

def test_kind_records_name_real_columns_methods_and_tiers():
    names = {c.name for c in TASK_COLUMNS}
    assert KINDS == tuple(k.name for k in TASK_KINDS) == ("finetune", "pretrain", "inference", "batch")
    for kind in TASK_KINDS:
        assert set(kind.requires) <= names and set(kind.ignores) <= names, kind.name
        assert not set(kind.requires) & set(kind.ignores), kind.name
        assert kind.default_method in kind.methods and set(kind.methods) <= set(column("method").choices)
        assert set(kind.suited_tiers) <= set(TIER_NAMES) and kind.default_tier in TIER_NAMES
        assert kind.requests is None or kind.requests in kind.requires
    assert all(kind.name in EXAMPLE_KINDS for kind in TASK_KINDS)  # `init` shows an example row of every kind


@pytest.mark.parametrize("kind, filled, method, tier", [
    ("finetune", {"train_tokens": "5M"}, "full", "on_demand"),
    ("pretrain", {"train_tokens": "5M"}, "full", "on_demand"),
    ("inference", {"requests_per_day": 10, "tokens_per_request": 10}, "fp16", "monthly"),
    ("batch", {"batch_requests": 10, "tokens_per_request": 10}, "fp16", "idle"),
])
def test_each_kind_gets_its_defaults_and_drops_the_columns_it_ignores(tmp_path, kind, filled, method, tier):
    everything = {"train_tokens": "5M", "requests_per_day": 10, "batch_requests": 10, "tokens_per_request": 10,
                  "kv_cache_gb": 2, "serving_hours_per_day": 8, "epochs": 2}
    path = make_input(tmp_path / "in.xlsx", [{"task_id": "T", "kind": kind, "model_params_b": 1, **everything}])
    values = read_inputs(path, today=TODAY).tasks[0].values
    assert (values["method"], values["tier"]) == (method, tier)
    for name in filled:
        assert values[name] is not None
    ignored = {"finetune": ("requests_per_day", "batch_requests", "tokens_per_request", "serving_hours_per_day",
                            "kv_cache_gb"),
               "inference": ("train_tokens", "epochs", "batch_requests"),
               "batch": ("train_tokens", "epochs", "requests_per_day", "serving_hours_per_day")}
    for name in ignored.get(kind, ignored["finetune"]):
        assert values[name] is None, name


@pytest.mark.parametrize("kind, missing", [("finetune", "train_tokens"), ("inference", "requests_per_day"),
                                           ("inference", "tokens_per_request"), ("batch", "batch_requests")])
def test_each_kind_requires_its_columns(tmp_path, kind, missing):
    row = {"task_id": "T", "kind": kind, "model_params_b": 1, "train_tokens": "5M", "requests_per_day": 10,
           "batch_requests": 10, "tokens_per_request": 10}
    path = make_input(tmp_path / "in.xlsx", [{k: v for k, v in row.items() if k != missing}])
    assert problems(path) == [(Code.REQUIRED, "Tasks", "A2")]


# ------------------------------------------------------------------ bad values: codes and places

def problems(path):
    with pytest.raises(InputError) as info:
        read_inputs(path, today=TODAY)
    return [(p.code, p.sheet, p.cell) for p in info.value.problems]


SERVICE = {"task_id": "T1", "kind": "inference", "model_params_b": 7, "requests_per_day": 1000,
           "tokens_per_request": 200}
CARD = {"gpu": "MyCard", "vram_gb": 32, "bandwidth_gbs": 900, "tflops": 100, "monthly_per_card": 500}


@pytest.mark.parametrize("tasks, settings, gpus, extras, expected", [
    # kv_cache_gb is column F of the task row
    ([{**SERVICE, "kv_cache_gb": -5}], None, None, None, [(Code.NEGATIVE, "Tasks", "F2")]),
    ([{**SERVICE, "cards": 100_001}], None, None, None, [(Code.OUT_OF_RANGE, "Tasks", "F2")]),
    ([{**SERVICE, "cards": "1e9"}], None, None, None, [(Code.OUT_OF_RANGE, "Tasks", "F2")]),
    ([{**SERVICE, "cards": 2.5}], None, None, None, [(Code.NOT_WHOLE, "Tasks", "F2")]),
    ([{**SERVICE, "requests_per_day": "1,5"}], None, None, None, [(Code.NOT_A_NUMBER, "Tasks", "D2")]),
    ([{**SERVICE, "requests_per_day": "1,0,0,0,0"}], None, None, None, [(Code.NOT_A_NUMBER, "Tasks", "D2")]),
    ([{**SERVICE, "requests_per_day": "1,5000"}], None, None, None, [(Code.NOT_A_NUMBER, "Tasks", "D2")]),
    ([{**SERVICE, "requests_per_day": "50%"}], None, None, None, [(Code.NOT_A_NUMBER, "Tasks", "D2")]),
    ([{**SERVICE, "requests_per_day": "1e309"}], None, None, None, [(Code.NOT_FINITE, "Tasks", "D2")]),
    ([{**SERVICE, "requests_per_day": "inf"}], None, None, None, [(Code.NOT_A_NUMBER, "Tasks", "D2")]),
    ([{**SERVICE, "requests_per_day": "nan"}], None, None, None, [(Code.NOT_A_NUMBER, "Tasks", "D2")]),
    ([SERVICE], {"hidden_cost_buffer": "1e309"}, None, None, [(Code.NOT_FINITE, "Settings", "B3")]),
    ([SERVICE], {"currency": "USD", "catalog_fx": 0}, None, None, [(Code.NOT_POSITIVE, "Settings", "B4")]),
    ([SERVICE], {"setup_hours": -1}, None, None, [(Code.NEGATIVE, "Settings", "B3")]),
    ([SERVICE], None, [{**CARD, "monthly_per_card": -500}], None, [(Code.NEGATIVE, "GPUs", "E2")]),
    ([SERVICE], None, [{**CARD, "on_demand_per_hour": -1}], None, [(Code.NEGATIVE, "GPUs", "F2")]),
    ([SERVICE], None, [{**CARD, "scaling": "-100%"}], None, [(Code.NEGATIVE, "GPUs", "F2")]),
    ([SERVICE], None, [{**CARD, "scaling": "150%"}], None, [(Code.OUT_OF_RANGE, "GPUs", "F2")]),
    ([SERVICE], None, [{**CARD, "purchase_price": -25000}], None, [(Code.NEGATIVE, "GPUs", "F2")]),
    ([SERVICE], None, [{**CARD, "power_w": -600}], None, [(Code.NEGATIVE, "GPUs", "F2")]),
    ([SERVICE], None, None, [{"item": "storage", "monthly_cost": -400}], [(Code.NEGATIVE, "Extras", "B2")]),
], ids=["kv_cache_gb", "cards-100001", "cards-1e9", "cards-2.5", "comma-decimal", "commas-anywhere",
        "comma-misgrouped", "percent-of-a-count", "1e309", "inf", "nan", "setting-1e309", "catalog_fx-0", "negative-setting",
        "negative-monthly-price", "negative-hourly-price", "scaling-negative", "scaling-over-1", "purchase-price",
        "power", "extras-cost"])
def test_bad_value_is_refused_with_its_code_at_its_cell(tmp_path, tasks, settings, gpus, extras, expected):
    path = make_input(tmp_path / "in.xlsx", tasks, settings=settings, gpus=gpus, extras=extras)
    assert problems(path) == expected


@pytest.mark.parametrize("raw, expected", [("1,500", 1500), ("12,345,678", 12_345_678), ("-1,000.5", -1000.5),
                                           ("1,500k", 1_500_000), ("1_000", 1000)])
def test_commas_that_group_thousands_are_numbers(raw, expected):
    assert parse_number(raw, Column("x", "number")) == expected


def test_comma_message_says_how_to_write_decimals():
    with pytest.raises(BadValue) as info:
        parse_number("1,5", column("requests_per_day"))
    assert info.value.code is Code.NOT_A_NUMBER
    assert str(info.value) == ('"1,5" is not a number: a comma may only separate thousands (1,500); '
                               "write decimals with a point (1.5)")
    assert "小数请用小数点" in info.value.message.render("zh")


def test_non_finite_number_cell_is_refused(tmp_path):
    path = make_input(tmp_path / "in.xlsx", [{**SERVICE, "requests_per_day": 123456}])
    replace_in_sheet(path, "Tasks", "<v>123456</v>", "<v>1E309</v>")  # a float beyond the largest double
    assert problems(path) == [(Code.NOT_FINITE, "Tasks", "D2")]


def test_scaling_of_minus_100_percent_on_two_cards_is_refused_not_a_crash(tmp_path):
    path = make_input(tmp_path / "in.xlsx", [{**SERVICE, "gpu": "MyCard", "cards": 2}],
                      gpus=[{**CARD, "scaling": "-100%"}])
    assert problems(path) == [(Code.NEGATIVE, "GPUs", "F2")]


# ------------------------------------------------------------------ formulas without a saved result

@pytest.mark.parametrize("tasks, settings, extras, expected", [
    ([SERVICE], {"hidden_cost_buffer": "=0.1+0.2"}, None, ("Settings", "B3")),
    ([{**SERVICE, "model_params_b": "=3+4"}], None, None, ("Tasks", "C2")),   # required: no "required" too
    ([{**SERVICE, "owner": "=A1"}], None, None, ("Tasks", "F2")),              # an echoed unknown column
    ([SERVICE], None, [{"item": "storage", "monthly_cost": "=200*2"}], ("Extras", "B2")),
], ids=["setting", "required-task-cell", "unknown-column", "extras-cost"])
def test_formula_without_a_saved_result_is_refused_at_its_cell(tmp_path, tasks, settings, extras, expected):
    path = make_input(tmp_path / "in.xlsx", tasks, settings=settings, extras=extras)  # openpyxl saves no result
    with pytest.raises(InputError) as info:
        read_inputs(path, today=TODAY)
    [problem] = info.value.problems
    assert (problem.code, problem.sheet, problem.cell) == (Code.FORMULA_WITHOUT_VALUE, *expected)
    assert str(problem) == (f"{expected[0]}!{expected[1]} holds a formula with no saved result: "
                            "open and save it in Excel, or type the value")
    assert problem.render("zh").endswith("含有没有保存结果的公式：请在 Excel 中打开并保存，或直接填写数值")


def test_formula_with_a_saved_result_reads_as_its_result(tmp_path):
    path = tmp_path / "in.xlsx"
    wb = xlsxwriter.Workbook(path)
    settings = wb.add_worksheet("Settings")
    settings.write_row(0, 0, ["setting", "value"])
    settings.write_row(1, 0, ["period_start", "2026-07"])
    settings.write_string(2, 0, "hidden_cost_buffer")
    settings.write_formula(2, 1, "=0.1+0.2", None, 0.30000000000000004)
    tasks = wb.add_worksheet("Tasks")
    tasks.write_row(0, 0, list(SERVICE))
    tasks.write_row(1, 0, list(SERVICE.values()))
    tasks.write_formula(1, 2, "=3+4", None, 7)
    tasks.write_string(0, 5, "note")
    tasks.write_formula(1, 5, '="a"&"b"', None, "ab")
    wb.close()
    inputs = read_inputs(path, today=TODAY)
    assert inputs.settings.hidden_cost_buffer == pytest.approx(0.3)
    assert inputs.tasks[0].values["model_params_b"] == 7 and inputs.tasks[0].extra == {"note": "ab"}


# ------------------------------------------------------------------ given twice

def test_two_sheets_for_one_input_sheet_are_refused_naming_both(tmp_path):
    path = make_input(tmp_path / "in.xlsx", [SERVICE], extra_sheets={"任务": [list(SERVICE), list(SERVICE.values())],
                                                                    "设置": [["setting", "value"]]})
    with pytest.raises(InputError) as info:
        read_inputs(path, today=TODAY)
    found = {(p.code, p.sheet): str(p) for p in info.value.problems}
    assert found == {
        (Code.DUPLICATE_SHEET, "Settings"): 'Settings sheets "Settings" and "设置" are both the Settings sheet: keep one',
        (Code.DUPLICATE_SHEET, "Tasks"): 'Tasks sheets "Tasks" and "任务" are both the Tasks sheet: keep one'}


def test_setting_given_twice_is_refused_naming_both_rows(tmp_path):
    path = make_input(tmp_path / "in.xlsx", [SERVICE], extra_sheets={})
    wb = openpyxl.load_workbook(path)
    wb["Settings"].append(["max_cards", 8])
    wb["Settings"].append(["Max Cards", 16])
    wb.save(path)
    with pytest.raises(InputError) as info:
        read_inputs(path, today=TODAY)
    [problem] = info.value.problems
    assert (problem.code, problem.sheet, problem.cell) == (Code.DUPLICATE_SETTING, "Settings", "A4")
    assert str(problem) == "Settings!A4 setting max_cards is already given in A3: keep one row"


def test_gpu_given_twice_is_refused_naming_both_rows(tmp_path):
    path = make_input(tmp_path / "in.xlsx", [SERVICE], gpus=[CARD, {**CARD, "gpu": "mycard", "monthly_per_card": 1}])
    with pytest.raises(InputError) as info:
        read_inputs(path, today=TODAY)
    [problem] = info.value.problems
    assert (problem.code, problem.sheet, problem.cell) == (Code.DUPLICATE_GPU, "GPUs", "A3")
    assert "already given in A2" in str(problem)


def test_a_gpus_row_for_a_builtin_gpu_is_no_duplicate(tmp_path):
    path = make_input(tmp_path / "in.xlsx", [SERVICE], gpus=[{"gpu": "RTX 4090", "monthly_per_card": 2800}])
    assert read_inputs(path, today=TODAY).gpu("RTX 4090").prices["monthly"] == 2800


def replace_in_sheet(path, sheet, old, new):
    """Replace text in one worksheet's XML (openpyxl names its parts sheet1, sheet2, ... in order)."""
    index = openpyxl.load_workbook(path, read_only=True).sheetnames.index(sheet) + 1
    part = f"xl/worksheets/sheet{index}.xml"
    with zipfile.ZipFile(path) as z:
        members = {name: z.read(name) for name in z.namelist()}
    assert old.encode() in members[part]
    members[part] = members[part].replace(old.encode(), new.encode())
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)


@pytest.mark.parametrize("xml, cells", [
    (b'<c r="B2"><f>0.1+0.2</f><v /></c>', ["B2"]),                        # openpyxl: an empty value
    (b'<x:c r="B2" s="1"><x:f>1+1</x:f></x:c>', ["B2"]),                   # a prefix, no value at all
    (b'<c r="E5"><f t="shared" si="0"/></c><c r="E6"><f t="shared" ref="E6:E7" si="1">A1</f><v>3</v></c>', ["E5"]),
    (b'<c r="C3" t="str"><f>""</f><v></v></c>', []),                       # an empty text is a saved result
    (b'<c r="D4"><f>1+1</f><v>2</v></c><c r="D5" s="1"/><c r="D6"><v>1</v></c>', []),
])
def test_formula_cells_without_a_cached_value_are_found_in_the_sheet_xml(xml, cells):
    sheet = b'<worksheet><sheetData><row r="1">' + xml + b"</row></sheetData></worksheet>"
    assert formulas_without_result(io.BytesIO(sheet)) == cells


def test_the_hash_is_of_the_bytes_that_were_read_even_when_the_file_is_saved_again(tmp_path, monkeypatch):
    path = make_input(tmp_path / "in.xlsx", [{**SERVICE, "requests_per_day": 1000}])
    first = path.read_bytes()
    make_input(tmp_path / "later.xlsx", [{**SERVICE, "requests_per_day": 2000}])
    real_load = reader.load_input_workbook

    def load_then_save_again(*args, **kwargs):  # the user saves a new version while the build runs
        wb = real_load(*args, **kwargs)
        path.write_bytes((tmp_path / "later.xlsx").read_bytes())
        return wb

    monkeypatch.setattr(reader, "load_input_workbook", load_then_save_again)
    inputs = read_inputs(path, today=TODAY)
    assert inputs.tasks[0].values["requests_per_day"] == 1000
    assert inputs.source_sha256 == hashlib.sha256(first).hexdigest() != hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_settings_month_typed_as_a_date_cell_is_that_month(tmp_path):
    """Excel makes 2027-01 typed into a cell the date 2027-01-01: period_start reads it as the month 2027-01."""
    import datetime as dt

    path = make_input(tmp_path / "in.xlsx", [{"task_id": "T1", "kind": "inference", "model_params_b": 7,
                                              "requests_per_day": 1000, "tokens_per_request": 200}],
                      settings={"period_start": dt.datetime(2027, 1, 1), "period_months": 2})
    assert read_inputs(path, today=TODAY).settings.plan_months == ("2027-01", "2027-02")
