"""What the input sheets contain: every column and setting declared once.

The reader, the `init` template (headers, dropdowns, notes), the error messages and the
input reference (docs/input-reference.md) are all generated from these declarations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias

from .records import BUFFER, DEMAND, PRICE, SERVING_METHODS, TASK_KINDS, TIERS, TRAINING_METHODS, Driver, excel_is

TRAIN_PRECISIONS = ("bf16", "fp8", "fp4")
OPTIMIZERS = ("adamw", "adamw_8bit", "cpu_offload")  # blank: adamw
CHECKPOINTING = ("yes", "no")  # activation_checkpointing: does a training run recompute its activations

TIER = {t.name: t for t in TIERS}  # every tier, commitments included
PRICE_COLUMNS = tuple(t.price_column for t in TIERS) + ("purchase_price",)  # a GPUs row's money, in its currency
TASK_TIERS = tuple(t for t in TIERS if t.for_tasks)  # the tiers a task is priced on (Tasks `tier`, TierList)
TIER_NAMES = tuple(t.name for t in TASK_TIERS)
COMMITMENT_TIERS = tuple(t for t in TIERS if not t.for_tasks)  # bought per GPU type on the Commitments sheet
REFERENCE_TIER = next(t for t in TIERS if t.reference)  # on-demand: the list price the others are checked against
# Excel tests of a `{tier}` placeholder against the records: billed per card-month; interruptible (reruns).
PER_CARD_MONTH_TIER = excel_is("{tier}", (t.name for t in TASK_TIERS if t.per_card_month))
RERUN_TIER = excel_is("{tier}", (t.name for t in TASK_TIERS if t.reruns))
KIND = {k.name: k for k in TASK_KINDS}
KINDS = tuple(KIND)
TRAINING_KINDS = tuple(k.name for k in TASK_KINDS if k.training)
GPU_CLASSES = ("consumer", "workstation", "datacenter")
INTERCONNECTS = ("nvlink", "pcie")
EXTRA_CATEGORIES = ("storage", "egress", "images", "platform", "other")
GPU_CHOICES = ("cheapest", "balanced")
OFFER_CURRENCIES = ("auto", "plan", "any")  # offer_currency: which built-in offers' currencies the catalog takes
CONSUMER_ONLINE = ("excluded", "allowed")  # consumer_online: may the engine choose a consumer card to serve online


@dataclass(frozen=True)
class Column:
    """One input column: its type, unit, default, allowed values and help text."""

    name: str
    type: str  # text | number | count | percent | month | choice | date
    unit: str = ""
    required: bool = False
    default: Value = None
    choices: tuple[str, ...] = ()
    help: str = ""
    example: str = ""
    positive: bool = False  # must be > 0 when given
    minimum: float | None = None  # bounds when given (0: no negatives, where a negative means nothing)
    maximum: float | None = None
    scale: float = 1  # a typed number is divided by this: 7B in billions of parameters is 7
    # A percent column's bare number above 1 (25, not 25% or 0.25) is refused as ambiguous unless the column is a
    # factor that is commonly above 1 (matmul_efficiency 1.2): 25 read as a share is 2,500%.
    plain_above_one: bool = False


Value: TypeAlias = Any
"""One column's value in a row (a parsed cell, a calculated column): text, a number, a date or None (blank), as the
column's type says. A row holds many columns of different types under string keys, so its values are Any; the
Settings and the records are typed per field."""


@dataclass(frozen=True)
class Setting:
    """One row of the Settings sheet, written to Assumptions as a workbook-scoped name."""

    key: str
    type: str  # number | percent | count | text | month | choice
    default: Value
    name: str  # Excel defined name on Assumptions
    help: str
    unit: str = ""
    choices: tuple[str, ...] = ()
    structural: bool = False  # shapes the workbook; change it in the input and rebuild
    minimum: float | None = None
    maximum: float | None = None
    positive: bool = False  # must be > 0 when given
    money: str | None = None  # a money amount whose default is in this currency: converted for another plan currency


CANDIDATES_ALL_UP_TO = 1_000  # tasks up to which Candidates lists every catalog card by default
CANDIDATES_LARGE = 3  # cheapest options a task's Candidates rows show by default in a larger inventory
MAX_CANDIDATES = 1_000  # candidates_per_task at most (more than any catalog has cards: a typing slip)
# cards one task may use: the largest published training clusters (xAI's Colossus, 100,000 H100 in 2024); more is a
# typing slip. Beyond ScaleFreeCards a run loses ScaleEfficiency per doubling (model v4, docs/models.md).
MAX_CARDS = 100_000
# A month's demand over the demand typed on Tasks (growth compounded, or a Ramp cell): 10% a month for ten years is
# 84,000; beyond a million the growth rate or the ramp is a typing slip (1,000% a month for ten years is 1e124).
MAX_DEMAND_FACTOR = 1e6
# A Scenarios value (a multiplier of demand or prices, an efficiency that divides the demand): beyond 1,000x either
# way it is a typing slip, not a scenario.
SCENARIO_RANGE = (1e-3, 1e3)
S = Setting
# Settings of calculation model v2 (serving per replica, MoE, LoRA/QLoRA), appended to SETTINGS below.
SERVING_SETTINGS: tuple[Setting, ...] = (
    S("step_overhead_ms", "number", 1.0, "StepOverheadMs",
      "fixed time of one decode step (scheduling, kernel launches)", unit="ms", minimum=0),
    S("decode_mfu", "percent", 0.60, "DecodeMfu", "share of the card's peak reached by decode matmuls",
      minimum=0.001, maximum=1),
    S("prefill_mfu", "percent", 0.75, "PrefillMfu", "share of the card's peak reached while reading prompts",
      minimum=0.001, maximum=1),
    S("fp8_efficiency", "percent", 0.80, "Fp8Efficiency",
      "FP8/FP4 matmuls reach this share of the BF16 MFU", minimum=0.001, maximum=1),
    S("tp_efficiency", "percent", 0.80, "TpEfficiency",
      "speed factor per doubling of the cards in one serving replica on PCIe cards (tp_efficiency_nvlink: "
      "NVLink-class)", minimum=0.001, maximum=1),
    S("max_batch_per_card", "count", 160, "MaxBatchPerCard",
      "sequences a serving engine batches per card when concurrency is blank", unit="sequences", minimum=1),
    S("min_batch", "count", 8, "MinBatch",
      "sequences a replica must hold at least (fewer when concurrency is lower); sizes the cards per replica",
      unit="sequences", minimum=1),
    S("kv_cache_dtype", "choice", "fp16", "KvCacheDtype",
      "KV-cache precision of serving engines: fp16 (2 bytes) or fp8 (1 byte)", choices=("fp16", "fp8")),
    S("default_prompt_tokens", "count", 1000, "DefaultPromptTokens",
      "input tokens per request when a serving task gives no prompt_tokens", unit="tokens", minimum=0),
    S("min_replicas", "count", 1, "MinReplicas", "replicas an inference service keeps at least (failover)",
      unit="replicas", minimum=1),
    S("kv_fallback_bytes", "number", 40_000, "KvFallbackBytes",
      "fp16 KV-cache bytes per token per square root of billions of active parameters, "
      "for a model whose architecture is unknown", unit="bytes/token/sqrt(B)", minimum=0),
    S("moe_mfu", "percent", 0.30, "MoeMfu",
      "model FLOPs utilisation of mixture-of-experts training (active < total parameters)",
      minimum=0.001, maximum=1),
    S("lora_flops_per_token", "number", 4, "LoraFlopsPerToken",
      "LoRA FLOPs per active parameter per token (frozen base: no weight gradients)",
      unit="FLOP/param/token", minimum=0.001),
    S("qlora_flops_per_token", "number", 5.1, "QloraFlopsPerToken",
      "QLoRA FLOPs per active parameter per token: LoRA's 4 plus the 4-bit base's dequantisation, "
      "measured 22% slower than LoRA on the same card",
      unit="FLOP/param/token", minimum=0.001),
    S("micro_batch_tokens", "count", 2048, "MicroBatchTokens",
      "tokens of one training micro-batch on a card, whose activations every card holds (2 bytes a layer and hidden "
      "unit with checkpointing, layer_activation_bytes without)", unit="tokens", minimum=1),
    S("lora_workspace_gb", "number", 0, "LoraWorkspaceGb",
      "LoRA/QLoRA memory for CUDA workspace, optimizer buffers and fragmentation", unit="GB", minimum=0),
) + (
    # calculation model v3 (docs/design.md: design decisions, model v3)
    S("tp_efficiency_nvlink", "percent", 0.85, "TpEfficiencyNvlink",
      "speed factor per doubling of the cards in one serving replica on NVLink-class cards (tp_efficiency: PCIe)",
      minimum=0.001, maximum=1),
    S("allreduce_us_nvlink", "number", 20, "AllReduceUsNvlink",
      "time of one all-reduce of a decode step across an NVLink-class replica, twice per layer",
      unit="µs", minimum=0),
    S("allreduce_us_pcie", "number", 50, "AllReduceUsPcie",
      "time of one all-reduce of a decode step across a PCIe replica, twice per layer (NCCL all_reduce_perf on 8 "
      "RTX 4090 over PCIe: 40-43 µs for the smallest message, NVIDIA/nccl issue 1530; rounded up for the launch)",
      unit="µs", minimum=0),
    S("nvlink_gbs", "number", 450, "NvlinkGbs",
      "bandwidth one card sends at over NVLink-class links (H100/H200 NVLink 4: 900 GB/s both ways together)",
      unit="GB/s", positive=True),
    S("pcie_gbs", "number", 25, "PcieGbs",
      "bandwidth one card sends at over PCIe between cards (PCIe 4.0 x16: 32 GB/s a direction; NCCL all-reduce "
      "bus bandwidth 28 GB/s on 8 PCIe cards, about the same on 8 RTX 4090: NVIDIA/nccl issue 1639)",
      unit="GB/s", positive=True),
    S("moe_layer_overhead_us", "number", 25, "MoeLayerOverheadUs",
      "router and expert-kernel time per layer of a mixture-of-experts decode step", unit="µs", minimum=0),
    S("train_fp8_efficiency", "percent", 0.93, "TrainFp8Efficiency",
      "FP8/FP4 training reaches the MFU this share of the FP8/FP4 peak: 0.93 x mfu 0.40 x scaling 0.95 = 0.35 of "
      "the FP8 peak, the median of Megatron-Bridge's dense FP8 runs on H100 and B200 (Llama 3 8B, 70B, 405B: "
      "0.33-0.36)", minimum=0.001, maximum=1),
    S("lora_mfu", "percent", 0.55, "LoraMfu",
      "model FLOPs utilisation of LoRA/QLoRA fine-tunes (frozen base: small optimizer step, no weight gradients)",
      minimum=0.001, maximum=1),
    S("moe_network_gbs", "number", 50, "MoeNetworkGbs",
      "per-card network bandwidth of the expert all-to-all in mixture-of-experts training (400 Gb/s InfiniBand)",
      unit="GB/s", positive=True),
    S("moe_comm_exposed", "percent", 0.5, "MoeCommExposed",
      "share of the expert all-to-all time of MoE training not hidden behind compute", minimum=0, maximum=1),
    S("adam_state_bytes", "number", 12, "AdamStateBytes",
      "bytes of AdamW state per trained parameter on the card: fp32 master weights, momentum and variance, 4 + 4 + 4 "
      "(ZeRO, arXiv:1910.02054 section 3.1: 16 bytes a parameter with the bf16 weights and gradients)",
      unit="bytes/param", minimum=0),
    S("adam_8bit_state_bytes", "number", 6, "Adam8bitStateBytes",
      "bytes of 8-bit AdamW state per trained parameter on the card: fp32 master weights plus 1-byte momentum and "
      "variance, 4 + 1 + 1 (8-bit optimizers, arXiv:2110.02861)", unit="bytes/param", minimum=0),
    S("cpu_offload_slowdown", "number", 2.5, "CpuOffloadSlowdown",
      "run time of a full fine-tune whose optimizer state and master weights live in host memory (ZeRO-Offload) "
      "against one that keeps them on the card: the GPU waits over 60% of each step (DeepSpeed ZenFlow blog: "
      "Llama-2-7B on 4 A100, a CPU path over 4 s against a 2 s backward pass); LoRA pays it on the trained share",
      unit="x", minimum=1),
) + (
    # calculation model v4, memory (docs/models.md, "v4 memory"): runs without activation checkpointing
    S("activation_checkpointing", "choice", "yes", "ActivationCheckpointing",
      "whether a training run recomputes its activations in the backward pass (a task's activation_checkpointing "
      "overrides it): yes as torchtune's recipes (enable_activation_checkpointing: True), Hugging Face and Unsloth "
      "QLoRA runs; no as litgpt on one card", choices=CHECKPOINTING),
    S("layer_activation_bytes", "number", 46, "LayerActivationBytes",
      "bytes a transformer layer keeps per token and hidden unit for the backward pass without activation "
      "checkpointing (bf16, eager PyTorch): litgpt's LoRA memory grows 45.5 (Llama-2-7B, micro-batch 1 to 2) and "
      "46.9 (Llama-2-7B, 1,024 tokens) a token, layer and hidden unit (litgpt resource tables, config hub)",
      unit="bytes", minimum=0),
    S("qlora_activation_bytes", "number", 26, "QloraActivationBytes",
      "bytes a QLoRA layer keeps per token and hidden unit without checkpointing on top of "
      "layer_activation_bytes: bitsandbytes before 0.43.3 (July 2024) kept every 4-bit matmul's bf16 input, "
      "which frozen weights need not (litgpt, same LoRA settings: Llama-2-7B 26, Mistral-7B 29 more than LoRA); "
      "0 for bitsandbytes 0.43.3 or later and torchao NF4 (torchtune)", unit="bytes", minimum=0),
    S("logit_bytes", "number", 2, "LogitBytes",
      "bytes a training micro-batch holds per token and vocabulary entry for its logits: the output head's bf16 "
      "logits, 2; the loss's fp32 copy is taken a chunk at a time by torchtune (CEWithChunkedOutputLoss) and litgpt, "
      "the frameworks of the published rows; 6 where the loss upcasts them whole (Hugging Face transformers' "
      "ForCausalLMLoss: logits.float())", unit="bytes", minimum=0),
    S("fallback_vocab_size", "count", 202048, "FallbackVocab",
      "vocabulary of a model whose row gives no vocab_size: the largest of the built-in catalog (Llama 4's 202,048), "
      "so that a model without the figure is not under-stated", unit="tokens", minimum=1),
    # calculation model v4, scale (docs/models.md, "v4 training"): per-card speed falls in very large runs
    S("scale_free_cards", "count", 4096, "ScaleFreeCards",
      "cards of one training run up to which each card keeps its speed (Falcon-180B on 4,096 A100 reached 0.48 MFU; "
      "Megatron-LM 52% on 3,072 A100)", unit="cards", minimum=1),
    S("scale_efficiency", "percent", 0.93, "ScaleEfficiency",
      "share of its per-card speed a training run keeps per doubling of its cards beyond scale_free_cards (Llama 3 "
      "405B: 430 TFLOP/s a card on 8,192 H100, 400 on 16,384; arXiv:2407.21783 table 4)", minimum=0.6, maximum=1),
    # calculation model v4, decode (docs/models.md, "v4 decode")
    S("kv_read_efficiency", "percent", 1.0, "KvReadEfficiency",
      "share of the weights' bandwidth share that decode reads of the KV cache (batch x context bytes) reach; 1: as "
      "the weights (TensorRT-LLM's long-context runs, 20,000 in / 2,000 out, need no less); calibrate fits it to "
      "measured long-context runs", minimum=0.05, maximum=1),
    S("tp_reference_params_b", "number", 50, "TpReferenceParams",
      "parameters each card of a serving replica holds from which the replica loses only the interconnect's "
      "tensor-parallel efficiency per doubling (Llama 3.1 405B on 8 cards: 50.7, in band); a card holding less "
      "loses more", unit="billions of parameters a card", positive=True),
    S("tp_size_exponent", "number", 0.4, "TpSizeExponent",
      "how fast the tensor-parallel loss grows as each card holds less of the model: the doublings count "
      "(tp_reference_params_b x cards / parameters)^this times, at least once (least squares over the published "
      "serving runs, among them TensorRT-LLM 0.19's Llama 3.3 70B FP4 on 1 to 8 B200 and v0.6.1's Falcon-180B FP8 "
      "on 4 and 8 H100 at batch 1,024)", minimum=0, maximum=2),
    # calculation model v4, FP4 training (docs/models.md, "v4 FP4 training")
    S("train_fp4_efficiency", "percent", 0.65, "TrainFp4Efficiency",
      "FP4 training on a card's FP4 unit reaches the MFU this share of the FP4 peak (train_fp8_efficiency on the "
      "FP8 peak): NVFP4 recipes keep attention and some layers in higher precision; NVIDIA's MaxText NVFP4 runs on "
      "GB200 (FP4 peak twice FP8) were 1.35x (Llama 3 8B) and 1.43x (Llama 3.1 405B) as fast as FP8, "
      "0.93 x 1.39 / 2 = 0.65", minimum=0.001, maximum=1),
)
# Settings whose defaults calculation model v2 recalibrated (SETTINGS below carries them).
CHANGED_DEFAULTS: dict[str, float] = {"decode_efficiency": 0.70, "inference_overhead": 0.10}

# Fixed factors of calculation model v2, appended to CONSTANTS below.
SERVING_CONSTANTS: tuple[tuple[str, float, str], ...] = (
    ("BytesFp8", 1, "bytes per parameter of fp8 weights or KV cache"),
    ("BytesFp4", 0.5625, ("bytes per parameter of fp4 (NVFP4) weights: 4 bits and an FP8 (E4M3) scale per block "
                          "of 16, 4.5 bits (NVIDIA, 'Introducing NVFP4 for Efficient and Accurate Low-Precision "
                          "Inference', 2025-06-24)")),
    ("BytesQloraBase", 0.52, "bytes per parameter of a QLoRA base (4-bit NF4 with double-quantised scales)"),
    ("BytesActivation", 2, "bytes per bf16 activation element"),
    ("KvTensors", 2, "tensors cached per layer and KV head (key and value)"),
    ("PrefillAttentionFlops", 2, "FLOPs per layer, head dimension and prompt token squared (QK and AV)"),
    ("Milli", 1000, "milliseconds per second"),
    ("MeanOutputShare", 0.5, "share of its answer a sequence holds in the KV cache on average while decoding"),
    ("TwoCards", 2, "cards of a two-card replica; a doubling of the cards (the tensor-parallel factor's base)"),
    ("FourCards", 4, "cards of a four-card replica or training run"),
    ("CardsPerNode", 8, "cards of one server node: the largest serving replica, the unit of larger training runs"),
    ("Micro", 1e6, "microseconds per second"),
    ("RingAllReduceTraffic", 2, "bytes a ring all-reduce sends per byte reduced, times (n-1)/n (scatter, gather)"),
    ("AllReducesPerLayer", 2, "all-reduces of a tensor-parallel layer (after attention and after the MLP)"),
    ("MoeAllToAllPasses", 4, "all-to-all passes of a trained MoE layer (dispatch, combine; forward, backward)"),
    ("GibPerGb", 2 ** 30 / 1e9,
     "GB (1e9 bytes) per GB of card memory: vendors count a card's memory in GiB (2^30 bytes)"),
    # calculation model v4, memory: the layers x hidden of a model whose architecture is unknown
    ("LayerParamsPerHiddenSq", 12,
     "parameters of a transformer layer per hidden size squared: 4 attention + 8 MLP (arXiv:2001.08361 section 2.1)"),
    ("LayerWidthExponent", 2 / 3,
     "layers x hidden of a fixed-shape model grows as its parameters to this power (hidden cubed as the parameters)"),
    ("EmbeddingMatrices", 2,
     ("vocabulary-sized matrices of a model: the input embedding and the output head, untied (config.json "
      "tie_word_embeddings false) in the catalog's Llama, Qwen (7B and up), Mistral and gpt-oss models; a tied pair "
      "(Falcon) is counted twice, 1.4 GB over Falcon-180B's 94 GB QLoRA base")),
    ("HiddenPerLayer", 128,
     "hidden size per layer of an unknown model's shape (Llama 2 7B, 13B, Llama 3.1 8B: 4,096/32, 5,120/40, 4,096/32)"),
)

_BASE_SETTINGS: tuple[Setting, ...] = (
    S("currency", "text", "CNY", "Currency", "ISO code of the plan's currency, shown in number formats",
      structural=True),
    S("catalog_fx", "number", None, "CatalogFx",
      "plan currency per 1 CNY: overrides the reference rate for CNY prices (an FX sheet row does so for any currency)",
      unit="plan currency per CNY", structural=True, positive=True),
    S("build_date", "date", None, "BuildDate",
      "the date the plan is built as (YYYY-MM-DD), for the default period and the file's properties; "
      "blank: `--date`, else today", structural=True),
    S("period_start", "month", None, "PeriodStart", "first plan month (YYYY-MM); default: the month after the build date",
      structural=True),
    S("period_months", "count", 3, "PeriodMonths", "months in the plan", unit="months", structural=True,
      minimum=1, maximum=120),
    S("hours_per_month", "number", 730, "HoursPerMonth", "billing hours in a month", unit="h",
      minimum=1, maximum=744),
    S("mfu", "percent", 0.40, "MfuRate", "model FLOPs utilisation: achieved share of the GPU's dense peak",
      minimum=0.001, maximum=1),
    S("flops_per_token", "number", 6, "FlopsPerToken",
      "training FLOPs per parameter per token (2 forward + 4 backward)", unit="FLOP/param/token", minimum=0.001),
    S("run_overhead", "percent", 0.30, "RunOverhead",
      "extra wall time of a run for data loading, checkpoints, restarts", minimum=0),
    S("debug_overhead", "percent", 0.30, "DebugOverhead",
      "extra GPU time on debugging and trial runs, as a share of a run", minimum=0),
    S("setup_hours", "number", 0.5, "SetupHours",
      "hours a card is billed per run before work starts (image, downloads, tokenisation)", unit="h", minimum=0),
    S("usable_vram", "percent", 0.90, "UsableVram",
      "share of a card's memory a job can use (CUDA context, fragmentation)", minimum=0.01, maximum=1),
    S("activation_gb_per_b", "number", 0.6, "ActivationGbPerB",
      "training activation memory allowance per billion parameters", unit="GB per B params", minimum=0),
    S("lora_trainable", "percent", 0.01, "LoraTrainable", "share of parameters trained by LoRA/QLoRA",
      minimum=0, maximum=1),
    S("inference_overhead", "percent", 0.10, "InferenceOverhead",
      "serving runtime memory on top of the weights (activations, CUDA graphs); the KV cache is sized apart", minimum=0),
    S("decode_efficiency", "percent", 0.70, "DecodeEfficiency",
      "share of memory bandwidth reached by decode reads", minimum=0.001, maximum=1),
    S("peak_factor", "number", 1.0, "PeakFactor", "multiplies inference demand for peaks", unit="x",
      minimum=0.001),
    S("spot_overhead", "percent", 0.15, "SpotOverhead",
      "extra GPU-hours on spot for interruptions and reruns", minimum=0),
    S("hidden_cost_buffer", "percent", 0.25, "BufferRate",
      "reserve for storage, egress, images, platform fees, unrefundable balance (guidance 0.20-0.30)",
      minimum=0),
    S("gpu_choice", "choice", "cheapest", "GpuChoice",
      "how the engine picks a GPU when a task names none", choices=GPU_CHOICES, structural=True),
    S("consumer_online", "choice", "excluded", "ConsumerOnline",
      "whether the engine may choose a consumer (GeForce) card for an online service: excluded (default: NVIDIA's "
      "GeForce driver licence allows no datacenter deployment) or allowed; a card the task names is kept",
      choices=CONSUMER_ONLINE, structural=True),
    S("offer_currency", "choice", "auto", "OfferCurrency",
      "which built-in offers price the catalog: auto (the market of the plan's currency where the catalog has offers "
      "in it, USD and CNY; else the USD offers, converted at the FX rate: one market per plan, never a card from "
      "another), plan (only offers in the plan's currency), or any (each card's offers in the plan's currency, else "
      "in another, converted); a card left without an offer is unpriced and a warning names it",
      choices=OFFER_CURRENCIES, structural=True),
    S("providers", "text", None, "Providers",
      "take built-in offers only from these providers (comma-separated, e.g. aws, lambda); blank: every provider",
      structural=True),
    S("regions", "text", None, "Regions",
      "take built-in offers only in these regions (comma-separated; an offer for any region counts); blank: every "
      "region", structural=True),
    S("candidates_per_task", "count", None, "CandidatesPerTask",
      "options of each task the Candidates sheet lists: the chosen card and this many of the cheapest cards that "
      "could be chosen (the JSON lists every card); blank: every catalog card for an inventory of up to "
      f"{CANDIDATES_ALL_UP_TO:,} tasks, else {CANDIDATES_LARGE}", unit="cards", structural=True, minimum=1,
      maximum=MAX_CANDIDATES),
    S("max_cards", "count", 64, "MaxCards",
      "largest card count the engine proposes for one training run or one serving replica",
      unit="cards", structural=True, minimum=1, maximum=MAX_CARDS),
    S("low_util_threshold", "percent", 0.20, "LowUtilThreshold",
      "monthly average utilisation under which a resource is flagged for downsizing", minimum=0, maximum=1),
    S("oom_threshold", "number", 3, "OomThreshold", "OOM events a month from which a resource is flagged",
      unit="events", minimum=0),
    S("variance_tolerance", "percent", 0.10, "VarianceTolerance",
      "bill over plan by more than this share is flagged", minimum=0),
    S("gpu_line_pattern", "text", None, "GpuLinePattern",
      "regular expression that marks a bill line as GPU (blank: the built-in pattern of GPU instance families)",
      structural=True),
    S("billing_timezone", "text", "UTC", "BillingTimezone",
      "time zone the bills' months are counted in (IANA name, e.g. America/New_York); timestamps with an offset "
      "are converted to it, those without are read in it", structural=True),
    S("recon_memory_limit", "text", None, "ReconMemoryLimit",
      "memory the bill engine (DuckDB) may use before spilling to disk, e.g. 1GB or 512MB; blank: 1GB, or a quarter "
      "of the machine's memory or half a ulimit -v or cgroup limit where less", structural=True),
    S("recon_top_resources", "count", 50, "ReconTopResources",
      "resources a Recon tab lists, flagged ones first by the money at stake; the others are summed in one line "
      "and listed on the month's Resources sheet", unit="resources", structural=True, minimum=1, maximum=100000),
    S("recon_spike_factor", "number", 3, "ReconSpikeFactor",
      "a GPU task's day billed above this multiple of the median of its previous 7 billed days (SPIKE_DAYS) is "
      "flagged as a spike on the Recon tab's daily table", minimum=1),
    S("electricity_per_kwh", "number", 1.0, "ElectricityPerKwh",
      "electricity price for owned machines (default 1.0 CNY, at the reference rate in another plan currency)",
      unit="currency/kWh", minimum=0, money="CNY"),
    S("depreciation_years", "number", 3, "DepreciationYears", "write-off period of an owned machine",
      unit="years", minimum=0.1),
    S("upkeep_per_year", "number", 2000, "UpkeepPerYear",
      "cooling, disks, repairs per owned machine (default 2,000 CNY, at the reference rate in another plan currency)",
      unit="currency/year", minimum=0, money="CNY"),
    S("pue", "number", 1.0, "Pue", "power usage effectiveness of the room owned machines stand in: the electricity "
      "and colocation of a card are its power_w times this (1.0: power_w already counts cooling; 1.3-1.6 typical)",
      unit="x", minimum=1, maximum=3),
    S("colocation_per_kw_month", "number", 0, "ColocationPerKwMonth",
      "colocation rent of owned machines per kW of power (at the PUE) and month, paid whether busy or not",
      unit="currency/kW-month", minimum=0),
    S("residual_value", "percent", 0, "ResidualValue",
      "share of the purchase price an owned machine fetches at the end of depreciation_years", minimum=0,
      maximum=0.9),
    S("discount_rate", "percent", 0, "DiscountRate",
      "yearly cost of capital: owning's fixed cost is the purchase less the discounted residual value as a level "
      "monthly payment over depreciation_years (Excel PMT)", minimum=0, maximum=1),
)
# One optional monthly cap per tier, from the tier records.
TIER_CAP_SETTINGS: tuple[Setting, ...] = tuple(
    S(t.cap_setting, "number", None, t.cap_name, t.cap_help,
      unit="currency/month", minimum=0) for t in TASK_TIERS)
# One discount off on-demand per commitment tier, from the tier records: the rate when GPUs leaves its price blank.
COMMITMENT_SETTINGS: tuple[Setting, ...] = tuple(
    S(t.discount_setting, "percent", t.default_discount, t.discount_name,
      f"{t.name}: share off on-demand of the effective rate per committed card-hour when GPUs leaves "
      f"{t.price_column} blank (default: {t.discount_source})", minimum=0, maximum=0.99) for t in COMMITMENT_TIERS)
SETTINGS: tuple[Setting, ...] = _BASE_SETTINGS + TIER_CAP_SETTINGS + SERVING_SETTINGS + COMMITMENT_SETTINGS
SETTINGS_BY_KEY = {s.key: s for s in SETTINGS}

# Fixed conversion factors and byte counts: named cells on Assumptions, never constants in formulas.
CONSTANTS: tuple[tuple[str, float, str], ...] = (
    ("BytesFp16", 2, "bytes per parameter of fp16/bf16 weights"),
    ("BytesInt8", 1, "bytes per parameter of int8 weights"),
    ("BytesInt4", 0.5, "bytes per parameter of int4 (QLoRA 4-bit) weights"),
    ("BytesWeightsGrads", 4, "bytes per trained parameter of bf16 weights and gradients (the optimizer state apart)"),
    ("InferenceFlopsPerToken", 2, "FLOPs per parameter per generated token"),
    ("Billion", 1e9, "parameters per billion"),
    ("Tera", 1e12, "FLOP/s per TFLOP/s"),
    ("SecondsPerHour", 3600, "seconds in an hour"),
    ("SecondsPerDay", 86400, "seconds in a day"),
    ("HoursPerDay", 24, "hours in a day"),
    ("DaysPerYear", 365, "days in a year"),
    ("WattsPerKw", 1000, "watts per kilowatt"),
    ("PercentScale", 100, "utilisation percent per share"),
    ("Million", 1e6, "tokens per million (unit costs)"),
    ("Thousand", 1000, "requests per thousand (unit costs)"),
    ("MonthsPerYear", 12, "months in a year (price trends)"),
    ("DataStarvedMemShare", 0.8, "memory share above which a barely busy GPU is flagged data-starved"),
    ("DataStarvedUtil", 0.10, "utilisation under which a full-memory GPU is flagged data-starved"),
) + SERVING_CONSTANTS
CONSTANT_VALUES = {name: value for name, value, _ in CONSTANTS}

C = Column
FORM_FACTORS = ("sxm", "pcie")
# GPUs sheet columns of calculation models v2 (low-precision peaks, card form) and v3 (the share of bandwidth and
# matmul peak the card's kernels reach), placed after tflops in GPU_COLUMNS.
GPU_PRECISION_COLUMNS: tuple[Column, ...] = (
    C("tflops_fp8", "number", "TFLOP/s", positive=True,
      help="dense FP8 tensor peak with FP32 accumulate; blank: the card has no FP8 unit"),
    C("tflops_fp4", "number", "TFLOP/s", positive=True, help="dense FP4 tensor peak; blank: the card has no FP4 unit"),
    C("form_factor", "choice", choices=FORM_FACTORS, help="sxm (or OAM) module or pcie card"),
    C("bandwidth_efficiency", "percent", minimum=0.01, maximum=1,
      help="share of the memory bandwidth decode reads reach on this card; blank: the decode_efficiency setting"),
    C("matmul_efficiency", "percent", minimum=0.01, maximum=1.5, plain_above_one=True,
      help="multiplies every MFU on this card: below 1 where its kernels reach less of the datasheet peak than "
      "H100/A100 kernels reach of theirs; blank: 1"),
    C("training_efficiency", "percent", minimum=0.01, maximum=1.5, plain_above_one=True,
      help="multiplies every training MFU on this card in place of matmul_efficiency (calibrate fits "
      "matmul_efficiency to serving runs and keeps training here as it was); blank: matmul_efficiency"),
)
GPU_COLUMNS: tuple[Column, ...] = (
    C("gpu", "text", required=True, help="GPU name, the key tasks refer to", example="RTX 4090"),
    C("class", "choice", choices=GPU_CLASSES, default="datacenter",
      help="consumer cards are warned against for long continuous training"),
    C("vram_gb", "number", "GB", positive=True, help="memory per card (required for a GPU not in the built-in catalog)"),
    C("bandwidth_gbs", "number", "GB/s", positive=True, help="memory bandwidth"),
    C("tflops", "number", "TFLOP/s", positive=True,
      help="dense BF16/FP16 tensor peak with FP32 accumulate (never the sparse figure)"),
    *GPU_PRECISION_COLUMNS,
    C("interconnect", "choice", choices=INTERCONNECTS, default="pcie", help="link between cards"),
    C("scaling", "percent", default=0.5, minimum=0, maximum=1, help="efficiency of each added card: speedup(n) = 1 + (n-1) x scaling"),
    # A price of 0 is no offer (leave it blank): free hours divide the commitments' break-even by zero (a traceback,
    # and #DIV/0! on the Commitments sheet) and plan a budget of nothing; a purchase price of 0 makes owning free.
    *(C(t.price_column, "number", t.listed_unit, minimum=0, positive=True, help=t.meaning)
      for t in sorted(TIERS, key=lambda t: not t.reference)),  # the reference (list) price first
    C("purchase_price", "number", "in the row's currency", minimum=0, positive=True,
      help="all-in price of an owned machine per card; blank: not for sale"),
    C("power_w", "number", "W", minimum=0, help="wall power of an owned machine per card under load"),
    C("price_change_per_year", "percent", "share/year", minimum=-0.9, maximum=1,
      help="expected yearly change of this GPU's rental prices, applied month by month from the plan's first month "
      "(-0.2: 20% cheaper a year on); blank: 0; commitment rates stay as contracted"),
    C("provider", "text", help="whose offer the prices are (built-in: a provider or platform as its source names it, "
      "or market = the median over providers); a row that names one replaces the built-in offer, its blank prices not "
      "offered"),
    C("region", "text", help="the provider's region; any: not regional"),
    *(C(f"{t.name}_offer", "text", help=f"whose offer the {t.name} price is (provider, or provider · region); blank: "
        "the row's provider and region. The built-in catalog takes each tier's cheapest eligible offer")
      for t in TASK_TIERS),
    C("currency", "text", help="ISO code of this row's prices (e.g. USD, CNY); blank: the plan currency. "
      "Prices in another currency are converted at the FX rate on Assumptions"),
    C("source", "text", help="where the prices came from"),
    C("as_of", "text", help="the date the source states for the prices (YYYY-MM-DD, or YYYY-MM); "
      "\"retrieved YYYY-MM-DD\" when it states none: the day it was read"),
)

TASK_COLUMNS: tuple[Column, ...] = (
    C("task_id", "text", required=True, help="unique key", example="T01"),
    C("task", "text", help="description"),
    C("kind", "choice", required=True, choices=KINDS,
      help=", ".join(k.described for k in TASK_KINDS[:-1]) + f" or {TASK_KINDS[-1].described}"),
    C("model", "text", help="a catalog model (`budgetgen models`, or a Models sheet row): fills the size and "
      "architecture", example="Llama-3.1-8B"),
    C("model_params_b", "number", "billions of parameters", positive=True,
      help="total parameters, e.g. 7 or 7B; required when model is blank, overrides the catalog's when typed",
      example="7", scale=1e9),
    C("active_params_b", "number", "billions of parameters", positive=True, scale=1e9,
      help="parameters active per token (mixture of experts); blank: the catalog model's, else all of them"),
    C("method", "choice", choices=TRAINING_METHODS + SERVING_METHODS,
      help="training: full (default), lora, qlora; serving: fp16 (default, = bf16), fp8, int8, int4, fp4"),
    C("train_precision", "choice", choices=TRAIN_PRECISIONS,
      help="training matmul precision: bf16 (blank), fp8, fp4 (the card's FP8/FP4 peak where it has one)"),
    C("optimizer", "choice", choices=OPTIMIZERS,
      help="training optimizer: adamw (blank), adamw_8bit (8-bit moments), cpu_offload (optimizer state and master "
      "weights in host memory: less card memory, a slower run)"),
    C("activation_checkpointing", "choice", choices=CHECKPOINTING,
      help="training: yes (activations recomputed in the backward pass: a micro-batch keeps 2 bytes a layer and "
      "hidden unit), no (kept: layer_activation_bytes, e.g. litgpt on one card); blank: the "
      "activation_checkpointing setting (yes)"),
    C("train_tokens", "number", "tokens per epoch", positive=True, help="required for training, e.g. 5M"),
    C("epochs", "number", "epochs", default=1, positive=True, help="passes over the training tokens"),
    C("runs_per_month", "number", "runs/month", default=1, positive=True,
      help="training or batch runs per active month; 0.5: one run spread over two months"),
    C("deadline_days", "number", "days", positive=True,
      help="wall-clock days one training or batch run may take; blank: its share of the month"),
    C("requests_per_day", "number", "requests/day", positive=True, help="required for inference"),
    C("batch_requests", "number", "requests/run", positive=True, help="required for batch"),
    C("prompt_tokens", "number", "tokens", minimum=0,
      help="input (prompt) tokens per request; blank: the default_prompt_tokens setting"),
    C("tokens_per_request", "number", "output tokens", positive=True,
      help="output (generated) tokens per request (serving)"),
    C("context_tokens", "number", "tokens", positive=True,
      help="tokens one sequence holds in the KV cache; blank: prompt plus output"),
    C("serving_hours_per_day", "number", "h/day", default=24, positive=True, maximum=24,
      help="hours a day the service is up and the traffic falls in"),
    C("tokens_per_sec", "number", "tokens/s", positive=True,
      help="measured output tokens/s of one replica under load; blank: estimated per replica"),
    C("concurrency", "count", "sequences", positive=True,
      help="sequences one replica decodes together; blank: as many as memory holds (at most max_batch_per_card "
      "per card)"),
    C("ttft_ms", "number", "ms", positive=True,
      help="target time to the first token of a request (prompt reading plus one decode step); blank: none"),
    C("tpot_ms", "number", "ms", positive=True,
      help="target time per output token (one decode step); blank: none. Targets cap the batch, adding replicas"),
    C("min_replicas", "count", "replicas", positive=True, maximum=MAX_CARDS,
      help="replicas an online service keeps at least (failover); blank: the min_replicas setting"),
    C("kv_cache_gb", "number", "GB", default=0, minimum=0,
      help="extra memory per replica on top of the estimated KV cache"),
    C("gpu", "text", help="a catalog GPU name; blank: the engine chooses"),
    C("cards", "count", "cards", positive=True, maximum=MAX_CARDS, help="cards per run/replica; blank: the fewest that fit"),
    C("tier", "choice", choices=TIER_NAMES,
      help="price tier; default: inference monthly, batch idle, training on_demand"),
    C("mfu", "percent", help="overrides the mfu setting for this task"),
    C("start_month", "month", "YYYY-MM", help="first active month; blank: plan start"),
    C("end_month", "month", "YYYY-MM", help="last active month; blank: plan end"),
    C("cost_center", "text", default="unassigned", help="for grouping in the summary"),
    C("api_price_per_m_tokens", "number", "currency/M output tokens", positive=True,
      help="what an API would charge per million output tokens, in the plan currency; gives a self-host-versus-API "
      "verdict against the planned unit cost (serving tasks)"),
    C("growth_per_month", "percent", "share/month", default=0, minimum=-0.99, maximum=10,
      help="demand growth a month, compounded from start_month: an online service's requests per day, a training "
      "or batch task's runs; -0.05 shrinks 5% a month"),
)

EXTRA_COLUMNS: tuple[Column, ...] = (
    C("item", "text", required=True, help="what the cost is", example="Object storage"),
    C("category", "choice", choices=EXTRA_CATEGORIES, default="other", help="kind of non-GPU cost"),
    C("monthly_cost", "number", "currency/month", required=True, minimum=0, help="cost per active month"),
    C("start_month", "month", "YYYY-MM", help="first month; blank: plan start"),
    C("end_month", "month", "YYYY-MM", help="last month; blank: plan end"),
)

# The Models sheet: the same columns as the built-in catalog; a row adds a model or overrides a catalog row.
MODEL_COLUMNS: tuple[Column, ...] = (
    C("model", "text", required=True, help="model name, the key tasks refer to (case-insensitive)",
      example="Llama-3.1-8B"),
    C("total_params_b", "number", "billions of parameters", positive=True, scale=1e9,
      help="all parameters, held in memory (required for a model not in the built-in catalog)"),
    C("active_params_b", "number", "billions of parameters", positive=True, scale=1e9,
      help="parameters active per token (mixture of experts); blank: all of them"),
    C("layers", "count", "layers", positive=True, help="transformer layers"),
    C("hidden", "count", "elements", positive=True, help="hidden size"),
    C("attn_heads", "count", "heads", positive=True, help="query attention heads"),
    C("kv_heads", "count", "heads", positive=True, help="key/value heads (grouped-query attention); blank for MLA"),
    C("head_dim", "count", "elements", positive=True, help="elements per attention head; blank for MLA"),
    C("kv_latent", "count", "elements", positive=True,
      help="MLA models: elements cached per layer per token (e.g. 576); blank otherwise"),
    C("native_context", "count", "tokens", positive=True, help="context length the model was trained for"),
    C("experts", "count", "experts", positive=True,
      help="mixture of experts: routed experts per MoE layer (shared experts not counted); blank for a dense model"),
    C("experts_per_token", "count", "experts", positive=True,
      help="mixture of experts: routed experts each token uses (top-k), fewer than experts"),
    C("vocab_size", "count", "tokens", positive=True,
      help="tokens of the vocabulary (config.json vocab_size): the input embedding and output head, and the logits "
           "of a training micro-batch; blank: fallback_vocab_size"),
    C("source", "text", help="where the figures came from"),
)

FX_COLUMNS: tuple[Column, ...] = (
    C("currency", "text", required=True, help="ISO code of a currency the GPUs sheet, the catalog or a bill prices in",
      example="CNY"),
    C("rate", "number", "plan currency per unit", required=True, positive=True,
      help="plan currency per 1 unit of it; blank sheet: the bundled ECB reference rate"),
    C("as_of", "date", help="the day the rate holds for (YYYY-MM-DD)"),
    C("source", "text", help="where the rate came from"),
)

SETTINGS_COLUMNS: tuple[Column, ...] = (
    C("setting", "text", required=True,
      help="setting name, e.g. period_start (docs/input-reference.md lists every setting)"),
    C("value", "text", help="its value; blank: the default"),
    C("note", "text", help="what the setting means (init writes it; the reader ignores it)"),
)

# The scenario drivers (budgetgen/plan/scenarios.py applies them) and the Scenarios sheet that gives their values.
SCENARIO_LEVELS = ("low", "base", "high")
DRIVERS: tuple[Driver, ...] = (
    Driver("requests", DEMAND, "requests per day (batch: requests per run): serving tasks' demand",
           "每日请求数（批量：每次运行的请求数）：服务类任务的需求", training=False),
    Driver("tokens", DEMAND, "output tokens per request: serving tasks' work per request",
           "每请求输出token数：服务类任务每个请求的工作量", training=False),
    Driver("training_tokens", DEMAND, "training tokens: training tasks' work per run",
           "训练token数：训练类任务每次运行的工作量", training=True),
    Driver("efficiency", DEMAND, "MFU and serving efficiency: the work a card does an hour (divides the demand)",
           "算力利用率和服务效率：一张卡每小时完成的工作量（需求除以它）", divides=True),
    Driver("price", PRICE, "every GPU price", "所有GPU价格"),
    *(Driver(f"price_{t.name}", PRICE, f"GPU prices of the {t.name} tier", f"{t.zh}计费方式的GPU价格", tier=t.name)
      for t in TASK_TIERS),
    Driver("fx", PRICE, "the FX rate of GPU prices listed in another currency than the plan's",
           "以计划币种以外的币种标价的GPU价格所用的汇率", foreign=True),
    Driver("buffer", BUFFER, "the hidden-cost buffer rate (a rate, not a multiplier; for every task)",
           "隐性成本缓冲率（是比率而非倍数；适用于所有任务）"),
)
SCENARIO_COLUMNS: tuple[Column, ...] = (
    C("driver", "choice", required=True, choices=tuple(d.name for d in DRIVERS),
      help="; ".join(f"{d.name}: {d.meaning}" for d in DRIVERS), example="requests"),
    C("task_id", "text", help="the task it moves; blank: every task (a task's own row wins)", example="T01"),
    C("low", "percent", positive=True, plain_above_one=True, minimum=SCENARIO_RANGE[0], maximum=SCENARIO_RANGE[1],
      help="the low scenario's value; blank: base", example="0.8"),
    C("base", "percent", positive=True, plain_above_one=True, minimum=SCENARIO_RANGE[0], maximum=SCENARIO_RANGE[1],
      help="the base scenario's value; blank: 1 (buffer: the hidden_cost_buffer setting)"),
    C("high", "percent", positive=True, plain_above_one=True, minimum=SCENARIO_RANGE[0], maximum=SCENARIO_RANGE[1],
      help="the high scenario's value; blank: base", example="1.5"),
    C("source", "text", help="where the range comes from"),
)

# The Ramp sheet: a task_id, then one column per plan month headed YYYY-MM, each a multiplier of the typed demand.
RAMP_COLUMNS: tuple[Column, ...] = (
    C("task_id", "text", required=True, help="the task the row ramps", example="T01"),
    C("YYYY-MM", "number", "x", minimum=0, maximum=MAX_DEMAND_FACTOR,
      help="one column per plan month (headed by the month): the month's demand over the demand typed on Tasks, "
      "instead of the growth (0: the task pauses); blank: the growth", example="0.5"),
)
BUDGET_COLUMNS: tuple[Column, ...] = (
    C("cost_center", "text", help="a cost_center of the Tasks sheet; blank: the whole plan (every month's total)",
      example="research"),
    C("monthly_budget", "number", "currency/month", required=True, minimum=0, example="50000",
      help="the budget of every plan month: against the month's total for the whole plan, against the GPU cost of "
      "the cost center's tasks for a cost center"),
    C("source", "text", help="who set the budget"),
)

# Every input sheet of a plan, in the order `init` writes them (the reconciliation's Bills, Usage and Assignments
# sheets apart: docs/reconciliation.md).
SHEETS: dict[str, tuple[Column, ...]] = {
    "Settings": SETTINGS_COLUMNS,
    "Tasks": TASK_COLUMNS,
    "GPUs": GPU_COLUMNS,
    "Models": MODEL_COLUMNS,
    "Extras": EXTRA_COLUMNS,
    "FX": FX_COLUMNS,
    "Ramp": RAMP_COLUMNS,
    "Scenarios": SCENARIO_COLUMNS,
    "Budgets": BUDGET_COLUMNS,
}
REQUIRED_SHEETS = ("Tasks",)


def normalise_header(text: object) -> str:
    """Header matching ignores case, spaces and underscores."""
    return "".join(ch for ch in str(text).lower() if ch not in " _\t\n-") if text is not None else ""
