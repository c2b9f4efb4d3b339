"""Tasks: one row per task, its inputs as values and one formula per calculated column (columns.CALCS).

Every Tasks column is a workbook-scoped name (`task_name`), the way every other sheet reads it.
"""

from __future__ import annotations

import re

from xlsxwriter.utility import xl_col_to_name

from ..catalog.models import MODEL_COLUMNS
from ..core.i18n import name as input_name
from ..core.schema import TASK_COLUMNS, Value
from ..model.columns import CALCS
from ..plan.choice import NAMED
from ..plan.engine import Plan
from .book import BlockColumn, Book, ColumnBlock
from .choice import TASK_HEADERS, task_formulas
from .layout import GPU_NAMES, MODEL_FIGURES, MODEL_NAMES, Table, task_name
from .printing import print_setup

SHEET = "Tasks"
_PLACEHOLDER = re.compile(r"\{([a-z0-9_]+)(?:\.([a-z0-9_]+))?\}")
INPUT_FORMATS = {c.name: ("percent" if c.type == "percent" else "text" if c.type in ("text", "choice", "month")
                          else "echo") for c in TASK_COLUMNS}


def compile_formula(template: str, table: Table, task_row: str | None = None) -> str:
    """A column's formula (without `=`), `{r}` standing for the 1-based row.

    `{col}` is the same row's cell, `{gpu.x}` a lookup on the GPUs sheet, `{model.x}` the task's model figure
    (Tasks' column `model.x`: blank when the row names no model or the catalog lacks the figure). With `task_row`
    (the column holding the task's position on Tasks), a column the table lacks is read from Tasks by its name.
    """
    def cell(name: str) -> str:
        if name in table.columns:
            return f"${xl_col_to_name(table.columns[name])}{{r}}"
        return f"INDEX({task_name(name)},${task_row}{{r}})"

    def sub(match: re.Match) -> str:
        name, field = match.groups()
        if name == "gpu" and field:
            row = cell("gpu_row") if "gpu_row" in table.columns else gpu_row_formula(table)
            return row if field == "row" else f"INDEX({GPU_NAMES[field]},{row})"
        if name == "model" and field:
            return cell(f"model.{field}")
        return cell(name)
    return _PLACEHOLDER.sub(sub, template.removeprefix("="))


def gpu_row_formula(table: Table) -> str:
    """The row's GPU's position on the GPUs sheet: the formula of the `gpu_row` column, which the other formulas'
    GPU lookups read."""
    return f"MATCH(${xl_col_to_name(table.columns['gpu'])}{{r}},GpuName,0)"


def gpu_rows(plan: Plan) -> dict[str, int]:
    """Each catalog GPU's position on the GPUs sheet (its row there less the header): the `gpu_row` values."""
    return {g.name: i for i, g in enumerate(plan.inputs.gpus, start=1)}


GPU_ROW_HEADER = {"gpu_row": ("row on GPUs", "#")}
_MODEL_UNITS = {c.name: c.unit for c in MODEL_COLUMNS}
MODEL_HEADERS = {key: (f"model: {field}", "" if _MODEL_UNITS[field] == field else _MODEL_UNITS[field])
                 for key, field in ((key, key.removeprefix("model.")) for key in MODEL_FIGURES)}


def model_lookup(field: str, table: Table) -> str:
    """The formula of Tasks' column `model.<field>`: the task's model's figure on Models, blank when the row names no
    model or the catalog lacks the figure."""
    model = f"${xl_col_to_name(table.columns['model'])}{{r}}"
    figure = f"INDEX({MODEL_NAMES[field]},MATCH({model},ModelName,0))"
    return f'IF({model}="","",IF({figure}="","",{figure}))'


