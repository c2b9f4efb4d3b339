"""Scenarios: the drivers' low, base and high values (inputs), the value the selector chooses (live), the period total
of each level side by side and the tornado of each row moved alone, with its chart (budgetgen/plan/scenarios.py and
engine.plan_budget are the Python view)."""

from __future__ import annotations

from xlsxwriter.utility import xl_rowcol_to_cell

from ..core.schema import SCENARIO_LEVELS
from ..plan.engine import Plan
from ..plan.scenarios import SCENARIO_BUFFER, SELECTOR, buffer_excel, chosen_name
from .book import Book
from .layout import PERIOD_TOTAL
from .printing import print_setup

SHEET = "Scenarios"
_WIDTHS = [26, 14, 14, 14, 14, 14, 30]
NOTE = ("Demand and price values multiply what Tasks and GPUs say (1: as typed); buffer values are rates. A task's "
        "own row wins over the row for every task. The selector on Summary (the named cell Scenario) chooses the "
        "column the whole workbook computes with. The totals side by side and the tornado are computed by the build "
        "(each Scenarios row moved alone to its low and high value, the others at base); build again after editing.")
HEADER = 3


def write_scenarios(book: Book, ws, plan: Plan) -> None:
    """Row by row (the workbook is streamed): the inputs, the chosen buffer, the levels side by side, the tornado."""
    rows = plan.inputs.scenarios
    ws.write_string(0, 0, book.t("Scenarios: low, base and high, and what moves the total most"), book.f.title)
    book.note_across(ws, 1, book.t(NOTE), _WIDTHS)
    book.header(ws, HEADER, ["driver", "task_id", "low", "base", "high", "chosen", "source"], _WIDTHS)
    first = HEADER + 1
    for i, row in enumerate(rows):
        r = first + i
        ws.write_string(r, 0, row.driver)   # which tasks read a row is fixed by the build; its values are live
        ws.write_string(r, 1, row.task_id or book.t("every task"))
        for col, level in enumerate(SCENARIO_LEVELS, start=2):
            book.value(ws, r, col, row.value(level), "input", "number")
        low, base, high = (xl_rowcol_to_cell(r, c) for c in (2, 3, 4))
        book.formula(ws, r, 5, f'IF({SELECTOR}="low",{low},IF({SELECTOR}="high",{high},{base}))', row.base, "number")
        book.define(chosen_name(i), SHEET, r, 5)
        book.value(ws, r, 6, row.source or None, "input", "text")
    if not rows:
        ws.write_string(first, 0, book.t("(no Scenarios sheet in the input: every multiplier is 1)"), book.f.note)
    last = first + max(1, len(rows)) - 1

    r = last + 2
    ws.write_string(r, 0, book.t("hidden-cost buffer in the chosen scenario"), book.f.bold)
    book.formula(ws, r, 1, buffer_excel(rows, "BufferRate"), plan.buffer_rate, "percent")
    book.define(SCENARIO_BUFFER, SHEET, r, 1)

    r += 2
    book.header(ws, r, ["scenario", book.titled("period total", "currency"), book.titled("change vs base", "currency")])
    base = plan.scenario_totals["base"]
    base_cell = xl_rowcol_to_cell(r + 1 + SCENARIO_LEVELS.index("base"), 1, row_abs=True, col_abs=True)
    for i, level in enumerate(SCENARIO_LEVELS, start=1):
        ws.write_string(r + i, 0, book.t(level))
        ws.write_number(r + i, 1, plan.scenario_totals[level], book.f.get("calc", "money"))
        book.formula(ws, r + i, 2, f"{xl_rowcol_to_cell(r + i, 1)}-{base_cell}", plan.scenario_totals[level] - base,
                     "money")
    r += len(SCENARIO_LEVELS) + 1
    ws.write_string(r, 0, book.t("the scenario chosen on Summary (live)"), book.f.bold)
    book.formula(ws, r, 1, PERIOD_TOTAL, plan.period_total, "money", "link")

    r += 2
    tornado = r
    book.header(ws, r, ["tornado: row moved alone", book.titled("total at low", "currency"),
                        book.titled("total at high", "currency"), book.titled("change at low", "currency"),
                        book.titled("change at high", "currency"), book.titled("swing", "currency")])
    for i, w in enumerate(plan.tornado, start=1):
        ws.write_string(r + i, 0, w.label)
        ws.write_number(r + i, 1, w.low, book.f.get("calc", "money"))
        ws.write_number(r + i, 2, w.high, book.f.get("calc", "money"))
        low, high = xl_rowcol_to_cell(r + i, 1), xl_rowcol_to_cell(r + i, 2)
        book.formula(ws, r + i, 3, f"{low}-{base_cell}", w.low - w.base, "money")
        book.formula(ws, r + i, 4, f"{high}-{base_cell}", w.high - w.base, "money")
        book.formula(ws, r + i, 5, f"MAX(ABS({low}-{base_cell}),ABS({high}-{base_cell}))", w.size, "money")
    last_row = r + max(1, len(plan.tornado))
    if plan.tornado:
        chart = book.wb.add_chart({"type": "bar"})
        n = len(plan.tornado)
        for col, label in ((3, "change at low"), (4, "change at high")):
            chart.add_series({"name": book.t(label), "categories": [SHEET, tornado + 1, 0, tornado + n, 0],
                              "values": [SHEET, tornado + 1, col, tornado + n, col]})
        chart.set_title({"name": book.t("Tornado: change in the period total, largest first")})
        chart.set_x_axis({"num_format": book.f.num["money"]})
        chart.set_y_axis({"reverse": True})
        chart.set_legend({"position": "bottom"})
        chart.set_size({"width": 640, "height": 120 + 24 * n})
        ws.insert_chart(last_row + 2, 0, chart)
        last_row += 2 + (120 + 24 * n) // 20
    ws.freeze_panes(HEADER + 1, 1)
    print_setup(ws, book.lang, _WIDTHS, last_row, header_rows=(HEADER, HEADER))


def write_scenario_selector(book: Book, ws, row: int) -> None:
    """The selector on Summary: the named input cell Scenario (low, base or high) the workbook computes with."""
    ws.write_string(row, 0, book.t("Scenario (low, base, high)"), book.f.bold)
    ws.write_string(row, 1, "base", book.f.get("input", "text"))
    book.define(SELECTOR, "Summary", row, 1)
    book.dropdown(ws, row, row, 1, "scenario", SCENARIO_LEVELS)
