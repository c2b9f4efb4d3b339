"""What changed between two versions of a plan, and how much each change moves the period total.

Each change's effect is found by sequential replacement: start from the old inputs, apply the changes one
at a time (settings, GPUs, removed, changed and added tasks, extras) and re-plan after each, so the effects
add up exactly to the difference of the two period totals. A task step re-plans that task alone (_Running):
the work grows with the number of changes, not with changes times tasks.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import io
import math
import re
import tempfile
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import xlsxwriter

from ..catalog.gpus import gpu_record
from ..core.errors import Code, InputError, OutputError, Problem, printable
from ..core.i18n import LANGS, canonical_name, tr
from ..core.inputs import Inputs, Settings
from ..core.schema import EXTRA_COLUMNS, GPU_COLUMNS, SETTINGS, SETTINGS_BY_KEY, TASK_COLUMNS, TIER, Value
from ..core.values import add_months, text_length
from ..io.reader import read_inputs
from ..io.safefile import iter_rows, load_input_workbook
from ..model import rules
from ..workbook import CHECK_TOLERANCE, Formats
from ..workbook.book import XLS_STRMAX, Sheet
from ..workbook.layout import FX_HEADER
from . import scenarios
from .commitments import adjustment_in, plan_commitments
from .engine import MonthTotals, Plan, TaskPlan, apply_scenario, plan_budget, plan_task

BUILT_SHEETS = ("assumptions", "checks")  # a built budget has both; an input workbook neither
BUILT_PLACES = {"Settings": "Assumptions"}  # where a built budget keeps what an input keeps on Settings
# When a version was built is not a change to the plan: its one effect, a default period, shows as period_start.
NOT_COMPARED = frozenset({"build_date"})
SAME_REL = 1e-12  # numbers this close are one value (xlsx keeps 16 significant digits, not 17)
_UNIT = re.compile(r"\s*\([^()]*\)$")  # "vram_gb (GB)" -> "vram_gb", "gpu (chosen)" -> "gpu"


@dataclass(frozen=True)
class Change:
    """One difference between the versions and how much it moves the period total."""

    kind: str  # setting changed; gpu, task or extra removed / changed / added
    key: str
    detail: str
    delta: float
    note: str = ""


@dataclass(frozen=True)
class Diff:
    """Two versions' period totals and the changes between them; the deltas add up to the difference."""

    old_name: str
    new_name: str
    currency: str
    old_total: float
    new_total: float
    changes: tuple[Change, ...] = ()
    notes: tuple[str, ...] = ()
    budget: float | None = None  # the new version's budget for the whole plan over its months (None: none given)

    @property
    def total_change(self) -> float:
        return self.new_total - self.old_total


# ---------------------------------------------------------------- reading a version

def read_version(path: Path, today: dt.date | None = None) -> Inputs:
    """The inputs of an input workbook, or of a built budget workbook (its chosen GPUs kept as given)."""
    return _read_version(path, today)[0]


def _read_version(path: Path, today: dt.date | None) -> tuple[Inputs, bool]:
    """read_version, and whether the file is a built budget."""
    path = Path(path)
    tables = None
    try:
        tables = _built_tables(path)
        if tables is None:
            return read_inputs(path, today), False
        with tempfile.TemporaryDirectory() as tmp:
            inputs = read_inputs(_write_tables(tables, Path(tmp) / path.name), today)
        return dataclasses.replace(inputs, source_sha256=hashlib.sha256(path.read_bytes()).hexdigest()), True
    except InputError as exc:
        raise _labelled(exc, path.name, BUILT_PLACES if tables else {}) from None


def _unchosen(built: Inputs, other: Inputs) -> Inputs:
    """A built budget's inputs with the engine's GPU and tier choices taken back where the input version names none:
    a budget writes the GPU and tier it chose into the task's cells, which is no change from the input that left
    them blank."""
    blank = {t.task_id.lower() for t in other.tasks if t.values["gpu"] is None}
    # likewise the tier the engine chose where the input left it blank (its kind's default, marked defaulted)
    blank_tier = {t.task_id.lower(): t.values["tier"] for t in other.tasks if "tier" in t.defaulted}

    def unchosen(t):
        key = t.task_id.lower()
        values = {**t.values, "gpu": None} if key in blank else t.values
        if key in blank_tier:
            return dataclasses.replace(t, values={**values, "tier": blank_tier[key]},
                                       defaulted=t.defaulted | {"tier"})
        return dataclasses.replace(t, values=values) if key in blank else t
    return dataclasses.replace(built, tasks=tuple(unchosen(t) for t in built.tasks))


