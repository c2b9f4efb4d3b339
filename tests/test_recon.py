"""Monthly reconciliation: a hand-made scenario, the FOCUS sample, flag rules and the JSON shape."""

from __future__ import annotations

import csv
import datetime as dt
import json
import math
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest

from budgetgen.core.errors import Code, InputError
from budgetgen.recon import (
    ACTIONS,
    DATA_STARVED,
    DEFAULT_GPU_LINE_PATTERN,
    LOW_UTILIZATION,
    OOM,
    OUTPUT_COLUMNS,
    OVER_PLAN,
    UNTAGGED_GPU,
    Action,
    Limits,
    PlanFacts,
    aggregate_lines,
    is_hours_unit,
    next_month_actions,
    read_bills,
    read_usage,
    reconcile,
    resource_flags,
    unknown_task_warnings,
    unmatched_usage_warnings,
)

pytestmark = pytest.mark.filterwarnings("error")

EC2 = "Amazon Elastic Compute Cloud"
HEADER = [
    "ChargePeriodStart", "BilledCost", "BillingCurrency", "ResourceId", "ChargeDescription", "ServiceName",
    "ServiceCategory", "ChargeCategory", "ConsumedQuantity", "ConsumedUnit", "Tags",
]
# ChargePeriodStart, BilledCost, ResourceId, ChargeDescription, ServiceName, ServiceCategory, ChargeCategory,
# ConsumedQuantity, ConsumedUnit, Tags
LINES = [
    # July: T01 trains on i-train (tagged), with a credit on the same instance (shown apart, not netted).
    ("2026-07-01T00:00:00Z", "300.00", "i-train", "$5.672 per On Demand Linux g5.12xlarge Instance Hour", EC2,
     "Compute", "Usage", "50", "Hours", '{"task_id": "T01"}'),
    ("2026-07-20 00:00:00", "267.20", "i-train", "$5.672 per On Demand Linux g5.12xlarge Instance Hour", EC2,
     "Compute", "usage", "50", "Hours", '{"task_id": "T01", "team": "nlp"}'),
    ("2026-07-31", "-50.00", "i-train", "Promotional credit g5.12xlarge", EC2, "Compute", "credit", "NULL", "NULL",
     '{"task_id": "T01"}'),
    # T02 serves on i-serve, untagged, tied by the Assignments sheet; 10 % utilisation.
    ("2026-07-05 00:00:00", "587.00", "i-serve", "$0.805 per On Demand Linux g6.xlarge Instance Hour", EC2,
     "Compute", "Usage", "729.19", "Hrs", "NULL"),
    # T03 on i-oom: 5 OOM events in raw samples.
    ("2026-07-10 00:00:00", "420.00", "i-oom", "$1.212 per On Demand Linux g5.2xlarge Instance Hour", EC2,
     "Compute", "Usage", "346.5", "Hours", '{"task_id": "T03"}'),
    # ... and a line tagged `t03`: the same task, ignoring case.
    ("2026-07-10 00:00:00", "10.00", "i-oom", "$1.212 per On Demand Linux g5.2xlarge Instance Hour", EC2,
     "Compute", "Usage", "8.25", "Hours", '{"task_id": "t03"}'),
    # T04 on i-starved (nvidia-smi file): 90 % memory, 5 % utilisation; no quantity billed.
    ("2026-07-11 00:00:00", "95.00", "i-starved", "NC24ads A100 v4 - East US", "Virtual Machines", "Compute",
     "Usage", "NULL", "", '{"task_id": "T04"}'),
    # T05 on i-over: 1300 against 1000 planned, 30 % over.
    ("2026-07-12 00:00:00", "1300.00", "i-over", "$32.77 per On Demand Linux p4d.24xlarge Instance Hour", EC2,
     "Compute", "Usage", "39.67", "Hours", '{"task_id": "T05"}'),
    # A task id of no task, with a wildcard character in it: billed without a plan, so over plan.
    ("2026-07-14 00:00:00", "20.00", "i-wild", "$1.006 per On Demand Linux g5.xlarge Instance Hour", EC2,
     "Compute", "Usage", "19.88", "Hours", '{"task_id": "T?9"}'),
    # A GPU instance nobody claims.
    ("2026-07-13 00:00:00", "250.00", "i-orphan", "$1.006 per On Demand Linux g5.xlarge Instance Hour", EC2,
     "Compute", "Usage", "248.5", "Hours", "NULL"),
    # Hidden costs: storage, egress, monitoring, and an account credit.
    ("2026-07-31 00:00:00", "40.10", "vol-1", "$0.08 per GB-month of General Purpose SSD (gp3)", EC2, "Storage",
     "Usage", "501.25", "GB-Mo", "NULL"),
    ("2026-07-31 00:00:00", "12.34", "i-web", "$0.09 per GB - data transfer out", EC2, "Compute", "Usage",
     "137.1", "GB", '{"app": "web", "taskforce": "infra"}'),
    ("2026-07-15 00:00:00", "7.00", "NULL", "$0.30 per metric-month", "AmazonCloudWatch",
     "Management and Governance", "Usage", "23.33", "Metrics", "NULL"),
    ("2026-07-24 03:00:00", "-10.00", "NULL", "AWS Promotional Credits", EC2, "Compute", "Credit", "NULL", "NULL",
     "NULL"),
    # August: T01 on plan; storage.
    ("2026-08-01T00:00:00Z", "300.00", "i-train", "$5.672 per On Demand Linux g5.12xlarge Instance Hour", EC2,
     "Compute", "Usage", "52.89", "Hours", '{"task_id": "T01"}'),
    ("2026-08-31", "40.10", "vol-1", "$0.08 per GB-month of General Purpose SSD (gp3)", EC2, "Storage", "Usage",
     "501.25", "GB-Mo", "NULL"),
    # October (nothing billed in September): one S3 line.
    ("2026-10-01 00:00:00", "5.00", "bucket-1", "$0.023 per GB-month", "Amazon Simple Storage Service", "NULL",
     "Usage", "217.39", "GB-Mo", "NULL"),
]
# A storage volume tagged with its task: a non-GPU line (decided by the line, not the tag), summed as the bill
# reader hands it over. It counts against T01's share of the buffer, never as T01's GPU spend.
TAGGED_NON_GPU = {"month": "2026-07", "billed_cost": 33.00, "resource_id": "vol-t01", "resource_name": "",
                  "service_name": EC2, "charge_category": "Usage", "consumed_quantity": 412.5,
                  "consumed_unit": "GB-Mo", "task_id": "T01", "is_gpu": False, "category": "storage"}
