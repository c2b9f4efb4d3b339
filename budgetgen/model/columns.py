"""The calculated task columns: header, unit and Excel formula, the Python function compiled from the formula.

The engine evaluates `py` for each column in order; the writer writes `excel` down the same column. `py` is
compiled from `excel` (`budgetgen.model.expr.compile_row`) unless the column gives its own: only `period_cost`
(tests/test_expr.py names it with its reason).
Placeholders in `excel`: `{name}` is the same row's cell of another column, `{gpu.field}` looks the
row's GPU up on the GPUs sheet (`{gpu.row}`: its position there). Every other word is a workbook-scoped name on
Assumptions or GPUs.
Blank results ("" in the sheet) are None in Python: the JSON's null.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import cast

from ..core.inputs import Gpu, Settings
from ..core.records import excel_is
from ..core.schema import (
    CONSTANT_VALUES,
    PER_CARD_MONTH_TIER,
    RERUN_TIER,
    SETTINGS,
    TASK_KINDS,
    TASK_TIERS,
    Value,
)
from . import expr, serving

Row = dict[str, Value]  # a task row: its inputs and calculated columns by name
CalcFn = Callable[[Row, Settings, Gpu], Value]  # a column's Python view: the row so far, the settings, the row's GPU
# The named constants of Assumptions, so the Python side uses the very numbers the formulas name.
K = SimpleNamespace(**CONSTANT_VALUES)


TIER_LIST: tuple[str, ...] = tuple(t.name for t in TASK_TIERS)  # the TierList range on Assumptions
# The workbook's defined names as a column's Python view reads them: the settings by their name on Assumptions, the
# fixed constants, the names Assumptions derives from the settings, and the ranges a formula looks a value up in.
_DERIVED = {"DaysPerMonth": lambda s: s.hours_per_month / K.HoursPerDay, "PlanMonths": lambda s: s.plan_months,
            "TierList": lambda s: TIER_LIST}
_SETTING_NAMES = {x.name: x.key for x in SETTINGS}
# KvBytes: Assumptions' cell, its own formula over the settings
_KV_BYTES = expr.compile_excel(serving.KV_BYTES_EXCEL.removeprefix("="),
                               expr.Names(settings=_SETTING_NAMES, constants=CONSTANT_VALUES, derived=_DERIVED))
NAMES = expr.Names(settings=_SETTING_NAMES, constants=CONSTANT_VALUES, derived=_DERIVED | {"KvBytes": _KV_BYTES})
# The GPUs sheet's columns a formula reads as INDEX(<name>,{gpu.row}), as Python over the row's GPU `g`.
GPU_COLUMNS = {t.price_name: f"g.prices.get({t.name!r})" for t in TASK_TIERS}


@dataclass(frozen=True)
class Calc:
    """One calculated column: its formula, and the Python function the engine computes it with, compiled from the
    formula (`budgetgen.model.expr`) unless the column gives its own `py` (where the Python is not the formula read
    literally)."""

    key: str
    header: str
    unit: str
    fmt: str  # number | int | money | percent | text | flag | price | sci
    excel: str
    py: CalcFn = field(default=None, compare=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.py is None:
            object.__setattr__(self, "py", expr.compile_row(self.excel, NAMES, GPU_COLUMNS))
        else:
            expr.parse(self.excel.removeprefix("="))  # a column with its own py must still be a formula the sheet reads

    @property
    def compiled(self) -> bool:
        """Whether the Python view is the formula itself (no hand-written `py`)."""
        return expr.is_compiled(self.py)


def _kind_is(names) -> str:
    """An Excel test that the row's kind is one of `names` (the kinds of one sort, from the schema's records)."""
    return excel_is("{kind}", names)


_TRAINING_KIND = _kind_is(k.name for k in TASK_KINDS if k.training)
_ONLINE_KIND = _kind_is(k.name for k in TASK_KINDS if k.online)
_OFFLINE_SERVING_KIND = _kind_is(k.name for k in TASK_KINDS if not k.training and not k.online)


def _tokens_per_day_excel() -> str:
    """Requests x tokens_per_request for each kind that declares its requests column, else blank."""
    formula = '""'
    for kind in reversed([k for k in TASK_KINDS if k.requests]):
        formula = f'IF({{kind}}="{kind.name}",{{{kind.requests}}}*{{tokens_per_request}},{formula})'
    return "=" + formula


def _serving_excel(excel: str) -> str:
    """A serving column's formula: blank on a training row."""
    return f'=IF({{training}}=1,"",{excel.removeprefix("=")})'


