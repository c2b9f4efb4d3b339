"""Plan to budget workbook: every derived number a live formula with the engine's value cached."""

from __future__ import annotations

import datetime as dt
import math
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import xlsxwriter
from xlsxwriter.utility import xl_col_to_name, xl_rowcol_to_cell
from xlsxwriter.worksheet import CellFormulaTuple, Worksheet

from . import __version__
from .columns import CALCS, CANDIDATE_FROM_TASKS, TIER_PRICE_NAMES
from .engine import Plan
from .errors import OutputError
from .i18n import name as input_name
from .i18n import say, tr, word
from .recon import ACTIONS, LOW_UTILIZATION
from .schema import CONSTANTS, GPU_COLUMNS, KINDS, SETTINGS, TASK_COLUMNS, TIERS

CHECK_TOLERANCE = 1e-9
CURRENCY_SYMBOL = {"CNY": "¥", "USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥", "INR": "₹", "KRW": "₩"}
GPU_NAMES = {"gpu": "GpuName", "class": "GpuClass", "vram_gb": "GpuVramGb", "bandwidth_gbs": "GpuBandwidthGbs",
             "tflops": "GpuTflops", "interconnect": "GpuInterconnect", "scaling": "GpuScaling",
             "on_demand_per_hour": TIER_PRICE_NAMES["on_demand"], "monthly_per_card": TIER_PRICE_NAMES["monthly"],
             "idle_per_hour": TIER_PRICE_NAMES["idle"], "spot_per_hour": TIER_PRICE_NAMES["spot"],
             "purchase_price": "GpuPurchase", "power_w": "GpuPowerW"}
# Tasks columns other sheets refer to by name.
TASK_NAMES = {"task_id": "TaskId", "kind": "TaskKind", "tier": "TaskTier", "gpu": "TaskGpu",
              "cost_center": "TaskCostCenter", "start_index": "TaskStart", "end_index": "TaskEnd",
              "cards_held": "TaskCardsHeld", "cards_billed": "TaskCardsBilled",
              "gpu_hours_per_month": "TaskGpuHours", "monthly_cost": "TaskMonthlyCost",
              "period_cost": "TaskPeriodCost", "active_months": "TaskActiveMonths"}
_PLACEHOLDER = re.compile(r"\{([a-z_]+)(?:\.([a-z_]+))?\}")


def camel(key: str) -> str:
    return "".join(part.capitalize() for part in key.split("_"))


class Formats:
    """Cell formats, created once per workbook and reused."""

    def __init__(self, wb, currency: str):
        symbol = CURRENCY_SYMBOL.get(currency)
        money = f'"{symbol}"#,##0' if symbol else f'#,##0 "{currency}"'
        price = f'"{symbol}"#,##0.00' if symbol else f'#,##0.00 "{currency}"'
        base = {"font_name": "Calibri", "font_size": 10}
        self._wb = wb
        self._cache: dict[tuple, object] = {}
        self.base = base
        self.num = {"number": "#,##0.00", "int": "#,##0", "money": money, "price": price, "percent": "0.0%",
                    "sci": "0.00E+00", "text": "@", "general": "General", "flag": "General"}
        self.header = wb.add_format({**base, "bold": True, "bg_color": "#1F3864", "font_color": "#FFFFFF",
                                     "text_wrap": True, "valign": "top", "border": 1})
        self.title = wb.add_format({**base, "bold": True, "font_size": 14})
        self.bold = wb.add_format({**base, "bold": True})
        self.note = wb.add_format({**base, "italic": True, "font_color": "#595959"})
        self.warn = wb.add_format({**base, "font_color": "#9C5700", "bg_color": "#FFEB9C"})

    def get(self, role: str, fmt: str = "general"):
        """role: input (blue on light yellow), calc (black), link (green), total (bold calc)."""
        key = (role, fmt)
        if key not in self._cache:
            props = {**self.base, "num_format": self.num.get(fmt, fmt)}
            if role == "input":
                props.update(font_color="#0000FF", bg_color="#FFF2CC", locked=False)
            elif role == "link":
                props.update(font_color="#00803C")
            elif role == "total":
                props.update(bold=True, top=1)
            self._cache[key] = self._wb.add_format(props)
        return self._cache[key]


def cached(value):
    """A Python result as a formula's cached value: None is the sheet's empty string."""
    if value is None:
        return ""
    if value.__class__ is float and not math.isfinite(value):
        return "#NUM!"
    return value


@dataclass
class Layout:
    """Where the task tables put each column (letters) and their first and last data rows."""

    columns: dict[str, int]
    first: int
    last: int

    def ref(self, key: str, row: int, absolute_col: bool = True) -> str:
        return xl_rowcol_to_cell(row, self.columns[key], col_abs=absolute_col)


def compile_formula(template: str, layout: Layout, tasks: Layout | None = None) -> str:
    """A column's formula as a format string over the row `r`: {col} to `$X{r}`, {gpu.x} to a GPUs lookup.

    With `tasks`, a column the layout lacks is read from the task's row `t` on the Tasks sheet.
    """
    def cell(name: str) -> str:
        if name in layout.columns:
            return f"${xl_col_to_name(layout.columns[name])}{{r}}"
        return f"Tasks!${xl_col_to_name(tasks.columns[name])}{{t}}"

    def sub(match: re.Match) -> str:
        name, field = match.groups()
        if name == "gpu" and field:
            return f"INDEX({GPU_NAMES[field]},MATCH({cell('gpu')},GpuName,0))"
        return cell(name)
    return _PLACEHOLDER.sub(sub, template)


# Every function budgetgen writes; all exist in Excel 2010+, LibreOffice 7.4 and `formulas`, none needs
# xlsxwriter's `_xlfn.` future-function prefix (a test holds every generated formula to this list).
SAFE_FUNCTIONS = frozenset({"IF", "AND", "OR", "INDEX", "MATCH", "MIN", "MAX", "CEILING", "CHOOSE", "IFERROR",
                            "ISNUMBER", "SUM", "SUMIFS", "SUMPRODUCT", "ABS", "TRIM", "SEARCH", "EXACT"})