TAGGED_NON_GPU_DAY = "2026-07-31"
PLANNED = {
    "T01": {"2026-07": 600.0, "2026-08": 300.0, "2026-10": 300.0},
    "T02": {"2026-07": 580.0},
    "T03": {"2026-07": 400.0},
    "T04": {"2026-07": 100.0},
    "T05": {"2026-07": 1000.0},
    "T06": {"2026-07": 200.0},
    "T07": {"2026-07": 0.0},
}
BUFFER = {"2026-07": 150.0, "2026-08": 75.0, "2026-10": 10.0}
FACTS = PlanFacts(cards={"T01": 4, "T02": 2, "T03": 1, "T04": 1, "T05": 8},
                  planned_hours={"T01": {"2026-07": 100.0, "2026-08": 50.0}, "T05": {"2026-07": 40.0}},
                  extras={"2026-07": 100.0},
                  extras_by_category={"2026-07": {"storage": 50.0, "other": 50.0}})
DUPLICATES = {"2026-07": (1, 12.34)}   # as the bill reader reports lines it counted once
MIB_GB = 1048576 / 1e9


@pytest.fixture
def scenario(tmp_path: Path) -> dict:
    """The hand-made month set reconciled with usage from a monthly sheet, raw samples and nvidia-smi."""
    bill = tmp_path / "focus.csv"
    with bill.open("w", newline="") as handle:
        writer = csv.writer(handle, quoting=csv.QUOTE_ALL)
        writer.writerow(HEADER)
        writer.writerows((stamp, cost, "USD", *rest) for stamp, cost, *rest in LINES)
    bills = read_bills(bill, bill.name, "USD", DEFAULT_GPU_LINE_PATTERN, {"i-serve": "T02"}, ["A100 80G"])
    bills = pd.concat([bills, pd.DataFrame([TAGGED_NON_GPU], columns=list(OUTPUT_COLUMNS), index=[99])])
    monthly = pd.DataFrame({
        "resource_id": ["i-train", "i-train", "i-serve", "i-over", "i-ghost"],
        "month": ["2026-07", "2026-08", "2026-07", "2026-07", "2026-07"],
        "gpu_util_pct": [60, 15, 10, 85, 1], "mem_used_gb": [20, 20, 10, 70, 1], "mem_total_gb": [24, 24, 24, 80, 80],
    }, index=[2, 3, 4, 5, 6])
    raw = tmp_path / "samples.csv"
    raw.write_text(
        "resource_id,timestamp,gpu_util_pct,mem_used_gb,mem_total_gb,oom_events\n"
        "i-oom,2026-07-10T00:00:00Z,70,23,24,2\ni-oom,2026-07-11T00:00:00Z,80,23.5,24,3\n"
    )
    smi = tmp_path / "i-starved.csv"
    smi.write_text(
        "timestamp, name, utilization.gpu [%], memory.used [MiB], memory.total [MiB]\n"
        "2026/07/11 10:00:00.123, NVIDIA A100 80GB PCIe, 4 %, 73728 MiB, 81920 MiB\n"
        "2026/07/11 10:00:05.123, NVIDIA A100 80GB PCIe, 6 %, 73728 MiB, 81920 MiB\n"
    )
    usage = pd.concat(
        [read_usage(monthly, "Usage"), read_usage(raw, raw.name), read_usage(smi, smi.name)], ignore_index=True,
    )
    return reconcile(aggregate_lines(bills), usage, PLANNED, BUFFER, low_util_threshold=0.20, oom_threshold=3,
                     variance_tolerance=0.10, coverage=coverage(), duplicates=DUPLICATES, facts=FACTS)


