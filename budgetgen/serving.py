"""Calculation model v2: batched serving per replica, MoE and LoRA/QLoRA training. No I/O.

Every function maps one-to-one onto a spreadsheet formula, written beside it as `EXCEL` text in the
placeholder style of columns.py: `{name}` is the same row's cell of another column, `{gpu.field}` the
row's GPU on the GPUs sheet and `{model.field}` the row's model on the Models sheet (blank when the task
names no model or the catalog lacks the figure); every other word is a named cell on Assumptions.
Spreadsheets round to 15 significant digits before FLOOR and CEILING; `sheet_floor` and `sheet_ceil` do
the same, so the workbook and the engine agree on every boundary.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import SimpleNamespace

from .schema import (  # noqa: F401  (SERVING_* re-exported: the v2 declarations live in the schema)
    CHANGED_DEFAULTS,
    CONSTANT_VALUES,
    SERVING_CONSTANTS,
    SERVING_METHODS,
    SERVING_SETTINGS,
    SETTINGS,
)

K = SimpleNamespace(**CONSTANT_VALUES)

KS = SimpleNamespace(**{name: value for name, value, _ in SERVING_CONSTANTS})

CARDS_PER_REPLICA_SHAPES = (1, 2, 4, 8)
# How a shape is written in a formula: by the named cells of Assumptions, never a constant.
SHAPE_NAMES = {1: "1", 2: "TwoCards", 4: "FourCards", 8: "CardsPerNode"}
MAX_REPLICA_SHAPE = CARDS_PER_REPLICA_SHAPES[-1]  # one 8-card node: tensor parallelism stays inside it


def default_settings(**overrides) -> SimpleNamespace:
    """Every setting's default (the schema's SETTINGS hold the v2 settings and recalibrated defaults)."""
    values = {s.key: s.default for s in SETTINGS}
    unknown = set(overrides) - set(values)
    if unknown:
        raise KeyError(f"unknown settings: {', '.join(sorted(unknown))}")
    return SimpleNamespace(**(values | overrides))


def sheet_ceil(x: float) -> int:
    """CEILING(x, 1) as a spreadsheet computes it: rounded to 15 significant digits first."""
    return math.ceil(float(f"{x:.15g}"))


def sheet_floor(x: float) -> int:
    """FLOOR(x, 1) as a spreadsheet computes it: rounded to 15 significant digits first."""
    return math.floor(float(f"{x:.15g}"))


# ---------------------------------------------------------------- task inputs filled from the catalog

PARAMS_USED_EXCEL = '=IF({model_params_b}<>"",{model_params_b},{model.total_params_b})'


def params_used(typed: float | None, catalog_total: float | None) -> float | None:
    """Total parameters (billions): a typed model_params_b overrides the catalog model's (the reader requires one)."""
    return typed if typed is not None else catalog_total


ACTIVE_USED_EXCEL = ('=MIN({params_used},IF({active_params_b}<>"",{active_params_b},'
                     'IF({model.active_params_b}<{model.total_params_b},{model.active_params_b},{params_used})))')


def active_used(typed: float | None, *, params: float, catalog_total: float | None,
                catalog_active: float | None) -> float:
    """Active parameters (billions): typed, else the catalog's for a mixture of experts, else all of them
    (a dense model resized by a typed model_params_b stays dense); never more than the total."""
    if typed is not None:
        active = typed
    elif catalog_active is not None and catalog_total is not None and catalog_active < catalog_total:
        active = catalog_active
    else:
        active = params
    return min(params, active)


PROMPT_EXCEL = '=IF({prompt_tokens}<>"",{prompt_tokens},DefaultPromptTokens)'


def prompt_used(prompt: float | None, default_prompt_tokens: float) -> float:
    """Input tokens per request: typed, else DefaultPromptTokens."""
    return prompt if prompt is not None else default_prompt_tokens


CONTEXT_EXCEL = '=IF({context_tokens}<>"",{context_tokens},{prompt_used}+{tokens_per_request})'


def context_used(context: float | None, *, prompt: float, output: float) -> float:
    """Tokens one sequence holds in the KV cache: typed, else prompt plus output."""
    return context if context is not None else prompt + output


# ---------------------------------------------------------------- precision

KV_BYTES_EXCEL = '=IF(KvCacheDtype="fp8",BytesFp8,BytesFp16)'


def kv_bytes(kv_cache_dtype: str) -> float:
    """Bytes of one cached KV element: the Assumptions cell KvBytes."""
    return KS.BytesFp8 if kv_cache_dtype == "fp8" else K.BytesFp16


# fp4 weights carry their NVFP4 block scales (BytesFp4); int4 stays at its 4 bits (model v2)
BYTES_PER_PARAM_EXCEL = ('=IF({method}="fp4",BytesFp4,IF({method}="int4",BytesInt4,'
                         'IF(OR({method}="int8",{method}="fp8"),BytesInt8,BytesFp16)))')


def bytes_per_param(method: str | None) -> float:
    """Bytes per served weight: fp16/bf16 2, fp8/int8 1, int4/fp4 0.5 (BytesInt8 and BytesInt4 name the widths)."""
    if method in ("int4", "fp4"):
        return K.BytesInt4
    if method in ("int8", "fp8"):
        return K.BytesInt8
    return K.BytesFp16


KV_BYTES_PER_TOKEN_EXCEL = ('=IF({model.kv_latent}<>"",{model.layers}*{model.kv_latent}*KvBytes,'
                            'IF({model.kv_heads}<>"",'
                            'KvTensors*{model.layers}*{model.kv_heads}*{model.head_dim}*KvBytes,'
                            'KvFallbackBytes*SQRT({active_used})*KvBytes/BytesFp16))')


def kv_bytes_per_token(*, layers: float | None, kv_heads: float | None, head_dim: float | None,
                       kv_latent: float | None, active_params_b: float, kv_bytes: float,
                       kv_fallback_bytes: float) -> float:
    """KV-cache bytes one token holds: MLA latent, else 2·layers·kv_heads·head_dim, else the fallback."""
    if kv_latent is not None:
        assert layers is not None, "a catalog model gives layers with kv_latent (models._check_architecture)"
        return layers * kv_latent * kv_bytes
    if kv_heads is not None:
        assert layers is not None and head_dim is not None, "a catalog model gives layers and head_dim with kv_heads"
        return KS.KvTensors * layers * kv_heads * head_dim * kv_bytes
    return kv_fallback_bytes * math.sqrt(active_params_b) * kv_bytes / K.BytesFp16


