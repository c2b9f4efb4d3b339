"""GPUs: the catalog as inputs, each column a workbook-scoped name (GpuName, GpuOnDemand, ...)."""

from __future__ import annotations

from ..i18n import name as input_name
from ..schema import GPU_COLUMNS
from .book import Book
from .layout import GPU_NAMES
from .printing import print_setup

SHEET = "GPUs"
_FORMATS = {"scaling": "percent", "bandwidth_efficiency": "percent", "matmul_efficiency": "percent", "on_demand_per_hour": "price", "monthly_per_card": "money",
            "idle_per_hour": "price", "spot_per_hour": "price", "purchase_price": "money"}


def write_gpus(book: Book, ws, gpus) -> None:
    cols = [c.name for c in GPU_COLUMNS]
    widths = [14, 12, 9, 12, 9, 9, 9, 10, 11, 11, 10, 8, 12, 12, 11, 11, 12, 8, 44, 9]
    book.header(ws, 0, [book.titled(input_name(c.name, book.lang), c.unit) for c in GPU_COLUMNS], widths)
    ws.set_row(0, 30)
    for i, g in enumerate(gpus, start=1):
        values = {"gpu": g.name, "class": g.gpu_class, "vram_gb": g.vram_gb, "bandwidth_gbs": g.bandwidth_gbs,
                  "tflops": g.tflops, "tflops_fp8": g.tflops_fp8, "tflops_fp4": g.tflops_fp4,
                  "form_factor": g.form_factor or None, "bandwidth_efficiency": g.bandwidth_efficiency,
                  "matmul_efficiency": g.matmul_efficiency, "interconnect": g.interconnect, "scaling": g.scaling,
                  "on_demand_per_hour": g.prices["on_demand"], "monthly_per_card": g.prices["monthly"],
                  "idle_per_hour": g.prices["idle"], "spot_per_hour": g.prices["spot"],
                  "purchase_price": g.purchase_price, "power_w": g.power_w, "source": g.source, "as_of": g.as_of}
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
