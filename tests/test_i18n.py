"""Chinese and English workbooks: the reader takes either, `--lang zh` writes Chinese, the numbers do not move."""

from __future__ import annotations

import csv
import json
import re
import string

import openpyxl
import pytest
from click.testing import CliRunner
from conftest import REPO, SAMPLE, TODAY, formula_cells, make_input

from budgetgen.cli import main
from budgetgen.core.i18n import MESSAGES, NAMES_ZH, PROBLEMS, SHEETS_ZH, TEMPLATES, TEXT_ZH, VALUES_ZH, Message
from budgetgen.core.schema import (
    EXTRA_CATEGORIES,
    GPU_CHOICES,
    GPU_CLASSES,
    KINDS,
    SETTINGS,
    SHEETS,
    TIER_NAMES,
)
from budgetgen.io.reader import read_inputs
from budgetgen.model.columns import CALCS
from budgetgen.recon import ACTIONS

SAMPLE_ZH = REPO / "tests" / "data" / "q3-zh.xlsx"
DATE = ("--date", TODAY.isoformat())
# A bill for the sample: KB01's card 5% busy (low_utilization) so the Recon tab carries an action.
BILL = [["ChargePeriodStart", "BilledCost", "ResourceId", "ServiceName", "ConsumedQuantity", "ConsumedUnit",
         "BillingCurrency", "Tags"],
        ["2026-07-01", 3000, "i-kb01", "GPU cloud", 730, "Hours", "CNY", '{"task_id": "KB01"}'],
        ["2026-07-02", 400, "vol-1", "Object storage", 500, "GB-Mo", "CNY", "NULL"]]
USAGE = [["resource_id", "month", "gpu_util_pct", "mem_used_gb", "mem_total_gb", "oom_events"],
         ["i-kb01", "2026-07", 5, 6, 24, 0]]


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    """The sample built in English, the Chinese sample built in Chinese, and the sample built in Chinese."""
    tmp = tmp_path_factory.mktemp("i18n")
    bill, usage = tmp / "bill.csv", tmp / "usage.csv"
    for path, rows in ((bill, BILL), (usage, USAGE)):
        with path.open("w", newline="") as fh:
            csv.writer(fh).writerows(rows)
    out = {}
    for key, source, lang in (("en", SAMPLE, "en"), ("zh", SAMPLE_ZH, "zh"), ("en-as-zh", SAMPLE, "zh")):
        book, js = tmp / f"{key}.xlsx", tmp / f"{key}.json"
        result = run("build", source, "-o", book, "--json", js, "--bills", bill, "--usage", usage, "--lang", lang,
                     "-q", *DATE)
        assert result.exit_code == 0, result.output
        out[key] = (book, json.loads(js.read_text(encoding="utf-8")), result.output)
    return out


@pytest.mark.slow
def test_chinese_sample_builds_to_the_numbers_of_the_english_one(builds):
    _, en, _ = builds["en"]
    _, zh, _ = builds["zh"]
    # the sample on the tests' fixed catalog: 154,427 under model v2; model v3's LoRA MFU (0.55) and QLoRA FLOPs
    # (5.1) make KB03 and KB02 72.93 a month cheaper, x 3 months x 1.25 buffer = 273.5 less: 154,153.15; the USD
    # offers in USD no longer price a CNY plan (offer_currency auto: the plan's own market), so the H200, priced in
    # USD only, is not an option and ML01 stays on 2 A100 80G at 900.89 a month (it moved to one H200 while USD
    # offers were converted into CNY plans)
    assert en["period_total"] == pytest.approx(154_153.15, abs=1)
    assert zh == en  # every number, key and canonical value; warnings in the JSON stay English


@pytest.mark.slow
def test_formulas_are_identical_in_both_languages(builds):
    en = {cell: formula for cell, (formula, _) in formula_cells(builds["en"][0]).items()}
    zh = {cell: formula for cell, (formula, _) in formula_cells(builds["en-as-zh"][0]).items()}
    assert any(sheet.startswith("RECON") for sheet, _ in en)
    assert zh == en


