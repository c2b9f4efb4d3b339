"""The Recon rules (flags, actions, saving, over plan, variances, totals): each declared once, two views.

Like `columns.Calc` for the Tasks columns, a `Rule` holds an Excel formula template and the Python
function of the same rule; the engine uses `py`, the Recon tab writes `formula(cells)`, and the tests
recalculate one against the other.

Placeholders in `excel` are the cells a Recon row (or the totals block) puts there:
- task rows: `{planned}`, `{billed}`, `{variance}`;
- resource rows: `{task}` (the task id, blank when unallocated), `{task_status}` (the task's status
  cell, blank when it has none), `{billed}`, `{util}` (average utilisation in percent), `{mem_share}`
  (peak memory share), `{oom}` (OOM events), `{flags}` (the row's flags cell); unknown usage is a blank
  cell, None or NaN in Python;
- totals: `{tasks}` and `{billed}` (the resource rows' task and billed ranges; lists in Python),
  `{reserved}`, `{non_gpu}`, `{allocated}`, `{unallocated}`.
Every other word is a workbook-scoped name on Assumptions: LowUtilThreshold, OomThreshold,
VarianceTolerance, PercentScale, DataStarvedMemShare, DataStarvedUtil, and `Action<Flag>` (each flag's
action sentence, e.g. ActionLowUtilization).
"""

from __future__ import annotations

import math
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import SimpleNamespace

from ..schema import CONSTANT_VALUES

K = SimpleNamespace(**CONSTANT_VALUES)
Values = Mapping[str, object]

LOW_UTILIZATION = "low_utilization"
OOM = "oom"
DATA_STARVED = "data_starved"
OVER_PLAN = "over_plan"
OVER_PLAN_STATUS = "over plan"  # a task's status text when its bill is over plan


@dataclass(frozen=True)
class Limits:
    """The settings the rules read, by their workbook names, and the action sentences in the workbook's language."""

    low_util_threshold: float  # LowUtilThreshold
    oom_threshold: float  # OomThreshold
    variance_tolerance: float  # VarianceTolerance
    actions: Mapping[str, str] | None = None  # Action<Flag>; None: the English ACTIONS

    def action(self, flag: str) -> str:
        return (self.actions or ACTIONS)[flag]


@dataclass(frozen=True)
class Rule:
    """One Recon rule: the Excel formula template and the Python function are two views of it."""

    key: str
    header: str
    fmt: str  # money | percent | text | flag
    excel: str  # without the leading `=`
    py: Callable[[Values, Limits], object]

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
    saves_bill: bool = False  # acting on it (downsize or cancel) drops the resource's bill

    @property
    def action_name(self) -> str:
        """The workbook name of the action sentence on Assumptions (`ActionLowUtilization`)."""
        return "Action" + "".join(part.capitalize() for part in self.key.split("_"))


def _known(value: object) -> bool:
    """Whether a usage value was measured (a blank cell is None or NaN)."""
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def _low_util(v: Values, s: Limits) -> bool:
    return _known(v["util"]) and v["util"] / K.PercentScale < s.low_util_threshold


def _oom(v: Values, s: Limits) -> bool:
    return _known(v["oom"]) and v["oom"] >= s.oom_threshold


def _data_starved(v: Values, s: Limits) -> bool:
    return (_known(v["mem_share"]) and _known(v["util"]) and v["mem_share"] > K.DataStarvedMemShare
            and v["util"] / K.PercentScale < K.DataStarvedUtil)


def _over_plan(v: Values, s: Limits) -> bool:
    return bool(v["task"]) and v["task_status"] == OVER_PLAN_STATUS


FLAG_RULES: tuple[FlagRule, ...] = (
    FlagRule(LOW_UTILIZATION, LOW_UTILIZATION, "flag",
             "AND(ISNUMBER({util}),{util}/PercentScale<LowUtilThreshold)", _low_util,
             action="downsize or cancel next month", saves_bill=True),
    FlagRule(OOM, OOM, "flag", "AND(ISNUMBER({oom}),{oom}>=OomThreshold)", _oom,
             action="optimise memory use (batch size, FlashAttention, padding) before adding VRAM"),
    FlagRule(DATA_STARVED, DATA_STARVED, "flag",
             "AND(ISNUMBER({mem_share}),ISNUMBER({util}),{mem_share}>DataStarvedMemShare,"
             "{util}/PercentScale<DataStarvedUtil)", _data_starved,
             action="GPU waits on data or serial decoding: check the data pipeline and serving framework"),
    FlagRule(OVER_PLAN, OVER_PLAN, "flag", f'AND({{task}}<>"",{{task_status}}="{OVER_PLAN_STATUS}")', _over_plan,
             action="over plan"),
)
FLAGS_BY_KEY = {r.key: r for r in FLAG_RULES}
ACTIONS = {r.key: r.action for r in FLAG_RULES}


