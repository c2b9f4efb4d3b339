"""`budgetgen calibrate`: fit each GPU's bandwidth and matmul efficiency, and the settings of each workload and
precision, to a user's measured runs (reads their CSV, writes the fitted GPUs and Settings rows).

A run is pushed through the same calculated columns as a Tasks row (columns.evaluate), so a fitted figure means
what it means in a plan. Per GPU, the two efficiencies minimise the sum of squared log ratios (engine /
measured) of that GPU's serving runs; a card's matmul efficiency fitted so stays out of training (its
training_efficiency keeps what training had). Then each setting of FIT_SETTINGS minimises those of its own runs on
the fitted cards: `kv_read_efficiency` the serving runs, `mfu` bf16 full training, `train_fp8_efficiency` FP8 and
`train_fp4_efficiency` FP4 full training (an FP4 run on a card without an FP4 unit trains at the FP8 figure, so it
moves neither), `lora_mfu` LoRA/QLoRA. Memory runs (measured peak GB on each card of a fine-tune or training run) fit
the memory rule's figures together, as a card's two are (_fit_memory): LoRA/QLoRA's fixed costs (`lora_trainable`,
`lora_workspace_gb`) and the bytes a layer keeps without checkpointing (`layer_activation_bytes`, QLoRA's
`qlora_activation_bytes` on top). Coordinate descent over a grid: a figure the runs do not constrain (no
bandwidth-bound run, say) stays where it was. Every bound is a physical limit (all of the bandwidth, all of the peak,
no less memory than nothing kept, no more than the card the run was measured on holds): a fit the runs take to one
and past it is refused, naming the runs. Each fitted figure comes with its standard error;
one that rests on a single run is a warning. The catalogs and settings are the built-in ones, or an input
workbook's (its GPUs and Models sheets over the catalogs, its Settings).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from ..catalog.gpus import gpu_record
from ..catalog.models import ModelCatalog
from ..catalog.price_files import table_rows
from ..core.errors import Code, InputError, Problem, printable
from ..core.i18n import Message
from ..core.inputs import Gpu, Inputs, Settings
from ..core.records import SERVING_METHODS, TRAINING_METHODS
from ..core.schema import (
    CHECKPOINTING,
    GPU_COLUMNS,
    MAX_CARDS,
    SETTINGS_BY_KEY,
    TASK_COLUMNS,
    TRAIN_PRECISIONS,
    Column,
    Setting,
    Value,
)
from ..core.values import BadValue, parse_number
from ..io.reader import Collector, read_inputs, read_rows
from .columns import evaluate, evaluate_task
from .serving import KS

KINDS = ("serve", "train", "mem")
MEASURED_COLUMNS = ("kind", "model", "gpu", "cards", "method", "train_precision", "kv_cache_dtype", "prompt",
                    "output", "concurrency", "tokens", "measured", "micro_batch_tokens", "activation_checkpointing")
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


# Where each efficiency may go: the GPUs sheet's bounds of the column, and for the matmul efficiency no further than
# the serving matmuls reaching all of the card's peak (gpu_bounds).
BOUNDS = {c.name: _bounds(c) for c in GPU_COLUMNS if c.name in ("bandwidth_efficiency", "matmul_efficiency")}
# The bands the published checks hold a run in (tests/test_published_*.py): engine / measured.
# Memory: never under-stated by more than 5% (a card the plan picks must not run out), over-stated by at most 35%
# (tests/test_published_memory.py).
BANDS = {"serve": (0.67, 1.5), "train": (0.75, 1.35), "mem": (0.95, 1.35)}
_SIZE = next(c for c in TASK_COLUMNS if c.name == "model_params_b")  # a typed size: 405B, 7.5B or 70
GRID_STEPS = (0.05, 0.01)  # a coarse pass, then a fine one around the best
NUDGE = 1.1  # a card's figure times this, to see how much its runs respond
# How far a catalog figure or a default setting may be from the truth, one standard deviation in log terms (10%): the
# catalog and the defaults were themselves fitted on published runs. Chosen on the published held-out check (docs/
# models.md, "v4 calibrate"): 30%, 20%, 15%, 10% left the held-out half's error at 1.002, 0.913, 0.825, 0.775 of 0.997.
PRIOR_SPREAD = math.log(1.1)
MIN_ELASTICITY = 0.05  # a figure whose runs move less than 5% of its own change is not fitted on them
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
    params_b: float | None = None  # a model typed as its size (405B): no catalog row, architecture unknown
    micro_batch_tokens: int | None = None  # mem runs: tokens of one micro-batch on a card
    activation_checkpointing: str | None = None  # mem runs: yes or no; None: the setting's


@dataclass(frozen=True)
class Fit:
    """The fitted GPUs and every run's ratio (engine / measured) before and after."""

    gpus: tuple[Gpu, ...]
    runs: tuple[MeasuredRun, ...]
    before: tuple[float, ...]
    after: tuple[float, ...]
    settings: dict[str, float] = dataclasses.field(default_factory=dict)  # the MFU settings that moved
    settings_source: str = ""
    warnings: tuple[Message, ...] = ()  # figures that rest on one run
    # each fitted figure's standard error ("H100 80G bandwidth_efficiency", "mfu"); None: one run, no spread
    uncertainty: dict[str, float | None] = dataclasses.field(default_factory=dict)

    @staticmethod
    def error(ratios) -> float:
        """Sum of squared log ratios: what the fit minimises."""
        return math.fsum(math.log(r) ** 2 for r in ratios)