def _training_only(excel: str) -> str:
    return f'=IF({{training}}=1,{excel.removeprefix("=")},"")'


_GPU_ROW = "{gpu.row}"  # the row's GPU's position on the GPUs sheet
_TIER_COSTS = ",".join(f"{{cost_{t.name}}}" for t in TASK_TIERS)  # in TierList order, for CHOOSE


def _tier_cost_excel(tier) -> str:
    price = f"INDEX({tier.price_name},{_GPU_ROW})"
    if tier.per_card_month:
        amount = f"{{monthly_cards}}*{price}"
    elif tier.reruns:
        amount = f"{{base_gpu_hours_per_month}}*IF({_ONLINE_KIND},1,1+SpotOverhead)*{price}"
    else:
        amount = f"{{base_gpu_hours_per_month}}*{price}"
    return f'=IF(ISNUMBER({price}),{amount},"")'


def _cheapest_tier_excel() -> str:
    """The first of the row's kind's suited tiers whose cost is the lowest ("" when none is priced): for each
    set of suited tiers, the kinds that have it; MIN skips the blank costs, and "" never equals a number."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for kind in TASK_KINDS:
        groups.setdefault(kind.suited_tiers, []).append(kind.name)
    formula = '""'
    for suited, kinds in reversed(list(groups.items())):
        low = f"MIN({','.join(f'{{cost_{t}}}' for t in suited)})"
        pick = '""'
        for t in reversed(suited):
            pick = f'IF({{cost_{t}}}={low},"{t}",{pick})'
        formula = pick if formula == '""' else f"IF({_kind_is(kinds)},{pick},{formula})"
    return "=" + formula


def _fits_shape_excel() -> str:
    """The smallest replica shape of §D (1, 2, 4, 8 cards) that divides the heads and holds the minimum batch;
    none: whole 8-card nodes for the memory, at least two (more than max_cards by default: not a candidate)."""
    fallback = "CardsPerNode*MAX(TwoCards,CEILING({vram_gb}/(CardsPerNode*{gpu.vram_gb}*UsableVram),1))"
    chain = "".join(f"IF({serving.fits_excel(n)},{serving.SHAPE_NAMES[n]},"
                    for n in serving.CARDS_PER_REPLICA_SHAPES)
    return chain + fallback + ")" * len(serving.CARDS_PER_REPLICA_SHAPES)


_SERVING_VRAM = ('{weights_gb}*(1+InferenceOverhead)+{kv_cache_gb}+IF({concurrency}="",MinBatch,'
                 'MIN({concurrency},MinBatch))*{kv_bytes_per_token}*{context_used}/Billion')
_MIN_REPLICAS = 'IF({min_replicas}="",MinReplicas,{min_replicas})'
# Hours a training or batch run has for its work: its deadline less the setup every run starts with (the engine
# refuses a run whose window is not positive).
RUN_WINDOW = "({deadline_used}*HoursPerDay-SetupHours)"
# §F's n_needed: 1 when one card meets the deadline, MaxCards + 1 when no number of cards can.
_CARDS_FOR_DEADLINE = serving.cards_at_scale_excel(
    f"IF({{single_card_hours}}*(1+RunOverhead)<={RUN_WINDOW},1,"
    f"IF(OR({RUN_WINDOW}<=0,{{gpu.scaling}}<=0),MaxCards+1,"
    f"1+({{single_card_hours}}*(1+RunOverhead)/{RUN_WINDOW}-1)/{{gpu.scaling}}))")


def _serving_calc(key: str, header: str, unit: str, fmt: str, excel: str) -> Calc:
    """A serving column: blank on a training row."""
    return Calc(key, header, unit, fmt, _serving_excel(excel))


CALCS: tuple[Calc, ...] = (
    Calc("params_used", "parameters used", "B params", "number", serving.PARAMS_USED_EXCEL),
    Calc("active_used", "active parameters", "B params", "number", serving.ACTIVE_USED_EXCEL),
    Calc("training", "training?", "1 = yes", "int", f"=IF({_TRAINING_KIND},1,0)"),
    Calc("mfu_used", "MFU used", "share", "percent", serving.MFU_USED_EXCEL),
    _serving_calc("bytes_per_param", "bytes per weight", "bytes", "number", serving.BYTES_PER_PARAM_EXCEL),
    Calc("weights_gb", "weights", "GB", "number",
         f'=IF({{training}}=1,{serving.TRAINING_WEIGHTS_TERM},{{bytes_per_param}}*{{params_used}})'),
    _serving_calc("kv_bytes_per_token", "KV cache per token", "bytes", "int", serving.KV_BYTES_PER_TOKEN_EXCEL),
    _serving_calc("prompt_used", "prompt used", "tokens", "int", serving.PROMPT_EXCEL),
    _serving_calc("context_used", "context used", "tokens", "int", serving.CONTEXT_EXCEL),
    _serving_calc("routed_b", "parameters a further sequence may add to a step", "B params", "number",
                  serving.ROUTED_EXCEL),
    Calc("state_bytes", "training state per parameter on a card", "bytes", "number",
         _training_only(serving.STATE_BYTES_EXCEL)),
    Calc("activations_gb", "activations on every card", "GB", "number", _training_only(serving.ACTIVATIONS_EXCEL)),
    Calc("optimizer_slowdown", "optimizer slowdown", "x", "number", _training_only(serving.OPTIMIZER_SLOWDOWN_EXCEL)),
    Calc("vram_gb", "VRAM needed", "GB", "number",
         f'=IF({{training}}=1,{serving.TRAINING_VRAM_EXCEL.removeprefix("=")},{_SERVING_VRAM})'),
    Calc("flops_per_token_used", "training FLOPs per parameter and token", "FLOP/param/token", "number",
         _training_only(serving.FLOPS_PER_TOKEN_EXCEL)),
    Calc("flops_per_run", "FLOPs per run", "FLOP", "sci", _training_only(serving.TRAINING_FLOPS_EXCEL)),
    Calc("deadline_used", "deadline per run", "days", "number",
         f'=IF({_ONLINE_KIND},"",{serving.DEADLINE_DAYS_EXCEL.removeprefix("=")})'),
    Calc("peak_tflops", "matmul peak used", "TFLOP/s", "number", serving.PEAK_TFLOPS_EXCEL),
    Calc("mfu_run", "MFU of the run", "share", "percent",
         _training_only(f'({serving.RUN_MFU_EXCEL.removeprefix("=")})/{{optimizer_slowdown}}')),
    Calc("single_card_hours", "compute hours on one card", "h", "number",
         _training_only(serving.TRAINING_GPU_HOURS_EXCEL)),
    Calc("card_gb", "memory a card offers training", "GB", "number", _training_only(serving.CARD_GB_EXCEL)),
    # a training run's cards before its shape (1, 2, 4, multiples of 8): a column of its own, so that the shape's
    # formula reads one cell four times instead of repeating the expression
    Calc("cards_for_memory", "cards its memory needs", "cards", "int", _training_only(serving.TRAINING_CARDS_EXCEL)),
    Calc("cards_min", "cards min", "cards", "int",
         "=IF({training}=1," + serving.training_shape_excel("{cards_for_memory}") + f",{_fits_shape_excel()})"),
    Calc("cards_for_deadline", "cards its deadline needs", "cards", "int",
         _training_only("MAX({cards_min},CEILING(" + _CARDS_FOR_DEADLINE + ",1))")),
    Calc("cards_needed", "cards to meet the deadline", "cards", "int",
         "=IF({training}=1," + serving.training_shape_excel("{cards_for_deadline}") + ",{cards_min})"),
    Calc("cards_per_run", "cards per run/replica", "cards", "int", '=IF({cards}="",{cards_needed},{cards})'),
    Calc("speedup", "speedup", "x", "number",
         f"=(1+({{cards_per_run}}-1)*{{gpu.scaling}})*{serving.SCALE_FACTOR_EXCEL.removeprefix('=')}"),
    Calc("compute_hours", "compute hours (wall)", "h", "number",
         '=IF({training}=1,{flops_per_run}/({peak_tflops}*Tera*{mfu_run}*{speedup}*SecondsPerHour),"")'),
    Calc("compute_gpu_hours", "compute GPU-hours", "GPU-h", "number",
         '=IF({training}=1,{compute_hours}*{cards_per_run},"")'),
    Calc("tokens_per_day", "output tokens per day (batch: per run)", "tokens", "int",
         _tokens_per_day_excel()),
    _serving_calc("tp", "tensor-parallel factor", "x", "number", serving.TP_FACTOR_EXCEL),
    _serving_calc("bandwidth_share", "bandwidth share reached", "share", "percent", serving.BANDWIDTH_SHARE_EXCEL),
    _serving_calc("free_gb", "memory for KV cache", "GB", "number", serving.FREE_GB_EXCEL),
    _serving_calc("batch_mem", "sequences memory holds", "sequences", "int", serving.BATCH_MEM_EXCEL),
    _serving_calc("t_pre", "prompt reading per request", "s", "number", serving.T_PRE_EXCEL),
    _serving_calc("t_layers_fixed", "decode step, per-layer fixed time", "s", "number", serving.LAYER_FIXED_EXCEL),
    _serving_calc("t_layers_per_sequence", "decode step, per-layer time a sequence adds", "s", "number",
                  serving.LAYER_PER_SEQUENCE_EXCEL),
    _serving_calc("step_target", "decode step the latency targets allow", "s", "number", serving.STEP_TARGET_EXCEL),
    _serving_calc("latency_batch", "sequences the latency targets allow", "sequences", "int",
                  serving.LATENCY_BATCH_EXCEL),
    _serving_calc("batch", "sequences batched", "sequences", "int", f"=MAX(1,{serving.BATCH_EXCEL.removeprefix('=')})"),
    _serving_calc("weights_read", "weights read per step", "B params", "number", serving.WEIGHTS_READ_EXCEL),
    _serving_calc("t_mem", "decode step, memory", "s", "number", serving.T_MEM_EXCEL),
    _serving_calc("t_cmp", "decode step, compute", "s", "number", serving.T_CMP_EXCEL),
    _serving_calc("t_layers", "decode step, per-layer overhead", "s", "number", serving.LAYER_OVERHEAD_EXCEL),
    _serving_calc("t_step", "decode step", "s", "number", serving.T_STEP_EXCEL),
    _serving_calc("requests_per_sec", "requests/s per replica", "requests/s", "number", serving.REQ_S_EXCEL),
    _serving_calc("tokens_per_sec_used", "output tokens/s per replica", "tokens/s", "number",
                  serving.OUTPUT_TOKENS_PER_SEC_EXCEL),
    _serving_calc("user_tokens_per_sec", "tokens/s one user sees", "tokens/s", "number",
                  serving.USER_TOKENS_PER_SEC_EXCEL),
    Calc("card_days", "load in card-days", "card-days", "number",
         '=IF({training}=1,"",{tokens_per_day}/({tokens_per_sec_used}*SecondsPerDay))'),
    Calc("replica_hours", "hours of one replica per run", "h", "number",
         f'=IF({_OFFLINE_SERVING_KIND},{serving.REPLICA_HOURS_EXCEL.removeprefix("=")},"")'),
    Calc("replicas", "replicas", "replicas", "int",
         f'=IF({{training}}=1,"",IF({_ONLINE_KIND},MAX({_MIN_REPLICAS},CEILING({{requests_per_day}}*PeakFactor'
         '/({serving_hours_per_day}*SecondsPerHour*{requests_per_sec}),1)),'
         + serving.BATCH_REPLICAS_EXCEL.removeprefix("=") + "))"),
    Calc("cards_held", "cards held", "cards", "int",
         '=IF({training}=1,{cards_per_run},{replicas}*{cards_per_run})'),
    Calc("gpu_hours_per_run", "GPU-hours per run", "GPU-h", "number",
         '=IF({training}=1,({compute_hours}*(1+RunOverhead)*(1+DebugOverhead)+SetupHours)*{cards_per_run},'
         "IF(" + _OFFLINE_SERVING_KIND + ',({replica_hours}+SetupHours*{replicas})*{cards_per_run},""))'),
    Calc("wall_hours_per_run", "wall-clock hours per run", "h", "number",
         '=IF({training}=1,{compute_hours}*(1+RunOverhead)+SetupHours,'
         'IF(' + _OFFLINE_SERVING_KIND + ',{replica_hours}/{replicas}+SetupHours,""))'),
    Calc("base_gpu_hours_per_month", "GPU-hours a month before spot reruns", "GPU-h", "number",
         "=IF(" + _ONLINE_KIND + ',{cards_held}*{serving_hours_per_day}*DaysPerMonth,'
         '{gpu_hours_per_run}*{runs_per_month})'),
    Calc("gpu_hours_per_month", "GPU-hours a month", "GPU-h", "number",
         f"={{base_gpu_hours_per_month}}*IF({RERUN_TIER},IF({_ONLINE_KIND},1,1+SpotOverhead),1)"),
    Calc("monthly_cards", "cards on a monthly contract", "cards", "int",
         "=MAX({cards_held},CEILING({base_gpu_hours_per_month}/HoursPerMonth,1))"),
    Calc("cards_billed", "cards billed", "cards", "int", f"=IF({PER_CARD_MONTH_TIER},{{monthly_cards}},{{cards_held}})"),
    *(Calc(f"cost_{t.name}", f"cost if {t.name}", "currency/month", "money", _tier_cost_excel(t))
      for t in TASK_TIERS),
    Calc("monthly_cost", "cost a month", "currency/month", "money",
         f"=CHOOSE(MATCH({{tier}},TierList,0),{_TIER_COSTS})"),
    Calc("cheapest_tier", "cheapest suited tier", "tier", "text", _cheapest_tier_excel()),
    Calc("tier_saving", "saving on cheapest tier", "currency/month", "money",
         f'=IF(OR({{cheapest_tier}}="",{{monthly_cost}}=""),0,'
         f'{{monthly_cost}}-CHOOSE(MATCH({{cheapest_tier}},TierList,0),{_TIER_COSTS}))'),
    Calc("tier_advice", "tier advice", "", "text",
         '=IF({tier_saving}>0,"cheaper on "&{cheapest_tier},"")'),
    Calc("start_index", "first plan month #", "#", "int", "=MATCH({start_month},PlanMonths,0)"),
    Calc("end_index", "last plan month #", "#", "int", "=MATCH({end_month},PlanMonths,0)"),
    Calc("active_months", "active months", "months", "int", "={end_index}-{start_index}+1"),
    Calc("tokens_per_month", "output tokens a month", "tokens", "int",
         f'=IF({{training}}=1,"",IF({_ONLINE_KIND},{{tokens_per_day}}*DaysPerMonth,{{tokens_per_day}}*{{runs_per_month}}))'),
    Calc("requests_per_month", "requests a month", "requests", "int",
         f'=IF({{training}}=1,"",IF({_ONLINE_KIND},{{requests_per_day}}*DaysPerMonth,'
         '{batch_requests}*{runs_per_month}))'),
    Calc("cost_per_m_tokens", "cost per million output tokens", "currency/M tokens", "price",
         '=IF(OR({tokens_per_month}="",{monthly_cost}=""),"",{monthly_cost}/{tokens_per_month}*Million)'),
    Calc("cost_per_k_requests", "cost per thousand requests", "currency/k requests", "price",
         '=IF(OR({requests_per_month}="",{monthly_cost}=""),"",{monthly_cost}/{requests_per_month}*Thousand)'),
    Calc("api_verdict", "self-host or API", "", "text",
         '=IF(OR({api_price_per_m_tokens}="",{cost_per_m_tokens}=""),"",'
         'IF({cost_per_m_tokens}<={api_price_per_m_tokens},"self-host","API"))'),
    # the months' costs summed on Monthly (they follow the demand ramp); the Python view is the flat estimate a
    # candidate is ranked by, which the engine replaces with the chosen GPU's months (ramp.task_months)
    Calc("period_cost", "cost over the plan", "currency", "money",
         "=INDEX(MonthlyPeriodCost,MATCH({task_id},MonthlyTaskId,0))",
         lambda r, s, g: None if r["monthly_cost"] is None else r["monthly_cost"] * r["active_months"]),
)
# Columns the Candidates sheet reads from the task's Tasks row instead of repeating: they do not depend on
# the GPU, or only advise on the chosen one.
CANDIDATE_FROM_TASKS = frozenset({"params_used", "active_used", "mfu_used", "training", "bytes_per_param",
                                  "weights_gb", "kv_bytes_per_token", "prompt_used", "context_used", "vram_gb",
                                  "routed_b", "state_bytes", "activations_gb", "optimizer_slowdown",
                                  "flops_per_token_used", "flops_per_run", "tokens_per_day", "deadline_used",
                                  "start_index", "end_index", "active_months", "cheapest_tier", "tier_saving",
                                  "tier_advice", "cards_billed", "period_cost", "tokens_per_month",
                                  "requests_per_month", "cost_per_m_tokens", "cost_per_k_requests", "api_verdict"})


MODEL_FIELDS = ("total_params_b", "active_params_b", "layers", "hidden", "attn_heads", "kv_heads", "head_dim",
                "kv_latent", "native_context", "vocab_size", "experts", "experts_per_token")  # the Models sheet's named columns a formula may look up


# The leading columns that do not depend on the GPU: worked out once per task, not once per catalog GPU.
TASK_CALCS = tuple(c for c in CALCS if c.key in {
    "params_used", "active_used", "training", "mfu_used", "bytes_per_param", "weights_gb", "kv_bytes_per_token",
    "prompt_used", "context_used", "routed_b", "state_bytes", "activations_gb", "optimizer_slowdown", "vram_gb",
    "flops_per_token_used", "flops_per_run", "deadline_used"})
GPU_CALCS = CALCS[len(TASK_CALCS):]
_NO_GPU = cast(Gpu, None)  # what TASK_CALCS get for the GPU, which none of them reads
assert CALCS[:len(TASK_CALCS)] == TASK_CALCS, "the GPU-independent columns lead CALCS"


def evaluate_task(inputs: Row, settings, model=None) -> Row:
    """The columns that do not depend on the GPU (TASK_CALCS) for one task and its catalog model (or None);
    returns inputs, the model's figures as `model.<field>` (the formulas' `{model.field}`) and those results."""
    row = dict(inputs)
    row.update({f"model.{f}": getattr(model, f) if model is not None else None for f in MODEL_FIELDS})
    for calc in TASK_CALCS:
        row[calc.key] = calc.py(row, settings, _NO_GPU)
    return row


def evaluate(inputs: Row, settings, gpu, model=None, task_row: Row | None = None) -> Row:
    """Run every calculated column for one task on one GPU (and its catalog model, or None); returns inputs,
    the model's figures as `model.<field>` and the results. `task_row` is evaluate_task's result for the same
    inputs, when the caller has it (one per task rather than one per GPU)."""
    row = dict(task_row if task_row is not None else evaluate_task(inputs, settings, model))
    row["gpu"] = gpu.name
    for calc in GPU_CALCS:
        row[calc.key] = calc.py(row, settings, gpu)
    return row
