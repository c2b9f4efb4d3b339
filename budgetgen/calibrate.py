"""`budgetgen calibrate`: fit each GPU's bandwidth and matmul efficiency, and the MFU settings, to a user's
measured runs (reads their CSV, writes the fitted GPUs and Settings rows).

A run is pushed through the same calculated columns as a Tasks row (columns.evaluate), so a fitted figure means
what it means in a plan. Per GPU, the two efficiencies minimise the sum of squared log ratios (engine /
measured) of that GPU's serving runs; then `mfu` and `lora_mfu` minimise those of the training runs on the fitted
cards. Coordinate descent over a grid: a figure the runs do not constrain (no bandwidth-bound run, say) stays
where it was.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from .catalog import gpu_record
from .columns import evaluate, evaluate_task
from .errors import Code, InputError, Problem, printable
from .i18n import Message
from .model import Gpu, Settings
from .models import ModelCatalog
from .price_files import table_rows
from .reader import Collector, read_rows
from .records import SERVING_METHODS, TRAINING_METHODS
from .schema import GPU_COLUMNS, MAX_CARDS, SETTINGS_BY_KEY, TASK_COLUMNS, TRAIN_PRECISIONS, Column, Setting, Value

KINDS = ("serve", "train")
MEASURED_COLUMNS = ("kind", "model", "gpu", "cards", "method", "train_precision", "kv_cache_dtype", "prompt",
                    "output", "concurrency", "tokens", "measured")
if TYPE_CHECKING:
    from _typeshed import DataclassInstance
_D = TypeVar("_D", bound="DataclassInstance")


def _bounds(declared: Column | Setting) -> tuple[float, float]:
    """A fitted figure's bounds, as the schema declares them (both, for every figure fitted)."""
    if declared.minimum is None or declared.maximum is None:
        raise ValueError(f"{declared}: a fitted figure needs both bounds")
    return declared.minimum, declared.maximum


def _replaced(obj: _D, values: Mapping[str, float]) -> _D:
    """`obj` with the fitted figures `values` (float fields by name). dataclasses.replace with keys known only at run
    time: mypy would check the floats against every field."""
    return dataclasses.replace(obj, **values)


# Where each efficiency may go: the GPUs sheet's bounds of the column.
BOUNDS = {c.name: _bounds(c) for c in GPU_COLUMNS if c.name in ("bandwidth_efficiency", "matmul_efficiency")}
GRID_STEPS = (0.05, 0.01)  # a coarse pass, then a fine one around the best
_MONTH = "2026-01"  # any month: a run's plan month does not change its speed


@dataclass(frozen=True)
class MeasuredRun:
    """One measured run: serving output tokens/s of a replica, or training wall-clock hours on `cards`."""

    line: int
    kind: str
    model: str
    gpu: str
    cards: int
    method: str | None
    measured: float
    train_precision: str | None = None
    kv_cache_dtype: str | None = None
    prompt: float | None = None
    output: float | None = None
    concurrency: float | None = None
    tokens: float | None = None
    measured_cell: str = ""  # where `measured` was read, e.g. L2
    file: str = ""  # the file it was read from (problems name it)


@dataclass(frozen=True)
class Fit:
    """The fitted GPUs and every run's ratio (engine / measured) before and after."""

    gpus: tuple[Gpu, ...]
    runs: tuple[MeasuredRun, ...]
    before: tuple[float, ...]
    after: tuple[float, ...]
    settings: dict[str, float] = dataclasses.field(default_factory=dict)  # the MFU settings that moved
    settings_source: str = ""
    warnings: tuple[Message, ...] = ()  # fits that stopped at a bound that is no physical limit

    @staticmethod
    def error(ratios) -> float:
        """Sum of squared log ratios: what the fit minimises."""
        return math.fsum(math.log(r) ** 2 for r in ratios)