C = Column
RUN_COLUMNS: tuple[Column, ...] = (
    C("kind", "choice", required=True, choices=KINDS, help="serve, train or mem (a peak-memory run)"),
    C("model", "text", required=True,
      help="a catalog model (`budgetgen models`) or one of --input's Models sheet, or a size such as 405B"),
    C("gpu", "text", required=True, help="a catalog GPU (`budgetgen catalog`) or one of --input's GPUs sheet"),
    C("cards", "count", "cards", required=True, positive=True, maximum=MAX_CARDS,
      help="cards of the serving replica or the training run (mem: the run's cards, `measured` on each)"),
    C("method", "choice", choices=TRAINING_METHODS + SERVING_METHODS, help="serving precision or training method"),
    C("train_precision", "choice", choices=TRAIN_PRECISIONS, help="training matmul precision"),
    C("kv_cache_dtype", "choice", choices=("fp16", "fp8"), help="KV-cache precision"),
    C("prompt", "number", "tokens", minimum=0, help="input tokens per request"),
    C("output", "number", "tokens", positive=True, help="output tokens per request (serve runs)"),
    C("concurrency", "count", "sequences", positive=True, help="sequences decoded together"),
    C("tokens", "number", "tokens", positive=True, help="tokens trained (train runs)"),
    C("measured", "number", "tokens/s, hours or GB", required=True, positive=True,
      help="serve: output tokens/s of the replica; train: wall-clock hours; mem: peak GB on each card"),
    C("micro_batch_tokens", "count", "tokens", positive=True,
      help="tokens of one micro-batch on a card (mem runs: micro-batch size x sequence length)"),
    C("activation_checkpointing", "choice", choices=CHECKPOINTING,
      help="mem runs: yes or no; blank: the activation_checkpointing setting"),
)
assert tuple(c.name for c in RUN_COLUMNS) == MEASURED_COLUMNS
NEEDS = {"serve": "output", "train": "tokens", "mem": "micro_batch_tokens"}
METHODS = {"serve": SERVING_METHODS, "train": TRAINING_METHODS, "mem": TRAINING_METHODS}
CONTRADICTION = 2.0  # two runs alike in every column but `measured` that differ by more than this factor


def read_measured(path: Path, models: ModelCatalog, gpus: dict[str, Gpu], input_name: str | None = None
                  ) -> list[MeasuredRun]:
    """The runs of a measured-runs CSV or xlsx (columns MEASURED_COLUMNS), parsed as the input sheets are (no NaN,
    no fraction of a card, no unknown method, no peak memory above the card's), every problem collected first and
    named by file and cell. `models` and `gpus` are the catalogs, with `input_name`'s sheets over them if given."""
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
        size = _typed_size(v["model"]) if "model" in v and v["model"] not in models else None
        if "model" in v and v["model"] not in models and size is None:
            out.add(Code.UNKNOWN_VALUE, name, cell["model"], Message("run_unknown_model", model=v["model"])
                    if input_name is None else Message("run_unknown_model_in", model=v["model"], input=input_name))
        if "gpu" in v and v["gpu"].lower() not in gpus:
            out.add(Code.UNKNOWN_VALUE, name, cell["gpu"], Message("run_unknown_gpu", gpu=v["gpu"])
                    if input_name is None else Message("run_unknown_gpu_in", gpu=v["gpu"], input=input_name))
        elif kind == "mem" and "measured" in v and v["measured"] > _card_gb(gpus[v["gpu"].lower()]):
            card = gpus[v["gpu"].lower()]
            out.add(Code.OUT_OF_RANGE, name, cell["measured"], Message(
                "run_above_card", value=v["measured"], gpu=card.name, card=round(_card_gb(card), 2)))
        mine = set(cell.values())
        if any(p.cell in mine for p in out.problems) or any(c.required and c.name not in v for c in RUN_COLUMNS):
            continue
        run = MeasuredRun(
            rec.row, kind, v["model"].strip() if size else models.find(v["model"]).name, gpus[v["gpu"].lower()].name,
            v["cards"], v.get("method"), v["measured"], v.get("train_precision"), v.get("kv_cache_dtype"),
            v.get("prompt"), v.get("output"), v.get("concurrency"), v.get("tokens"), cell["measured"], name, size,
            v.get("micro_batch_tokens"), v.get("activation_checkpointing"))
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


