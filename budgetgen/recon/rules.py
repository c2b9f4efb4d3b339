"""The Recon rules (flags, actions, saving, over plan, variances, totals): each one Excel expression.

Like `columns.Calc` for the Tasks columns, a `Rule` is one expression: the Excel formula template. Its Python view
`py(v, s)`, a function of the placeholders' values `v` and the `Limits` `s`, is compiled from that text
(`expr.compile_values`) unless the rule gives its own; the engine calls `py`, the Recon tab writes
`formula(cells)`, and the tests recalculate the formula against the values worked out by hand. A rule keeps a
hand-written `py` only where its Python is not the formula read literally (tests/test_recon_rules.py names each
with its reason).

Placeholders in `excel` are the cells a Recon row (or a block of the tab) puts there:
- task rows: `{planned}`, `{billed}` (the cost compared with the plan: COMPARED, of the GPU lines only;
  COMPARED itself reads `{billed}` as the BilledCost and `{effective}` as the EffectiveCost), `{variance}`, `{partial}` (the month's partial-month
  cell), `{non_gpu}` (the task's tagged non-GPU lines), `{reserved}` (the task's share of the buffer),
  `{planned_total}` (the month's planned GPU), `{hours}` (GPU hours on the bill, blank when the bill gives
  none), `{planned_hours}`, and for the planned hours `{tier}`, `{cards_billed}`, `{gpu_hours}`,
  `{hours_per_month}`;
- resource rows: `{task}` (the task id, blank when unallocated), `{task_status}` (the task's status
  cell, blank when it has none), `{billed}`, `{util}` (average utilisation in percent), `{mem_share}`
  (peak memory share), `{oom}` (OOM events), `{flags}` (the row's flags cell), `{task_cards}` (the task's
  cards held), `{task_rows}` (the task's resource rows in the month, counted once on the task's row),
  `{cards}` (the resource's cards), `{idle}` (its idle cards), `{pricing}` (the FOCUS PricingCategories of its
  lines, words in FOCUS order, blank when the bill gives none), `{planned_pricing}` (the task's tier's focus_category, blank when the task is not planned);
  unknown usage is a blank cell, None or NaN in Python;
- totals: `{tasks}`, `{billed}` and `{saving}` (the resource rows' task, billed and saving ranges; lists in
  Python), `{reserved}`, `{non_gpu}` (for the buffer: the non-GPU bill not planned as Extras), `{allocated}`,
  `{unallocated}`, `{commitments}` (the commitment lines: unused commitment and commitment purchases, apart
  from the tasks), `{credits}` (credits and refunds, apart from the usage), `{idle_saving}`; per non-GPU
  category `{billed}` and `{planned}` (its Extras in the month);
- coverage: `{first}` and `{last}` (the first and last charge day, dates);
- re-forecast rows: `{planned}`, `{billed}` (blank when the month has no bill), `{partial}`;
- daily rows: `{billed}` (the task's GPU bill of the day), `{previous}` (its previous billed days, at most
  SPIKE_DAYS, a range or a list in Python), `{median}` (the trailing median's cell).
Every other word is a workbook-scoped name on Assumptions: LowUtilThreshold, OomThreshold,
VarianceTolerance, ReconSpikeFactor, PercentScale, DataStarvedMemShare, DataStarvedUtil, and `Action<Flag>` (each flag's
action sentence, e.g. ActionLowUtilization).
"""

from __future__ import annotations

import calendar
import datetime as dt
import functools
import statistics
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..core.schema import CONSTANT_VALUES, PER_CARD_MONTH_TIER, Value
from ..model import expr

Values = Mapping[str, Value]  # a row's placeholders' values

LOW_UTILIZATION = "low_utilization"
OOM = "oom"
DATA_STARVED = "data_starved"
OVER_PLAN = "over_plan"
UNTAGGED_GPU = "untagged_gpu"
OFF_PLAN_PRICING = "off_plan_pricing"
OVER_PLAN_STATUS = "over plan"  # a task's status text when its bill is over plan
PARTIAL_STATUS = "partial month"  # a task's status text in a month the bill covers only in part


