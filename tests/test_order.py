"""The Order sheet: what to reserve and rent per provider, derived by hand from the sample's task table and
recalculated from the Tasks names (each formula evaluated by `formulas` from the cells it reads)."""

from __future__ import annotations

import csv
import math

import openpyxl
import pytest
from conftest import TEST_PRICES, local_recalc, prove
from order_sheet import read_order

from budgetgen.plan.order import plan_order


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


def test_order_is_right_after_summary(built):
    _, out, _ = built
    assert openpyxl.load_workbook(out, read_only=True).sheetnames[:2] == ["Summary", "Order"]


def test_the_rtx_4090_monthly_line_derived_from_the_task_table(built):
    """KB01 is the only monthly RTX 4090 task (Tasks sheet of inputs/q3.xlsx): 10,000 requests a day x 500
    tokens = 5,000,000 tokens a day; one int4 7B replica (3.5 GB of weights) fits on one 24 GB card and
    serves 100 tokens/s x 3,600 s x 8 h = 2,880,000 tokens a day, so ceil(5,000,000 / 2,880,000) = 2 replicas
    = 2 cards for all three plan months (no start or end month, no commitment in a 3-month plan): 2 cards x 3
    months = 6 card-months at the catalog's monthly rent of an RTX 4090 (CNY a card-month)."""
    _, out, _ = built
    rent = catalog_price("RTX 4090", "monthly_per_card")
    line = read_order(out).line("RTX 4090", "monthly")
    assert [line[m] for m in ("2026-07", "2026-08", "2026-09")] == [2, 2, 2]
    assert line["quantity"] == 6
    assert line["unit"] == "card-months"
    assert line["unit price"] == pytest.approx(rent)
    assert line["total"] == pytest.approx(6 * rent)
    assert line["tasks served"] == "KB01"


def test_a_line_whose_tasks_start_late_rents_nothing_before(built):
    """ML01 starts in 2026-08 (inputs/q3.xlsx): its line rents its cards more in 2026-08 than in 2026-07 (other tasks
    may share the line), the same in the month after; its total is its quantity times its unit price (no commitment:
    nothing is netted)."""
    plan, out, _ = built
    ml01 = next(tp for tp in plan.tasks if tp.task.task_id == "ML01")
    line = read_order(out).line(ml01.row["gpu"], ml01.row["tier"])
    cards = ml01.months[1].cards_billed
    assert cards > 0 and ml01.months[0].cards_billed == 0
    assert line["2026-08"] - line["2026-07"] == cards and line["2026-08"] == line["2026-09"]
    assert "ML01" in line["tasks served"].split(", ")
    assert line["total"] == pytest.approx(line["quantity"] * line["unit price"])


def test_order_lines_add_up_to_the_gpu_total_and_cover_every_task(built):
    """No commitment in the 3-month sample: the lines' totals are the Summary's GPU total; then extras and the buffer
    down to the plan total, Summary's."""
    plan, out, _ = built
    order = read_order(out)
    gpu_total = math.fsum(t.gpu for t in plan.month_totals.values())
    assert math.fsum(line["total"] for line in order.lines) == pytest.approx(gpu_total, rel=1e-12)
    assert sorted(t for line in order.lines for t in line["tasks served"].split(", ")) == \
        sorted(tp.task.task_id for tp in plan.tasks)
    assert order.totals["GPU total (reservations and rent)"] == pytest.approx(gpu_total, rel=1e-12)
    assert order.totals["Plan total"] == pytest.approx(plan.period_total, rel=1e-12)
    assert plan_order(plan).gpu_total == pytest.approx(gpu_total, rel=1e-12)


def test_every_order_formula_recalculates_to_its_cached_value(built):
    _, out, _ = built
    ws = openpyxl.load_workbook(out)["Order"]
    assert sum(c.data_type == "f" for row in ws.iter_rows() for c in row) >= 5 * 6
    assert prove(out, sheets=("Order",)) == []


@pytest.mark.slow
def test_the_order_follows_an_edited_task(built):
    """KB01 moved to three cards per replica: the RTX 4090 monthly line becomes 6 cards in each of the 3 months."""
    _, out, _ = built
    tasks = openpyxl.load_workbook(out, read_only=True)["Tasks"]
    task_header = [c.value for c in next(tasks.iter_rows(max_row=1))]
    cards = openpyxl.utils.get_column_letter(task_header.index("cards") + 1)
    order = read_order(out)
    line = order.line("RTX 4090", "monthly")
    header = [str(c.value).split(" (")[0].replace("\n", "-") for c in
              openpyxl.load_workbook(out)["Order"][order.header_rows[0]]]
    col = {h: openpyxl.utils.get_column_letter(i + 1) for i, h in enumerate(header)}
    values = local_recalc(out, {f"Tasks!{cards}2": 3})
    assert [values[("ORDER", f"{col[m]}{line['_row']}")] for m in ("2026-07", "2026-08", "2026-09")] == [6, 6, 6]
    assert values[("ORDER", f"{col['total']}{line['_row']}")] == pytest.approx(6 * 3 * catalog_price(
        "RTX 4090", "monthly_per_card"))