class FormulaSheet(Worksheet):
    """A worksheet that stores budgetgen's formulas as written.

    xlsxwriter rewrites every formula with some 150 regular expressions to prefix future functions;
    budgetgen uses none (SAFE_FUNCTIONS), and the rewriting dominated the time of large builds.
    """

    def _prepare_formula(self, formula, expand_future_functions=False):
        return formula.removeprefix("=")

    def put_formula(self, row: int, col: int, formula: str, cell_format, value) -> None:
        """write_formula for budgetgen's own plain formulas (no array or dynamic-array forms), without its checks."""
        if self.constant_memory and row > self.previous_row:
            self._write_single_row(row)
        self._check_dimensions(row, col)
        self.table[row][col] = CellFormulaTuple(formula, cell_format, value)


class BudgetWriter:
    """Writes one Plan into one workbook; one method per sheet."""

    def __init__(self, plan: Plan, path: Path, lang: str = "en"):
        self.plan = plan
        self.lang = lang
        self.s = plan.inputs.settings
        self.months = plan.months
        self.wb = xlsxwriter.Workbook(str(path), {"use_future_functions": True, "strings_to_formulas": False,
                                                   "strings_to_urls": False, "strings_to_numbers": False,
                                                   "constant_memory": True, "tmpdir": str(Path(path).parent)})
        built = dt.datetime.combine(dt.date.fromisoformat(self.s.build_date), dt.time(), dt.UTC)
        self.wb.set_properties({"title": "GPU budget", "subject": "budgetgen plan", "author": "budgetgen",
                                "created": built, "comments": f"budgetgen {__version__}"})
        self.f = Formats(self.wb, self.s.currency)
        self.sheets = {name: self.wb.add_worksheet(name, FormulaSheet) for name in (
            "Summary", "Assumptions", "GPUs", "Tasks", "Monthly", "Tiers", "Candidates", "BuyVsRent",
            "Extras", "Checks")}
        n = len(plan.tasks)
        self.task_layout = Layout({}, 1, n)

    # ------------------------------------------------------------ helpers
    def name_range(self, name: str, sheet: str, first_row: int, last_row: int, col: int) -> None:
        c = xl_col_to_name(col)
        self.wb.define_name(name, f"='{sheet}'!${c}${first_row + 1}:${c}${max(last_row, first_row) + 1}")

    def t(self, text: str) -> str:
        """A visible text in the workbook's language."""
        return tr(text, self.lang)

    def titled(self, title: str, unit: str = "") -> str:
        """A header `title (unit)` in the workbook's language, `currency` in a unit as the plan's currency."""
        unit = self.t(unit).replace("currency", self.s.currency)
        return f"{self.t(title)} ({unit})" if unit else self.t(title)

    def header(self, ws, row: int, headers: list[str], widths: list[float] | None = None) -> None:
        for col, text in enumerate(headers):
            ws.write_string(row, col, self.t(text), self.f.header)
            if widths:
                ws.set_column(col, col, widths[col])

    def write_value(self, ws, row: int, col: int, value, role: str, fmt: str) -> None:
        fmt_obj = self.f.get(role, fmt)
        if value is None or value == "":
            ws.write_blank(row, col, None, fmt_obj)
        elif isinstance(value, str):
            ws.write_string(row, col, value, fmt_obj)
        elif isinstance(value, bool):
            ws.write_boolean(row, col, value, fmt_obj)
        else:
            ws.write_number(row, col, value, fmt_obj)

    def formula(self, ws, row: int, col: int, formula: str, value, fmt: str = "number", role: str = "calc"):
        ws.write_formula(row, col, formula, self.f.get(role, fmt), cached(value))

    # ------------------------------------------------------------ Assumptions
    def write_assumptions(self) -> None:
        ws = self.sheets["Assumptions"]
        self.header(ws, 0, ["setting", "value", "unit", "meaning", "name"], [24, 16, 22, 80, 22])
        row = 1
        for setting in SETTINGS:
            if setting.key.startswith("tier_cap_"):
                continue
            value = getattr(self.s, setting.key)
            fmt = "percent" if setting.type == "percent" else "general"
            ws.write_string(row, 0, input_name(setting.key, self.lang))
            self.write_value(ws, row, 1, value, "input", fmt)
            ws.write_string(row, 2, self.t(setting.unit))
            note = " (structure: change it in the input workbook and rebuild)" if setting.structural else ""
            ws.write_string(row, 3, self.t(setting.help) + self.t(note))
            ws.write_string(row, 4, setting.name)
            self.wb.define_name(setting.name, f"=Assumptions!$B${row + 1}")
            row += 1
        ws.write_string(row, 0, "days_per_month")
        self.formula(ws, row, 1, "=HoursPerMonth/HoursPerDay", self.s.hours_per_month / 24)
        ws.write_string(row, 2, self.t("days"))
        ws.write_string(row, 3, self.t("billing days in a month = hours_per_month / 24"))
        ws.write_string(row, 4, "DaysPerMonth")
        self.wb.define_name("DaysPerMonth", f"=Assumptions!$B${row + 1}")
        row += 2
        self.header(ws, row, ["constant", "value", "", "meaning", "name"])
        row += 1
        for name, value, meaning in CONSTANTS + (("CheckTolerance", CHECK_TOLERANCE, "relative tolerance of Checks"),):
            ws.write_string(row, 0, name)
            self.write_value(ws, row, 1, value, "input", "General")
            ws.write_string(row, 3, self.t(meaning))
            ws.write_string(row, 4, name)
            self.wb.define_name(name, f"=Assumptions!$B${row + 1}")
            row += 1
        row += 1
        self.header(ws, row, ["tier", "cap a month", "unit", "meaning", "name"])
        first = row + 1
        for i, tier in enumerate(TIERS):
            r = first + i
            ws.write_string(r, 0, tier, self.f.get("input", "text"))
            self.write_value(ws, r, 1, getattr(self.s, f"tier_cap_{tier}"), "input", "money")
            ws.write_string(r, 2, self.t("currency/month"))
            ws.write_string(r, 3, self.t("optional budget cap for the {tier} tier (blank: none)").format(
                tier=word(tier, self.lang)))
            ws.write_string(r, 4, f"TierCap{camel(tier)}")
            self.wb.define_name(f"TierCap{camel(tier)}", f"=Assumptions!$B${r + 1}")
        self.name_range("TierList", "Assumptions", first, first + len(TIERS) - 1, 0)
        self.name_range("TierCaps", "Assumptions", first, first + len(TIERS) - 1, 1)
        row = first + len(TIERS) + 1
        self.header(ws, row, ["plan month", "#", "", "", ""])
        for i, month in enumerate(self.months):
            ws.write_string(row + 1 + i, 0, month, self.f.get("input", "text"))
            ws.write_number(row + 1 + i, 1, i + 1)
        self.name_range("PlanMonths", "Assumptions", row + 1, row + len(self.months), 0)
        row += len(self.months) + 2
        self.header(ws, row, ["flag", "action next month", "", "", "name"])
        for i, (flag, action) in enumerate(ACTIONS.items(), start=row + 1):
            ws.write_string(i, 0, flag)
            ws.write_string(i, 1, self.t(action), self.f.get("input", "text"))
            ws.write_string(i, 4, f"Action{camel(flag)}")
            self.wb.define_name(f"Action{camel(flag)}", f"=Assumptions!$B${i + 1}")
        ws.freeze_panes(1, 0)

    # ------------------------------------------------------------ GPUs
    def write_gpus(self) -> None:
        ws = self.sheets["GPUs"]
        gpus = self.plan.inputs.gpus
        cols = [c.name for c in GPU_COLUMNS]
        self.header(ws, 0, [self.titled(input_name(c.name, self.lang), c.unit) for c in GPU_COLUMNS],
                    [14, 12, 10, 12, 10, 12, 9, 14, 14, 12, 12, 14, 9, 60, 10])
        fmt = {"scaling": "percent", "on_demand_per_hour": "price", "monthly_per_card": "money",
               "idle_per_hour": "price", "spot_per_hour": "price", "purchase_price": "money"}
        for i, g in enumerate(gpus, start=1):
            values = {"gpu": g.name, "class": g.gpu_class, "vram_gb": g.vram_gb, "bandwidth_gbs": g.bandwidth_gbs,
                      "tflops": g.tflops, "interconnect": g.interconnect, "scaling": g.scaling,
                      "on_demand_per_hour": g.prices["on_demand"], "monthly_per_card": g.prices["monthly"],
                      "idle_per_hour": g.prices["idle"], "spot_per_hour": g.prices["spot"],
                      "purchase_price": g.purchase_price, "power_w": g.power_w, "source": g.source,
                      "as_of": g.as_of}
            for col, key in enumerate(cols):
                self.write_value(ws, i, col, values[key], "input", fmt.get(key, "general"))
        for col, key in enumerate(cols):
            if key in GPU_NAMES:
                self.name_range(GPU_NAMES[key], "GPUs", 1, len(gpus), col)
        ws.freeze_panes(1, 1)
        ws.autofilter(0, 0, len(gpus), len(cols) - 1)

    # ------------------------------------------------------------ Tasks and Candidates
    def _write_task_rows(self, ws, layout: Layout, after_row) -> None:
        """One row per task: the inputs as values, then one formula per calculated column."""
        input_fmt = {c.name: ("percent" if c.type == "percent" else "text" if c.type in ("text", "choice", "month")
                              else "general") for c in TASK_COLUMNS}
        compiled = [(calc.key, layout.columns[calc.key], compile_formula(calc.excel, layout).format,
                     self.f.get("calc", calc.fmt)) for calc in CALCS]
        for i, tp in enumerate(self.plan.tasks):
            r = layout.first + i
            row = {**tp.task.values, **tp.row}
            for column in TASK_COLUMNS:
                self.write_value(ws, r, layout.columns[column.name], row.get(column.name), "input",
                                 input_fmt[column.name])
            for key, col, formula, fmt in compiled:
                ws.put_formula(r, col, formula(r=r + 1), fmt, cached(row[key]))
            after_row(r, i)

    def _task_headers(self, layout: Layout, ws, labels: dict[str, str]) -> None:
        units = {c.name: c.unit for c in TASK_COLUMNS}
        units.update({c.key: c.unit for c in CALCS})
        titles = {c.key: c.header for c in CALCS}
        for key, col in layout.columns.items():
            ws.write_string(0, col, self.titled(labels.get(key) or titles.get(key) or input_name(key, self.lang), units.get(key, "")),
                            self.f.header)
            ws.set_column(col, col, 14 if key not in ("task", "tier_advice") else 28)
        ws.set_row(0, 45)

    def write_tasks(self) -> None:
        ws = self.sheets["Tasks"]
        keys = [c.name for c in TASK_COLUMNS] + [c.key for c in CALCS]
        layout = Layout({k: i for i, k in enumerate(keys)}, 1, len(self.plan.tasks))
        self.task_layout = layout
        self._task_headers(layout, ws, {"gpu": "gpu (chosen)"})
        extra_col = len(layout.columns)
        headers = self.plan.inputs.extra_headers
        for j, header in enumerate(headers):
            ws.write_string(0, extra_col + j, header, self.f.header)

        def extra_columns(r: int, i: int) -> None:
            for j, header in enumerate(headers):
                value = self.plan.tasks[i].task.extra.get(header)
                self.write_value(ws, r, extra_col + j, value.isoformat() if hasattr(value, "isoformat") else value,
                                 "input", "general")

        self._write_task_rows(ws, layout, extra_columns)
        for key, name in TASK_NAMES.items():
            self.name_range(name, "Tasks", layout.first, layout.last, layout.columns[key])
        ws.freeze_panes(1, 1)
        ws.autofilter(0, 0, layout.last, extra_col + len(self.plan.inputs.extra_headers) - 1)

    def write_candidates(self) -> None:
        """Every catalog GPU per task: the GPU-dependent formula columns, reading the rest from Tasks."""
        ws = self.sheets["Candidates"]
        lead = ["task_id", "gpu", "chosen", "excluded", "cards"]
        calcs = [c for c in CALCS if c.key not in CANDIDATE_FROM_TASKS]
        layout = Layout({k: i for i, k in enumerate(lead + [c.key for c in calcs])}, 1, 0)
        self._task_headers(layout, ws, {"excluded": "excluded because", "cards": "cards given"})
        compiled = [(c.key, layout.columns[c.key], compile_formula(c.excel, layout, self.task_layout).format,
                     self.f.get("calc", c.fmt)) for c in calcs]
        r = 1
        for i, tp in enumerate(self.plan.tasks):
            t = self.task_layout.first + i + 1
            for c in tp.candidates:
                for col, value in enumerate((tp.task.task_id, c.gpu, self.t("chosen") if c.chosen else "", c.excluded,
                                             c.row["cards"])):
                    self.write_value(ws, r, col, value, "input" if col in (1, 4) else "calc", "general")
                values = c.row
                for key, col, formula, fmt in compiled:
                    ws.put_formula(r, col, formula(r=r + 1, t=t), fmt, cached(values[key]))
                r += 1
        ws.set_column(layout.columns["excluded"], layout.columns["excluded"], 40)
        ws.freeze_panes(1, 2)
        ws.autofilter(0, 0, r - 1, len(layout.columns) - 1)

    # ------------------------------------------------------------ Monthly and Extras matrices
    def _month_header(self, ws, first_col: int) -> None:
        for j, month in enumerate(self.months):
            ws.write_string(0, first_col + j, month, self.f.header)
            ws.write_number(1, first_col + j, j + 1, self.f.get("input", "int"))
            ws.set_column(first_col + j, first_col + j, 13)
        ws.write_string(1, 0, self.t("month #"), self.f.note)

    def write_monthly(self) -> None:
        ws = self.sheets["Monthly"]
        t = self.task_layout
        links = ["task_id", "task", "kind", "tier", "gpu", "cost_center", "monthly_cost"]
        self.header(ws, 0, links, [10, 28, 10, 10, 12, 14, 14])
        first_month = len(links)
        self._month_header(ws, first_month)
        for i, tp in enumerate(self.plan.tasks):
            r, src = 2 + i, t.first + i
            values = {**tp.task.values, **tp.row}
            for col, key in enumerate(links):
                fmt = "money" if key == "monthly_cost" else "text"
                ref = t.ref(key, src)
                self.formula(ws, r, col, f'=IF(Tasks!{ref}="","",Tasks!{ref})', values.get(key), fmt, "link")
            for j in range(len(self.months)):
                k = xl_rowcol_to_cell(1, first_month + j, row_abs=True)
                formula = (f"=IF(AND({k}>=Tasks!{t.ref('start_index', src)},{k}<=Tasks!{t.ref('end_index', src)}),"
                           f"Tasks!{t.ref('monthly_cost', src)},0)")
                self.formula(ws, r, first_month + j, formula, tp.cost_in(j + 1), "money")
        ws.freeze_panes(2, 2)
        ws.autofilter(0, 0, 1 + len(self.plan.tasks), first_month + len(self.months) - 1)
        self.monthly_first_col = first_month

    def write_extras(self) -> None:
        ws = self.sheets["Extras"]
        cols = ["item", "category", "monthly_cost", "start_month", "end_month", "start #", "end #"]
        self.header(ws, 0, cols, [28, 12, 14, 12, 12, 8, 8])
        first_month = len(cols)
        self._month_header(ws, first_month)
        extras = self.plan.inputs.extras
        months = list(self.months)
        for i, e in enumerate(extras):
            r = 2 + i
            self.write_value(ws, r, 0, e.item, "input", "text")
            self.write_value(ws, r, 1, e.category, "input", "text")
            self.write_value(ws, r, 2, e.monthly_cost, "input", "money")
            self.write_value(ws, r, 3, e.start_month, "input", "text")
            self.write_value(ws, r, 4, e.end_month, "input", "text")
            self.formula(ws, r, 5, f"=MATCH(D{r + 1},PlanMonths,0)", months.index(e.start_month) + 1, "int")
            self.formula(ws, r, 6, f"=MATCH(E{r + 1},PlanMonths,0)", months.index(e.end_month) + 1, "int")
            for j, month in enumerate(months):
                k = xl_rowcol_to_cell(1, first_month + j, row_abs=True)
                self.formula(ws, r, first_month + j, f"=IF(AND({k}>=$F{r + 1},{k}<=$G{r + 1}),$C{r + 1},0)",
                             self.plan.extras_by_month[month][i], "money")
        ws.freeze_panes(2, 1)
        self.extras_last_row = 1 + max(1, len(extras))

    # ------------------------------------------------------------ Tiers
    def write_tiers(self) -> None:
        ws = self.sheets["Tiers"]
        self.header(ws, 0, ["tier", "month", "month #", "cards billed", "GPU-hours", self.titled("cost", "currency"),
                            self.titled("cap", "currency"), "over cap?"], [12, 10, 8, 12, 12, 14, 14, 10])
        r = 1
        for tier in TIERS:
            tasks = [tp for tp in self.plan.tasks if tp.row["tier"] == tier]
            cap = getattr(self.s, f"tier_cap_{tier}")
            for j, month in enumerate(self.months, start=1):
                active = [tp for tp in tasks if tp.row["start_index"] <= j <= tp.row["end_index"]]
                ws.write_string(r, 0, tier)
                ws.write_string(r, 1, month)
                ws.write_number(r, 2, j)
                sel = f"(TaskTier=$A{r + 1})*(TaskStart<=$C{r + 1})*(TaskEnd>=$C{r + 1})"
                self.formula(ws, r, 3, f"=SUMPRODUCT({sel}*TaskCardsBilled)",
                             sum(tp.row["cards_billed"] for tp in active), "int")
                self.formula(ws, r, 4, f"=SUMPRODUCT({sel}*TaskGpuHours)",
                             math.fsum(tp.row["gpu_hours_per_month"] for tp in active), "number")
                self.formula(ws, r, 5, f"=SUMPRODUCT({sel}*TaskMonthlyCost)", self.plan.tier_totals[tier][month],
                             "money")
                self.formula(ws, r, 6, f'=IF(INDEX(TierCaps,MATCH($A{r + 1},TierList,0))="","",'
                             f"INDEX(TierCaps,MATCH($A{r + 1},TierList,0)))", cap, "money", "link")
                over = "" if cap is None else ("OVER" if self.plan.tier_totals[tier][month] > cap else "ok")
                self.formula(ws, r, 7, f'=IF(G{r + 1}="","",IF(F{r + 1}>G{r + 1},"OVER","ok"))', over, "text")
                r += 1
        ws.conditional_format(1, 7, r - 1, 7, {"type": "cell", "criteria": "==", "value": '"OVER"',
                                               "format": self.f.warn})
        ws.freeze_panes(1, 2)
        ws.autofilter(0, 0, r - 1, 7)

    # ------------------------------------------------------------ BuyVsRent
    def write_buy_vs_rent(self) -> None:
        ws = self.sheets["BuyVsRent"]
        cur = self.s.currency
        self.header(ws, 0, ["gpu", f"{self.t('purchase')} ({cur}{self.t('/card')})", "power (W)",
                            f"{self.t('on demand')} ({cur}{self.t('/h')})", f"{self.t('fixed')} ({cur}{self.t('/day')})",
                            f"{self.t('energy')} ({cur}{self.t('/h')})", "break-even (h/day)", "plan use (h/day/card)",
                            "verdict"], [14, 14, 10, 14, 14, 12, 14, 16, 10])
        for i, b in enumerate(self.plan.buy_vs_rent, start=1):
            g = self.plan.inputs.gpu(b.gpu)
            n = i + 1
            ws.write_string(i, 0, b.gpu)
            lookup = "INDEX({},MATCH($A{},GpuName,0))"
            self.formula(ws, i, 1, "=" + lookup.format("GpuPurchase", n), g.purchase_price, "money", "link")
            self.formula(ws, i, 2, "=" + lookup.format("GpuPowerW", n), g.power_w or 0, "int", "link")
            self.formula(ws, i, 3, "=" + lookup.format("GpuOnDemand", n), g.prices["on_demand"] or 0, "price", "link")
            self.formula(ws, i, 4, f"=B{n}/(DepreciationYears*DaysPerYear)+UpkeepPerYear/DaysPerYear",
                         b.daily_fixed, "price")
            self.formula(ws, i, 5, f"=C{n}/WattsPerKw*ElectricityPerKwh", b.energy_per_hour, "price")
            self.formula(ws, i, 6, f'=IF(D{n}-F{n}>0,E{n}/(D{n}-F{n}),"")', b.break_even_hours_per_day, "number")
            sel = f"(TaskGpu=$A{n})*TaskActiveMonths"
            self.formula(ws, i, 7, f"=SUMPRODUCT({sel}*TaskGpuHours)/PeriodMonths/DaysPerMonth/"
                         f"(SUMPRODUCT({sel}*TaskCardsHeld)/PeriodMonths)", b.plan_hours_per_day, "number")
            self.formula(ws, i, 8, f'=IF(AND(G{n}<>"",H{n}>G{n}),"buy","rent")', b.verdict, "text")
        note = len(self.plan.buy_vs_rent) + 2
        ws.write_string(note, 0, self.t("Buy when each owned card would be used more hours a day than the "
                                        "break-even; owning pays only for steady, long daily use."), self.f.note)

    # ------------------------------------------------------------ Summary
    def write_summary(self) -> None:
        ws = self.sheets["Summary"]
        plan, cur = self.plan, self.s.currency
        n_tasks = len(plan.tasks)
        months = list(self.months)
        ws.set_column(0, 0, 26)
        ws.set_column(1, 1 + len(months), 15)
        ws.write_string(0, 0, f"{self.t('GPU budget')} {months[0]} {self.t('to')} {months[-1]} ({cur})", self.f.title)
        ws.write_string(2, 0, self.t("Period total"), self.f.bold)
        top = 5 + len(months)  # total row of the month table
        self.formula(ws, 2, 1, f"=E{top + 1}", plan.period_total, "money", "total")
        # per-month table
        self.header(ws, 4, ["month", "GPU", "extras", "hidden-cost buffer", "total"])
        m0 = self.monthly_first_col
        for j, month in enumerate(months):
            r = 5 + j
            col = xl_col_to_name(m0 + j)
            ecol = xl_col_to_name(7 + j)
            t = plan.month_totals[month]
            ws.write_string(r, 0, month)
            self.formula(ws, r, 1, f"=SUM(Monthly!{col}3:{col}{max(2, 1 + n_tasks) + 1})", t.gpu, "money")
            self.formula(ws, r, 2, f"=SUM(Extras!{ecol}3:{ecol}{self.extras_last_row + 1})", t.extras, "money")
            self.formula(ws, r, 3, f"=B{r + 1}*BufferRate", t.buffer, "money")
            self.formula(ws, r, 4, f"=B{r + 1}+C{r + 1}+D{r + 1}", t.total, "money")
        ws.write_string(top, 0, self.t("Total"), self.f.bold)
        totals = [math.fsum(getattr(plan.month_totals[m], k) for m in months) for k in ("gpu", "extras", "buffer")]
        for c, value in enumerate(totals + [plan.period_total], start=1):
            col = xl_col_to_name(c)
            self.formula(ws, top, c, f"=SUM({col}6:{col}{top})", value, "money", "total")
        self.summary_rows = {"gpu_total": f"Summary!B{top + 1}", "extras_total": f"Summary!C{top + 1}",
                             "buffer_total": f"Summary!D{top + 1}", "period_total": f"Summary!E{top + 1}"}
        r = top + 2
        r = self._summary_by_tier(ws, r, m0, n_tasks)
        r = self._summary_by_group(ws, r, "by kind", "TaskKind", KINDS)
        centers = list(dict.fromkeys(tp.task.values["cost_center"] for tp in plan.tasks))
        r = self._summary_by_group(ws, r, "by cost center", "TaskCostCenter", centers)
        ws.write_string(r, 0, self.t("Warnings"), self.f.bold)
        for i, w in enumerate(plan.warnings or ("none",), start=1):
            ws.write_string(r + i, 0, say(w, self.lang), self.f.warn if plan.warnings else self.f.note)
        ws.set_landscape()
        ws.fit_to_pages(1, 0)

    def _summary_by_tier(self, ws, r: int, m0: int, n_tasks: int) -> int:
        months = list(self.months)
        self.header(ws, r, ["by tier"] + months + ["period"])
        last = max(2, 1 + n_tasks) + 1
        for i, tier in enumerate(TIERS, start=1):
            row = r + i
            ws.write_string(row, 0, tier)
            for j, month in enumerate(months):
                col = xl_col_to_name(m0 + j)
                self.formula(ws, row, 1 + j, f"=SUMIFS(Monthly!{col}3:{col}{last},Monthly!$D$3:$D${last},$A{row + 1})",
                             self.plan.tier_totals[tier][month], "money")
            end = xl_col_to_name(len(months))
            self.formula(ws, row, 1 + len(months), f"=SUM(B{row + 1}:{end}{row + 1})",
                         math.fsum(self.plan.tier_totals[tier].values()), "money", "total")
        chart = self.wb.add_chart({"type": "column", "subtype": "stacked"})
        for i in range(1, len(TIERS) + 1):
            chart.add_series({"name": ["Summary", r + i, 0], "categories": ["Summary", r, 1, r, len(months)],
                              "values": ["Summary", r + i, 1, r + i, len(months)]})
        chart.set_title({"name": self.t("Monthly GPU cost by tier")})
        chart.set_y_axis({"num_format": self.f.num["money"]})
        ws.insert_chart(1, len(months) + 3, chart, {"x_scale": 1.3, "y_scale": 1.1})
        self.tier_period_range = f"Summary!{xl_col_to_name(1 + len(months))}{r + 2}:" \
                                 f"{xl_col_to_name(1 + len(months))}{r + 1 + len(TIERS)}"
        return r + len(TIERS) + 2

    def _summary_by_group(self, ws, r: int, label: str, name: str, groups) -> int:
        self.header(ws, r, [label, self.titled("period cost", "currency")])
        key = "kind" if name == "TaskKind" else "cost_center"
        for i, group in enumerate(groups, start=1):
            ws.write_string(r + i, 0, group)
            value = math.fsum(tp.row["period_cost"] for tp in self.plan.tasks if tp.task.values[key] == group)
            # EXACT, not SUMIFS: criteria would ignore case and read * ? ~ as wildcards.
            self.formula(ws, r + i, 1, f"=SUMPRODUCT(EXACT({name},$A{r + i + 1})*TaskPeriodCost)", value, "money")
        setattr(self, f"group_range_{key}", f"Summary!B{r + 2}:B{r + 1 + len(groups)}")
        return r + len(groups) + 2

    # ------------------------------------------------------------ Checks
    def write_checks(self) -> None:
        ws = self.sheets["Checks"]
        plan = self.plan
        gpu_total = math.fsum(t.gpu for t in plan.month_totals.values())
        extras_total = math.fsum(t.extras for t in plan.month_totals.values())
        m0, n = xl_col_to_name(self.monthly_first_col), len(self.months)
        m1 = xl_col_to_name(self.monthly_first_col + n - 1)
        e1 = xl_col_to_name(7 + n - 1)
        last = max(2, 1 + len(plan.tasks)) + 1
        checks = [
            ("task x month matrix = Summary GPU total", f"=SUM(Monthly!{m0}3:{m1}{last})",
             self.summary_rows["gpu_total"], gpu_total),
            ("tasks' period cost = Summary GPU total", "=SUM(TaskPeriodCost)", self.summary_rows["gpu_total"],
             gpu_total),
            ("by tier = Summary GPU total", f"=SUM({self.tier_period_range})", self.summary_rows["gpu_total"],
             gpu_total),
            ("Tiers sheet cost = Summary GPU total", f"=SUM(Tiers!F2:F{1 + len(TIERS) * n})",
             self.summary_rows["gpu_total"], gpu_total),
            ("by kind = Summary GPU total", f"=SUM({self.group_range_kind})", self.summary_rows["gpu_total"],
             gpu_total),
            ("by cost center = Summary GPU total", f"=SUM({self.group_range_cost_center})",
             self.summary_rows["gpu_total"], gpu_total),
            ("extras matrix = Summary extras total", f"=SUM(Extras!H3:{e1}{self.extras_last_row + 1})",
             self.summary_rows["extras_total"], extras_total),
            ("GPU + extras + buffer = period total",
             (f"={self.summary_rows['gpu_total']}+{self.summary_rows['extras_total']}+"
             f"{self.summary_rows['buffer_total']}"), self.summary_rows["period_total"], plan.period_total),
            ("buffer = rate x GPU total", f"={self.summary_rows['gpu_total']}*BufferRate",
             self.summary_rows["buffer_total"], gpu_total * self.s.hidden_cost_buffer),
        ]
        self.write_check_rows(ws, checks)

    def write_check_rows(self, ws, checks: list[tuple[str, str, str, float]]) -> None:
        self.header(ws, 0, ["check", "computed", "expected", "ties out?"], [44, 16, 16, 10])
        ws.write_string(1, 0, self.t("ALL CHECKS"), self.f.bold)
        last = len(checks) + 2
        self.formula(ws, 1, 3, f"=AND(D3:D{last})", True, "general", "total")
        for i, (label, left, right, value) in enumerate(checks, start=2):
            r = i + 1
            ws.write_string(i, 0, self.t(label))
            self.formula(ws, i, 1, left, value, "money")
            self.formula(ws, i, 2, "=" + right.lstrip("="), value, "money", "link")
            self.formula(ws, i, 3, f"=ABS(B{r}-C{r})<=CheckTolerance*MAX(1,ABS(C{r}))", True, "general")
        ws.conditional_format(1, 3, last - 1, 3, {"type": "cell", "criteria": "==", "value": "FALSE",
                                                  "format": self.f.warn})
        ws.freeze_panes(2, 0)

    def write_about(self) -> None:
        ws = self.sheets["About"] = self.wb.add_worksheet("About", FormulaSheet)
        inputs = self.plan.inputs
        ws.set_column(0, 0, 26)
        ws.set_column(1, 1, 100)
        ws.write_string(0, 0, self.t("About this workbook"), self.f.title)
        rows = [("made by", f"budgetgen {__version__}"), ("input file", inputs.source_name),
                ("input SHA-256", inputs.source_sha256), ("build date", self.s.build_date),
                ("plan", f"{self.months[0]} {self.t('to')} {self.months[-1]}, {self.s.currency}")]
        rows += [(f"{self.t('setting')} {input_name(s.key, self.lang)}", "" if getattr(self.s, s.key) is None else str(getattr(self.s, s.key)))
                 for s in SETTINGS]
        rows += [("how to read", self.t(line)) for line in HOW_TO_READ]
        for i, (label, text) in enumerate(rows, start=2):
            ws.write_string(i, 0, self.t(label), self.f.bold)
            ws.write_string(i, 1, text)

    def write(self, progress: Callable[[str], None] = lambda message: None) -> None:
        """Write every sheet, telling `progress` about each stage, and close the file."""
        check_excel_limits(self.plan)
        n = len(self.plan.tasks)
        stages = ((self.write_assumptions, "Assumptions"), (self.write_gpus, "GPUs"),
                  (self.write_tasks, f"Tasks ({n:,} rows)"),
                  (self.write_candidates, f"Candidates ({n * len(self.plan.inputs.gpus):,} rows)"),
                  (self.write_monthly, "Monthly"), (self.write_extras, "Extras"), (self.write_tiers, "Tiers"),
                  (self.write_buy_vs_rent, "BuyVsRent"), (self.write_summary, "Summary"),
                  (self.write_checks, "Checks"), (self.write_about, "About"))
        for method, label in stages:
            progress(f"writing {label}")
            method()
        for name in ("Summary", "Tasks", "Monthly", "Tiers", "BuyVsRent"):
            self.sheets[name].set_landscape()
            self.sheets[name].fit_to_pages(1, 0)
            self.sheets[name].repeat_rows(0)
        for ws in self.wb.worksheets():
            # No password: a guard against slips, not a lock. Inputs are unlocked, formulas are not.
            ws.protect("", {"autofilter": True, "sort": True, "format_columns": True, "format_rows": True})
        self.sheets["Summary"].activate()
        progress("compressing the workbook")
        self.wb.close()