def _built_tables(path: Path) -> dict[str, list[tuple[int, tuple]]] | None:
    """A built budget's echoed inputs as input-sheet rows (row number, values), or None for an input workbook."""
    wb = load_input_workbook(path)
    try:
        sheets = {ws.title.strip().lower(): ws for ws in wb.worksheets}
        if not all(name in sheets for name in BUILT_SHEETS):
            return None
        tables = {"Settings": _settings_rows(sheets["assumptions"])}
        if fx := _fx_rows(sheets["assumptions"]):
            tables["FX"] = fx
        for name, width in (("GPUs", len(GPU_COLUMNS)), ("Tasks", len(TASK_COLUMNS)), ("Extras", len(EXTRA_COLUMNS))):
            if name.lower() in sheets:
                tables[name] = _table_rows(sheets[name.lower()], width)
        return tables
    finally:
        wb.close()


_FX_HEADERS = {tr(FX_HEADER, lang) for lang in LANGS}


def _fx_rows(ws) -> list[tuple[int, tuple]]:
    """The FX table of Assumptions (below its FX_HEADER row) as an FX sheet from row 1: currency and rate."""
    rows, inside = [], False
    for row_no, values in iter_rows(ws):
        if values and values[0] in _FX_HEADERS:
            rows.append((1, ("currency", "rate")))
            inside = True
        elif inside and values and values[0]:
            rows.append((len(rows) + 1, tuple(values[:2])))
        elif inside:
            break
    return rows


def _settings_rows(ws) -> list[tuple[int, tuple]]:
    """Settings rows from Assumptions: each setting by its key in column A, and the tier caps by tier."""
    rows: list[tuple[int, tuple]] = [(1, ("setting", "value"))]
    for row_no, values in iter_rows(ws):
        if values and values[0] in _FX_HEADERS:
            break
        key, value = canonical_name(values[0]) if values else None, values[1] if len(values) > 1 else None
        if key in SETTINGS_BY_KEY:
            rows.append((row_no, (key, value)))
        elif key in TIER:
            rows.append((row_no, (TIER[key].cap_setting, value)))
    return rows


def _table_rows(ws, width: int) -> list[tuple[int, tuple]]:
    """A table sheet's first `width` columns, the units stripped from the headers."""
    rows = []
    for row_no, values in iter_rows(ws):
        values = values[:width]
        if row_no == 1:
            values = tuple(_UNIT.sub("", v) if isinstance(v, str) else v for v in values)
        rows.append((row_no, values))
    return rows


def _write_tables(tables: dict[str, list[tuple[int, tuple]]], path: Path) -> Path:
    """An input workbook holding the rows at their original places, text always as text."""
    wb = xlsxwriter.Workbook(str(path), {"strings_to_formulas": False, "strings_to_numbers": False,
                                         "strings_to_urls": False})
    date = wb.add_format({"num_format": "yyyy-mm-dd"})
    for name, rows in tables.items():
        ws = wb.add_worksheet(name, Sheet)
        for row_no, values in rows:
            for col, value in enumerate(values):
                if isinstance(value, (dt.date, dt.datetime)):
                    ws.write_datetime(row_no - 1, col, value, date)
                else:
                    ws.write(row_no - 1, col, value)
    wb.close()
    return path


def _labelled(exc: InputError, name: str, places: dict[str, str]) -> InputError:
    """The problems of one version, each place prefixed with its file name, as Excel writes [book]Sheet!A1."""
    return InputError([Problem(p.code, f"[{name}]{places.get(p.sheet, p.sheet)}" if p.sheet not in ("", name)
                               else name, p.cell, p.message) for p in exc.problems])


# ---------------------------------------------------------------- the changes

@dataclass(frozen=True)
class _Row:
    """One keyed record of a version: its key as shown, the value itself, its input columns by name."""

    key: str
    value: object
    fields: dict[str, Value]


@dataclass(frozen=True)
class _Step:
    """One change, as the edit that turns the working inputs one step further towards the new version."""

    kind: str
    key: str
    detail: str
    table: str  # the _State dictionary it edits
    slot: str  # the key in that dictionary
    value: object = None
    removes: bool = False