def _peak_excel(precision: str, efficiency: str, fp4_efficiency: str | None = None) -> str:
    """The datasheet peak a precision (a cell holding fp8, fp4 or another word) uses, at `efficiency` for FP8/FP4
    (`fp4_efficiency`, where given, on the FP4 unit)."""
    return (f'IF(AND({precision}="fp4",{{gpu.tflops_fp4}}<>""),{{gpu.tflops_fp4}}*{fp4_efficiency or efficiency},'
            f'IF(AND(OR({precision}="fp8",{precision}="fp4"),{{gpu.tflops_fp8}}<>""),{{gpu.tflops_fp8}}*{efficiency},'
            '{gpu.tflops}))')


_MATMUL_EFFICIENCY = 'IF({gpu.matmul_efficiency}<>"",{gpu.matmul_efficiency},1)'
_TRAINING_EFFICIENCY = f'IF({{gpu.training_efficiency}}<>"",{{gpu.training_efficiency}},{_MATMUL_EFFICIENCY})'
# Training on an FP4 unit at TrainFp4Efficiency: NVFP4 recipes keep attention and some layers in higher precision
# (docs/models.md, "v4 FP4 training"); an FP4 run on a card without one trains on its FP8 unit as FP8 does.
PEAK_TFLOPS_EXCEL = (f'=IF({{training}}=1,{_peak_excel("{train_precision}", "TrainFp8Efficiency", "TrainFp4Efficiency")}'
                     f'*{_TRAINING_EFFICIENCY},{_peak_excel("{method}", "Fp8Efficiency")}*{_MATMUL_EFFICIENCY})')


def peak_tflops(precision: str | None, *, tflops: float, tflops_fp8: float | None, tflops_fp4: float | None,
                fp8_efficiency: float, matmul_efficiency: float | None = None) -> float:
    """Matmul peak a precision reaches: fp4 → fp8 → BF16 unit, whichever the card has first, the FP8/FP4 units at
    `fp8_efficiency` (Fp8Efficiency serving, TrainFp8Efficiency training); times the card's matmul_efficiency (a
    training run passes the card's training_efficiency, where it has one, in its place)."""
    if precision == "fp4" and tflops_fp4 is not None:
        peak = tflops_fp4 * fp8_efficiency
    elif precision in ("fp8", "fp4") and tflops_fp8 is not None:
        peak = tflops_fp8 * fp8_efficiency
    else:
        peak = tflops
    return peak * (1 if matmul_efficiency is None else matmul_efficiency)


BANDWIDTH_SHARE_EXCEL = '=IF({gpu.bandwidth_efficiency}<>"",{gpu.bandwidth_efficiency},DecodeEfficiency)'


def bandwidth_share(bandwidth_efficiency: float | None, decode_efficiency: float) -> float:
    """Share of the card's memory bandwidth decode reads reach: the card's own, else DecodeEfficiency."""
    return decode_efficiency if bandwidth_efficiency is None else bandwidth_efficiency


# Model v4: the doublings weighted by how little of the model each card holds (TpReferenceParams billions a card
# and more: 1); docs/models.md, "Tensor parallelism by each card's share of the model and the interconnect".
TP_FACTOR_EXCEL = ('=POWER(IF({gpu.interconnect}="nvlink",TpEfficiencyNvlink,TpEfficiency),'
                   'LOG({cards_per_run},TwoCards)*MAX(1,POWER(TpReferenceParams*{cards_per_run}/{params_used},'
                   'TpSizeExponent)))')


def tp_factor(cards: int, tp_efficiency: float, *, params_b: float | None = None, reference_params_b: float = 1,
              size_exponent: float = 0) -> float:
    """Speed factor of a replica spread over `cards`: the interconnect's tensor-parallel efficiency per doubling,
    the doublings weighted by MAX(1, (TpReferenceParams / params_b)^TpSizeExponent) (model v4): a smaller model
    leaves each card less work a layer against the same synchronisation, so it loses more per doubling."""
    weight = 1 if params_b is None else max(1, (reference_params_b / params_b) ** size_exponent)
    return tp_efficiency ** (math.log2(cards) * weight)


def tp_efficiency_of(interconnect: str, *, tp_efficiency: float, tp_efficiency_nvlink: float) -> float:
    """Tensor-parallel efficiency per doubling of a card's interconnect: NVLink-class, else PCIe (TpEfficiency)."""
    return tp_efficiency_nvlink if interconnect == "nvlink" else tp_efficiency


# ---------------------------------------------------------------- memory and batch

FREE_GB_EXCEL = ("={cards_per_run}*{gpu.vram_gb}*UsableVram-{params_used}*{bytes_per_param}"
                 "*(1+InferenceOverhead)-{kv_cache_gb}")


def free_memory_gb(*, cards: int, vram_gb: float, usable_vram: float, params_b: float, bytes_per_param: float,
                   inference_overhead: float, kv_cache_gb: float | None) -> float:
    """Memory of a replica left for the KV cache after weights, runtime and a user's extra kv_cache_gb."""
    return cards * vram_gb * usable_vram - params_b * bytes_per_param * (1 + inference_overhead) - (kv_cache_gb or 0)


BATCH_MEM_EXCEL = "=MAX(0,FLOOR({free_gb}*Billion/({kv_bytes_per_token}*{context_used}),1))"


def batch_by_memory(free_gb: float, kv_tok: float, context: float) -> int:
    """Sequences of `context` tokens whose KV cache fits in `free_gb` (0 when the weights do not fit)."""
    return max(0, sheet_floor(free_gb * K.Billion / (kv_tok * context)))


BATCH_EXCEL = ('=MIN(IF({concurrency}="",MaxBatchPerCard*{cards_per_run},{concurrency}),{batch_mem},'
               'IF({latency_batch}="",{batch_mem},{latency_batch}))')


def batch_size(concurrency: float | None, *, cards: int, max_batch_per_card: int, batch_mem: int,
               latency_batch: int | None = None) -> float:
    """Sequences decoded together: the user's concurrency, else the engine's cap, at most what fits and what the
    latency targets allow."""
    wanted = max_batch_per_card * cards if concurrency is None else concurrency
    return min(wanted, batch_mem, batch_mem if latency_batch is None else latency_batch)


# ---------------------------------------------------------------- time per step and per request

