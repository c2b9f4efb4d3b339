"""Monthly reconciliation: bill lines and GPU usage against the plan, with flags and next month's actions."""

from __future__ import annotations

import datetime as dt
import functools
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd

from ..catalog.fx import bill_rate
from ..core.errors import Code, InputError, Problem
from ..core.i18n import Message
from ..core.schema import EXTRA_CATEGORIES, TIER
from ..plan.engine import Plan
from .bill_sql import read_bill_sums
from .bill_sums import BillSource, BillSums, machine_memory_limit, sum_bills, sum_lines
from .bills import DEFAULT_GPU_LINE_PATTERN
from .columns import PRICING_CATEGORIES
from .rules import (
    ACTIONS,
    BUFFER_LEFT,
    BUFFER_SHARE,
    COMPARED,
    IDLE_CARDS,
    NOT_PLANNED,
    PARTIAL,
    PLANNED_HOURS,
    RATE_VARIANCE,
    RESOURCE_CARDS,
    SAVING,
    SPIKE,
    SPIKE_DAYS,
    STATUS,
    TO_ATTRIBUTE,
    TRAILING_MEDIAN,
    USAGE_VARIANCE,
    VARIANCE,
    VARIANCE_PCT,
    Limits,
    flag_saving,
    resource_flags,
)
from .usage import USAGE_COLUMNS, read_usage

NON_GPU_CATEGORIES = EXTRA_CATEGORIES
"""The bill's non-GPU lines are told apart by the Extras' categories, so each is reconciled with its plan."""
CREDIT_KINDS = ("credit", "refund")
"""Credit lines (ChargeCategory Credit) and refunds (Adjustment), shown apart from the usage they relate to."""
_RESOURCE_KEYS = ["month", "resource_id", "task_id"]
LINE_GROUP_KEYS = ["month", "resource_id", "task_id", "is_gpu", "category", "service_name", "hours_unit", "commitment",
                   "commitment_id", "commitment_type", "pricing_category"]
COMMITMENT_KINDS = ("unused", "purchase")
"""A bill's commitment lines, apart from the tasks: the unused part of a commitment (CommitmentDiscountStatus
Unused) and its purchase (ChargeCategory Purchase with a CommitmentDiscountId: the upfront fee)."""


@dataclass(frozen=True)
class TaskRecon:
    """One task's planned and billed cost in a month: billed is its GPU lines' BilledCost (never a commitment's
    unused part); its tagged non-GPU lines count against its share of the month's hidden-cost buffer. hours: GPU
    hours on the bill (NaN when none). effective: its GPU lines' EffectiveCost, None unless every one of them
    has one; the variances compare the plan with `compared` (rules.COMPARED: effective where known, else
    billed). planned_pricing: its tier's FOCUS PricingCategory ("" when not planned)."""

    task_id: str
    planned: float
    billed: float
    non_gpu_billed: float = 0.0
    buffer_share: float = 0.0
    cards: float | None = None
    planned_hours: float = math.nan
    hours: float = math.nan
    partial: bool = False
    effective: float | None = None
    planned_pricing: str = ""
    resources: int = 0   # its GPU resource rows in the month (each resource's cards are cards / resources)

    @property
    def compared(self) -> float:
        """The cost compared with the plan: the EffectiveCost where known, else the BilledCost."""
        return COMPARED.py({"billed": self.billed, "effective": self.effective}, None)

    @property
    def variance(self) -> float:
        return VARIANCE.py({"billed": self.compared, "planned": self.planned}, None)

    @property
    def variance_pct(self) -> float | None:
        return VARIANCE_PCT.py({"variance": self.variance, "planned": self.planned}, None)

    @property
    def buffer_left(self) -> float:
        return BUFFER_LEFT.py({"reserved": self.buffer_share, "non_gpu": self.non_gpu_billed}, None)

    @property
    def rate_variance(self) -> float | None:
        """(actual rate − planned rate) × actual hours; None when the bill or the plan gives no hours."""
        return RATE_VARIANCE.py(self._hours_values, None)

    @property
    def usage_variance(self) -> float | None:
        """(actual hours − planned hours) × planned rate; None when the bill or the plan gives no hours."""
        return USAGE_VARIANCE.py(self._hours_values, None)

    @property
    def _hours_values(self) -> dict:
        return {"billed": self.compared, "planned": self.planned, "hours": self.hours,
                "planned_hours": self.planned_hours}

    def status(self, limits: Limits) -> str:
        """"partial month" in a month the bill covers in part; else "over plan" when the compared cost is beyond
        planned × (1 + variance_tolerance), else ""."""
        return STATUS.py({"billed": self.compared, "planned": self.planned, "partial": self.partial}, limits)

    def to_json(self) -> dict:
        return {"task_id": self.task_id, "planned": self.planned, "billed": self.billed, "variance": self.variance,
                "non_gpu_billed": self.non_gpu_billed, "rate_variance": self.rate_variance,
                "usage_variance": self.usage_variance, "effective": self.effective, "compared": self.compared,
                "planned_pricing": self.planned_pricing or None}


