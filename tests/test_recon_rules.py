"""The Recon rules' two views: each rule's Excel formula, recalculated by `formulas`, equals its Python function
and the value worked out by hand, over a table of cases."""

from __future__ import annotations

import math

import formulas
import numpy as np
import pytest
import schedula
from openpyxl.utils import get_column_letter

from budgetgen.recon import rules
from budgetgen.recon.rules import ACTIONS, RULES, Limits, Rule

pytestmark = pytest.mark.filterwarnings("error")

LIMITS = Limits(low_util_threshold=0.20, oom_threshold=3, variance_tolerance=0.10,
                actions={"low_utilization": "drop it", "oom": "fix memory", "data_starved": "feed it",
                         "over_plan": "over plan"})
# The workbook names the formulas read, as Assumptions holds them for LIMITS.
NAMES = {"LowUtilThreshold": 0.20, "OomThreshold": 3, "VarianceTolerance": 0.10, "PercentScale": 100,
         "DataStarvedMemShare": 0.8, "DataStarvedUtil": 0.10, "ActionLowUtilization": "drop it",
         "ActionOom": "fix memory", "ActionDataStarved": "feed it", "ActionOverPlan": "over plan"}
NAN = math.nan


def usage(util=None, mem_share=None, oom=None, task="T1", task_status=""):
    return {"util": util, "mem_share": mem_share, "oom": oom, "task": task, "task_status": task_status}


# (rule, the placeholders' values, the result worked out by hand); None or NaN is a blank cell.
CASES = [
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
    (rules.FLAGS, usage(util=None, mem_share=None, oom=None, task=""), ""),
    (rules.FLAGS, usage(util=10.0, mem_share=20 / 24, oom=0, task="T1", task_status="over plan"),
     "low_utilization over_plan"),
    (rules.ACTION, {"flags": "low_utilization data_starved"}, "drop it. feed it."),
    (rules.ACTION, {"flags": "oom over_plan"}, "fix memory. over plan."),
    (rules.ACTION, {"flags": ""}, ""),
    # The saving if acted on: the resource's bill when it is flagged low_utilization, else nothing.
    (rules.SAVING, {"flags": "low_utilization", "billed": 587.0}, 587.0),
    (rules.SAVING, {"flags": "low_utilization over_plan", "billed": 500.0}, 500.0),
    (rules.SAVING, {"flags": "over_plan", "billed": 1300.0}, 0.0),
    (rules.SAVING, {"flags": "oom data_starved", "billed": 95.0}, 0.0),
    (rules.SAVING, {"flags": "", "billed": 250.0}, 0.0),
    (rules.SAVING, {"flags": "low_utilization", "billed": -50.0}, -50.0),  # a credit is a negative bill
    (rules.VARIANCE, {"billed": 517.2, "planned": 600.0}, 517.2 - 600.0),
    (rules.VARIANCE, {"billed": 10.0, "planned": 0.0}, 10.0),
    (rules.VARIANCE_PCT, {"variance": 300.0, "planned": 1000.0}, 0.30),
    (rules.VARIANCE_PCT, {"variance": 10.0, "planned": 0.0}, None),   # no plan: blank, not a division by 0
    (rules.STATUS, {"billed": 1300.0, "planned": 1000.0}, "over plan"),
    (rules.STATUS, {"billed": 1090.0, "planned": 1000.0}, ""),    # within the 10% tolerance
    (rules.STATUS, {"billed": 1101.0, "planned": 1000.0}, "over plan"),
    (rules.STATUS, {"billed": 10.0, "planned": 0.0}, "over plan"),  # billed without a plan
    (rules.STATUS, {"billed": 0.0, "planned": 0.0}, ""),
    (rules.STATUS, {"billed": -5.0, "planned": 0.0}, ""),         # a credit on an unplanned task
    (rules.BUFFER_LEFT, {"reserved": 150.0, "non_gpu": 49.44}, 150.0 - 49.44),
    (rules.ALLOCATED_GPU, {"tasks": ["T1", "", "T2", ""], "billed": [517.2, 250.0, 587.0, -10.0]}, 517.2 + 587.0),
    (rules.UNALLOCATED_GPU, {"tasks": ["T1", "", "T2", ""], "billed": [517.2, 250.0, 587.0, -10.0]}, 250.0 - 10.0),
    (rules.UNALLOCATED_GPU, {"tasks": ["T1"], "billed": [5.0]}, 0.0),
    (rules.BILLED_TOTAL, {"non_gpu": 49.44, "allocated": 2919.2, "unallocated": 250.0}, 49.44 + 2919.2 + 250.0),
]


def _cell(value: object) -> np.ndarray:
    """A cell's value for `formulas`: None, NaN and "" are an empty cell."""
    blank = value is None or value == "" or (isinstance(value, float) and math.isnan(value))
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
    formula = rules.SAVING.formula({"flags": "J5", "billed": "E5"})
    assert formula == 'IF(OR(ISNUMBER(SEARCH(" low_utilization "," "&J5&" "))),E5,0)'
    assert not formula.startswith("=")
    with pytest.raises(KeyError) as caught:
        rules.SAVING.formula({"flags": "J5"})
    assert "billed" in str(caught.value)


def test_flags_match_whole_words():
    # A flag name inside another word does not count: "oom" in a text such as "room" raises no action.
    assert excel_value(rules.ACTION, {"flags": "room"}) == "" == rules.ACTION.py({"flags": "room"}, LIMITS)