WEIGHTS_READ_EXCEL = ('=IF(AND({model.experts}<>"",{active_used}<{params_used}),'
                      '{active_used}+({params_used}-{active_used})/({model.experts}-{model.experts_per_token})'
                      '*({model.experts}*(1-POWER(1-{model.experts_per_token}/{model.experts},{batch}))'
                      '-{model.experts_per_token}),'
                      'MIN({params_used},{active_used}*{batch}))')


def weights_read(*, params_b: float, active_params_b: float, batch: float, experts: int | None,
                 experts_per_token: int | None) -> float:
    """Parameters (billions) one decode step reads. A mixture of experts with E routed experts, k per token: the
    dense part plus the expected distinct experts a batch's tokens pick, E·(1 − (1 − k/E)^batch), each expert
    (N − Na)/(E − k) of the parameters; without the expert counts, every token's experts apart, at most all."""
    if experts is None or experts_per_token is None or active_params_b >= params_b:
        return min(params_b, active_params_b * batch)
    per_expert = (params_b - active_params_b) / (experts - experts_per_token)
    distinct = experts * (1 - (1 - experts_per_token / experts) ** batch)
    return active_params_b + per_expert * (distinct - experts_per_token)


T_MEM_EXCEL = ("=({weights_read}*Billion*{bytes_per_param}"
               "+{batch}*{kv_bytes_per_token}*({prompt_used}+{tokens_per_request}*MeanOutputShare)/KvReadEfficiency)"
               "/({cards_per_run}*{gpu.bandwidth_gbs}*Billion*{bandwidth_share}*{tp})")


def decode_memory_seconds(*, weights_b: float, batch: float, bytes_per_param: float,
                          kv_tok: float, prompt: float, output: float, cards: int, bandwidth_gbs: float,
                          decode_efficiency: float, tp: float, kv_read_efficiency: float = 1) -> float:
    """Time of one decode step spent reading weights (`weights_b` billions, the experts touched by the batch) and the
    KV cache, at `decode_efficiency` of the bandwidth; the cache's batch x context bytes at `kv_read_efficiency` of
    that again (model v4: attention kernels read a paged cache less well than a matmul reads its weights)."""
    cache = batch * kv_tok * (prompt + output * KS.MeanOutputShare) / kv_read_efficiency
    return (weights_b * K.Billion * bytes_per_param + cache) / (cards * bandwidth_gbs * K.Billion * decode_efficiency
                                                                 * tp)


T_CMP_EXCEL = ("=InferenceFlopsPerToken*{active_used}*Billion*{batch}"
               "/({cards_per_run}*{peak_tflops}*Tera*DecodeMfu*{tp})")


def decode_compute_seconds(*, active_params_b: float, batch: float, cards: int, peak: float, decode_mfu: float,
                           tp: float) -> float:
    """Time of one decode step spent on matmuls for `batch` tokens."""
    return K.InferenceFlopsPerToken * active_params_b * K.Billion * batch / (cards * peak * K.Tera * decode_mfu * tp)


_NVLINK = '{gpu.interconnect}="nvlink"'
LAYER_FIXED_EXCEL = (
    '=IF({model.layers}<>"",{model.layers}*(IF({active_used}<{params_used},MoeLayerOverheadUs/Micro,0)'
    f'+IF({{cards_per_run}}>1,AllReducesPerLayer*IF({_NVLINK},AllReduceUsNvlink,AllReduceUsPcie)/Micro,0)),0)')


def layer_fixed_seconds(*, layers: float | None, moe: bool, cards: int, interconnect: str, s) -> float:
    """The part of a decode step's per-layer time that does not grow with the batch: router and expert kernels of a
    mixture of experts (MoeLayerOverheadUs), and the latency of a multi-card replica's two all-reduces over its
    interconnect. 0 when the layers are unknown. `s`: the settings."""
    if layers is None:
        return 0
    per_layer = s.moe_layer_overhead_us / KS.Micro if moe else 0
    if cards > 1:
        latency = s.allreduce_us_nvlink if interconnect == "nvlink" else s.allreduce_us_pcie
        per_layer += KS.AllReducesPerLayer * latency / KS.Micro
    return layers * per_layer


LAYER_PER_SEQUENCE_EXCEL = (
    '=IF(AND({model.layers}<>"",{model.hidden}<>"",{cards_per_run}>1),{model.layers}*AllReducesPerLayer'
    '*RingAllReduceTraffic*({cards_per_run}-1)/{cards_per_run}*{model.hidden}*BytesActivation'
    f'/(IF({_NVLINK},NvlinkGbs,PcieGbs)*Billion),0)')


def layer_seconds_per_sequence(*, layers: float | None, hidden: float | None, cards: int, interconnect: str,
                               s) -> float:
    """The per-layer time each sequence of the batch adds to a decode step: a ring's twice (n-1)/n of its hidden
    state, two all-reduces a layer, at the interconnect's bandwidth. 0 on one card or with the size unknown."""
    if layers is None or hidden is None or cards <= 1:
        return 0
    gbs = s.nvlink_gbs if interconnect == "nvlink" else s.pcie_gbs
    return layers * KS.AllReducesPerLayer * KS.RingAllReduceTraffic * (cards - 1) / cards * hidden \
        * KS.BytesActivation / (gbs * K.Billion)


LAYER_OVERHEAD_EXCEL = "={t_layers_fixed}+{t_layers_per_sequence}*{batch}"


def layer_overhead_seconds(*, layers: float | None, hidden: float | None, moe: bool, cards: int, batch: float,
                           interconnect: str, s) -> float:
    """Time a decode step spends per layer beyond reading and multiplying: the fixed part and each sequence's
    all-reduce traffic (`layer_fixed_seconds`, `layer_seconds_per_sequence`)."""
    return layer_fixed_seconds(layers=layers, moe=moe, cards=cards, interconnect=interconnect, s=s) + batch * \
        layer_seconds_per_sequence(layers=layers, hidden=hidden, cards=cards, interconnect=interconnect, s=s)


T_STEP_EXCEL = "=StepOverheadMs/Milli+{t_layers}+MAX({t_mem},{t_cmp})"


def step_seconds(t_mem: float, t_cmp: float, step_overhead_ms: float, t_layers: float = 0) -> float:
    """One decode step: the fixed overhead, the per-layer overhead, and the slower of memory and compute."""
    return step_overhead_ms / KS.Milli + t_layers + max(t_mem, t_cmp)


