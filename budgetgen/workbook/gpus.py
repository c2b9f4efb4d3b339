"""GPUs: the catalog as inputs, each column a workbook-scoped name (GpuName, GpuOnDemand, ...)."""

from __future__ import annotations

from xlsxwriter.utility import xl_col_to_name

from ..catalog.gpus import gpu_record
from ..core.i18n import name as input_name
from ..core.schema import GPU_COLUMNS, REFERENCE_TIER, TIER, TIERS
from ..model import rules
from ..plan.commitments import commitment_rate
from .book import Book
from .layout import FX_CURRENCY, FX_RATE, GPU_NAMES
from .printing import print_setup

SHEET = "GPUs"
# Column widths by column (9 for the rest): a price column is 12 wide for the reference and card-month prices.
_WIDTHS = {"gpu": 14, "class": 12, "bandwidth_gbs": 12, "form_factor": 10, "interconnect": 10, "scaling": 8,
           "bandwidth_efficiency": 11, "matmul_efficiency": 11, "training_efficiency": 11,
           "purchase_price": 12, "power_w": 8, "provider": 12, "region": 10, "source": 44,
           **{t.price_column: 12 if t.reference or t.per_card_month else 11 for t in TIERS}}
_FORMATS = {"scaling": "percent", "price_change_per_year": "percent",
            "bandwidth_efficiency": "percent", "matmul_efficiency": "percent", "training_efficiency": "percent",
            "purchase_price": "money",
            **{t.price_column: "money" if t.per_card_month else "price" for t in TIERS}}
# As listed, a price is a plain number: its currency is the row's `currency`, never the plan's label.
_LISTED_FORMATS = {"scaling": "percent", "price_change_per_year": "percent",
                   "bandwidth_efficiency": "percent", "matmul_efficiency": "percent", "training_efficiency": "percent",
                   "purchase_price": "int",
                   **{t.price_column: "int" if t.per_card_month else "number" for t in TIERS}}


def write_gpus(book: Book, ws, gpus, settings) -> None:
    """The inputs as listed (each row's prices in its own currency), then the same prices in the plan currency:
    the listed price times the row's FX rate from Assumptions, the columns the other sheets read by name. A
    commitment tier left blank is on-demand x (1 - its discount setting): rules.COMMIT_RATE."""
    cols = [c.name for c in GPU_COLUMNS]
    widths = [_WIDTHS.get(c, 9) for c in cols]
    book.header(ws, 0, [book.titled(input_name(c.name, book.lang), c.unit) for c in GPU_COLUMNS], widths)
    ws.set_row(0, 45)  # three lines: the converted columns' headers name their unit
    at = {c: i for i, c in enumerate(cols)}
    rate_col = len(cols)
    converted: list[tuple[str, str, str | None, str, str]] = [(t.price_name, t.price_column, t.name, t.price_unit, _FORMATS[t.price_column]) for t in TIERS]
    converted.append(("GpuPurchase", "purchase_price", None, "currency", "money"))
    book.header(ws, 0, [book.titled("FX rate", "plan currency per unit")]
                + [book.titled(book.t("{column} in the plan currency").format(column=input_name(column, book.lang)),
                               unit) for _, column, _, unit, _ in converted],
                [10] + [12] * len(converted), first_col=rate_col)
    on_demand_col = rate_col + 1 + next(j for j, c in enumerate(converted) if c[2] == REFERENCE_TIER.name)
    for i, g in enumerate(gpus, start=1):
        n = i + 1
        values = gpu_record(g)
        for col, key in enumerate(cols):
            book.value(ws, i, col, values[key], "input", _LISTED_FORMATS.get(key, "general"))
        rate = f"{xl_col_to_name(rate_col)}{n}"
        book.formula(ws, i, rate_col, f"INDEX({FX_RATE},MATCH({xl_col_to_name(at['currency'])}{n},{FX_CURRENCY},0))",
                     g.fx, "rate")
        for j, (_, column, tier, _, fmt) in enumerate(converted, start=rate_col + 1):
            listed = f"{xl_col_to_name(at[column])}{n}"
            record = TIER.get(tier or "")
            if record is not None and not record.for_tasks:
                formula = rules.COMMIT_RATE.formula(listed=listed, fx=rate, on_demand=f"{xl_col_to_name(on_demand_col)}{n}",
                                                    discount=record.discount_name)
                book.formula(ws, i, j, formula, commitment_rate(g, record, settings), fmt)
                continue
            value = g.prices.get(tier) if tier is not None else g.purchase_price
            book.formula(ws, i, j, f'IF(ISNUMBER({listed}),{listed}*{rate},"")', value, fmt)
    for col, key in enumerate(cols):
        if key in GPU_NAMES:
            book.define_range(GPU_NAMES[key], SHEET, 1, len(gpus), col)
    for j, (name, *_) in enumerate(converted, start=rate_col + 1):
        book.define_range(name, SHEET, 1, len(gpus), j)
    last_col = rate_col + len(converted)
    ws.freeze_panes(1, 1)
    ws.autofilter(0, 0, len(gpus), last_col)
    for col, declared in enumerate(GPU_COLUMNS):
        if declared.choices:
            book.dropdown(ws, 1, max(1, len(gpus)), col, declared.name, declared.choices)
    print_setup(ws, book.lang, widths + [10] + [12] * len(converted), len(gpus), header_rows=(0, 0),
                repeat_cols=(0, 0))