def read_plan_catalogs(path: Path, today: dt.date | None = None) -> Inputs:
    """An input workbook read as `build` reads it (every sheet checked): its GPUs and Models sheets over the built-in
    catalogs and its Settings are what its runs are fitted with. Its problems name the workbook, as
    [plan.xlsx]Models!B3, beside the runs' file."""
    try:
        return read_inputs(path, today=today)
    except InputError as exc:
        raise InputError([dataclasses.replace(p, sheet=f"[{Path(path).name}]{p.sheet}") for p in exc.problems]) \
            from None


def _card_gb(gpu: Gpu) -> float:
    """All of a card's memory in GB (1e9 bytes): its vram_gb is counted in GiB, as vendors count it."""
    return gpu.vram_gb * KS.GibPerGb


def _typed_size(text: str) -> float | None:
    """A model column that gives a size (405B, 7.5B, 70) instead of a catalog name: billions of parameters."""
    try:
        return parse_number(text, _SIZE)
    except BadValue:
        return None


def _task_inputs(run: MeasuredRun) -> dict:
    """A Tasks row for the run, every other column at its default."""
    model = {"model": None, "model_params_b": run.params_b} if run.params_b is not None else {"model": run.model}
    row = {c.name: c.default for c in TASK_COLUMNS} | {
        "task_id": f"line {run.line}", "gpu": run.gpu, "cards": run.cards, "tier": "on_demand",
        "start_month": _MONTH, "end_month": _MONTH} | model
    if run.kind == "serve":
        return row | {"kind": "inference", "method": run.method or "fp16", "prompt_tokens": run.prompt,
                      "tokens_per_request": run.output, "concurrency": run.concurrency, "requests_per_day": 1}
    if run.kind == "mem":  # its memory: the tokens trained and the deadline do not change it
        return row | {"kind": "finetune", "method": run.method or "full", "train_precision": run.train_precision,
                      "activation_checkpointing": run.activation_checkpointing, "train_tokens": 1e8,
                      "deadline_days": 1e6}
    return row | {"kind": "pretrain" if (run.method or "full") == "full" else "finetune",
                  "method": run.method or "full", "train_precision": run.train_precision,
                  "train_tokens": run.tokens, "deadline_days": 1e6}


def _row(run: MeasuredRun, gpu: Gpu, settings: Settings, models: ModelCatalog) -> dict:
    s = dataclasses.replace(settings, plan_months=(_MONTH,),
                            kv_cache_dtype=run.kv_cache_dtype or settings.kv_cache_dtype,
                            micro_batch_tokens=int(run.micro_batch_tokens or settings.micro_batch_tokens))
    model = None if run.params_b is not None else models.find(run.model)  # a typed size: as a Tasks row gives it
    inputs = _task_inputs(run)
    return evaluate(inputs, s, gpu, model, evaluate_task(inputs, s, model))


def _figure(run: MeasuredRun, row: dict) -> float:
    """The calculated figure a run's measurement compares with: a serving replica's output tokens/s, a training
    run's compute hours (wall clock), or a memory run's GB on each card: the states `vram_gb` less the activations
    sharded over its cards, and the activations every card holds for itself (as `cards_for_memory` shares them)."""
    if run.kind == "serve":
        return row["tokens_per_sec_used"]
    if run.kind == "mem":
        return (row["vram_gb"] - row["activations_gb"]) / run.cards + row["activations_gb"]
    return row["compute_hours"]


def predict(run: MeasuredRun, gpu: Gpu, settings: Settings, models: ModelCatalog) -> float:
    """The engine's figure for a run (_figure)."""
    return _figure(run, _row(run, gpu, settings, models))


def _ratios(runs, gpu: Gpu, settings: Settings, models: ModelCatalog) -> list[float]:
    return [predict(r, gpu, settings, models) / r.measured for r in runs]


def _descend(start: dict[str, float], bounds: dict[str, tuple[float, float]],
             data_error: Callable[[dict[str, float]], float], runs_count: int,
             steps: tuple[float, ...] = GRID_STEPS, units: Mapping[str, float] | None = None, passes: int = 3,
             pattern: bool = False, decimals: int = 4) -> tuple[dict[str, float], dict[str, float]]:
    """The figures (from `start`, within `bounds`) that minimise `data_error` plus a prior: the squared log distance
    from `start` (the catalog's or the setting's figure) over PRIOR_SPREAD squared, weighted by the runs' own residual
    variance (their sum of squared log ratios at the best fit without the prior, over runs less figures). Runs the
    engine explains exactly are fitted exactly; a few scattered runs move a figure less than many. Coordinate descent
    over a coarse, then a fine grid; a move must lower the error, so a figure the runs do not constrain stays put.
    Returns the figures that moved with the prior and without it (where the runs alone take them: a bound reached
    there is the runs' doing). A figure that starts at 0 (no memory kept, say) has no log distance: no prior."""
    free = _grid_descent(start, bounds, data_error, steps, units, passes, pattern, decimals)
    variance = data_error(start | free) / max(1, runs_count - len(start))
    if variance <= 0:
        return free, free
    weight = variance / PRIOR_SPREAD ** 2

    def error(values):
        return data_error(values) + weight * math.fsum(
            (math.log(v / start[k]) ** 2 if v > 0 else math.inf) for k, v in values.items() if start[k] > 0)
    return _grid_descent(start, bounds, error, steps, units, passes, pattern, decimals), free