T_PRE_EXCEL = ('=(InferenceFlopsPerToken*{active_used}*Billion*{prompt_used}'
               '+IF({model.head_dim}<>"",PrefillAttentionFlops*{model.layers}*{model.attn_heads}*{model.head_dim}'
               '*{prompt_used}*{prompt_used},0))'
               '/({cards_per_run}*{peak_tflops}*Tera*PrefillMfu*{tp})')


def prefill_seconds(*, active_params_b: float, prompt: float, layers: float | None, attn_heads: float | None,
                    head_dim: float | None, cards: int, peak: float, prefill_mfu: float, tp: float) -> float:
    """Time to read one prompt: weight matmuls plus, when the architecture is known, attention (p²)."""
    attention = KS.PrefillAttentionFlops * layers * attn_heads * head_dim * prompt * prompt if head_dim is not None else 0
    return (K.InferenceFlopsPerToken * active_params_b * K.Billion * prompt + attention) / (
        cards * peak * K.Tera * prefill_mfu * tp)


# ---------------------------------------------------------------- latency targets

STEP_TARGET_EXCEL = ('=IF(AND({tpot_ms}="",{ttft_ms}=""),"",MIN(IF({tpot_ms}="",{ttft_ms},{tpot_ms})/Milli,'
                     'IF({ttft_ms}="",{tpot_ms}/Milli,{ttft_ms}/Milli-{t_pre})))')


def step_target(ttft_ms: float | None, tpot_ms: float | None, *, t_pre: float) -> float | None:
    """Longest decode step (s) the latency targets allow: the time per output token, and the time to the first
    token less the request's prompt reading (the first token is one step after it); None without targets."""
    limits = [t / KS.Milli for t in (tpot_ms,) if t is not None]
    if ttft_ms is not None:
        limits.append(ttft_ms / KS.Milli - t_pre)
    return min(limits) if limits else None


ROUTED_EXCEL = ('=IF({active_used}<{params_used},IF({model.experts}<>"",{model.experts_per_token}'
                '*({params_used}-{active_used})/({model.experts}-{model.experts_per_token}),{active_used}),0)')


def routed_params(*, params_b: float, active_params_b: float, experts: int | None,
                  experts_per_token: int | None) -> float:
    """Parameters (billions) each added sequence can at most add to a decode step's reads: one token's routed
    experts (all its active parameters without the expert counts); 0 for a dense model."""
    if active_params_b >= params_b:
        return 0
    if experts is None or experts_per_token is None:
        return active_params_b
    return experts_per_token * (params_b - active_params_b) / (experts - experts_per_token)


_ROOM = "({step_target}-StepOverheadMs/Milli-{t_layers_fixed})"
_READ = "{cards_per_run}*{gpu.bandwidth_gbs}*Billion*{bandwidth_share}*{tp}"
_KV_READ = "{kv_bytes_per_token}*({prompt_used}+{tokens_per_request}*MeanOutputShare)/KvReadEfficiency"
_COMPUTE = "({cards_per_run}*{peak_tflops}*Tera*DecodeMfu*{tp})"
# INT, not FLOOR(..., 1): LibreOffice answers #VALUE! for FLOOR over this expression (it takes INT, and both
# agree on the non-negative numbers it sees).
LATENCY_BATCH_EXCEL = (
    f'=IF({{step_target}}="","",INT(MAX(0,MIN(MAX('
    f'({_ROOM}*{_READ}-({{active_used}}-{{routed_b}})*Billion*{{bytes_per_param}})'
    f'/({{t_layers_per_sequence}}*{_READ}+{{routed_b}}*Billion*{{bytes_per_param}}+{_KV_READ}),'
    f'({_ROOM}*{_READ}-{{params_used}}*Billion*{{bytes_per_param}})/({{t_layers_per_sequence}}*{_READ}+{_KV_READ})),'
    f'{_ROOM}*{_COMPUTE}/({{t_layers_per_sequence}}*{_COMPUTE}+InferenceFlopsPerToken*{{active_used}}*Billion)'
    '))))')


def latency_batch(target: float | None, *, step_overhead_ms: float, layers_fixed: float, layers_per_sequence: float,
                  params_b: float, active_params_b: float, routed_b: float, bytes_per_param: float, kv_tok: float,
                  prompt: float, output: float, cards: int, bandwidth_gbs: float, decode_efficiency: float,
                  peak: float, decode_mfu: float, tp: float, kv_read_efficiency: float = 1) -> int | None:
    """Most sequences a replica decodes together within the step `target` (s): 0 when even one misses it, None
    without a target. A step is linear in the batch b but for the weights it reads, which are bounded twice: by
    one sequence's active parameters plus `routed_b` for each further one (exact for one sequence), and by all the
    parameters; a batch that meets the target on either bound meets it on the distinct experts it reads. Memory
    and compute must both meet it (the step takes the slower)."""
    if target is None:
        return None
    room = target - step_overhead_ms / KS.Milli - layers_fixed
    read = cards * bandwidth_gbs * K.Billion * decode_efficiency * tp
    kv_read = kv_tok * (prompt + output * KS.MeanOutputShare) / kv_read_efficiency
    by_first = (room * read - (active_params_b - routed_b) * K.Billion * bytes_per_param) / (
        layers_per_sequence * read + routed_b * K.Billion * bytes_per_param + kv_read)
    by_all = (room * read - params_b * K.Billion * bytes_per_param) / (layers_per_sequence * read + kv_read)
    compute = cards * peak * K.Tera * decode_mfu * tp
    by_compute = room * compute / (layers_per_sequence * compute + K.InferenceFlopsPerToken * active_params_b
                                   * K.Billion)
    return math.floor(max(0, min(max(by_first, by_all), by_compute)))


REQ_S_EXCEL = ('=IF({tokens_per_sec}<>"",{tokens_per_sec}/{tokens_per_request},'
               '1/({t_pre}+{tokens_per_request}*{t_step}/{batch}))')


def requests_per_sec(*, t_pre: float, output: float, t_step: float, batch: float,
                     tokens_per_sec: float | None = None) -> float:
    """Requests a replica completes per second; a measured tokens/s replaces the estimate."""
    if tokens_per_sec is not None:
        return tokens_per_sec / output
    return 1 / (t_pre + output * t_step / batch)


OUTPUT_TOKENS_PER_SEC_EXCEL = "={tokens_per_request}*{requests_per_sec}"


def output_tokens_per_sec(output: float, req_s: float) -> float:
    """Output (generated) tokens/s of one replica."""
    return output * req_s


USER_TOKENS_PER_SEC_EXCEL = "=1/{t_step}"


