"""The Chinese workbook shows tiers, kinds and verdicts in Chinese while the formulas keep the ASCII keys."""

from __future__ import annotations

import openpyxl
import pytest
from conftest import local_recalc, prove
from test_i18n import builds  # noqa: F401  (the CLI builds with bills, in English and in Chinese)


@pytest.fixture(scope="module")
def zh(sample_book_zh):
    return sample_book_zh


def test_people_read_chinese_values_and_formulas_compare_ascii_keys(zh):
    _, path = zh
    wb = openpyxl.load_workbook(path, data_only=True)
    rows = list(wb["Summary"].iter_rows(values_only=True))
    summary = [r[0] for r in rows]
    assert {"微调", "预训练", "推理", "批量"} <= set(summary)
    header = next(r for r in rows if r[0] == "月份")
    assert {"GPU: 包月", "GPU: 按需", "GPU: 闲置", "GPU: 竞价"} <= set(header)
    task_list = list(wb["TaskList"].iter_rows(min_row=2, values_only=True))
    kb01 = next(r for r in task_list if r[1] == "KB01")
    assert (kb01[3], kb01[7]) == ("推理", "包月")           # kind, tier of KB01 (inference, monthly)
    order = [r[:2] for r in wb["Order"].iter_rows(values_only=True) if r[0] == "RTX 4090"]
    assert ("RTX 4090", "包月") in order
    tasks = wb["Tasks"]
    tier_col = next(c.column for c in tasks[1] if c.value == "计费方式")
    assert tasks.cell(2, tier_col).value == "monthly"     # the input keeps the key the formulas compare
    tier_rows = [r for r in wb["Tiers"].iter_rows(min_row=2, values_only=True)]
    assert {r[0] for r in tier_rows} == {"包月", "按需", "闲置", "竞价"}


@pytest.mark.slow
def test_the_chinese_workbook_recalculates_to_its_cached_values(zh):
    """Every formula evaluated from the cells it reads, on every sheet but Candidates (two thirds of the formulas):
    its formulas are the English ones byte for byte (test_i18n.test_formulas_are_identical_in_both_languages) and
    the English sample proves them in full (test_workbook); the Chinese words reach it through the same WordShown
    lookups proven here."""
    _, path = zh
    sheets = [ws.title for ws in openpyxl.load_workbook(path, read_only=True).worksheets if ws.title != "Candidates"]
    assert prove(path, sheets) == []
    assert local_recalc(path, sheets=("Summary",))[("SUMMARY", "A2")] == "全部检查通过"


def test_recon_heads_the_task_id_column_as_task_id(builds):  # noqa: F811
    ws = openpyxl.load_workbook(builds["zh"][0], read_only=True)["Recon 2026-07"]
    headers = [r for r in ws.iter_rows(values_only=True) if r and r[0] in ("任务编号", "资源")]
    assert headers[0][0] == "任务编号"
    assert headers[1][:2] == ("资源", "任务编号")
    assert not any("任务描述" in (v or "") for r in headers for v in r)