def _grid_descent(start: dict[str, float], bounds: dict[str, tuple[float, float]],
                  error: Callable[[dict[str, float]], float], steps: tuple[float, ...] = GRID_STEPS,
                  units: Mapping[str, float] | None = None, passes: int = 3, pattern: bool = False,
                  decimals: int = 4) -> dict[str, float]:
    """The figures that moved from `start` to minimise `error`, coordinate by coordinate over `steps` (times each
    figure's unit, 1 unless `units` gives it): the first across the whole of each figure's bounds, each further one
    10 of its steps either side of the best (values to `decimals`); at most `passes` over the figures at each step.
    With `pattern`, a pass that moved is followed along its own direction (Hooke and Jeeves' pattern move), doubling
    while the error falls: figures that trade off (two fixed costs) lie along a valley that moving one coordinate at
    a time crosses slowly."""
    best, best_error = dict(start), error(start)
    for level in steps:
        for _ in range(passes):  # each figure given the others
            moved, before = False, best
            for name, (low, high) in bounds.items():
                step = level * (units or {}).get(name, 1.0)
                span = high - low if level == steps[0] else 10 * step
                reach = round(span / step)
                for value in sorted({round(min(high, max(low, best[name] + i * step)), decimals)
                                     for i in range(-reach, reach + 1)}):
                    trial = best | {name: value}
                    trial_error = error(trial)
                    if trial_error < best_error - 1e-12:
                        best, best_error, moved = trial, trial_error, True
            if not moved:
                break
            stride = 1.0
            while pattern:
                trial = {n: round(min(high, max(low, best[n] + stride * (best[n] - before[n]))), decimals)
                         for n, (low, high) in bounds.items()}
                trial_error = error(trial)
                if trial_error >= best_error - 1e-12:
                    break
                best, best_error, stride = trial, trial_error, 2 * stride
    return {name: value for name, value in best.items() if value != start[name]}


def _elasticity(ratios: Callable[[dict[str, float]], list[float]], start: dict[str, float], figure: str) -> float:
    """How much the runs' engine figures move with `figure`: mean |d ln(engine) / d ln(figure)| over a nudge."""
    base, nudged = ratios(start), ratios(start | {figure: start[figure] / NUDGE})
    return math.fsum(abs(math.log(n / b)) for n, b in zip(nudged, base, strict=True)) / len(base) / math.log(NUDGE)


def gpu_bounds(settings: Settings) -> dict[str, tuple[float, float]]:
    """Where a card's efficiencies may go: the GPUs sheet's bounds, and a matmul efficiency no higher than takes
    the serving matmuls (DecodeMfu, PrefillMfu of the peak) to all of the card's peak."""
    low, high = BOUNDS["matmul_efficiency"]
    return BOUNDS | {"matmul_efficiency": (low, min(high, round(1 / max(settings.decode_mfu, settings.prefill_mfu),
                                                                      2)))}


def _fit_gpu(gpu: Gpu, runs, settings: Settings, models: ModelCatalog
             ) -> tuple[Gpu, dict[str, float], dict[str, float]]:
    """A GPU's bandwidth and matmul efficiency fitted to its serving runs (blank figures start at what they stand
    for: decode_efficiency and 1), the figures that moved, and where the runs alone took them (_descend). A matmul
    efficiency that moved leaves training where it was: the card's training_efficiency keeps what training had."""
    start = {"bandwidth_efficiency": gpu.bandwidth_efficiency or settings.decode_efficiency,
             "matmul_efficiency": gpu.matmul_efficiency or 1.0}
    def ratios(values):
        return _ratios(runs, _replaced(gpu, values), settings, models)
    response = {f: _elasticity(ratios, start, f) for f in start}
    # Only figures the runs respond to, and no more figures than runs: one memory-bound run fits the bandwidth alone
    # (its matmul efficiency would drift to a bound on the prompt's few milliseconds).
    free = sorted((f for f in start if response[f] >= MIN_ELASTICITY), key=lambda f: response[f], reverse=True)[:len(runs)]
    bounds = {f: b for f, b in gpu_bounds(settings).items() if f in free}

    def error(values):
        return Fit.error(_ratios(runs, _replaced(gpu, start | values), settings, models))
    moved, unshrunk = _descend({f: start[f] for f in free}, bounds, error, len(runs))
    kept = {"training_efficiency": gpu.training_efficiency or gpu.matmul_efficiency or 1.0} \
        if "matmul_efficiency" in moved else {}
    return _replaced(gpu, moved | kept), moved, unshrunk