C = Column
RUN_COLUMNS: tuple[Column, ...] = (
    C("kind", "choice", required=True, choices=KINDS, help="serve or train"),
    C("model", "text", required=True, help="a catalog model (`budgetgen models`)"),
    C("gpu", "text", required=True, help="a catalog GPU (`budgetgen catalog`)"),
    C("cards", "count", "cards", required=True, positive=True, maximum=MAX_CARDS,
      help="cards of the serving replica or the training run"),
    C("method", "choice", choices=TRAINING_METHODS + SERVING_METHODS, help="serving precision or training method"),
    C("train_precision", "choice", choices=TRAIN_PRECISIONS, help="training matmul precision"),
    C("kv_cache_dtype", "choice", choices=("fp16", "fp8"), help="KV-cache precision"),
    C("prompt", "number", "tokens", minimum=0, help="input tokens per request"),
    C("output", "number", "tokens", positive=True, help="output tokens per request (serve runs)"),
    C("concurrency", "count", "sequences", positive=True, help="sequences decoded together"),
    C("tokens", "number", "tokens", positive=True, help="tokens trained (train runs)"),
    C("measured", "number", "tokens/s or hours", required=True, positive=True,
      help="serve: output tokens/s of the replica; train: wall-clock hours"),
)
assert tuple(c.name for c in RUN_COLUMNS) == MEASURED_COLUMNS
NEEDS = {"serve": "output", "train": "tokens"}
METHODS = {"serve": SERVING_METHODS, "train": TRAINING_METHODS}
CONTRADICTION = 2.0  # two runs alike in every column but `measured` that differ by more than this factor


def read_measured(path: Path, models: ModelCatalog, gpus: dict[str, Gpu]) -> list[MeasuredRun]:
    """The runs of a measured-runs CSV or xlsx (columns MEASURED_COLUMNS), parsed as the input sheets are (no NaN,
    no fraction of a card, no unknown method), every problem collected first and named by file and cell."""
    path = Path(path)
    name = path.name
    out = Collector()
    records = read_rows(iter(table_rows(path)), name, RUN_COLUMNS, out)
    runs: list[MeasuredRun] = []
    seen: dict[MeasuredRun, MeasuredRun] = {}
    for rec in records:
        v, cell = rec.values, rec.cells
        for column in RUN_COLUMNS:
            if column.required and column.name not in v and column.name in cell \
                    and not any(p.cell == cell[column.name] for p in out.problems):
                out.add(Code.REQUIRED, name, cell[column.name], Message("required", column=column.name,
                                                                        help=column.help))
        kind: Value = v.get("kind")
        if kind is not None:
            needed = NEEDS[kind]
            if needed not in v and not any(p.cell == cell.get(needed) for p in out.problems):
                out.add(Code.REQUIRED, name, cell.get(needed, f"A{rec.row}"), Message(
                    "run_needs", column=needed, kind=kind))
            if v.get("method") is not None and v["method"] not in METHODS[kind]:
                out.add(Code.UNKNOWN_VALUE, name, cell["method"], Message(
                    "run_method", method=v["method"], kind=kind, allowed=METHODS[kind]))
        if "model" in v and v["model"] not in models:
            out.add(Code.UNKNOWN_VALUE, name, cell["model"], Message("run_unknown_model", model=v["model"]))
        if "gpu" in v and v["gpu"].lower() not in gpus:
            out.add(Code.UNKNOWN_VALUE, name, cell["gpu"], Message("run_unknown_gpu", gpu=v["gpu"]))
        mine = set(cell.values())
        if any(p.cell in mine for p in out.problems) or any(c.required and c.name not in v for c in RUN_COLUMNS):
            continue
        run = MeasuredRun(
            rec.row, kind, models.find(v["model"]).name, gpus[v["gpu"].lower()].name, v["cards"], v.get("method"),
            v["measured"], v.get("train_precision"), v.get("kv_cache_dtype"), v.get("prompt"), v.get("output"),
            v.get("concurrency"), v.get("tokens"), cell["measured"], name)
        alike = dataclasses.replace(run, line=0, measured=0.0, measured_cell="")
        first = seen.setdefault(alike, run)
        if first is not run and max(run.measured, first.measured) > CONTRADICTION * min(run.measured, first.measured):
            out.add(Code.OUT_OF_RANGE, name, cell["measured"], Message(
                "run_contradicts", value=run.measured, first=first.measured, cell=first.measured_cell,
                factor=CONTRADICTION))
        runs.append(run)
    if not records and not out.problems:
        out.add(Code.REQUIRED, name, "A2", Message("no_runs"))
    if out.problems:
        raise InputError(out.problems)
    return runs


