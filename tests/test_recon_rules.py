"""The Recon rules' two views: each rule's Excel formula, recalculated by `formulas`, equals its Python function
and the value worked out by hand, over a table of cases."""

from __future__ import annotations

import datetime as dt
import math

import formulas
import numpy as np
import pytest
import schedula
from openpyxl.utils import get_column_letter

from budgetgen.recon import rules
from budgetgen.recon.rules import ACTIONS, RULES, Limits, Rule
from budgetgen.workbook.layout import SHOWN_WORDS

pytestmark = pytest.mark.filterwarnings("error")

LIMITS = Limits(low_util_threshold=0.20, oom_threshold=3, variance_tolerance=0.10,
                actions={"low_utilization": "drop it", "oom": "fix memory", "data_starved": "feed it",
                         "over_plan": "see the plan", "untagged_gpu": "tag it", "off_plan_pricing": "check the tier"})
# The workbook names the formulas read, as Assumptions holds them for LIMITS.
NAMES = {"LowUtilThreshold": 0.20, "OomThreshold": 3, "VarianceTolerance": 0.10, "PercentScale": 100,
         "DataStarvedMemShare": 0.8, "DataStarvedUtil": 0.10, "ActionLowUtilization": "drop it",
         "ActionOom": "fix memory", "ActionDataStarved": "feed it", "ActionOverPlan": "see the plan",
         "ActionUntaggedGpu": "tag it", "ActionOffPlanPricing": "check the tier", "ReconSpikeFactor": 3,
         # how an English workbook shows the flags and statuses (About's word table): as their keys
         "WordKey": np.array([[w] for w in SHOWN_WORDS], dtype=object),
         "WordShown": np.array([[w] for w in SHOWN_WORDS], dtype=object)}
NAN = math.nan


def usage(util=None, mem_share=None, oom=None, task="T1", task_status="", pricing="", planned_pricing=""):
    return {"util": util, "mem_share": mem_share, "oom": oom, "task": task, "task_status": task_status,
            "pricing": pricing, "planned_pricing": planned_pricing}


