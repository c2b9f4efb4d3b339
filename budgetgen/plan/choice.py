"""The live choice's values: per task and listed candidate (a Candidates row) what that GPU saves against the chosen
one and the running best, and per task its cheaper GPU now and the saving on it (none at build time unless the
input names the task's GPU). Computed once (Plan.live_choice) for the Candidates and Tasks sheets and the Checks
count; budgetgen.workbook.choice writes the same rules as formulas, so an edit in the workbook moves them."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from ..model import rules

if TYPE_CHECKING:
    from .engine import Plan

NAMED = "named"   # the gpu_named cell of a task whose input names its GPU (blank: the build chose it)


class LiveChoice(NamedTuple):
    candidates: tuple[list[dict], ...]   # per task, per listed candidate: gpu_saving, best_saving, best_gpu
    tasks: tuple[dict, ...]              # per task: gpu_named, cheaper_gpu, cheaper_gpu_saving, candidate_last


def live_choice(plan: Plan) -> LiveChoice:
    """The live-choice columns' values (the Python view of their rules): per task, each listed candidate's saving
    and the running best; per task, its best (its last Candidates row's, and that row's position), which Tasks
    shows."""
    s = plan.inputs.settings
    rows, best, last = [], [], 0
    for tp in plan.tasks:
        listed = [c for c in tp.candidates if c.listed]
        chosen = tp.row["monthly_cost"]
        task_rows, top, gpu = [], 0.0, ""
        last += len(listed)
        for i, c in enumerate(listed):
            saving = rules.GPU_SAVING(s, excluded=c.excluded, cost=c.row["monthly_cost"], chosen=chosen)
            previous = i > 0
            gpu = rules.BEST_GPU(s, task=1, previous_task=1 if previous else 0, previous_best=top, previous_gpu=gpu,
                                 saving=saving, gpu=c.gpu)
            top = rules.BEST_SAVING(s, task=1, previous_task=1 if previous else 0, previous_best=top, saving=saving)
            task_rows.append({"gpu_saving": saving, "best_saving": top, "best_gpu": gpu})
        rows.append(task_rows)
        best.append({"gpu_named": NAMED if tp.task.values["gpu"] else "", "cheaper_gpu": gpu,
                     "cheaper_gpu_saving": top, "candidate_last": last})
    return LiveChoice(tuple(rows), tuple(best))
