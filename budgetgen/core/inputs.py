"""Validated inputs as values: settings, catalog GPUs, tasks and extra costs."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..catalog.prices import offer_label, offer_provider
from .records import Tier
from .schema import COMMITMENT_SETTINGS, SETTINGS_BY_KEY, TIER_CAP_SETTINGS, Setting, Value

if TYPE_CHECKING:
    from pandas import DataFrame

    from ..catalog.fx import FxTable
    from ..catalog.models import ModelCatalog, ModelSpec
    from ..plan.budgets import Budget
    from ..plan.scenarios import ScenarioRow


def _default(key: str) -> Any:
    """A setting's default, as schema.SETTINGS declares it (the one place defaults are written)."""
    return SETTINGS_BY_KEY[key].default


def _defaults(settings: tuple[Setting, ...]) -> Callable[[], dict[str, Any]]:
    return lambda: {s.key: s.default for s in settings}


@dataclass(frozen=True)
class Settings:
    """The plan's settings, defaults filled in.

    One typed field per setting of schema.SETTINGS, its default taken from there (tests/test_settings_typed.py checks
    the fields and the schema agree), but the settings the tier records bring (a cap per task tier, a discount per
    commitment tier): those live in `tier_caps` and `discounts` by setting key, so that a tier added to
    records.TIERS brings its settings with it. `value(key)` reads any setting by key."""

    currency: str = _default("currency")
    catalog_fx: float | None = _default("catalog_fx")
    build_date: str | None = _default("build_date")
    period_start: str | None = _default("period_start")
    period_months: int = _default("period_months")
    hours_per_month: float = _default("hours_per_month")
    mfu: float = _default("mfu")
    flops_per_token: float = _default("flops_per_token")
    run_overhead: float = _default("run_overhead")
    debug_overhead: float = _default("debug_overhead")
    setup_hours: float = _default("setup_hours")
    usable_vram: float = _default("usable_vram")
    activation_gb_per_b: float = _default("activation_gb_per_b")
    lora_trainable: float = _default("lora_trainable")
    inference_overhead: float = _default("inference_overhead")
    decode_efficiency: float = _default("decode_efficiency")
    peak_factor: float = _default("peak_factor")
    spot_overhead: float = _default("spot_overhead")
    hidden_cost_buffer: float = _default("hidden_cost_buffer")
    gpu_choice: str = _default("gpu_choice")
    consumer_online: str = _default("consumer_online")
    offer_currency: str = _default("offer_currency")
    providers: str | None = _default("providers")
    regions: str | None = _default("regions")
    candidates_per_task: int | None = _default("candidates_per_task")
    max_cards: int = _default("max_cards")
    low_util_threshold: float = _default("low_util_threshold")
    oom_threshold: float = _default("oom_threshold")
    variance_tolerance: float = _default("variance_tolerance")
    gpu_line_pattern: str | None = _default("gpu_line_pattern")
    billing_timezone: str = _default("billing_timezone")
    recon_memory_limit: str | None = _default("recon_memory_limit")
    recon_top_resources: int = _default("recon_top_resources")
    recon_spike_factor: float = _default("recon_spike_factor")
    electricity_per_kwh: float = _default("electricity_per_kwh")
    depreciation_years: float = _default("depreciation_years")
    upkeep_per_year: float = _default("upkeep_per_year")
    pue: float = _default("pue")
    colocation_per_kw_month: float = _default("colocation_per_kw_month")
    residual_value: float = _default("residual_value")
    discount_rate: float = _default("discount_rate")
    step_overhead_ms: float = _default("step_overhead_ms")
    decode_mfu: float = _default("decode_mfu")
    prefill_mfu: float = _default("prefill_mfu")
    fp8_efficiency: float = _default("fp8_efficiency")
    tp_efficiency: float = _default("tp_efficiency")
    max_batch_per_card: int = _default("max_batch_per_card")
    min_batch: int = _default("min_batch")
    kv_cache_dtype: str = _default("kv_cache_dtype")
    default_prompt_tokens: int = _default("default_prompt_tokens")
    min_replicas: int = _default("min_replicas")
    kv_fallback_bytes: float = _default("kv_fallback_bytes")
    moe_mfu: float = _default("moe_mfu")
    lora_flops_per_token: float = _default("lora_flops_per_token")
    qlora_flops_per_token: float = _default("qlora_flops_per_token")
    micro_batch_tokens: int = _default("micro_batch_tokens")
    lora_workspace_gb: float = _default("lora_workspace_gb")
    tp_efficiency_nvlink: float = _default("tp_efficiency_nvlink")
    allreduce_us_nvlink: float = _default("allreduce_us_nvlink")
    allreduce_us_pcie: float = _default("allreduce_us_pcie")
    nvlink_gbs: float = _default("nvlink_gbs")
    pcie_gbs: float = _default("pcie_gbs")
    moe_layer_overhead_us: float = _default("moe_layer_overhead_us")
    train_fp8_efficiency: float = _default("train_fp8_efficiency")
    lora_mfu: float = _default("lora_mfu")
    moe_network_gbs: float = _default("moe_network_gbs")
    moe_comm_exposed: float = _default("moe_comm_exposed")
    adam_state_bytes: float = _default("adam_state_bytes")
    adam_8bit_state_bytes: float = _default("adam_8bit_state_bytes")
    cpu_offload_slowdown: float = _default("cpu_offload_slowdown")
    activation_checkpointing: str = _default("activation_checkpointing")
    layer_activation_bytes: float = _default("layer_activation_bytes")
    qlora_activation_bytes: float = _default("qlora_activation_bytes")
    logit_bytes: float = _default("logit_bytes")
    fallback_vocab_size: int = _default("fallback_vocab_size")
    scale_free_cards: int = _default("scale_free_cards")
    scale_efficiency: float = _default("scale_efficiency")
    kv_read_efficiency: float = _default("kv_read_efficiency")
    tp_reference_params_b: float = _default("tp_reference_params_b")
    tp_size_exponent: float = _default("tp_size_exponent")
    train_fp4_efficiency: float = _default("train_fp4_efficiency")
    plan_months: tuple[str, ...] = ()  # derived from period_start and period_months
    tier_caps: Mapping[str, float | None] = field(default_factory=_defaults(TIER_CAP_SETTINGS))  # tier_cap_<tier>
    discounts: Mapping[str, float] = field(default_factory=_defaults(COMMITMENT_SETTINGS))  # <commitment>_discount

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> Settings:
        """Settings from values by setting key (plan_months too); a setting not given takes its default."""
        caps = {s.key: values.get(s.key, s.default) for s in TIER_CAP_SETTINGS}
        discounts = {s.key: values.get(s.key, s.default) for s in COMMITMENT_SETTINGS}
        rest = {k: v for k, v in values.items() if k not in caps and k not in discounts}
        return cls(**rest, tier_caps=caps, discounts=discounts)

    def value(self, key: str) -> object:
        """The setting `key`'s value, a tier's setting included."""
        if key in self.tier_caps:
            return self.tier_caps[key]
        if key in self.discounts:
            return self.discounts[key]
        return getattr(self, key)

    @property
    def build_day(self) -> dt.date:
        """build_date as a date: the reader always sets it (--date, the setting, else today)."""
        if self.build_date is None:
            raise ValueError("the settings have no build_date")
        return dt.date.fromisoformat(self.build_date)

    def tier_cap(self, tier: Tier) -> float | None:
        """The task tier's optional monthly cap (None: no cap)."""
        return self.tier_caps[tier.cap_setting]

    def discount(self, tier: Tier) -> float:
        """The commitment tier's share off on-demand."""
        return self.discounts[tier.discount_setting]


