"""The plan: per task the GPU, cards, hours and cost; per month and tier the totals. No I/O."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import cast

from ..core.errors import Code, InputError, Problem
from ..core.i18n import Message
from ..core.inputs import Gpu, Inputs, Task
from ..core.schema import (
    CANDIDATES_ALL_UP_TO,
    CANDIDATES_LARGE,
    COMMITMENT_TIERS,
    CONSTANT_VALUES,
    KIND,
    REFERENCE_TIER,
    TASK_TIERS,
    TIER,
    TIER_NAMES,
)
from ..core.warnings import group_warnings
from ..model import expr, rules, serving
from ..model.columns import NAMES, RUN_WINDOW, K, evaluate, evaluate_task
from . import scenarios
from .budgets import plan_budgets
from .checks import Check, plan_checks
from .choice import LiveChoice, live_choice
from .commitments import Commitment, adjustment_in, commitment_rate, plan_commitments
from .order import Order, plan_order
from .ramp import TaskMonth, task_months

CONSUMER_TRAINING_HOURS = 200  # GPU-hours a month of training above which consumer cards are warned against
CONSUMER_SERVING_HOURS = 12  # hours a day of serving above which consumer cards are warned against
PEAK_HEADROOM = 0.2  # share of a service's capacity below which, with peak_factor 1, an even day's load is warned
SLOW_STREAM = 10  # tokens/s one user sees, under which a service is warned about
DEADLINE_TOLERANCE = 1e-9  # a run ending on its deadline, up to rounding, is in time
HOURS_PER_DAY = CONSTANT_VALUES["HoursPerDay"]
MILLI = CONSTANT_VALUES["Milli"]
_RUN_WINDOW = expr.compile_excel(RUN_WINDOW, NAMES)  # the hours a run has for its work, as the Tasks formulas say


class Exclusion(Enum):
    """Why a catalog GPU cannot be chosen for a task; the value is its message's template key."""

    ACTIVATIONS = "excluded_activations"  # one card's own activations fill its memory: no number of cards holds the run
    TOO_FEW_CARDS = "excluded_cards"  # the task's own `cards` is below what its memory needs
    CARDS_TOO_SLOW = "excluded_cards_too_slow"  # the task's own `cards` cannot finish a run by its deadline
    REPLICA_TOO_LARGE = "excluded_replica"  # a serving replica would need more than 8 cards
    OVER_MAX_CARDS = "excluded_max_cards"  # it needs more cards than max_cards
    TOO_SLOW = "excluded_too_slow"  # it fits, but finishing a run by its deadline needs more than max_cards
    LATENCY = "excluded_latency"  # a replica misses the service's latency targets even one sequence at a time
    NO_PRICE = "excluded_no_price"  # it fits, but has no price for the task's tier
    CONSUMER_ONLINE = "excluded_consumer_online"  # a consumer card for an online service (consumer_online: excluded)

    @property
    def fits(self) -> bool:
        return self is Exclusion.NO_PRICE

    def message(self, row: dict, max_cards: int) -> Message:
        """The reason as a translatable message, with the numbers of the candidate's row."""
        slow = {"cards": row["cards_needed"], "gpu": row["gpu"], "days": row["deadline_used"] or 0,
                "max_cards": max_cards}
        params = {Exclusion.ACTIVATIONS: {"activations": row["activations_gb"] or 0, "card": row["card_gb"] or 0,
                                          "gpu": row["gpu"]},
                  Exclusion.LATENCY: {"ttft": ((row["t_pre"] or 0) + (row["t_step"] or 0)) * MILLI,
                                      "tpot": (row["t_step"] or 0) * MILLI, "gpu": row["gpu"]},
                  Exclusion.TOO_FEW_CARDS: {"cards_min": row["cards_min"], "vram": row["vram_gb"], "given": row["cards"]},
                  Exclusion.CARDS_TOO_SLOW: {"given": row["cards"], "gpu": row["gpu"],
                                             "hours": row["wall_hours_per_run"] or 0, "days": row["deadline_used"] or 0,
                                             "cards": row["cards_needed"]},
                  Exclusion.REPLICA_TOO_LARGE: {"gpu": row["gpu"]},
                  Exclusion.OVER_MAX_CARDS: {"cards_min": row["cards_min"], "gpu": row["gpu"], "max_cards": max_cards},
                  Exclusion.TOO_SLOW: slow,
                  Exclusion.NO_PRICE: {"tier": row["tier"]},
                  Exclusion.CONSUMER_ONLINE: {}}[self]
        # the type in the key too: 2 and 2.0 are equal, but print differently
        return _exclusion_message(self.value, tuple((k, v.__class__, v) for k, v in params.items()))


