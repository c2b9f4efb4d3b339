"""Where everything goes, computed before any cell is written: each sheet's blocks, rows and columns,
and the workbook-scoped names through which one sheet reads another."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from xlsxwriter.utility import xl_col_to_name

from ..catalog.fx import plan_rates
from ..catalog.models import MODEL_COLUMNS
from ..core.records import camel
from ..core.schema import CONSTANTS, GPU_CLASSES, KINDS, SETTINGS, TASK_COLUMNS, TASK_TIERS, TIER_NAMES
from ..core.warnings import kind_of
from ..model.columns import CALCS, CANDIDATE_FROM_TASKS, MODEL_FIELDS
from ..plan.checks import recon_sheet
from ..plan.engine import Candidate, Plan
from ..plan.order import Order
from ..recon import ACTIONS
from ..recon.rules import FLAG_RULES, OVER_PLAN_STATUS, PARTIAL_STATUS

# ------------------------------------------------------------------ defined names
GPU_NAMES = {"gpu": "GpuName", "class": "GpuClass", "vram_gb": "GpuVramGb", "bandwidth_gbs": "GpuBandwidthGbs",
             "tflops": "GpuTflops", "tflops_fp8": "GpuTflopsFp8", "tflops_fp4": "GpuTflopsFp4",
             "form_factor": "GpuFormFactor", "bandwidth_efficiency": "GpuBandwidthEfficiency",
             "matmul_efficiency": "GpuMatmulEfficiency", "training_efficiency": "GpuTrainingEfficiency",
             "interconnect": "GpuInterconnect", "scaling": "GpuScaling",
             "power_w": "GpuPowerW", "provider": "GpuProvider", "region": "GpuRegion", "currency": "GpuCurrency",
             "price_change_per_year": "GpuPriceChange",
             **{f"{t.name}_offer": f"Gpu{camel(t.name)}Offer" for t in TASK_TIERS}}
# (the prices' names are on the plan-currency columns: workbook/gpus.py)
# The FX table on Assumptions: each currency and its rate in plan currency per unit.
FX_CURRENCY, FX_RATE = "FxCurrency", "FxRate"
FX_HEADER = "FX currency"  # the first header of the table, which `diff` reads a built budget's rates below
# The Models sheet's columns: ModelName, ModelTotalParamsB, ModelLayers, ...
MODEL_NAMES = {c.name: "ModelName" if c.name == "model" else f"Model{camel(c.name)}" for c in MODEL_COLUMNS}
# Tasks columns with a short name of their own; every other Tasks column is named Task + its key in CamelCase.
_TASK_NAMES = {"task_id": "TaskId", "kind": "TaskKind", "tier": "TaskTier", "gpu": "TaskGpu",
               "cost_center": "TaskCostCenter", "start_index": "TaskStart", "end_index": "TaskEnd",
               "cards_held": "TaskCardsHeld", "cards_billed": "TaskCardsBilled",
               "gpu_hours_per_month": "TaskGpuHours", "monthly_cost": "TaskMonthlyCost",
               "period_cost": "TaskPeriodCost", "active_months": "TaskActiveMonths"}
# Summary cells and blocks other sheets read.
GPU_TOTAL, EXTRAS_TOTAL, BUFFER_TOTAL, PERIOD_TOTAL = "GpuTotal", "ExtrasTotal", "BufferTotal", "PeriodTotal"
COMMITMENTS_TOTAL = "CommitmentsInPlan"  # the Summary's commitments column over the plan
TIER_PERIOD_COSTS, KIND_COSTS, COST_CENTER_COSTS = "TierPeriodCosts", "KindCosts", "CostCenterCosts"
# Monthly, Extras and Tiers blocks.
GPU_COST_MATRIX, EXTRAS_COST_MATRIX, MONTHLY_TIER, TIERS_COST = "GpuCostMatrix", "ExtrasCostMatrix", "MonthlyTier", \
    "TiersCost"
# Order and Checks cells other sheets read.
ORDER_TOTAL, ORDER_PLAN_TOTAL, ALL_CHECKS = "OrderTotal", "OrderPlanTotal", "AllChecks"


# Every enumeration value (kinds, tiers, GPU classes) and how the workbook shows it: formulas compare the keys.
WORD_KEYS, WORD_SHOWN = "WordKey", "WordShown"
SHOWN_WORDS = KINDS + TIER_NAMES + GPU_CLASSES + ("OVER", "ok", "buy", "rent") + tuple(ACTIONS) + \
    (OVER_PLAN_STATUS, PARTIAL_STATUS)   # the Recon tabs' flags and statuses


def shown(key: str) -> str:
    """A formula showing the enumeration value `key` (a cell or an expression) in the workbook's language."""
    return f"IFERROR(INDEX({WORD_SHOWN},MATCH({key},{WORD_KEYS},0)),{key})"


