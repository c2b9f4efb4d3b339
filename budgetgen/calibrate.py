"""`budgetgen calibrate`: fit each GPU's bandwidth and matmul efficiency, and the MFU settings, to a user's
measured runs (reads their CSV, writes the fitted GPUs and Settings rows).

A run is pushed through the same calculated columns as a Tasks row (columns.evaluate), so a fitted figure means
what it means in a plan. Per GPU, the two efficiencies minimise the sum of squared log ratios (engine /
measured) of that GPU's serving runs; then `mfu` and `lora_mfu` minimise those of the training runs on the fitted
cards. Coordinate descent over a grid: a figure the runs do not constrain (no bandwidth-bound run, say) stays
where it was.
"""

from __future__ import annotations

import csv
import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .catalog import gpu_record
from .columns import evaluate, evaluate_task
from .errors import Code, InputError, Problem, printable
from .model import Gpu, Settings
from .models import ModelCatalog
from .schema import GPU_COLUMNS, SETTINGS_BY_KEY, TASK_COLUMNS

KINDS = ("serve", "train")
MEASURED_COLUMNS = ("kind", "model", "gpu", "cards", "method", "train_precision", "kv_cache_dtype", "prompt",
                    "output", "concurrency", "tokens", "measured")
# Where each efficiency may go: the GPUs sheet's bounds of the column.
BOUNDS = {c.name: (c.minimum, c.maximum) for c in GPU_COLUMNS if c.name in ("bandwidth_efficiency", "matmul_efficiency")}
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


@dataclass(frozen=True)
class Fit:
    """The fitted GPUs and every run's ratio (engine / measured) before and after."""

    gpus: tuple[Gpu, ...]
    runs: tuple[MeasuredRun, ...]
    before: tuple[float, ...]
    after: tuple[float, ...]
    settings: dict[str, float] = dataclasses.field(default_factory=dict)  # the MFU settings that moved
    settings_source: str = ""

    @staticmethod
    def error(ratios) -> float:
        """Sum of squared log ratios: what the fit minimises."""
        return math.fsum(math.log(r) ** 2 for r in ratios)


def _number(text: str) -> float | None:
    return float(text) if text.strip() else None


def read_measured(path: Path, models: ModelCatalog, gpus: dict[str, Gpu]) -> list[MeasuredRun]:
    """The runs of a measured-runs CSV (columns MEASURED_COLUMNS), every problem collected first."""
    problems, runs = [], []
    with open(path, newline="", encoding="utf-8-sig") as fh:
        for line, row in enumerate(csv.DictReader(fh), start=2):
            row = {k.strip().lower(): (v or "").strip() for k, v in row.items() if k}

            def bad(code: Code, column: str, message: str, line=line) -> None:
                problems.append(Problem(code, path.name, f"row {line}", f"{column}: {message}"))
            before = len(problems)
            if row.get("kind") not in KINDS:
                bad(Code.UNKNOWN_VALUE, "kind", f'"{row.get("kind")}" is not a kind of run (serve or train)')
                continue
            if row.get("model", "") not in models:
                bad(Code.UNKNOWN_VALUE, "model", f'"{row.get("model")}" is not a catalog model (`budgetgen models`)')
            if row.get("gpu", "").lower() not in gpus:
                bad(Code.UNKNOWN_VALUE, "gpu", f'"{row.get("gpu")}" is not a catalog GPU (`budgetgen catalog`)')
            numbers = {}
            for column in ("cards", "prompt", "output", "concurrency", "tokens", "measured"):
                try:
                    numbers[column] = _number(row.get(column, ""))
                except ValueError:
                    bad(Code.NOT_A_NUMBER, column, f'"{row.get(column)}" is not a number')
            needed = ("cards", "measured") + (("output",) if row["kind"] == "serve" else ("tokens",))
            for column in needed:
                if column in numbers and (numbers[column] is None or numbers[column] <= 0):
                    bad(Code.NOT_POSITIVE, column, f"a positive number is required for a {row['kind']} run")
            if len(problems) > before:
                continue
            runs.append(MeasuredRun(
                line, row["kind"], models.find(row["model"]).name, gpus[row["gpu"].lower()].name, int(numbers["cards"]),
                row.get("method") or None, numbers["measured"], row.get("train_precision") or None,
                row.get("kv_cache_dtype") or None, numbers["prompt"], numbers["output"], numbers["concurrency"],
                numbers["tokens"]))
    if problems:
        raise InputError(problems)
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