def shown_word(key: str) -> str:
    """Excel: a flag's or a status's word in the workbook's language (the About sheet's WordKey and WordShown), else
    its key."""
    return f'IFERROR(INDEX(WordShown,MATCH("{key}",WordKey,0)),"{key}")'


def action_name(flag: str) -> str:
    """The workbook name of a flag's action sentence on Assumptions (`ActionLowUtilization`)."""
    return "Action" + "".join(part.capitalize() for part in flag.split("_"))


_FLAG_KEYS = (LOW_UTILIZATION, OOM, DATA_STARVED, OVER_PLAN, UNTAGGED_GPU, OFF_PLAN_PRICING)


@dataclass(frozen=True)
class Limits:
    """The settings the rules read, by their workbook names, and the action sentences in the workbook's language."""

    low_util_threshold: float  # LowUtilThreshold
    oom_threshold: float  # OomThreshold
    variance_tolerance: float  # VarianceTolerance
    actions: Mapping[str, str] | None = None  # Action<Flag>; None: the English ACTIONS
    spike_factor: float = 3.0  # ReconSpikeFactor

    def action(self, flag: str) -> str:
        return (self.actions or ACTIONS)[flag]


# The workbook names the rules read, as the Python view reads them: the limits by their names on Assumptions, the
# fixed constants, each flag's action sentence, and the About sheet's word table, which the engine (working in the
# words' keys) holds empty, so that a flag's or a status's shown word is its key.
NAMES = expr.Names(
    settings={"LowUtilThreshold": "low_util_threshold", "OomThreshold": "oom_threshold",
              "VarianceTolerance": "variance_tolerance", "ReconSpikeFactor": "spike_factor"},
    constants={**CONSTANT_VALUES, "WordKey": (), "WordShown": ()},
    derived={action_name(flag): functools.partial(Limits.action, flag=flag) for flag in _FLAG_KEYS})


@dataclass(frozen=True)
class Rule:
    """One Recon rule: an Excel formula template; its Python view is compiled from it unless the rule gives its own
    (`py`)."""

    key: str
    header: str
    fmt: str  # money | percent | number | int | text | flag
    excel: str  # without the leading `=`
    py: Callable[[Values, Limits | None], Value] = None  # type: ignore[assignment]  # None: compiled from excel

    def __post_init__(self) -> None:
        if self.py is None:
            object.__setattr__(self, "py", expr.compile_values(
                self.excel, NAMES, text_result=self.fmt == "text", floats=self.fmt in ("money", "percent", "number")))
        else:
            expr.parse(self.excel)  # a rule with its own py must still be a formula the sheet can read

    @property
    def compiled(self) -> bool:
        """Whether the Python view is the formula itself (no hand-written `py`)."""
        return expr.is_compiled(self.py)

    @property
    def placeholders(self) -> tuple[str, ...]:
        """The `{name}`s of the Excel template, in order of first use."""
        return tuple(dict.fromkeys(field for _, field, _, _ in string.Formatter().parse(self.excel) if field))

    def formula(self, cells: Mapping[str, str]) -> str:
        """The Excel formula (without `=`) over a cell reference or range for each placeholder."""
        missing = [p for p in self.placeholders if p not in cells]
        if missing:
            raise KeyError(f"rule {self.key}: no cell given for {', '.join(missing)}")
        return self.excel.format_map(cells)


@dataclass(frozen=True)
class FlagRule(Rule):
    """A resource flag: its condition (both views), the action next month and whether acting saves the bill."""

    action: str = ""
    saves_bill: bool = False  # acting on it drops the resource's idle cards (IDLE_CARDS)
    saving: str = ""  # the resource rule whose value acting on it saves (SAVING, TO_ATTRIBUTE), for the summary

    @property
    def action_name(self) -> str:
        """The workbook name of the action sentence on Assumptions (`ActionLowUtilization`)."""
        return action_name(self.key)


