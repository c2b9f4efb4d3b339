"""What a person editing the output sees: dropdowns on the Tasks inputs, a Summary banner that follows the
master check, warnings that follow the numbers, and the Summary's totals, labels and chart."""

from __future__ import annotations

import zipfile

import openpyxl
import pytest
from conftest import local_recalc
from openpyxl.utils import get_column_letter
from test_order import catalog_price


@pytest.fixture(scope="module")
def sample(sample_book):
    return sample_book


def _tasks_column(path, header: str) -> str:
    ws = openpyxl.load_workbook(path, read_only=True)["Tasks"]
    headers = next(ws.iter_rows(max_row=1, values_only=True))
    return get_column_letter(headers.index(header) + 1)


def _summary_column_a(values: dict) -> list:
    rows = sorted((int(cell[1:]), v) for (sheet, cell), v in values.items() if sheet == "SUMMARY" and cell[0] == "A"
                  and cell[1:].isdigit())
    return [v for _, v in rows]


@pytest.mark.slow
def test_a_gpu_not_in_the_catalog_shows_on_the_summary_banner(sample):
    """"A100" is not a catalog name (the catalog has "A100 80G"): the banner turns to the failure text."""
    _, path = sample
    gpu = _tasks_column(path, "gpu (chosen)")
    before = local_recalc(path, sheets=("Summary",))
    after = local_recalc(path, {f"Tasks!{gpu}2": "A100"})
    assert before[("SUMMARY", "A2")] == "All checks pass"
    assert after[("SUMMARY", "A2")] == "CHECKS FAIL — see Checks"
    assert after[("CHECKS", "B3")] == 7 and after[("CHECKS", "C3")] == 8 and after[("CHECKS", "D3")] is False


def test_the_banner_turns_red_unless_all_checks_pass(sample):
    _, path = sample
    ws = openpyxl.load_workbook(path)["Summary"]
    rules = [(str(cf.sqref), r) for cf in ws.conditional_formatting for r in cf.rules]
    banner = [r for ref, r in rules if ref == "A2"]
    assert len(banner) == 1 and banner[0].operator == "notContains" and banner[0].text == "All checks pass"
    assert banner[0].dxf.fill.bgColor.rgb.endswith("C00000")


@pytest.mark.slow
def test_an_over_cap_warning_follows_an_edited_cap(sample):
    """The monthly tier holds KB01 (2 RTX 4090 cards), ML03 (1 replica of 2 A100 80G cards) and ML05 (1 L40S) in
    every month, at the catalog's monthly rents: a cap 1,000 under that is exceeded in all three plan months, 1,000 over in none."""
    _, path = sample
    monthly = (2 * catalog_price("RTX 4090", "monthly_per_card") + 2 * catalog_price("A100 80G", "monthly_per_card")
               + catalog_price("L40S", "monthly_per_card"))
    wb = openpyxl.load_workbook(path)
    sheet, ref = wb.defined_names["TierCapMonthly"].attr_text.split("!")
    cell = f"{sheet.strip(chr(39))}!{ref.replace('$', '')}"
    low = _summary_column_a(local_recalc(path, {cell: monthly - 1000}))
    high = _summary_column_a(local_recalc(path, {cell: monthly + 1000}))
    assert "monthly is over its cap in 3 plan month(s) (Tiers)" in low
    assert not any(isinstance(v, str) and "over its cap" in v for v in high)


@pytest.mark.slow
def test_the_tier_advice_follows_an_edited_tier(sample):
    """KB02 (QLoRA refresh on idle RTX 4090) is cheaper on spot; moved to spot, one task fewer is advised."""
    plan, path = sample
    advised = [tp.task.task_id for tp in plan.tasks if tp.row["tier_advice"]]
    assert "KB02" in advised
    tier = _tasks_column(path, "tier")
    row = 2 + [tp.task.task_id for tp in plan.tasks].index("KB02")
    before = _summary_column_a(local_recalc(path, sheets=("Summary",)))
    after = _summary_column_a(local_recalc(path, {f"Tasks!{tier}{row}": "spot"}))
    assert any(isinstance(v, str) and v.startswith(f"{len(advised)} task(s) would cost less") for v in before)
    assert any(isinstance(v, str) and v.startswith(f"{len(advised) - 1} task(s) would cost less") for v in after)