def _task_inputs(run: MeasuredRun) -> dict:
    """A Tasks row for the run, every other column at its default."""
    row = {c.name: c.default for c in TASK_COLUMNS} | {
        "task_id": f"line {run.line}", "model": run.model, "gpu": run.gpu, "cards": run.cards, "tier": "on_demand",
        "start_month": _MONTH, "end_month": _MONTH}
    if run.kind == "serve":
        return row | {"kind": "inference", "method": run.method or "fp16", "prompt_tokens": run.prompt,
                      "tokens_per_request": run.output, "concurrency": run.concurrency, "requests_per_day": 1}
    return row | {"kind": "pretrain" if (run.method or "full") == "full" else "finetune",
                  "method": run.method or "full", "train_precision": run.train_precision,
                  "train_tokens": run.tokens, "deadline_days": 1e6}


def _row(run: MeasuredRun, gpu: Gpu, settings: Settings, models: ModelCatalog) -> dict:
    s = dataclasses.replace(settings, plan_months=(_MONTH,),
                            kv_cache_dtype=run.kv_cache_dtype or settings.kv_cache_dtype)
    model = models.find(run.model)
    inputs = _task_inputs(run)
    return evaluate(inputs, s, gpu, model, evaluate_task(inputs, s, model))


def predict(run: MeasuredRun, gpu: Gpu, settings: Settings, models: ModelCatalog) -> float:
    """The engine's figure for a run: output tokens/s of the replica, or the run's compute hours (wall clock)."""
    row = _row(run, gpu, settings, models)
    return row["tokens_per_sec_used"] if run.kind == "serve" else row["compute_hours"]


def _ratios(runs, gpu: Gpu, settings: Settings, models: ModelCatalog) -> list[float]:
    return [predict(r, gpu, settings, models) / r.measured for r in runs]


def _descend(start: dict[str, float], bounds: dict[str, tuple[float, float]],
             error: Callable[[dict[str, float]], float]) -> dict[str, float]:
    """The figures (from `start`, within `bounds`) that minimise `error`: coordinate descent over a coarse, then a
    fine grid. A move must lower the error, so a figure the runs do not constrain stays at its start."""
    best, best_error = dict(start), error(start)
    for step in GRID_STEPS:
        for _ in range(3):  # passes: each figure given the others
            moved = False
            for name, (low, high) in bounds.items():
                span = high - low if step == GRID_STEPS[0] else 10 * step
                reach = round(span / step)
                for value in sorted({round(min(high, max(low, best[name] + i * step)), 4)
                                     for i in range(-reach, reach + 1)}):
                    trial = best | {name: value}
                    trial_error = error(trial)
                    if trial_error < best_error - 1e-12:
                        best, best_error, moved = trial, trial_error, True
            if not moved:
                break
    return {name: value for name, value in best.items() if value != start[name]}