@dataclass
class _State:
    """The inputs part-way from the old version to the new, as dictionaries the steps edit."""

    base: Inputs
    settings: dict[str, Value]
    gpus: dict[str, Value]
    tasks: dict[str, Value]
    extras: dict[str, Value]

    @classmethod
    def of(cls, inputs: Inputs) -> _State:
        """The working state of one version."""
        return cls(inputs, {s.key: inputs.settings.value(s.key) for s in SETTINGS},
                   *({slot: row.value for slot, row in rows(inputs).items()}
                     for rows in (_gpu_rows, _task_rows, _extra_rows)))

    def apply(self, step: _Step) -> None:
        """Make one change."""
        table = getattr(self, step.table)
        if step.removes:
            del table[step.slot]
        else:
            table[step.slot] = step.value

    def inputs(self) -> Inputs:
        """The working state as Inputs, the plan months following period_start and period_months."""
        s = self.settings
        months = tuple(add_months(s["period_start"], i) for i in range(int(s["period_months"])))
        return dataclasses.replace(self.base, settings=Settings.of({**s, "plan_months": months}),
                                   gpus=tuple(self.gpus.values()), tasks=tuple(self.tasks.values()),
                                   extras=tuple(self.extras.values()))


def _gpu_rows(inputs: Inputs) -> dict[str, _Row]:
    return {g.name.lower(): _Row(g.name, g, gpu_record(g)) for g in inputs.gpus}


def _task_rows(inputs: Inputs) -> dict[str, _Row]:
    return {t.task_id.lower(): _Row(t.task_id, t, {c.name: t.values.get(c.name) for c in TASK_COLUMNS})
            for t in inputs.tasks}


def _extra_rows(inputs: Inputs) -> dict[str, _Row]:
    """Extras keyed by item; a repeated item is numbered: "Storage", "Storage (2)"."""
    rows: dict[str, _Row] = {}
    for e in inputs.extras:
        key, n = e.item, 1
        while key.lower() in rows:
            n += 1
            key = f"{e.item} ({n})"
        rows[key.lower()] = _Row(key, e, dataclasses.asdict(e))
    return rows


def _same(a: object, b: object) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=SAME_REL)
    return a == b


def _show(value: object) -> str:
    if value is None:
        return "blank"
    if isinstance(value, (int, float)):
        return f"{value:,.15g}"
    return str(value)


def _differences(old: dict[str, Value], new: dict[str, Value]) -> str:
    """Each column that differs as "column: old -> new", joined with "; " ("" when none differs)."""
    parts = []
    for name, value in old.items():
        if not _same(value, new.get(name)):
            parts.append(f"{name}: {_show(value)} -> {_show(new.get(name))}")
    return "; ".join(parts)


def _describe_gpu(f: dict[str, Value]) -> str:
    return f"{f['class']}, {_show(f['vram_gb'])} GB, on demand {_show(f['on_demand_per_hour'])} an hour"


def _describe_task(f: dict[str, Value]) -> str:
    text = f": {f['task']}" if f["task"] else ""
    size = f["model"] if f["model_params_b"] is None and f.get("model") else f"{_show(f['model_params_b'])}B"
    return " ".join(str(part) for part in (f["kind"], size, f["method"]) if part is not None) + text


def _describe_extra(f: dict[str, Value]) -> str:
    return f"{f['category']}, {_show(f['monthly_cost'])} a month, {f['start_month']} to {f['end_month']}"


def _table_steps(noun: str, table: str, old: dict[str, _Row], new: dict[str, _Row], describe) -> list[_Step]:
    """Removed, then changed, then added records of one table, one step each."""
    removed = [_Step(f"{noun} removed", r.key, describe(r.fields), table, slot, removes=True)
               for slot, r in old.items() if slot not in new]
    changed = []
    for slot, r in old.items():
        detail = _differences(r.fields, new[slot].fields) if slot in new else ""
        if detail:
            changed.append(_Step(f"{noun} changed", new[slot].key, detail, table, slot, new[slot].value))
    added = [_Step(f"{noun} added", r.key, describe(r.fields), table, slot, r.value)
             for slot, r in new.items() if slot not in old]
    return removed + changed + added


def _steps(old: Inputs, new: Inputs) -> list[_Step]:
    """Every change in the order they are applied: settings, GPUs, tasks, extras."""
    steps = [_Step("setting changed", s.key, f"{_show(a)} -> {_show(b)}", "settings", s.key, b)
             for s in SETTINGS if s.key not in NOT_COMPARED
             and not _same(a := old.settings.value(s.key), b := new.settings.value(s.key))]
    steps += _table_steps("gpu", "gpus", _gpu_rows(old), _gpu_rows(new), _describe_gpu)
    steps += _table_steps("task", "tasks", _task_rows(old), _task_rows(new), _describe_task)
    steps += _table_steps("extra", "extras", _extra_rows(old), _extra_rows(new), _describe_extra)
    return steps


