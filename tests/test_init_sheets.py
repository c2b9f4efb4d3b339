"""`budgetgen init` writes every input sheet the reader accepts (schema.SHEETS), each with its header notes in both
languages; the sheets whose rows change the plan (Models, FX, Ramp, Scenarios, Budgets) are written empty and read
back as nothing, a row typed under their headers is read; and the notes name only docs/ pages that exist."""

from __future__ import annotations

import json
import re

import openpyxl
import pytest
from click.testing import CliRunner
from conftest import REPO, shipped_catalogs

from budgetgen.catalog.models import builtin_models
from budgetgen.cli import main
from budgetgen.core.schema import SHEETS
from budgetgen.io.reader import read_inputs

DATE = "2026-12-01"  # init and build on one day: the plan is 2027-01 to 2027-03
EMPTY = ("Models", "FX", "Ramp", "Scenarios", "Budgets")  # the sheets init leaves without rows
ZH = {"Settings": "设置", "Tasks": "任务", "GPUs": "GPU", "Models": "模型", "Extras": "额外费用", "FX": "汇率",
      "Ramp": "渐进", "Scenarios": "情景", "Budgets": "预算"}


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def init(path, *options):
    result = run("init", path, "--date", DATE, *options)
    assert result.exit_code == 0, result.output
    return path


def notes(ws) -> dict[str, str]:
    return {c.coordinate: c.comment.text for c in ws[1] if c.comment}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_init_writes_every_input_sheet_with_headers_and_notes(tmp_path, lang):
    wb = openpyxl.load_workbook(init(tmp_path / "plan.xlsx", "--lang", lang))
    titles = [ZH[s] if lang == "zh" else s for s in SHEETS]
    assert len(SHEETS) == 9 and wb.sheetnames == titles
    for sheet, title in zip(SHEETS, titles, strict=True):
        ws = wb[title]
        header = [c.value for c in ws[1]]
        named = [c for c in SHEETS[sheet] if c.name != "YYYY-MM"]
        assert len([h for h in header if h]) == len(named), f"{title}: {header}"
        assert set(notes(ws)) == {c.coordinate for c in ws[1]}, f"{title}: a header without its note"
        if sheet in EMPTY:
            assert ws.max_row == 1, f"{title} has rows"
    if lang == "en":
        assert [c.value for c in wb["Scenarios"][1]] == ["driver", "task_id", "low", "base", "high", "source"]
        assert [c.value for c in wb["Budgets"][1]] == ["cost_center", "monthly_budget", "source"]
        assert [c.value for c in wb["FX"][1]] == ["currency", "rate", "as_of", "source"]
        # Ramp: task_id, and the months' note on the blank cell the first month goes in
        assert wb["Ramp"]["A1"].value == "task_id" and wb["Ramp"]["B1"].value is None
        assert notes(wb["Ramp"])["B1"].startswith("one column per plan month (headed by the month)")
        assert notes(wb["Budgets"])["B1"] == (
            "the budget of every plan month: against the month's total for the whole plan, against the GPU cost of "
            "the cost center's tasks for a cost center Unit: currency/month. Required. Example: 50000.")
        assert "Example: 0.8." in notes(wb["Scenarios"])["C1"]
    else:
        assert [c.value for c in wb["情景"][1]] == ["驱动因素", "任务编号", "低", "基准", "高", "来源"]
        assert [c.value for c in wb["预算"][1]] == ["成本中心", "月预算", "来源"]
        driver = notes(wb["情景"])["A1"]
        assert driver.startswith("requests：每日请求数") and "price_spot：竞价计费方式的GPU价格" in driver
        assert "示例：requests。" in driver
        for title in ("情景", "模型", "汇率", "渐进", "预算", "设置"):  # every note in Chinese, none left in English
            for cell, text in notes(wb[title]).items():
                assert re.search(r"[\u4e00-\u9fff]", text), f"{title}!{cell}: {text}"
                assert not re.search(r"\b(the|of|blank)\b", text), f"{title}!{cell} has English: {text}"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_empty_sheets_read_back_as_no_scenarios_budgets_ramp_models_or_rates(tmp_path, lang):
    book = init(tmp_path / "plan.xlsx", "--lang", lang)
    inputs = read_inputs(book)
    assert inputs.scenarios == () and inputs.budgets == () and inputs.ramps == {}
    assert [m.name for m in inputs.models.models] == [m.name for m in builtin_models().models]
    assert len(inputs.tasks) == 5 and len(inputs.extras) == 2


