"""Calculation model v2's formulas as Excel text: batched serving per replica, MoE and LoRA/QLoRA training. No I/O.

Each `*_EXCEL` text is a calculated column's formula (or a part of one) in the placeholder style of columns.py:
`{name}` is the same row's cell of another column, `{gpu.field}` the row's GPU on the GPUs sheet and `{model.field}`
the row's model on the Models sheet (blank when the task names no model or the catalog lacks the figure); every other
word is a named cell on Assumptions. The Python value of each is compiled from the text itself (budgetgen.model.expr, through
columns.Calc): nothing here computes a quantity a second way. Beside the texts stay only the builders that write a
text for a card shape or an expression (`fits_excel`, `training_shape_excel`, `cards_at_scale_excel`, `_peak_excel`),
the shape constants, and `sheet_floor`/`sheet_ceil`: spreadsheets round to 15 significant digits before FLOOR and
CEILING, and the compiled FLOOR and CEILING round through these two, so the workbook and the engine agree on every
boundary. tests/test_expr.py fails when another function appears here.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

from ..core.schema import (  # noqa: F401  (SERVING_* re-exported: the v2 declarations live in the schema)
    CHANGED_DEFAULTS,
    SERVING_CONSTANTS,
    SERVING_METHODS,
    SERVING_SETTINGS,
)

KS = SimpleNamespace(**{name: value for name, value, _ in SERVING_CONSTANTS})

CARDS_PER_REPLICA_SHAPES = (1, 2, 4, 8)
# How a shape is written in a formula: by the named cells of Assumptions, never a constant.
SHAPE_NAMES = {1: "1", 2: "TwoCards", 4: "FourCards", 8: "CardsPerNode"}
MAX_REPLICA_SHAPE = CARDS_PER_REPLICA_SHAPES[-1]  # one 8-card node: tensor parallelism stays inside it


def sheet_ceil(x: float) -> int:
    """CEILING(x, 1) as a spreadsheet computes it: rounded to 15 significant digits first."""
    return math.ceil(float(f"{x:.15g}"))


def sheet_floor(x: float) -> int:
    """FLOOR(x, 1) as a spreadsheet computes it: rounded to 15 significant digits first."""
    return math.floor(float(f"{x:.15g}"))


# ---------------------------------------------------------------- task inputs filled from the catalog

PARAMS_USED_EXCEL = '=IF({model_params_b}<>"",{model_params_b},{model.total_params_b})'


ACTIVE_USED_EXCEL = ('=MIN({params_used},IF({active_params_b}<>"",{active_params_b},'
                     'IF({model.active_params_b}<{model.total_params_b},{model.active_params_b},{params_used})))')


PROMPT_EXCEL = '=IF({prompt_tokens}<>"",{prompt_tokens},DefaultPromptTokens)'


CONTEXT_EXCEL = '=IF({context_tokens}<>"",{context_tokens},{prompt_used}+{tokens_per_request})'


# ---------------------------------------------------------------- precision

KV_BYTES_EXCEL = '=IF(KvCacheDtype="fp8",BytesFp8,BytesFp16)'


# fp4 weights carry their NVFP4 block scales (BytesFp4); int4 stays at its 4 bits (model v2)
BYTES_PER_PARAM_EXCEL = ('=IF({method}="fp4",BytesFp4,IF({method}="int4",BytesInt4,'
                         'IF(OR({method}="int8",{method}="fp8"),BytesInt8,BytesFp16)))')


KV_BYTES_PER_TOKEN_EXCEL = ('=IF({model.kv_latent}<>"",{model.layers}*{model.kv_latent}*KvBytes,'
                            'IF({model.kv_heads}<>"",'
                            'KvTensors*{model.layers}*{model.kv_heads}*{model.head_dim}*KvBytes,'
                            'KvFallbackBytes*SQRT({active_used})*KvBytes/BytesFp16))')


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


BANDWIDTH_SHARE_EXCEL = '=IF({gpu.bandwidth_efficiency}<>"",{gpu.bandwidth_efficiency},DecodeEfficiency)'


# Model v4: the doublings weighted by how little of the model each card holds (TpReferenceParams billions a card
# and more: 1); docs/models.md, "Tensor parallelism by each card's share of the model and the interconnect".
TP_FACTOR_EXCEL = ('=POWER(IF({gpu.interconnect}="nvlink",TpEfficiencyNvlink,TpEfficiency),'
                   'LOG({cards_per_run},TwoCards)*MAX(1,POWER(TpReferenceParams*{cards_per_run}/{params_used},'
                   'TpSizeExponent)))')


# ---------------------------------------------------------------- memory and batch

FREE_GB_EXCEL = ("={cards_per_run}*{gpu.vram_gb}*UsableVram-{params_used}*{bytes_per_param}"
                 "*(1+InferenceOverhead)-{kv_cache_gb}")


BATCH_MEM_EXCEL = "=MAX(0,FLOOR({free_gb}*Billion/({kv_bytes_per_token}*{context_used}),1))"


BATCH_EXCEL = ('=MIN(IF({concurrency}="",MaxBatchPerCard*{cards_per_run},{concurrency}),{batch_mem},'
               'IF({latency_batch}="",{batch_mem},{latency_batch}))')


# ---------------------------------------------------------------- time per step and per request

WEIGHTS_READ_EXCEL = ('=IF(AND({model.experts}<>"",{active_used}<{params_used}),'
                      '{active_used}+({params_used}-{active_used})/({model.experts}-{model.experts_per_token})'
                      '*({model.experts}*(1-POWER(1-{model.experts_per_token}/{model.experts},{batch}))'
                      '-{model.experts_per_token}),'
                      'MIN({params_used},{active_used}*{batch}))')


T_MEM_EXCEL = ("=({weights_read}*Billion*{bytes_per_param}"
               "+{batch}*{kv_bytes_per_token}*({prompt_used}+{tokens_per_request}*MeanOutputShare)/KvReadEfficiency)"
               "/({cards_per_run}*{gpu.bandwidth_gbs}*Billion*{bandwidth_share}*{tp})")


T_CMP_EXCEL = ("=InferenceFlopsPerToken*{active_used}*Billion*{batch}"
               "/({cards_per_run}*{peak_tflops}*Tera*DecodeMfu*{tp})")


_NVLINK = '{gpu.interconnect}="nvlink"'
LAYER_FIXED_EXCEL = (
    '=IF({model.layers}<>"",{model.layers}*(IF({active_used}<{params_used},MoeLayerOverheadUs/Micro,0)'
    f'+IF({{cards_per_run}}>1,AllReducesPerLayer*IF({_NVLINK},AllReduceUsNvlink,AllReduceUsPcie)/Micro,0)),0)')


LAYER_PER_SEQUENCE_EXCEL = (
    '=IF(AND({model.layers}<>"",{model.hidden}<>"",{cards_per_run}>1),{model.layers}*AllReducesPerLayer'
    '*RingAllReduceTraffic*({cards_per_run}-1)/{cards_per_run}*{model.hidden}*BytesActivation'
    f'/(IF({_NVLINK},NvlinkGbs,PcieGbs)*Billion),0)')


LAYER_OVERHEAD_EXCEL = "={t_layers_fixed}+{t_layers_per_sequence}*{batch}"


T_STEP_EXCEL = "=StepOverheadMs/Milli+{t_layers}+MAX({t_mem},{t_cmp})"


T_PRE_EXCEL = ('=(InferenceFlopsPerToken*{active_used}*Billion*{prompt_used}'
               '+IF({model.head_dim}<>"",PrefillAttentionFlops*{model.layers}*{model.attn_heads}*{model.head_dim}'
               '*{prompt_used}*{prompt_used},0))'
               '/({cards_per_run}*{peak_tflops}*Tera*PrefillMfu*{tp})')


# ---------------------------------------------------------------- latency targets

STEP_TARGET_EXCEL = ('=IF(AND({tpot_ms}="",{ttft_ms}=""),"",MIN(IF({tpot_ms}="",{ttft_ms},{tpot_ms})/Milli,'
                     'IF({ttft_ms}="",{tpot_ms}/Milli,{ttft_ms}/Milli-{t_pre})))')


ROUTED_EXCEL = ('=IF({active_used}<{params_used},IF({model.experts}<>"",{model.experts_per_token}'
                '*({params_used}-{active_used})/({model.experts}-{model.experts_per_token}),{active_used}),0)')


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


REQ_S_EXCEL = ('=IF({tokens_per_sec}<>"",{tokens_per_sec}/{tokens_per_request},'
               '1/({t_pre}+{tokens_per_request}*{t_step}/{batch}))')


OUTPUT_TOKENS_PER_SEC_EXCEL = "={tokens_per_request}*{requests_per_sec}"


USER_TOKENS_PER_SEC_EXCEL = "=1/{t_step}"


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


REPLICAS_EXCEL = ("=MAX(MinReplicas,CEILING({requests_per_day}*PeakFactor"
                  "/({serving_hours_per_day}*SecondsPerHour*{requests_per_sec}),1))")


DEADLINE_DAYS_EXCEL = '=IF({deadline_days}<>"",{deadline_days},DaysPerMonth/{runs_per_month})'


REPLICA_HOURS_EXCEL = "={batch_requests}/({requests_per_sec}*SecondsPerHour)"


BATCH_REPLICAS_EXCEL = ('=IF({deadline_used}*HoursPerDay>SetupHours,'
                        'CEILING({replica_hours}/({deadline_used}*HoursPerDay-SetupHours),1),"")')


BATCH_GPU_HOURS_EXCEL = "=({replica_hours}+SetupHours*{batch_replicas})*{cards_per_run}"


# ---------------------------------------------------------------- capacity that can run (§F)

TRAINING_SMALL_SHAPES = (1, 2, 4)  # then whole nodes of MAX_REPLICA_SHAPE cards


def training_shape_excel(n: str) -> str:
    """The card shape of a training run holding at least `n` cards (an Excel expression): 1, 2, 4, then whole
    nodes of MAX_REPLICA_SHAPE cards."""
    chain = "".join(f"IF({n}<={SHAPE_NAMES[shape]},{SHAPE_NAMES[shape]}," for shape in TRAINING_SMALL_SHAPES)
    node = SHAPE_NAMES[MAX_REPLICA_SHAPE]
    return chain + f"{node}*CEILING({n}/{node},1)" + ")" * len(TRAINING_SMALL_SHAPES)


SCALE_FACTOR_EXCEL = ("=IF({cards_per_run}<=ScaleFreeCards,1,"
                      "POWER(ScaleEfficiency,LOG({cards_per_run}/ScaleFreeCards,TwoCards)))")


def cards_at_scale_excel(n: str) -> str:
    """The cards that do the work of `n` cards (an Excel expression) at full per-card speed, SCALE_FACTOR_EXCEL's
    loss applied: with a = log2(ScaleEfficiency), n' = ScaleFreeCards·(n/ScaleFreeCards)^(1/(1+a)) solves
    n'·(n'/ScaleFreeCards)^a = n in closed form (a spreadsheet needs no iteration); n itself up to ScaleFreeCards."""
    return (f"IF({n}<=ScaleFreeCards,{n},"
            f"ScaleFreeCards*POWER(({n})/ScaleFreeCards,1/(1+LOG(ScaleEfficiency,TwoCards))))")


# ---------------------------------------------------------------- training (§E)

FLOPS_PER_TOKEN_EXCEL = ('=IF({method}="lora",LoraFlopsPerToken,'
                         'IF({method}="qlora",QloraFlopsPerToken,FlopsPerToken))')


TRAINING_FLOPS_EXCEL = "={flops_per_token_used}*{active_used}*Billion*{train_tokens}*{epochs}"


MFU_USED_EXCEL = ('=IF({mfu}<>"",{mfu},IF(OR({method}="lora",{method}="qlora"),LoraMfu,'
                  'IF(AND({active_used}<{params_used},{model.experts}=""),MoeMfu,MfuRate)))')


_EXCHANGE_KNOWN = 'AND({mfu}="",{active_used}<{params_used},{model.experts}<>"",{model.hidden}<>"")'
RUN_MFU_EXCEL = (f'=IF({_EXCHANGE_KNOWN},{{mfu_used}}/(1+MoeCommExposed*MoeAllToAllPasses*{{model.experts_per_token}}'
                 '*{model.hidden}*BytesActivation*{model.layers}*{peak_tflops}*Tera*{mfu_used}'
                 '/({flops_per_token_used}*{active_used}*Billion*MoeNetworkGbs*Billion)),{mfu_used})')


TRAINING_GPU_HOURS_EXCEL = "={flops_per_run}/({peak_tflops}*Tera*{mfu_run}*SecondsPerHour)"


STATE_BYTES_EXCEL = ('=BytesWeightsGrads+IF({optimizer}="adamw_8bit",Adam8bitStateBytes,'
                     'IF({optimizer}="cpu_offload",0,AdamStateBytes))')


_LORA = 'OR({method}="lora",{method}="qlora")'
# model v4: whether the run checkpoints (the task's choice, else the setting) and, when it does not, the bytes a
# layer keeps per token and hidden unit (QLoRA's 4-bit matmuls keep their inputs on top)
_CHECKPOINTED = 'IF({activation_checkpointing}<>"",{activation_checkpointing},ActivationCheckpointing)="yes"'
_KEPT_BYTES = '(LayerActivationBytes+IF({method}="qlora",QloraActivationBytes,0))'
# model v4, vocabulary: the model's vocab_size, else a sourced fallback (a known architecture without one)
VOCAB = 'IF({model.vocab_size}<>"",{model.vocab_size},FallbackVocab)'
# the logits of a micro-batch, every training method (LogitBytes: the head's bf16 logits; 6 with a whole fp32 loss)
_LOGITS_GB = f'MicroBatchTokens*{VOCAB}*LogitBytes/Billion'
ACTIVATIONS_EXCEL = (f'=IF({{model.hidden}}<>"",MicroBatchTokens*{{model.layers}}*{{model.hidden}}'
                     f'*IF({_CHECKPOINTED},BytesActivation,{_KEPT_BYTES})/Billion+IF({_LORA},LoraWorkspaceGb,0)'
                     f'+{_LOGITS_GB},'
                     f'IF({_CHECKPOINTED},0,MicroBatchTokens*POWER(HiddenPerLayer*{{params_used}}*Billion'
                     f'/LayerParamsPerHiddenSq,LayerWidthExponent)/HiddenPerLayer*{_KEPT_BYTES}/Billion'
                     f'+{_LOGITS_GB}))')


# QLoRA quantises the blocks' linear layers only: the input embedding and output head stay bf16 (model v4)
TRAINING_WEIGHTS_TERM = ('IF({method}="qlora",IF({model.hidden}<>"",BytesQloraBase*{params_used}'
                         f'+(BytesFp16-BytesQloraBase)*EmbeddingMatrices*{VOCAB}*{{model.hidden}}/Billion,'
                         'BytesInt4*{params_used}),BytesFp16*{params_used})')
TRAINING_VRAM_EXCEL = (f'=IF({_LORA},{TRAINING_WEIGHTS_TERM}'
                       '+{params_used}*LoraTrainable*{state_bytes},'
                       '{params_used}*{state_bytes})'
                       '+IF({model.hidden}<>"",0,ActivationGbPerB*{params_used})+{activations_gb}')


CARD_GB_EXCEL = f'={{gpu.vram_gb}}*IF(AND({_LORA},{{model.hidden}}<>""),GibPerGb,UsableVram)'


TRAINING_CARDS_EXCEL = ('=IF({card_gb}<={activations_gb},MaxCards+1,'
                        'CEILING(({vram_gb}-{activations_gb})/({card_gb}-{activations_gb}),1))')


OPTIMIZER_SLOWDOWN_EXCEL = f'=IF({{optimizer}}="cpu_offload",1+(CpuOffloadSlowdown-1)*IF({_LORA},LoraTrainable,1),1)'