FLAG_RULES: tuple[FlagRule, ...] = (
    FlagRule(LOW_UTILIZATION, LOW_UTILIZATION, "flag",
             "AND(ISNUMBER({util}),{util}/PercentScale<LowUtilThreshold)",
             action="drop the idle cards or replicas next month, or move to a smaller card", saves_bill=True,
             saving="saving"),
    FlagRule(OOM, OOM, "flag", "AND(ISNUMBER({oom}),{oom}>=OomThreshold)",
             action="optimise memory use (batch size, FlashAttention, padding) before adding VRAM"),
    FlagRule(DATA_STARVED, DATA_STARVED, "flag",
             "AND(ISNUMBER({mem_share}),ISNUMBER({util}),{mem_share}>DataStarvedMemShare,"
             "{util}/PercentScale<DataStarvedUtil)",
             action="GPU waits on data or serial decoding: check the data pipeline and serving framework"),
    FlagRule(OVER_PLAN, OVER_PLAN, "flag", f'AND({{task}}<>"",{{task_status}}={shown_word(OVER_PLAN_STATUS)})',
             action="the task is billed over its plan: check its usage with the task owner and re-forecast "
                    "its remaining months"),
    FlagRule(UNTAGGED_GPU, UNTAGGED_GPU, "flag", '{task}=""', action="tag it or stop it",
             saving="to_attribute"),
    # Billed under a PricingCategory other than its task's tier's (planned Committed, billed Standard); a resource
    # billed in part on the plan's category and in part on another is flagged too (Excel's <> ignores case).
    FlagRule(OFF_PLAN_PRICING, OFF_PLAN_PRICING, "flag",
             'AND({task}<>"",{planned_pricing}<>"",{pricing}<>"",{pricing}<>{planned_pricing})',
             action="billed at another price than its tier plans (e.g. on demand instead of the commitment): "
                    "check the commitment covers it, or re-plan the task's tier"),
)
FLAGS_BY_KEY = {r.key: r for r in FLAG_RULES}
ACTIONS = {r.key: r.action for r in FLAG_RULES}
assert tuple(FLAGS_BY_KEY) == _FLAG_KEYS, "every flag's action sentence is a name the rules read"


def resource_flags(values: Values, limits: Limits | None) -> tuple[str, ...]:
    """The flags a resource row raises, in FLAG_RULES' fixed order (unknown usage raises none)."""
    return tuple(r.key for r in FLAG_RULES if r.py(values, limits))


def flag_saving(flag: str, saving: float) -> float:
    """What next month's bill drops by when one flag's action is taken: the resource's saving (SAVING) if the
    flag's action drops idle cards (low_utilization), else 0."""
    return saving if FLAGS_BY_KEY[flag].saves_bill else 0.0


def _has_flag(flag: str) -> str:
    """Excel: whether the `{flags}` cell holds the flag (its shown word) as a whole word."""
    return f'ISNUMBER(SEARCH(" "&{shown_word(flag)}&" "," "&{{flags}}&" "))'


def _days_in_month(day: dt.date) -> int:
    return calendar.monthrange(day.year, day.month)[1]  # December 9999 too: no date after it is needed


def _partial(v: Values, s: Limits | None) -> bool:
    """A month is partial when its first to last charge day spans fewer days than the month has."""
    return (v["last"] - v["first"]).days + 1 < _days_in_month(v["first"])


# Task rows. The cost compared with the plan is the EffectiveCost where the bill gives it for every line of the
# task (the plan prices hours at rates: amortised, with committed discounts applied), else the BilledCost.
COMPARED = Rule("compared", "compared with plan", "money", "IF(ISNUMBER({effective}),{effective},{billed})")
VARIANCE = Rule("variance", "variance", "money", "{billed}-{planned}")
VARIANCE_PCT = Rule("variance_pct", "variance %", "percent", 'IF({planned}=0,"",{variance}/{planned})')
STATUS = Rule("status", "status", "text",
              f'IF({{partial}},{shown_word(PARTIAL_STATUS)},IF({{billed}}>{{planned}}*(1+VarianceTolerance),'
              f'{shown_word(OVER_PLAN_STATUS)},""))')