# ---------------------------------------------------------------- attribution

def _plan(inputs: Inputs) -> Plan:
    """plan_budget, after the checks the reader makes of one version but a mix of two may fail."""
    problems = [p for t in inputs.tasks for p in _mix_problems(t, inputs)]
    if problems:
        raise InputError(problems)
    return plan_budget(inputs)


def _mix_problems(t, inputs: Inputs) -> list[Problem]:
    """A task's gpu missing from the catalog, or its months outside the plan (possible in a mix of versions)."""
    months = inputs.settings.plan_months
    problems = []
    if t.values["gpu"] is not None and t.values["gpu"] not in {g.name for g in inputs.gpus}:
        problems.append(Problem(Code.UNKNOWN_VALUE, "Tasks", t.cell("gpu"),
                                f"{t.task_id}: gpu {t.values['gpu']} is not in the catalog"))
    if t.values["start_month"] not in months or t.values["end_month"] not in months:
        problems.append(Problem(Code.MONTH_OUTSIDE_PLAN, "Tasks", t.cell("start_month"),
                                f"{t.task_id}: {t.values['start_month']} to {t.values['end_month']} is outside "
                                f"the plan {months[0]} to {months[-1]}"))
    return problems


def _why(exc: InputError) -> str:
    more = len(exc.problems) - 1
    return str(exc.problems[0]) + (f" and {more} more problem(s)" if more else "")


class _Running:
    """The period total of the working state, kept step by step: a task step re-plans that task alone (its
    costs leave and enter exact per-month sums), a settings or GPU step re-plans every task. The total is
    plan_budget's to the last bit: math.fsum is the correctly rounded sum, and so is a Fraction's float."""

    def __init__(self, state: _State):
        self.state = state
        self.replan()

    def replan(self) -> None:
        self.inputs = self.state.inputs()
        self.gpu = [Fraction(0)] * len(self.inputs.settings.plan_months)
        self.costs: dict[str, tuple[float, ...]] = {}
        self.plans: dict[str, TaskPlan] = {}
        self.failed: dict[str, list[Problem]] = {}
        for slot, task in self.state.tasks.items():
            self.enter(slot, task)

    def enter(self, slot: str, task) -> None:
        """Plan one task of the working state and add its monthly costs."""
        problems = _mix_problems(task, self.inputs)
        if not problems:
            try:
                planned = plan_task(task, self.inputs)
                levels = ("base",) * len(self.inputs.scenarios)
                planned = apply_scenario([planned], self.inputs, scenarios.resolve(
                    self.inputs.scenarios, levels, [planned], self.inputs))[0]
            except InputError as exc:
                problems = exc.problems
        if problems:
            self.failed[slot] = problems
            return
        costs = tuple(planned.cost_in(i) for i in range(1, len(self.gpu) + 1))
        self.costs[slot] = costs
        self.plans[slot] = planned
        self.gpu = [g + Fraction(c) for g, c in zip(self.gpu, costs)]

    def leave(self, slot: str) -> None:
        """Take one task's monthly costs out."""
        self.failed.pop(slot, None)
        costs = self.costs.pop(slot, None)
        self.plans.pop(slot, None)
        if costs is not None:
            self.gpu = [g - Fraction(c) for g, c in zip(self.gpu, costs)]

    def apply(self, step: _Step) -> None:
        self.state.apply(step)
        if step.table == "tasks":
            self.leave(step.slot)
            if not step.removes:
                self.enter(step.slot, self.state.tasks[step.slot])
        elif step.table == "extras":
            self.inputs = self.state.inputs()
        else:
            self.replan()

    def total(self) -> tuple[float | None, str]:
        """The period total as plan_budget computes it, or None and why the working state cannot be planned."""
        if self.failed:
            return None, _why(InputError([p for problems in self.failed.values() for p in problems]))
        s = self.inputs.settings
        months = []
        commitments = plan_commitments(list(self.plans.values()), self.inputs, len(s.plan_months))
        rate = scenarios.resolve(self.inputs.scenarios, ("base",) * len(self.inputs.scenarios), [], self.inputs).buffer
        for i, (month, gpu_sum) in enumerate(zip(s.plan_months, self.gpu), start=1):
            gpu, adjustment = float(gpu_sum), adjustment_in(commitments, i)
            extras = math.fsum(e.monthly_cost if e.start_month <= month <= e.end_month else 0.0
                               for e in self.inputs.extras)
            months.append(MonthTotals(gpu, extras, rules.BUFFER(s, gpu=gpu, commitments=adjustment, rate=rate),
                                      adjustment).total)
        return sum(months), ""