def predict(run: MeasuredRun, gpu: Gpu, settings: Settings, models: ModelCatalog) -> float:
    """The engine's figure for a run: output tokens/s of the replica, or the run's compute hours (wall clock)."""
    s = dataclasses.replace(settings, plan_months=(_MONTH,),
                            kv_cache_dtype=run.kv_cache_dtype or settings.kv_cache_dtype)
    model = models.find(run.model)
    inputs = _task_inputs(run)
    row = evaluate(inputs, s, gpu, model, evaluate_task(inputs, s, model))
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


def _fit_gpu(gpu: Gpu, runs, settings: Settings, models: ModelCatalog) -> Gpu:
    """A GPU's bandwidth and matmul efficiency fitted to its serving runs (blank figures start at what they stand
    for: decode_efficiency and 1)."""
    start = {"bandwidth_efficiency": gpu.bandwidth_efficiency or settings.decode_efficiency,
             "matmul_efficiency": gpu.matmul_efficiency or 1.0}

    def error(values):
        return Fit.error(_ratios(runs, dataclasses.replace(gpu, **values), settings, models))
    return dataclasses.replace(gpu, **_descend(start, BOUNDS, error))


def _fit_settings(runs, gpus: dict[str, Gpu], settings: Settings, models: ModelCatalog) -> dict[str, float]:
    """The MFU settings fitted to the training runs, on the fitted cards: `mfu` to full training and pretraining,
    `lora_mfu` to LoRA/QLoRA; only those the runs exercise."""
    trained = [r for r in runs if r.kind == "train"]
    keys = {"lora_mfu" if r.method in ("lora", "qlora") else "mfu" for r in trained}
    if not keys:
        return {}
    start = {k: getattr(settings, k) for k in sorted(keys)}
    bounds = {k: (SETTINGS_BY_KEY[k].minimum, SETTINGS_BY_KEY[k].maximum) for k in start}

    def error(values):
        s = dataclasses.replace(settings, **values)
        return Fit.error(predict(r, gpus[r.gpu], s, models) / r.measured for r in trained)
    return _descend(start, bounds, error)


def calibrate(runs: list[MeasuredRun], gpus: dict[str, Gpu], settings: Settings, models: ModelCatalog,
              source: str) -> Fit:
    """Fit each GPU the serving runs name, then the MFU settings to the training runs on those GPUs; `source`
    becomes the fitted rows' source ("calibrated from {n} runs on DATE")."""
    before = [predict(r, gpus[r.gpu.lower()], settings, models) / r.measured for r in runs]
    fitted = {name: gpus[name.lower()] for name in dict.fromkeys(r.gpu for r in runs)}
    for name, gpu in fitted.items():
        served = [r for r in runs if r.gpu == name and r.kind == "serve"]
        if served:
            fit = _fit_gpu(gpu, served, settings, models)
            fitted[name] = dataclasses.replace(fit, source=f"{source.format(n=len(served))}; {gpu.source}".strip("; "))
    tuned = _fit_settings(runs, fitted, settings, models)
    final = dataclasses.replace(settings, **tuned)
    after = [predict(r, fitted[r.gpu], final, models) / r.measured for r in runs]
    trained = sum(r.kind == "train" for r in runs)
    return Fit(tuple(fitted.values()), tuple(runs), tuple(before), tuple(after), tuned,
               source.format(n=trained))


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