@functools.lru_cache(maxsize=4096)
def _exclusion_message(key: str, params: tuple) -> Message:
    """One Message per distinct reason: many tasks are excluded from a GPU for the same reason, and formatting a
    Message takes as long as evaluating a candidate's columns."""
    return Message(key, **{k: v for k, _, v in params})


@dataclass(frozen=True)
class Candidate:
    """One catalog GPU evaluated for a task; `exclusion` says why it cannot be chosen, `excluded` in words. A
    candidate the Candidates sheet does not list (`listed` False: list_options) keeps only OPTION_KEYS of its row."""

    gpu: str
    row: dict
    exclusion: Exclusion | None = None
    chosen: bool = False
    excluded: str = ""  # exclusion.message(...), or "" for a GPU that can be chosen
    listed: bool = True


# What the JSON and the ranking read of every candidate; the rest of a row only the Candidates sheet shows.
OPTION_KEYS = ("gpu", "tier", "cards_held", "gpu_hours_per_month", "monthly_cost")


def options_listed(settings, tasks: int) -> int | None:
    """How many of each task's cheapest options Candidates lists besides the chosen card (None: every card): the
    candidates_per_task setting, else every card for an inventory of up to CANDIDATES_ALL_UP_TO tasks."""
    if settings.candidates_per_task is not None:
        return settings.candidates_per_task
    return None if tasks <= CANDIDATES_ALL_UP_TO else CANDIDATES_LARGE


def list_options(tp: TaskPlan, keep: int | None, inputs: Inputs) -> TaskPlan:
    """The task with its candidates marked as Candidates lists them: every card (keep None), else the chosen card
    and the `keep` cheapest that could be chosen; the others keep only OPTION_KEYS of their rows, so that a large
    inventory's plan holds a few full rows a task, not one for every catalog card."""
    if keep is None:
        return tp
    shown = {id(c) for c in rank([c for c in tp.candidates if c.exclusion is None], inputs)[:keep]}
    return replace(tp, candidates=tuple(
        c if c.chosen or id(c) in shown else replace(c, row={k: c.row[k] for k in OPTION_KEYS}, listed=False)
        for c in tp.candidates))


@dataclass(frozen=True)
class TaskPlan:
    """One task's results: the chosen GPU's evaluated row, the other candidates, its warnings."""

    task: Task
    row: dict
    candidates: tuple[Candidate, ...]
    warnings: tuple[str, ...]
    months: tuple[TaskMonth, ...] = ()  # every plan month: the demand factor, cards, GPU-hours and cost

    def cost_in(self, month_index: int) -> float:
        """Cost in plan month `month_index` (1-based): nothing outside start..end."""
        return self.months[month_index - 1].cost


@dataclass(frozen=True)
class MonthTotals:
    """One plan month: GPU rent, extras, hidden-cost buffer, the commitments' adjustment (committed cost - rent it
    displaces), total."""

    gpu: float
    extras: float
    buffer: float
    commitments: float = 0.0

    @property
    def total(self) -> float:
        return rules.MONTH_TOTAL(None, gpu=self.gpu, commitments=self.commitments, extras=self.extras,
                                 buffer=self.buffer)


@dataclass(frozen=True)
class BuyVsRent:
    """§3.7 for one GPU type the plan uses. A figure missing on GPUs stays None, never 0: without a purchase price
    the owning side is None and the verdict `rules.NO_PURCHASE_PRICE`; without an on-demand price or a power figure
    the break-even is None and the verdict `rules.NO_ON_DEMAND_PRICE` or `rules.NO_POWER`."""

    gpu: str
    daily_fixed: float | None
    energy_per_hour: float | None
    break_even_hours_per_day: float | None
    plan_hours_per_day: float
    verdict: str
    best_commitment_rate: float | None = None  # the lowest commitment rate for the GPU (None: none offered)
    break_even_vs_commitment: float | None = None  # daily use above which owning beats that rate (None: never/unknown)
    break_even_utilisation: float | None = None  # break_even_hours_per_day as a share of the day