def line_days() -> list[tuple[str, str]]:
    """(day, BilledCost) of every line of the scenario."""
    return [(stamp[:10], cost) for stamp, cost, *_ in LINES] + [(TAGGED_NON_GPU_DAY, "33.00")]


def coverage() -> dict[str, tuple[dt.date, dt.date, int]]:
    """Each month's first and last charge day and days with lines, from the lines' dates."""
    days: dict[str, set[dt.date]] = defaultdict(set)
    for day, _ in line_days():
        days[day[:7]].add(dt.date.fromisoformat(day))
    return {month: (min(d), max(d), len(d)) for month, d in days.items()}


def line_totals(days: list[tuple[str, str]] | None = None) -> dict[str, Decimal]:
    """Σ BilledCost per month of the scenario's lines (or of `days`), in decimal."""
    totals: dict[str, Decimal] = defaultdict(Decimal)
    for day, cost in line_days() if days is None else days:
        totals[day[:7]] += Decimal(cost)
    return totals


def cents(value: float) -> Decimal:
    return Decimal(value).quantize(Decimal("0.01"))


def test_every_billed_month_and_only_those(scenario):
    assert list(scenario) == ["2026-07", "2026-08", "2026-10"]


def test_july_totals(scenario):
    july = scenario["2026-07"]
    assert july.gpu_billed == pytest.approx(
        (300.00 + 267.20) + 587.00 + (420.00 + 10.00) + 95.00 + 1300.00 + 20.00 + 250.00)
    assert july.unallocated == pytest.approx(250.00)
    # CloudWatch is a platform service; the two credit lines are credits, in no category of usage.
    assert july.non_gpu == pytest.approx({"storage": 40.10 + 33.00, "egress": 12.34, "images": 0.0,
                                          "platform": 7.00, "other": 0.0})
    assert july.credits == pytest.approx({"credit": -50.00 - 10.00, "refund": 0.0})
    assert july.non_gpu_billed == pytest.approx(40.10 + 33.00 + 12.34 + 7.00)
    assert july.billed_total == pytest.approx(3249.20 + 92.44 - 60.00)
    assert july.planned_total == pytest.approx(600 + 580 + 400 + 100 + 1000 + 200)
    assert july.buffer_reserved == 150.0
    # Only what no Extra planned uses the buffer: storage 73.10 against 50 planned, egress and platform
    # unplanned; other's 50 planned and unbilled does not offset them.
    assert july.non_gpu_not_planned == pytest.approx((73.10 - 50.00) + 12.34 + 7.00)
    assert july.buffer_left == pytest.approx(150.0 - 42.44)
    # Like for like: GPU against GPU, non-GPU against Extras + buffer, total against total.
    assert (july.planned_extras, july.planned_all) == (100.0, 2880.0 + 100.0 + 150.0)
    assert july.duplicates == (1, 12.34)