BUFFER_SHARE = Rule("buffer_share", "buffer share", "money", "IF({planned_total}=0,0,{reserved}*{planned}/{planned_total})")
# Whether the bill gives the task's GPU hours and the plan some hours to price them at.
_BY_HOURS = "AND(ISNUMBER({hours}),ISNUMBER({planned_hours}),N({planned_hours})>0)"
# The GPU hours the plan buys in the month: a tier priced per card-month bills every card all month, the other tiers
# the task's GPU-hours; none in a month without planned cost.
PLANNED_HOURS = Rule("planned_hours", "planned GPU hours", "number",
                     f'IF({{planned}}=0,0,IF({PER_CARD_MONTH_TIER},{{cards_billed}}*{{hours_per_month}},{{gpu_hours}}))')
# (actual rate - planned rate) x actual hours = billed - planned rate x actual hours
RATE_VARIANCE = Rule("rate_variance", "rate variance", "money",
                     f'IF({_BY_HOURS},{{billed}}-{{planned}}/{{planned_hours}}*{{hours}},"")')
# (actual hours - planned hours) x planned rate
USAGE_VARIANCE = Rule("usage_variance", "usage variance", "money",
                      f'IF({_BY_HOURS},({{hours}}-{{planned_hours}})*{{planned}}/{{planned_hours}},"")')
TASK_RULES = (COMPARED, VARIANCE, VARIANCE_PCT, STATUS, BUFFER_SHARE, PLANNED_HOURS, RATE_VARIANCE, USAGE_VARIANCE)

# Resource rows: the flags cell, the action sentences of its flags, and the saving if acted on.
FLAGS = Rule("flags", "flags", "text",
             "TRIM(" + "&".join(f'IF({r.excel},{shown_word(r.key)}&" ","")' for r in FLAG_RULES) + ")")
ACTION = Rule("action", "action next month", "text",
              "TRIM(" + "&".join(f'IF({_has_flag(r.key)},{r.action_name}&". ","")' for r in FLAG_RULES) + ")")
RESOURCE_CARDS = Rule("cards", "cards", "int",
                      'IF({task}="",1,MAX(1,ROUND(N({task_cards})/IF(N({task_rows})>0,{task_rows},1),0)))')
"""The cards (or replicas) of one resource: its task's cards held shared over the task's resource rows of the month
(`task_rows`, counted once per task, never per row), rounded (halves up), at least 1 (an unallocated resource
counts as 1)."""
IDLE_CARDS = Rule("idle_cards", "idle cards", "number",
                  "IF(AND(OR(" + ",".join(_has_flag(r.key) for r in FLAG_RULES if r.saves_bill)
                  + "),ISNUMBER({util})),{cards}*(PercentScale-{util})/PercentScale,0)")
"""The cards (or replicas) the utilisation shows idle, cards x (100 - util%) / 100, when the resource is flagged
low_utilization; else 0. Two replicas at 10 % hold 1.8 idle cards; one card at 3 % holds 0.97 (stop it, or move it
to a cheaper tier)."""
SAVING = Rule("saving", "saving if acted on", "money", "IF({cards}>0,{billed}*{idle}/{cards},0)")
"""The saving if acted on: the idle cards' cost at the resource's billed rate, billed x idle / cards. over_plan saves
nothing here: its action is to look at the plan, and its share of the task's overrun is not a saving (acting on it
is a re-forecast). An untagged GPU's whole bill is `to attribute or stop`."""
TO_ATTRIBUTE = Rule("to_attribute", "to attribute or stop", "money", 'IF({task}="",{billed},0)')
"""An untagged GPU resource's whole bill, to attribute to a task or stop; 0 for a task's resource."""
RESOURCE_RULES = (FLAGS, ACTION, RESOURCE_CARDS, IDLE_CARDS, SAVING, TO_ATTRIBUTE)

# The totals block of a Recon tab.
BUFFER_LEFT = Rule("buffer_left", "buffer left", "money", "{reserved}-{non_gpu}")
ALLOCATED_GPU = Rule("allocated_gpu", "GPU billed to tasks", "money", 'SUMPRODUCT(({tasks}<>"")*{billed})')
UNALLOCATED_GPU = Rule("unallocated_gpu", "unallocated GPU", "money", 'SUMPRODUCT(({tasks}="")*{billed})')
BILLED_TOTAL = Rule("billed_total", "billed total", "money",
                    "{non_gpu}+{allocated}+{unallocated}+{commitments}+{credits}")