@dataclass(frozen=True)
class Gpu:
    """One catalog GPU: specs, prices per tier (None: not offered) and where they came from.

    `prices` and `purchase_price` are in the plan currency, what the engine computes with; `listed_prices` and
    `listed_purchase` are the same figures as listed, in `currency`, converted at `fx` (plan currency per unit)."""

    name: str
    gpu_class: str
    vram_gb: float
    bandwidth_gbs: float
    tflops: float
    interconnect: str
    scaling: float
    prices: dict[str, float | None]
    purchase_price: float | None = None
    power_w: float | None = None
    source: str = ""
    as_of: str = ""
    tflops_fp8: float | None = None  # dense FP8 peak; None: no FP8 unit
    tflops_fp4: float | None = None  # dense FP4 peak; None: no FP4 unit
    form_factor: str = ""  # sxm | pcie
    provider: str = ""  # whose offer the prices are ("market": a median over providers); blank: not said
    region: str = ""  # the offer's region ("any": not regional)
    currency: str = ""  # ISO code of the listed prices
    listed_prices: dict[str, float | None] = field(default_factory=dict)
    listed_purchase: float | None = None
    fx: float = 1.0  # plan currency per 1 unit of `currency`
    bandwidth_efficiency: float | None = None  # share of bandwidth decode reaches; None: the decode_efficiency setting
    matmul_efficiency: float | None = None  # multiplies every MFU on this card; None: 1
    training_efficiency: float | None = None  # multiplies every training MFU in its place; None: matmul_efficiency
    price_change_per_year: float | None = None  # expected yearly change of its rental prices; None: 0
    offers: dict[str, str] = field(default_factory=dict)  # task tier -> whose offer its price is; blank: the row's

    def offer(self, tier: str) -> str:
        """Whose offer the tier's price is, as `provider · region` (prices.offer_label): the tier's own offer, else
        the row's provider and region (a commitment tier: the row's)."""
        return self.offers.get(tier) or offer_label(self.provider, self.region)

    def provider_of(self, tier: str) -> str:
        """The provider procurement orders the tier from (blank: not said)."""
        return offer_provider(self.offer(tier))


