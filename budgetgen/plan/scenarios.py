"""Scenarios: low, base and high values of the drivers that move the money, and what each does to a task. No I/O.

A driver is a record: which tasks it moves (by kind, tier or the currency of their GPU's prices) and how (their
demand, their price, or the buffer rate). A Scenarios row gives a driver's low, base and high values for one task or,
with task_id blank, for every task (a task's own row wins over the all-tasks row). Demand and price values are
multipliers of what Tasks and GPUs say (1: as typed); the buffer's are rates. The workbook's selector (the named
cell Scenario) picks the column live; the build plans all three and the tornado (each row moved alone).
"""

from __future__ import annotations

import functools
import operator
from dataclasses import dataclass

from ..core.records import DEMAND, PRICE
from ..core.schema import DRIVERS, SCENARIO_LEVELS
from ..model import expr

LEVELS = SCENARIO_LEVELS


DRIVER = {d.name: d for d in DRIVERS}
DRIVER_NAMES = tuple(DRIVER)


@dataclass(frozen=True)
class ScenarioRow:
    """One Scenarios row: a driver's values for one task ("" for every task)."""

    driver: str
    task_id: str
    low: float
    base: float
    high: float
    row: int = 0  # the Scenarios sheet row it came from
    source: str = ""

    def value(self, level: str) -> float:
        return getattr(self, level)

    @property
    def label(self) -> str:
        return f"{self.driver} ({self.task_id})" if self.task_id else self.driver


@dataclass(frozen=True)
class Scenario:
    """What a choice of levels does: per task the demand and price multipliers, and the buffer rate."""

    demand: dict[str, float]
    price: dict[str, float]
    buffer: float


def driver_value(rows: tuple[ScenarioRow, ...], levels: tuple[str, ...], driver: str, task_id: str) -> float | None:
    """The chosen level of the driver's row for the task, else of its all-tasks row, else None (not given).
    `levels[i]` is the level chosen for rows[i]."""
    own = next((r.value(lv) for r, lv in zip(rows, levels, strict=True) if r.driver == driver
                and r.task_id == task_id), None)
    if own is not None:
        return own
    return next((r.value(lv) for r, lv in zip(rows, levels, strict=True) if r.driver == driver and not r.task_id),
                None)


def task_multipliers(rows, levels, task_id: str, training: bool, tier: str, foreign: bool) -> tuple[float, float]:
    """The task's demand and price multipliers: `multiplier_excel`'s two formulas compiled (budgetgen.model.expr), each
    Scenarios row's chosen name its value at `levels[i]` (a driver not given counts 1; an efficiency divides)."""
    chosen = tuple(r.value(lv) for r, lv in zip(rows, levels, strict=True))
    cells = {"training": 1 if training else 0, "tier": tier, "foreign": 1 if foreign else 0}
    demand, price = (float(f(chosen, **cells)) for f in _compiled(rows, task_id))
    return demand, price


@functools.lru_cache(maxsize=4096)
def _compiled(rows, task_id: str) -> tuple:
    """The task's demand and price formulas as functions of the rows' chosen values (a tuple) and its cells."""
    placeholders = {"training": "{training}", "tier": "{tier}", "foreign": "{foreign}"}
    return tuple(_compile(multiplier_excel(rows, effect, task_id=task_id, **placeholders), len(rows))
                 for effect in (DEMAND, PRICE))


@functools.lru_cache(maxsize=256)
def _compile(text: str, n_rows: int):
    """One multiplier formula compiled: the tasks without rows of their own share one text, so one compilation."""
    chosen = {chosen_name(i): operator.itemgetter(i) for i in range(n_rows)}
    return expr.compile_excel(text, expr.Names(settings={}, constants={}, derived=chosen))


def foreign_prices(gpu, currency: str) -> bool:
    """Whether a GPU's prices are listed in another currency than the plan's (the fx driver moves them)."""
    return gpu.currency not in ("", currency)


def resolve(rows: tuple[ScenarioRow, ...], levels: tuple[str, ...], tasks, inputs) -> Scenario:
    """The scenario of `levels` (one per row) for `tasks` (TaskPlans); the buffer setting when no row sets it."""
    s = inputs.settings
    demand, price = {}, {}
    for tp in tasks:
        tid = tp.task.task_id
        foreign = foreign_prices(inputs.gpu(tp.row["gpu"]), s.currency)
        demand[tid], price[tid] = task_multipliers(rows, levels, tid, bool(tp.row["training"]), tp.row["tier"],
                                                   foreign)
    buffer = driver_value(rows, levels, "buffer", "")
    return Scenario(demand, price, s.hidden_cost_buffer if buffer is None else buffer)


# ---------------------------------------------------------------- the Excel view (Demand, Scenarios sheets)
# Each Scenarios row's chosen value is a named cell (ScenarioChosen1, ...); which row a task's driver reads is fixed
# by the rows the build was given (a row added or re-aimed takes a build), its low/base/high values stay live.
SELECTOR, SCENARIO_BUFFER = "Scenario", "ScenarioBuffer"


def chosen_name(i: int) -> str:
    """The named cell of Scenarios row i's (0-based) chosen value."""
    return f"ScenarioChosen{i + 1}"


def _row_for(rows, driver: str, task_id: str) -> int | None:
    """The index of the row a task's driver reads: its own row, else the all-tasks row, else None."""
    own = next((i for i, r in enumerate(rows) if r.driver == driver and r.task_id == task_id), None)
    return own if own is not None else next((i for i, r in enumerate(rows) if r.driver == driver and not r.task_id),
                                            None)


def multiplier_excel(rows, effect: str, *, task_id: str, training: str, tier: str, foreign: str) -> str:
    """The task's demand or price multiplier (`task_multipliers` computes it compiled): `training` (1/0), `tier` and
    `foreign` (1/0) are cells, so an edited tier moves it live."""
    out = "1"
    for d in DRIVERS:
        i = _row_for(rows, d.name, task_id) if d.effect == effect else None
        if i is None:
            continue
        tests = ([f"{training}={1 if d.training else 0}"] if d.training is not None else []) \
            + ([f'{tier}="{d.tier}"'] if d.tier else []) + ([f"{foreign}=1"] if d.foreign else [])
        test = tests[0] if len(tests) == 1 else f"AND({','.join(tests)})"
        term = f"IF({test},{chosen_name(i)},1)" if tests else chosen_name(i)
        out = f"{out}/{term}" if d.divides else term if out == "1" else f"{out}*{term}"
    return out


def buffer_excel(rows, setting: str) -> str:
    """The chosen buffer rate: the buffer row's, else the setting."""
    i = _row_for(rows, "buffer", "")
    return setting if i is None else chosen_name(i)
