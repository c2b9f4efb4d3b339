"""Validated inputs as values: settings, catalog GPUs, tasks and extra costs."""

from __future__ import annotations

from dataclasses import dataclass, field, make_dataclass

from .prices import offer_label, offer_provider
from .schema import SETTINGS

# Every setting is a field; plan_months is derived from period_start and period_months.
Settings = make_dataclass(
    "Settings",
    [(s.key, object, field(default=s.default)) for s in SETTINGS] + [("plan_months", tuple, field(default=()))],
    frozen=True,
)
Settings.__doc__ = "The plan's settings, defaults filled in."


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

    values: dict[str, object]
    row: int
    cells: dict[str, str]  # column name -> A1 cell of this row on the Tasks sheet
    extra: dict[str, object] = field(default_factory=dict)  # unknown columns, echoed
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
    bills_sheet: object = None  # the Bills sheet as a DataFrame (index: sheet row), or None
    usage_sheet: object = None  # the Usage sheet likewise
    assignments: tuple[tuple[str, str], ...] = ()  # (resource_id, task_id) from the Assignments sheet
    source_name: str = ""  # the input file's name
    source_sha256: str = ""  # and its SHA-256, shown on the About sheet
    models: object = None  # the model catalog (built-in plus the Models sheet): a models.ModelCatalog
    fx: object = None  # the rates the prices were converted with (fx.FxTable); None: every price in the plan currency
    scenarios: tuple = ()  # the Scenarios sheet's rows (scenarios.ScenarioRow)
    budgets: tuple = ()  # the Budgets sheet's rows (budgets.Budget)
    ramps: dict = field(default_factory=dict)  # task_id -> {plan month index (1-based): multiplier} (Ramp sheet)

    def model(self, name: str | None):
        """The catalog model a task names (None: the task names none)."""
        return self.models.find(name) if name and self.models is not None else None

    def gpu(self, name: str) -> Gpu:
        return next(g for g in self.gpus if g.name == name)