def test_july_by_task(scenario):
    found = [(t.task_id, t.planned, round(t.billed, 2), round(t.variance, 2)) for t in scenario["2026-07"].tasks]
    assert found == [
        ("T01", 600.0, 567.20, -32.80),    # neither the tagged storage line nor the credit is T01's GPU spend
        ("T02", 580.0, 587.00, 7.00),
        ("T03", 400.0, 430.00, 30.00),     # `t03` is T03
        ("T04", 100.0, 95.00, -5.00),
        ("T05", 1000.0, 1300.00, 300.00),
        ("T06", 200.0, 0.0, -200.00),
        ("T?9", 0.0, 20.00, 20.00),
    ]
    tasks = {t.task_id: t for t in scenario["2026-07"].tasks}
    assert tasks["T05"].variance_pct == pytest.approx(0.30)
    limits = Limits(low_util_threshold=0.20, oom_threshold=3, variance_tolerance=0.10)
    assert [t.status(limits) for t in tasks.values()] == ["", "", "", "", "over plan", "", "over plan"]


def test_tagged_non_gpu_lines_count_against_the_tasks_buffer_share(scenario):
    t01 = scenario["2026-07"].tasks[0]
    assert (t01.billed, t01.non_gpu_billed) == (pytest.approx(567.20), 33.00)
    assert t01.buffer_share == pytest.approx(150.0 * 600 / 2880)      # 31.25
    assert t01.buffer_left == pytest.approx(31.25 - 33.00)
    assert [t.non_gpu_billed for t in scenario["2026-07"].tasks[1:]] == [0.0] * 6


def test_rate_and_usage_variances(scenario):
    tasks = {t.task_id: t for t in scenario["2026-07"].tasks}
    # T05: 1000 planned for 40 h is 25 an hour; billed 1300 for 39.67 h.
    assert tasks["T05"].rate_variance == pytest.approx(1300 - 25 * 39.67)          # 308.25
    assert tasks["T05"].usage_variance == pytest.approx((39.67 - 40) * 25)         # -8.25
    # T01: 100 h planned at 6 an hour, 100 h billed: all of the variance is rate (the credit is not in it).
    assert tasks["T01"].rate_variance == pytest.approx(567.20 - 600)
    assert tasks["T01"].usage_variance == 0.0
    # T04's bill gives no hours, T02 has no planned hours: no split.
    assert (tasks["T04"].rate_variance, tasks["T02"].usage_variance) == (None, None)


def test_july_resources_and_flags(scenario):
    found = [(r.resource_id, r.task_id, round(r.billed, 2), r.flags) for r in scenario["2026-07"].resources]
    assert found == [
        ("i-train", "T01", 567.20, ()),
        ("i-serve", "T02", 587.00, (LOW_UTILIZATION,)),
        ("i-oom", "T03", 430.00, (OOM,)),
        ("i-starved", "T04", 95.00, (LOW_UTILIZATION, DATA_STARVED)),
        ("i-over", "T05", 1300.00, (OVER_PLAN,)),
        ("i-wild", "T?9", 20.00, (OVER_PLAN,)),
        ("i-orphan", None, 250.00, (UNTAGGED_GPU,)),
    ]
    orphan = scenario["2026-07"].resources[-1]
    assert orphan.actions == ("tag it or stop it",)
    assert [r.resource_id for r in scenario["2026-07"].unallocated_resources] == ["i-orphan"]