@dataclass(frozen=True)
class ResourceRecon:
    """One billed GPU resource in a month (task_id None: unallocated), its usage and flags."""

    resource_id: str
    task_id: str | None
    services: tuple[str, ...]
    lines: int
    billed: float
    hours: float
    avg_util_pct: float
    mem_peak_share: float
    oom_events: float
    flags: tuple[str, ...]
    cards: int = 1
    idle_cards: float = 0.0
    saving: float = 0.0
    pricing: str = ""  # the FOCUS PricingCategories of its lines, in FOCUS order ("" when the bill gives none)

    @property
    def actions(self) -> tuple[str, ...]:
        return tuple(ACTIONS[f] for f in self.flags)

    @cached_property   # read several times per resource (the tab's ranking, the Resources CSV, the JSON)
    def to_attribute(self) -> float:
        """An untagged resource's whole bill, to attribute to a task or stop (rules.TO_ATTRIBUTE)."""
        return TO_ATTRIBUTE.py({"task": self.task_id or "", "billed": self.billed}, None)

    @cached_property
    def at_stake(self) -> float:
        """The money a flagged resource's actions concern, to rank the flagged resources: its saving if acted on,
        or its whole bill when untagged."""
        return max(self.saving, self.to_attribute)

    def to_json(self) -> dict:
        return {
            "resource_id": self.resource_id or None,
            "task_id": self.task_id,
            "billed": self.billed,
            "hours": _json_number(self.hours),
            "avg_util_pct": _json_number(self.avg_util_pct),
            "mem_peak_share": _json_number(self.mem_peak_share),
            "oom_events": _json_number(self.oom_events),
            "flags": list(self.flags),
            "cards": self.cards,
            "idle_cards": self.idle_cards,
            "saving": self.saving,
            "to_attribute": self.to_attribute,
            "pricing": self.pricing or None,
        }


RESOURCE_FIELDS = ("resource_id", "task_id", "services", "lines", "billed", "hours", "avg_util_pct", "mem_peak_share",
                   "oom_events", "flags", "cards", "idle_cards", "saving", "pricing")
"""ResourceRecon's fields: the columns of a ResourceTable, which also holds each row's to_attribute and at_stake."""


def _resource(values: tuple) -> ResourceRecon:
    """A ResourceRecon of one table row's values (RESOURCE_FIELDS' order), without the frozen dataclass's checks of
    each field (a row's values are the table's, already the fields' types)."""
    recon = object.__new__(ResourceRecon)
    recon.__dict__.update(zip(RESOURCE_FIELDS, values, strict=True))
    return recon


