"""The live choice: after a price or an input is edited in the workbook, a GPU cheaper than the task's chosen one
shows on Candidates (what each GPU saves against the chosen one), on Tasks (the task's cheapest GPU now and its
saving) and on Checks (how many tasks a rebuild would move), so that the workbook and a rebuild never silently
disagree. The choice itself stays a value: a rebuild makes it, with everything the choice weighs. The values are
the plan's (Plan.live_choice, budgetgen.plan.choice); this module writes their formulas."""

from __future__ import annotations

from xlsxwriter.utility import xl_col_to_name

from ..model import rules
from .layout import Table, task_name

CANDIDATE_HEADERS = {"gpu_saving": ("saving against the chosen GPU", "currency/month"),
                  "best_saving": ("task's best saving so far", "currency/month"),
                  "best_gpu": ("task's cheaper GPU so far", "")}
CANDIDATE_NAMES = {"task_row": "CandidateTaskRow", "best_saving": "CandidateBestSaving", "best_gpu": "CandidateBestGpu"}


def candidate_formulas(table: Table) -> dict[str, str]:
    """The live-choice columns' formulas, `{r}` the row and `{p}` the row above."""
    def col(key: str, row: str = "{r}") -> str:
        return f"${xl_col_to_name(table.columns[key])}{row}"
    running = {"task": col("task_row"), "previous_task": col("task_row", "{p}"),
               "previous_best": col("best_saving", "{p}"), "saving": col("gpu_saving")}
    return {
        "gpu_saving": rules.GPU_SAVING.formula(excluded=col("excluded"), cost=col("monthly_cost"),
                                               chosen=f"INDEX({task_name('monthly_cost')},{col('task_row')})"),
        "best_saving": rules.BEST_SAVING.formula(**running),
        "best_gpu": rules.BEST_GPU.formula(**running, previous_gpu=col("best_gpu", "{p}"), gpu=col("gpu")),
    }

TASK_HEADERS = {"gpu_named": ("gpu named in the input", ""), "cheaper_gpu": ("cheaper GPU now", ""),
                "cheaper_gpu_saving": ("saving on it", "currency/month"),
                "candidate_last": ("its last Candidates row", "#")}


def task_formulas(table: Table) -> dict[str, str]:
    """The Tasks columns showing each task's best candidate: its last row on Candidates."""
    last = f"${xl_col_to_name(table.columns['candidate_last'])}{{r}}"
    return {key: rules.TASK_BEST.formula(column=CANDIDATE_NAMES[column], last=last)
            for key, column in (("cheaper_gpu", "best_gpu"), ("cheaper_gpu_saving", "best_saving"))}