def _at_bounds(moved: dict[str, float], bounds: dict[str, tuple[float, float]], runs, what: str) -> list[Problem]:
    """A figure the fit pushed to the edge of where it may go: the runs ask for more than all of a card's
    bandwidth or peak, or for less than any card or setting gives (1% of bandwidth, an MFU of 0.1%), so they cannot
    be explained; one problem, at the first run's measured cell, naming the rows."""
    out = []
    for figure, value in moved.items():
        low, high = bounds[figure]
        if value in (low, high):
            first = runs[0]
            out.append(Problem(Code.OUT_OF_RANGE, first.file, first.measured_cell, Message(
                "fit_at_bound", what=what, figure=figure, side=Message("side_above" if value == high else "side_below"),
                bound=value, rows=", ".join(str(r.line) for r in runs))))
    return out


def _unpredictable(runs, gpus: dict[str, Gpu], settings: Settings, models: ModelCatalog) -> list[float]:
    """The engine's ratio of each run to its measurement; InputError at the runs the engine cannot model (a model
    that does not fit the cards: no speed to compare)."""
    ratios, problems = [], []
    for run in runs:
        try:
            row = _row(run, gpus[run.gpu.lower()], settings, models)
            value = _figure(run, row)
            # a memory run ran on its cards: what the engine makes of its memory is what the fit is about
            fits = run.kind == "mem" or (row.get("cards_min") or 0) <= run.cards
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


def _lora(run: MeasuredRun) -> bool:
    return run.method in ("lora", "qlora")


def _low_precision(run: MeasuredRun) -> bool:
    return run.train_precision in ("fp8", "fp4")


@dataclass(frozen=True)
class FitSetting:
    """A setting calibrate fits, and the runs it rests on: one workload (serving or training), one precision."""

    key: str
    takes: Callable[[MeasuredRun], bool]


# In this order: a later setting is fitted with the earlier ones fitted (FP8 training multiplies the bf16 MFU).
FIT_SETTINGS: tuple[FitSetting, ...] = (
    FitSetting("kv_read_efficiency", lambda r: r.kind == "serve"),
    FitSetting("mfu", lambda r: r.kind == "train" and not _lora(r) and not _low_precision(r)),
    FitSetting("train_fp8_efficiency", lambda r: r.kind == "train" and not _lora(r) and r.train_precision == "fp8"),
    FitSetting("train_fp4_efficiency", lambda r: r.kind == "train" and not _lora(r) and r.train_precision == "fp4"),
    FitSetting("lora_mfu", lambda r: r.kind == "train" and _lora(r)),
)
# The memory rule's figures memory runs fit (_fit_memory): LoRA/QLoRA's fixed costs (the trained share's states and
# the workspace) and the bytes a layer keeps without checkpointing (QLoRA's on top).
MEMORY_FIGURES = ("lora_trainable", "lora_workspace_gb", "layer_activation_bytes", "qlora_activation_bytes")
# The least each can physically be: no share trained, no workspace below none; a layer that does not checkpoint keeps
# at least the bf16 input a checkpointed one keeps (BytesActivation); QLoRA's 4-bit matmuls keep no less than LoRA's
# bf16 ones. The most: what takes one of the runs past all of the memory of the card it was measured on.
MEMORY_FLOORS = {"lora_trainable": 0.0, "lora_workspace_gb": 0.0, "layer_activation_bytes": float(KS.BytesActivation),
                 "qlora_activation_bytes": 0.0}
MEMORY_UNITS = {"lora_trainable": 0.01, "lora_workspace_gb": 1.0, "layer_activation_bytes": 1.0,
                "qlora_activation_bytes": 1.0}  # a change of each that moves a run's GB measurably
MEMORY_STEPS = (0.05, 0.01, 0.001, 1e-4, 1e-5)  # of the span between a memory figure's bounds, coarse to fine
# Passes over the figures at each step: a run's GB is a sum of the figures' terms, so two of them (the trained
# share's states and the workspace, both fixed costs) trade off along a valley coordinate descent walks down slowly.
MEMORY_PASSES = 40
UNDER_WEIGHT = 1000  # how much more a memory run under-stated beyond the band's floor counts


def _setting_bounds(key: str) -> tuple[float, float]:
    return _bounds(SETTINGS_BY_KEY[key])


