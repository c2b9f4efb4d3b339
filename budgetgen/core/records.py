"""The things that vary, as records: price tiers and task kinds.

Each record carries everything about it (its columns, names, words in both languages, how it bills, which
kinds it suits), and the rest of the package asks the record, never compares a name. Adding a tier or a kind
is one record here plus, for a kind that computes differently, its own formulas in `columns.py`.

This module imports nothing from the package, so that a record can be added before anything derives from
the tuples below (tests/test_records.py adds a fifth tier and a fifth kind that way).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

TRAINING_METHODS = ("full", "lora", "qlora")
SERVING_METHODS = ("fp16", "bf16", "fp8", "int8", "int4", "fp4")  # bf16 is sized as fp16


def camel(key: str) -> str:
    """`on_demand` -> `OnDemand`: the CamelCase of a key, for Excel defined names."""
    return "".join(part.capitalize() for part in key.split("_"))


@dataclass(frozen=True)
class Tier:
    """One price tier: its GPUs price column, how it bills, which kinds it suits, its cap and its words."""

    name: str
    price_column: str  # the GPUs sheet's (and the catalog's) price column
    per_card_month: bool  # priced per card and month, every held card billed all month; else per card-hour
    for_online: bool  # suits online services (kinds with online=True); every tier suits the other kinds
    reruns: bool  # interruptible: work that is not online runs SpotOverhead more GPU-hours on it
    focus_category: str  # the FOCUS PricingCategory its bill lines carry: Standard, Committed, Dynamic, Other
    zh: str  # the tier's word in Chinese
    meaning: str  # the price column's help
    meaning_zh: str  # the same in Chinese
    reference: bool = False  # the list price others are checked against (at most one tier)
    over_reference_message: str | None = None  # the catalog check's message when its price is above the reference
    # A commitment: bought per GPU type for this many months, every hour of the term billed at an effective rate per
    # committed card-hour (0: no term, a tier tasks are priced on). A commitment is not offered as a task's tier:
    # the Commitments sheet proposes the cards from the plan's demand. Blank on GPUs: on-demand x (1 - discount).
    term_months: int = 0
    default_discount: float = 0.0  # its discount setting's default: the rate's share off on-demand
    discount_source: str = ""  # which sourced figure the default is, and why

    @property
    def for_tasks(self) -> bool:
        """Tasks may pick it (the Tasks dropdown, the cheapest-tier advice): every tier but a commitment."""
        return self.term_months == 0

    @property
    def discount_setting(self) -> str:
        """The Settings key of a commitment's discount off on-demand."""
        return f"{self.name}_discount"

    @property
    def discount_name(self) -> str:
        """The workbook-scoped name of that discount on Assumptions."""
        return f"{camel(self.name)}Discount"

    @property
    def price_name(self) -> str:
        """The workbook-scoped name of its GPUs price column: GpuOnDemand."""
        return f"Gpu{camel(self.name)}"

    @property
    def cap_setting(self) -> str:
        """The Settings key of its optional monthly cap."""
        return f"tier_cap_{self.name}"

    @property
    def cap_name(self) -> str:
        """The workbook-scoped name of its cap on Assumptions."""
        return f"TierCap{camel(self.name)}"

    @property
    def cap_help(self) -> str:
        return f"optional monthly budget cap for the {self.name} tier"

    @property
    def price_unit(self) -> str:
        """Its price's unit in the plan currency."""
        return "currency/card-month" if self.per_card_month else "currency/card-hour"

    @property
    def listed_unit(self) -> str:
        """Its price's unit as listed on the GPUs sheet, in the row's own currency."""
        return "per card-month, in the row's currency" if self.per_card_month else \
            "per card-hour, in the row's currency"

    @property
    def price_zh(self) -> str:
        """Its price column's name in Chinese."""
        return self.zh + ("单价每卡" if self.per_card_month else "单价每小时")

    @property
    def quantity_column(self) -> str:
        """The task column that is this tier's billed quantity a month: card-months or GPU-hours."""
        return "cards_billed" if self.per_card_month else "gpu_hours_per_month"

    @property
    def quantity_unit(self) -> str:
        return "card-months" if self.per_card_month else "GPU-hours"

    def suits(self, kind: TaskKind) -> bool:
        return self.for_tasks and (self.for_online or not kind.online)


TIERS: tuple[Tier, ...] = (
    Tier("monthly", "monthly_per_card", per_card_month=True, for_online=True, reruns=False,
         focus_category="Committed", zh="包月", meaning="reserved/monthly rent; blank: not offered",
         meaning_zh="包月/预留租金；空白：不提供"),
    Tier("on_demand", "on_demand_per_hour", per_card_month=False, for_online=True, reruns=False,
         focus_category="Standard", zh="按需", meaning="on-demand price; blank: not offered",
         meaning_zh="按需价格；空白：不提供", reference=True),
    Tier("idle", "idle_per_hour", per_card_month=False, for_online=False, reruns=False,
         focus_category="Other", zh="闲置", meaning="off-peak / idle-capacity price; blank: not offered",
         meaning_zh="闲时/闲置资源价格；空白：不提供",
         over_reference_message="catalog_idle_over_on_demand"),
    Tier("spot", "spot_per_hour", per_card_month=False, for_online=False, reruns=True,
         focus_category="Dynamic", zh="竞价", meaning="interruptible price; blank: not offered",
         meaning_zh="可中断（竞价）价格；空白：不提供",
         over_reference_message="catalog_spot_over_on_demand"),
    Tier("reserved_1y", "reserved_1y_per_hour", per_card_month=False, for_online=True, reruns=False,
         focus_category="Committed", zh="一年预留", meaning="one-year commitment, effective rate per committed "
         "card-hour (every hour of the term billed); blank: on-demand x (1 - reserved_1y_discount)",
         meaning_zh="一年承诺：每承诺卡时的有效价格（期内每小时计费）；空白：按需 x (1 - reserved_1y_discount)",
         term_months=12, default_discount=0.20,
         discount_source="commitments.csv, CoreWeave 1-year reserved H100 (-20% vs on-demand): the lowest sourced "
         "1-year GPU discount, rather than the AWS estimate (47%) or the 'up to 66-72%' ceilings"),
    Tier("reserved_3y", "reserved_3y_per_hour", per_card_month=False, for_online=True, reruns=False,
         focus_category="Committed", zh="三年预留", meaning="three-year commitment, effective rate per committed "
         "card-hour (every hour of the term billed); blank: on-demand x (1 - reserved_3y_discount)",
         meaning_zh="三年承诺：每承诺卡时的有效价格（期内每小时计费）；空白：按需 x (1 - reserved_3y_discount)",
         term_months=36, default_discount=0.47,
         discount_source="commitments.csv, AWS 1-year reserved p5.48xlarge (H100) estimate, about 47% off: no "
         "sourced 3-year GPU figure but 'up to 57-72%' ceilings, and a 3-year term is at least as deep as a 1-year "
         "one, so the 1-year figure is a floor"),
)


