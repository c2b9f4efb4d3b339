"""`budgetgen init`: a fillable input workbook generated from the schema (headers, notes, dropdowns)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import xlsxwriter

from ..catalog.fx import money_default, reference_rate
from ..catalog.gpus import CATALOG_CURRENCY, builtin_records
from ..core.errors import OutputError
from ..core.i18n import Message, describe, name, sheet_name, tr, word
from ..core.schema import PRICE_COLUMNS, RAMP_COLUMNS, SETTINGS, SHEETS, Column, Value

# The example rows' task ids start with this: `build` warns while any is left in the inventory.
EXAMPLE_PREFIX = "EXAMPLE-"
EXAMPLE_TASKS = (
    {"task_id": f"{EXAMPLE_PREFIX}01", "task": "Support-bot QLoRA fine-tune", "kind": "finetune", "model": "Qwen2.5-7B",
     "method": "qlora", "train_tokens": "5M", "epochs": 3, "runs_per_month": 2, "cost_center": "knowledge-base"},
    {"task_id": f"{EXAMPLE_PREFIX}02", "task": "Domain pretraining", "kind": "pretrain", "model_params_b": "1.3B",
     "method": "full", "train_tokens": "20B", "runs_per_month": 0.5, "cost_center": "research"},
    {"task_id": f"{EXAMPLE_PREFIX}03", "task": "Knowledge-base chat service", "kind": "inference", "model": "Qwen2.5-7B",
     "method": "int4", "requests_per_day": 10000, "prompt_tokens": 1500, "tokens_per_request": 500,
     "serving_hours_per_day": 8, "gpu": "RTX 4090", "cost_center": "knowledge-base"},
    {"task_id": f"{EXAMPLE_PREFIX}04", "task": "Nightly document summaries", "kind": "batch", "model": "Qwen2.5-14B",
     "method": "int8", "batch_requests": 200000, "prompt_tokens": 800, "tokens_per_request": 300,
     "runs_per_month": 30, "cost_center": "knowledge-base"},
    {"task_id": f"{EXAMPLE_PREFIX}05", "task": "Assistant API (mixture of experts, fp8)", "kind": "inference",
     "model": "Qwen3-30B-A3B", "method": "fp8", "requests_per_day": 50000, "prompt_tokens": 2000,
     "tokens_per_request": 400, "cost_center": "product"},
)
EXAMPLE_EXTRAS: tuple[dict[str, Value], ...] = (
    {"item": "Object storage for checkpoints", "category": "storage", "monthly_cost": 400},
    {"item": "Egress to users", "category": "egress", "monthly_cost": 600},
)


def example_rows_left(tasks) -> list[Message]:
    """A warning naming the template's example tasks still in the inventory (none: an empty list)."""
    ids = [t.task_id for t in tasks if str(t.task_id).upper().startswith(EXAMPLE_PREFIX)]
    return [Message("example_rows", ids=", ".join(ids))] if ids else []


_NOTE_SIZE = {"x_scale": 2, "y_scale": 1.5}


def _write_table(wb, ws, columns: tuple[Column, ...], rows, fmt, lang: str) -> None:
    for col, column in enumerate(columns):
        if column is RAMP_COLUMNS[1]:
            # Ramp's month columns: the note on the blank cell where the first month goes. A month written now would
            # fall outside a plan that starts later (by default the month after the build date): a problem.
            ws.write_blank(0, col, None, fmt["header"])
            ws.write_comment(0, col, describe(column, lang), _NOTE_SIZE)
            continue
        ws.write_string(0, col, name(column.name, lang), fmt["header"])
        ws.write_comment(0, col, describe(column, lang), _NOTE_SIZE)
        ws.set_column(col, col, max(12, len(column.name) + 2))
        if column.choices:
            ws.data_validation(1, col, 1000, col, {"validate": "list", "source": [word(c, lang) for c in column.choices],
                                                   "error_type": "warning"})
    for r, row in enumerate(rows, start=1):
        for col, column in enumerate(columns):
            value = row.get(column.name)
            if value is None:
                continue
            if column.type == "choice":
                value = word(value, lang)
            elif column.name in ("task", "item"):  # the examples' descriptions
                value = tr(value, lang)
            if isinstance(value, str):
                ws.write_string(r, col, value, fmt["input"])
            else:
                ws.write_number(r, col, value, fmt["input"])
    ws.freeze_panes(1, 1)


def _in_currency(value, rate):
    return None if value is None else value * rate.rate