def user_tokens_per_sec(t_step: float) -> float:
    """Tokens/s one user sees while the answer streams."""
    return 1 / t_step


# ---------------------------------------------------------------- replicas and runs

def fits_excel(shape: int) -> str:
    """Whether a replica of `shape` cards divides the heads and holds the minimum batch (§D), as an Excel test."""
    n = SHAPE_NAMES[shape]
    return (f'AND(IF({{model.attn_heads}}="",TRUE,MOD({{model.attn_heads}},{n})=0),'
            f'FLOOR(({n}*{{gpu.vram_gb}}*UsableVram-{{params_used}}*{{bytes_per_param}}*(1+InferenceOverhead)'
            f'-{{kv_cache_gb}})*Billion/({{kv_bytes_per_token}}*{{context_used}}),1)'
            f'>=IF({{concurrency}}="",MinBatch,MIN({{concurrency}},MinBatch)))')


CARDS_PER_REPLICA_EXCEL = ('=IF({cards}<>"",{cards},'
                           + "".join(f"IF({fits_excel(n)},{SHAPE_NAMES[n]}," for n in CARDS_PER_REPLICA_SHAPES)
                           + '""' + ")" * len(CARDS_PER_REPLICA_SHAPES) + ")")


def cards_per_replica(*, cards: int | None, attn_heads: float | None, concurrency: float | None, min_batch: int,
                      vram_gb: float, usable_vram: float, params_b: float, bytes_per_param: float,
                      inference_overhead: float, kv_cache_gb: float | None, kv_tok: float,
                      context: float) -> int | None:
    """The user's cards, else the smallest of 1, 2, 4, 8 that divides attn_heads and holds the batch
    (concurrency, at most MinBatch; MinBatch when concurrency is blank). None: not a candidate
    ("needs more than 8 cards per replica: use fp8/int4 or a larger card")."""
    if cards is not None:
        return cards
    need = min_batch if concurrency is None else min(concurrency, min_batch)
    for n in CARDS_PER_REPLICA_SHAPES:
        if attn_heads is not None and attn_heads % n:
            continue
        free = free_memory_gb(cards=n, vram_gb=vram_gb, usable_vram=usable_vram, params_b=params_b,
                              bytes_per_param=bytes_per_param, inference_overhead=inference_overhead,
                              kv_cache_gb=kv_cache_gb)
        if batch_by_memory(free, kv_tok, context) >= need:
            return n
    return None


REPLICAS_EXCEL = ("=MAX(MinReplicas,CEILING({requests_per_day}*PeakFactor"
                  "/({serving_hours_per_day}*SecondsPerHour*{requests_per_sec}),1))")


def inference_replicas(*, requests_per_day: float, peak_factor: float, serving_hours_per_day: float, req_s: float,
                       min_replicas: int) -> int:
    """Replicas an online service needs for its peak traffic, never fewer than MinReplicas."""
    return max(min_replicas, sheet_ceil(requests_per_day * peak_factor / (serving_hours_per_day * K.SecondsPerHour
                                                                          * req_s)))


DEADLINE_DAYS_EXCEL = '=IF({deadline_days}<>"",{deadline_days},DaysPerMonth/{runs_per_month})'


def deadline_days(deadline: float | None, *, hours_per_month: float, runs_per_month: float) -> float:
    """Wall-clock days a training or batch run may take: the user's, else its share of a month."""
    return deadline if deadline is not None else hours_per_month / K.HoursPerDay / runs_per_month


REPLICA_HOURS_EXCEL = "={batch_requests}/({requests_per_sec}*SecondsPerHour)"


def replica_hours(batch_requests: float, req_s: float) -> float:
    """Hours one replica needs for a batch run's requests."""
    return batch_requests / (req_s * K.SecondsPerHour)


BATCH_REPLICAS_EXCEL = ('=IF({deadline_used}*HoursPerDay>SetupHours,'
                        'CEILING({replica_hours}/({deadline_used}*HoursPerDay-SetupHours),1),"")')


def run_window(deadline: float, setup_hours: float) -> float:
    """Hours a training or batch run has for its work: its deadline less the setup every run starts with."""
    return deadline * K.HoursPerDay - setup_hours


def batch_replicas(hours: float, *, deadline: float, setup_hours: float) -> int | None:
    """Replicas a batch run needs to finish by its deadline; None when the deadline is shorter than the setup."""
    window = run_window(deadline, setup_hours)
    return sheet_ceil(hours / window) if window > 0 else None


BATCH_GPU_HOURS_EXCEL = "=({replica_hours}+SetupHours*{batch_replicas})*{cards_per_run}"


def batch_gpu_hours_per_run(hours: float, *, replicas: int, setup_hours: float, cards: int) -> float:
    """GPU-hours of one batch run: the work, plus each replica's setup, on every card of a replica."""
    return (hours + setup_hours * replicas) * cards


# ---------------------------------------------------------------- capacity that can run (§F)

TRAINING_SMALL_SHAPES = (1, 2, 4)  # then whole nodes of MAX_REPLICA_SHAPE cards


def training_shape(n: float) -> int:
    """The card shape of a training run holding at least `n` cards: 1, 2, 4, then multiples of 8."""
    for shape in TRAINING_SMALL_SHAPES:
        if n <= shape:
            return shape
    return MAX_REPLICA_SHAPE * sheet_ceil(n / MAX_REPLICA_SHAPE)


def training_shape_excel(n: str) -> str:
    """`training_shape` as an Excel expression of the expression `n`."""
    chain = "".join(f"IF({n}<={SHAPE_NAMES[shape]},{SHAPE_NAMES[shape]}," for shape in TRAINING_SMALL_SHAPES)
    node = SHAPE_NAMES[MAX_REPLICA_SHAPE]
    return chain + f"{node}*CEILING({n}/{node},1)" + ")" * len(TRAINING_SMALL_SHAPES)


SCALE_FACTOR_EXCEL = ("=IF({cards_per_run}<=ScaleFreeCards,1,"
                      "POWER(ScaleEfficiency,LOG({cards_per_run}/ScaleFreeCards,TwoCards)))")


def scale_factor(cards: float, *, scale_free_cards: float, scale_efficiency: float) -> float:
    """Model v4: the share of its per-card speed a training run keeps at `cards` cards. Up to ScaleFreeCards,
    all of it; beyond, ScaleEfficiency per doubling (Llama 3, arXiv:2407.21783 table 4: 430 TFLOP/s a card on
    8,192 H100, 400 on 16,384)."""
    if cards <= scale_free_cards:
        return 1
    return scale_efficiency ** math.log2(cards / scale_free_cards)