# (rule, the placeholders' values, the result worked out by hand); None or NaN is a blank cell.
CASES = [
    # the median of a task's previous billed days; a day is a spike above ReconSpikeFactor (3) x that median
    (rules.TRAILING_MEDIAN, {"previous": [100.0, 110.0, 90.0, 100.0, 105.0, 95.0, 100.0]}, 100.0),
    (rules.TRAILING_MEDIAN, {"previous": [90.0, 110.0]}, 100.0),                  # (90 + 110) / 2
    (rules.SPIKE, {"billed": 500.0, "median": 100.0}, True),                     # 500 > 3 x 100
    (rules.SPIKE, {"billed": 300.0, "median": 100.0}, False),                    # 300 is not above 300
    (rules.SPIKE, {"billed": 500.0, "median": None}, False),                     # a first day: no median
    (rules.FLAGS_BY_KEY["low_utilization"], usage(util=19.9), True),
    (rules.FLAGS_BY_KEY["low_utilization"], usage(util=20.0), False),     # 20% is not under 20%
    (rules.FLAGS_BY_KEY["low_utilization"], usage(util=0.0), True),
    (rules.FLAGS_BY_KEY["low_utilization"], usage(util=None), False),     # no usage measured
    (rules.FLAGS_BY_KEY["low_utilization"], usage(util=NAN), False),
    (rules.FLAGS_BY_KEY["oom"], usage(oom=3), True),
    (rules.FLAGS_BY_KEY["oom"], usage(oom=2), False),
    (rules.FLAGS_BY_KEY["oom"], usage(oom=None), False),
    (rules.FLAGS_BY_KEY["data_starved"], usage(util=9.9, mem_share=0.81), True),
    (rules.FLAGS_BY_KEY["data_starved"], usage(util=10.0, mem_share=0.95), False),   # 10% is not under 10%
    (rules.FLAGS_BY_KEY["data_starved"], usage(util=5.0, mem_share=0.80), False),    # 80% is not over 80%
    (rules.FLAGS_BY_KEY["data_starved"], usage(util=5.0, mem_share=None), False),
    (rules.FLAGS_BY_KEY["data_starved"], usage(util=None, mem_share=0.9), False),
    (rules.FLAGS_BY_KEY["over_plan"], usage(task="T1", task_status="over plan"), True),
    (rules.FLAGS_BY_KEY["over_plan"], usage(task="T1", task_status=""), False),
    (rules.FLAGS_BY_KEY["over_plan"], usage(task="", task_status=""), False),        # unallocated
    (rules.FLAGS, usage(util=5.0, mem_share=0.9, oom=4, task="T1", task_status="over plan"),
     "low_utilization oom data_starved over_plan"),
    (rules.FLAGS, usage(util=50.0, mem_share=0.5, oom=5), "oom"),
    (rules.FLAGS_BY_KEY["untagged_gpu"], usage(task=""), True),
    # Billed under another FOCUS PricingCategory than the task's tier plans: planned Committed, billed on demand.
    (rules.FLAGS_BY_KEY["off_plan_pricing"], usage(pricing="Standard", planned_pricing="Committed"), True),
    (rules.FLAGS_BY_KEY["off_plan_pricing"], usage(pricing="Committed Standard", planned_pricing="Committed"), True),
    (rules.FLAGS_BY_KEY["off_plan_pricing"], usage(pricing="Committed", planned_pricing="Committed"), False),
    (rules.FLAGS_BY_KEY["off_plan_pricing"], usage(pricing="", planned_pricing="Committed"), False),   # not billed
    (rules.FLAGS_BY_KEY["off_plan_pricing"], usage(pricing="Standard", planned_pricing=""), False),   # not planned
    (rules.FLAGS_BY_KEY["off_plan_pricing"], usage(task="", pricing="Standard", planned_pricing="Committed"),
     False),                                                                                   # unallocated
    (rules.FLAGS, usage(task="T1", pricing="Dynamic", planned_pricing="Standard"), "off_plan_pricing"),
    (rules.ACTION, {"flags": "off_plan_pricing untagged_gpu"}, "tag it. check the tier."),
    (rules.FLAGS_BY_KEY["untagged_gpu"], usage(task="T1"), False),
    (rules.FLAGS, usage(util=None, mem_share=None, oom=None, task=""), "untagged_gpu"),
    (rules.FLAGS, usage(util=None, mem_share=None, oom=None, task="T1"), ""),
    # The printed summary: per flag, the resources whose flags cell holds it as a whole word, and their amounts.
    (rules.FLAG_COUNT, {"word": "oom", "flags": ["oom", "low_utilization OOM", "room", ""]}, 2),
    (rules.FLAG_AMOUNT, {"word": "low_utilization", "flags": ["low_utilization over_plan", "oom", "low_utilization"],
                         "amounts": [120.5, 70.0, 9.5]}, 130.0),                  # 120.5 + 9.5
    (rules.FLAG_AMOUNT, {"word": "oom", "flags": ["room", ""], "amounts": [5.0, 6.0]}, 0.0),
    (rules.FLAGGED, {"flags": ["oom", "", "untagged_gpu", " "]}, 2),
    (rules.TASKS_OVER, {"statuses": ["over plan", "", "partial month", "over plan"]}, 2),
    (rules.NOT_SPLIT, {"variance": 500.0, "rate": 120.0, "usage": 300.0}, 80.0),  # 500 - 120 - 300
    (rules.FLAGS, usage(util=5.0, mem_share=None, oom=None, task=""), "low_utilization untagged_gpu"),
    (rules.FLAGS, usage(util=10.0, mem_share=20 / 24, oom=0, task="T1", task_status="over plan"),
     "low_utilization over_plan"),
    (rules.ACTION, {"flags": "low_utilization data_starved"}, "drop it. feed it."),
    (rules.ACTION, {"flags": "oom over_plan"}, "fix memory. see the plan."),
    (rules.ACTION, {"flags": "untagged_gpu low_utilization"}, "drop it. tag it."),   # in FLAG_RULES' order
    (rules.ACTION, {"flags": ""}, ""),
    # A resource's cards: its task's cards held over the task's resource rows (counted once, on the task's row),
    # rounded (halves up), at least 1.
    (rules.RESOURCE_CARDS, {"task": "T1", "task_cards": 4, "task_rows": 2}, 2),     # 4 cards over 2 resources
    (rules.RESOURCE_CARDS, {"task": "T1", "task_cards": 2, "task_rows": 3}, 1),     # 0.67 → 1
    (rules.RESOURCE_CARDS, {"task": "T1", "task_cards": 3, "task_rows": 2}, 2),     # 1.5 → 2
    (rules.RESOURCE_CARDS, {"task": "", "task_cards": None, "task_rows": None}, 1),  # unallocated
    (rules.RESOURCE_CARDS, {"task": "T9", "task_cards": None, "task_rows": 1}, 1),   # not in the plan
    (rules.RESOURCE_CARDS, {"task": "T1", "task_cards": 8, "task_rows": 1}, 8),
    (rules.RESOURCE_CARDS, {"task": "T1", "task_cards": 4, "task_rows": 0}, 4),      # no count: one row
    # Idle cards: cards × (100 − util) / 100 when flagged low_utilization.
    (rules.IDLE_CARDS, {"flags": "low_utilization", "util": 10.0, "cards": 2}, 1.8),
    (rules.IDLE_CARDS, {"flags": "low_utilization", "util": 3.0, "cards": 1}, 0.97),   # one card at 3 % counts
    (rules.IDLE_CARDS, {"flags": "low_utilization", "util": 0.0, "cards": 4}, 4.0),     # all idle
    (rules.IDLE_CARDS, {"flags": "low_utilization over_plan", "util": 19.9, "cards": 8}, 8 * 0.801),   # 6.408
    (rules.IDLE_CARDS, {"flags": "oom untagged_gpu", "util": 5.0, "cards": 4}, 0.0),   # not flagged low
    (rules.IDLE_CARDS, {"flags": "low_utilization", "util": None, "cards": 2}, 0.0),
    # The saving if acted on: the idle cards at the resource's billed rate, billed × idle / cards.
    (rules.SAVING, {"billed": 587.0, "idle": 1.8, "cards": 2}, 528.3),
    (rules.SAVING, {"billed": 412.0, "idle": 0.97, "cards": 1}, 399.64),
    (rules.SAVING, {"billed": 500.0, "idle": 0.0, "cards": 1}, 0.0),
    # An untagged GPU's whole bill is to attribute or stop; a task's resource has none.
    (rules.TO_ATTRIBUTE, {"task": "", "billed": 412.0}, 412.0),
    (rules.TO_ATTRIBUTE, {"task": "T1", "billed": 412.0}, 0.0),
    (rules.VARIANCE, {"billed": 517.2, "planned": 600.0}, 517.2 - 600.0),
    # The cost compared with the plan: the EffectiveCost where the bill gives it, else the BilledCost.
    (rules.COMPARED, {"billed": 0.0, "effective": 412.5}, 412.5),
    (rules.COMPARED, {"billed": 517.2, "effective": None}, 517.2),
    (rules.COMPARED, {"billed": 517.2, "effective": 0.0}, 0.0),          # amortised to nothing is known, not blank
    (rules.VARIANCE, {"billed": 10.0, "planned": 0.0}, 10.0),
    (rules.VARIANCE_PCT, {"variance": 300.0, "planned": 1000.0}, 0.30),
    (rules.VARIANCE_PCT, {"variance": 10.0, "planned": 0.0}, None),   # no plan: blank, not a division by 0
    (rules.STATUS, {"billed": 1300.0, "planned": 1000.0, "partial": False}, "over plan"),
    (rules.STATUS, {"billed": 1090.0, "planned": 1000.0, "partial": False}, ""),    # within the 10% tolerance
    (rules.STATUS, {"billed": 1101.0, "planned": 1000.0, "partial": False}, "over plan"),
    (rules.STATUS, {"billed": 10.0, "planned": 0.0, "partial": False}, "over plan"),  # billed without a plan
    (rules.STATUS, {"billed": 0.0, "planned": 0.0, "partial": False}, ""),
    (rules.STATUS, {"billed": -5.0, "planned": 0.0, "partial": False}, ""),         # a credit on an unplanned task
    (rules.STATUS, {"billed": 12.0, "planned": 1000.0, "partial": True}, "partial month"),   # not −99 %
    (rules.STATUS, {"billed": 1300.0, "planned": 1000.0, "partial": True}, "partial month"),
    # A task's share of the buffer: the month's buffer in proportion of its planned GPU cost.
    (rules.BUFFER_SHARE, {"reserved": 150.0, "planned": 600.0, "planned_total": 2880.0}, 31.25),
    (rules.BUFFER_SHARE, {"reserved": 150.0, "planned": 0.0, "planned_total": 2880.0}, 0.0),
    (rules.BUFFER_SHARE, {"reserved": 10.0, "planned": 0.0, "planned_total": 0.0}, 0.0),   # nothing planned
    (rules.PLANNED_HOURS, {"planned": 840.0, "tier": "monthly", "cards_billed": 2, "gpu_hours": 1168.0,
                           "hours_per_month": 730}, 1460.0),      # rented cards bill all month: 2 × 730
    (rules.PLANNED_HOURS, {"planned": 600.0, "tier": "on_demand", "cards_billed": 1, "gpu_hours": 105.8,
                           "hours_per_month": 730}, 105.8),
    (rules.PLANNED_HOURS, {"planned": 0.0, "tier": "on_demand", "cards_billed": 1, "gpu_hours": 105.8,
                           "hours_per_month": 730}, 0.0),         # not active this month
    # Standard costing: 1300 billed for 39.67 h against 1000 planned for 40 h (planned rate 25 an hour).
    (rules.RATE_VARIANCE, {"billed": 1300.0, "planned": 1000.0, "planned_hours": 40.0, "hours": 39.67},
     1300.0 - 25.0 * 39.67),                                       # 308.25: paid more per hour
    (rules.USAGE_VARIANCE, {"billed": 1300.0, "planned": 1000.0, "planned_hours": 40.0, "hours": 39.67},
     (39.67 - 40.0) * 25.0),                                       # −8.25: used fewer hours
    (rules.USAGE_VARIANCE, {"billed": 700.0, "planned": 600.0, "planned_hours": 80.0, "hours": 100.0}, 150.0),
    (rules.RATE_VARIANCE, {"billed": 700.0, "planned": 600.0, "planned_hours": 80.0, "hours": 100.0}, -50.0),
    (rules.RATE_VARIANCE, {"billed": 95.0, "planned": 100.0, "planned_hours": 40.0, "hours": None}, None),
    (rules.USAGE_VARIANCE, {"billed": 95.0, "planned": 100.0, "planned_hours": 40.0, "hours": None}, None),
    (rules.RATE_VARIANCE, {"billed": 10.0, "planned": 0.0, "planned_hours": 0.0, "hours": 5.0}, None),
    (rules.USAGE_VARIANCE, {"billed": 10.0, "planned": 0.0, "planned_hours": None, "hours": 5.0}, None),
    (rules.BUFFER_LEFT, {"reserved": 150.0, "non_gpu": 49.44}, 150.0 - 49.44),
    (rules.ALLOCATED_GPU, {"tasks": ["T1", "", "T2", ""], "billed": [517.2, 250.0, 587.0, -10.0]}, 517.2 + 587.0),
    (rules.UNALLOCATED_GPU, {"tasks": ["T1", "", "T2", ""], "billed": [517.2, 250.0, 587.0, -10.0]}, 250.0 - 10.0),
    (rules.UNALLOCATED_GPU, {"tasks": ["T1"], "billed": [5.0]}, 0.0),
    (rules.BILLED_TOTAL, {"non_gpu": 49.44, "allocated": 2919.2, "unallocated": 250.0, "commitments": 0.0,
                          "credits": 0.0}, 49.44 + 2919.2 + 250.0),
    (rules.BILLED_TOTAL, {"non_gpu": 49.44, "allocated": 2919.2, "unallocated": 250.0, "commitments": 1234.56,
                          "credits": -60.0}, 49.44 + 2919.2 + 250.0 + 1234.56 - 60.0),
    # A non-GPU category: only its bill beyond its Extras uses the buffer; an under-run offsets nothing.
    (rules.NOT_PLANNED, {"billed": 73.1, "planned": 50.0}, 73.1 - 50.0),
    (rules.NOT_PLANNED, {"billed": 300.0, "planned": 300.0}, 0.0),
    (rules.NOT_PLANNED, {"billed": 0.0, "planned": 50.0}, 0.0),
    # The tasks' idle-card savings (an untagged resource's is in its whole bill, counted apart).
    (rules.IDLE_SAVING, {"tasks": ["T1", "", "T2"], "saving": [528.3, 399.64, 0.0]}, 528.3),
    (rules.ACHIEVABLE_SAVING, {"idle_saving": 528.3, "unallocated": 412.0}, 528.3 + 412.0),
    # A month is partial when its first to last charge day spans fewer days than the month.
    (rules.PARTIAL, {"first": dt.date(2026, 7, 1), "last": dt.date(2026, 7, 31)}, False),
    (rules.PARTIAL, {"first": dt.date(2026, 7, 1), "last": dt.date(2026, 7, 30)}, True),
    (rules.PARTIAL, {"first": dt.date(2026, 7, 31), "last": dt.date(2026, 7, 31)}, True),     # one line
    (rules.PARTIAL, {"first": dt.date(2026, 2, 1), "last": dt.date(2026, 2, 28)}, False),
    (rules.PARTIAL, {"first": dt.date(2028, 2, 1), "last": dt.date(2028, 2, 28)}, True),      # leap year
    (rules.PARTIAL, {"first": dt.date(2026, 12, 1), "last": dt.date(2026, 12, 31)}, False),
    # The re-forecast of a month: the bill, the plan when unbilled, the larger of the two when billed in part.
    (rules.REFORECAST, {"planned": 1000.0, "billed": None, "partial": False}, 1000.0),
    (rules.REFORECAST, {"planned": 1000.0, "billed": 1200.0, "partial": False}, 1200.0),
    (rules.REFORECAST, {"planned": 1000.0, "billed": 800.0, "partial": False}, 800.0),
    (rules.REFORECAST, {"planned": 1000.0, "billed": 12.0, "partial": True}, 1000.0),
    (rules.REFORECAST, {"planned": 1000.0, "billed": 1300.0, "partial": True}, 1300.0),
]