@dataclass(frozen=True)
class Swing:
    """One Scenarios row moved alone to its low and its high value, the others at base: the period totals."""

    label: str
    low: float
    high: float
    base: float

    @property
    def size(self) -> float:
        """How far the row moves the period total at most: what the tornado sorts by."""
        return max(abs(self.low - self.base), abs(self.high - self.base))


@dataclass(frozen=True)
class Plan:
    """The whole budget: tasks, months, tiers, buy-versus-rent and warnings."""

    inputs: Inputs
    tasks: tuple[TaskPlan, ...]
    months: tuple[str, ...]
    month_totals: dict[str, MonthTotals]
    tier_totals: dict[str, dict[str, float]]
    extras_by_month: dict[str, list[float]]
    buy_vs_rent: tuple[BuyVsRent, ...]
    warnings: tuple[str, ...] = field(default=())
    commitments: tuple[Commitment, ...] = field(default=())
    buffer_rate: float = 0.0  # the base scenario's hidden-cost buffer rate (ScenarioBuffer)
    scenario_totals: dict[str, float] = field(default_factory=dict)  # the period total of each level (low/base/high)
    tornado: tuple[Swing, ...] = field(default=())  # each Scenarios row moved alone, the largest swing first
    budgets: tuple = field(default=())  # the Budgets rows against the plan (budgets.BudgetLine)

    @property
    def period_total(self) -> float:
        return sum(t.total for t in self.month_totals.values())

    @functools.cached_property
    def order(self) -> Order:
        """What to order (budgetgen.plan.order), computed once for the Order sheet, its layout and the JSON."""
        return plan_order(self)

    @functools.cached_property
    def live_choice(self) -> LiveChoice:
        """The live choice's values (budgetgen.plan.choice), computed once for Candidates, Tasks and Checks."""
        return live_choice(self)

    @functools.cached_property
    def checks(self) -> tuple[Check, ...]:
        """The tie-outs (budgetgen.plan.checks), computed once for the Checks sheet, the Summary banner and the JSON."""
        return plan_checks(self)


def _candidate(task: Task, gpu: Gpu, inputs: Inputs, task_rows: dict) -> Candidate:
    """`task_rows`: evaluate_task's rows of this task so far, by the card count given and the tier (they differ in
    no other input)."""
    s = inputs.settings
    values = task.values
    if task.values["gpu"] not in (None, gpu.name):
        values = {**values, "cards": None}  # a user's card count belongs to the GPU the user named
    key = (values["cards"], values["tier"])
    task_row = task_rows.get(key)
    if task_row is None:
        task_row = task_rows[key] = evaluate_task(values, s, inputs.model(values.get("model")))
    row = evaluate(values, s, gpu, task_row=task_row)
    given = values["cards"]
    exclusion = None
    if row["training"] and row["card_gb"] <= row["activations_gb"]:
        exclusion = Exclusion.ACTIVATIONS
    elif given is not None and given < row["cards_min"]:
        exclusion = Exclusion.TOO_FEW_CARDS
    elif given is not None and _too_slow(row):
        exclusion = Exclusion.CARDS_TOO_SLOW
    elif given is None and not row["training"] and row["cards_min"] > serving.MAX_REPLICA_SHAPE:
        exclusion = Exclusion.REPLICA_TOO_LARGE
    elif given is None and row["cards_min"] > s.max_cards:
        exclusion = Exclusion.OVER_MAX_CARDS
    elif given is None and row["cards_needed"] > s.max_cards:
        exclusion = Exclusion.TOO_SLOW
    elif row["latency_batch"] == 0:
        exclusion = Exclusion.LATENCY
    elif gpu.prices.get(task.values["tier"]) is None:
        exclusion = Exclusion.NO_PRICE
    elif gpu.gpu_class == "consumer" and KIND[task.kind].online and s.consumer_online == "excluded" \
            and task.values["gpu"] != gpu.name:
        exclusion = Exclusion.CONSUMER_ONLINE
    return Candidate(gpu.name, row, exclusion, excluded=exclusion.message(row, s.max_cards) if exclusion else "")