def cards_at_scale_excel(n: str) -> str:
    """`cards_at_scale` as an Excel expression of the expression `n`."""
    return (f"IF({n}<=ScaleFreeCards,{n},"
            f"ScaleFreeCards*POWER(({n})/ScaleFreeCards,1/(1+LOG(ScaleEfficiency,TwoCards))))")


def cards_at_scale(n: float, *, scale_free_cards: float, scale_efficiency: float) -> float:
    """The cards that do the work of `n` cards at full per-card speed, `scale_factor` applied: with
    a = log2(ScaleEfficiency), n' = ScaleFreeCards·(n/ScaleFreeCards)^(1/(1+a)) solves
    n'·(n'/ScaleFreeCards)^a = n in closed form (a spreadsheet needs no iteration); n itself up to ScaleFreeCards."""
    if n <= scale_free_cards:
        return n
    return scale_free_cards * (n / scale_free_cards) ** (1 / (1 + math.log2(scale_efficiency)))


def cards_for_deadline(single_card_hours: float, *, run_overhead: float, deadline: float, setup_hours: float,
                       scaling: float, impossible: float) -> float:
    """n_needed of §F: the cards whose wall clock, compute_hours(n)·(1 + RunOverhead) + SetupHours with
    speedup 1 + (n − 1)·scaling, meets the deadline; `impossible` when no number of cards does."""
    work = single_card_hours * (1 + run_overhead)
    window = run_window(deadline, setup_hours)
    if work <= window:
        return 1
    if window <= 0 or scaling <= 0:
        return impossible
    return 1 + (work / window - 1) / scaling


# ---------------------------------------------------------------- training (§E)

FLOPS_PER_TOKEN_EXCEL = ('=IF({method}="lora",LoraFlopsPerToken,'
                         'IF({method}="qlora",QloraFlopsPerToken,FlopsPerToken))')


def training_flops_per_token(method: str | None, *, flops_per_token: float, lora_flops_per_token: float,
                             qlora_flops_per_token: float) -> float:
    """k: training FLOPs per active parameter per token for a method (full and pretraining: FlopsPerToken)."""
    if method == "lora":
        return lora_flops_per_token
    if method == "qlora":
        return qlora_flops_per_token
    return flops_per_token


TRAINING_FLOPS_EXCEL = "={flops_per_token_used}*{active_used}*Billion*{train_tokens}*{epochs}"


def training_flops(*, k: float, active_params_b: float, train_tokens: float, epochs: float) -> float:
    """FLOPs of one training run: only active parameters compute (MoE)."""
    return k * active_params_b * K.Billion * train_tokens * epochs


MFU_USED_EXCEL = ('=IF({mfu}<>"",{mfu},IF(OR({method}="lora",{method}="qlora"),LoraMfu,'
                  'IF(AND({active_used}<{params_used},{model.experts}=""),MoeMfu,MfuRate)))')


def mfu_used(task_mfu: float | None, *, method: str | None = None, params_b: float, active_params_b: float,
             mfu: float, moe_mfu: float, lora_mfu: float | None = None, experts: int | None = None) -> float:
    """The task's MFU, else LoraMfu for LoRA/QLoRA, else MoeMfu for a mixture of experts whose experts the
    catalog does not count, else MfuRate (a counted mixture of experts pays its expert exchange in `run_mfu`)."""
    if task_mfu is not None:
        return task_mfu
    if method in ("lora", "qlora") and lora_mfu is not None:
        return lora_mfu
    return moe_mfu if active_params_b < params_b and experts is None else mfu


_EXCHANGE_KNOWN = 'AND({mfu}="",{active_used}<{params_used},{model.experts}<>"",{model.hidden}<>"")'
RUN_MFU_EXCEL = (f'=IF({_EXCHANGE_KNOWN},{{mfu_used}}/(1+MoeCommExposed*MoeAllToAllPasses*{{model.experts_per_token}}'
                 '*{model.hidden}*BytesActivation*{model.layers}*{peak_tflops}*Tera*{mfu_used}'
                 '/({flops_per_token_used}*{active_used}*Billion*MoeNetworkGbs*Billion)),{mfu_used})')


def run_mfu(mfu: float, *, task_mfu: float | None, params_b: float, active_params_b: float, k: float,
            experts_per_token: int | None, hidden: float | None, layers: float | None, peak_tflops: float,
            moe_network_gbs: float, moe_comm_exposed: float) -> float:
    """The MFU a training run reaches on its card. A mixture of experts (its expert counts and hidden size known,
    no MFU typed) sends each token's hidden state to its k experts and back, forward and backward, in every
    layer: MoeAllToAllPasses·k·hidden·2 bytes per layer against k·Na FLOPs, over MoeNetworkGbs, MoeCommExposed of
    it not hidden behind compute. The faster the card and the finer the experts, the larger that share."""
    if task_mfu is not None or active_params_b >= params_b or experts_per_token is None or hidden is None:
        return mfu
    exchange_bytes = KS.MoeAllToAllPasses * experts_per_token * hidden * KS.BytesActivation * layers
    compute_seconds = k * active_params_b * K.Billion / (peak_tflops * K.Tera * mfu)
    exchange_seconds = moe_comm_exposed * exchange_bytes / (moe_network_gbs * K.Billion)
    return mfu / (1 + exchange_seconds / compute_seconds)


TRAINING_GPU_HOURS_EXCEL = "={flops_per_run}/({peak_tflops}*Tera*{mfu_run}*SecondsPerHour)"


def training_gpu_hours(flops: float, *, tflops: float, mfu: float) -> float:
    """GPU-hours of a run's compute at perfect scaling on a card of `tflops` peak (its precision's, at the card's
    matmul efficiency), before run, debug and setup overheads."""
    return flops / (tflops * K.Tera * mfu * K.SecondsPerHour)


STATE_BYTES_EXCEL = ('=BytesWeightsGrads+IF({optimizer}="adamw_8bit",Adam8bitStateBytes,'
                     'IF({optimizer}="cpu_offload",0,AdamStateBytes))')


def state_bytes(optimizer: str | None, *, adam_state_bytes: float, adam_8bit_state_bytes: float) -> float:
    """Bytes a trained parameter holds on the card: bf16 weights and gradients plus the optimizer's state there
    (AdamW: fp32 master, momentum, variance; 8-bit AdamW: fp32 master and 1-byte moments; CPU offload: none)."""
    if optimizer == "cpu_offload":
        return K.BytesWeightsGrads
    return K.BytesWeightsGrads + (adam_8bit_state_bytes if optimizer == "adamw_8bit" else adam_state_bytes)