def _fit_gpu(gpu: Gpu, runs, settings: Settings, models: ModelCatalog) -> tuple[Gpu, dict[str, float]]:
    """A GPU's bandwidth and matmul efficiency fitted to its serving runs (blank figures start at what they stand
    for: decode_efficiency and 1), and the figures that moved."""
    start = {"bandwidth_efficiency": gpu.bandwidth_efficiency or settings.decode_efficiency,
             "matmul_efficiency": gpu.matmul_efficiency or 1.0}

    def error(values):
        return Fit.error(_ratios(runs, _replaced(gpu, values), settings, models))
    moved = _descend(start, BOUNDS, error)
    return _replaced(gpu, moved), moved


# Upper bounds that are physical limits (all of the memory bandwidth, all of the peak): runs that need more were
# mismeasured. matmul_efficiency's 1.5 is no such limit (kernels past the H100's share of the datasheet peak): the
# fit stopping there under-states the card, a warning. Every lower bound (1% of bandwidth, 0.1% MFU) is a slip.
PHYSICAL_LIMITS = frozenset(("bandwidth_efficiency", "mfu", "lora_mfu"))


def _at_bounds(moved: dict[str, float], bounds: dict[str, tuple[float, float]], runs, what: str,
               warnings: list[Message]) -> list[Problem]:
    """A figure the fit pushed to the edge of where it may go: the runs ask for more (a card faster than its
    memory bandwidth, an MFU of 0.1%) than any card or setting gives, so they cannot be explained; one problem,
    at the first run's measured cell, naming the rows (a warning where the edge is no physical limit)."""
    out = []
    for figure, value in moved.items():
        low, high = bounds[figure]
        if value in (low, high):
            first = runs[0]
            message = Message("fit_at_bound", what=what, figure=figure, side=Message("side_above" if value == high else "side_below"),
                              bound=value, rows=", ".join(str(r.line) for r in runs))
            if value == high and figure not in PHYSICAL_LIMITS:
                warnings.append(Message("fit_at_soft_bound", file=first.file, cell=first.measured_cell,
                                        problem=message))
            else:
                out.append(Problem(Code.OUT_OF_RANGE, first.file, first.measured_cell, message))
    return out


def _unpredictable(runs, gpus: dict[str, Gpu], settings: Settings, models: ModelCatalog) -> list[float]:
    """The engine's ratio of each run to its measurement; InputError at the runs the engine cannot model (a model
    that does not fit the cards: no speed to compare)."""
    ratios, problems = [], []
    for run in runs:
        try:
            row = _row(run, gpus[run.gpu.lower()], settings, models)
            value = row["tokens_per_sec_used"] if run.kind == "serve" else row["compute_hours"]
            fits = (row.get("cards_min") or 0) <= run.cards
        except (ArithmeticError, ValueError):
            value, fits = None, False
        if not fits or value is None or not math.isfinite(value) or value <= 0:
            problems.append(Problem(Code.DOES_NOT_FIT, run.file, run.measured_cell, Message(
                "run_not_modelled", model=run.model, cards=run.cards, gpu=run.gpu, kind=run.kind)))
        else:
            ratios.append(value / run.measured)
    if problems:
        raise InputError(problems)
    return ratios


def _fit_settings(runs, gpus: dict[str, Gpu], settings: Settings, models: ModelCatalog) -> dict[str, float]:
    """The MFU settings fitted to the training runs, on the fitted cards: `mfu` to full training and pretraining,
    `lora_mfu` to LoRA/QLoRA; only those the runs exercise."""
    trained = [r for r in runs if r.kind == "train"]
    keys = {"lora_mfu" if r.method in ("lora", "qlora") else "mfu" for r in trained}
    if not keys:
        return {}
    start = {k: getattr(settings, k) for k in sorted(keys)}
    bounds = {k: _bounds(SETTINGS_BY_KEY[k]) for k in start}

    def error(values):
        s = _replaced(settings, values)
        return Fit.error(predict(r, gpus[r.gpu], s, models) / r.measured for r in trained)
    return _descend(start, bounds, error)