def _best_tier(task: Task, c: Candidate, gpu: Gpu, inputs: Inputs, task_rows: dict) -> Candidate:
    """A task whose tier was left blank is priced on each card's cheapest suited tier (the candidate's
    `cheapest_tier`: every tier the kind suits that the card's offers price), so the choice weighs every card on
    every tier; a tier the user typed is kept. A card priced on no suited tier stays as it is (not offered)."""
    best = c.row["cheapest_tier"]
    if "tier" not in task.defaulted or c.exclusion not in (None, Exclusion.NO_PRICE) or best in (None, c.row["tier"]):
        return c
    return _candidate(replace(task, values={**task.values, "tier": best}), gpu, inputs, task_rows)


def _too_slow(row: dict) -> bool:
    """A training run whose wall clock passes its deadline (a batch run spreads over replicas instead)."""
    hours = row["wall_hours_per_run"]
    return bool(row["training"]) and hours > row["deadline_used"] * HOURS_PER_DAY * (1 + DEADLINE_TOLERANCE)


def _sort_key(c: Candidate, inputs: Inputs) -> tuple:
    return (c.row["monthly_cost"], c.row["cards_held"], -inputs.gpu(c.gpu).vram_gb, c.gpu)


def rank(options: list[Candidate], inputs: Inputs) -> list[Candidate]:
    """Cheapest first: by monthly cost (ties: fewer cards, more memory, then the name)."""
    return sorted(options, key=lambda c: _sort_key(c, inputs))


