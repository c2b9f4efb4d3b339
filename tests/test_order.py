"""The Order sheet: what to buy per GPU type and tier, derived by hand from the sample's task table and
recalculated from the Tasks names (each formula evaluated by `formulas` from the cells it reads)."""

from __future__ import annotations

import csv
import math

import openpyxl
import pytest
from conftest import TEST_PRICES, local_recalc, prove

from budgetgen.order import plan_order
from budgetgen.workbook.layout import OrderLayout


def catalog_price(gpu: str, column: str) -> float:
    """A price of the built-in catalog in force, the test catalog's Chinese-market offer (the sample is a CNY plan
    without a GPUs sheet), as its file states it: read from the file itself, not through budgetgen's reader."""
    with TEST_PRICES.open(newline="", encoding="utf-8") as fh:
        return float(next(row for row in csv.DictReader(fh)
                           if row["gpu"] == gpu and row["provider"] == "cn-market")[column])


@pytest.fixture(scope="module")
def built(sample_book):
    plan, out = sample_book
    return plan, out, openpyxl.load_workbook(out, data_only=True)["Order"]


def _header(ws) -> list[str]:
    """The Order table's headers without their units: `total (CNY)` is `total`."""
    return [c.value.split(" (")[0] if c.value else c.value for c in ws[OrderLayout.header + 1]]


def _line(ws, gpu: str, tier: str) -> dict:
    """The Order line of `gpu` on `tier` as header -> cached value."""
    header = _header(ws)
    for row in ws.iter_rows(min_row=OrderLayout.first + 1, values_only=True):
        if row[0] == gpu and row[1] == tier:
            return dict(zip(header, row, strict=False))
    raise AssertionError(f"no Order line for {gpu} {tier}")


def test_order_is_right_after_summary(built):
    _, out, _ = built
    assert openpyxl.load_workbook(out, read_only=True).sheetnames[:2] == ["Summary", "Order"]


def test_the_rtx_4090_monthly_line_derived_from_the_task_table(built):
    """KB01 is the only monthly RTX 4090 task (Tasks sheet of inputs/q3.xlsx): 10,000 requests a day x 500
    tokens = 5,000,000 tokens a day; one int4 7B replica (3.5 GB of weights) fits on one 24 GB card and
    serves 100 tokens/s x 3,600 s x 8 h = 2,880,000 tokens a day, so ceil(5,000,000 / 2,880,000) = 2 replicas
    = 2 cards for all three plan months (no start or end month): 2 cards x 3 months = 6 card-months at the
    catalog's monthly rent of an RTX 4090 (CNY a card-month)."""
    _, _, ws = built
    rent = catalog_price("RTX 4090", "monthly_per_card")
    line = _line(ws, "RTX 4090", "monthly")
    assert line["peak cards"] == 2
    assert line["average cards"] == 2
    assert line["months"] == 3
    assert line["quantity"] == 6
    assert line["unit"] == "card-months"
    assert line["unit price"] == rent
    assert line["total"] == pytest.approx(6 * rent)
    assert line["tasks served"] == "KB01"


def test_a_line_whose_tasks_start_late_peaks_above_its_average(built):
    """H200 on demand: ML01 from 2026-08 on two cards (its 132.8 GB against 141 x 0.90 = 126.9 GB of one card; its
    USD offer at the sample's FX rate beats two A100 80G): 0, 2, 2 cards by month, peak 2 in 2 months, average
    4 card-months / 3 months."""
    _, _, ws = built
    line = _line(ws, "H200", "on_demand")
    assert (line["peak cards"], line["months"], line["tasks served"]) == (2, 2, "ML01")
    assert line["average cards"] == pytest.approx(4 / 3)
    assert line["unit"] == "GPU-hours"
    assert line["total"] == pytest.approx(line["quantity"] * line["unit price"])


def test_order_lines_add_up_to_the_gpu_total_and_cover_every_task(built):
    plan, _, ws = built
    lines = plan_order(plan)
    gpu_total = math.fsum(t.gpu for t in plan.month_totals.values())
    assert math.fsum(line.total for line in lines) == pytest.approx(gpu_total, rel=1e-12)
    assert sorted(t for line in lines for t in line.tasks) == sorted(tp.task.task_id for tp in plan.tasks)
    total_row = next(r for r in ws.iter_rows(min_row=OrderLayout.first + 1, values_only=True) if r[0] == "Total")
    assert total_row[OrderLayout.columns.index("total")] == pytest.approx(gpu_total, rel=1e-12)


def test_every_order_formula_recalculates_to_its_cached_value(built):
    _, out, _ = built
    ws = openpyxl.load_workbook(out)["Order"]
    assert sum(c.data_type == "f" for row in ws.iter_rows() for c in row) >= 5 * 6
    assert prove(out, sheets=("Order",)) == []


def test_the_order_follows_an_edited_task(built):
    """KB01 moved to three cards per replica: the RTX 4090 monthly line becomes 6 cards for 3 months."""
    _, out, ws = built
    header = _header(ws)
    tasks = openpyxl.load_workbook(out, read_only=True)["Tasks"]
    task_header = [c.value for c in next(tasks.iter_rows(max_row=1))]
    cards = openpyxl.utils.get_column_letter(task_header.index("cards") + 1)
    row = OrderLayout.first + 1 + next(i for i, r in enumerate(ws.iter_rows(min_row=OrderLayout.first + 1,
                                                                              values_only=True))
                                       if r[:2] == ("RTX 4090", "monthly"))
    values = local_recalc(out, {f"Tasks!{cards}2": 3})
    col = {h: openpyxl.utils.get_column_letter(i + 1) for i, h in enumerate(header)}
    assert values[("ORDER", f"{col['peak cards']}{row}")] == 6
    assert values[("ORDER", f"{col['total']}{row}")] == pytest.approx(6 * 3 * catalog_price("RTX 4090",
                                                                                             "monthly_per_card"))