def _column(ws, name: str) -> int:
    """The 1-based column of a header written in either language."""
    header = [c.value for c in ws[1]]
    return header.index(name) + 1


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_row_typed_under_each_written_header_is_read(tmp_path, lang):
    """The sheets are not ignored: one row on each, under the headers init wrote, reaches the inputs."""
    book = init(tmp_path / "plan.xlsx", "--lang", lang)
    t = (lambda en, zh: zh) if lang == "zh" else (lambda en, zh: en)
    wb = openpyxl.load_workbook(book)
    scenarios, budgets, ramp = wb[t("Scenarios", "情景")], wb[t("Budgets", "预算")], wb[t("Ramp", "渐进")]
    models, fx, gpus = wb[t("Models", "模型")], wb[t("FX", "汇率")], wb[t("GPUs", "GPU")]
    scenarios.cell(2, _column(scenarios, t("driver", "驱动因素")), "requests")
    scenarios.cell(2, _column(scenarios, t("low", "低")), 0.8)
    scenarios.cell(2, _column(scenarios, t("high", "高")), 1.5)
    budgets.cell(2, _column(budgets, t("monthly_budget", "月预算")), 50000)
    ramp["B1"], ramp["A2"], ramp["B2"] = "2027-02", "EXAMPLE-01", 0.5
    models.cell(2, _column(models, t("model", "模型")), "Tiny-1B")
    models.cell(2, _column(models, t("total_params_b", "总参数量B")), 1)
    fx.cell(2, _column(fx, t("currency", "币种")), "USD")
    fx.cell(2, _column(fx, t("rate", "汇率值")), 7)
    row = next(r for r in range(2, gpus.max_row + 1) if gpus.cell(r, 1).value == "A100 80G")
    gpus.cell(row, _column(gpus, t("currency", "币种")), "USD")
    gpus.cell(row, _column(gpus, t("on_demand_per_hour", "按需单价每小时"))).value = 2
    wb.save(book)
    inputs = read_inputs(book)
    (scenario,) = inputs.scenarios
    assert (scenario.driver, scenario.task_id, scenario.low, scenario.base, scenario.high) == (
        "requests", "", 0.8, 1.0, 1.5)
    assert [(b.cost_center, b.monthly_budget) for b in inputs.budgets] == [("", 50000)]
    assert inputs.ramps == {"EXAMPLE-01": {2: 0.5}}   # 2027-02: the plan's second month
    assert "Tiny-1B" in inputs.models
    assert inputs.gpu("A100 80G").prices["on_demand"] == pytest.approx(2 * 7)   # 2 USD at 7 CNY per USD


@pytest.mark.parametrize("currency", ["USD", "CNY"])
def test_untouched_init_builds_as_it_would_without_the_empty_sheets(tmp_path, currency):
    """With the catalogs the package ships, `init` then `build` of the untouched file plans the examples; deleting the
    sheets init leaves empty (the four sheets init wrote before) changes no number of the results."""
    with shipped_catalogs():
        book = init(tmp_path / "plan.xlsx", "--currency", currency)
        wb = openpyxl.load_workbook(book)
        for sheet in EMPTY:
            del wb[sheet]
        wb.save(tmp_path / "four.xlsx")
        results = {}
        for name in ("plan", "four"):
            out = tmp_path / f"{name}.json"
            result = run("build", tmp_path / f"{name}.xlsx", "-o", tmp_path / f"{name}-budget.xlsx", "--json", out,
                         "--date", DATE)
            assert result.exit_code == 0, result.output
            results[name] = json.loads(out.read_text(encoding="utf-8"))
    plan, four = results["plan"], results["four"]
    assert plan["currency"] == currency and plan["months"] == ["2027-01", "2027-02", "2027-03"]
    assert len(plan["tasks"]) == 5 and plan["period_total"] > 0
    assert plan["scenarios"] == four["scenarios"] and plan["budgets"] == four["budgets"] == []
    assert plan == four


def _note_texts(path) -> list[str]:
    """Every header note of a workbook and the Settings sheet's note column (what each setting means)."""
    wb = openpyxl.load_workbook(path)
    texts = [c.comment.text for ws in wb.worksheets for row in ws.iter_rows() for c in row if c.comment]
    settings = wb.worksheets[0]
    texts += [row[2] for row in settings.iter_rows(min_row=2, values_only=True) if row[2]]
    return texts


@pytest.mark.parametrize("template", ["budget-input.xlsx", "budget-input-zh.xlsx"])
def test_every_docs_page_a_note_names_exists_and_no_note_says_see_readme(template):
    texts = _note_texts(REPO / "templates" / template)
    named = {m for text in texts for m in re.findall(r"docs/[\w.-]+\.md", text)}
    assert "docs/input-reference.md" in named   # the setting column's note, the commitment discounts
    assert [p for p in sorted(named) if not (REPO / p).is_file()] == []
    assert [t for t in texts if "README" in t] == []


def test_the_docs_check_sees_a_missing_page(tmp_path):
    """The pattern finds a page named in prose and a missing one is told apart."""
    named = re.findall(r"docs/[\w.-]+\.md", "see docs/finance-guide.md, and docs/no-such-page.md.")
    assert named == ["docs/finance-guide.md", "docs/no-such-page.md"]
    assert [p for p in named if not (REPO / p).is_file()] == ["docs/no-such-page.md"]