# Sentences the Summary's formulas show. Their text between the placeholders lives in named cells on About
# (TextAdvice0, TextAdvice1, ...), so that a formula is the same in every language.
SENTENCES = {
    "BannerOk": "All checks pass",
    "BannerFail": "CHECKS FAIL — see Checks",
    "Advice": "{count} task(s) would cost less on their cheapest suited tier, saving {saving} a month "
              "(Tasks: tier advice)",
    "OverCap": "{tier} is over its cap in {months} plan month(s) (Tiers)",
}
_SLOT = re.compile(r"\{([a-z_]+)\}")


def sentence_texts(template: str) -> list[str]:
    """The texts around a sentence's placeholders: one more than the placeholders, empty ones included."""
    return _SLOT.split(template)[::2]


def sentence(key: str, **cells: str) -> str:
    """A formula joining sentence `key`'s named texts and `cells` (placeholder -> expression)."""
    slots = _SLOT.findall(SENTENCES[key])
    parts = [f"Text{key}0"]
    for i, slot in enumerate(slots, start=1):
        parts += [cells[slot], f"Text{key}{i}"]
    return "&".join(parts)


def task_name(key: str) -> str:
    """The name of a Tasks column (its data rows): TaskModelLayers for the model figure `model.layers`."""
    return _TASK_NAMES.get(key) or f"Task{camel(key.replace('.', '_'))}"


def month_name(prefix: str, month: str) -> str:
    """A per-month name: GpuCost_2026_07 is the Monthly column of July 2026."""
    return f"{prefix}_{month.replace('-', '_')}"


def gpu_cost(month: str) -> str:
    return month_name("GpuCost", month)


def extras_cost(month: str) -> str:
    return month_name("ExtrasCost", month)


def month_buffer(month: str) -> str:
    return month_name("Buffer", month)


def recon_billed_total(month: str) -> str:
    return month_name("ReconBilledTotal", month)


def recon_billed_input(month: str) -> str:
    return month_name("ReconBilledInput", month)


def recon_partial(month: str) -> str:
    return month_name("ReconPartial", month)


def recon_saving(month: str) -> str:
    """The month's achievable saving on its Recon tab: ReconSaving_2026_07."""
    return month_name("ReconSaving", month)


EXTRAS_CATEGORY = "ExtrasCategory"   # the Extras' category column


def recon_task_column(month: str, column: str) -> str:
    """A column of a Recon tab's task block, for the month's Resources sheet: ReconTaskStatus_2026_07."""
    return month_name(f"ReconTask{column}", month)


def recon_rest(month: str, column: str) -> str:
    """A column of the month's Resources sheet, for its Recon tab's totals: ReconRestBilled_2026_07."""
    return month_name(f"ReconRest{column}", month)


# ------------------------------------------------------------------ sheet layouts
@dataclass(frozen=True)
class Table:
    """A table of one row per task (or per task and GPU): column of each key, first and last data rows."""

    columns: Mapping[str, int]
    first: int
    last: int


@dataclass(frozen=True)
class AssumptionsLayout:
    settings: Mapping[str, int]   # setting key -> row (tier caps have their own block)
    days_row: int
    kv_bytes_row: int
    constants_header: int
    constants: Mapping[str, int]  # constant name -> row
    tiers_header: int
    tiers_first: int
    months_header: int
    months_first: int
    actions_header: int
    actions_first: int
    fx_rates: int  # rows of the FX table: the plan currency and every currency a price is listed in

    @property
    def fx_header(self) -> int:
        return self.actions_first + len(ACTIONS) + 1

    @property
    def fx_first(self) -> int:
        return self.fx_header + 1

    @property
    def last_row(self) -> int:
        return self.fx_first + self.fx_rates - 1

    @property
    def blocks(self) -> tuple[tuple[int, int], ...]:
        return ((0, self.days_row), (self.constants_header, self.tiers_header - 2),
                (self.tiers_header, self.months_header - 2), (self.months_header, self.actions_header - 2),
                (self.actions_header, self.fx_header - 2), (self.fx_header, self.last_row))


@dataclass(frozen=True)
class MonthMatrix:
    """Monthly or Extras: lead columns, then one column per plan month (row 0 headers, row 1 month numbers)."""

    lead: tuple[str, ...]
    months: tuple[str, ...]
    first: int   # first data row
    last: int    # last data row (the first one when there is no data)

    @property
    def first_month_col(self) -> int:
        return len(self.lead)

    @property
    def last_col(self) -> int:
        return len(self.lead) + len(self.months) - 1


# The Demand sheet's blocks of one column per plan month: key -> header (and a name per month: DemandCards_2026_07).
DEMAND_BLOCKS = {"ramp": "ramp (input)", "factor": "demand factor", "cards": "cards held",
                 "cards_billed": "cards billed", "gpu_hours": "GPU-hours"}