_LORA = 'OR({method}="lora",{method}="qlora")'
# model v4: whether the run checkpoints (the task's choice, else the setting) and, when it does not, the bytes a
# layer keeps per token and hidden unit (QLoRA's 4-bit matmuls keep their inputs on top)
_CHECKPOINTED = 'IF({activation_checkpointing}<>"",{activation_checkpointing},ActivationCheckpointing)="yes"'
_KEPT_BYTES = '(LayerActivationBytes+IF({method}="qlora",QloraActivationBytes,0))'
# model v4, vocabulary: the model's vocab_size, else a sourced fallback (a known architecture without one)
VOCAB = 'IF({model.vocab_size}<>"",{model.vocab_size},FallbackVocab)'
# the logits of a micro-batch (bf16 from the output head, fp32 in the loss), every training method
_LOGITS_GB = f'MicroBatchTokens*{VOCAB}*LogitBytes/Billion'
ACTIVATIONS_EXCEL = (f'=IF({{model.hidden}}<>"",MicroBatchTokens*{{model.layers}}*{{model.hidden}}'
                     f'*IF({_CHECKPOINTED},BytesActivation,{_KEPT_BYTES})/Billion+IF({_LORA},LoraWorkspaceGb,0)'
                     f'+{_LOGITS_GB},'
                     f'IF({_CHECKPOINTED},0,MicroBatchTokens*POWER(HiddenPerLayer*{{params_used}}*Billion'
                     f'/LayerParamsPerHiddenSq,LayerWidthExponent)/HiddenPerLayer*{_KEPT_BYTES}/Billion'
                     f'+{_LOGITS_GB}))')


def checkpointed(task_choice: str | None, setting: str) -> bool:
    """Whether a training run recomputes its activations: the task's activation_checkpointing, else the setting's."""
    return (task_choice if task_choice is not None else setting) == "yes"


def layer_width_estimate(params_b: float) -> float:
    """layers x hidden of a dense transformer of `params_b` billion parameters whose architecture is unknown: with
    N = LayerParamsPerHiddenSq·layers·hidden² and hidden = HiddenPerLayer·layers, hidden is (128·N/12)^(1/3) and
    layers x hidden is hidden²/128 (Llama-2-7B: 135,000 against its 131,072)."""
    return (KS.HiddenPerLayer * params_b * K.Billion / KS.LayerParamsPerHiddenSq) ** KS.LayerWidthExponent \
        / KS.HiddenPerLayer


def activations_gb(method: str | None, *, layers: float | None, hidden: float | None, micro_batch_tokens: float,
                   lora_workspace_gb: float, checkpointing: bool, params_b: float, layer_activation_bytes: float,
                   qlora_activation_bytes: float) -> float:
    """Memory every card of a training run holds for itself (GB). With the architecture known: its own micro-batch's
    activations, MicroBatchTokens·layers·hidden times 2 bytes when the run checkpoints (each layer's bf16 input),
    else the bytes a layer keeps for the backward pass (LayerActivationBytes, plus QloraActivationBytes for QLoRA),
    plus LoRA/QLoRA's workspace. Architecture unknown: 0 with checkpointing (the per-parameter allowance covers it,
    a total sharded with the states); without, the kept bytes over layer_width_estimate's layers x hidden."""
    kept = layer_activation_bytes + (qlora_activation_bytes if method == "qlora" else 0)
    if hidden is None:
        return 0 if checkpointing else micro_batch_tokens * layer_width_estimate(params_b) * kept / K.Billion
    workspace = lora_workspace_gb if method in ("lora", "qlora") else 0
    per_element = KS.BytesActivation if checkpointing else kept
    assert layers is not None, "a catalog model gives layers with hidden (models._check_architecture)"
    return micro_batch_tokens * layers * hidden * per_element / K.Billion + workspace


# QLoRA quantises the blocks' linear layers only: the input embedding and output head stay bf16 (model v4)
TRAINING_WEIGHTS_TERM = ('IF({method}="qlora",IF({model.hidden}<>"",BytesQloraBase*{params_used}'
                    f'+(BytesFp16-BytesQloraBase)*EmbeddingMatrices*{VOCAB}*{{model.hidden}}/Billion,'
                    'BytesInt4*{params_used}),BytesFp16*{params_used})')
TRAINING_VRAM_EXCEL = (f'=IF({_LORA},{TRAINING_WEIGHTS_TERM}'
                       '+{params_used}*LoraTrainable*{state_bytes},'
                       '{params_used}*{state_bytes})'
                       '+IF({model.hidden}<>"",0,ActivationGbPerB*{params_used})+{activations_gb}')


def training_memory_gb(method: str | None, *, params_b: float, hidden: float | None, lora_trainable: float,
                       state_bytes: float, activations_gb: float, activation_gb_per_b: float) -> float:
    """Training memory (GB) of a run on one card: the states sharded over the cards, plus `activations_gb`, which
    every card holds for itself. LoRA/QLoRA: a frozen base (NF4 with its scales, BytesQloraBase, when the
    architecture is known, else SPEC.md §3.1's 4 bits) and the trained adapters at `state_bytes`; full training
    and pretraining: every parameter at `state_bytes` (16 with AdamW, SPEC.md §3.1). Architecture unknown: SPEC.md
    §3.1's per-parameter activation allowance, a total sharded with the states."""
    if method in ("lora", "qlora"):
        base = (K.BytesFp16 if method == "lora" else KS.BytesQloraBase if hidden is not None else K.BytesInt4)
        states = base * params_b + params_b * lora_trainable * state_bytes
    else:
        states = params_b * state_bytes
    allowance = 0 if hidden is not None else activation_gb_per_b * params_b
    return states + allowance + activations_gb


CARD_GB_EXCEL = f'={{gpu.vram_gb}}*IF(AND({_LORA},{{model.hidden}}<>""),GibPerGb,UsableVram)'


def training_card_gb(method: str | None, *, vram_gb: float, hidden: float | None, usable_vram: float) -> float:
    """Memory a card offers a training run (GB). LoRA/QLoRA with a known architecture: the estimate carries its own
    workspace, so the card's whole memory, counted in GiB as vendors count it; otherwise the UsableVram share."""
    whole = method in ("lora", "qlora") and hidden is not None
    return vram_gb * (KS.GibPerGb if whole else usable_vram)