def catalog_rows(currency: str, today: dt.date) -> list[dict[str, Value]]:
    """The built-in catalog as GPUs sheet rows priced in `currency`: each price converted at the reference rate,
    which the row's source names with its date; where no rate is known, the prices blank and the catalog's
    figures named in the source as a hint (never a number under another currency's label)."""
    rows = []
    for rec in builtin_records(currency):  # an offer in the plan currency where there is one, else the market's
        row = dict(rec)
        listed = str(rec["currency"])
        priced = [c for c in PRICE_COLUMNS if rec.get(c) is not None]
        if listed != currency and priced:
            rate = reference_rate(listed, currency, today)
            figures = ", ".join(f"{c} {rec[c]:,g}" for c in priced)
            if rate is None:
                row.update(dict.fromkeys(priced))
                row["source"] = f"{rec['source']}; no {listed} to {currency} rate: the catalog lists {figures} {listed}"
            else:
                row.update({c: _in_currency(rec[c], rate) for c in priced})
                row["source"] = (f"{rec['source']}; converted from {figures} {listed} at {rate.rate:.6g} {currency} per "
                                 f"{listed} ({rate.source}, {rate.as_of})")
        row["currency"] = currency
        rows.append(row)
    return rows


def write_template(path: Path, lang: str = "en", currency: str = CATALOG_CURRENCY, today: dt.date | None = None) \
        -> Path:
    """Write a blank input workbook with every input sheet (schema.SHEETS), header notes, dropdowns and example rows,
    in `lang`, for a plan in `currency` (catalog prices, money defaults and the example extras converted into it).
    Models, FX, Ramp, Scenarios and Budgets are written empty under their headers: a row there changes the plan,
    so their notes carry the examples."""
    from ..workbook.book import Sheet  # the writer package, loaded only to write (the reader imports this module)

    path = Path(path)
    today = today or dt.date.today()
    rate = reference_rate(CATALOG_CURRENCY, currency, today)
    if rate is None:
        raise OutputError(f"no {CATALOG_CURRENCY} to {currency} reference rate is known: choose another currency "
                          "(the plan's currency can be changed on Settings afterwards)")
    path.parent.mkdir(parents=True, exist_ok=True)
    wb = xlsxwriter.Workbook(str(path), {"strings_to_formulas": False, "strings_to_urls": False,
                                         "tmpdir": str(path.parent)})
    fmt = {"header": wb.add_format({"bold": True, "bg_color": "#1F3864", "font_color": "#FFFFFF"}),
           "input": wb.add_format({"font_color": "#0000FF", "bg_color": "#FFF2CC"})}
    defaults = {s.key: s.default for s in SETTINGS}
    defaults["currency"] = currency
    defaults.update({s.key: money_default(s.default, s.money, currency, today) for s in SETTINGS if s.money})
    settings_rows = [{"setting": name(s.key, lang), "value": word(defaults[s.key], lang) if s.choices else
                      defaults[s.key], "note": tr(s.help, lang) + (f" ({tr(s.unit, lang)})" if s.unit else "")}
                     for s in SETTINGS]
    extras = [{**e, "monthly_cost": money_default(e["monthly_cost"], CATALOG_CURRENCY, currency, today)}
              for e in EXAMPLE_EXTRAS]
    rows = {"Settings": settings_rows, "Tasks": EXAMPLE_TASKS, "GPUs": catalog_rows(currency, today), "Extras": extras}
    for sheet, columns in SHEETS.items():
        _write_table(wb, wb.add_worksheet(sheet_name(sheet, lang), Sheet), columns, rows.get(sheet, ()), fmt, lang)
    wb.get_worksheet_by_name(sheet_name("Settings", lang)).set_column(2, 2, 90)
    wb.close()
    return path


# templates/ at the top of the repository: the blank input workbooks finance can download without installing
# anything, `budgetgen init --date 2026-12-01` in each language (tools/make_templates.py writes them; a test
# keeps them equal to what init writes).
TEMPLATES = {"en": "budget-input.xlsx", "zh": "budget-input-zh.xlsx"}
TEMPLATE_DATE = dt.date(2026, 12, 1)


def write_templates(folder: Path) -> list[Path]:
    """Write the blank input workbook in each language into `folder`, as of TEMPLATE_DATE."""
    return [write_template(Path(folder) / file, lang, CATALOG_CURRENCY, TEMPLATE_DATE) for lang, file in TEMPLATES.items()]