def test_july_resource_usage_and_hours(scenario):
    by_id = {r.resource_id: r for r in scenario["2026-07"].resources}
    train, serve, oom, starved = by_id["i-train"], by_id["i-serve"], by_id["i-oom"], by_id["i-starved"]
    assert (train.hours, train.lines, train.services) == (50 + 50, 2, (EC2,))   # the credit line is apart
    assert train.mem_peak_share == pytest.approx(20 / 24)
    assert serve.hours == pytest.approx(729.19)
    assert (oom.avg_util_pct, oom.oom_events, oom.mem_peak_share) == (75.0, 5.0, pytest.approx(23.5 / 24))
    assert (oom.hours, oom.lines) == (346.5 + 8.25, 2)
    assert math.isnan(starved.hours)
    assert starved.avg_util_pct == pytest.approx(5.0)
    assert starved.mem_peak_share == pytest.approx(73728 / 81920)
    assert starved.actions == (ACTIONS[LOW_UTILIZATION], ACTIONS[DATA_STARVED])
    assert math.isnan(by_id["i-orphan"].avg_util_pct)


def test_august_and_october(scenario):
    august, october = scenario["2026-08"], scenario["2026-10"]
    assert [(t.task_id, t.planned, t.billed) for t in august.tasks] == [("T01", 300.0, 300.0)]
    assert [(r.resource_id, r.flags) for r in august.resources] == [("i-train", (LOW_UTILIZATION,))]
    assert (october.gpu_billed, october.non_gpu, october.planned_total) == (
        0.0, {"storage": 5.0, "egress": 0.0, "images": 0.0, "platform": 0.0, "other": 0.0}, 300.0,
    )
    assert (october.resources, october.buffer_reserved) == ((), 10.0)
    assert [(t.task_id, t.planned, t.billed, t.buffer_share) for t in october.tasks] == [("T01", 300.0, 0.0, 10.0)]


def test_partial_months(scenario):
    # July runs from the 1st to the 31st and August too (two days with lines): full. October has one line
    # on the 1st: partial, and its task reads "partial month", not 100 % under plan.
    limits = Limits(low_util_threshold=0.20, oom_threshold=3, variance_tolerance=0.10)
    july, august, october = scenario["2026-07"], scenario["2026-08"], scenario["2026-10"]
    assert (july.coverage.first, july.coverage.last, july.coverage.days_with_lines) == (
        dt.date(2026, 7, 1), dt.date(2026, 7, 31), 11)
    assert (july.partial, august.partial, october.partial) == (False, False, True)
    assert august.coverage.days_with_lines == 2
    assert [t.status(limits) for t in october.tasks] == ["partial month"]
    assert october.to_json()["partial"] is True


def test_nothing_is_dropped(scenario):
    expected = line_totals()
    assert set(scenario) == set(expected)
    for month, recon in scenario.items():
        parts = [*(r.billed for r in recon.resources), *recon.non_gpu.values(), *recon.credits.values()]
        assert cents(math.fsum(parts)) == cents(recon.billed_total) == expected[month]
        assert cents(math.fsum([*(t.billed for t in recon.tasks), recon.unallocated])) == cents(recon.gpu_billed)
        assert cents(recon.allocated_gpu + recon.unallocated + recon.non_gpu_billed + recon.credit_billed) == \
            expected[month]