EXCEL_MAX_ROWS = 1_048_576
HOW_TO_READ = (
    "Summary: the period total, each month (GPU + extras + hidden-cost buffer), by tier, kind and cost center.",
    ("Blue cells on light yellow are inputs: prices (GPUs), assumptions (Assumptions), the chosen GPU and the "
    "task inputs (Tasks). Change them and every formula recalculates; the sheets are protected without a "
    "password so that only input cells take typing."),
    ("Black cells are formulas, green cells are links to another sheet; every formula carries the value "
    "budgetgen computed, so the file reads correctly in any viewer."),
    "Checks must read TRUE in its first row: every total ties out to its parts.",
    ("Candidates shows every GPU for every task with its cost; Tiers the money per price tier against the caps; "
    "BuyVsRent whether owning a card pays; Recon tabs compare the plan with the cloud bill and GPU usage."),
)


def check_excel_limits(plan: Plan) -> None:
    """Refuse, before writing, a plan whose sheets would not fit in Excel (bill lines are aggregated already)."""
    rows = {"Tasks": len(plan.tasks) + 1, "Candidates": len(plan.tasks) * len(plan.inputs.gpus) + 1,
            "Tiers": 4 * len(plan.months) + 1}
    for sheet, needed in rows.items():
        if needed > EXCEL_MAX_ROWS:
            raise OutputError(f"the {sheet} sheet would need {needed:,} rows, more than Excel's {EXCEL_MAX_ROWS:,}: "
                              "split the inventory or shorten the GPUs sheet")


