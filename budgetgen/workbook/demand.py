"""Demand: per task and plan month the demand factor, the cards held and billed and the GPU-hours, as live formulas
over Tasks (budgetgen/plan/ramp.py is the Python view). Monthly prices each month from these; Commitments, Order, Tiers
and BuyVsRent read them by name (DemandCardsBilled_2026_07, ...)."""

from __future__ import annotations

from xlsxwriter.utility import xl_col_to_name, xl_rowcol_to_cell

from ..core.records import DEMAND, PRICE, excel_is
from ..core.schema import KIND, TASK_KINDS, TASK_TIERS
from ..model import rules
from ..plan.engine import Plan
from ..plan.scenarios import foreign_prices, multiplier_excel, task_multipliers
from .book import Book
from .layout import DEMAND_BLOCKS, GPU_NAMES, DemandMatrix, demand_name, task_name
from .printing import print_setup

SHEET = "Demand"
NOTE = ("A month's demand is the task's typed demand times (1 + growth a month) to the months since its start, or "
        "the ramp typed for the month, times the scenario's multiplier; 0 outside its months. An online service's "
        "replicas are sized again for the month's requests; a training or batch task's runs follow the factor, each "
        "run the same size.")
# Lead columns: what each month's formulas read of the task, linked from Tasks, and the plan totals.
LEAD_UNITS = {"task_row": "#", "task_id": "", "gpu": "", "tier": "", "start #": "#", "end #": "#",
              "growth a month": "share", "online?": "1 = yes", "per card-month?": "1 = yes",
              "requests a day": "requests/day", "serving hours a day": "h/day", "requests/s per replica": "requests/s",
              "min replicas": "replicas", "cards per replica/run": "cards", "cards held": "cards",
              "GPU-hours a month": "GPU-h", "training?": "1 = yes", "prices in another currency?": "1 = yes",
              "scenario demand x": "", "scenario price x": "", "card-months held": "card-months",
              "card-months billed": "card-months",
              "GPU-hours over the plan": "GPU-h"}
_WIDTHS = [8, 10, 12, 10, 7, 7, 9, 8, 9, 11, 9, 10, 9, 9, 9, 11, 8, 10, 10, 10, 11, 11, 12]
_LINKS = {"task_id": ("task_id", "text"), "gpu": ("gpu", "text"), "tier": ("tier", "text"),
          "start #": ("start_index", "int"), "end #": ("end_index", "int"), "growth a month": ("growth_per_month",
                                                                                               "percent"),
          "requests a day": ("requests_per_day", "number"), "serving hours a day": ("serving_hours_per_day", "number"),
          "requests/s per replica": ("requests_per_sec", "number"), "cards per replica/run": ("cards_per_run", "int"),
          "cards held": ("cards_held", "int"), "GPU-hours a month": ("gpu_hours_per_month", "number"),
          "training?": ("training", "int")}
_BLOCK_FORMATS = {"ramp": "number", "factor": "number", "cards": "int", "cards_billed": "int", "gpu_hours": "number"}
_PER_CARD_MONTH = tuple(t.name for t in TASK_TIERS if t.per_card_month)