def test_next_month_actions(scenario):
    actions = next_month_actions(scenario["2026-07"])
    assert [(a.resource_id, a.flag, round(a.plan_change, 2)) for a in actions] == [
        # T02 holds 2 replicas on i-serve, 10 % busy: 2 x 0.90 = 1.8 replicas idle, 587 x 1.8 / 2 at its rate.
        ("i-serve", LOW_UTILIZATION, -528.30),                    # 587 x 1.8 / 2
        ("i-oom", OOM, 0.0),
        # T04's single card at 5 %: 0.95 of it idle (stop it or move it to a cheaper tier), 95 x 0.95.
        ("i-starved", LOW_UTILIZATION, -90.25),                   # 95 x 0.95
        ("i-starved", DATA_STARVED, 0.0),
        # Over plan saves nothing by itself: its overrun share (300) is a re-forecast, not a saving (rules.SAVING).
        ("i-over", OVER_PLAN, 0.0),
        ("i-wild", OVER_PLAN, 0.0),
        ("i-orphan", UNTAGGED_GPU, 0.0),
    ]
    assert actions[0] == Action("i-serve", "T02", LOW_UTILIZATION, ACTIONS[LOW_UTILIZATION], pytest.approx(-528.3))
    by_id = {r.resource_id: r for r in scenario["2026-07"].resources}
    assert (by_id["i-serve"].cards, by_id["i-serve"].idle_cards) == (2, pytest.approx(1.8))
    # August: T01 holds 4 cards on i-train, 15 % busy: 4 x 0.85 = 3.4 idle, 300 x 3.4 / 4 = 255 of 300.
    train = scenario["2026-08"].resources[0]
    assert (train.cards, train.idle_cards, train.saving) == (4, pytest.approx(3.4), pytest.approx(255.0))
    # The month's achievable saving: the tasks' idle cards (i-serve, i-starved) and the untagged i-orphan whole.
    july = scenario["2026-07"]
    assert july.idle_saving == pytest.approx(587.00 * 0.90 + 95.00 * 0.95)
    assert july.achievable_saving == pytest.approx(528.30 + 90.25 + 250.00)


def test_json_is_specs_reconciliation_month(scenario):
    july = scenario["2026-07"].to_json()
    text = json.dumps(july, allow_nan=False)
    assert json.loads(text) == july
    assert list(july) == [
        "billed_total", "gpu_billed", "non_gpu_billed", "unallocated", "planned_total", "buffer_reserved",
        "tasks", "resources", "planned_extras", "partial", "coverage", "commitments", "commitment_billed",
        "effective_total", "non_gpu", "non_gpu_planned", "non_gpu_not_planned", "buffer_left", "credits", "credit_billed",
        "idle_saving", "achievable_saving", "daily", "planned_commitments", "planned_gpu_all", "billed_gpu_all",
        "planned_all", "currencies",
    ]
    assert july["currencies"] == []   # the bill is in the plan's currency: nothing converted
    assert july["tasks"][0] == {"task_id": "T01", "planned": 600.0, "billed": pytest.approx(567.20),
                                "variance": pytest.approx(-32.80), "non_gpu_billed": 33.0,
                                "rate_variance": pytest.approx(-32.80), "usage_variance": 0.0,
                                "effective": None, "compared": pytest.approx(567.20), "planned_pricing": None}
    assert (july["commitments"], july["commitment_billed"], july["effective_total"]) == ([], 0.0, None)
    assert july["coverage"] == {"first": "2026-07-01", "last": "2026-07-31", "days_with_lines": 11}
    assert july["resources"][3] == {
        "resource_id": "i-starved", "task_id": "T04", "billed": 95.0, "hours": None,
        "avg_util_pct": pytest.approx(5.0), "mem_peak_share": pytest.approx(0.9), "oom_events": None,
        "flags": ["low_utilization", "data_starved"], "cards": 1, "idle_cards": pytest.approx(0.95),
        "saving": pytest.approx(95.0 * 0.95), "to_attribute": 0.0, "pricing": None,
    }
    assert july["resources"][-1]["task_id"] is None and july["resources"][-1]["flags"] == ["untagged_gpu"]


@pytest.mark.parametrize("util, share, ooms, over, expected", [
    (19.9, math.nan, math.nan, False, (LOW_UTILIZATION,)),
    (20.0, math.nan, math.nan, False, ()),
    (math.nan, math.nan, math.nan, False, ()),
    (50.0, math.nan, 3, False, (OOM,)),
    (50.0, math.nan, 2, False, ()),
    (9.9, 0.81, 0, False, (LOW_UTILIZATION, DATA_STARVED)),
    (10.0, 0.95, 0, False, (LOW_UTILIZATION,)),
    (5.0, 0.80, 0, False, (LOW_UTILIZATION,)),
    (50.0, math.nan, math.nan, True, (OVER_PLAN,)),
    (5.0, 0.9, 4, True, (LOW_UTILIZATION, OOM, DATA_STARVED, OVER_PLAN)),
])
def test_flag_rules(util, share, ooms, over, expected):
    row = {"util": util, "mem_share": share, "oom": ooms, "task": "T1", "task_status": "over plan" if over else "",
           "pricing": "", "planned_pricing": ""}
    assert resource_flags(row, Limits(low_util_threshold=0.20, oom_threshold=3, variance_tolerance=0.1)) == expected