class ReconWriter(BudgetWriter):
    """A BudgetWriter that adds one `Recon YYYY-MM` tab per billed month and their Checks rows."""

    def __init__(self, plan: Plan, path: Path, recon: dict, billed_input: dict[str, float], lang: str = "en"):
        super().__init__(plan, path, lang)
        self.recon = recon
        self.billed_input = billed_input
        self.recon_checks: list[tuple[str, str, str, float]] = []

    def write_checks(self) -> None:
        for month in sorted(self.recon):
            self.write_recon(month, self.recon[month])
        super().write_checks()

    def write_check_rows(self, ws, checks) -> None:
        super().write_check_rows(ws, checks + self.recon_checks)

    def write_recon(self, month: str, mr) -> None:
        name = f"Recon {month}"
        ws = self.wb.add_worksheet(name, FormulaSheet)
        cur = self.s.currency
        ws.set_column(0, 0, 22)
        ws.set_column(1, 11, 14)
        ws.set_column(10, 10, 60)
        ws.write_string(0, 0, f"{self.t('Reconciliation')} {month}: {self.t('plan versus bill versus usage')} ({cur})",
                        self.f.title)
        r = self._recon_tasks(ws, month, mr, 2)
        task_rows = (3, r - 1)
        r = self._recon_resources(ws, mr, r + 1, task_rows)
        self._recon_totals(ws, name, month, mr, r + 1)
        ws.freeze_panes(1, 0)

    def _recon_tasks(self, ws, month: str, mr, r: int) -> int:
        self.header(ws, r, ["task", "planned", "billed", "variance", "variance %", "status"])
        months = list(self.months)
        index = {tp.task.task_id: i for i, tp in enumerate(self.plan.tasks)}
        tol = self.s.variance_tolerance
        first = r + 1
        for i, t in enumerate(mr.tasks):
            row = first + i
            n = row + 1
            ws.write_string(row, 0, t.task_id)
            if t.task_id in index and month in months:
                col = xl_col_to_name(self.monthly_first_col + months.index(month))
                self.formula(ws, row, 1, f"=Monthly!{col}{index[t.task_id] + 3}", t.planned, "money", "link")
            else:
                self.write_value(ws, row, 1, t.planned, "input", "money")
            self.write_value(ws, row, 2, t.billed, "input", "money")
            self.formula(ws, row, 3, f"=C{n}-B{n}", t.variance, "money")
            self.formula(ws, row, 4, f'=IF(B{n}=0,"",D{n}/B{n})', t.variance_pct, "percent")
            status = "over plan" if t.billed > t.planned * (1 + tol) else ""
            self.formula(ws, row, 5, f'=IF(C{n}>B{n}*(1+VarianceTolerance),"over plan","")', status, "text")
        last = first + max(1, len(mr.tasks)) - 1
        if mr.tasks:
            chart = self.wb.add_chart({"type": "column"})
            for col, label in ((1, "planned"), (2, "billed")):
                chart.add_series({"name": self.t(label), "categories": [ws.name, first, 0, last, 0],
                                  "values": [ws.name, first, col, last, col]})
            chart.set_title({"name": self.t("Plan versus bill by task")})
            ws.insert_chart(1, 13, chart)
        self.recon_task_range = (first, last)
        return last + 2

    def _recon_resources(self, ws, mr, r: int, task_rows) -> int:
        self.header(ws, r, ["resource", "task", "services", "lines", "billed", "hours", "avg util %",
                            "peak memory share", "OOM events", "flags", "action next month", "saving if acted on"])
        t0, t1 = (n + 1 for n in self.recon_task_range)
        first = r + 1
        for i, res in enumerate(mr.resources):
            row = first + i
            n = row + 1
            ws.write_string(row, 0, res.resource_id or "")
            ws.write_string(row, 1, res.task_id or "")
            ws.write_string(row, 2, ", ".join(res.services))
            ws.write_number(row, 3, res.lines)
            self.write_value(ws, row, 4, res.billed, "input", "money")
            for col, value, fmt in ((5, res.hours, "number"), (6, res.avg_util_pct, "number"),
                                    (7, res.mem_peak_share, "percent"), (8, res.oom_events, "int")):
                self.write_value(ws, row, col, None if value is None or math.isnan(value) else value, "input", fmt)
            flags = (f'=TRIM(IF(AND(ISNUMBER(G{n}),G{n}/PercentScale<LowUtilThreshold),"low_utilization ","")'
                     f'&IF(AND(ISNUMBER(I{n}),I{n}>=OomThreshold),"oom ","")'
                     f'&IF(AND(ISNUMBER(H{n}),ISNUMBER(G{n}),H{n}>DataStarvedMemShare,G{n}/PercentScale<DataStarvedUtil),'
                     f'"data_starved ","")&IF(B{n}="","",IF(IFERROR(INDEX($F${t0}:$F${t1},MATCH(B{n},$A${t0}:$A${t1},0)),'
                     f'"")="over plan","over_plan","")))')
            self.formula(ws, row, 9, flags, " ".join(res.flags), "text")
            action = "&".join(f'IF(ISNUMBER(SEARCH("{flag}",J{n})),Action{camel(flag)}&". ","")' for flag in ACTIONS)
            self.formula(ws, row, 10, f"=TRIM({action})", " ".join(self.t(ACTIONS[f]) + "." for f in res.flags),
                         "text")
            saving = res.billed if LOW_UTILIZATION in res.flags else 0
            self.formula(ws, row, 11, f'=IF(ISNUMBER(SEARCH("{LOW_UTILIZATION}",J{n})),E{n},0)', saving, "money")
        self.recon_resource_range = (first + 1, first + max(1, len(mr.resources)))
        return first + max(1, len(mr.resources)) + 1

    def _recon_totals(self, ws, name: str, month: str, mr, r: int) -> None:
        self.header(ws, r, ["non-GPU lines", "billed"])
        first = r + 1
        for i, (category, amount) in enumerate(sorted(mr.non_gpu.items())):
            ws.write_string(first + i, 0, self.t(category))
            self.write_value(ws, first + i, 1, amount, "input", "money")
        last = first + max(1, len(mr.non_gpu))
        a, b = self.recon_resource_range
        p0, p1 = (n + 1 for n in self.recon_task_range)
        months = list(self.months)
        rows = [("non-GPU billed", f"=SUM(B{first + 1}:B{last})", mr.non_gpu_billed, "calc")]
        if month in months:
            rows.append(("hidden-cost buffer reserved", f"=Summary!D{6 + months.index(month)}", mr.buffer_reserved,
                         "link"))
        else:
            rows.append(("hidden-cost buffer reserved", None, mr.buffer_reserved, "input"))
        n = last + 1
        rows += [
            ("buffer left", f"=B{n + 1}-B{n}", mr.buffer_reserved - mr.non_gpu_billed, "calc"),
            ("GPU billed to tasks", f'=SUMPRODUCT(($B${a}:$B${b}<>"")*$E${a}:$E${b})', mr.allocated_gpu, "calc"),
            ("unallocated GPU", f'=SUMPRODUCT(($B${a}:$B${b}="")*$E${a}:$E${b})', mr.unallocated, "calc"),
            ("billed total", f"=B{n}+B{n + 3}+B{n + 4}", mr.billed_total, "calc"),
            ("planned GPU total", f"=SUM(B{p0}:B{p1})", mr.planned_total, "calc"),
            ("BilledCost in the input", None, self.billed_input[month], "input"),
        ]
        for i, (label, formula, value, role) in enumerate(rows):
            row = last + i
            ws.write_string(row, 0, self.t(label), self.f.bold)
            if formula is None:
                self.write_value(ws, row, 1, value, role, "money")
            else:
                self.formula(ws, row, 1, formula, value, "money", role)
        total_row, input_row = last + 6, last + 8
        self.recon_checks.append((f"{name}: billed total = BilledCost of the month", f"='{name}'!B{total_row}",
                                  f"'{name}'!B{input_row}", self.billed_input[month]))


def why_not_writable(exc: OSError, folder: Path) -> str:
    """An OSError on an output folder in words a finance user can act on."""
    blocked = next((p for p in (folder, *folder.parents) if p.exists() and not p.is_dir()), None)
    if blocked is not None:
        return f"{blocked} is a file, not a folder; choose another path"
    return exc.strerror or str(exc)


def write_workbook(plan: Plan, out: Path, recon: dict | None = None, billed_input: dict | None = None,
                   progress: Callable[[str], None] = lambda message: None, lang: str = "en") -> Path:
    """Write the plan to `out` atomically: a temporary file in the same folder, then a rename."""
    out = Path(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{out.stem}-", suffix=".xlsx", dir=out.parent)
        os.close(fd)
    except OSError as exc:
        raise OutputError(f"cannot write to {out.parent}: {why_not_writable(exc, out.parent)}") from None
    try:
        if recon:
            ReconWriter(plan, Path(tmp), recon, billed_input or {}, lang).write(progress)
        else:
            BudgetWriter(plan, Path(tmp), lang).write(progress)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes the file private; the output is an ordinary file
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return out
