"""Each rule's Excel view and Python view give the number worked out by hand (the Excel view through `formulas`)."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest
from conftest import _patched_formulas, _plain

from budgetgen.core.schema import CONSTANT_VALUES, SETTINGS
from budgetgen.model import rules
from budgetgen.workbook import SAFE_FUNCTIONS

SETTINGS_USED = SimpleNamespace(hidden_cost_buffer=0.25, depreciation_years=5, upkeep_per_year=730,
                                electricity_per_kwh=0.5, hours_per_month=720, period_months=3, pue=1.0,
                                colocation_per_kw_month=0, residual_value=0, discount_rate=0, peak_factor=1.0)
NAMED = {**{s.name: getattr(SETTINGS_USED, s.key) for s in SETTINGS if hasattr(SETTINGS_USED, s.key)},
         **CONSTANT_VALUES, "CheckTolerance": rules.CHECK_TOLERANCE, "DaysPerMonth": 720 / 24}

VERDICT_INPUTS = {"daily_fixed": 22, "on_demand": 2.2, "energy": 0.2, "break_even": 11, "plan_hours": 24,
                  "no_price": "type a purchase price", "no_on_demand": "type an on-demand price",
                  "no_power": "type a power figure"}
CASES = [
    (rules.BUFFER, {"gpu": 1000, "commitments": 0, "rate": 0.25}, 250),
    (rules.BUFFER, {"gpu": 1000, "commitments": -200, "rate": 0.25}, 200),
    (rules.BUFFER, {"gpu": 1000, "commitments": 0, "rate": 0.30}, 300),     # the high scenario's rate
    # demand ramps: month 3 of a task from month 1 growing 10%, doubled by a scenario: 1.1^2 x 2; outside: 0
    (rules.DEMAND_FACTOR, {"month": 3, "start": 1, "end": 12, "growth": 0.1, "scale": 2, "ramp": None}, 2.42),
    (rules.DEMAND_FACTOR, {"month": 3, "start": 4, "end": 12, "growth": 0.1, "scale": 1, "ramp": None}, 0),
    (rules.DEMAND_FACTOR, {"month": 3, "start": 1, "end": 12, "growth": 0.1, "scale": 2, "ramp": 0.5}, 1),  # typed
    # 864,000 requests a day x 1.21 over one replica's 10 requests/s around the clock: 1.21 -> 2 replicas x 4 cards
    (rules.MONTH_CARDS, {"factor": 1.21, "online": True, "requests": 864_000, "hours_per_day": 24, "req_s": 10,
                         "min_replicas": 1, "cards_per_run": 4, "cards_held": 4}, 8),
    (rules.MONTH_CARDS, {"factor": 0.5, "online": False, "requests": None, "hours_per_day": None, "req_s": None,
                         "min_replicas": 1, "cards_per_run": 8, "cards_held": 8}, 8),  # a run keeps its shape
    (rules.MONTH_GPU_HOURS, {"online": True, "hours": 2920, "cards": 6, "cards_held": 4, "factor": 1.5}, 4380),
    (rules.MONTH_GPU_HOURS, {"online": False, "hours": 100, "cards": 8, "cards_held": 8, "factor": 0.5}, 50),
    (rules.MONTH_CARDS_BILLED, {"per_card_month": True, "cards": 2, "hours": 1500}, 3),  # 1,500 h: 3 whole cards
    (rules.MONTH_CARDS_BILLED, {"per_card_month": False, "cards": 2, "hours": 1500}, 2),
    (rules.MONTH_COST, {"per_card_month": True, "cost": 6000, "billed": 3, "cards_billed": 2, "hours": 0,
                        "hours_row": 1, "price": 1.1}, 9900),                   # 6,000 / 2 x 3 x 1.1
    (rules.MONTH_COST, {"per_card_month": False, "cost": 600, "billed": 0, "cards_billed": 1, "hours": 450,
                        "hours_row": 300, "price": 1}, 900),                    # 600 x 450 / 300
    (rules.PRICE_TREND, {"change": -0.19, "month": 7}, 0.9),                 # 0.81^(6/12)
    (rules.OVER_BUDGET, {"planned": 10_950, "budget": 10_800}, True),
    (rules.OVER_BUDGET_BY, {"planned": 10_950, "budget": 10_800}, 150),   # 10,950 - 10,800
    (rules.OVER_BUDGET_BY, {"planned": 10_700, "budget": 10_800}, 0),     # within: nothing over, not -100
    (rules.BREAK_EVEN_SHARE, {"hours": 6}, 0.25),         # the buffer is on the GPU cost incl. commitments
    (rules.MONTH_TOTAL, {"gpu": 100, "commitments": 0, "extras": 20, "buffer": 25}, 145),
    (rules.MONTH_TOTAL, {"gpu": 100, "commitments": -30, "extras": 20, "buffer": 25}, 115),
    # commitments (hours_per_month 720, a 3-month plan)
    (rules.COMMIT_RATE, {"listed": 1.5, "fx": 7, "on_demand": 20, "discount": 0.2}, 10.5),   # a quoted rate wins
    (rules.COMMIT_RATE, {"listed": None, "fx": 7, "on_demand": 20, "discount": 0.2}, 16),    # 20 x (1 - 20%)
    (rules.COMMIT_RATE, {"listed": None, "fx": 7, "on_demand": None, "discount": 0.2}, None),
    (rules.BREAK_EVEN_UTILISATION, {"rate": 1.6, "price": 2}, 0.8),
    (rules.COMMITTED_COST, {"month": 2, "term": 12, "cards": 16, "rate": 1.6}, 16 * 1.6 * 720),
    (rules.COMMITTED_COST, {"month": 13, "term": 12, "cards": 16, "rate": 1.6}, 0),         # after the term
    (rules.COVERED_HOURS, {"month": 1, "term": 12, "demand": 12000, "cards": 16}, 11520),
    (rules.COVERED_HOURS, {"month": 1, "term": 12, "demand": 5000, "cards": 16}, 5000),
    (rules.UNUSED_HOURS, {"month": 1, "term": 12, "cards": 16, "covered": 5000}, 11520 - 5000),
    (rules.UNUSED_COST, {"unused": 720, "rate": 1.6}, 1152),
    (rules.RENT_DISPLACED, {"demand": 12000, "rent": 24000, "covered": 11520}, 23040),
    (rules.RENT_DISPLACED, {"demand": 0, "rent": 0, "covered": 0}, 0),
    (rules.DEMAND_LEFT, {"demand": 12000, "covered": 11520}, 480),
    (rules.COMMIT_ADJUSTMENT, {"committed": 18432, "displaced": 23040}, -4608),
    (rules.TERM_TOTAL, {"cards": 2, "rate": 1.5, "term": 12}, 2 * 1.5 * 720 * 12),
    (rules.MONTHS_AFTER_PLAN, {"term": 12}, 9),                     # a 12-month term from a 3-month plan
    (rules.MONTHS_AFTER_PLAN, {"term": 2}, 0),
    (rules.AFTER_PLAN_COST, {"cards": 2, "rate": 1.5, "after": 9}, 2 * 1.5 * 720 * 9),
    (rules.DAILY_FIXED, {"purchase": 36500, "power_w": 700}, 22),   # 36,500 / (5 × 365) + 730 / 365
    (rules.DAILY_FIXED, {"purchase": None, "power_w": 700}, None),                    # no purchase price: nothing to own
    (rules.ENERGY_PER_HOUR, {"power_w": 400}, 0.2),                  # 0.4 kW × 0.5 a kWh
    (rules.ENERGY_PER_HOUR, {"power_w": None}, None),                 # no power figure: unknown, not free
    (rules.BREAK_EVEN, {"on_demand": 2.2, "energy": 0.2, "daily_fixed": 22}, 11),
    (rules.BREAK_EVEN, {"on_demand": 0.1, "energy": 0.2, "daily_fixed": 22}, None),
    (rules.BREAK_EVEN, {"on_demand": 2.2, "energy": 0.2, "daily_fixed": None}, None),
    (rules.BREAK_EVEN, {"on_demand": None, "energy": 0.2, "daily_fixed": 22}, None),   # not 22 / (0 - 0.2)
    (rules.BREAK_EVEN, {"on_demand": 2.2, "energy": None, "daily_fixed": 22}, None),   # not 22 / 2.2 = 10
    (rules.PLAN_HOURS_PER_DAY, {"gpu_hour_months": 2160, "card_months": 3}, 24),   # 720 h a month on one card
    (rules.VERDICT, {**VERDICT_INPUTS}, "buy"),                                        # 24 h a day > 11
    (rules.VERDICT, {**VERDICT_INPUTS, "plan_hours": 5}, "rent"),
    (rules.VERDICT, {**VERDICT_INPUTS, "break_even": None}, "rent"),  # energy dearer than renting: never buy
    (rules.VERDICT, {**VERDICT_INPUTS, "daily_fixed": None, "break_even": None}, "type a purchase price"),
    # a blank on-demand price said "rent" (free renting); a blank power figure made electricity free
    (rules.VERDICT, {**VERDICT_INPUTS, "on_demand": None, "break_even": None}, "type an on-demand price"),
    (rules.VERDICT, {**VERDICT_INPUTS, "energy": None, "break_even": None}, "type a power figure"),
    (rules.VERDICT, {**VERDICT_INPUTS, "daily_fixed": None, "on_demand": None, "energy": None, "break_even": None},
     "type a purchase price"),
    (rules.TIES_OUT, {"computed": 100 + 1e-8, "expected": 100}, True),
    (rules.TIES_OUT, {"computed": 100.001, "expected": 100}, False),
    (rules.TIES_OUT, {"computed": 1e-10, "expected": 0}, True),
    (rules.RENT_LEFT, {"rent": 4380, "displaced": 2920}, 1 / 3),      # 2 of 3 cards' hours committed
    (rules.RENT_LEFT, {"rent": 0, "displaced": 0}, 1),                # nothing rented: nothing to share out
    (rules.RENTED, {"amount": 3, "share": 1 / 3}, 1),
    (rules.ORDER_UNIT_PRICE, {"quantity": 6, "total": 18000}, 3000),
    (rules.ORDER_UNIT_PRICE, {"quantity": 0, "total": 0}, None),      # nothing rented: no price, not 0
    (rules.RESERVED_CARDS, {"month": 2, "term": 12, "cards": 2}, 2),
    (rules.RESERVED_CARDS, {"month": 13, "term": 12, "cards": 2}, 0),
    (rules.RESERVED_HOURS, {"cards": 2, "term": 12}, 2 * 720 * 3),     # a 12-month term billed 3 plan months here
    (rules.RESERVED_COST, {"hours": 4320, "rate": 1.5}, 6480),
    (rules.REPLACED_PRICE, {"demand": [730, 730], "rent": [730, 730], "on_demand": 3.0}, 1.0),  # spot at 1.00
    (rules.REPLACED_PRICE, {"demand": [0, 0], "rent": [0, 0], "on_demand": 3.0}, 3.0),  # no demand: on-demand
    (rules.BREAK_EVEN_UTILISATION, {"rate": 2.4, "price": 1.0}, 2.4),  # never worth committing
    (rules.WHOLE, {"value": 5350.5}, "5,351"),                      # half away from zero, as ROUND; grouped
    (rules.WHOLE, {"value": 2.49}, "2"),
    (rules.WHOLE, {"value": -1234567.5}, "-1,234,568"),
]


def excel_view(rule: rules.Rule, values: dict):
    """The rule's formula with the values in place of its placeholders, evaluated by `formulas`."""
    literal = {k: '""' if v is None else f'"{v}"' if isinstance(v, str)
               else "{" + ",".join(map(repr, v)) + "}" if isinstance(v, list) else repr(v) for k, v in values.items()}
    func = _patched_formulas().Parser().ast("=" + rule.formula(**literal))[1].compile()
    upper = {name.upper(): value for name, value in NAMED.items()}
    return _plain(func(*(upper[name] for name in func.inputs)))