def _fit_settings(runs, gpus: dict[str, Gpu], settings: Settings, models: ModelCatalog
                  ) -> tuple[dict[str, float], dict[str, list[MeasuredRun]], list[Problem]]:
    """Each setting of FIT_SETTINGS fitted to its own runs on the fitted cards, in order; the settings that moved,
    the runs each of them rests on, and the problems of those the runs alone take to a bound."""
    problems: list[Problem] = []
    tuned: dict[str, float] = {}
    rests_on: dict[str, list[MeasuredRun]] = {}
    for setting in FIT_SETTINGS:
        mine = [r for r in runs if setting.takes(r)]
        if not mine:
            continue
        base = _replaced(settings, tuned)

        def ratios(values: dict[str, float], mine: list[MeasuredRun] = mine, base: Settings = base) -> list[float]:
            s = _replaced(base, values)
            return [predict(r, gpus[r.gpu], s, models) / r.measured for r in mine]

        def error(values: dict[str, float], ratios: Callable[[dict[str, float]], list[float]] = ratios) -> float:
            return Fit.error(ratios(values))
        start = {setting.key: getattr(settings, setting.key)}
        if _elasticity(ratios, start, setting.key) < MIN_ELASTICITY:
            continue  # the runs do not respond to it (short contexts and kv_read_efficiency): left as it is
        bounds = {setting.key: _setting_bounds(setting.key)}
        moved, unshrunk = _descend(start, bounds, error, len(mine))
        problems += _at_bounds(unshrunk, bounds, mine, "the Settings sheet")
        tuned |= moved
        if moved:
            rests_on[setting.key] = mine
    return tuned, rests_on, problems


def _fit_memory(runs, gpus: dict[str, Gpu], settings: Settings, models: ModelCatalog
                ) -> tuple[dict[str, float], dict[str, list[MeasuredRun]], list[Problem]]:
    """The memory rule's MEMORY_FIGURES fitted together to the memory runs, as _fit_gpu fits a card's two figures:
    only the figures some runs respond to (mean |d ln GB / d ln figure| of those runs at least MIN_ELASTICITY), no
    more figures than runs, the most responsive first, with _descend's prior. A figure's bounds: MEMORY_FLOORS,
    and the value that takes one of its runs past all of its card's memory, the others as they were (each run's GB is
    a straight line a + b x figure, read from the engine at two values); the grid's steps are MEMORY_STEPS of that
    span. The error counts a run under-stated beyond the memory band's floor (0.95 of its measured peak)
    UNDER_WEIGHT times: a plan must not pick a card its own runs show running out. Refused where the runs alone
    take a figure to a bound, ask for more (the error still falls a step past it) and leave one of its runs out of
    the memory band on that side (over-stated at a floor, under-stated at the card's memory): no value explains it.
    A figure at its floor with its runs in band stays there (a framework whose LoRA trains a share too small to
    count, say). Returns the figures that moved, the runs each rests on, and the problems."""
    mem = [r for r in runs if r.kind == "mem"]
    if not mem:
        return {}, {}, []

    def gb(values: dict[str, float]) -> list[float]:
        s = _replaced(settings, values)
        return [predict(r, gpus[r.gpu], s, models) for r in mem]
    start = {f: float(getattr(settings, f)) for f in MEMORY_FIGURES}
    at_start = gb({})
    lines: dict[str, list[tuple[MeasuredRun, float, float]]] = {}  # figure -> its runs' (run, a, b), b > 0
    response: dict[str, float] = {}
    for figure in MEMORY_FIGURES:
        unit = MEMORY_UNITS[figure]
        moved_by = gb({figure: start[figure] + unit})
        rising = [(r, g - (m - g) / unit * start[figure], (m - g) / unit)
                  for r, g, m in zip(mem, at_start, moved_by, strict=True) if m - g > 1e-12 * unit]
        if rising:
            lines[figure] = rising
            response[figure] = math.fsum(b * max(start[figure], unit) / (a + b * start[figure])
                                         for _, a, b in rising) / len(rising)
    free = sorted((f for f in response if response[f] >= MIN_ELASTICITY), key=lambda f: response[f],
                  reverse=True)[:len(mem)]
    if not free:
        return {}, {}, []
    bounds, units = {}, {}
    for figure in free:
        low, high = MEMORY_FLOORS[figure], SETTINGS_BY_KEY[figure].maximum
        cap = min((_card_gb(gpus[r.gpu]) - a) / b for r, a, b in lines[figure])
        high = math.floor(min(cap, high if high is not None else cap) * 1e4) / 1e4
        if high <= low:  # at the least it can be, the figure already takes a run past its card
            first = lines[figure][0][0]
            return {}, {}, [Problem(Code.OUT_OF_RANGE, first.file, first.measured_cell, Message(
                "fit_at_bound", what="the Settings sheet", figure=figure, side=Message("side_below"), bound=low,
                rows=", ".join(str(r.line) for r, _, _ in lines[figure])))]
        bounds[figure], units[figure] = (low, high), high - low
    floor = BANDS["mem"][0]
    fast = _affine(mem, at_start, {f: lines[f] for f in free}, start, bounds, gb)

    def error(values: dict[str, float]) -> float:
        ratios = [g / r.measured for r, g in zip(mem, fast(values), strict=True)]
        return Fit.error(ratios) + (UNDER_WEIGHT - 1) * Fit.error(x / floor for x in ratios if x < floor)
    begin = {f: start[f] for f in free}
    moved, unshrunk = _descend(begin, bounds, error, len(mem), MEMORY_STEPS, units, MEMORY_PASSES,
                              pattern=True, decimals=7)
    problems = []
    low_band, high_band = BANDS["mem"]
    at_fit = dict(zip(mem, gb(begin | unshrunk), strict=True))
    for figure, value in unshrunk.items():
        low, high = bounds[figure]
        if value in (low, high):
            past = value + (-1 if value == low else 1) * MEMORY_STEPS[-1] * units[figure]
            try:
                falls = error(begin | unshrunk | {figure: past}) < error(begin | unshrunk)
            except ValueError:  # a step past the floor leaves a run no memory at all
                falls = True
            mine = [r for r, _, _ in lines[figure]]
            # at its floor the figure cannot take more off a run the engine over-states; at the card's memory it
            # cannot add to one it under-states
            unexplained = [r for r in mine if (at_fit[r] / r.measured > high_band if value == low
                                               else at_fit[r] / r.measured < low_band)]
            if falls and unexplained:
                problems += _at_bounds({figure: value}, bounds, mine, "the Settings sheet")
    if problems:
        return {}, {}, problems
    return moved, {f: [r for r, _, _ in lines[f]] for f in moved}, []