@pytest.mark.parametrize("unit, hours", [
    ("Hours", True), ("Hrs", True), ("hour", True), ("GPU-Hours", True), ("Instance Hours", True), ("h", True),
    ("OCPU Hours", True), ("GB-Hours", False), ("Gigabyte Per Hour", False), ("GB", False), ("Requests", False),
    ("", False), ("Units/Month", False),
])
def test_hours_units(unit, hours):
    assert is_hours_unit(unit) is hours


def test_task_billed_without_plan_is_over_plan(tmp_path):
    bills = pd.DataFrame({
        "ChargePeriodStart": ["2026-07-01"], "BilledCost": [10.0], "ResourceId": ["i-a"],
        "ChargeDescription": ["g5.xlarge"], "Tags": ['{"task_id": "T99"}'],
    }, index=[2])
    frame = read_bills(bills, "Bills", "USD", DEFAULT_GPU_LINE_PATTERN, {}, [])
    full = {"2026-07": (dt.date(2026, 7, 1), dt.date(2026, 7, 31), 31)}   # a month billed in full
    july = reconcile(aggregate_lines(frame), pd.DataFrame(), {}, {}, 0.2, 3, 0.1, coverage=full)["2026-07"]
    assert [(t.task_id, t.planned, t.billed) for t in july.tasks] == [("T99", 0.0, 10.0)]
    assert july.resources[0].flags == (OVER_PLAN,)


def test_bill_without_gpu_lines_sets_everything_against_the_buffer():
    sheet = pd.DataFrame({
        "ChargePeriodStart": ["2026-07-01", "2026-07-02"], "BilledCost": [3.0, 4.5],
        "ServiceCategory": ["Storage", "Networking"],
    }, index=[2, 3])
    frame = read_bills(sheet, "Bills", "USD", DEFAULT_GPU_LINE_PATTERN, {}, [])
    july = reconcile(aggregate_lines(frame), pd.DataFrame(), {"T01": {"2026-07": 5.0}}, {"2026-07": 2.0}, 0.2, 3, 0.1)["2026-07"]
    assert (july.gpu_billed, july.resources, july.non_gpu_billed, july.billed_total) == (0.0, (), 3.0 + 4.5, 7.5)
    assert july.non_gpu == {"storage": 3.0, "egress": 4.5, "images": 0.0, "platform": 0.0, "other": 0.0}
    assert [(t.task_id, t.billed, t.variance) for t in july.tasks] == [("T01", 0.0, -5.0)]
    assert july.buffer_left == 2.0 - 7.5


def test_lines_are_summed_once_by_month_resource_task_class_category_service_and_unit(tmp_path):
    bill = tmp_path / "focus.csv"
    with bill.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(HEADER)
        writer.writerows((stamp, cost, "USD", *rest) for stamp, cost, *rest in LINES)
    sums = aggregate_lines(read_bills(bill, bill.name, "USD", DEFAULT_GPU_LINE_PATTERN, {"i-serve": "T02"}, []))
    train = sums[(sums["resource_id"] == "i-train") & (sums["month"] == "2026-07")]
    # Two 50-hour lines (300.00 + 267.20) and the credit (-50.00, no unit) are two groups, not three lines.
    assert [(r.hours_unit, round(r.billed, 2), r.lines) for r in train.itertuples()] == [
        (False, -50.00, 1), (True, 567.20, 2),
    ]
    assert math.isnan(train["quantity"].iloc[0]) and train["quantity"].iloc[1] == 100.0
    assert sums["lines"].sum() == len(LINES)
    by_month = sums.groupby("month")["billed"].agg(math.fsum)
    assert {m: cents(v) for m, v in by_month.items()} == line_totals([(stamp[:10], cost) for stamp, cost, *_ in LINES])