def test_chinese_build_has_chinese_headers_labels_and_warnings(builds):
    wb = openpyxl.load_workbook(builds["zh"][0], read_only=True, data_only=True)
    tasks_header = next(wb["Tasks"].iter_rows(max_row=1, values_only=True))
    assert tasks_header[:3] == ("任务编号", "任务描述", "类型")
    assert "计费建议" in tasks_header
    summary = [row[0] for row in wb["Summary"].iter_rows(values_only=True)]
    assert summary[2] == "计划期合计"
    assert {"按类型（仅GPU）", "按成本中心（仅GPU）", "警告"} <= set(summary)
    # The tier advice is a live sentence: the tasks advised in the JSON, and what their cheapest tier saves.
    advised = [t for t in builds["zh"][1]["tasks"] if t["tier_advice"]]
    saving = sum(t["monthly_cost"] - t["tier_costs"][t["cheapest_tier"]] for t in advised)
    assert f"{len(advised)} 个任务改用最便宜的适用计费方式会更省钱，每月可省 {round(saving):,}（见任务表的计费建议）" in summary
    assert summary[1] == "全部检查通过"
    assert wb.sheetnames[:4] == ["Summary", "Order", "Assumptions", "GPUs"]  # output sheet names stay ASCII
    recon = wb["Recon 2026-07"]
    actions = [row[10] for row in recon.iter_rows(values_only=True) if row[0] == "i-kb01"]
    assert actions == [TEXT_ZH[ACTIONS["low_utilization"]] + "."]


def test_diff_reads_a_chinese_budget_like_an_english_one(builds):
    result = run("diff", builds["en"][0], builds["zh"][0], *DATE)
    assert result.exit_code == 0, result.output
    assert "no changes" in result.output and "154,153 -> 154,153" in result.output


def test_cli_prints_chinese_summary_lines(builds):
    output = builds["zh"][2]
    assert output.startswith("已写入 ")
    (period,) = re.findall(r"计划期合计 2026-07 至 2026-09：([\d,.]+) CNY", output)
    assert round(float(period.replace(",", ""))) == 154_153
    # model v2's 30,349 less KB02 and KB03's 72.93 (model v3), no commitment (a term is longer than the plan), a
    # buffer of 25%, the 1,000 of extras: every part to the cent, and they add up
    (line,) = re.findall(r"  2026-07：GPU ([\d,.]+) \+ 承诺 ([\d,.]+) \+ 额外费用 ([\d,.]+) \+ 缓冲 ([\d,.]+) = "
                         r"([\d,.]+) CNY", output)
    gpu, commitments, extras, buffer, total = (float(x.replace(",", "")) for x in line)
    assert round(gpu) == 30_276 and (commitments, extras) == (0.0, 1000.0)
    assert buffer == pytest.approx(0.25 * gpu, abs=0.006) and total == pytest.approx(gpu + extras + buffer, abs=0.011)
    assert "警告：6 个任务有更便宜的计费方式，合计每月" in output and "KB01（按需代替包月，每月 4,540 CNY）" in output
    assert "Warning:" not in output and "Period total" not in output


def test_chinese_error_lines_keep_sheet_and_cell(tmp_path):
    book = make_input(tmp_path / "bad.xlsx", [{"任务编号": "T1", "类型": "推理", "model_params_b": "seven"}])
    result = CliRunner().invoke(main, ["build", str(book), "--lang", "zh", *DATE])
    assert result.exit_code == 1
    assert '错误：Tasks!C2 model_params_b："seven" 不是数字（十亿参数，例如 7 或 7B）' in result.output
    assert "发现 3 个问题；未写入任何文件。" in result.output