def _totals(steps: list[_Step], state: _State, new_total: float) -> list[tuple[float | None, str]]:
    """The period total after each step, or None and why the inputs so far cannot be planned.

    The last step is the new version itself: its total is the new version's, so the deltas add up to the whole.
    """
    if not steps:
        return []
    running = _Running(state)
    totals: list[tuple[float | None, str]] = []
    for step in steps[:-1]:
        running.apply(step)
        totals.append(running.total())
    return totals + [(new_total, "")]


def _attribute(steps: list[_Step], totals: list[tuple[float | None, str]], old_total: float) -> tuple[Change, ...]:
    """Each step's change of the period total; a step that cannot be planned alone is counted in the next."""
    changes: list[Change] = []
    waiting: list[tuple[_Step, str]] = []
    previous = old_total
    for step, (total, why) in zip(steps, totals):
        if total is None:
            waiting.append((step, why))
            continue
        changes += [Change(w.kind, w.key, w.detail, 0.0, f"could not be planned on its own ({reason}): its effect "
                           f"is counted in {step.kind} {step.key}") for w, reason in waiting]
        note = f"includes the effect of {', '.join(f'{w.kind} {w.key}' for w, _ in waiting)}" if waiting else ""
        changes.append(Change(step.kind, step.key, step.detail, total - previous, note))
        waiting, previous = [], total
    return tuple(changes)


def _notes(old: Inputs, new: Inputs) -> tuple[str, ...]:
    a, b = old.settings, new.settings
    notes = []
    if a.plan_months != b.plan_months:
        notes.append(f"the plan periods differ ({a.plan_months[0]} to {a.plan_months[-1]} against "
                     f"{b.plan_months[0]} to {b.plan_months[-1]}): the period totals are compared anyway")
    if a.currency != b.currency:
        notes.append(f"the currencies differ ({a.currency} against {b.currency}): the totals are compared as numbers")
    return tuple(notes)


def _planned(inputs: Inputs, name: str) -> Plan:
    try:
        return _plan(inputs)
    except InputError as exc:
        raise _labelled(exc, name, {}) from None


def diff_inputs(old: Inputs, new: Inputs, old_name: str = "old", new_name: str = "new") -> Diff:
    """Every change from `old` to `new`, each with its effect on the period total (sequential replacement)."""
    old_total = _planned(old, old_name).period_total
    new_total = _planned(new, new_name).period_total
    steps = _steps(old, new)
    totals = _totals(steps, _State.of(old), new_total)
    whole = next((b.monthly_budget for b in new.budgets if not b.cost_center), None)
    return Diff(old_name, new_name, new.settings.currency, old_total, new_total,
                _attribute(steps, totals, old_total), _notes(old, new),
                None if whole is None else whole * len(new.settings.plan_months))


def diff_files(old: Path, new: Path, today: dt.date | None = None) -> Diff:
    """Diff two versions, each an input workbook or a budget workbook written by `budgetgen build`."""
    (a, a_built), (b, b_built) = _read_version(old, today), _read_version(new, today)
    if a_built and not b_built:
        a = _unchosen(a, b)
    elif b_built and not a_built:
        b = _unchosen(b, a)
    return diff_inputs(a, b, str(old), str(new))


# ---------------------------------------------------------------- output

def _signed(value: float) -> str:
    text = f"{value:+,.0f}"
    return "0" if text in ("+0", "-0") else text


def format_table(diff: Diff) -> str:
    """The changes as an aligned text table: change, detail, effect on the period total, then the total."""
    head = ("change", "detail", f"effect on the period total ({diff.currency})", "")
    rows = [(printable(f"{c.kind} {c.key}"), printable(c.detail), _signed(c.delta), printable(c.note))
            for c in diff.changes] or \
        [("no changes", "", "", "")]
    parts = math.fsum(c.delta for c in diff.changes)
    total = ("total", f"{diff.old_total:,.0f} -> {diff.new_total:,.0f}", _signed(parts), "")
    widths = [max(len(r[i]) for r in (head, *rows, total)) for i in range(3)]
    rule = "-" * (sum(widths) + 4)

    def line(row: tuple[str, str, str, str]) -> list[str]:
        text = f"{row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]:>{widths[2]}}".rstrip()
        return [text] + ([f"{'':<{widths[0]}}  note: {row[3]}"] if row[3] else [])

    out = [f"Changes from {printable(diff.old_name)} to {printable(diff.new_name)}", *line(head), rule]
    for row in rows:
        out += line(row)
    out += [rule, *line(total)]
    if diff.budget is not None:
        out.append(f"Against the budget of {diff.budget:,.0f} {diff.currency} (Budgets, the whole plan): old "
                   f"{_signed(diff.old_total - diff.budget)}, new {_signed(diff.new_total - diff.budget)}"
                   + (" (over)" if diff.new_total > diff.budget else " (within)"))
    return "\n".join(out + [f"Note: {printable(n)}" for n in diff.notes])