DEMAND_LEAD = ("task_row", "task_id", "gpu", "tier", "start #", "end #", "growth a month", "online?",
               "per card-month?", "requests a day", "serving hours a day", "requests/s per replica", "min replicas",
               "cards per replica/run", "cards held", "GPU-hours a month", "training?", "prices in another currency?",
               "scenario demand x", "scenario price x", "card-months held", "card-months billed",
               "GPU-hours over the plan")


def demand_name(block: str, month: str) -> str:
    """The Demand column of one block and month: DemandCardsBilled_2026_07."""
    return month_name("Demand" + camel(block), month)


@dataclass(frozen=True)
class DemandMatrix:
    """Demand: lead columns, then each block of DEMAND_BLOCKS with one column per plan month (row 0 headers, row 1
    month numbers)."""

    months: tuple[str, ...]
    first: int   # first data row
    last: int    # last data row (the first one when there is no data)
    lead = DEMAND_LEAD

    def col(self, block: str, j: int) -> int:
        return len(self.lead) + list(DEMAND_BLOCKS).index(block) * len(self.months) + j

    @property
    def last_col(self) -> int:
        return len(self.lead) + len(DEMAND_BLOCKS) * len(self.months) - 1


@dataclass(frozen=True)
class SummaryLayout:
    """Summary, compact enough to print on one or two landscape pages whatever the plan's length: the months down
    the rows of one table (the month's lines, then its GPU cost by tier), by kind and by cost center beside the
    tier chart, the warnings wrapped across the table's width, and the re-forecast beside the plan-vs-billed chart.
    Each block's first row comes from `_summary`, which stacks the blocks down the sheet in order."""

    months: tuple[str, ...]
    kind_header: int
    kinds: tuple[str, ...]
    center_header: int
    centers: tuple[str, ...]
    warnings_row: int
    warnings: tuple[str, ...]   # the warnings that do not follow the numbers (the others are formulas)
    reforecast_header: int | None = None   # the re-forecast block, when a plan month has a Recon tab
    billed_months: tuple[str, ...] = ()
    side_rows: int = 12         # rows of the by-kind and by-cost-center block, the tier chart beside them

    banner_row = 1
    period_row = 2
    selector_row = 3                     # the scenario selector and the months over budget
    note_row = 4
    month_header = 5
    first_month_row = 6
    columns = ("month", "GPU", "commitments", "extras", "hidden-cost buffer", "total")
    first_tier_col = len(columns)        # GPU cost by tier, one column a tier, right of the month's lines
    chart_col = 3                        # the charts' left edge, right of the two-column blocks
    chart_rows = 12                      # the least height of a chart, in rows

    @property
    def width(self) -> int:
        """Columns of the sheet: the month table's."""
        return self.first_tier_col + len(TASK_TIERS)

    @property
    def total_row(self) -> int:
        """The month table's total row; the month rows are just above."""
        return self.first_month_row + len(self.months)

    @property
    def cap_row(self) -> int:
        """Each tier's cap a month, under its column."""
        return self.total_row + 1

    @property
    def over_cap_row(self) -> int:
        """The months each tier is over its cap."""
        return self.total_row + 2

    @property
    def live_warnings(self) -> int:
        """The warning lines written as formulas: the tier advice, then the tiers over their caps."""
        return 2

    @property
    def warnings_end(self) -> int:
        """The first row below the warnings."""
        return self.warnings_row + 1 + self.live_warnings + len(self.warnings)

    @property
    def reforecast_rows(self) -> int:
        """Header, one row a month, estimate, budget and variance, the achievable saving of the latest bill
        (recon.write_saving_line), at least as tall as the chart beside it."""
        return max(len(self.months) + 5, self.chart_rows)

    @property
    def last_row(self) -> int:
        if self.reforecast_header is not None:
            return self.reforecast_header + self.reforecast_rows - 1
        return self.warnings_end - 1

    @property
    def blocks(self) -> tuple[tuple[int, int], ...]:
        """Row spans printed on one page each where they fit."""
        return ((0, self.over_cap_row), (self.kind_header, self.kind_header + self.side_rows - 1),
                (self.warnings_row, self.warnings_end - 1),
                *(((self.reforecast_header, self.last_row),) if self.reforecast_header is not None else ()))


class RowStack:
    """Blocks stacked down a sheet with a blank row between: `take(rows)` is the next block's first row."""

    def __init__(self, first: int):
        self.next = first

    def take(self, rows: int) -> int:
        first = self.next
        self.next = first + rows + 1
        return first