# One workbook with many §9 mistakes of the reader; each is printed in English and in Chinese at the same place.
MISTAKES = [
    ("Settings!B3", 'currency: "dollars" is not an ISO currency code', 'currency："dollars" 不是 ISO 币种代码'),
    ("Settings!B4", "period_months: 0 must be between 1 and 120", "period_months：0 必须介于 1 和 120 之间"),
    ("Settings!A5", 'setting "mfuu" is unknown (did you mean mfu?)', '设置项 "mfuu" 未知（是否应为 mfu？）'),
    ("GPUs!A2", 'gpu: "NEW?" contains ?, which spreadsheet lookups', 'gpu："NEW?" 含有 ?，电子表格查找会将其视为通配符'),
    ("Tasks!C2", 'model_params_b: "seven" is not a number (billions of parameters, e.g. 7 or 7B)',
                 'model_params_b："seven" 不是数字（十亿参数，例如 7 或 7B）'),
    ("Tasks!D2", "requests_per_day: -5 must be greater than zero (requests/day)",
                 "requests_per_day：-5 必须大于零（请求/日）"),
    ("Tasks!E2", "tokens_per_request: 1e+308 is too large (output tokens): at most 1e+15",
                 "tokens_per_request：1e+308 太大（输出token）：最大为 1e+15"),
    ("Tasks!F2", "cards: 1.5 must be a whole number (cards)", "cards：1.5 必须是整数（卡）"),
    ("Tasks!G2", 'tier: "cheap" is not one of monthly, on_demand, idle, spot',
                 'tier："cheap" 不是以下之一：包月、按需、闲置、竞价'),
    ("Tasks!H2", 'end_month: "nope" is not a month (write YYYY-MM, e.g. 2026-07)',
                 'end_month："nope" 不是月份（请写成 YYYY-MM，例如 2026-07）'),
    ("Tasks!I2", 'method: "lora" is not a method for inference tasks (use fp16, bf16, fp8, int8, int4, fp4)',
                 'method："lora" 不适用于推理任务（请使用 fp16、bf16、fp8、int8、int4、fp4）'),
    ("Tasks!J2", 'gpu: "X9" is not in the catalog', 'gpu："X9" 不在目录中'),
    ("Tasks!A3", 'task_id: "t1" is already used in A2 (task ids must be unique, ignoring case)',
                 'task_id："t1" 已在 A2 使用（任务编号必须唯一，不区分大小写）'),
    ("Tasks!K3", "start_month: 2026-01 is outside the plan 2026-07 to 2026-09",
                 "start_month：2026-01 不在计划期 2026-07 至 2026-09 内"),
    ("Tasks!A3", "train_tokens: required for finetune tasks (tokens per epoch): fill it in",
                 "train_tokens：微调任务必填（每轮token）：请填写"),
    ("Tasks!H4", "end_month: 2026-07 is before start_month 2026-09", "end_month：2026-07 早于 start_month 2026-09"),
]


def test_chinese_input_problems_at_the_same_places_as_english(tmp_path):
    book = make_input(tmp_path / "bad.xlsx", [
        {"task_id": "T1", "kind": "inference", "model_params_b": "seven", "requests_per_day": -5,
         "tokens_per_request": 1e308, "cards": 1.5, "tier": "cheap", "end_month": "nope", "method": "lora",
         "gpu": "X9"},
        {"task_id": "t1", "kind": "finetune", "model_params_b": 7, "start_month": "2026-01"},
        {"task_id": "T3", "kind": "batch", "model_params_b": 7, "batch_requests": 5, "tokens_per_request": 9,
         "start_month": "2026-09", "end_month": "2026-07"},
    ], settings={"currency": "dollars", "period_months": 0, "mfuu": 1}, gpus=[{"gpu": "NEW?", "vram_gb": 10,
                                                                              "bandwidth_gbs": 1, "tflops": 1}])
    lines = {}
    for lang in ("en", "zh"):
        result = run("validate", book, "--lang", lang, *DATE)
        assert result.exit_code == 1, result.output
        lines[lang] = result.output.splitlines()
    for place, en, zh in MISTAKES:
        assert any(line.startswith(f"Error: {place} {en}") for line in lines["en"]), (place, lines["en"])
        assert any(line.startswith(f"错误：{place} {zh}") for line in lines["zh"]), (place, lines["zh"])
    # every problem line in both languages, at the same places and in the same order
    places = {lang: [line.split(" ")[0].split("：")[-1].split(":")[0] for line in out[:-1]]
              for lang, out in (("en", [x.removeprefix("Error: ") for x in lines["en"]]), ("zh", lines["zh"]))}
    assert places["en"] == places["zh"] and len(places["en"]) == len(MISTAKES)
    assert not [line for line in lines["zh"] if "Error" in line or " is " in line or "must be" in line]
    assert lines["zh"][-1] == f"发现 {len(MISTAKES)} 个问题；未写入任何文件。"