def choose(options: list[Candidate], method: str, inputs: Inputs) -> Candidate:
    """`cheapest`: lowest monthly cost (ties: fewer cards, more memory). `balanced`: §3.5's middle."""
    ranked = rank(options, inputs)
    if method != "balanced" or len(ranked) <= 2:
        return ranked[0]
    rest = ranked[1:-1]
    return rest[(len(rest) - 1) // 2]


def _no_fit_problem(task: Task, candidates: list[Candidate], inputs: Inputs) -> Problem:
    s = inputs.settings
    tier = task.values["tier"]
    cell = task.cell("gpu") if task.values["gpu"] else task.cell("model_params_b")
    if task.values["gpu"]:
        c = next(c for c in candidates if c.gpu == task.values["gpu"])
        if c.exclusion is Exclusion.OVER_MAX_CARDS:
            return Problem(Code.TOO_MANY_CARDS, "Tasks", cell,
                           Message("too_many_cards", cards_min=c.row["cards_min"], gpu=c.gpu, max_cards=s.max_cards))
        if c.exclusion in (Exclusion.TOO_FEW_CARDS, Exclusion.CARDS_TOO_SLOW):
            return Problem(Code.DOES_NOT_FIT, "Tasks", task.cell("cards"),
                           Message("cards_do_not_fit", reason=c.excluded))
        if c.exclusion in (Exclusion.TOO_SLOW, Exclusion.REPLICA_TOO_LARGE):
            return Problem(Code.TOO_MANY_CARDS, "Tasks", cell, Message("named_gpu_excluded", reason=c.excluded))
        if c.exclusion in (Exclusion.ACTIVATIONS, Exclusion.LATENCY):
            return Problem(Code.DOES_NOT_FIT, "Tasks", _latency_cell(task) if c.exclusion is Exclusion.LATENCY
                           else cell, Message("named_gpu_excluded", reason=c.excluded))
        return Problem(Code.NO_PRICE, "Tasks", task.cell("tier"),
                       Message("gpu_no_price", gpu=c.gpu, tier=tier))
    fitting = [c for c in candidates if c.exclusion is None or c.exclusion.fits]
    slow = [c for c in candidates if c.exclusion in (Exclusion.TOO_SLOW, Exclusion.CARDS_TOO_SLOW)]
    if not fitting and slow:
        fastest = min(slow, key=lambda c: (c.row["cards_needed"], c.row["wall_hours_per_run"], c.gpu))
        return Problem(Code.TOO_MANY_CARDS, "Tasks", task.cell("cards") if task.values["cards"] else
                       task.cell("task_id"),
                       Message("no_gpu_in_time", days=fastest.row["deadline_used"], max_cards=s.max_cards,
                               cards=fastest.row["cards_needed"], gpu=fastest.gpu))
    late = [c for c in candidates if c.exclusion is Exclusion.LATENCY]
    if not fitting and late:
        fastest = min(late, key=lambda c: (c.row["t_step"], c.gpu))
        return Problem(Code.DOES_NOT_FIT, "Tasks", _latency_cell(task),
                       Message("no_gpu_meets_latency", reason=fastest.excluded))
    if fitting:
        return Problem(Code.NO_PRICE, "Tasks", task.cell("tier"),
                       Message("no_fitting_price", tier=tier, fits=", ".join(c.gpu for c in fitting)))
    largest = max(inputs.gpus, key=lambda g: g.vram_gb)
    need = candidates[0].row["vram_gb"] if candidates else 0
    return Problem(Code.DOES_NOT_FIT, "Tasks", cell,
                   Message("fits_no_gpu", need=need, max_cards=s.max_cards, gpu=largest.name, vram=largest.vram_gb))


def _latency_cell(task: Task) -> str:
    """The latency target a task gives: time per output token, else time to the first token."""
    return task.cell("tpot_ms") if task.values.get("tpot_ms") is not None else task.cell("ttft_ms")


def _task_warnings(task: Task, row: dict, gpu: Gpu, max_cards: int, peak_factor: float = 1.0) -> list[str]:
    tid = task.task_id
    out: list[str] = []
    if task.values["cards"] is not None and task.values["cards"] > max_cards:
        out.append(Message("cards_over_max_cards", tid=tid, cards=task.values["cards"], max_cards=max_cards))
    kind = KIND[task.kind]
    if kind.training and gpu.gpu_class == "consumer" and row["gpu_hours_per_month"] > \
            CONSUMER_TRAINING_HOURS:
        out.append(Message("consumer_training", tid=tid, gpu=gpu.name, hours=row["gpu_hours_per_month"],
                           limit=CONSUMER_TRAINING_HOURS))
    if row["cards_per_run"] > row["cards_min"] and gpu.interconnect == "pcie":
        out.append(Message("pcie_scaling", tid=tid, cards=row["cards_per_run"], cards_min=row["cards_min"],
                           gpu=gpu.name, speedup=row["speedup"]))
    if kind.online and TIER[task.values["tier"]].reruns:
        out.append(Message("inference_on_spot", tid=tid))
    if kind.online and row["replicas"] == 1:
        out.append(Message("no_failover", tid=tid))
    spare = _spare_at_peak(row, task.values["requests_per_day"], peak_factor) if kind.online else None
    if spare is not None and spare < PEAK_HEADROOM:
        out.append(Message("no_peak_headroom", tid=tid, replicas=row["replicas"], spare=max(spare, 0.0),
                           peak=peak_factor, limit=PEAK_HEADROOM))
    if kind.online and gpu.gpu_class == "consumer" and row["serving_hours_per_day"] > CONSUMER_SERVING_HOURS:
        out.append(Message("consumer_serving", tid=tid, gpu=gpu.name, hours=row["serving_hours_per_day"],
                           limit=CONSUMER_SERVING_HOURS))
    if kind.online and row["user_tokens_per_sec"] < SLOW_STREAM:
        out.append(Message("slow_stream", tid=tid, tps=row["user_tokens_per_sec"], limit=SLOW_STREAM))
    if row["tier_saving"] > 0:
        out.append(Message("tier_saving", tid=tid, cheapest=row["cheapest_tier"], tier=task.values["tier"],
                           saving=row["tier_saving"]))
    return out


def _spare_at_peak(row: dict, requests_per_day: float | None, peak_factor: float) -> float | None:
    """The share of a service's capacity left over at its busiest, the day's requests spread evenly over its
    serving hours (a peak_factor above 1 counted as headroom already); None when not known."""
    rate, hours = row.get("requests_per_sec"), row.get("serving_hours_per_day")
    if peak_factor > 1 or not requests_per_day or not isinstance(rate, int | float) or not rate or not hours:
        return None
    capacity = row["replicas"] * rate * hours * K.SecondsPerHour
    return 1 - requests_per_day / capacity


def _serving_input_warnings(inputs: Inputs) -> list[Message]:
    """One warning naming the serving tasks sized without a catalog model or a prompt length (old inventories)."""
    vague = [t.task_id for t in inputs.tasks if not KIND[t.kind].training and t.values["tokens_per_sec"] is None
             and (t.values.get("model") is None or t.values.get("prompt_tokens") is None)]
    if not vague:
        return []
    return [Message("serving_without_model", tids=", ".join(vague), prompt=inputs.settings.default_prompt_tokens)]


def _deadline_problem(task: Task, deadline: float | None, s) -> Problem | None:
    """A training or batch run whose deadline is no longer than the setup every run starts with: no GPU and no
    number of cards or replicas finishes it. Named at deadline_days, or at runs_per_month when the deadline is the
    run's share of the month."""
    if deadline is None or cast(float, _RUN_WINDOW(s, deadline_used=deadline)) > 0:
        return None
    hours = deadline * HOURS_PER_DAY
    if task.values["deadline_days"] is not None:
        return Problem(Code.DEADLINE_WITHIN_SETUP, "Tasks", task.cell("deadline_days"),
                       Message("deadline_within_setup", days=deadline, hours=hours, setup=s.setup_hours))
    return Problem(Code.DEADLINE_WITHIN_SETUP, "Tasks", task.cell("runs_per_month"),
                   Message("runs_within_setup", runs=task.values["runs_per_month"], hours=hours, setup=s.setup_hours))


def plan_task(task: Task, inputs: Inputs) -> TaskPlan:
    """Evaluate every catalog GPU for a task and choose one (the named GPU, or by gpu_choice).

    A task whose tier was left blank takes its kind's default tier; when no card that would run it has a price for
    that tier (a plan priced on-demand and spot only), it takes the suited tier whose choice costs least, and a
    warning says so. A tier the user typed is kept: a card without its price is an error."""
    try:
        return _plan_task(task, inputs)
    except InputError as exc:
        if "tier" not in task.defaulted or not all(p.code is Code.NO_PRICE for p in exc.problems):
            raise
        plans = []
        for tier in KIND[task.kind].suited_tiers:
            if tier == task.values["tier"]:
                continue
            try:
                plans.append(_plan_task(replace(task, values={**task.values, "tier": tier}), inputs))
            except InputError:
                continue
        if not plans:
            raise
        best = min(plans, key=lambda p: p.row["monthly_cost"])
        note = Message("default_tier_unpriced", tid=task.task_id, default=task.values["tier"], tier=best.row["tier"])
        return replace(best, warnings=(note, *best.warnings))


def _plan_task(task: Task, inputs: Inputs) -> TaskPlan:
    row = evaluate_task(task.values, inputs.settings, inputs.model(task.values.get("model")))
    problem = _deadline_problem(task, row["deadline_used"], inputs.settings)
    if problem is not None:
        raise InputError([problem])
    task_rows: dict = {(task.values["cards"], task.values["tier"]): row}
    candidates = [_best_tier(task, _candidate(task, g, inputs, task_rows), g, inputs, task_rows) for g in inputs.gpus]
    if task.values["gpu"]:
        pick = [c for c in candidates if c.gpu == task.values["gpu"] and c.exclusion is None]
        chosen = pick[0] if pick else None
    else:
        options = [c for c in candidates if c.exclusion is None]
        chosen = choose(options, inputs.settings.gpu_choice, inputs) if options else None
    if chosen is None:
        raise InputError([_no_fit_problem(task, candidates, inputs)])
    marked = tuple(replace(c, chosen=c is chosen) for c in candidates)
    if chosen.row["tier"] != task.values["tier"]:  # the engine chose the tier too: the task is priced on it
        task = replace(task, values={**task.values, "tier": chosen.row["tier"]})
    warnings = _task_warnings(task, chosen.row, inputs.gpu(chosen.gpu), inputs.settings.max_cards,
                              inputs.settings.peak_factor)
    months = task_months(chosen.row, task.values.get("growth_per_month") or 0.0, inputs.settings,
                         price_change=inputs.gpu(chosen.gpu).price_change_per_year or 0.0,
                         ramp=inputs.ramps.get(task.task_id))
    # the cost over the plan is the months' (Monthly's row total), not the first month's times the active months
    row = {**chosen.row, "period_cost": math.fsum(m.cost for m in months)}
    return TaskPlan(task, row, marked, tuple(warnings), months)


def _buy_vs_rent(tasks: list[TaskPlan], inputs: Inputs) -> list[BuyVsRent]:
    """§3.7 per GPU type the plan uses, priced for purchase or not: the Python view of `rules`' buy-versus-rent."""
    s = inputs.settings
    out = []
    for gpu in inputs.gpus:
        mine = [t for t in tasks if t.row["gpu"] == gpu.name]
        if not mine:
            continue
        daily_fixed = rules.DAILY_FIXED(s, purchase=gpu.purchase_price, power_w=gpu.power_w)
        energy = rules.ENERGY_PER_HOUR(s, power_w=gpu.power_w)
        on_demand = gpu.prices.get(REFERENCE_TIER.name)
        break_even = rules.BREAK_EVEN(s, on_demand=on_demand, energy=energy, daily_fixed=daily_fixed)
        per_day = rules.PLAN_HOURS_PER_DAY(
            s, gpu_hour_months=math.fsum(m.gpu_hours for t in mine for m in t.months),
            card_months=sum(m.cards for t in mine for m in t.months))
        verdict = rules.VERDICT(s, daily_fixed=daily_fixed, on_demand=on_demand, energy=energy, break_even=break_even,
                                plan_hours=per_day, no_price=rules.NO_PURCHASE_PRICE,
                                no_on_demand=rules.NO_ON_DEMAND_PRICE, no_power=rules.NO_POWER)
        rates = [commitment_rate(gpu, t, s) for t in COMMITMENT_TIERS]
        best = rules.BEST_COMMIT_RATE(s, rates=rates, known=any(r is not None for r in rates))
        out.append(BuyVsRent(gpu.name, daily_fixed, energy, break_even, per_day, verdict, best,
                             rules.BREAK_EVEN(s, on_demand=best, energy=energy, daily_fixed=daily_fixed),
                             rules.BREAK_EVEN_SHARE(s, hours=break_even)))
    return out


UNPRICED_TASKS_NAMED = 3  # task ids the warning names per card; the others are counted (+5)


def _unpriced_gpus(tasks: list[TaskPlan], offer_currency: str) -> list[Message]:
    """One warning naming the GPUs that would run some task but have no price for its tier, so are never chosen
    (each task's Candidates rows say so too), each with the tasks it was left out of: without it a card missing from
    the plan looks judged and rejected. The hint to widen the markets is given only while they can be widened."""
    unpriced: dict[str, list[str]] = {}
    for t in tasks:
        for c in t.candidates:
            if c.exclusion is Exclusion.NO_PRICE:
                unpriced.setdefault(c.gpu, []).append(t.task.task_id)
    if not unpriced:
        return []
    shown = ", ".join(f"{gpu} ({', '.join(tids[:UNPRICED_TASKS_NAMED])}"
                      f"{f' +{len(tids) - UNPRICED_TASKS_NAMED}' if len(tids) > UNPRICED_TASKS_NAMED else ''})"
                      for gpu, tids in unpriced.items())
    return [Message("gpus_unpriced_any" if offer_currency == "any" else "gpus_unpriced", gpus=shown)]


def plan_budget(inputs: Inputs) -> Plan:
    """Compute the whole plan; raises InputError for tasks that cannot be placed on any GPU."""
    s = inputs.settings
    months = s.plan_months
    tasks, problems = [], []
    keep = options_listed(s, len(inputs.tasks))
    for task in inputs.tasks:
        try:
            tasks.append(list_options(plan_task(task, inputs), keep, inputs))
        except InputError as exc:
            problems.extend(exc.problems)
    if problems:
        raise InputError(problems)
    extras_by_month = {m: [e.monthly_cost if e.start_month <= m <= e.end_month else 0.0 for e in inputs.extras]
                       for m in months}
    rows = inputs.scenarios
    base_levels = ("base",) * len(rows)
    scenario = scenarios.resolve(rows, base_levels, tasks, inputs)
    tasks = apply_scenario(tasks, inputs, scenario)
    month_totals, commitments = _month_totals(tasks, inputs, scenario.buffer)
    tier_totals: dict[str, dict[str, float]] = {t: {} for t in TIER_NAMES}
    for i, month in enumerate(months, start=1):
        for tier in TIER_NAMES:
            tier_totals[tier][month] = math.fsum(t.cost_in(i) for t in tasks if t.row["tier"] == tier)
    warnings = list(inputs.warnings)
    warnings.extend(_serving_input_warnings(inputs))
    warnings.extend(_unpriced_gpus(tasks, inputs.settings.offer_currency))
    for t in tasks:
        warnings.extend(t.warnings)
    if not 0.20 <= s.hidden_cost_buffer <= 0.30:
        warnings.append(Message("buffer_outside_guidance", rate=s.hidden_cost_buffer))
    for record in TASK_TIERS:
        cap = s.tier_cap(record)
        over = [m for m in months if cap is not None and tier_totals[record.name][m] > cap]
        if over:
            warnings.append(Message("tier_over_cap", tier=record.name, cap=cap, months=", ".join(over)))
    base_total = sum(t.total for t in month_totals.values())  # as Plan.period_total
    held = {(c.gpu, c.tier): c.cards for c in commitments}  # a scenario keeps the commitments, as the workbook does
    totals = {level: base_total if level == "base" else _replanned_total(tasks, inputs, (level,) * len(rows), held)
              for level in scenarios.LEVELS}
    swings = []
    for i, row in enumerate(rows):
        low, high = (_replanned_total(tasks, inputs, base_levels[:i] + (level,) + base_levels[i + 1:], held)
                     for level in ("low", "high"))
        swings.append(Swing(row.label, low, high, base_total))
    swings.sort(key=lambda w: -w.size)
    plan = Plan(inputs, tuple(tasks), months, month_totals, tier_totals, extras_by_month,
                tuple(_buy_vs_rent(tasks, inputs)), tuple(warnings), commitments, scenario.buffer, totals,
                tuple(swings))
    lines = plan_budgets(plan)
    over = [Message("over_budget", center=line.label or Message("budget_whole_plan"), months=sum(line.over),
                    budget=line.budget.monthly_budget, overrun=line.overrun) for line in lines if any(line.over)]
    return replace(plan, budgets=lines, warnings=group_warnings((*plan.warnings, *over), s.currency))


def apply_scenario(tasks: list[TaskPlan], inputs: Inputs, scenario: scenarios.Scenario) -> list[TaskPlan]:
    """The tasks' months again with the scenario's demand and price multipliers (the GPUs and shapes chosen stay)."""
    out = []
    for t in tasks:
        tid = t.task.task_id
        months = task_months(t.row, t.task.values.get("growth_per_month") or 0.0, inputs.settings,
                             scenario.demand[tid], scenario.price[tid],
                             inputs.gpu(t.row["gpu"]).price_change_per_year or 0.0, inputs.ramps.get(tid))
        out.append(replace(t, months=months, row={**t.row, "period_cost": math.fsum(m.cost for m in months)}))
    return out


def _month_totals(tasks: list[TaskPlan], inputs: Inputs, buffer_rate: float, held: dict | None = None):
    """Each plan month's totals and the commitments proposed from the tasks' months (`held`: committed already)."""
    s = inputs.settings
    commitments = plan_commitments(tasks, inputs, len(s.plan_months), held)
    totals = {}
    for i, month in enumerate(s.plan_months, start=1):
        gpu, adjustment = math.fsum(t.cost_in(i) for t in tasks), adjustment_in(commitments, i)
        extras = math.fsum(e.monthly_cost for e in inputs.extras if e.start_month <= month <= e.end_month)
        totals[month] = MonthTotals(gpu, extras, rules.BUFFER(s, gpu=gpu, commitments=adjustment, rate=buffer_rate),
                                    adjustment)
    return totals, commitments


def _replanned_total(tasks: list[TaskPlan], inputs: Inputs, levels: tuple[str, ...], held: dict) -> float:
    """The period total with the Scenarios rows at `levels`: the GPUs and shapes chosen stay, and so do the cards
    committed (`held`), whose unused hours a low scenario pays for."""
    scenario = scenarios.resolve(inputs.scenarios, levels, tasks, inputs)
    totals, _ = _month_totals(apply_scenario(tasks, inputs, scenario), inputs, scenario.buffer, held)
    return sum(t.total for t in totals.values())
