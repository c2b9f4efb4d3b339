"""Plan to budget workbook: every derived number a live formula with the engine's value cached.

One module per sheet; `layout` places every block before anything is written, and the sheets read
each other only through workbook-scoped names. `write_workbook` is the entry point.
"""

from __future__ import annotations

import datetime as dt
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

import xlsxwriter

from .. import __version__
from ..catalog.fx import plan_rates
from ..catalog.models import builtin_models
from ..core.errors import OutputError
from ..core.schema import TASK_TIERS
from ..io.safefile import EXCEL_MAX_ROWS, why_not_writable
from ..model.rules import CHECK_TOLERANCE
from ..plan.checks import recon_checks
from ..plan.engine import Plan, options_listed
from .about import write_about
from .assumptions import write_assumptions
from .book import SAFE_FUNCTIONS, Book, Sheet
from .budgets import write_budgets
from .buy_vs_rent import write_buy_vs_rent
from .candidates import write_candidates
from .checks import all_pass, plan_check_rows, write_checks
from .commitments import write_commitments
from .demand import write_demand
from .extras import write_extras
from .formats import Formats
from .gpus import write_gpus
from .layout import Layout, plan_layout
from .models import write_models
from .monthly import write_monthly
from .order import write_order
from .recon import recon_check, write_recon, write_resources_csv, write_resources_detail, write_saving_line
from .scenarios import write_scenarios
from .summary import write_reforecast, write_summary
from .task_list import write_task_list
from .tasks import write_tasks
from .tiers import write_tiers
from .xlsx_private import zip_level

__all__ = ["CHECK_TOLERANCE", "SAFE_FUNCTIONS", "Formats", "check_excel_limits", "resources_csv_paths", "why_not_writable",
           "write_workbook"]

SHEETS = ("Summary", "Order", "Assumptions", "GPUs", "Models", "Tasks", "TaskList", "Monthly", "Demand", "Tiers", "Candidates", "BuyVsRent", "Commitments", "Scenarios", "Budgets", "Extras",
          "Checks")


def check_excel_limits(plan: Plan) -> None:
    """Refuse, before writing, a plan whose sheets would not fit in Excel (bill lines are aggregated already)."""
    keep = options_listed(plan.inputs.settings, len(plan.tasks))
    per_task = len(plan.inputs.gpus) if keep is None else min(len(plan.inputs.gpus), keep + 1)
    rows = {"Tasks": len(plan.tasks) + 1, "Candidates": len(plan.tasks) * per_task + 1,
            "Tiers": len(TASK_TIERS) * len(plan.months) + 1}
    for sheet, needed in rows.items():
        if needed > EXCEL_MAX_ROWS:
            raise OutputError(f"the {sheet} sheet would need {needed:,} rows, more than Excel's {EXCEL_MAX_ROWS:,}: "
                              "split the inventory, shorten the GPUs sheet or lower candidates_per_task")


def _open(plan: Plan, path: Path, tmpdir: Path | None) -> xlsxwriter.Workbook:
    options: dict[str, bool | str] = {"strings_to_formulas": False, "strings_to_urls": False, "strings_to_numbers": False,
               "constant_memory": True}
    if tmpdir is not None:
        options["tmpdir"] = str(tmpdir)
    wb = xlsxwriter.Workbook(str(path), options)
    # A part past 2 GiB of XML (the Candidates sheet of a large inventory listing every card) needs ZIP64 in the zip
    # directory; zipfile adds it only to such a part, so every smaller workbook is byte for byte as without.
    wb.use_zip64()
    s = plan.inputs.settings
    built = dt.datetime.combine(s.build_day, dt.time(), dt.UTC)
    wb.set_properties({"title": "GPU budget", "subject": "budgetgen plan", "author": "budgetgen",
                       "created": built, "comments": f"budgetgen {__version__}"})
    return wb