TRAINING_CARDS_EXCEL = ('=IF({card_gb}<={activations_gb},MaxCards+1,'
                        'CEILING(({vram_gb}-{activations_gb})/({card_gb}-{activations_gb}),1))')


def training_cards(vram_gb: float, *, activations_gb: float, card_gb: float, impossible: int) -> int:
    """Cards whose memory holds a run: the sharded states over the room each card leaves beside its own
    activations; `impossible` when one card's activations leave no room (no number of cards holds the run)."""
    if card_gb <= activations_gb:
        return impossible
    return sheet_ceil((vram_gb - activations_gb) / (card_gb - activations_gb))


OPTIMIZER_SLOWDOWN_EXCEL = f'=IF({{optimizer}}="cpu_offload",1+(CpuOffloadSlowdown-1)*IF({_LORA},LoraTrainable,1),1)'


def optimizer_slowdown(optimizer: str | None, method: str | None, *, cpu_offload_slowdown: float,
                       lora_trainable: float) -> float:
    """Run time against an optimizer on the card: CPU offload makes each step wait for the host's optimizer step
    over the trained parameters, CpuOffloadSlowdown for a full fine-tune, that stall on LoRA's trained share only."""
    if optimizer != "cpu_offload":
        return 1
    return 1 + (cpu_offload_slowdown - 1) * (lora_trainable if method in ("lora", "qlora") else 1)


# ---------------------------------------------------------------- one replica end to end

@dataclass(frozen=True)
class ReplicaEstimate:
    """One serving replica worked through §D: every intermediate the Tasks sheet shows."""

    cards: int
    bytes_per_param: float
    kv_bytes_per_token: float
    peak_tflops: float
    tp: float
    free_gb: float
    batch_mem: int
    batch: float
    weights_read: float
    t_mem: float
    t_cmp: float
    t_layers: float
    t_step: float
    t_pre: float
    requests_per_sec: float
    tokens_per_sec: float
    user_tokens_per_sec: float


def estimate_replica(model, gpu, s, *, method: str | None = None, prompt: float | None = None, output: float,
                     context: float | None = None, concurrency: float | None = None, cards: int | None = None,
                     kv_bytes_used: float | None = None, kv_cache_gb: float | None = None,
                     tokens_per_sec: float | None = None) -> ReplicaEstimate | None:
    """§D for one replica of `model` (a catalog model) on `gpu` under settings `s`.

    None when no shape of 1, 2, 4 or 8 cards holds the model and its minimum batch, or when the user's
    `cards` cannot hold one sequence. `kv_bytes_used` overrides the KvCacheDtype setting (a benchmark run
    with an fp8 KV cache)."""
    prompt = prompt_used(prompt, s.default_prompt_tokens)
    b = bytes_per_param(method)
    kvb = kv_bytes(s.kv_cache_dtype) if kv_bytes_used is None else kv_bytes_used
    kv_tok = kv_bytes_per_token(layers=model.layers, kv_heads=model.kv_heads, head_dim=model.head_dim,
                                kv_latent=model.kv_latent, active_params_b=model.active_params_b, kv_bytes=kvb,
                                kv_fallback_bytes=s.kv_fallback_bytes)
    context = context_used(context, prompt=prompt, output=output)
    memory = {"vram_gb": gpu.vram_gb, "usable_vram": s.usable_vram, "params_b": model.total_params_b,
              "bytes_per_param": b, "inference_overhead": s.inference_overhead, "kv_cache_gb": kv_cache_gb}
    n = cards_per_replica(cards=cards, attn_heads=model.attn_heads, concurrency=concurrency, min_batch=s.min_batch,
                          kv_tok=kv_tok, context=context, **memory)
    if n is None:
        return None
    peak = peak_tflops(method, tflops=gpu.tflops, tflops_fp8=gpu.tflops_fp8, tflops_fp4=gpu.tflops_fp4,
                       fp8_efficiency=s.fp8_efficiency, matmul_efficiency=gpu.matmul_efficiency)
    tp = tp_factor(n, tp_efficiency_of(gpu.interconnect, tp_efficiency=s.tp_efficiency,
                                       tp_efficiency_nvlink=s.tp_efficiency_nvlink),
                   params_b=model.total_params_b, reference_params_b=s.tp_reference_params_b,
                   size_exponent=s.tp_size_exponent)
    free = free_memory_gb(cards=n, **memory)
    batch_mem = batch_by_memory(free, kv_tok, context)
    batch = batch_size(concurrency, cards=n, max_batch_per_card=s.max_batch_per_card, batch_mem=batch_mem)
    if batch <= 0:
        return None
    weights = weights_read(params_b=model.total_params_b, active_params_b=model.active_params_b, batch=batch,
                           experts=model.experts, experts_per_token=model.experts_per_token)
    t_mem = decode_memory_seconds(weights_b=weights, batch=batch, bytes_per_param=b, kv_tok=kv_tok, prompt=prompt,
                                  output=output, cards=n, bandwidth_gbs=gpu.bandwidth_gbs,
                                  decode_efficiency=bandwidth_share(gpu.bandwidth_efficiency, s.decode_efficiency),
                                  tp=tp, kv_read_efficiency=s.kv_read_efficiency)
    t_cmp = decode_compute_seconds(active_params_b=model.active_params_b, batch=batch, cards=n, peak=peak,
                                   decode_mfu=s.decode_mfu, tp=tp)
    t_layers = layer_overhead_seconds(layers=model.layers, hidden=model.hidden, moe=model.is_moe, cards=n,
                                      batch=batch, interconnect=gpu.interconnect, s=s)
    t_step = step_seconds(t_mem, t_cmp, s.step_overhead_ms, t_layers)
    t_pre = prefill_seconds(active_params_b=model.active_params_b, prompt=prompt, layers=model.layers,
                            attn_heads=model.attn_heads, head_dim=model.head_dim, cards=n, peak=peak,
                            prefill_mfu=s.prefill_mfu, tp=tp)
    req_s = requests_per_sec(t_pre=t_pre, output=output, t_step=t_step, batch=batch, tokens_per_sec=tokens_per_sec)
    return ReplicaEstimate(n, b, kv_tok, peak, tp, free, batch_mem, batch, weights, t_mem, t_cmp, t_layers, t_step,
                           t_pre, req_s,
                           output_tokens_per_sec(output, req_s), user_tokens_per_sec(t_step))