@dataclass(frozen=True)
class Task:
    """One inventory row, defaults filled in; `values` holds every input column by name."""

    values: dict[str, Value]
    row: int
    cells: dict[str, str]  # column name -> A1 cell of this row on the Tasks sheet
    extra: dict[str, Value] = field(default_factory=dict)  # unknown columns, echoed
    defaulted: frozenset[str] = frozenset()  # input columns left blank and given their default (e.g. tier)

    @property
    def task_id(self) -> str:
        return self.values["task_id"]

    @property
    def kind(self) -> str:
        return self.values["kind"]

    def cell(self, column: str) -> str:
        return self.cells.get(column, f"A{self.row}")


@dataclass(frozen=True)
class Extra:
    """One itemised non-GPU cost."""

    item: str
    category: str
    monthly_cost: float
    start_month: str
    end_month: str


@dataclass(frozen=True)
class Inputs:
    """Everything the engine needs, validated."""

    settings: Settings
    gpus: tuple[Gpu, ...]
    tasks: tuple[Task, ...]
    extras: tuple[Extra, ...] = ()
    warnings: tuple[str, ...] = ()
    extra_headers: tuple[str, ...] = ()
    bills_sheet: DataFrame | None = None  # the Bills sheet (index: sheet row), or None
    usage_sheet: DataFrame | None = None  # the Usage sheet likewise
    assignments: tuple[tuple[str, str], ...] = ()  # (resource_id, task_id) from the Assignments sheet
    source_name: str = ""  # the input file's name
    source_sha256: str = ""  # and its SHA-256, shown on the About sheet
    models: ModelCatalog | None = None  # the model catalog (built-in plus the Models sheet)
    fx: FxTable | None = None  # the rates the prices were converted with; None: every price in the plan currency
    scenarios: tuple[ScenarioRow, ...] = ()  # the Scenarios sheet's rows
    budgets: tuple[Budget, ...] = ()  # the Budgets sheet's rows
    ramps: dict[str, dict[int, float]] = field(default_factory=dict)  # task_id -> {plan month index (1-based):
    # multiplier} (Ramp sheet)

    def model(self, name: str | None) -> ModelSpec | None:
        """The catalog model a task names (None: the task names none)."""
        return self.models.find(name) if name and self.models is not None else None

    def gpu(self, name: str) -> Gpu:
        return next(g for g in self.gpus if g.name == name)