def _write(plan: Plan, path: Path, recon: Mapping, billed_input: Mapping[str, float], lang: str,
           progress: Callable[[str], None], tmpdir: Path | None, stem: str) -> Layout:
    """Lay the workbook out, then write each sheet from the plan and the layout, and close the file; the layout
    written. `stem`: the workbook's name without .xlsx, which names the CSV files beside it."""
    check_excel_limits(plan)
    layout = plan_layout(plan, recon)
    wb = _open(plan, path, tmpdir)
    book = Book(wb, Formats(wb, plan.inputs.settings.currency, lang), lang, plan.inputs.settings.currency)
    ws = {name: wb.add_worksheet(name, Sheet) for name in SHEETS}
    for at in layout.recon.values():
        ws[at.sheet] = wb.add_worksheet(at.sheet, Sheet)
        if at.rest_rows and not at.rest_in_csv:
            ws[at.detail_sheet] = wb.add_worksheet(at.detail_sheet, Sheet)
    ws["About"] = wb.add_worksheet("About", Sheet)
    order = plan.order
    months = recon_checks(plan.inputs.settings, {m: recon[m] for m in layout.recon}, billed_input)
    checks = plan_check_rows(plan) + [recon_check(at, check)
                                      for at, check in zip(layout.recon.values(), months, strict=True)]
    n = len(plan.tasks)
    stages = [
        ("Assumptions", lambda: write_assumptions(book, ws["Assumptions"], plan.inputs.settings, plan.months,
                                                  layout.assumptions, plan_rates(plan.inputs))),
        ("GPUs", lambda: write_gpus(book, ws["GPUs"], plan.inputs.gpus, plan.inputs.settings)),
        ("Models", lambda: write_models(book, ws["Models"], plan.inputs.models or builtin_models())),
        (f"Tasks ({n:,} rows)", lambda: write_tasks(book, ws["Tasks"], plan, layout.tasks)),
        ("TaskList", lambda: write_task_list(book, ws["TaskList"], plan, layout.tasks)),
        (f"Candidates ({layout.candidate_rows:,} rows)",
         lambda: write_candidates(book, ws["Candidates"], plan, layout.candidates)),
        ("Demand", lambda: write_demand(book, ws["Demand"], plan, layout.demand)),
        ("Monthly", lambda: write_monthly(book, ws["Monthly"], plan, layout.monthly)),
        ("Extras", lambda: write_extras(book, ws["Extras"], plan, layout.extras)),
        ("Tiers", lambda: write_tiers(book, ws["Tiers"], plan, layout.tier_rows)),
        ("BuyVsRent", lambda: write_buy_vs_rent(book, ws["BuyVsRent"], plan)),
        ("Commitments", lambda: write_commitments(book, ws["Commitments"], plan, layout.commitments)),
        ("Summary", lambda: write_summary(book, ws["Summary"], plan, layout.summary,
                                          all_pass(checks))),
        ("Scenarios", lambda: write_scenarios(book, ws["Scenarios"], plan)),
        ("Budgets", lambda: write_budgets(book, ws["Budgets"], plan)),
        ("Order", lambda: write_order(book, ws["Order"], plan, order, layout.order)),
        ("Summary re-forecast", lambda: write_reforecast(book, ws["Summary"], plan, recon, layout.summary)),
        ("Summary saving", lambda: write_saving_line(book, ws["Summary"], recon, layout.summary)),
        *((f"Recon {m}", lambda m=m, at=at: write_recon(book, ws[at.sheet], plan, recon[m], at, billed_input[m],
                                                        stem))
          for m, at in layout.recon.items()),
        *((f"Resources {m} ({at.rest_rows:,} rows)",
           lambda m=m, at=at: write_resources_detail(book, ws[at.detail_sheet], plan, recon[m], at))
          for m, at in layout.recon.items() if at.rest_rows and not at.rest_in_csv),
        ("Checks", lambda: write_checks(book, ws["Checks"], checks)),
        ("About", lambda: write_about(book, ws["About"], plan)),
    ]
    for label, write in stages:
        progress(f"writing {label}")
        write()
    for sheet in wb.worksheets():
        # No password: a guard against slips, not a lock. Inputs are unlocked, formulas are not.
        sheet.protect("", {"autofilter": True, "sort": True, "format_columns": True, "format_rows": True})
    # The print pack for sign-off: Summary and Order selected together (Summary the active sheet), so Excel's "print
    # active sheets" and LibreOffice's "selected sheets" print these two by default; a detail sheet prints when
    # its tab is selected.
    ws["Summary"].activate()
    ws["Order"].select()
    progress("compressing the workbook")
    _close(wb)
    return layout


ZIP_LEVEL = 3  # zlib's level for the file's parts: a third of the default level's (6) time, about a fifth larger


def _close(wb: xlsxwriter.Workbook) -> None:
    """Close (zip) the workbook at ZIP_LEVEL. xlsxwriter always zips at zlib's default level, which took a third of
    a large build's time (the Candidates sheet of 10,000 tasks is 2 GB of XML), and has no option for the level:
    xlsx_private.zip_level replaces its ZipFile while it closes."""
    with zip_level(ZIP_LEVEL):
        wb.close()


def resources_csv_paths(plan: Plan, recon: Mapping, out: Path) -> list[Path]:
    """The CSV files write_workbook writes beside `out`: a month's resources its Recon tab does not list, when
    they are more than a Resources sheet holds (layout.RESOURCES_SHEET_MAX)."""
    return [Path(out).with_name(at.csv_name(Path(out).stem)) for at in plan_layout(plan, recon).recon.values()
            if at.rest_in_csv]


def write_workbook(plan: Plan, out: Path, recon: Mapping | None = None, billed_input: Mapping | None = None,
                   progress: Callable[[str], None] = lambda message: None, lang: str = "en",
                   tmpdir: Path | None = None) -> Path:
    """Write the plan (and its reconciliation months) to `out` atomically: a temporary file in the same
    folder, then a rename. `tmpdir` is where xlsxwriter keeps its temporary files while writing."""
    out = Path(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{out.stem}-", suffix=".xlsx", dir=out.parent)
        os.close(fd)
    except OSError as exc:
        raise OutputError(f"cannot write to {out.parent}: {why_not_writable(exc, out.parent)}") from None
    try:
        layout = _write(plan, Path(tmp), recon or {}, billed_input or {}, lang, progress, tmpdir, out.stem)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes the file private; the output is an ordinary file
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    for month, at in layout.recon.items():
        if at.rest_in_csv:
            progress(f"writing {at.csv_name(out.stem)} ({at.rest_rows:,} resources)")
            write_resources_csv(out.with_name(at.csv_name(out.stem)), (recon or {})[month], at)
    return out
