"""The calculated task columns: header, unit, Excel formula and Python function side by side.

The engine evaluates `py` for each column in order; the writer writes `excel` down the same column.
Placeholders in `excel`: `{name}` is the same row's cell of another column, `{gpu.field}` looks the
row's GPU up on the GPUs sheet. Every other word is a workbook-scoped name on Assumptions or GPUs.
Blank results ("" in the sheet) are None in Python: the JSON's null.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace

from .schema import CONSTANT_VALUES, KIND, TASK_KINDS, TIERS

Row = dict[str, object]
# The named constants of Assumptions, so the Python side uses the very numbers the formulas name.
K = SimpleNamespace(**CONSTANT_VALUES)


def sheet_ceil(x: float) -> int:
    """CEILING(x, 1) as a spreadsheet computes it: rounded to 15 significant digits first."""
    return math.ceil(float(f"{x:.15g}"))


@dataclass(frozen=True)
class Calc:
    """One calculated column: the formula and the Python function are two views of one rule."""

    key: str
    header: str
    unit: str
    fmt: str  # number | int | money | percent | text | flag
    excel: str
    py: Callable[[Row, object, object], object]


def _training(r: Row) -> bool:
    return r["training"] == 1


def _online(r: Row) -> bool:
    return KIND[r["kind"]].online


def _kind_is(names) -> str:
    """An Excel test that the row's kind is one of `names` (the kinds of one sort, from the schema's records)."""
    tests = [f'{{kind}}="{name}"' for name in names]
    return tests[0] if len(tests) == 1 else f"OR({','.join(tests)})"


_TRAINING_KIND = _kind_is(k.name for k in TASK_KINDS if k.training)
_ONLINE_KIND = _kind_is(k.name for k in TASK_KINDS if k.online)
_OFFLINE_SERVING_KIND = _kind_is(k.name for k in TASK_KINDS if not k.training and not k.online)


def _tokens_per_day_excel() -> str:
    """Requests x tokens_per_request for each kind that declares its requests column, else blank."""
    formula = '""'
    for kind in reversed([k for k in TASK_KINDS if k.requests]):
        formula = f'IF({{kind}}="{kind.name}",{{{kind.requests}}}*{{tokens_per_request}},{formula})'
    return "=" + formula


def _weights_gb(r: Row, s, g) -> float:
    if r["method"] in ("qlora", "int4"):
        per_param = K.BytesInt4
    elif r["method"] == "int8":
        per_param = K.BytesInt8
    else:
        per_param = K.BytesFp16
    return r["model_params_b"] * per_param


def _vram_gb(r: Row, s, g) -> float:
    params = r["model_params_b"]
    if _training(r):
        if r["method"] == "full":
            state = params * K.BytesFullTraining
        else:
            state = r["weights_gb"] + params * s.lora_trainable * K.BytesTrainableState
        return state + s.activation_gb_per_b * params
    return r["weights_gb"] * (1 + s.inference_overhead) + (r["kv_cache_gb"] or 0)


def _tokens_per_day(r: Row, s, g):
    requests = KIND[r["kind"]].requests
    return None if requests is None else r[requests] * r["tokens_per_request"]


def _tokens_per_sec(r: Row, s, g):
    if _training(r):
        return None
    if r["tokens_per_sec"] is not None:
        return r["tokens_per_sec"]
    cards = r["cards_per_run"]
    bandwidth_bound = cards * g.bandwidth_gbs * s.decode_efficiency * r["concurrency"] / r["weights_gb"]
    compute_bound = cards * g.tflops * K.Tera * r["mfu_used"] / (K.InferenceFlopsPerToken * r["model_params_b"] * K.Billion)
    return min(bandwidth_bound, compute_bound)


def _gpu_hours_per_run(r: Row, s, g):
    if _training(r):
        return (r["compute_hours"] * (1 + s.run_overhead) * (1 + s.debug_overhead) + s.setup_hours) \
            * r["cards_per_run"]
    if not _online(r):
        return (r["tokens_per_day"] / (r["tokens_per_sec_used"] * K.SecondsPerHour) + s.setup_hours) * r["cards_per_run"]
    return None


def _base_hours(r: Row, s, g) -> float:
    if _online(r):
        return r["cards_held"] * r["serving_hours_per_day"] * (s.hours_per_month / K.HoursPerDay)
    return r["gpu_hours_per_run"] * r["runs_per_month"]


def _spot_factor(r: Row, s) -> float:
    return 1 if _online(r) else 1 + s.spot_overhead


def _tier_cost(tier: str) -> Callable[[Row, object, object], object]:
    def cost(r: Row, s, g):
        price = g.prices.get(tier)
        if price is None:
            return None
        if tier == "monthly":
            return r["monthly_cards"] * price
        factor = _spot_factor(r, s) if tier == "spot" else 1
        return r["base_gpu_hours_per_month"] * factor * price
    return cost


def _cheapest_tier(r: Row, s, g):
    suited = KIND[r["kind"]].suited_tiers
    costs = [(r[f"cost_{t}"], t) for t in TIERS if t in suited and r[f"cost_{t}"] is not None]
    if not costs:
        return None
    low = min(c for c, _ in costs)
    return next(t for c, t in costs if c == low)


def _tier_saving(r: Row, s, g) -> float:
    if r["cheapest_tier"] is None or r["monthly_cost"] is None:
        return 0
    return r["monthly_cost"] - r[f"cost_{r['cheapest_tier']}"]


_GPU_ROW = "MATCH({gpu},GpuName,0)"
_TIER_COSTS = "{cost_monthly},{cost_on_demand},{cost_idle},{cost_spot}"


def _tier_cost_excel(tier: str, price_name: str) -> str:
    price = f"INDEX({price_name},{_GPU_ROW})"
    if tier == "monthly":
        amount = f"{{monthly_cards}}*{price}"
    elif tier == "spot":
        amount = f"{{base_gpu_hours_per_month}}*IF({_ONLINE_KIND},1,1+SpotOverhead)*{price}"
    else:
        amount = f"{{base_gpu_hours_per_month}}*{price}"
    return f'=IF(ISNUMBER({price}),{amount},"")'


TIER_PRICE_NAMES = {"monthly": "GpuMonthly", "on_demand": "GpuOnDemand", "idle": "GpuIdle", "spot": "GpuSpot"}

CALCS: tuple[Calc, ...] = (
    Calc("mfu_used", "MFU used", "share", "percent", '=IF({mfu}="",MfuRate,{mfu})',
         lambda r, s, g: r["mfu"] if r["mfu"] is not None else s.mfu),
    Calc("training", "training?", "1 = yes", "int", f"=IF({_TRAINING_KIND},1,0)",
         lambda r, s, g: 1 if KIND[r["kind"]].training else 0),
    Calc("weights_gb", "weights", "GB", "number",
         '={model_params_b}*IF(OR({method}="qlora",{method}="int4"),BytesInt4,'
         'IF({method}="int8",BytesInt8,BytesFp16))', _weights_gb),
    Calc("vram_gb", "VRAM needed", "GB", "number",
         '=IF({training}=1,IF({method}="full",{model_params_b}*BytesFullTraining,'
         '{weights_gb}+{model_params_b}*LoraTrainable*BytesTrainableState)+ActivationGbPerB*{model_params_b},'
         '{weights_gb}*(1+InferenceOverhead)+{kv_cache_gb})', _vram_gb),
    Calc("cards_min", "cards min", "cards", "int", "=CEILING({vram_gb}/({gpu.vram_gb}*UsableVram),1)",
         lambda r, s, g: sheet_ceil(r["vram_gb"] / (g.vram_gb * s.usable_vram))),
    Calc("cards_per_run", "cards per run/replica", "cards", "int", '=IF({cards}="",{cards_min},{cards})',
         lambda r, s, g: r["cards"] if r["cards"] is not None else r["cards_min"]),
    Calc("speedup", "speedup", "x", "number", "=1+({cards_per_run}-1)*{gpu.scaling}",
         lambda r, s, g: 1 + (r["cards_per_run"] - 1) * g.scaling),
    Calc("flops_per_run", "FLOPs per run", "FLOP", "sci",
         '=IF({training}=1,FlopsPerToken*{model_params_b}*Billion*{train_tokens}*{epochs},"")',
         lambda r, s, g: s.flops_per_token * r["model_params_b"] * K.Billion * r["train_tokens"] * r["epochs"]
         if _training(r) else None),
    Calc("compute_hours", "compute hours (wall)", "h", "number",
         '=IF({training}=1,{flops_per_run}/({gpu.tflops}*Tera*{mfu_used}*{speedup}*SecondsPerHour),"")',
         lambda r, s, g: r["flops_per_run"] / (g.tflops * K.Tera * r["mfu_used"] * r["speedup"] * K.SecondsPerHour)
         if _training(r) else None),
    Calc("compute_gpu_hours", "compute GPU-hours", "GPU-h", "number",
         '=IF({training}=1,{compute_hours}*{cards_per_run},"")',
         lambda r, s, g: r["compute_hours"] * r["cards_per_run"] if _training(r) else None),
    Calc("tokens_per_day", "tokens per day (batch: per run)", "tokens", "int",
         _tokens_per_day_excel(), _tokens_per_day),
    Calc("tokens_per_sec_used", "tokens/s per replica", "tokens/s", "number",
         '=IF({training}=1,"",IF({tokens_per_sec}="",MIN({cards_per_run}*{gpu.bandwidth_gbs}*DecodeEfficiency'
         '*{concurrency}/{weights_gb},{cards_per_run}*{gpu.tflops}*Tera*{mfu_used}/(InferenceFlopsPerToken'
         '*{model_params_b}*Billion)),{tokens_per_sec}))', _tokens_per_sec),
    Calc("card_days", "load in card-days", "card-days", "number",
         '=IF({training}=1,"",{tokens_per_day}/({tokens_per_sec_used}*SecondsPerDay))',
         lambda r, s, g: None if _training(r) else r["tokens_per_day"] / (r["tokens_per_sec_used"] * K.SecondsPerDay)),
    Calc("replicas", "replicas", "replicas", "int",
         "=IF(" + _ONLINE_KIND + ",MAX(1,"
         'CEILING({tokens_per_day}*PeakFactor/({tokens_per_sec_used}'
         '*SecondsPerHour*{serving_hours_per_day}),1)),"")',
         lambda r, s, g: max(1, sheet_ceil(r["tokens_per_day"] * s.peak_factor / (
             r["tokens_per_sec_used"] * K.SecondsPerHour * r["serving_hours_per_day"]))) if _online(r) else None),
    Calc("cards_held", "cards held", "cards", "int",
         "=IF(" + _ONLINE_KIND + ',{replicas}*{cards_per_run},{cards_per_run})',
         lambda r, s, g: r["replicas"] * r["cards_per_run"] if _online(r) else r["cards_per_run"]),
    Calc("gpu_hours_per_run", "GPU-hours per run", "GPU-h", "number",
         '=IF({training}=1,({compute_hours}*(1+RunOverhead)*(1+DebugOverhead)+SetupHours)*{cards_per_run},'
         "IF(" + _OFFLINE_SERVING_KIND + ",({tokens_per_day}"
         '/({tokens_per_sec_used}*SecondsPerHour)+SetupHours)'
         '*{cards_per_run},""))', _gpu_hours_per_run),
    Calc("base_gpu_hours_per_month", "GPU-hours a month before spot reruns", "GPU-h", "number",
         "=IF(" + _ONLINE_KIND + ',{cards_held}*{serving_hours_per_day}*DaysPerMonth,'
         '{gpu_hours_per_run}*{runs_per_month})', _base_hours),
    Calc("gpu_hours_per_month", "GPU-hours a month", "GPU-h", "number",
         '={base_gpu_hours_per_month}*IF({tier}="spot",IF(' + _ONLINE_KIND + ',1,1+SpotOverhead),1)',
         lambda r, s, g: r["base_gpu_hours_per_month"] * (_spot_factor(r, s) if r["tier"] == "spot" else 1)),
    Calc("monthly_cards", "cards on a monthly contract", "cards", "int",
         "=MAX({cards_held},CEILING({base_gpu_hours_per_month}/HoursPerMonth,1))",
         lambda r, s, g: max(r["cards_held"], sheet_ceil(r["base_gpu_hours_per_month"] / s.hours_per_month))),
    Calc("cards_billed", "cards billed", "cards", "int", '=IF({tier}="monthly",{monthly_cards},{cards_held})',
         lambda r, s, g: r["monthly_cards"] if r["tier"] == "monthly" else r["cards_held"]),
    *(Calc(f"cost_{t}", f"cost if {t}", "currency/month", "money", _tier_cost_excel(t, TIER_PRICE_NAMES[t]),
           _tier_cost(t)) for t in TIERS),
    Calc("monthly_cost", "cost a month", "currency/month", "money",
         f"=CHOOSE(MATCH({{tier}},TierList,0),{_TIER_COSTS})",
         lambda r, s, g: r[f"cost_{r['tier']}"]),
    Calc("cheapest_tier", "cheapest suited tier", "tier", "text",
         "=IFERROR(IF(" + _ONLINE_KIND + ",INDEX"
         '(TierList,MATCH(MIN({cost_monthly}:{cost_on_demand}),'
         '{cost_monthly}:{cost_on_demand},0)),INDEX(TierList,MATCH(MIN({cost_monthly}:{cost_spot}),'
         '{cost_monthly}:{cost_spot},0))),"")', _cheapest_tier),
    Calc("tier_saving", "saving on cheapest tier", "currency/month", "money",
         f'=IF(OR({{cheapest_tier}}="",{{monthly_cost}}=""),0,'
         f'{{monthly_cost}}-CHOOSE(MATCH({{cheapest_tier}},TierList,0),{_TIER_COSTS}))',
         _tier_saving),
    Calc("tier_advice", "tier advice", "", "text",
         '=IF({tier_saving}>0,"cheaper on "&{cheapest_tier},"")',
         lambda r, s, g: f"cheaper on {r['cheapest_tier']}" if r["tier_saving"] > 0 else ""),
    Calc("start_index", "first plan month #", "#", "int", "=MATCH({start_month},PlanMonths,0)",
         lambda r, s, g: s.plan_months.index(r["start_month"]) + 1),
    Calc("end_index", "last plan month #", "#", "int", "=MATCH({end_month},PlanMonths,0)",
         lambda r, s, g: s.plan_months.index(r["end_month"]) + 1),
    Calc("active_months", "active months", "months", "int", "={end_index}-{start_index}+1",
         lambda r, s, g: r["end_index"] - r["start_index"] + 1),
    Calc("period_cost", "cost over the plan", "currency", "money",
         '=IF({monthly_cost}="","",{monthly_cost}*{active_months})',
         lambda r, s, g: None if r["monthly_cost"] is None else r["monthly_cost"] * r["active_months"]),
)
# Columns the Candidates sheet reads from the task's Tasks row instead of repeating: they do not depend on
# the GPU, or only advise on the chosen one.
CANDIDATE_FROM_TASKS = frozenset({"mfu_used", "training", "weights_gb", "vram_gb", "flops_per_run", "tokens_per_day",
                                  "start_index", "end_index", "active_months", "cheapest_tier", "tier_saving",
                                  "tier_advice", "cards_billed", "period_cost"})


def evaluate(inputs: Row, settings, gpu) -> Row:
    """Run every calculated column for one task on one GPU; returns inputs plus results."""
    row = dict(inputs)
    row["gpu"] = gpu.name
    for calc in CALCS:
        row[calc.key] = calc.py(row, settings, gpu)
    return row
