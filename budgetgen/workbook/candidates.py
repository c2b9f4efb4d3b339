"""Candidates: every catalog GPU per task, the GPU-dependent formula columns, then the provider and region of the
offer behind the GPU's prices (looked up on GPUs by name); the rest read from Tasks by name."""

from __future__ import annotations

from xlsxwriter.utility import xl_col_to_name

from ..columns import CALCS, CANDIDATE_FROM_TASKS
from ..engine import Plan
from .book import Book, ColumnBlock
from .layout import CANDIDATE_LEAD, CANDIDATE_OFFER, Table
from .printing import print_setup
from .tasks import column_headers, compile_formula

_VALUE_ROLES = {"gpu": "input", "cards": "input"}


def write_candidates(book: Book, ws, plan: Plan, table: Table) -> None:
    widths = column_headers(book, ws, table, {"excluded": "excluded because", "cards": "cards given",
                                     "task_row": "task row #"})
    task_row = xl_col_to_name(table.columns["task_row"])
    formulas = [(table.columns[c.key], c.key, compile_formula(c.excel, table, task_row), book.f.get("calc", c.fmt))
                for c in CALCS if c.key not in CANDIDATE_FROM_TASKS]
    values = [(table.columns[key], key, None, book.f.get(_VALUE_ROLES.get(key, "calc"), "general"))
              for key in CANDIDATE_LEAD]
    # `&""`: a blank GPUs cell reads as a blank text, not INDEX's 0
    offer = [(table.columns[key], key, compile_formula(f'={{gpu.{key}}}&""', table), book.f.get("calc", "general"))
             for key in CANDIDATE_OFFER]
    block = ColumnBlock(sorted(values + formulas + offer, key=lambda column: column[0]))
    catalog = {g.name: g for g in plan.inputs.gpus}
    chosen = book.t("chosen")
    r = table.first
    for i, tp in enumerate(plan.tasks, start=1):
        for c in tp.candidates:
            g = catalog[c.gpu]
            lead = {"task_id": tp.task.task_id, "gpu": c.gpu, "chosen": chosen if c.chosen else "",
                    "excluded": c.excluded, "cards": c.row["cards"], "task_row": i,
                    "provider": g.provider, "region": g.region}
            block.store(ws, r, c.row | lead)
            r += 1
    ws.set_column(table.columns["excluded"], table.columns["excluded"], 40)
    widths[table.columns["excluded"]] = 40
    ws.freeze_panes(1, 2)
    ws.autofilter(0, 0, r - 1, len(table.columns) - 1)
    print_setup(ws, book.lang, widths, max(r - 1, 1), header_rows=(0, 0), repeat_cols=(0, 1))
