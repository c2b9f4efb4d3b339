"""Models: the model catalog (built-in plus the input's Models sheet), each column a workbook-scoped name
(ModelName, ModelLayers, ...) that the Tasks and Candidates formulas look a task's model up in."""

from __future__ import annotations

from ..catalog.models import MODEL_COLUMNS, ModelCatalog
from ..core.i18n import name as input_name
from .book import Book
from .layout import MODEL_NAMES
from .printing import print_setup

SHEET = "Models"
_WIDTHS = {"model": 22, "native_context": 13, "source": 60}


def model_value(model, column: str):
    """The figure a Models sheet column shows for one catalog model (None: blank)."""
    return model.name if column == "model" else getattr(model, column) or None


def write_models(book: Book, ws, catalog: ModelCatalog) -> None:
    widths = [_WIDTHS.get(c.name, 11) for c in MODEL_COLUMNS]
    book.header(ws, 0, [book.titled(input_name(c.name, book.lang), c.unit) for c in MODEL_COLUMNS], widths)
    ws.set_row(0, 30)
    for i, model in enumerate(catalog.models, start=1):
        for col, column in enumerate(MODEL_COLUMNS):
            book.value(ws, i, col, model_value(model, column.name), "input", "echo")  # 131,072; 70.6
    for col, column in enumerate(MODEL_COLUMNS):
        book.define_range(MODEL_NAMES[column.name], SHEET, 1, max(1, len(catalog.models)), col)
    ws.freeze_panes(1, 1)
    ws.autofilter(0, 0, len(catalog.models), len(MODEL_COLUMNS) - 1)
    print_setup(ws, book.lang, widths, len(catalog.models), header_rows=(0, 0), repeat_cols=(0, 0))