def _affine(mem: list[MeasuredRun], at_start: list[float], lines: dict[str, list[tuple[MeasuredRun, float, float]]],
            start: dict[str, float], bounds: dict[str, tuple[float, float]],
            gb: Callable[[dict[str, float]], list[float]]) -> Callable[[dict[str, float]], list[float]]:
    """The memory runs' GB as a function of the fitted figures: each run's straight lines in each figure (read from
    the engine, `lines`) added up, where the engine agrees with that sum (to 1e-9) at the bounds' two corners and at
    each figure's far bound alone (the memory rule adds its fixed costs and multiplies no figure by another); else
    the engine itself. The descent's thousands of trial values then cost no engine call each."""
    slopes = [{f: b for f, rising in lines.items() for r, _, b in rising if r is run} for run in mem]

    def summed(values: dict[str, float]) -> list[float]:
        return [g + math.fsum(b * (values.get(f, start[f]) - start[f]) for f, b in slope.items())
                for g, slope in zip(at_start, slopes, strict=True)]
    probes = [{f: low for f, (low, _) in bounds.items()}, {f: high for f, (_, high) in bounds.items()}]
    probes += [{f: high} for f, (_, high) in bounds.items()]
    for probe in probes:
        if any(not math.isclose(e, s, rel_tol=1e-9, abs_tol=1e-9) for e, s in zip(gb(probe), summed(probe),
                                                                                   strict=True)):
            return gb
    return summed


def standard_error(value: float, runs_count: int, fitted_count: int, error: Callable[[float], float]) -> float | None:
    """The standard error of a fitted figure from the curvature of the sum of squared log ratios at its best value
    (u = ln value, s^2 = E / (runs - figures fitted on them), SE(u) = sqrt(2 s^2 / E''(u))), as a plus-or-minus of
    the figure; None on as many runs as figures (no spread to measure)."""
    if runs_count <= fitted_count:
        return None
    step = 0.02
    low, mid, high = (error(value * math.exp(d)) for d in (-step, 0.0, step))
    curvature = (low - 2 * mid + high) / step ** 2
    if curvature <= 0:
        return None
    return value * math.sqrt(2 * (mid / (runs_count - fitted_count)) / curvature)


def calibrate(runs: list[MeasuredRun], gpus: dict[str, Gpu], settings: Settings, models: ModelCatalog,
              source: str) -> Fit:
    """Fit each GPU the serving runs name, then the settings of FIT_SETTINGS to their runs on those GPUs; `source`
    becomes the fitted rows' source ("calibrated from {n} runs on DATE"). InputError where a fit reaches a bound
    (runs no card explains); a warning for each figure that rests on one run."""
    if not runs:
        raise InputError([Problem(Code.REQUIRED, "", "", Message("no_runs"))])
    before = _unpredictable(runs, gpus, settings, models)
    fitted = {name: gpus[name.lower()] for name in dict.fromkeys(r.gpu for r in runs)}
    problems: list[Problem] = []
    rests_on: dict[str, tuple[list[MeasuredRun], int]] = {}  # figure -> its runs, figures fitted on them
    for name, gpu in fitted.items():
        served = [r for r in runs if r.gpu == name and r.kind == "serve"]
        if served:
            fit, moved, unshrunk = _fit_gpu(gpu, served, settings, models)
            problems += _at_bounds(unshrunk, gpu_bounds(settings), served, name)
            fitted[name] = dataclasses.replace(fit, source=f"{source.format(n=len(served))}; {gpu.source}".strip("; "))
            rests_on |= {f"{name} {figure}": (served, len(moved)) for figure in moved}
    tuned, setting_runs, setting_problems = _fit_settings(runs, fitted, settings, models)
    memory, memory_runs, memory_problems = _fit_memory(runs, fitted, settings, models)
    problems += setting_problems + memory_problems
    rests_on |= {key: (setting_runs[key], 1) for key in tuned}
    rests_on |= {key: (memory_runs[key], len(memory)) for key in memory}
    tuned |= memory
    if problems:
        raise InputError(problems)
    final = _replaced(settings, tuned)
    after = [predict(r, fitted[r.gpu], final, models) / r.measured for r in runs]
    uncertainty = {figure: _figure_error(figure, on, count, fitted, final, models)
                   for figure, (on, count) in rests_on.items()}
    warnings = tuple(Message("fit_one_run", figure=figure, cell=f"{on[0].file}!{on[0].measured_cell}")
                     for figure, (on, _) in rests_on.items() if len(on) == 1)
    trained = sum(r.kind != "serve" for r in runs)
    return Fit(tuple(fitted.values()), tuple(runs), tuple(before), tuple(after), tuned,
               source.format(n=trained), warnings, uncertainty)