def test_chinese_engine_and_sheet_problems(tmp_path):
    book = make_input(tmp_path / "big.xlsx", [
        {"task_id": "T1", "kind": "inference", "model_params_b": 2600, "requests_per_day": 10, "tokens_per_request": 9},
        {"task_id": "T2", "kind": "finetune", "model_params_b": 700, "train_tokens": "1M", "gpu": "A100 80G"}])
    result = run("build", book, "--lang", "zh", "-o", tmp_path / "out.xlsx", *DATE)
    assert result.exit_code == 1 and not (tmp_path / "out.xlsx").exists()
    # 2,600B fp16: 5,720 GB with runtime + 8 sequences of 1,009 tokens x 40,000 x sqrt(2600) bytes = 5,736.5 GB
    assert "错误：Tasks!C2 model_params_b：需要 5,736.5 GB 显存，超过 64 张最大显卡（H200，141 GB）的总和" in result.output
    # 700B full training: 700 x 16.6 = 11,620 GB on 72 GB usable: 162 cards, a run shape of 21 nodes of 8
    assert "错误：Tasks!G3 gpu：需要 168 × A100 80G，max_cards 为 64：请设置 cards 或提高 max_cards" in result.output
    wb = openpyxl.Workbook()
    wb.active.title = "Nope"
    wb.save(tmp_path / "no-tasks.xlsx")
    result = run("validate", tmp_path / "no-tasks.xlsx", "--lang", "zh", *DATE)
    assert result.exit_code == 1
    assert result.output.startswith("错误：Tasks 工作表缺失：工作簿需要 Tasks（任务）工作表")


def test_english_input_problems_are_unchanged(tmp_path):
    book = make_input(tmp_path / "bad.xlsx", [{"task_id": "T1", "kind": "inference", "model_params_b": "seven"}])
    result = run("validate", book, *DATE)
    assert 'Error: Tasks!C2 model_params_b: "seven" is not a number (billions of parameters, e.g. 7 or 7B)' \
        in result.output.splitlines()


@pytest.mark.parametrize("key", ["no_fitting_price", "gpu_no_price", "cards_do_not_fit"])
def test_engine_price_and_card_problems_render_in_chinese(key):
    params = {"no_fitting_price": {"tier": "spot", "fits": "L4, H200"}, "gpu_no_price": {"gpu": "L4", "tier": "idle"},
              "cards_do_not_fit": {"reason": Message("excluded_cards", cards_min=3, vram=100.0, given=1)}}[key]
    message = Message(key, **params)
    zh = message.render("zh")
    assert message.render("en") == message and message.split(":")[0] == zh.split("：")[0]
    assert not any(w in zh for w in ("has no", "does not fit", "raise cards", "spot", "idle"))


def test_init_in_chinese_then_build_without_edits(tmp_path):
    book = tmp_path / "模板.xlsx"
    assert run("init", book, "--lang", "zh").exit_code == 0
    wb = openpyxl.load_workbook(book)
    assert wb.sheetnames == ["设置", "任务", "GPU", "模型", "额外费用", "汇率", "渐进", "情景", "预算"]
    header = [c.value for c in wb["任务"][1]]
    assert header[:3] == ["任务编号", "任务描述", "类型"]
    assert [row[2] for row in wb["任务"].iter_rows(min_row=2, values_only=True)] == ["微调", "预训练", "推理", "批量", "推理"]
    assert wb["设置"]["A2"].value == "币种"
    result = run("build", book, "-o", tmp_path / "out.xlsx", "--lang", "zh", *DATE)
    assert result.exit_code == 0, result.output
    assert "计划期合计" in result.output


def test_reader_accepts_chinese_values_and_names_mixed_with_english(tmp_path):
    book = make_input(tmp_path / "mixed.xlsx", [
        {"task_id": "S1", "kind": "推理", "model_params_b": 7, "方法": "int4", "每日请求数": 1000,
         "tokens_per_request": 100, "计费方式": "包月"},
        {"task_id": "S2", "kind": "微调", "model_params_b": 7, "方法": "全量", "train_tokens": "1M", "计费方式": "竞价"},
    ], settings={"计划月数": 2, "gpu_choice": "均衡"}, extras=[{"项目": "disk", "费用类别": "存储", "月费用": 10}])
    inputs = read_inputs(book, today=TODAY)
    s1, s2 = (t.values for t in inputs.tasks)
    assert (s1["kind"], s1["method"], s1["requests_per_day"], s1["tier"]) == ("inference", "int4", 1000, "monthly")
    assert (s2["kind"], s2["method"], s2["tier"]) == ("finetune", "full", "spot")
    assert inputs.settings.gpu_choice == "balanced" and inputs.settings.plan_months == ("2026-07", "2026-08")
    assert inputs.extras[0].category == "storage"