def column_headers(book: Book, ws, table: Table, labels: dict[str, str],
                   more: dict[str, tuple[str, str]] | None = None) -> list[float]:
    """Row 0: each column's header (its unit in brackets where it has one); returns the column widths. `more`:
    the title and unit of columns beyond the inputs and CALCS."""
    units = {c.name: c.unit for c in TASK_COLUMNS}
    units.update({c.key: c.unit for c in CALCS})
    titles = {c.key: c.header for c in CALCS}
    for key, (title, unit) in (more or {}).items():
        titles[key], units[key] = title, unit
    texts = {}
    for key, col in table.columns.items():
        title = labels.get(key) or titles.get(key) or input_name(key, book.lang)
        unit = units.get(key, "")
        # `epochs`, not `epochs (epochs)`; `training (1 = yes)`, not `training? (1 = yes)`
        title, unit = (title, "") if unit in (key, title) else (title.removesuffix("?") if unit else title, unit)
        texts[col] = book.titled(title, unit)
        ws.write_string(0, col, texts[col], book.f.header)
        ws.set_column(col, col, 14 if key not in ("task", "tier_advice") else 28)
    book.fit_header(ws, 0, texts)
    return [14 if key not in ("task", "tier_advice") else 28 for key in table.columns]


def dropdowns(book: Book, ws, table: Table) -> None:
    """A list on every Tasks input that takes a catalog name (gpu: the GPUs sheet; model: the Models sheet) or an
    enumeration."""
    for column in TASK_COLUMNS:
        if column.choices:
            book.dropdown(ws, table.first, table.last, table.columns[column.name], column.name, column.choices)
    book.dropdown(ws, table.first, table.last, table.columns["gpu"], "gpu", f"={GPU_NAMES['gpu']}")
    book.dropdown(ws, table.first, table.last, table.columns["model"], "model", f"={MODEL_NAMES['model']}")


def write_tasks(book: Book, ws, plan: Plan, table: Table) -> None:
    widths = column_headers(book, ws, table, {"gpu": "gpu (chosen)"}, TASK_HEADERS | MODEL_HEADERS | GPU_ROW_HEADER)
    extra_col = len(table.columns)
    headers = plan.inputs.extra_headers
    for j, header in enumerate(headers):
        ws.write_string(0, extra_col + j, header, book.f.header)
    formulas: list[BlockColumn] = [(table.columns[calc.key], calc.key, compile_formula(calc.excel, table), book.f.get("calc", calc.fmt))
                for calc in CALCS]
    inputs: list[BlockColumn] = [(table.columns[c.name], c.name, None, book.f.get("input", INPUT_FORMATS[c.name])) for c in TASK_COLUMNS]
    choice: list[BlockColumn] = [(table.columns[key], key, formula, book.f.get("calc", "text" if key == "cheaper_gpu" else "money"))
              for key, formula in task_formulas(table).items()]
    choice.append((table.columns["gpu_named"], "gpu_named", None, book.f.get("calc", "text")))
    choice.append((table.columns["candidate_last"], "candidate_last", None, book.f.get("calc", "int")))
    figures: list[BlockColumn] = [(table.columns[key], key, model_lookup(key.removeprefix("model."), table), book.f.get("link", "echo"))
               for key in MODEL_FIGURES]
    figures.append((table.columns["gpu_row"], "gpu_row", gpu_row_formula(table), book.f.get("calc", "int")))
    gpu_row = gpu_rows(plan)
    block = ColumnBlock(sorted(inputs + formulas + choice + figures, key=lambda column: column[0]))
    blank = dict.fromkeys(c.name for c in TASK_COLUMNS)
    named = book.t(NAMED)
    best = [{**b, "gpu_named": named if b["gpu_named"] else ""} for b in plan.live_choice.tasks]
    for i, tp in enumerate(plan.tasks):
        r = table.first + i
        block.store(ws, r, {**blank, **tp.task.values, **tp.row, **best[i], "gpu_row": gpu_row[tp.row["gpu"]]})
        for j, header in enumerate(headers):
            value: Value = tp.task.extra.get(header)
            book.value(ws, r, extra_col + j, value.isoformat() if hasattr(value, "isoformat") else value,
                       "input", "general")
    for key, col in table.columns.items():
        book.define_range(task_name(key), SHEET, table.first, table.last, col)
    dropdowns(book, ws, table)
    ws.freeze_panes(1, 1)
    ws.autofilter(0, 0, table.last, extra_col + len(headers) - 1)
    print_setup(ws, book.lang, widths + [14] * len(headers), table.last, header_rows=(0, 0), repeat_cols=(0, 0))