EXCEL_EPOCH = dt.date(1899, 12, 30)


def _cell(value: object) -> np.ndarray:
    """A cell's value for `formulas`: None, NaN and "" are an empty cell, a date its serial number."""
    blank = value is None or value == "" or (isinstance(value, float) and math.isnan(value))
    if isinstance(value, dt.date):
        value = (value - EXCEL_EPOCH).days
    return np.array([[schedula.EMPTY if blank else value]], dtype=object)


def excel_value(rule: Rule, values: dict) -> object:
    """The rule's formula over cells A1, B1, ... (lists as column ranges), recalculated by `formulas`."""
    cells, inputs = {}, {}
    for i, name in enumerate(rule.placeholders):
        column, value = get_column_letter(i + 1), values[name]
        if isinstance(value, list):
            ref = f"{column}1:{column}{len(value)}" if len(value) > 1 else f"{column}1"  # `formulas` says A1 for A1:A1
            inputs[ref] = np.vstack([_cell(v) for v in value])
        else:
            ref = f"{column}1"
            inputs[ref] = _cell(value)
        cells[name] = ref
    compiled = formulas.Parser().ast("=" + rule.formula(cells))[1].compile()
    names = {key.upper(): value for key, value in NAMES.items()}
    result = compiled(*(inputs[key] if key in inputs else names[key] for key in compiled.inputs))
    result = np.asarray(result).ravel()[0]
    if isinstance(result, np.generic):
        result = result.item()
    return None if result == "" and rule.fmt not in ("text",) else result