def write_diff_workbook(diff: Diff, path: Path) -> Path:
    """Write a `Diff` sheet: the changes, their sum as a formula, and a check that they add up."""
    path = Path(path)
    buffer = io.BytesIO()
    _write_diff_sheet(diff, buffer)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(buffer.getvalue())
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path


def cell_text(text: str) -> str:
    """Text as a cell holds it: whole when it fits Excel's 32,767 characters (UTF-16 units), else cut with a note at
    its end that says how much was cut and where the whole text is (xlsxwriter would cut it without a word)."""
    total = text_length(text)
    if total <= XLS_STRMAX:
        return text

    def note(n: int) -> str:
        return f" [... {n:,} more characters cut: `budgetgen diff` prints all]"

    budget = XLS_STRMAX - text_length(note(total))  # the note is never longer than with the whole count
    cut = text[:budget]
    excess = text_length(cut) - budget  # characters beyond the BMP count two units: drop as many characters
    if excess > 0:
        cut = cut[:-excess]
    return cut + note(total - text_length(cut))


def _write_diff_sheet(diff: Diff, target: io.BytesIO) -> None:
    wb = xlsxwriter.Workbook(target, {"in_memory": True, "strings_to_formulas": False, "strings_to_numbers": False,
                                      "strings_to_urls": False})
    f = Formats(wb, diff.currency)
    ws = wb.add_worksheet("Diff", Sheet)
    headers = ["change", "item", "detail", f"effect on the period total ({diff.currency})", "note"]
    for col, (text, width) in enumerate(zip(headers, (16, 24, 70, 18, 60))):
        ws.write_string(0, col, text, f.header)
        ws.set_column(col, col, width)
    for r, c in enumerate(diff.changes, start=1):
        for col, text in enumerate((c.kind, c.key, c.detail)):
            ws.write_string(r, col, cell_text(text))
        ws.write_number(r, 3, c.delta, f.get("calc", "money"))
        ws.write_string(r, 4, cell_text(c.note))
    if not diff.changes:
        ws.write_string(1, 0, "no changes")
    last = max(1, len(diff.changes))  # 0-based row of the last change
    deltas = f"D2:D{last + 1}"
    parts = math.fsum(c.delta for c in diff.changes)
    total, old, new, tol, check = (last + k for k in (1, 3, 4, 5, 6))
    ws.write_string(total, 0, "total change", f.bold)
    ws.write_formula(total, 3, f"=SUM({deltas})", f.get("total", "money"), parts)
    for row, label, name, value in ((old, "old period total", diff.old_name, diff.old_total),
                                    (new, "new period total", diff.new_name, diff.new_total)):
        ws.write_string(row, 0, label)
        ws.write_string(row, 1, name)
        ws.write_number(row, 3, value, f.get("calc", "money"))
    ws.write_string(tol, 0, "check tolerance")
    ws.write_string(tol, 2, "relative tolerance of the check below")
    ws.write_number(tol, 3, CHECK_TOLERANCE, f.get("input", "General"))
    ws.write_string(check, 0, "changes add up", f.bold)
    ws.write_string(check, 2, "the effects add up to new - old period total")
    gap = f"D{new + 1}-D{old + 1}"
    ok = abs(parts - diff.total_change) <= CHECK_TOLERANCE * max(1, abs(diff.total_change))
    ws.write_formula(check, 3, f"=ABS(SUM({deltas})-({gap}))<=D{tol + 1}*MAX(1,ABS({gap}))", f.get("total"), ok)
    for i, note in enumerate(diff.notes, start=check + 2):
        ws.write_string(i, 0, "note")
        ws.write_string(i, 2, note)
    ws.freeze_panes(1, 0)
    ws.autofilter(0, 0, last, len(headers) - 1)
    wb.close()