@pytest.mark.parametrize(("rule", "values", "expected"), CASES, ids=lambda x: getattr(x, "key", None))
def test_both_views_give_the_hand_worked_value(rule, values, expected):
    py = rule(SETTINGS_USED, **values)
    excel = excel_view(rule, values)
    if expected is None:
        assert py is None and excel == ""
    elif isinstance(expected, (bool, str)):
        assert py == expected and excel == expected
    else:
        assert py == pytest.approx(expected, rel=1e-12) and excel == pytest.approx(expected, rel=1e-12)


def test_the_master_check_fails_when_one_tie_out_fails():
    assert rules.ALL_CHECKS(None, checks=[True, True]) is True
    assert rules.ALL_CHECKS(None, checks=[True, False]) is False
    assert excel_view(rules.ALL_CHECKS, {"checks": True}) is True


def test_priced_now_counts_the_prices_that_are_numbers():
    """Two of three GPU price cells hold a price (the Excel view over cells holding "" is test_checks_live's)."""
    assert rules.PRICED_NOW(None, prices=[1.5, None, 0.4]) == 2
    func = _patched_formulas().Parser().ast("=" + rules.PRICED_NOW.formula(prices="1.5,0.4"))[1].compile()
    assert _plain(func()) == 2


def test_a_rule_refuses_a_missing_placeholder():
    with pytest.raises(KeyError) as info:
        rules.BUFFER.formula(extras="C6")
    assert "gpu" in str(info.value)


def test_every_rule_names_only_placeholders_or_assumptions():
    """Outside placeholders and strings, each word of a rule's formula is a function or a named cell."""
    for rule in rules.RULES:
        text = re.sub(r'"[^"]*"|\{[a-z_]+\}', "", rule.excel)
        words = set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", text))
        assert words <= SAFE_FUNCTIONS | set(NAMED), (rule.key, words - SAFE_FUNCTIONS - set(NAMED))
