"""A month's GPU resources as a column table: the Recon tab's ranking and the rows around it, worked out by hand."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from budgetgen.recon import PlanFacts, ResourceTable, reconcile

MONTH = "2026-07"
# resource, task ("" untagged), BilledCost, average utilisation % (None: no usage)
RESOURCES = [
    ("r-a", "T1", 100.0, 10.0),   # low utilisation: 1 card, 0.9 idle -> saving 90
    ("r-b", "T1", 300.0, 50.0),   # busy: no flag
    ("r-c", "T1", 200.0, 20.0),   # low utilisation: 0.8 idle -> saving 160
    ("r-d", "T1", 50.0, 90.0),    # busy, billed like r-e
    ("r-e", "T1", 50.0, 95.0),
    ("u-1", "", 120.0, None),     # untagged: its whole bill to attribute or stop
    ("u-2", "", 40.0, None),
]


def _sums() -> pd.DataFrame:
    rows = [{"month": MONTH, "resource_id": r, "task_id": t, "is_gpu": True, "category": "gpu",
             "service_name": "EC2", "hours_unit": True, "commitment": "", "commitment_id": "", "commitment_type": "",
             "pricing_category": "", "billed": b, "quantity": 10.0, "lines": 1,
             "first_charge": pd.Timestamp("2026-07-01", tz="UTC"), "last_charge": pd.Timestamp("2026-07-31", tz="UTC"),
             "effective": math.nan, "effective_missing": 1} for r, t, b, _ in RESOURCES]
    return pd.DataFrame(rows)


def _usage() -> pd.DataFrame:
    return pd.DataFrame([{"resource_id": r, "month": MONTH, "avg_util_pct": u, "mem_peak_gb": None,
                          "mem_total_gb": None, "oom_events": 0.0} for r, _, _, u in RESOURCES if u is not None])


@pytest.fixture(scope="module")
def month():
    # T1 holds 5 cards over its 5 resources: 1 card each. Low utilisation below 30 %, OOM from 1 event.
    return reconcile(_sums(), _usage(), {"T1": {MONTH: 1000.0}}, {MONTH: 0.0}, 0.3, 1, 0.1,
                     facts=PlanFacts(cards={"T1": 5}))[MONTH]


def test_the_table_holds_every_resource_in_the_months_order(month):
    assert isinstance(month.resources, ResourceTable)
    # tasks' resources by task and id, then the untagged
    assert [r.resource_id for r in month.resources] == ["r-a", "r-b", "r-c", "r-d", "r-e", "u-1", "u-2"]
    assert [r.task_id for r in month.resources] == ["T1"] * 5 + [None, None]
    assert month.resources[-1].resource_id == "u-2"
    assert len(month.resources[1:3]) == 2


def test_money_at_stake_by_hand(month):
    by_id = {r.resource_id: r for r in month.resources}
    assert by_id["r-a"].saving == pytest.approx(100 * 0.9)
    assert by_id["r-c"].saving == pytest.approx(200 * 0.8)
    assert by_id["u-1"].to_attribute == 120.0
    assert month.resources.column("at_stake") == pytest.approx([90.0, 0.0, 160.0, 0.0, 0.0, 120.0, 40.0])
    assert month.idle_saving == pytest.approx(250.0)   # the tasks' idle cards only


def test_the_tab_lists_the_flagged_by_money_at_stake_then_the_rest_by_bill(month):
    # flagged: r-c 160, u-1 120, r-a 90, u-2 40; then unflagged by bill: r-b 300, then r-d and r-e (50 each) in
    # the month's order
    shown, rest = month.resources.split(10)
    assert [r.resource_id for r in shown] == ["r-c", "u-1", "r-a", "u-2", "r-b", "r-d", "r-e"]
    assert len(rest) == 0
    shown, rest = month.resources.split(3)
    assert [r.resource_id for r in shown] == ["r-c", "u-1", "r-a"]
    assert [r.resource_id for r in rest] == ["r-b", "r-d", "r-e", "u-2"]   # the rest in the month's order
    assert rest.flagged() == 1
    assert [r.resource_id for r in rest.tagged(False)] == ["u-2"]
    assert math.fsum(rest.column("billed")) == 440.0


def test_the_tables_rows_are_the_resources_json(month):
    resources = month.resources
    assert resources.to_json() == [r.to_json() for r in resources]
    assert [r.resource_id for r in resources] == [r.resource_id for r in tuple(resources)]
    assert resources != ()
    assert ResourceTable.empty() == ()