@dataclass(frozen=True)
class OrderLayout:
    """Order: the heading lines; a block per provider (its title, its reservations under their header, its rent lines
    under theirs, its subtotal), each printed on a page of its own; the totals down to the plan total; the sign-off;
    then, below the printed area, the working rows the rent lines read (each line's cards, quantity and rent by month
    before the commitments, and each committed GPU type's share of rent still rented)."""

    blocks: tuple[tuple[str, int, int], ...]   # (provider, its reservations, its rent lines) in order
    months: tuple[str, ...]
    shared_gpus: tuple[str, ...] = ()          # the GPU types whose rent commitments share, in order

    heading_first = 2     # made by, build date, input file, note
    first = 7             # the first provider's title

    @property
    def columns(self) -> tuple[str, ...]:
        """The printed columns: the GPU, the tier or term, one a plan month, then the line's figures."""
        return ("gpu", "tier", *self.months, "quantity", "unit", "unit price", "total", "tasks served")

    def col(self, key: str) -> int:
        return self.columns.index(key)

    @property
    def month_col(self) -> int:
        return 2

    def _block_rows(self) -> list[dict[str, int]]:
        out, r = [], self.first
        for _, n_res, n_lines in self.blocks:
            rows = {"title": r}
            r += 1
            if n_res:
                rows["reserve_header"], rows["reserve_first"] = r, r + 1
                r += 1 + n_res
            if n_lines:
                rows["rent_header"], rows["rent_first"] = r, r + 1
                r += 1 + n_lines
            rows["subtotal"] = r
            out.append(rows)
            r += 2
        return out

    @functools.cached_property
    def block_rows(self) -> tuple[dict[str, int], ...]:
        return tuple(self._block_rows())

    def _row(self, first: str, count: int, i: int) -> int:
        """The row of item `i` of a kind (over every block, in order): `first` names the kind's first row in a block,
        `count` its place in `blocks`' (provider, reservations, rent lines)."""
        for rows, block in zip(self.block_rows, self.blocks, strict=True):
            n = int(block[count])
            if i < n:
                return rows[first] + i
            i -= n
        raise IndexError(i)

    def line_row(self, i: int) -> int:
        """The row of rent line `i` (over every block, in order)."""
        return self._row("rent_first", 2, i)

    def reservation_row(self, i: int) -> int:
        """The row of reservation `i` (over every block, in order)."""
        return self._row("reserve_first", 1, i)

    @property
    def total_row(self) -> int:
        """The GPU total over the providers; extras, the buffer and the plan total below it."""
        rows = self.block_rows
        return rows[-1]["subtotal"] + 2 if rows else self.first

    @property
    def plan_total_row(self) -> int:
        return self.total_row + 3

    @property
    def breaks(self) -> tuple[int, ...]:
        """Rows a printed page must start at: none. The blocks flow onto as few pages as hold them whole (a provider's
        block is never split: printing.page_breaks), so the print pack of Summary and Order stays short."""
        return ()

    @property
    def signoff_header(self) -> int:
        return self.plan_total_row + 3

    @property
    def last_printed(self) -> int:
        return self.signoff_header + 2

    @property
    def lines(self) -> int:
        return sum(n for _, _, n in self.blocks)

    def working_header(self, k: int) -> int:
        """The header of working block k: 0 cards billed, 1 quantity, 2 rent (each a row per line), 3 share of rent
        still rented (a row per shared GPU type)."""
        return self.last_printed + 4 + k * (max(1, self.lines) + 2)

    def working_row(self, k: int, i: int) -> int:
        return self.working_header(k) + 1 + i

    @property
    def last_row(self) -> int:
        return self.working_header(3) + max(1, len(self.shared_gpus))


@dataclass(frozen=True)
class CommitmentsLayout:
    """Commitments: the month totals of all commitments, then one block per (GPU type, commitment tier), the longer
    term of a GPU first: its figures on one row (the committed cards an input), then one row per plan month."""

    blocks: tuple[tuple[str, str], ...]
    months: tuple[str, ...]

    note_row = 1
    totals_header = 3
    totals_first = 4
    summary_columns = ("gpu", "term", "term (months)", "commitment rate", "on-demand", "replaced price",
                       "break-even utilisation",
                       "proposed cards", "committed cards", "monthly cost", "term total", "months after plan",
                       "after-plan cost")
    month_columns = ("month", "month #", "GPU-hours demand", "GPU rent", "demand left to this commitment",
                     "cards this month suggests", "committed cost", "covered hours", "unused hours", "unused cost",
                     "rent displaced", "adjustment")
    totals_columns = ("all commitments", "committed cost", "unused cost", "rent displaced", "adjustment")

    @property
    def totals_row(self) -> int:
        return self.totals_first + len(self.months)

    def block_header(self, i: int) -> int:
        return self.totals_row + 2 + i * (len(self.months) + 5)

    def block_figures(self, i: int) -> int:
        return self.block_header(i) + 1

    def block_month_header(self, i: int) -> int:
        return self.block_header(i) + 2

    def block_first(self, i: int) -> int:
        return self.block_header(i) + 3

    def block_total(self, i: int) -> int:
        return self.block_first(i) + len(self.months)

    def summary_col(self, key: str) -> int:
        return self.summary_columns.index(key)

    def month_col(self, key: str) -> int:
        return self.month_columns.index(key)

    @property
    def last_row(self) -> int:
        return self.block_total(len(self.blocks) - 1) if self.blocks else self.totals_row

    @property
    def blocks_spans(self) -> tuple[tuple[int, int], ...]:
        return ((0, self.totals_row), *((self.block_header(i), self.block_total(i)) for i in range(len(self.blocks))))