@dataclass(frozen=True)
class TaskKind:
    """One kind of task: how it runs, which methods and tiers suit it, which Tasks columns it needs or ignores.

    A new kind is one record here plus, if it computes differently, its formulas in `columns.py`.
    """

    name: str
    training: bool  # trains a model (FLOPs per run) rather than generating tokens
    online: bool  # serves live traffic: replicas sized for the peak, billed for the serving hours, no reruns
    methods: tuple[str, ...]
    default_method: str
    default_tier: str
    requires: tuple[str, ...]  # Tasks columns a row of this kind must fill in
    ignores: tuple[str, ...]  # Tasks columns that mean nothing for it: blanked so the echo shows what was used
    zh: str  # the kind's word in Chinese
    requests: str | None = None  # the column of requests that, x tokens_per_request, gives the tokens to generate
    meaning: str = ""  # said after the name in the kind column's help, where the name alone is unclear

    @property
    def described(self) -> str:
        return f"{self.name} ({self.meaning})" if self.meaning else self.name

    @property
    def suited_tiers(self) -> tuple[str, ...]:
        """The tiers the cheapest-tier advice considers for it, in tier order: the tiers that suit it."""
        return tuple(t.name for t in TIERS if t.suits(self))


_TRAINING_IGNORES = ("requests_per_day", "batch_requests", "tokens_per_request", "serving_hours_per_day",
                     "tokens_per_sec", "concurrency", "kv_cache_gb", "prompt_tokens", "context_tokens",
                     "min_replicas", "ttft_ms", "tpot_ms", "api_price_per_m_tokens")
TASK_KINDS: tuple[TaskKind, ...] = (
    TaskKind("finetune", training=True, online=False, methods=TRAINING_METHODS, default_method="full",
             default_tier="on_demand", requires=("train_tokens",), ignores=_TRAINING_IGNORES, zh="微调"),
    TaskKind("pretrain", training=True, online=False, methods=TRAINING_METHODS, default_method="full",
             default_tier="on_demand", requires=("train_tokens",), ignores=_TRAINING_IGNORES, zh="预训练"),
    TaskKind("inference", training=False, online=True, methods=SERVING_METHODS, default_method="fp16",
             default_tier="monthly", requires=("requests_per_day", "tokens_per_request"),
             ignores=("train_tokens", "epochs", "runs_per_month", "batch_requests", "deadline_days", "optimizer",
                      "activation_checkpointing"),
             zh="推理", requests="requests_per_day", meaning="online serving"),
    TaskKind("batch", training=False, online=False, methods=SERVING_METHODS, default_method="fp16",
             default_tier="idle", requires=("batch_requests", "tokens_per_request"),
             ignores=("train_tokens", "epochs", "requests_per_day", "serving_hours_per_day", "min_replicas",
                      "optimizer", "activation_checkpointing", "ttft_ms", "tpot_ms"),
             zh="批量", requests="batch_requests", meaning="offline batch inference"),
)


def excel_is(cell: str, names: Iterable[str]) -> str:
    """An Excel test that `cell` holds one of `names` (FALSE for none): how formulas ask a record's property,
    e.g. the kinds that train or the tiers billed per card-month, with the names taken from the records."""
    tests = [f'{cell}="{name}"' for name in names]
    if not tests:
        return "FALSE"
    return tests[0] if len(tests) == 1 else f"OR({','.join(tests)})"


DEMAND, PRICE, BUFFER = "demand", "price", "buffer"  # what a scenario driver moves


@dataclass(frozen=True)
class Driver:
    """One driver: its key on the Scenarios sheet, what it moves and which tasks it applies to."""

    name: str
    effect: str  # demand: multiplies the task's demand factor; price: its month cost; buffer: the buffer rate
    meaning: str
    meaning_zh: str  # the same in Chinese
    training: bool | None = None  # only training tasks (True), only serving tasks (False), every task (None)
    divides: bool = False  # the value divides the demand (an efficiency: more work a card-hour, fewer cards)
    tier: str | None = None  # only tasks on this price tier
    foreign: bool = False  # only tasks whose GPU prices are listed in another currency than the plan's

    def applies(self, training: bool, tier: str, foreign: bool) -> bool:
        """Whether it moves a task that trains (or not), is priced on `tier`, and whose GPU prices are `foreign`."""
        return ((self.training is None or training == self.training)
                and (self.tier is None or self.tier == tier) and (not self.foreign or foreign))
