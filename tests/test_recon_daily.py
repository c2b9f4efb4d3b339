"""The Recon tab's daily table: each task's GPU bill per charge day, and a spike flag for a day over
recon_spike_factor (default 3) times the median of the task's previous billed days (at most 7).

The bill, July 2026, T1's GPU card (RTX 4090 lines tagged T1) and one day of T2, worked out by hand:

| day | T1 billed | previous billed days (at most 7) | their median | 3 x median | spike |
|---|---:|---|---:|---:|---|
| 1 | 100 | none | | | no |
| 2 | 110 | 100 | 100 | 300 | no |
| 3 | 90 | 100, 110 | 105 | 315 | no |
| 4 | 100 | 100, 110, 90 | 100 | 300 | no |
| 5 | 105 | 100, 110, 90, 100 | 100 | 300 | no |
| 6 | 95 | 100, 110, 90, 100, 105 | 100 | 300 | no |
| 7 | 100 | 100, 110, 90, 100, 105, 95 | 100 | 300 | no |
| 8 | 500 | days 1-7: 90 95 100 100 100 105 110 | 100 | 300 | yes: 500 = 5 x 100 |
| 9 | 250 | days 2-8: 90 95 100 100 105 110 500 | 100 | 300 | no |

Day 8 is also two lines (300 + 200) of the same card: the day's sum is what counts. T2's one day (400) has no
previous day and no median. A storage line tagged T1 (1,000 on day 8) is no GPU line and stays out.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import re

import formulas
import numpy as np
import openpyxl
import pytest
from conftest import make_input

from budgetgen import api

pytestmark = pytest.mark.xdist_group("recon_daily")

TASKS = [
    {"task_id": "T1", "kind": "inference", "model_params_b": 7, "method": "int4", "requests_per_day": 10000,
     "tokens_per_request": 500, "tokens_per_sec": 100, "serving_hours_per_day": 8, "gpu": "RTX 4090",
     "tier": "on_demand"},
    {"task_id": "T2", "kind": "inference", "model_params_b": 7, "method": "int4", "requests_per_day": 1000,
     "tokens_per_request": 500, "tokens_per_sec": 100, "serving_hours_per_day": 8, "gpu": "RTX 4090",
     "tier": "on_demand"},
]
T1_DAYS = {1: [100], 2: [110], 3: [90], 4: [100], 5: [105], 6: [95], 7: [100], 8: [300, 200], 9: [250]}
HEADER = ["ChargePeriodStart", "BilledCost", "BillingCurrency", "ResourceId", "ChargeDescription", "ServiceName",
          "ServiceCategory", "ChargeCategory", "ConsumedQuantity", "ConsumedUnit", "Tags"]


def gpu_line(day: int, cost: float, resource: str, task: str) -> list:
    return [f"2026-07-{day:02d}T10:00:00Z", cost, "CNY", resource, "RTX 4090 gpu instance hour", "GPU Cloud",
            "Compute", "Usage", 24, "Hours", json.dumps({"task_id": task})]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    folder = tmp_path_factory.mktemp("daily")
    plan = make_input(folder / "plan.xlsx", TASKS, settings={"currency": "CNY", "period_months": 1})
    bill = folder / "bill.csv"
    with bill.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(HEADER)
        for day, costs in T1_DAYS.items():
            writer.writerows(gpu_line(day, cost, "i-t1", "T1") for cost in costs)
        writer.writerow(gpu_line(10, 400, "i-t2", "T2"))
        writer.writerow(["2026-07-08T10:00:00Z", 1000, "CNY", "vol-1", "SSD", "Block Storage", "Storage", "Usage",
                         100, "GB-Mo", json.dumps({"task_id": "T1"})])
    out = folder / "plan-budget.xlsx"
    result = api.build_budget(plan, out, bills=[bill], json_path=folder / "plan.json", build_date=dt.date(2026, 6, 1))
    return result, out, json.loads((folder / "plan.json").read_text(encoding="utf-8"))


def test_the_day_five_times_its_trailing_median_is_a_spike_and_no_other(built):
    result, _, data = built
    days = result.recon["2026-07"].daily
    t1 = [d for d in days if d.task_id == "T1"]
    assert [d.day.day for d in t1] == list(range(1, 10))
    assert [d.billed for d in t1] == [100, 110, 90, 100, 105, 95, 100, 500, 250]
    assert [d.median for d in t1] == [None, 100, 105, 100, 100, 100, 100, 100, 100]
    assert [d.day.day for d in t1 if d.spike] == [8]
    t2 = [d for d in days if d.task_id == "T2"]
    assert [(d.day.day, d.billed, d.median, d.spike) for d in t2] == [(10, 400, None, False)]
    daily = data["reconciliation"]["2026-07"]["daily"]
    assert [d["day"] for d in daily if d["spike"]] == ["2026-07-08"]


@pytest.mark.slow
def test_the_tabs_daily_table_flags_the_same_day_live(built):
    _, out, _ = built
    ws = openpyxl.load_workbook(out)["Recon 2026-07"]
    header = next(r for r in range(1, ws.max_row + 1) if ws.cell(r, 1).value == "daily GPU bill, task id")
    rows = {(ws.cell(r, 1).value, ws.cell(r, 2).value.day): r for r in range(header + 1, ws.max_row + 1)
            if ws.cell(r, 2).value is not None}
    day8, day9 = rows[("T1", 8)], rows[("T1", 9)]
    # the median of day 9 reads the 7 rows above it, all T1's (days 2-8)
    assert ws.cell(day9, 4).value == f"=MEDIAN(C{day9 - 7}:C{day9 - 1})"
    values = {(r, c): ws.cell(r, c).value for r in range(header + 1, ws.max_row + 1) for c in (3, 4, 5)}
    factor = 3  # recon_spike_factor's default, the workbook name ReconSpikeFactor

    def run(formula: str, cells: dict[str, object]) -> object:
        """The cell's formula computed by `formulas` over the given inputs (cell or range address: value)."""
        compiled = formulas.Parser().ast(formula)[1].compile()
        return compiled(*(cells[name] for name in compiled.inputs))

    def median(row: int) -> float:
        formula = values[(row, 4)]
        first, last = (int(x) for x in re.fullmatch(r"=MEDIAN\(C(\d+):C(\d+)\)", formula).groups())
        return float(run(formula, {f"C{first}:C{last}": np.array([[values[(r, 3)]] for r in range(first, last + 1)])}))

    def spike(row: int, billed: float | None = None) -> bool:
        med = median(row) if isinstance(values[(row, 4)], str) else None
        return bool(run(values[(row, 5)], {f"C{row}": values[(row, 3)] if billed is None else billed,
                                           f"D{row}": med, "RECONSPIKEFACTOR": factor}))

    assert median(day8) == 100 and median(day9) == 100
    assert spike(day8) is True
    assert spike(day9) is False
    assert spike(rows[("T2", 10)]) is False
    assert spike(day9, billed=301) is True   # 301 on day 9 is over 3 x 100: the flag follows the cell