def commit_name(i: int, key: str) -> str:
    """The name of commitment block i's figure: Commit1Cards, Commit1TermTotal, ..."""
    return f"Commit{i + 1}{camel(key)}"


def commit_adjustment(month: str) -> str:
    """The commitments' adjustment of one plan month on the Commitments sheet: CommitAdjust_2026_07."""
    return month_name("CommitAdjust", month)


COMMIT_TOTAL = "CommitmentsTotal"   # the commitments' adjustment over the plan


class Columns:
    """A table's columns declared once, in order, by name (with the header each shows): a column's position, its
    letter and its cell references follow from the order, so moving or adding a column is one change here."""

    def __init__(self, *columns: tuple[str, str]):
        self.names = tuple(name for name, _ in columns)
        self.headers = [header for _, header in columns]
        self._index = {name: i for i, name in enumerate(self.names)}

    def __len__(self) -> int:
        return len(self.names)

    def header_row(self, **words: str) -> list[str]:
        """The headers in column order, a column's replaced where `words` names it (a block's title in the first)."""
        return [words.get(name, header) for name, header in zip(self.names, self.headers, strict=True)]

    def __getitem__(self, name: str) -> int:
        """The 0-based column of `name`."""
        return self._index[name]

    def letter(self, name: str) -> str:
        return xl_col_to_name(self._index[name])

    def cell(self, name: str, row: int | str) -> str:
        """`name`'s cell in the 1-based `row` (or a row placeholder such as "{r}"): `E12`."""
        return f"{self.letter(name)}{row}"

    def fixed(self, name: str, row: int) -> str:
        """`name`'s cell in the 1-based `row`, absolute: `$F$7`."""
        return f"${self.letter(name)}${row}"

    def range(self, name: str, first: int, last: int) -> str:
        """`name`'s cells from 1-based row `first` to `last`: `F7:F19`."""
        return f"{self.cell(name, first)}:{self.cell(name, last)}"

    def span(self, name: str, first: int, last: int) -> str:
        """`name`'s cells from 1-based row `first` to `last`, absolute: `$F$7:$F$19`."""
        return f"{self.fixed(name, first)}:{self.fixed(name, last)}"