def _same(found: object, expected: object) -> bool:
    if type(expected) is int and isinstance(found, float) and found.is_integer():   # Excel has no integers
        found = int(found)
    if isinstance(expected, float) and isinstance(found, (int, float)) and not isinstance(found, bool):
        return found == pytest.approx(expected, rel=1e-12, abs=1e-12)
    return found == expected and type(found) is type(expected)


@pytest.mark.parametrize("rule, values, expected", CASES, ids=lambda x: x.key if isinstance(x, Rule) else "")
def test_python_view(rule, values, expected):
    assert _same(rule.py(values, LIMITS), expected)


@pytest.mark.parametrize("rule, values, expected", CASES, ids=lambda x: x.key if isinstance(x, Rule) else "")
def test_excel_view(rule, values, expected):
    assert _same(excel_value(rule, values), expected), rule.formula({p: p for p in rule.placeholders})


def test_every_rule_has_cases_and_every_flag_an_action():
    assert {r.key for r in RULES} == {rule.key for rule, _, _ in CASES}
    assert set(ACTIONS) == {r.key for r in rules.FLAG_RULES} == set(LIMITS.actions)
    assert {r.action_name for r in rules.FLAG_RULES} <= set(NAMES)


def test_formula_over_named_cells():
    formula = rules.SAVING.formula({"cards": "L5", "billed": "E5", "idle": "M5"})
    assert formula == "IF(L5>0,E5*M5/L5,0)"
    assert not formula.startswith("=")
    with pytest.raises(KeyError) as caught:
        rules.SAVING.formula({"cards": "L5"})
    assert "billed, idle" in str(caught.value)


def test_every_flag_has_an_action_sentence():
    # Not the flag's name again ("over plan."): a sentence saying what to do.
    for rule in rules.FLAG_RULES:
        assert len(rule.action.split()) >= 4 and rule.action.replace("_", " ") != rule.key.replace("_", " ")
    assert rules.FLAGS_BY_KEY["untagged_gpu"].action == "tag it or stop it"


def test_flags_match_whole_words():
    # A flag name inside another word does not count: "oom" in a text such as "room" raises no action.
    assert excel_value(rules.ACTION, {"flags": "room"}) == "" == rules.ACTION.py({"flags": "room"}, LIMITS)