def calibrate(runs: list[MeasuredRun], gpus: dict[str, Gpu], settings: Settings, models: ModelCatalog,
              source: str) -> Fit:
    """Fit each GPU the serving runs name, then the MFU settings to the training runs on those GPUs; `source`
    becomes the fitted rows' source ("calibrated from {n} runs on DATE")."""
    if not runs:
        raise InputError([Problem(Code.REQUIRED, "", "", Message("no_runs"))])
    before = _unpredictable(runs, gpus, settings, models)
    fitted = {name: gpus[name.lower()] for name in dict.fromkeys(r.gpu for r in runs)}
    problems: list[Problem] = []
    warnings: list[Message] = []
    for name, gpu in fitted.items():
        served = [r for r in runs if r.gpu == name and r.kind == "serve"]
        if served:
            fit, moved = _fit_gpu(gpu, served, settings, models)
            problems += _at_bounds(moved, BOUNDS, served, name, warnings)
            fitted[name] = dataclasses.replace(fit, source=f"{source.format(n=len(served))}; {gpu.source}".strip("; "))
    tuned = _fit_settings(runs, fitted, settings, models)
    trained_runs = [r for r in runs if r.kind == "train"]
    for key, value in tuned.items():
        on = [r for r in trained_runs if (key == "lora_mfu") == (r.method in ("lora", "qlora"))]
        problems += _at_bounds({key: value}, {key: _bounds(SETTINGS_BY_KEY[key])},
                               on, key, warnings)
    if problems:
        raise InputError(problems)
    final = _replaced(settings, tuned)
    after = [predict(r, fitted[r.gpu], final, models) / r.measured for r in runs]
    trained = sum(r.kind == "train" for r in runs)
    return Fit(tuple(fitted.values()), tuple(runs), tuple(before), tuple(after), tuned,
               source.format(n=trained), tuple(warnings))


def format_fit(fit: Fit) -> str:
    """Each run's ratio before and after, the error, and the fitted figures, as the command prints them."""
    lines = [f"{'line':<6}{'kind':<7}{'model':<20}{'gpu':<12}{'before':>8}{'after':>8}"]
    for run, b, a in zip(fit.runs, fit.before, fit.after, strict=True):
        lines.append(f"{run.line:<6}{run.kind:<7}{printable(run.model):<20}{printable(run.gpu):<12}{b:>8.2f}{a:>8.2f}")
    lines.append(f"sum of squared log ratios: {Fit.error(fit.before):.3f} before, {Fit.error(fit.after):.3f} after")
    for g in fit.gpus:
        lines.append(f"{g.name}: bandwidth_efficiency {g.bandwidth_efficiency if g.bandwidth_efficiency else '-'}, "
                     f"matmul_efficiency {g.matmul_efficiency if g.matmul_efficiency else '-'}")
    for key, value in fit.settings.items():
        lines.append(f"setting {key}: {value:g}")
    lines += [f"Warning: {printable(w)}" for w in fit.warnings]
    return "\n".join(lines) + "\n"


def write_fit(fit: Fit, path: Path) -> None:
    """The fitted GPUs as a GPUs sheet and the fitted settings as a Settings sheet: rows an input workbook's
    sheets of those names take as they are."""
    import xlsxwriter

    book = xlsxwriter.Workbook(str(path))
    sheet = book.add_worksheet("GPUs")
    records = [gpu_record(g) for g in fit.gpus]
    header = book.add_format({"bold": True})
    for col, name in enumerate(c.name for c in GPU_COLUMNS):
        sheet.write_string(0, col, name, header)
        for row, record in enumerate(records, start=1):
            value = record[name]
            if value is not None:
                sheet.write(row, col, value)
    settings = book.add_worksheet("Settings")
    for col, name in enumerate(("setting", "value", "note")):
        settings.write_string(0, col, name, header)
    for row, (key, value) in enumerate(fit.settings.items(), start=1):
        settings.write_row(row, 0, (key, value, fit.settings_source))
    book.close()