@dataclass(frozen=True)
class ReconLayout:
    """One `Recon YYYY-MM` tab: first the one-page summary its print area holds (the title, like for like, the bill's
    other currencies, usage and variance, the actions next month, the bill's coverage, a note), then the detail that
    prints only when asked: the task block, the resource block, the non-GPU lines and totals, the commitment lines
    and the daily bill."""

    month: str
    task_header: int
    task_first: int
    task_last: int
    resource_header: int
    resource_first: int
    resource_last: int
    non_gpu_header: int
    non_gpu_first: int
    non_gpu_last: int   # the row after the last non-GPU line; the totals start here
    commitment_rows: int = 1   # rows of the commitment block (at least 1: its SUM has a range)
    rest_rows: int = 0   # resources beyond recon_top_resources: one line on the tab, listed on the Resources sheet
    rest_in_csv: bool = False   # more than RESOURCES_SHEET_MAX: listed in a CSV file beside the workbook instead
    daily_rows: int = 0   # the daily table: one row per task and charge day of its GPU lines
    currency_rows: int = 0   # the bill's currencies other than the plan's, converted: one row each

    TASKS = Columns(("task_id", "task id"), ("planned", "planned"), ("billed", "billed"), ("variance", "variance"),
                    ("variance_pct", "variance %"), ("status", "status"), ("non_gpu", "non-GPU billed"),
                    ("buffer_share", "buffer share"), ("buffer_left", "buffer left"), ("cards", "cards held"),
                    ("planned_hours", "planned GPU hours"), ("hours", "GPU hours billed"),
                    ("rate_variance", "rate variance"), ("usage_variance", "usage variance"),
                    ("effective", "EffectiveCost"), ("compared", "compared with plan"),
                    ("planned_pricing", "planned PricingCategory"), ("resources", "GPU resources"))
    """The task block's columns: per task billed in the month, its plan, bill, variances and buffer."""
    RESOURCES = Columns(("resource", "resource"), ("task", "task id"), ("services", "services"), ("lines", "lines"),
                        ("billed", "billed"), ("hours", "hours"), ("util", "avg util %"),
                        ("mem_share", "peak memory share"), ("oom", "OOM events"), ("flags", "flags"),
                        ("action", "action next month"), ("cards", "cards"), ("idle", "idle cards"),
                        ("saving", "saving if acted on"), ("pricing", "PricingCategory"),
                        ("to_attribute", "to attribute or stop"))
    """The resource block's columns (and the month's Resources sheet's, with the task's position after them)."""
    DAILY = Columns(("task_id", "daily GPU bill, task id"), ("day", "day"), ("billed", "billed"),
                    ("median", "median of previous days"), ("spike", "spike"))
    """The daily GPU bill's columns: per task and charge day."""
    LIKE = Columns(("label", "like for like"), ("planned", "planned"), ("billed", "billed"), ("variance", "variance"))
    """Like for like: planned against billed, per part of the month."""
    CURRENCIES = Columns(("label", "billed in another currency"), ("billed", "billed in its currency"),
                         ("rate", "rate"), ("converted", "billed"))
    """The bill's other currencies: its BilledCost, the rate (plan currency per 1) and the amount converted."""
    NON_GPU = Columns(("category", "non-GPU lines"), ("billed", "billed"), ("planned", "planned (Extras)"),
                      ("not_planned", "not planned"))
    """The non-GPU lines by category against the Extras."""
    VALUES = Columns(("label", ""), ("value", "value"))
    """The usage block's, the coverage's and the totals' columns: a label and its value."""
    COMMITMENTS = Columns(("kind", "commitment lines"), ("billed", "billed"), ("effective", "EffectiveCost"),
                          ("commitment_id", "commitment id"), ("commitment_type", "commitment type"))
    """The commitment lines apart from the tasks."""
    TOTALS = ("non_gpu", "reserved", "buffer_left", "allocated", "unallocated", "billed", "planned",
              "commitments", "input", "not_planned", "credit", "refund", "idle_saving", "saving")
    """The totals block's rows in order: non-GPU billed, buffer reserved and left, GPU billed to tasks, unallocated,
    the billed total, the planned GPU (tasks), the commitments planned, the BilledCost of the input, non-GPU not
    planned, credits, refunds, saving from idle cards, achievable saving."""
    totals_rows = len(TOTALS)
    coverage_rows = 6   # first and last charge day, days with lines, partial month, duplicates (lines, amount)
    like_header = 3   # the like-for-like table (GPU, non-GPU, credits, total; planned against billed): under the title
    USAGE = ("task_variance", "rate_variance", "usage_variance", "not_split", "tasks_over", "flagged", "saving")
    """The usage block's rows: the tasks' GPU variance, its rate and usage parts and what the bill's hours cannot
    split, the tasks over plan, the resources flagged and the saving if the actions are taken."""

    @staticmethod
    def summary_rows(currency_rows: int) -> int:
        """The rows of the printed summary (the title to the note, and the blank row after it), which the detail
        follows: it depends only on the count of the bill's other currencies."""
        return ReconLayout._note_row(currency_rows) + 2

    @staticmethod
    def _currency_header(currency_rows: int) -> int:
        return ReconLayout.like_header + 6

    @staticmethod
    def _usage_header(currency_rows: int) -> int:
        return ReconLayout._currency_header(currency_rows) + (currency_rows + 2 if currency_rows else 0)

    @staticmethod
    def _actions_header(currency_rows: int) -> int:
        return ReconLayout._usage_header(currency_rows) + len(ReconLayout.USAGE) + 2

    @staticmethod
    def _coverage_header(currency_rows: int) -> int:
        # the actions block holds two rows per flag: its counts, then its action
        return ReconLayout._actions_header(currency_rows) + 2 * len(FLAG_RULES) + 2

    @staticmethod
    def _note_row(currency_rows: int) -> int:
        return ReconLayout._coverage_header(currency_rows) + ReconLayout.coverage_rows + 2

    @property
    def currency_header(self) -> int:
        """The bill's currencies other than the plan's (when currency_rows): its total in its currency, the rate,
        its date and the total in the plan currency."""
        return self._currency_header(self.currency_rows)

    @property
    def usage_header(self) -> int:
        return self._usage_header(self.currency_rows)

    def usage(self, key: str) -> int:
        """The 0-based row of a usage-block row (USAGE)."""
        return self.usage_header + 1 + self.USAGE.index(key)

    @property
    def actions_header(self) -> int:
        """The actions next month: per flag, its resources, their bill and the saving, then its action sentence."""
        return self._actions_header(self.currency_rows)

    @property
    def coverage_header(self) -> int:
        return self._coverage_header(self.currency_rows)

    @property
    def note_row(self) -> int:
        """The summary's last row: what the print area leaves out and where to read it."""
        return self._note_row(self.currency_rows)

    @property
    def summary_last(self) -> int:
        return self.note_row

    @property
    def sheet(self) -> str:
        return recon_sheet(self.month)

    @property
    def rest_row(self) -> int:
        """The line that sums the resources not listed on the tab (when rest_rows): below the resource rows; when
        they are in a CSV file, the last two rows of the resource rows (the tasks' resources, then the untagged),
        which the totals' ranges then hold."""
        return self.resource_last - 1 if self.rest_in_csv else self.resource_last + 1

    @property
    def listed_last(self) -> int:
        """The last row of a resource listed one per row on the tab (the CSV's two sum rows left out)."""
        return self.resource_last - 2 if self.rest_in_csv else self.resource_last

    def csv_name(self, stem: str) -> str:
        """The CSV file beside the workbook `stem`.xlsx that lists the resources the tab does not (rest_in_csv)."""
        return f"{stem} {self.detail_sheet}.csv"

    @property
    def detail_sheet(self) -> str:
        """The month's Resources sheet: the resources the tab does not list, one row each (when rest_rows)."""
        return f"Resources {self.month}"

    detail_first = 2   # the detail sheet: title, header, then one row per resource

    @property
    def detail_last(self) -> int:
        return self.detail_first + self.rest_rows - 1

    def total(self, key: str) -> int:
        """The 1-based row of a totals-block row (TOTALS) on the tab: `B{at.total("billed")}` is the billed total."""
        return self.non_gpu_last + 1 + self.TOTALS.index(key)

    @property
    def partial_row(self) -> int:
        return self.coverage_header + 4

    @property
    def commitment_header(self) -> int:
        """The commitment lines (unused commitment, purchases), their total and the month's EffectiveCost: after
        the totals block."""
        return self.non_gpu_last + self.totals_rows + 1

    @property
    def commitment_first(self) -> int:
        return self.commitment_header + 1

    @property
    def commitment_total(self) -> int:
        """The row of the commitment lines' total; the month's EffectiveCost is the next."""
        return self.commitment_first + self.commitment_rows

    @property
    def daily_header(self) -> int:
        """The daily table (task, day, billed, trailing median, spike): below the month's EffectiveCost."""
        return self.commitment_total + 3

    @property
    def daily_first(self) -> int:
        return self.daily_header + 1

    @property
    def last_row(self) -> int:
        return self.daily_first + max(1, self.daily_rows) - 1