def _figure_error(figure: str, runs, fitted_count: int, gpus: dict[str, Gpu], settings: Settings,
                  models: ModelCatalog) -> float | None:
    """standard_error of one fitted figure ("H100 80G matmul_efficiency" or a setting's key), the others held."""
    if figure in SETTINGS_BY_KEY:
        value = getattr(settings, figure)

        def error(v):
            s = _replaced(settings, {figure: v})
            return Fit.error(predict(r, gpus[r.gpu], s, models) / r.measured for r in runs)
    else:
        name, column = figure.rsplit(" ", 1)
        gpu = gpus[name]
        value = getattr(gpu, column)

        def error(v):
            return Fit.error(_ratios(runs, _replaced(gpu, {column: v}), settings, models))
    return standard_error(value, len(runs), fitted_count, error)


@dataclass(frozen=True)
class HeldOut:
    """Runs kept out of a fit, before and after it: engine / measured of each."""

    runs: tuple[MeasuredRun, ...]
    before: tuple[float, ...]
    after: tuple[float, ...]

    def in_band(self, ratios) -> int:
        """How many of the runs land in their kind's band (BANDS)."""
        return sum(BANDS[r.kind][0] <= x <= BANDS[r.kind][1] for r, x in zip(self.runs, ratios, strict=True))


def check_held_out(fit: Fit, runs: list[MeasuredRun], gpus: dict[str, Gpu], settings: Settings,
                   models: ModelCatalog) -> HeldOut:
    """The runs a fit was not given, predicted with the catalog and settings it started from and with the fitted
    ones (a card the fit did not touch as it was): does the fit carry to runs it has not seen?"""
    before = _unpredictable(runs, gpus, settings, models)
    fitted = {g.name.lower(): g for g in fit.gpus}
    final = _replaced(settings, fit.settings)
    after = [predict(r, fitted.get(r.gpu.lower(), gpus[r.gpu.lower()]), final, models) / r.measured for r in runs]
    return HeldOut(tuple(runs), tuple(before), tuple(after))


def _ratio_lines(runs, before, after) -> list[str]:
    lines = [f"{'line':<6}{'kind':<7}{'model':<20}{'gpu':<12}{'before':>8}{'after':>8}"]
    for run, b, a in zip(runs, before, after, strict=True):
        lines.append(f"{run.line:<6}{run.kind:<7}{printable(run.model):<20}{printable(run.gpu):<12}{b:>8.2f}{a:>8.2f}")
    lines.append(f"sum of squared log ratios: {Fit.error(before):.3f} before, {Fit.error(after):.3f} after")
    return lines


def _plus_minus(fit: Fit, figure: str) -> str:
    error = fit.uncertainty.get(figure)
    if figure not in fit.uncertainty:
        return ""
    return " (± unknown: no more runs than figures fitted on them)" if error is None else f" ± {error:.3f}"


def format_fit(fit: Fit, held_out: HeldOut | None = None) -> str:
    """Each run's ratio before and after, the error, the fitted figures with their standard errors and, given runs
    kept out of the fit, theirs: as the command prints them."""
    lines = _ratio_lines(fit.runs, fit.before, fit.after)
    for g in fit.gpus:
        parts = [f"{c} {getattr(g, c) if getattr(g, c) else '-'}{_plus_minus(fit, f'{g.name} {c}')}"
                 for c in ("bandwidth_efficiency", "matmul_efficiency")]
        if g.training_efficiency is not None:
            parts.append(f"training_efficiency {g.training_efficiency}")
        lines.append(f"{g.name}: " + ", ".join(parts))
    for key, value in fit.settings.items():
        lines.append(f"setting {key}: {value:g}{_plus_minus(fit, key)}")
    lines += [f"Warning: {printable(w)}" for w in fit.warnings]
    if held_out is not None:
        lines.append("held-out runs (not fitted on):")
        lines += _ratio_lines(held_out.runs, held_out.before, held_out.after)
        lines.append(f"in band: {held_out.in_band(held_out.before)} of {len(held_out.runs)} before, "
                     f"{held_out.in_band(held_out.after)} after")
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