def test_tasks_inputs_that_take_a_name_or_an_enumeration_have_dropdowns(sample):
    _, path = sample
    ws = openpyxl.load_workbook(path)["Tasks"]
    lists = {str(dv.sqref).split(":")[0].rstrip("0123456789"): dv.formula1 for dv in ws.data_validations.dataValidation
             if dv.type == "list"}
    assert lists[_tasks_column(path, "gpu (chosen)")] == "GpuName"
    assert lists[_tasks_column(path, "tier")] == '"monthly,on_demand,idle,spot"'
    assert lists[_tasks_column(path, "kind")] == '"finetune,pretrain,inference,batch"'
    assert lists[_tasks_column(path, "method")] == '"full,lora,qlora,fp16,bf16,fp8,int8,int4,fp4"'
    assert lists[_tasks_column(path, "model")] == "ModelName"


def test_summary_labels_totals_and_chart(sample):
    """One table, the months down the rows: each month's lines, then its GPU cost by tier; the total row's tier
    columns add up to its GPU column; the chart stacks the four tier columns over the months."""
    plan, path = sample
    ws = openpyxl.load_workbook(path, data_only=True)["Summary"]
    rows = list(ws.iter_rows(values_only=True))
    header = next(i for i, r in enumerate(rows) if r[0] == "month")
    assert rows[header][:10] == ("month", "GPU", "commitments", "extras", "hidden-cost buffer", "total",
                                 "GPU: monthly", "GPU: on_demand", "GPU: idle", "GPU: spot")
    assert [r[0] for r in rows[header + 1:header + 1 + len(plan.months)]] == list(plan.months)
    total = rows[header + 1 + len(plan.months)]
    gpu_total = sum(t.gpu for t in plan.month_totals.values())
    assert total[0] == "Total" and total[1] == pytest.approx(gpu_total)
    assert sum(total[6:10]) == pytest.approx(gpu_total)
    for label in ("by kind, GPU only", "by cost center, GPU only"):
        group = next(r for r in rows if r[0] == label)
        assert group[1] == "period cost (CNY)"
    assert any(isinstance(v, str) and "buffer is charged on the GPU cost only" in v for r in rows for v in r)
    with zipfile.ZipFile(path) as z:
        chart = next(z.read(n).decode() for n in z.namelist() if n.startswith("xl/charts/chart"))
    assert '<c:valAx>' in chart and '<c:min val="0"/>' in chart
    assert chart.count("<c:ser>") == 4 and "$G$7:$G$9" in chart and "$J$7:$J$9" in chart


def test_input_echoes_have_thousands_separators_and_headers_are_friendly(sample):
    _, path = sample
    ws = openpyxl.load_workbook(path)["Tasks"]
    headers = [c.value for c in ws[1]]
    assert "epochs" in headers and "training (1 = yes)" in headers
    assert not [h for h in headers if h and "(" in h and h.split(" (")[0] == h.split(" (")[1].rstrip(")")]
    tokens = ws[f"{_tasks_column(path, 'train_tokens (tokens per epoch)')}3"]
    assert tokens.value == 5_000_000 and tokens.number_format == "[<1000]General;#,##0"


def test_enumerations_on_gpus_extras_and_assumptions_have_dropdowns(sample):
    _, path = sample
    wb = openpyxl.load_workbook(path)

    def lists(sheet):
        return {dv.formula1 for dv in wb[sheet].data_validations.dataValidation if dv.type == "list"}
    assert {'"consumer,workstation,datacenter"', '"nvlink,pcie"', '"sxm,pcie"'} <= lists("GPUs")
    assert lists("Extras") == {'"storage,egress,images,platform,other"'}
    # gpu_choice, consumer_online, offer_currency, kv_cache_dtype, activation_checkpointing
    assert lists("Assumptions") == {'"cheapest,balanced"', '"excluded,allowed"', '"auto,plan,any"', '"fp16,fp8"',
                                    '"yes,no"'}