def resource_flags(values: Values, limits: Limits) -> tuple[str, ...]:
    """The flags a resource row raises, in FLAG_RULES' fixed order (unknown usage raises none)."""
    return tuple(r.key for r in FLAG_RULES if r.py(values, limits))


def flag_saving(flag: str, billed: float) -> float:
    """What next month's bill drops by when one flag's action is taken: the resource's bill if the action drops
    it (low_utilization: downsize or cancel), else 0."""
    return billed if FLAGS_BY_KEY[flag].saves_bill else 0.0


def _has_flag(flag: str) -> str:
    """Excel: whether the `{flags}` cell holds the flag as a whole word."""
    return f'ISNUMBER(SEARCH(" {flag} "," "&{{flags}}&" "))'


def _flags(v: Values, s: Limits) -> str:
    return " ".join(resource_flags(v, s))


def _raised(v: Values) -> list[FlagRule]:
    """The flag rules whose key is a word of the `{flags}` cell, in FLAG_RULES' order."""
    words = set(str(v["flags"] or "").split())
    return [r for r in FLAG_RULES if r.key in words]


def _actions(v: Values, s: Limits) -> str:
    return " ".join(f"{s.action(r.key)}." for r in _raised(v))


def _saving(v: Values, s: Limits) -> float:
    """The saving if acted on: the resource's bill when a flag's action drops it (low_utilization), else 0.

    over_plan saves nothing here: its action is to look at the plan, and its share of the task's overrun is
    not a saving (acting on it is a re-forecast), so the workbook's column and the engine both show 0.
    """
    return v["billed"] if any(r.saves_bill for r in _raised(v)) else 0.0


def _status(v: Values, s: Limits) -> str:
    return OVER_PLAN_STATUS if v["billed"] > v["planned"] * (1 + s.variance_tolerance) else ""


def _variance_pct(v: Values, s: Limits) -> float | None:
    return None if v["planned"] == 0 else v["variance"] / v["planned"]


def _split_billed(v: Values, allocated: bool) -> float:
    return math.fsum(b for t, b in zip(v["tasks"], v["billed"], strict=True) if bool(t) is allocated)


# Task rows.
VARIANCE = Rule("variance", "variance", "money", "{billed}-{planned}", lambda v, s: v["billed"] - v["planned"])
VARIANCE_PCT = Rule("variance_pct", "variance %", "percent", 'IF({planned}=0,"",{variance}/{planned})', _variance_pct)
STATUS = Rule("status", "status", "text",
              f'IF({{billed}}>{{planned}}*(1+VarianceTolerance),"{OVER_PLAN_STATUS}","")', _status)
TASK_RULES = (VARIANCE, VARIANCE_PCT, STATUS)

# Resource rows: the flags cell, the action sentences of its flags, and the saving if acted on.
FLAGS = Rule("flags", "flags", "text", "TRIM(" + "&".join(f'IF({r.excel},"{r.key} ","")' for r in FLAG_RULES) + ")",
             _flags)
ACTION = Rule("action", "action next month", "text",
              "TRIM(" + "&".join(f'IF({_has_flag(r.key)},{r.action_name}&". ","")' for r in FLAG_RULES) + ")",
              _actions)
SAVING = Rule("saving", "saving if acted on", "money",
              "IF(OR(" + ",".join(_has_flag(r.key) for r in FLAG_RULES if r.saves_bill) + "),{billed},0)", _saving)
RESOURCE_RULES = (FLAGS, ACTION, SAVING)

# The totals block of a Recon tab.
BUFFER_LEFT = Rule("buffer_left", "buffer left", "money", "{reserved}-{non_gpu}",
                   lambda v, s: v["reserved"] - v["non_gpu"])
ALLOCATED_GPU = Rule("allocated_gpu", "GPU billed to tasks", "money", 'SUMPRODUCT(({tasks}<>"")*{billed})',
                     lambda v, s: _split_billed(v, allocated=True))
UNALLOCATED_GPU = Rule("unallocated_gpu", "unallocated GPU", "money", 'SUMPRODUCT(({tasks}="")*{billed})',
                       lambda v, s: _split_billed(v, allocated=False))
BILLED_TOTAL = Rule("billed_total", "billed total", "money", "{non_gpu}+{allocated}+{unallocated}",
                    lambda v, s: v["non_gpu"] + v["allocated"] + v["unallocated"])
TOTAL_RULES = (BUFFER_LEFT, ALLOCATED_GPU, UNALLOCATED_GPU, BILLED_TOTAL)

RULES: tuple[Rule, ...] = (*FLAG_RULES, *TASK_RULES, *RESOURCE_RULES, *TOTAL_RULES)
