"""Candidates: every catalog GPU per task (in a large inventory, or as candidates_per_task says, the chosen GPU and
the cheapest that could be chosen: layout.listed_candidates), the GPU-dependent formula columns, then the provider
and region of the offer behind the GPU's prices (looked up on GPUs by name); the rest read from Tasks by name. Last,
the live choice: what each GPU saves against the task's chosen one now, and each task's best so far, so that a price
or an input edited in the workbook shows a GPU a rebuild would choose (on Tasks and Checks)."""

from __future__ import annotations

from xlsxwriter.utility import xl_col_to_name

from ..catalog.prices import ANY_REGION, OFFER_SEPARATOR
from ..core.i18n import say
from ..core.schema import TASK_TIERS
from ..model.columns import CALCS, CANDIDATE_FROM_TASKS
from ..plan.engine import Plan
from .book import BlockColumn, Book, ColumnBlock
from .choice import CANDIDATE_HEADERS, CANDIDATE_NAMES, candidate_formulas
from .layout import CANDIDATE_LEAD, CANDIDATE_OFFER, Table, listed_candidates
from .printing import print_setup
from .tasks import GPU_ROW_HEADER, column_headers, compile_formula, gpu_row_formula, gpu_rows

_VALUE_ROLES = {"gpu": "input", "tier": "input", "cards": "input"}
# Whose offer the row's tier price is: the GPUs row's offer of that tier, else its provider (and region, unless any).
# `&""`: a blank GPUs cell reads as a blank text, not INDEX's 0.
_TIER_OFFER = "CHOOSE(MATCH({tier},TierList,0)," + ",".join(f'{{gpu.{t.name}_offer}}&""' for t in TASK_TIERS) + ")"
_OFFER = (f'=IF({_TIER_OFFER}="",{{gpu.provider}}&IF(OR({{gpu.region}}&""="",{{gpu.region}}&""="{ANY_REGION}"),"",'
          f'"{OFFER_SEPARATOR}"&{{gpu.region}}),{_TIER_OFFER})')
def write_candidates(book: Book, ws, plan: Plan, table: Table) -> None:
    widths = column_headers(book, ws, table, {"excluded": "excluded because", "cards": "cards given",
                                              "task_row": "task row #"}, CANDIDATE_HEADERS | GPU_ROW_HEADER)
    task_row = xl_col_to_name(table.columns["task_row"])
    formulas: list[BlockColumn] = [(table.columns[c.key], c.key, compile_formula(c.excel, table, task_row), book.f.get("calc", c.fmt))
                for c in CALCS if c.key not in CANDIDATE_FROM_TASKS]
    values: list[BlockColumn] = [(table.columns[key], key, None, book.f.get(_VALUE_ROLES.get(key, "calc"), "general"))
              for key in CANDIDATE_LEAD if key != "gpu_row"]
    values.append((table.columns["gpu_row"], "gpu_row", gpu_row_formula(table), book.f.get("calc", "int")))
    offer: list[BlockColumn] = [(table.columns[key], key, compile_formula(_OFFER, table), book.f.get("calc", "general"))
             for key in CANDIDATE_OFFER]
    choice: list[BlockColumn] = [(table.columns[key], key, formula, book.f.get("calc", "text" if key == "best_gpu" else "money"))
              for key, formula in candidate_formulas(table).items()]
    block = ColumnBlock(sorted(values + formulas + offer + choice, key=lambda column: column[0]))
    catalog = {g.name: g for g in plan.inputs.gpus}
    gpu_row = gpu_rows(plan)
    chosen = book.t("chosen")
    reasons: dict = {}
    r = table.first
    for i, (tp, listed, live) in enumerate(zip(plan.tasks, listed_candidates(plan), plan.live_choice.candidates,
                                               strict=True), start=1):
        for c, own in zip(listed, live, strict=True):
            if c.excluded not in reasons:   # one rendering per distinct reason (they repeat by the thousand)
                reasons[c.excluded] = say(c.excluded, book.lang) if c.excluded else ""
            g = catalog[c.gpu]
            lead = {"task_id": tp.task.task_id, "gpu": c.gpu, "tier": c.row["tier"], "chosen": chosen if c.chosen else "",
                    "excluded": reasons[c.excluded], "cards": c.row["cards"], "task_row": i, "gpu_row": gpu_row[c.gpu],
                    "offer": g.offer(c.row["tier"])}
            block.store(ws, r, c.row | lead | own)
            r += 1
    for key, name in CANDIDATE_NAMES.items():
        book.define_range(name, "Candidates", table.first, max(r - 1, table.first), table.columns[key])
    ws.set_column(table.columns["excluded"], table.columns["excluded"], 40)
    widths[table.columns["excluded"]] = 40
    ws.freeze_panes(1, 2)
    ws.autofilter(0, 0, r - 1, len(table.columns) - 1)
    print_setup(ws, book.lang, widths, max(r - 1, 1), header_rows=(0, 0), repeat_cols=(0, 1))
