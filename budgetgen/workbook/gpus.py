"""GPUs: the catalog as inputs, each column a workbook-scoped name (GpuName, GpuOnDemand, ...)."""

from __future__ import annotations

from ..catalog import gpu_record
from ..i18n import name as input_name
from ..schema import GPU_COLUMNS, TIERS
from .book import Book
from .layout import GPU_NAMES
from .printing import print_setup

SHEET = "GPUs"
# Column widths by column (9 for the rest): a price column is 12 wide for the reference and card-month prices.
_WIDTHS = {"gpu": 14, "class": 12, "bandwidth_gbs": 12, "form_factor": 10, "interconnect": 10, "scaling": 8,
           "purchase_price": 12, "power_w": 8, "provider": 12, "region": 10, "source": 44,
           **{t.price_column: 12 if t.reference or t.per_card_month else 11 for t in TIERS}}
_FORMATS = {"scaling": "percent", "purchase_price": "money",
            **{t.price_column: "money" if t.per_card_month else "price" for t in TIERS}}


def write_gpus(book: Book, ws, gpus) -> None:
    cols = [c.name for c in GPU_COLUMNS]
    widths = [_WIDTHS.get(c, 9) for c in cols]
    book.header(ws, 0, [book.titled(input_name(c.name, book.lang), c.unit) for c in GPU_COLUMNS], widths)
    ws.set_row(0, 30)
    for i, g in enumerate(gpus, start=1):
        values = gpu_record(g)
        for col, key in enumerate(cols):
            book.value(ws, i, col, values[key], "input", _FORMATS.get(key, "general"))
    for col, key in enumerate(cols):
        if key in GPU_NAMES:
            book.define_range(GPU_NAMES[key], SHEET, 1, len(gpus), col)
    ws.freeze_panes(1, 1)
    ws.autofilter(0, 0, len(gpus), len(cols) - 1)
    for col, column in enumerate(GPU_COLUMNS):
        if column.choices:
            book.dropdown(ws, 1, max(1, len(gpus)), col, column.name, column.choices)
    print_setup(ws, book.lang, widths, len(gpus), header_rows=(0, 0), repeat_cols=(0, 0))