@dataclass(frozen=True)
class Layout:
    assumptions: AssumptionsLayout
    tasks: Table
    candidates: Table
    candidate_rows: int
    monthly: MonthMatrix
    extras: MonthMatrix
    tier_rows: int
    summary: SummaryLayout
    order: OrderLayout
    recon: Mapping[str, ReconLayout]
    commitments: CommitmentsLayout
    demand: DemandMatrix


MONTHLY_LEAD = ("task_row", "task_id", "task", "kind", "tier", "gpu", "cost_center", "monthly_cost", "period_cost")
EXTRAS_LEAD = ("item", "category", "monthly_cost", "start_month", "end_month", "start #", "end #")
CANDIDATE_LEAD = ("task_id", "gpu", "tier", "chosen", "excluded", "cards", "task_row", "gpu_row")
# Last on Candidates, beside the cost columns: whose offer the GPU's prices are, and where (read from GPUs by name).
CANDIDATE_OFFER = ("offer",)
# The live choice: Candidates' saving against the chosen GPU and the running best of each task; Tasks' best of them.
CANDIDATE_CHOICE = ("gpu_saving", "best_saving", "best_gpu")
TASK_CHOICE = ("gpu_named", "cheaper_gpu", "cheaper_gpu_saving", "candidate_last")
# Last on Tasks: each catalog-model figure a formula uses, looked up once per task on Models (blank: no model, or the
# catalog lacks it); the formulas read these cells (Candidates through the task's row) instead of repeating the lookup.
MODEL_FIGURES = tuple(f"model.{f}" for f in MODEL_FIELDS if any(f"{{model.{f}}}" in c.excel for c in CALCS))


def listed_candidates(plan: Plan) -> list[tuple[Candidate, ...]]:
    """Each task's rows on Candidates, in catalog order: every card, or (engine.list_options) the chosen card and the
    cheapest that could be chosen. The live choice weighs these rows; a rebuild weighs every card (the JSON lists
    them), and the cheapest of them is listed, so the two agree until an edit makes an unlisted card the cheapest."""
    return [tuple(c for c in tp.candidates if c.listed) for tp in plan.tasks]


def _assumptions(months: int, fx_rates: int) -> AssumptionsLayout:
    caps = {t.cap_setting for t in TASK_TIERS}  # in the tier table
    keys = [s.key for s in SETTINGS if s.key not in caps]
    settings = {k: 1 + i for i, k in enumerate(keys)}
    days_row = 1 + len(keys)
    constants_header = days_row + 3
    names = [name for name, _, _ in CONSTANTS] + ["CheckTolerance"]
    constants = {name: constants_header + 1 + i for i, name in enumerate(names)}
    tiers_header = constants_header + len(names) + 2
    months_header = tiers_header + len(TASK_TIERS) + 2
    actions_header = months_header + months + 2
    return AssumptionsLayout(MappingProxyType(settings), days_row, days_row + 1, constants_header, MappingProxyType(constants),
                             tiers_header, tiers_header + 1, months_header, months_header + 1, actions_header,
                             actions_header + 1, fx_rates)