class ResourceTable(Sequence):
    """A month's GPU resources as columns (numpy arrays: RESOURCE_FIELDS, `to_attribute`, `at_stake`), in the month's
    order; `rows` picks and orders the rows a view shows. A ResourceRecon is made only for a row that is read one
    by one (a Recon tab's top resources, a Resources sheet's rows); the ranking, the sums, the Resources CSV file
    and the JSON read the columns."""

    def __init__(self, columns: Mapping[str, np.ndarray], rows: np.ndarray | None = None) -> None:
        self.columns = columns
        self.rows = np.arange(len(columns["billed"])) if rows is None else rows
        self._splits: dict[int, tuple] = {}

    @classmethod
    def empty(cls) -> ResourceTable:
        return cls({name: np.empty(0, dtype=object) for name in (*RESOURCE_FIELDS, "to_attribute", "at_stake")})

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return ResourceTable(self.columns, self.rows[index])
        return next(iter(self.view(np.array([range(len(self))[index]]))))

    def __iter__(self) -> Iterator[ResourceRecon]:
        return map(_resource, zip(*(self.column(name) for name in RESOURCE_FIELDS), strict=True))

    def __eq__(self, other: object) -> bool:
        if other is self:   # its rows are made anew each time, and a NaN is equal to itself alone
            return True
        if isinstance(other, Sequence):
            return tuple(self) == tuple(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to a tuple of its rows, so not hashed

    def __repr__(self) -> str:
        return f"ResourceTable({len(self)} resources)"

    def column(self, name: str) -> list:
        """One column of the rows shown, as Python values (floats, ints, texts, tuples, None)."""
        return self.columns[name][self.rows].tolist()

    def view(self, rows: np.ndarray) -> ResourceTable:
        """The rows at positions `rows` of this view, in that order."""
        return ResourceTable(self.columns, self.rows[rows])

    def tagged(self, tagged: bool) -> ResourceTable:
        """The resources of a task (True), or the untagged ones (False)."""
        task = self.columns["task_id"][self.rows]
        return self.view(np.flatnonzero([(t is not None) is tagged for t in task]))

    def flagged(self) -> int:
        """How many resources have a flag."""
        return int(sum(map(bool, self.columns["flags"][self.rows])))

    def split(self, top: int) -> tuple[tuple[ResourceRecon, ...], ResourceTable]:
        """The resources a Recon tab lists and those its Resources sheet lists: the `top` resources of the ranking
        (the flagged ones first, by the money at stake, then by billed) as ResourceRecons, the others as a view in
        the month's order. One sort; worked out once per `top`."""
        if top not in self._splits:
            n = len(self.rows)
            flags = self.columns["flags"][self.rows]
            unflagged = np.fromiter((not f for f in flags), dtype=bool, count=n)
            at_stake = self.columns["at_stake"][self.rows].astype("float64")
            billed = self.columns["billed"][self.rows].astype("float64")
            ranked = np.lexsort((np.arange(n), -billed, -at_stake, unflagged))   # the last key sorts first
            shown = self.view(ranked[:max(top, 0)])
            self._splits[top] = (tuple(shown), self.view(np.sort(ranked[max(top, 0):])))
        return self._splits[top]

    def to_json(self) -> list[dict]:
        """Each row's ResourceRecon.to_json, from the columns."""
        names = ("resource_id", "task_id", "billed", "hours", "avg_util_pct", "mem_peak_share", "oom_events", "flags",
                 "cards", "idle_cards", "saving", "to_attribute", "pricing")
        return [{"resource_id": resource or None, "task_id": task, "billed": billed, "hours": _json_number(hours),
                 "avg_util_pct": _json_number(util), "mem_peak_share": _json_number(mem),
                 "oom_events": _json_number(oom), "flags": list(flags), "cards": cards, "idle_cards": idle,
                 "saving": saving, "to_attribute": attribute, "pricing": pricing or None}
                for resource, task, billed, hours, util, mem, oom, flags, cards, idle, saving, attribute, pricing
                in zip(*(self.column(name) for name in names), strict=True)]


@dataclass(frozen=True)
class Action:
    """What to do next month about one flag of one resource, and the change of next month's bill if it is
    taken (− saves; rules.flag_saving)."""

    resource_id: str
    task_id: str | None
    flag: str
    action: str
    plan_change: float


@dataclass(frozen=True)
class Coverage:
    """Which days of a month the bill covers: first and last charge day, days with lines (None when unknown)."""

    first: dt.date
    last: dt.date
    days_with_lines: int | None = None

    @property
    def partial(self) -> bool:
        return PARTIAL.py({"first": self.first, "last": self.last}, None)


@dataclass(frozen=True)
class CommitmentRecon:
    """A commitment's lines of one kind in a month, apart from the tasks: kind "unused" (the commitment's unused
    part) or "purchase" (its fee); commitment_id and commitment_type as the bill gives them ("" when not);
    effective: their EffectiveCost, None unless every line has one."""

    kind: str
    commitment_id: str
    commitment_type: str
    billed: float
    effective: float | None
    lines: int

    def to_json(self) -> dict:
        return {"kind": self.kind, "commitment_id": self.commitment_id or None,
                "commitment_type": self.commitment_type or None, "billed": self.billed, "effective": self.effective,
                "lines": self.lines}


@dataclass(frozen=True)
class DayRecon:
    """One task's GPU bill on one charge day; `median` of its previous billed days (rules.SPIKE_DAYS at most),
    None on its first; `spike` when the day is over ReconSpikeFactor times that median (rules.SPIKE)."""

    task_id: str  # "" for the untagged GPU lines
    day: dt.date
    billed: float
    median: float | None
    spike: bool

    def to_json(self) -> dict:
        return {"task_id": self.task_id, "day": self.day.isoformat(), "billed": self.billed, "median": self.median,
                "spike": self.spike}


def daily_recons(daily: pd.DataFrame, limits: Limits) -> dict[str, tuple[DayRecon, ...]]:
    """Each month's DayRecons from BillSums.daily (sorted by month, task, day), the rules' Python views."""
    out: dict[str, list[DayRecon]] = {}
    previous: list[float] = []
    last_key = None
    for month, task, day, billed in daily[["month", "task_id", "day", "billed"]].itertuples(index=False):
        if (month, task) != last_key:
            previous, last_key = [], (month, task)
        median = TRAILING_MEDIAN.py({"previous": previous}, limits)
        spike = SPIKE.py({"billed": billed, "median": median}, limits)
        out.setdefault(month, []).append(DayRecon(task, day, float(billed), median, spike))
        previous = [*previous, float(billed)][-SPIKE_DAYS:]
    return {m: tuple(days) for m, days in out.items()}


@dataclass(frozen=True)
class CurrencyRecon:
    """The month's lines billed in another currency than the plan's: their BilledCost in that currency, and the
    dated rate (plan currency per 1 unit) that converted them; every amount of the reconciliation is converted."""

    currency: str
    billed: float  # in `currency`
    rate: float
    as_of: str  # YYYY-MM-DD
    source: str

    @property
    def converted(self) -> float:
        """The lines' BilledCost in the plan currency."""
        return self.billed * self.rate

    def to_json(self) -> dict:
        return {"currency": self.currency, "billed": self.billed, "rate": self.rate, "as_of": self.as_of,
                "source": self.source, "converted": self.converted}


@dataclass(frozen=True)
class MonthRecon:
    """A month's reconciliation; gpu_billed includes unallocated, gpu_billed + non_gpu_billed + commitment_billed
    = billed_total (the BilledCost of the month).

    coverage: None when the bills say nothing of their days; duplicates: (lines, amount) counted once, when
    the reader reports them; planned_extras: the Extras of the month (non-GPU is planned as extras + buffer);
    commitments: the commitment lines (unused, purchase), which no task or resource counts; effective_total: the
    month's EffectiveCost, None unless every line has one; resources: the month's GPU resources, a ResourceTable
    (a sequence of ResourceRecon, held as columns).
    """

    month: str
    tasks: tuple[TaskRecon, ...]
    resources: ResourceTable
    non_gpu: Mapping[str, float]
    billed_total: float
    gpu_billed: float
    non_gpu_billed: float
    unallocated: float
    planned_total: float
    buffer_reserved: float
    planned_extras: float = 0.0
    coverage: Coverage | None = None
    duplicates: tuple[int, float] | None = None
    commitments: tuple[CommitmentRecon, ...] = ()
    effective_total: float | None = None
    credits: Mapping[str, float] = field(default_factory=lambda: dict.fromkeys(CREDIT_KINDS, 0.0))
    non_gpu_planned: Mapping[str, float] = field(default_factory=dict)
    daily: tuple[DayRecon, ...] = ()
    planned_commitments: float = 0.0  # the commitments' adjustment of the month: committed cost - rent displaced
    currencies: tuple[CurrencyRecon, ...] = ()  # the bill's other currencies, converted into the plan's

    @property
    def commitment_billed(self) -> float:
        return math.fsum(c.billed for c in self.commitments)

    @property
    def credit_billed(self) -> float:
        """Credits and refunds (negative when they reduce the invoice), apart from any usage."""
        return math.fsum(self.credits.values())

    def not_planned(self, category: str) -> float:
        """A non-GPU category's bill beyond its Extras in the month (rules.NOT_PLANNED)."""
        return NOT_PLANNED.py({"billed": self.non_gpu.get(category, 0.0),
                               "planned": self.non_gpu_planned.get(category, 0.0)}, None)

    @property
    def non_gpu_not_planned(self) -> float:
        """The non-GPU bill that no Extra planned: what the hidden-cost buffer pays for."""
        return math.fsum(self.not_planned(c) for c in self.non_gpu)

    @property
    def idle_saving(self) -> float:
        """The idle cards' cost of the tasks' resources (rules.IDLE_SAVING)."""
        return math.fsum(self.resources.tagged(True).column("saving"))

    @property
    def achievable_saving(self) -> float:
        """The tasks' idle cards at their billed rate plus the untagged GPU's whole bill (rules.ACHIEVABLE_SAVING)."""
        return self.idle_saving + self.unallocated

    @property
    def partial(self) -> bool:
        return self.coverage is not None and self.coverage.partial

    @property
    def planned_gpu_all(self) -> float:
        """The month's planned GPU cost: the tasks' rent and the commitments' adjustment (Summary's GPU and
        commitments columns)."""
        return self.planned_total + self.planned_commitments

    @property
    def billed_gpu_all(self) -> float:
        """The month's billed GPU cost like for like with planned_gpu_all: the GPU lines (unallocated included) and
        the commitment lines (reservation fees, unused commitment)."""
        return self.gpu_billed + self.commitment_billed

    @property
    def planned_all(self) -> float:
        """All the month's plan: GPU, commitments, Extras and the hidden-cost buffer: Summary's month total (like for
        like with billed_total)."""
        return self.planned_gpu_all + self.planned_extras + self.buffer_reserved

    @property
    def allocated_gpu(self) -> float:
        return self.gpu_billed - self.unallocated

    @property
    def buffer_left(self) -> float:
        """The buffer less the non-GPU bill that no Extra planned."""
        return BUFFER_LEFT.py({"reserved": self.buffer_reserved, "non_gpu": self.non_gpu_not_planned}, None)

    @property
    def unallocated_resources(self) -> tuple[ResourceRecon, ...]:
        return tuple(r for r in self.resources if r.task_id is None)

    def to_json(self) -> dict:
        """SPEC §6 `reconciliation[month]`."""
        return {
            "billed_total": self.billed_total,
            "gpu_billed": self.gpu_billed,
            "non_gpu_billed": self.non_gpu_billed,
            "unallocated": self.unallocated,
            "planned_total": self.planned_total,
            "buffer_reserved": self.buffer_reserved,
            "tasks": [t.to_json() for t in self.tasks],
            "resources": self.resources.to_json(),
            "planned_extras": self.planned_extras,
            "partial": self.partial,
            "coverage": None if self.coverage is None else {
                "first": self.coverage.first.isoformat(), "last": self.coverage.last.isoformat(),
                "days_with_lines": self.coverage.days_with_lines},
            "commitments": [c.to_json() for c in self.commitments],
            "commitment_billed": self.commitment_billed,
            "effective_total": self.effective_total,
            "non_gpu": dict(self.non_gpu),
            "non_gpu_planned": dict(self.non_gpu_planned),
            "non_gpu_not_planned": self.non_gpu_not_planned,
            "buffer_left": self.buffer_left,
            "credits": dict(self.credits),
            "credit_billed": self.credit_billed,
            "idle_saving": self.idle_saving,
            "achievable_saving": self.achievable_saving,
            "daily": [d.to_json() for d in self.daily],
            "planned_commitments": self.planned_commitments,
            "planned_gpu_all": self.planned_gpu_all,
            "billed_gpu_all": self.billed_gpu_all,
            "planned_all": self.planned_all,
            "currencies": [c.to_json() for c in self.currencies],
        }


def _json_number(value: float) -> float | None:
    """A float for JSON, None where unknown (NaN)."""
    return None if value is None or math.isnan(value) else float(value)


@dataclass(frozen=True)
class PlanFacts:
    """What reconcile reads of the plan beyond each task's planned cost and the buffer, all optional: cards held
    per task, planned GPU hours per task and month, Extras per month, the FOCUS PricingCategory of each task's
    tier (records.Tier.focus_category)."""

    cards: Mapping[str, float] = field(default_factory=dict)
    planned_hours: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    extras: Mapping[str, float] = field(default_factory=dict)
    pricing: Mapping[str, str] = field(default_factory=dict)
    extras_by_category: Mapping[str, Mapping[str, float]] = field(default_factory=dict)   # {month: {category: cost}}
    commitments: Mapping[str, float] = field(default_factory=dict)   # {month: the commitments' adjustment}


def reconcile(
    sums: pd.DataFrame,
    usage: pd.DataFrame,
    planned: Mapping[str, Mapping[str, float]],
    buffer_reserved: Mapping[str, float],
    low_util_threshold: float,
    oom_threshold: float,
    variance_tolerance: float,
    coverage: Mapping[str, tuple[dt.date, dt.date, int | None]] | None = None,
    duplicates: Mapping[str, tuple[int, float]] | None = None,
    facts: PlanFacts | None = None,
    daily: pd.DataFrame | None = None,
    spike_factor: float = 3.0,
) -> dict[str, MonthRecon]:
    """Reconcile every month present in the bills' sums (bill_sums.BillSums.sums, or aggregate_lines of
    read_bills' lines) against the plan and usage; nothing here reads a single line.

    Task ids of the bill are matched to the plan's ignoring case. `coverage` ({month: (first day, last day, days
    with lines)}) defaults to what the summed frame's `first_charge` and `last_charge` say. `daily`
    (BillSums.daily) gives each month's daily table, a day over `spike_factor` times its trailing median a spike.
    """
    limits = Limits(low_util_threshold, oom_threshold, variance_tolerance, spike_factor=spike_factor)
    facts = facts or PlanFacts()
    sums = sums.assign(task_id=plan_task_ids(sums["task_id"], planned))
    coverage = coverage if coverage is not None else _frame_coverage(sums)
    totals = _fsum_by(sums, ["month"])
    effective_totals = _effective_by(sums, ["month"])
    commitment_sums, sums = sums[sums["commitment"] != ""], sums[sums["commitment"] == ""]
    commitments = _commitment_recons(commitment_sums)
    is_credit = sums["category"].isin(CREDIT_KINDS)
    credits, sums = _fsum_by(sums[is_credit], ["month", "category"]), sums[~is_credit]
    gpu, non_gpu_sums = sums[sums["is_gpu"]], sums[~sums["is_gpu"]]
    gpu_totals = _fsum_by(gpu, ["month"])
    unallocated_totals = _fsum_by(gpu[gpu["task_id"] == ""], ["month"])
    task_billed = _fsum_by(gpu[gpu["task_id"] != ""], ["month", "task_id"])
    task_effective = _effective_by(gpu[gpu["task_id"] != ""], ["month", "task_id"])
    task_non_gpu = _fsum_by(non_gpu_sums[non_gpu_sums["task_id"] != ""], ["month", "task_id"])
    hours_lines = gpu[gpu["hours_unit"] & (gpu["task_id"] != "")]
    task_hours = hours_lines.groupby(["month", "task_id"])["quantity"].sum(min_count=1)
    non_gpu = _fsum_by(non_gpu_sums, ["month", "category"])
    non_gpu_totals = _fsum_by(non_gpu_sums, ["month"])
    resources = _resource_frame(gpu, usage)
    days = {} if daily is None else daily_recons(
        daily.assign(task_id=plan_task_ids(daily["task_id"], planned)).groupby(
            ["month", "task_id", "day"], as_index=False, sort=True)["billed"].agg(math.fsum), limits)
    result = {}
    for month in sorted(totals.index):
        covered = coverage.get(month)
        month_coverage = Coverage(*covered) if covered is not None else None
        partial = month_coverage is not None and month_coverage.partial
        planned_total = math.fsum(m.get(month, 0.0) for m in planned.values())
        reserved = float(buffer_reserved.get(month, 0.0))
        tasks = _task_recons(
            month, {"billed": task_billed, "non_gpu": task_non_gpu, "hours": task_hours, "effective": task_effective},
            planned, facts,
            {"reserved": reserved, "planned_total": planned_total, "partial": partial})
        status = {t.task_id: t.status(limits) for t in tasks}
        cards = {t.task_id: t.cards for t in tasks}
        month_resources = resources[resources["month"] == month]
        task_rows = month_resources["task_id"].value_counts().to_dict()   # grouped once, not per row
        tasks = tuple(replace(t, resources=int(task_rows.get(t.task_id, 0))) for t in tasks)
        result[month] = MonthRecon(
            month=month,
            tasks=tasks,
            resources=_resource_table(month_resources, status, cards, facts.pricing, task_rows, limits),
            non_gpu={c: float(non_gpu.get((month, c), 0.0)) for c in NON_GPU_CATEGORIES},
            billed_total=float(totals[month]),
            gpu_billed=float(gpu_totals.get(month, 0.0)),
            non_gpu_billed=float(non_gpu_totals.get(month, 0.0)),
            unallocated=float(unallocated_totals.get(month, 0.0)),
            planned_total=planned_total,
            buffer_reserved=reserved,
            planned_extras=float(facts.extras.get(month, 0.0)),
            coverage=month_coverage,
            duplicates=(duplicates or {}).get(month),
            commitments=commitments.get(month, ()),
            effective_total=_known_or_none(effective_totals.get(month)),
            credits={k: float(credits.get((month, k), 0.0)) for k in CREDIT_KINDS},
            non_gpu_planned={c: float(facts.extras_by_category.get(month, {}).get(c, 0.0)) for c in NON_GPU_CATEGORIES},
            daily=days.get(month, ()),
            planned_commitments=float(facts.commitments.get(month, 0.0)),
        )
    return result


def plan_task_ids(task_ids: pd.Series, planned: Mapping[str, object]) -> pd.Series:
    """Bill task ids as the plan spells them where they match one ignoring case (`t1` → `T1`); others as they are."""
    spelling = {task.casefold(): task for task in planned}
    texts = task_ids.astype("str")
    # each distinct id spelled once (a bill's 1.2 million groups name a few dozen tasks)
    return texts.map({t: spelling.get(t.casefold(), t) if t else t for t in texts.unique().tolist()}).astype("str")


def _frame_coverage(sums: pd.DataFrame) -> dict[str, tuple[dt.date, dt.date, None]]:
    """Each month's first and last charge day from the summed frame's first_charge and last_charge (days with
    lines are not in it); nothing when the frame has no such columns."""
    if not {"first_charge", "last_charge"} <= set(sums.columns):
        return {}
    grouped = sums.groupby("month")
    first, last = grouped["first_charge"].min(), grouped["last_charge"].max()
    return {m: (pd.Timestamp(first[m]).date(), pd.Timestamp(last[m]).date(), None) for m in first.index}


def aggregate_lines(bills: pd.DataFrame) -> pd.DataFrame:
    """read_bills' lines summed like bill_sums.sum_bills' `sums`: per month, resource, task, GPU or not, category,
    service and whether ConsumedUnit counts hours (LINE_GROUP_KEYS), Σ BilledCost (`billed`), Σ ConsumedQuantity
    (`quantity`, NaN when none), the number of `lines`, and the `first_charge` and `last_charge`.
    """
    return sum_lines(bills)


def _effective_by(sums: pd.DataFrame, keys: list[str]) -> pd.Series:
    """Exactly rounded sums of `effective` per group, NaN where a line of the group has no EffectiveCost."""
    grouped = sums.groupby(keys, sort=True)
    total = grouped["effective"].agg(lambda s: math.fsum(s.dropna().to_numpy()))
    return total.where(grouped["effective_missing"].sum() == 0)


def _known_or_none(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def _commitment_recons(sums: pd.DataFrame) -> dict[str, tuple[CommitmentRecon, ...]]:
    """The commitment lines per month: one CommitmentRecon per kind, commitment id and type, in COMMITMENT_KINDS
    order, then by id."""
    keys = ["month", "commitment", "commitment_id", "commitment_type"]
    if sums.empty:
        return {}
    frame = pd.DataFrame({"billed": _fsum_by(sums, keys), "effective": _effective_by(sums, keys),
                          "lines": sums.groupby(keys, sort=True)["lines"].sum()}).reset_index()
    frame["order"] = frame["commitment"].map(COMMITMENT_KINDS.index)
    result: dict[str, list[CommitmentRecon]] = {}
    for r in frame.sort_values(["month", "order", "commitment_id", "commitment_type"]).itertuples(index=False):
        result.setdefault(r.month, []).append(CommitmentRecon(r.commitment, r.commitment_id, r.commitment_type,
                                                              float(r.billed), _known_or_none(r.effective),
                                                              int(r.lines)))
    return {m: tuple(c) for m, c in result.items()}


def _fsum_by(sums: pd.DataFrame, keys: list[str]) -> pd.Series:
    """Exactly rounded sums of `billed` per group (math.fsum), keyed by the group."""
    return sums.groupby(keys, sort=True)["billed"].agg(lambda s: math.fsum(s.to_numpy()))


def _task_recons(month: str, sums: Mapping[str, pd.Series], planned: Mapping[str, Mapping[str, float]],
                 facts: PlanFacts, month_values: Mapping[str, object]) -> tuple[TaskRecon, ...]:
    """Every task planned above zero, billed or with tagged non-GPU lines in the month, by task_id."""
    billed, non_gpu, hours, effective = ({task: float(v) for (m, task), v in sums[key].items() if m == month}
                                         for key in ("billed", "non_gpu", "hours", "effective"))
    planned_now = {task: float(by_month.get(month, 0.0)) for task, by_month in planned.items()}
    task_ids = sorted(set(billed) | set(non_gpu) | {t for t, p in planned_now.items() if p > 0})
    recons = []
    for t in task_ids:
        plan = planned_now.get(t, 0.0)
        share = BUFFER_SHARE.py({"reserved": month_values["reserved"], "planned": plan,
                                 "planned_total": month_values["planned_total"]}, None)
        recons.append(TaskRecon(
            t, plan, billed.get(t, 0.0), non_gpu_billed=non_gpu.get(t, 0.0), buffer_share=share,
            cards=facts.cards.get(t), planned_hours=facts.planned_hours.get(t, {}).get(month, math.nan),
            hours=hours.get(t, math.nan), partial=bool(month_values["partial"]),
            effective=_known_or_none(effective.get(t)), planned_pricing=facts.pricing.get(t, "")))
    return tuple(recons)


def _resource_frame(gpu: pd.DataFrame, usage: pd.DataFrame) -> pd.DataFrame:
    """GPU sums per (month, resource, task) with billed, hours, lines, services and the month's usage."""
    sums = gpu.assign(hours=gpu["quantity"].where(gpu["hours_unit"]))
    grouped = sums.groupby(_RESOURCE_KEYS, sort=True)
    frame = pd.DataFrame({
        "billed": _by_group(sums, "billed", lambda s: math.fsum(s.to_numpy()), float).astype("float64"),
        "hours": grouped["hours"].sum(min_count=1),
        "lines": grouped["lines"].sum(),
        "services": _by_group(sums, "service_name", lambda s: tuple(sorted(set(s) - {""})),
                              lambda name: (name,) if name else ()),
        "pricing": _by_group(sums, "pricing_category", _pricing_words, str),
    }).reset_index().astype(dict.fromkeys(_RESOURCE_KEYS, "str"))
    frame = frame.merge(_usage_by_month(usage), on=["resource_id", "month"], how="left")
    frame["mem_peak_share"] = frame["mem_peak_gb"] / frame["mem_total_gb"].where(frame["mem_total_gb"] > 0)
    frame["unallocated"] = frame["task_id"] == ""
    return frame.sort_values(["unallocated", "task_id", "resource_id"], kind="stable", ignore_index=True)


def _by_group(sums: pd.DataFrame, column: str, many, one) -> pd.Series:
    """A column aggregated per resource group (_RESOURCE_KEYS, sorted): `one` of the value where the group has one
    row (most resources: a Python call per group was most of a large month's time), `many` of the rows else."""
    several = sums.duplicated(_RESOURCE_KEYS, keep=False)
    single = sums.loc[~several].set_index(_RESOURCE_KEYS)[column]
    single = pd.Series([one(v) for v in single.to_numpy()], index=single.index, dtype=object)
    grouped = sums.loc[several].groupby(_RESOURCE_KEYS, sort=True)[column].agg(many).astype(object)
    return pd.concat([single, grouped]).sort_index()


def _pricing_words(categories: pd.Series) -> str:
    """The PricingCategories of a resource's lines as words in FOCUS order (`Committed Standard`)."""
    found = set(categories)
    return " ".join(c for c in PRICING_CATEGORIES if c in found)


def _usage_by_month(usage: pd.DataFrame) -> pd.DataFrame:
    """read_usage frames (possibly several concatenated) merged to one row per resource and month."""
    usage = usage.reindex(columns=list(USAGE_COLUMNS)).astype({"resource_id": "str", "month": "str"})
    grouped = usage.groupby(["resource_id", "month"], sort=False)
    merged = grouped.agg(
        avg_util_pct=("avg_util_pct", "mean"), mem_peak_gb=("mem_peak_gb", "max"), mem_total_gb=("mem_total_gb", "max"),
    )
    merged["oom_events"] = grouped["oom_events"].sum(min_count=1)
    return merged.reset_index()


def is_hours_unit(unit: str) -> bool:
    """Whether a ConsumedUnit counts hours (`Hours`, `Hrs`, `GPU-Hours`; not `GB-Hours` or `per Hour`)."""
    text = unit.strip().lower()
    counts_hours = re.search(r"(?:^|[\s_-])(?:h|hrs?|hours?)$", text)
    return bool(counts_hours) and not re.search(r"\bper\b|/|byte|\bgb|\bgib|\btb", text)


def _resource_table(frame: pd.DataFrame, status: Mapping[str, str], cards: Mapping[str, float | None],
                    pricing: Mapping[str, str], task_rows: Mapping[str, int], limits: Limits) -> ResourceTable:
    """The month's rows of the resource frame as a ResourceTable with their flags, cards, idle cards, saving and
    money at stake. A resource's flags, cards and idle cards follow from its task, usage and PricingCategories
    alone, so the rules run once per distinct set of those (with no usage, a few per task), not once per resource;
    the saving and the bill to attribute, which read its bill, once per resource."""
    task = frame["task_id"].tolist()
    inputs = {"task": task, "util": frame["avg_util_pct"].to_numpy("float64"),
              "mem_share": frame["mem_peak_share"].to_numpy("float64"), "oom": frame["oom_events"].to_numpy("float64"),
              "pricing": frame["pricing"].tolist()}
    codes = pd.DataFrame(inputs).groupby(list(inputs), sort=False, dropna=False).ngroup().to_numpy()
    _, first = np.unique(codes, return_index=True)
    flags, cards_of, idle = (np.empty(len(first), dtype=object) for _ in range(3))
    for code, i in enumerate(first):
        t, util = task[i], float(inputs["util"][i])
        flags[code] = resource_flags({
            "util": util, "mem_share": float(inputs["mem_share"][i]), "oom": float(inputs["oom"][i]), "task": t,
            "task_status": status.get(t, ""), "pricing": inputs["pricing"][i], "planned_pricing": pricing.get(t, ""),
        }, limits)
        values = {"task": t, "task_cards": cards.get(t), "task_rows": task_rows.get(t, 0), "flags": " ".join(flags[code]),
                  "util": util}
        cards_of[code] = values["cards"] = RESOURCE_CARDS.py(values, limits)
        idle[code] = IDLE_CARDS.py(values, limits)
    billed = frame["billed"].to_numpy("float64")
    columns = {"resource_id": frame["resource_id"].to_numpy(object), "task_id": _objects([t or None for t in task]),
               "services": frame["services"].to_numpy(object), "lines": frame["lines"].to_numpy("int64"),
               "billed": billed, "hours": frame["hours"].to_numpy("float64"), "avg_util_pct": inputs["util"],
               "mem_peak_share": inputs["mem_share"], "oom_events": inputs["oom"], "flags": flags[codes],
               "cards": cards_of[codes], "idle_cards": idle[codes], "pricing": frame["pricing"].to_numpy(object)}
    saving, attribute = [], []
    for t, b, c, i in zip(task, billed.tolist(), columns["cards"].tolist(), columns["idle_cards"].tolist(), strict=True):
        saving.append(SAVING.py({"billed": b, "cards": c, "idle": i}, limits))
        attribute.append(TO_ATTRIBUTE.py({"task": t, "billed": b}, None))
    columns.update(saving=_objects(saving), to_attribute=_objects(attribute),
                   at_stake=_objects(list(map(max, saving, attribute))))
    return ResourceTable(columns)


def _objects(values: list) -> np.ndarray:
    """A list as a one-dimensional array of its Python objects (tuples stay elements)."""
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array


def next_month_actions(recon: MonthRecon) -> tuple[Action, ...]:
    """Per flagged resource and flag: the action, and the change of next month's bill if it is taken
    (alternatives, not a sum)."""
    return tuple(
        Action(r.resource_id, r.task_id, flag, ACTIONS[flag], 0.0 - flag_saving(flag, r.saving))
        for r in recon.resources
        for flag in r.flags
    )


def _gather(sources: list, read) -> tuple[list[tuple[str, pd.DataFrame]], list]:
    """Every source read as (name, frame), and all their problems (not only the first file's)."""
    frames, problems = [], []
    for source, name in sources:
        try:
            frames.append((name, read(source, name)))
        except InputError as exc:
            problems.extend(exc.problems)
    return frames, problems


@dataclass(frozen=True)
class PlanRecon:
    """reconcile_plan's result: each billed month, each month's de-duplicated BilledCost (for the Checks tie-out),
    the warnings about the bills and usage (Messages naming the file and the value), and the bills' sums."""

    months: dict[str, MonthRecon]
    billed_input: dict[str, float]
    warnings: tuple[Message, ...] = ()
    bills: BillSums | None = None


def reconcile_plan(plan: Plan, bill_paths: list[Path], usage_paths: list[Path], temp_parent: Path | None = None,
                   progress=None, bill_sums: Path | None = None) -> PlanRecon:
    """Every billed month of the bill files (files, folders or globs) and Bills sheet reconciled against the plan,
    with the usage files and Usage sheet. Usage given without any bill is read and checked, and a warning says it
    has nothing to be reconciled against. `bill_sums`: the result of bill_sql.grouping_sql, read in place of the
    bill lines (then neither bill files nor a Bills sheet may be given)."""
    inputs = plan.inputs
    s = inputs.settings
    if bill_sums is not None and (bill_paths or inputs.bills_sheet is not None):
        raise InputError([Problem(Code.WRONG_FORMAT, Path(bill_sums).name, "", Message("bill_sums_with_bills"))])
    bill_sources = [BillSource(p, Path(p).name) for p in bill_paths]
    if inputs.bills_sheet is not None:
        bill_sources.insert(0, BillSource(inputs.bills_sheet, "Bills"))
    usage_sources: list[tuple[Path | pd.DataFrame, str]] = [(p, Path(p).name) for p in usage_paths]
    if inputs.usage_sheet is not None:
        usage_sources.insert(0, (inputs.usage_sheet, "Usage"))
    usage_frames, problems = _gather(usage_sources, read_usage)
    if not bill_sources and bill_sums is None:
        if problems:
            raise InputError(problems)
        names = [name for name, _ in usage_frames]
        return PlanRecon({}, {}, (Message("usage_without_bills", files=names),) if names else ())
    try:
        pattern, gpu_names = s.gpu_line_pattern or DEFAULT_GPU_LINE_PATTERN, [g.name for g in inputs.gpus]
        rate_of = functools.partial(bill_rate, plan_currency=s.currency, fx=inputs.fx)
        if bill_sums is not None:
            bills = read_bill_sums(bill_sums, s.currency, pattern, dict(inputs.assignments), gpu_names,
                                   billing_timezone=s.billing_timezone, memory_limit=s.recon_memory_limit or machine_memory_limit(),
                                   rate_of=rate_of)
        else:
            bills = sum_bills(bill_sources, s.currency, pattern, dict(inputs.assignments), gpu_names,
                              billing_timezone=s.billing_timezone, memory_limit=s.recon_memory_limit or machine_memory_limit(),
                              temp_parent=temp_parent, progress=progress, rate_of=rate_of)
    except InputError as exc:
        raise InputError(exc.problems + problems) from None
    if problems:
        raise InputError(problems)
    usage = pd.concat([frame for _, frame in usage_frames]) if usage_frames else pd.DataFrame(columns=USAGE_COLUMNS)
    planned, buffers = plan_targets(plan)
    recon = reconcile(bills.sums, usage, planned, buffers, s.low_util_threshold, s.oom_threshold,
                      s.variance_tolerance, coverage=bills.coverage, duplicates=bills.duplicates,
                      facts=plan_facts(plan), daily=bills.daily, spike_factor=s.recon_spike_factor)
    recon = {m: replace(mr, currencies=tuple(CurrencyRecon(code, billed, rate.rate, rate.as_of, rate.source)
                                                         for code, billed, rate in bills.currencies.get(m, ())))
             for m, mr in recon.items()}
    names = [source.name for source in bill_sources]
    if not names and bill_sums is not None:
        names = [Path(bill_sums).name]
    warnings = (*bills.warnings, *unknown_task_warnings(names, bills.sums, planned),
                *unmatched_usage_warnings(usage_frames, bills.sums))
    return PlanRecon(recon, dict(bills.billed), tuple(warnings), bills)


def plan_targets(plan: Plan) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """What reconcile compares the bill with: each task's planned GPU cost per month, and each month's buffer."""
    planned = {tp.task.task_id: {m: tp.cost_in(i) for i, m in enumerate(plan.months, start=1)} for tp in plan.tasks}
    return planned, {m: t.buffer for m, t in plan.month_totals.items()}


def plan_facts(plan: Plan) -> PlanFacts:
    """The plan's cards held per task, planned GPU hours per task and month (rules.PLANNED_HOURS), Extras and the
    commitments' adjustment per month."""
    hours_per_month = plan.inputs.settings.hours_per_month
    hours = {}
    for tp in plan.tasks:
        row = tp.row
        hours[tp.task.task_id] = {m: PLANNED_HOURS.py({
            "planned": tp.cost_in(i), "tier": row["tier"], "cards_billed": row["cards_billed"],
            "gpu_hours": row["gpu_hours_per_month"], "hours_per_month": hours_per_month}, None)
            for i, m in enumerate(plan.months, start=1)}
    categories = [e.category for e in plan.inputs.extras]
    by_category = {m: {c: math.fsum(v for k, v in zip(categories, costs, strict=True) if k == c)
                       for c in NON_GPU_CATEGORIES} for m, costs in plan.extras_by_month.items()}
    return PlanFacts(cards={tp.task.task_id: tp.row["cards_held"] for tp in plan.tasks}, planned_hours=hours,
                     extras={m: t.extras for m, t in plan.month_totals.items()}, extras_by_category=by_category,
                     commitments={m: t.commitments for m, t in plan.month_totals.items()},
                     pricing={tp.task.task_id: TIER[tp.row["tier"]].focus_category for tp in plan.tasks})


def unknown_task_warnings(names: list[str], sums: pd.DataFrame, planned: Mapping[str, object]) -> list[Message]:
    """One warning per task id of the bills (named together) that matches no task of the plan, even ignoring case."""
    known = {task.casefold() for task in planned}
    return [Message("unknown_bill_task", file=", ".join(names), value=task)
            for task in sorted(set(sums["task_id"].astype("str").unique().tolist()) - {""})
            if task.casefold() not in known]


def unmatched_usage_warnings(usage_frames: list[tuple[str, pd.DataFrame]], sums: pd.DataFrame) -> list[Message]:
    """One warning per usage file and resource id that is no billed resource (ids match exactly, as in the bill);
    its usage is left out."""
    if not usage_frames:
        return []
    billed = set(sums["resource_id"].astype("str").tolist())
    out = [Message("unmatched_usage", file=name, value=resource)
           for name, frame in usage_frames
           for resource in sorted(set(frame["resource_id"].astype("str"))) if resource not in billed]
    if "month" not in sums.columns:
        return out
    # a billed resource's usage in a month whose bill has no line for it: no Recon tab row can show it
    billed_months = set(zip(sums["resource_id"].astype("str").tolist(), sums["month"].astype("str").tolist(),
                            strict=True))
    for name, frame in usage_frames:
        if "month" not in frame.columns:
            continue
        pairs = sorted(set(zip(frame["resource_id"].astype("str"), frame["month"].astype("str"), strict=True)))
        for resource in sorted({r for r, _ in pairs if r in billed}):
            months = [m for r, m in pairs if r == resource and (r, m) not in billed_months]
            if months:
                out.append(Message("unbilled_usage_months", file=name, value=resource, months=", ".join(months)))
    return out