NOT_PLANNED = Rule("not_planned", "not planned", "money", "MAX(0,{billed}-{planned})")
"""A non-GPU category's bill beyond what the Extras plan for it: only this consumes the hidden-cost buffer."""
IDLE_SAVING = Rule("idle_saving", "saving from idle cards", "money", 'SUMPRODUCT(({tasks}<>"")*{saving})')
"""The idle cards' cost of the tasks' resources (an untagged resource's whole bill is counted apart)."""
ACHIEVABLE_SAVING = Rule("achievable_saving", "achievable saving", "money", "{idle_saving}+{unallocated}")
"""The month's achievable saving: the tasks' idle cards at their billed rate, plus the untagged GPU's whole bill
(to attribute or stop): each resource counted once."""
TOTAL_RULES = (BUFFER_LEFT, ALLOCATED_GPU, UNALLOCATED_GPU, BILLED_TOTAL, NOT_PLANNED, IDLE_SAVING, ACHIEVABLE_SAVING)


# The printed summary of a Recon tab: the actions per flag and the counts, over the resource rows' flags cells.
_HOLDS = 'ISNUMBER(SEARCH(" "&{word}&" "," "&{flags}&" "))'
FLAG_COUNT = Rule("flag_count", "resources", "int", f"SUMPRODUCT({_HOLDS}*1)")
"""The resources whose flags cell holds the flag `{word}` (its shown word) as a whole word, ignoring case, over the
`{flags}` range."""
FLAG_AMOUNT = Rule("flag_amount", "their bill", "money", f"SUMPRODUCT({_HOLDS}*{{amounts}})")
"""An amount (`{amounts}`: the billed, the saving or the bill to attribute) summed over the resources flagged
`{word}`."""
FLAGGED = Rule("flagged", "resources flagged", "int", 'SUMPRODUCT((TRIM({flags})<>"")*1)')
TASKS_OVER = Rule("tasks_over", "tasks over plan", "int", f"SUMPRODUCT(({{statuses}}={shown_word(OVER_PLAN_STATUS)})*1)")
NOT_SPLIT = Rule("not_split", "not split (no GPU hours on the bill)", "money", "{variance}-{rate}-{usage}")
"""The tasks' GPU variance the rate and usage variances do not explain: the tasks whose bill gives no hours."""
SUMMARY_RULES = (FLAG_COUNT, FLAG_AMOUNT, FLAGGED, TASKS_OVER, NOT_SPLIT)

# The month's coverage, and the re-forecast on Summary. A month's estimate: the bill when the month is billed in
# full; the bill so far or the plan, whichever is larger, when it is billed in part; the plan when it has no bill.
PARTIAL = Rule("partial", "partial month", "flag", "{last}-{first}+1<DAY(DATE(YEAR({first}),MONTH({first})+1,0))",
               _partial)
REFORECAST = Rule("reforecast", "estimate", "money",
                  'IF(ISNUMBER({billed}),IF({partial},MAX({billed},{planned}),{billed}),{planned})')

# The daily table: a task's GPU bill per charge day, against the median of its previous SPIKE_DAYS billed days.
SPIKE_DAYS = 7
"""The trailing window: the task's previous billed days in the month, at most this many (a day without lines is
no day of the window: an idle weekend does not lower the median)."""


def _trailing_median(v: Values, s: Limits | None) -> float | None:
    previous = [float(x) for x in v["previous"]][-SPIKE_DAYS:]
    return statistics.median(previous) if previous else None


TRAILING_MEDIAN = Rule("trailing_median", "median of previous days", "money", "MEDIAN({previous})", _trailing_median)
"""{previous}: the task's previous billed days' cells (at most SPIKE_DAYS); a task's first day has none and no
median (a blank cell)."""
SPIKE = Rule("spike", "spike", "flag", "AND(ISNUMBER({median}),N({median})>0,{billed}>ReconSpikeFactor*N({median}))")

RULES: tuple[Rule, ...] = (*FLAG_RULES, *TASK_RULES, *RESOURCE_RULES, *TOTAL_RULES, *SUMMARY_RULES, PARTIAL,
                           REFORECAST, TRAILING_MEDIAN, SPIKE)
