"""The workbook's rules beyond the Tasks columns: one Excel expression per quantity, and its Python view.

Each `Rule` is one idea, as `columns.Calc` is for a Tasks column. `excel` is a formula (without the leading `=`)
over `{placeholders}` the workbook fills with cell references or defined names; every other word in it is a
workbook-scoped name on Assumptions. The Python view is compiled from that same text (`budgetgen.model.expr`): the engine
computes with it, the workbook writes the text with its result as the cached value, so the two cannot disagree. A
rule keeps a hand-written `py` only where its Python view is not the formula read literally: a text the sheet
formats (FIXED), a lookup the engine already holds the answer of (INDEX), or an algorithm the engine runs on values
the sheet spreads over ranges; those pairs are tested against the workbook's recalculation.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.records import TIERS
from ..core.schema import CONSTANT_VALUES, SETTINGS
from . import expr
from .columns import K

TIER_RECORDS = {t.name: t for t in TIERS}

CHECK_TOLERANCE = 1e-9  # relative tolerance of a Checks tie-out: the named cell CheckTolerance
_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")
# The workbook's defined names as the Python view reads them: the settings by their name on Assumptions, the fixed
# constants, and the names Assumptions derives from the settings.
NAMES = expr.Names(settings={x.name: x.key for x in SETTINGS},
                   constants={**CONSTANT_VALUES, "CheckTolerance": CHECK_TOLERANCE},
                   derived={"DaysPerMonth": lambda s: s.hours_per_month / K.HoursPerDay})


@dataclass(frozen=True)
class Rule:
    """One rule: an Excel template over named placeholders; its Python function of the same inputs is compiled from
    the template unless the rule gives its own (`py`)."""

    key: str
    meaning: str
    excel: str
    py: Callable[..., object] = field(default=None, compare=False)  # type: ignore[assignment]
    view: Callable[[Any, Mapping[str, object]], object] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.py is None:
            object.__setattr__(self, "py", expr.compile_excel(self.excel, NAMES))
        else:
            expr.parse(self.excel)  # a rule with its own py must still be a formula the sheet can read
        py = self.py
        # the Python view with its values as one mapping: a compiled formula's own (not unpacked again per call: the
        # engine calls the month rules millions of times a plan), a hand-written one's through keywords
        object.__setattr__(self, "view", getattr(py, "view", None) or (lambda settings, values: py(settings, **values)))

    @property
    def compiled(self) -> bool:
        """Whether the Python view is the formula itself (no hand-written `py`)."""
        return expr.is_compiled(self.py)

    @property
    def placeholders(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(_PLACEHOLDER.findall(self.excel)))

    def formula(self, **cells: str) -> str:
        """The Excel view with each placeholder replaced by a cell reference or a defined name."""
        missing = set(self.placeholders) - set(cells)
        if missing:
            raise KeyError(f"rule {self.key} needs {sorted(missing)}")
        return _PLACEHOLDER.sub(lambda m: cells[m.group(1)], self.excel)

    def __call__(self, settings, **values):
        """The Python view."""
        return self.view(settings, values)


# --------------------------------------------------------------- month totals (Summary)
BUFFER = Rule("buffer", "hidden-cost buffer of a month: the rate (the scenario's, ScenarioBuffer) times the month's "
              "GPU cost, commitments included", "({gpu}+{commitments})*{rate}")
MONTH_TOTAL = Rule("month_total", "a month's total: GPU rent, commitments, extras and the hidden-cost buffer",
                   "{gpu}+{commitments}+{extras}+{buffer}")

# --------------------------------------------------------------- buy versus rent (§3.7)
# Every GPU type the plan uses has a row. A figure the comparison needs and the GPUs sheet leaves blank stays
# unknown, never 0 (a blank on-demand price read as 0 made renting free, so the verdict said "rent"): the sides it
# feeds are blank and the verdict names what is missing. In the engine the verdict is one of the NO_* words; in
# the workbook a named cell holding the prompt to type it (workbook/buy_vs_rent.py).
NO_PURCHASE_PRICE = "no purchase price"
NO_ON_DEMAND_PRICE = "no on-demand price"
NO_POWER = "no power figure"
DAILY_FIXED = Rule("daily_fixed", "cost of owning one card a day: the purchase less its discounted residual value "
                   "as a level payment over the depreciation years (PMT), upkeep, and colocation of its power at the "
                   "PUE (blank: no purchase price)",
                   'IF(ISNUMBER({purchase}),(PMT(DiscountRate/MonthsPerYear,DepreciationYears*MonthsPerYear,'
                   '-{purchase},{purchase}*ResidualValue)*MonthsPerYear+UpkeepPerYear+ColocationPerKwMonth'
                   '*MonthsPerYear*IF(ISNUMBER({power_w}),{power_w},0)/WattsPerKw*Pue)/DaysPerYear,"")')
ENERGY_PER_HOUR = Rule("energy_per_hour", "electricity of one busy card an hour at the PUE (blank: no power figure)",
                       'IF(ISNUMBER({power_w}),{power_w}/WattsPerKw*Pue*ElectricityPerKwh,"")')
BREAK_EVEN_SHARE = Rule("break_even_share", "the break-even daily use as a share of the day: the utilisation above "
                        "which owning a card pays (blank: never, or a figure missing)",
                        'IF(ISNUMBER({hours}),{hours}/HoursPerDay,"")')
BREAK_EVEN = Rule("break_even_hours_per_day",
                  "daily use above which owning beats renting on demand (blank: never, or a figure missing)",
                  'IF(AND(ISNUMBER({daily_fixed}),ISNUMBER({on_demand}),ISNUMBER({energy})),'
                  'IF({on_demand}-{energy}>0,{daily_fixed}/({on_demand}-{energy}),""),"")')
PLAN_HOURS_PER_DAY = Rule("plan_hours_per_day", "hours a day each held card of this GPU is busy over the plan",
                          "{gpu_hour_months}/PeriodMonths/DaysPerMonth/({card_months}/PeriodMonths)")
VERDICT = Rule("verdict", "buy when a card would be busier than the break-even; without a purchase price, an "
               "on-demand price or a power figure, the word saying which",
               'IF(ISNUMBER({daily_fixed}),IF(ISNUMBER({on_demand}),IF(ISNUMBER({energy}),'
               'IF(AND({break_even}<>"",{plan_hours}>{break_even}),"buy","rent"),{no_power}),{no_on_demand}),'
               '{no_price})')

# --------------------------------------------------------------- demand ramps (Demand, Monthly)
# A task's demand in plan month m is its typed demand times a factor: (1 + growth_per_month)^(m - start) while it is
# active, 0 outside. An online service's requests per day follow the factor (its replicas are sized again each
# month); a training or batch task's runs follow it (the run's shape stays). The Tasks row is the factor-1 month, so
# each month's figures are the row's scaled by a ratio that is exactly 1 in a month of factor 1.
DEMAND_FACTOR = Rule("demand_factor", "the month's demand over the task's typed demand: compounded growth while "
                     "active (or the Ramp sheet's multiplier of the month, where given) times the scenario's demand "
                     "multiplier, 0 outside",
                     "IF(AND({month}>={start},{month}<={end}),IF(ISNUMBER({ramp}),{ramp},(1+{growth})^({month}-{start}))"
                     "*{scale},0)")


MONTH_CARDS = Rule(
    "month_cards", "cards held in the month: an online service's replicas for the month's requests times the cards "
    "of one replica, a training or batch task's cards while active",
    "IF({factor}>0,IF({online},MAX({min_replicas},CEILING({requests}*{factor}*PeakFactor/({hours_per_day}"
    "*SecondsPerHour*{req_s}),1))*{cards_per_run},{cards_held}),0)")
MONTH_GPU_HOURS = Rule(
    "month_gpu_hours", "GPU-hours in the month: an online service's in proportion to its cards, a run's in "
    "proportion to the factor", "IF({online},{hours}*({cards}/{cards_held}),{hours}*{factor})")
MONTH_CARDS_BILLED = Rule(
    "month_cards_billed", "cards billed in the month: on a per-card-month tier at least the month's GPU-hours in "
    "whole cards", "IF({per_card_month},MAX({cards},CEILING({hours}/HoursPerMonth,1)),{cards})")
PRICE_TREND = Rule("price_trend", "what a GPU's rental prices are in a plan month relative to the first: its yearly "
                   "change compounded by month", "(1+{change})^(({month}-1)/MonthsPerYear)")
MONTH_COST = Rule(
    "month_cost", "the task's GPU cost in the month: its monthly cost scaled by the billed cards (per-card-month "
    "tiers) or the GPU-hours (hourly tiers), times the scenario's price multiplier",
    "IF({per_card_month},{cost}*({billed}/{cards_billed}),IF({hours_row}>0,{cost}*({hours}/{hours_row}),0))*{price}")

# --------------------------------------------------------------- what to order (Order)
ORDER_IN_MONTH = Rule(
    "order_in_month", "an amount of one GPU type and tier in one plan month (the month's column of the tasks' billed "
    "cards, GPU-hours or cost)", "SUMPRODUCT(({gpus}={gpu})*({tiers}={tier})*{amounts})")
RENT_LEFT = Rule("rent_left", "share of a GPU type's rent in a plan month still rented once its commitments cover "
                 "what they can (1 - rent displaced / rent)", "IF({rent}>0,1-{displaced}/{rent},1)")
RENTED = Rule("rented", "an order line's amount in a plan month after the commitments: the amount times the share "
              "of its GPU type's rent still rented", "{amount}*{share}")
ORDER_PEAK = Rule("order_peak", "the most cards rented in any plan month", "MAX({by_month})")
ORDER_SUM = Rule("order_sum", "an order line's amounts over the plan's months", "SUM({by_month})")
ORDER_UNIT_PRICE = Rule("order_unit_price", "what the line pays per unit on average over the plan (its prices "
                        "change month by month with price_change_per_year and the scenario)",
                        'IF({quantity}>0,{total}/{quantity},"")')
RESERVED_CARDS = Rule("reserved_cards", "a commitment's cards in a plan month: its committed cards within its term",
                      "({month}<={term})*{cards}")
RESERVED_HOURS = Rule("reserved_hours", "a commitment's card-hours within the plan: every hour of the term billed",
                      "{cards}*HoursPerMonth*MIN({term},PeriodMonths)")
RESERVED_COST = Rule("reserved_cost", "what a commitment bills within the plan: its card-hours there at its rate",
                     "{hours}*{rate}")

# --------------------------------------------------------------- commitments (GPUs, Commitments)
# A commitment tier's effective rate per committed card-hour in the plan currency: the GPUs row's listed price times
# its FX rate, else on-demand x (1 - the tier's discount setting); blank (unknown) without either.
COMMIT_RATE = Rule("commit_rate", "a commitment's rate: the listed price in the plan currency, else on-demand x "
                   "(1 - discount)",
                   'IF(ISNUMBER({listed}),{listed}*{fx},IF(ISNUMBER({on_demand}),{on_demand}*(1-{discount}),""))')
# 1 on a task whose tier is billed per card-month (its held cards count all month), else 0: from the records.
_PER_CARD_MONTH = "(" + "+".join(f'({{tiers}}="{t.name}")' for t in TIERS if t.per_card_month) + ")" \
    if any(t.per_card_month for t in TIERS) else "0"


COMMIT_DEMAND = Rule(
    "commit_demand", "GPU-hours a GPU type is used in one plan month: billed cards all month on a per-card-month tier, "
    "else the tasks' GPU-hours (the month's columns on Demand)",
    f"SUMPRODUCT(({{gpus}}={{gpu}})*({_PER_CARD_MONTH}*{{cards}}*HoursPerMonth+(1-{_PER_CARD_MONTH})*{{hours}}))")
COMMIT_RENT = Rule("commit_rent", "what the plan rents a GPU type for in one plan month: its tasks' cost that month",
                   "SUMPRODUCT(({gpus}={gpu})*{costs})")
REPLACED_PRICE = Rule("replaced_price", "what an hour of the GPU type's work pays in the plan without commitments: its "
                      "rent over its GPU-hours demand over the plan, on whatever tier the tasks chose (spot included); "
                      "on-demand where the plan uses none of it",
                      "IF(SUM({demand})>0,SUM({rent})/SUM({demand}),{on_demand})")
BREAK_EVEN_UTILISATION = Rule("break_even_utilisation", "share of the term a committed card must be busy to beat "
                              "the rent it replaces: the rate over the replaced price per GPU-hour (1 or more: "
                              "never worth committing)", "{rate}/{price}")


def _card_hours_excel(card: str) -> str:
    """Hours of committed card `card` over the term: each plan month in the term, MIN(HoursPerMonth, MAX(0, h - (card
    - 1) x HoursPerMonth)), elementwise (SUMPRODUCT of comparisons: MIN and MAX would take the whole range)."""
    x = f"({{hours}}-({card}-1)*HoursPerMonth)"
    return f"SUMPRODUCT(({{months}}<={{term}})*(({x}>0)*({x}<HoursPerMonth)*{x}+({x}>=HoursPerMonth)*HoursPerMonth))"


_NEED = "{break_even}*{term}*HoursPerMonth"
_WHOLE = "ROUNDDOWN({demand}/HoursPerMonth,0)"
COMMIT_CANDIDATE = Rule(
    "commit_candidate", "the most cards this month's demand suggests whose last card is busy at least the break-even "
    "share of the term (months of the term after the plan count 0)",
    f"IF({_card_hours_excel(_WHOLE + '+1')}>={_NEED},{_WHOLE}+1,"
    f"IF(AND({_WHOLE}>0,{_card_hours_excel(_WHOLE)}>={_NEED}),{_WHOLE},0))")
COMMIT_PROPOSAL = Rule("commit_proposal", "the proposed committed cards: the largest card any month suggests",
                       "MAX({candidates})")
_IN_TERM = "({month}<={term})"
COMMITTED_COST = Rule("committed_cost", "a plan month's committed cost: cards x rate x HoursPerMonth in the term",
                      f"{_IN_TERM}*{{cards}}*{{rate}}*HoursPerMonth")
COVERED_HOURS = Rule("covered_hours", "the month's demand the committed cards cover",
                     f"{_IN_TERM}*MIN({{demand}},{{cards}}*HoursPerMonth)")
UNUSED_HOURS = Rule("unused_hours", "committed card-hours the month leaves unused",
                    f"{_IN_TERM}*{{cards}}*HoursPerMonth-{{covered}}")
UNUSED_COST = Rule("unused_cost", "the unused committed hours at the rate", "{unused}*{rate}")
RENT_DISPLACED = Rule("rent_displaced", "the GPU's rent the covered hours replace: rent x covered / demand",
                      "IF({demand}>0,{rent}*{covered}/{demand},0)")
DEMAND_LEFT = Rule("demand_left", "the month's demand left to the next commitment of the GPU", "{demand}-{covered}")
COMMIT_ADJUSTMENT = Rule("commit_adjustment", "what the commitment adds to a month: committed cost - rent displaced",
                         "{committed}-{displaced}")
TERM_TOTAL = Rule("term_total", "the commitment's cost over its whole term", "{cards}*{rate}*HoursPerMonth*{term}")
MONTHS_AFTER_PLAN = Rule("months_after_plan", "months the term still binds after the plan's last month",
                         "MAX(0,{term}-PeriodMonths)")
AFTER_PLAN_COST = Rule("after_plan_cost", "the term's cost falling after the plan period",
                       "{cards}*{rate}*HoursPerMonth*{after}")
BEST_COMMIT_RATE = Rule("best_commit_rate", "the lowest commitment rate offered for the GPU (blank: none); `known` "
                        "is the test that any is a number (MIN of none would be 0)", 'IF({known},MIN({rates}),"")')

# --------------------------------------------------------------- budgets (Budgets)
OVER_BUDGET = Rule("over_budget", "a month's plan above its budget", "{planned}>{budget}")
OVER_BUDGET_BY = Rule("over_budget_by", "how far a month's plan is above its budget (0: within it)",
                      "MAX(0,{planned}-{budget})")
OVER_BUDGET_MONTHS = Rule("over_budget_months", "months over budget, over every budget line",
                          "SUMPRODUCT(({planned}>{budgets})*1)")

# --------------------------------------------------------------- live warnings and the banner (Summary)
OVER_CAP_MONTHS = Rule("over_cap_months", "plan months a tier's cost is over its cap (blank: no cap)",
                       'IF({cap}="","",SUMPRODUCT(({costs}>{cap})*1))')
CHEAPER_ELSEWHERE = Rule("cheaper_elsewhere", "tasks that would cost less on their cheapest suited tier",
                         "SUMPRODUCT(({savings}>0)*1)")
WHOLE = Rule("whole", "an amount for a sentence: rounded to a whole number (half away from zero, as ROUND) and "
             "grouped in thousands", "FIXED({value},0)",
             lambda s, value: f"{math.floor(abs(value) + 0.5) * (1 if value >= 0 else -1):,}")
BANNER = Rule("banner", "the Summary banner: the master check in words (an error in a check fails it)",
              "IF(IFERROR({all_checks},0),{ok},{fail})")

# --------------------------------------------------------------- Checks
TIES_OUT = Rule("ties_out", "a computed total equals the expected one within CheckTolerance",
                "ABS({computed}-{expected})<=CheckTolerance*MAX(1,ABS({expected}))")
GPUS_IN_CATALOG = Rule("gpus_in_catalog", "tasks whose chosen GPU is on the GPUs sheet",
                       "SUMPRODUCT(ISNUMBER(MATCH({gpus},{catalog},0))*1)")
TASK_COUNT = Rule("task_count", "tasks on the Tasks sheet", 'SUMPRODUCT(({ids}<>"")*1)')
ALL_CHECKS = Rule("all_checks", "the master check: every tie-out holds", "AND({checks})")
PRICED_NOW = Rule("priced_now", "GPUs a task could run on but had no price for its tier at the build, priced on GPUs "
                  "now (each price an INDEX into the tier's GPUs column): a rebuild would weigh them",
                  "COUNT({prices})")

RULES: tuple[Rule, ...] = (BUFFER, MONTH_TOTAL, BREAK_EVEN_SHARE, DEMAND_FACTOR, MONTH_CARDS, MONTH_GPU_HOURS,
                           MONTH_CARDS_BILLED, PRICE_TREND, MONTH_COST, DAILY_FIXED, ENERGY_PER_HOUR, BREAK_EVEN, PLAN_HOURS_PER_DAY,
                           VERDICT, COMMIT_RATE, COMMIT_DEMAND, COMMIT_RENT, REPLACED_PRICE, BREAK_EVEN_UTILISATION, COMMIT_CANDIDATE,
                           COMMIT_PROPOSAL, COMMITTED_COST, COVERED_HOURS, UNUSED_HOURS, UNUSED_COST, RENT_DISPLACED,
                           DEMAND_LEFT, COMMIT_ADJUSTMENT, TERM_TOTAL, MONTHS_AFTER_PLAN, AFTER_PLAN_COST,
                           BEST_COMMIT_RATE, OVER_BUDGET, OVER_BUDGET_BY, OVER_BUDGET_MONTHS, ORDER_IN_MONTH, RENT_LEFT, RENTED, ORDER_PEAK, ORDER_SUM,
                           ORDER_UNIT_PRICE, RESERVED_CARDS, RESERVED_HOURS, RESERVED_COST, OVER_CAP_MONTHS, CHEAPER_ELSEWHERE, WHOLE, BANNER, GPUS_IN_CATALOG, TASK_COUNT,
                           TIES_OUT, ALL_CHECKS, PRICED_NOW)


# --------------------------------------------------------------- live choice (Candidates, Tasks, Checks)
GPU_SAVING = Rule("gpu_saving", "what a candidate GPU saves a month against the task's chosen GPU now (0: not cheaper, "
                  "excluded or unpriced); after an edit to a price or an input it shows a GPU a rebuild would choose",
                  'IF(AND({excluded}="",ISNUMBER({cost}),ISNUMBER({chosen})),IF({chosen}-{cost}>CheckTolerance*'
                  'MAX(1,ABS({chosen})),{chosen}-{cost},0),0)')
BEST_SAVING = Rule("best_saving", "the largest saving of the task's candidates down to this row (they are listed "
                   "task by task): the task's last candidate row holds its best",
                   "IF({task}={previous_task},MAX({previous_best},{saving}),{saving})")
BEST_GPU = Rule("best_gpu", "the GPU of that largest saving (blank: none is cheaper than the chosen one)",
                'IF({task}={previous_task},IF({saving}>{previous_best},{gpu},{previous_gpu}),IF({saving}>0,{gpu},""))')
TASK_BEST = Rule("task_best", "a task's best candidate figure: its last row on Candidates (the task's rows are listed "
                 "together, its last one's position on the Tasks row beside it: one lookup, not a search of the sheet)",
                 "INDEX({column},{last})", lambda s, column, last: column)
CHEAPER_TASKS = Rule("cheaper_tasks", "tasks whose GPU the build chose (none named in the input) that a cheaper "
                     "GPU could now run: a rebuild would choose again", 'SUMPRODUCT(({cheaper}<>"")*({named}=""))')