# Warnings the Summary writes as formulas over the numbers, so that they follow an edit.
LIVE_WARNINGS = frozenset({"tier_saving", "tier_over_cap"})


def _summary(plan: Plan, billed: tuple[str, ...]) -> SummaryLayout:
    """The Summary's blocks, top to bottom; a new block is one more `rows.take(its height)` in its place."""
    months = plan.months
    centers = tuple(dict.fromkeys(tp.task.values["cost_center"] for tp in plan.tasks))
    warnings = tuple(w for w in plan.warnings if kind_of(w) not in LIVE_WARNINGS)
    rows = RowStack(SummaryLayout.month_header)
    rows.take(1 + len(months) + 3)                          # header, months, total, caps, months over cap
    side_rows = max(len(KINDS) + len(centers) + 3, SummaryLayout.chart_rows)
    kind_header = rows.take(side_rows)
    warnings_row = rows.take(1 + 2 + len(warnings))
    reforecast = rows.take(max(len(months) + 5, SummaryLayout.chart_rows)) if billed else None
    return SummaryLayout(months, kind_header, KINDS, kind_header + len(KINDS) + 2, centers, warnings_row, warnings,
                         reforecast, billed, side_rows)


RESOURCES_SHEET_MAX = 20_000
"""The most resources a month's Resources sheet lists, live formulas on each row; beyond, they go to a CSV file
beside the workbook and the Recon tab sums them in two lines of values (a sheet of 100,000 formula rows took
LibreOffice minutes to recalculate)."""


def _recon(month: str, mr, top: int) -> ReconLayout:
    currencies = len(mr.currencies)
    task_header = ReconLayout.summary_rows(currencies)
    task_last = task_header + max(1, len(mr.tasks))
    resource_header = task_last + 3
    shown, rest = mr.resources.split(top)
    in_csv = len(rest) > RESOURCES_SHEET_MAX
    resource_last = resource_header + max(1, len(shown)) + (2 if in_csv else 0)
    non_gpu_header = resource_last + (1 if rest and not in_csv else 0) + 3
    return ReconLayout(month, task_header, task_header + 1, task_last, resource_header, resource_header + 1,
                       resource_last, non_gpu_header, non_gpu_header + 1, non_gpu_header + 1 + max(1, len(mr.non_gpu)),
                       max(1, len(mr.commitments)), len(rest), in_csv, len(mr.daily), currencies)


def order_layout(order: Order, months: tuple[str, ...], shared_gpus: tuple[str, ...]) -> OrderLayout:
    """The Order sheet's layout for `order`; `shared_gpus` the GPU types with a commitment block (cards or not)."""
    return OrderLayout(tuple((b.provider, len(b.reservations), len(b.lines)) for b in order.blocks), months,
                       shared_gpus)


def plan_layout(plan: Plan, recon: Mapping | None = None) -> Layout:
    """Every sheet's blocks and cells for `plan` (and its reconciliation months), before anything is written."""
    n = len(plan.tasks)
    keys = [c.name for c in TASK_COLUMNS] + [c.key for c in CALCS] + list(TASK_CHOICE) + ["gpu_row"] + list(MODEL_FIGURES)
    tasks = Table(MappingProxyType({k: i for i, k in enumerate(keys)}), 1, max(1, n))
    candidate_keys = [*CANDIDATE_LEAD, *(c.key for c in CALCS if c.key not in CANDIDATE_FROM_TASKS), *CANDIDATE_OFFER,
                      *CANDIDATE_CHOICE]
    candidate_rows = sum(map(len, listed_candidates(plan)))
    candidates = Table(MappingProxyType({k: i for i, k in enumerate(candidate_keys)}), 1, max(1, candidate_rows))
    monthly = MonthMatrix(MONTHLY_LEAD, plan.months, 2, 1 + max(1, n))
    extras = MonthMatrix(EXTRAS_LEAD, plan.months, 2, 1 + max(1, len(plan.inputs.extras)))
    return Layout(_assumptions(len(plan.months), len(plan_rates(plan.inputs))), tasks, candidates, candidate_rows, monthly, extras,
                  len(TASK_TIERS) * len(plan.months), _summary(plan, tuple(m for m in plan.months if m in (recon or {}))),
                  order_layout(plan.order, plan.months, tuple(dict.fromkeys(c.gpu for c in plan.commitments))),
                  MappingProxyType({m: _recon(m, mr, plan.inputs.settings.recon_top_resources)
                                    for m, mr in sorted((recon or {}).items())}),
                  CommitmentsLayout(tuple((c.gpu, c.tier) for c in plan.commitments), plan.months),
                  DemandMatrix(plan.months, 2, 1 + max(1, n)))