def write_demand(book: Book, ws, plan: Plan, at: DemandMatrix) -> None:
    """Row by row (the workbook is streamed): headers, month numbers, one row per task."""
    s = plan.inputs.settings
    book.header(ws, 0, [book.titled(k, u) for k, u in LEAD_UNITS.items()], _WIDTHS)
    for block, title in DEMAND_BLOCKS.items():
        book.header(ws, 0, [f"{book.t(title)} {m}" for m in at.months], [10] * len(at.months), at.col(block, 0))
    ws.set_row(0, 45)
    ws.write_string(1, 0, book.t("month #"), book.f.note)
    ws.write_string(1, 1, book.t(NOTE), book.f.note)
    for block in DEMAND_BLOCKS:
        for j in range(len(at.months)):
            ws.write_number(1, at.col(block, j), j + 1, book.f.get("input", "int"))
    lead = {k: at.lead.index(k) for k in at.lead}
    for i, tp in enumerate(plan.tasks):
        r = at.first + i
        ws.write_number(r, 0, i + 1)
        cell = {k: xl_rowcol_to_cell(r, c, col_abs=True) for k, c in lead.items()}
        position = cell["task_row"]
        values = {**tp.task.values, **tp.row}
        for key, (column, fmt) in _LINKS.items():
            link = f"INDEX({task_name(column)},{position})"
            value = values.get(column)
            book.formula(ws, r, lead[key], f'IF({link}="","",{link})', 0 if value is None and key == "growth a month"
                         else value, fmt, "link")
        kind, tier = f"INDEX({task_name('kind')},{position})", f"INDEX({task_name('tier')},{position})"
        book.formula(ws, r, lead["online?"], f"IF({excel_is(kind, (k.name for k in TASK_KINDS if k.online))},1,0)",
                     1 if KIND[tp.row["kind"]].online else 0, "int")
        book.formula(ws, r, lead["per card-month?"], f"IF({excel_is(tier, _PER_CARD_MONTH)},1,0)" if _PER_CARD_MONTH
                     else "0", 1 if tp.row["tier"] in _PER_CARD_MONTH else 0, "int")
        currency = f"INDEX({GPU_NAMES['currency']},MATCH({cell['gpu']},GpuName,0))"
        foreign = foreign_prices(plan.inputs.gpu(tp.row["gpu"]), s.currency)
        book.formula(ws, r, lead["prices in another currency?"], f'IF(AND({currency}<>"",{currency}<>Currency),1,0)',
                     1 if foreign else 0, "int")
        demand_x, price_x = task_multipliers(plan.inputs.scenarios, ("base",) * len(plan.inputs.scenarios),
                                             tp.task.task_id, bool(tp.row["training"]), tp.row["tier"], foreign)
        parts = {"task_id": tp.task.task_id, "training": cell["training?"], "tier": cell["tier"],
                 "foreign": cell["prices in another currency?"]}
        rows = plan.inputs.scenarios
        book.formula(ws, r, lead["scenario demand x"], multiplier_excel(rows, DEMAND, **parts), demand_x, "number")
        book.formula(ws, r, lead["scenario price x"], multiplier_excel(rows, PRICE, **parts), price_x, "number")
        given = f"INDEX({task_name('min_replicas')},{position})"
        book.formula(ws, r, lead["min replicas"], f'IF({given}="",MinReplicas,{given})',
                     tp.row["min_replicas"] if tp.row["min_replicas"] is not None else s.min_replicas, "int")
        for key, block, value in (("card-months held", "cards", sum(m.cards for m in tp.months)),
                                  ("card-months billed", "cards_billed", sum(m.cards_billed for m in tp.months)),
                                  ("GPU-hours over the plan", "gpu_hours", sum(m.gpu_hours for m in tp.months))):
            first, last = xl_col_to_name(at.col(block, 0)), xl_col_to_name(at.col(block, len(at.months) - 1))
            book.formula(ws, r, lead[key], f"SUM({first}{r + 1}:{last}{r + 1})", value, _BLOCK_FORMATS[block])
        ramp = plan.inputs.ramps.get(tp.task.task_id, {})
        for j, m in enumerate(tp.months):
            here = {b: xl_rowcol_to_cell(r, at.col(b, j)) for b in DEMAND_BLOCKS}
            book.value(ws, r, at.col("ramp", j), ramp.get(j + 1), "input", "number")
            month = xl_rowcol_to_cell(1, at.col("factor", j), row_abs=True)
            book.formula(ws, r, at.col("factor", j), rules.DEMAND_FACTOR.formula(
                month=month, start=cell["start #"], end=cell["end #"], growth=cell["growth a month"],
                scale=cell["scenario demand x"], ramp=here["ramp"]), m.factor,
                "number")
            book.formula(ws, r, at.col("cards", j), rules.MONTH_CARDS.formula(
                factor=here["factor"], online=f"{cell['online?']}=1", requests=cell["requests a day"],
                hours_per_day=cell["serving hours a day"], req_s=cell["requests/s per replica"],
                min_replicas=cell["min replicas"], cards_per_run=cell["cards per replica/run"],
                cards_held=cell["cards held"]), m.cards, "int")
            book.formula(ws, r, at.col("gpu_hours", j), rules.MONTH_GPU_HOURS.formula(
                online=f"{cell['online?']}=1", hours=cell["GPU-hours a month"], cards=here["cards"],
                cards_held=cell["cards held"], factor=here["factor"]), m.gpu_hours, "number")
            book.formula(ws, r, at.col("cards_billed", j), rules.MONTH_CARDS_BILLED.formula(
                per_card_month=f"{cell['per card-month?']}=1", cards=here["cards"], hours=here["gpu_hours"]),
                m.cards_billed, "int")
    for block in DEMAND_BLOCKS:
        for j, month in enumerate(at.months):
            book.define_range(demand_name(block, month), SHEET, at.first, at.last, at.col(block, j))
    for key, name in (("online?", "DemandOnline"), ("per card-month?", "DemandPerCardMonth"),
                      ("scenario price x", "DemandPriceScale"),
                      ("card-months held", "DemandHeldMonths"), ("card-months billed", "DemandBilledMonths"),
                      ("GPU-hours over the plan", "DemandGpuHours")):
        book.define_range(name, SHEET, at.first, at.last, lead[key])
    ws.freeze_panes(2, 2)
    print_setup(ws, book.lang, _WIDTHS + [10] * (at.last_col - len(_WIDTHS) + 1), at.last, header_rows=(0, 1),
                repeat_cols=(0, 1))