def test_reader_accepts_chinese_sheet_names(tmp_path):
    wb = openpyxl.Workbook()
    wb.active.title = "任务"
    wb.active.append(["task_id", "kind", "model_params_b", "requests_per_day", "tokens_per_request"])
    wb.active.append(["S1", "inference", 7, 1000, 100])
    settings = wb.create_sheet("设置")
    settings.append(["setting", "value"])
    settings.append(["period_start", "2026-09"])
    wb.save(tmp_path / "sheets.xlsx")
    inputs = read_inputs(tmp_path / "sheets.xlsx", today=TODAY)
    assert inputs.settings.plan_months[0] == "2026-09" and inputs.tasks[0].task_id == "S1"


def test_every_input_name_and_value_has_one_unambiguous_chinese_word():
    names = {c.name for columns in SHEETS.values() for c in columns if c.name != "YYYY-MM"}  # Ramp: its months
    names |= {s.key for s in SETTINGS}
    assert names <= set(NAMES_ZH)
    assert set(KINDS + TIER_NAMES + GPU_CLASSES + EXTRA_CATEGORIES + GPU_CHOICES) <= set(VALUES_ZH)
    for table in (NAMES_ZH, VALUES_ZH, SHEETS_ZH):
        assert len(set(table.values())) == len(table), "two names share a Chinese word: the reader could not tell"


def test_every_output_text_has_chinese():
    texts = {c.header for c in CALCS} | {c.unit for c in CALCS if c.unit not in ("", "x", "GB", "FLOP", "#", "tokens/s")}
    texts |= {s.help for s in SETTINGS} | {c.help for columns in SHEETS.values() for c in columns}
    texts |= set(ACTIONS.values())
    assert texts - set(TEXT_ZH) == set()


@pytest.mark.parametrize("key", sorted(TEMPLATES))
def test_message_templates_take_the_same_parameters_in_both_languages(key):
    """Warnings and input problems alike: the same fields, each with the same conversion (!t, !n, !l)."""
    assert set(TEMPLATES) == set(MESSAGES) | set(PROBLEMS)
    en, zh = ({(field, conv) for _, field, _, conv in string.Formatter().parse(t) if field} for t in TEMPLATES[key])
    assert en == zh


def test_message_is_english_text_that_renders_chinese():
    message = Message("tier_over_cap", tier="spot", cap=1000, months="2026-07")
    assert message == "spot is over its cap of 1,000 in 2026-07"
    assert message.render("zh") == "竞价在 2026-07 超出上限 1,000"


def test_validate_speaks_chinese():
    result = run("validate", SAMPLE_ZH, "--lang", "zh", *DATE)
    assert result.exit_code == 0, result.output
    # the test catalog's RTX 4090 rent; its unpriced H200 and L4; cheaper tiers for KB01, KB02, KB03, ML01, ML04,
    # ML05; no failover for the one-replica services ML03 and ML05; under a fifth of capacity to spare with
    # peak_factor 1 for KB01 and ML05: 12 warnings of 5 kinds, one line a kind
    assert result.output.splitlines()[-1] == "通过：8 个任务，12 条警告。"
    assert sum(line.startswith("警告：") for line in result.output.splitlines()) == 5
    assert "警告：RTX 4090：包月单价 monthly_per_card 3,000 高于 730 小时 × 按需单价 on_demand_per_hour 3 = 2,190" \
        in result.output
    assert "警告：2 个服务只有一个副本，没有故障切换：ML03、ML05；" in result.output
    assert "警告：6 个任务有更便宜的计费方式" in result.output and "KB01（按需代替包月，每月 4,540 CNY）" in result.output