def test_unknown_task_ids_are_warned_with_file_and_value():
    frame = pd.DataFrame({"task_id": ["t1", "T9", "", "T?9", "T9"]})
    warnings = unknown_task_warnings(["bill.csv"], frame, {"T1": {}, "T2": {}})
    assert [(w.key, w.params) for w in warnings] == [
        ("unknown_bill_task", {"file": "bill.csv", "value": "T9"}),
        ("unknown_bill_task", {"file": "bill.csv", "value": "T?9"}),
    ]
    assert "bill.csv" in warnings[0] and "T9" in warnings[0]


def test_usage_matching_no_billed_resource_is_warned(tmp_path):
    bills = pd.DataFrame({"resource_id": ["i-gpu1", "vol-1"]})
    smi = "timestamp, utilization.gpu [%], memory.used [MiB]\n2026/07/03 10:00:00.000, 40 %, 1000 MiB\n"
    frames = []
    for name in ("usage.csv", "i-gpu1-2026-07.csv", "I-GPU1.csv", "i-gpu1.csv"):
        (tmp_path / name).write_text(smi)
        frames.append((name, read_usage(tmp_path / name, name)))
    warnings = unmatched_usage_warnings(frames, bills)
    assert [(w.params["file"], w.params["value"]) for w in warnings] == [
        ("usage.csv", "usage"), ("i-gpu1-2026-07.csv", "i-gpu1-2026-07"), ("I-GPU1.csv", "I-GPU1"),
    ]


def test_usage_in_a_month_no_bill_line_covers_is_warned(tmp_path):
    """i-gpu1 is billed in 2026-07 only; its nvidia-smi samples span July and August: August's usage has no bill
    line to sit beside, so it is named (file, resource, month) instead of dropped without a word."""
    bills = pd.DataFrame({"resource_id": ["i-gpu1", "i-gpu2"], "month": ["2026-07", "2026-08"]})
    smi = ("timestamp, utilization.gpu [%], memory.used [MiB]\n2026/07/03 10:00:00.000, 40 %, 1000 MiB\n"
           "2026/08/03 10:00:00.000, 50 %, 1000 MiB\n")
    (tmp_path / "i-gpu1.csv").write_text(smi)
    frames = [("i-gpu1.csv", read_usage(tmp_path / "i-gpu1.csv", "i-gpu1.csv"))]
    warnings = unmatched_usage_warnings(frames, bills)
    assert [(w.key, w.params["file"], w.params["value"], w.params["months"]) for w in warnings] == [
        ("unbilled_usage_months", "i-gpu1.csv", "i-gpu1", "2026-08")]


@pytest.mark.parametrize("text, gb", [
    ("1000 MiB", 1000 * MIB_GB),    # 1.048576 GB, not 1000 GB
    ("1000MiB", 1000 * MIB_GB),
    ("2 GiB", 2 * 2**30 / 1e9),
    ("1500 MB", 1.5),
    ("40 GB", 40.0),
    ("40", 40.0),                   # the column's unit
])
def test_memory_values_carry_their_unit(text, gb):
    sheet = pd.DataFrame({"resource_id": ["i-a"], "month": ["2026-07"], "gpu_util_pct": ["50 %"],
                          "mem_used_gb": [text]}, index=[2])
    assert read_usage(sheet, "Usage")["mem_peak_gb"].iloc[0] == pytest.approx(gb, rel=1e-12)


@pytest.mark.parametrize("column, text", [("mem_used_gb", "2 G"), ("mem_used_gb", "50 %"),
                                          ("gpu_util_pct", "40 MiB")])
def test_ambiguous_or_wrong_units_are_refused(column, text):
    values = {"mem_used_gb": "10", "gpu_util_pct": "50", column: text}
    sheet = pd.DataFrame({"resource_id": ["i-a"], "month": ["2026-07"], **{k: [v] for k, v in values.items()}},
                         index=[2])
    with pytest.raises(InputError) as caught:
        read_usage(sheet, "Usage")
    problems = caught.value.problems
    assert [(p.code, p.sheet, p.cell) for p in problems] == [(Code.UNKNOWN_VALUE, "Usage", problems[0].cell)]
    assert problems[0].cell.endswith("2") and text in problems[0].message
