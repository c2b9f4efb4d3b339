"""Candidates in a large inventory: each task's chosen card and its cheapest options, not every catalog card (the JSON
keeps every card); Tasks reads each task's best from its last Candidates row, and the workbook recalculates to the
engine's values."""

from __future__ import annotations

from types import SimpleNamespace

import openpyxl
import pytest
from conftest import TODAY, formula_cells, make_input, prove

from budgetgen.io.reader import read_inputs
from budgetgen.io.results import plan_json
from budgetgen.plan.engine import options_listed, plan_budget
from budgetgen.workbook import write_workbook

TASKS = [
    {"task_id": "FT", "kind": "finetune", "model_params_b": 7, "method": "lora", "train_tokens": "500M"},
    {"task_id": "CHAT", "kind": "inference", "model_params_b": 13, "requests_per_day": 20000,
     "tokens_per_request": 300, "concurrency": 8},
    {"task_id": "NIGHT", "kind": "batch", "model_params_b": 7, "method": "int8", "batch_requests": 50000,
     "tokens_per_request": 200, "runs_per_month": 4},
    {"task_id": "NAMED", "kind": "inference", "model_params_b": 7, "requests_per_day": 5000,
     "tokens_per_request": 200, "gpu": "H100 80G"},
]
# balanced: the middle option, so that most tasks have a cheaper card than their chosen one
SETTINGS = {"gpu_choice": "balanced", "candidates_per_task": 1}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    folder = tmp_path_factory.mktemp("listed")
    plan = plan_budget(read_inputs(make_input(folder / "in.xlsx", TASKS, settings=SETTINGS), today=TODAY))
    return plan, write_workbook(plan, folder / "out.xlsx")


def _columns(path, sheet: str) -> dict[str, list]:
    ws = openpyxl.load_workbook(path, data_only=True, read_only=True)[sheet]
    rows = list(ws.iter_rows(values_only=True))
    return {str(h).split(" (")[0]: [row[i] for row in rows[1:]] for i, h in enumerate(rows[0]) if h is not None}


def _cheapest(tp):
    """The task's cheapest card that could be chosen (worked out here from the engine's rows, not by its ranking)."""
    return min((c for c in tp.candidates if c.exclusion is None), key=lambda c: c.row["monthly_cost"])


def test_each_task_lists_its_chosen_card_and_its_cheapest(built):
    plan, out = built
    expected, last = [], []
    for tp in plan.tasks:
        keep = {tp.row["gpu"], _cheapest(tp).gpu}
        expected += [(tp.task.task_id, c.gpu) for c in tp.candidates if c.gpu in keep]   # in catalog order
        last.append(len(expected))
    candidates = _columns(out, "Candidates")
    assert list(zip(candidates["task_id"], candidates["gpu"], strict=True)) == expected
    assert _columns(out, "Tasks")["its last Candidates row"] == last
    # balanced choice left a cheaper card for at least two tasks, and the named H100 is kept beside its cheapest
    assert sum(tp.row["gpu"] != _cheapest(tp).gpu for tp in plan.tasks) >= 2
    assert len([gpu for tid, gpu in expected if tid == "NAMED"]) == 2


def test_the_json_keeps_every_card_as_when_the_sheet_lists_them_all(built, tmp_path):
    plan, _ = built
    every = plan_budget(read_inputs(make_input(tmp_path / "in.xlsx", TASKS, settings={
        "gpu_choice": "balanced"}), today=TODAY))   # candidates_per_task blank: every card of a small inventory
    assert all(c.listed for tp in every.tasks for c in tp.candidates)
    assert sum(not c.listed for tp in plan.tasks for c in tp.candidates) > len(TASKS)
    tasks = plan_json(plan)["tasks"]
    assert [len(t["candidates"]) for t in tasks] == [len(plan.inputs.gpus)] * len(TASKS)
    assert [t["candidates"] for t in tasks] == [t["candidates"] for t in plan_json(every)["tasks"]]


def test_tasks_shows_the_cheapest_listed_card_and_its_saving(built):
    plan, out = built
    tasks = _columns(out, "Tasks")
    for i, tp in enumerate(plan.tasks):
        cheapest = _cheapest(tp)
        cheaper = cheapest.gpu if cheapest.gpu != tp.row["gpu"] else None
        assert tasks["cheaper GPU now"][i] == cheaper, tp.task.task_id
        saving = tp.row["monthly_cost"] - cheapest.row["monthly_cost"]
        assert tasks["saving on it"][i] == pytest.approx(saving, abs=1e-9), tp.task.task_id


@pytest.mark.slow
def test_tasks_candidates_and_checks_recalculate_to_the_cached_values(built):
    """Each formula cell of Tasks, Candidates and Checks, evaluated by `formulas` from the cached values it reads, is
    its own cached value (tests/formula_proof.py): by induction over the dependency order, the cached values are what
    a spreadsheet computes. Tasks and Candidates hold the same formula shapes as the small plan whose whole workbook
    `formulas` recalculates in tests/test_workbook.py, where the cell-by-cell evaluation is shown to read every
    precedent."""
    _, out = built
    sheets = ("TASKS", "CANDIDATES", "CHECKS")
    assert len([k for k in formula_cells(out) if k[0] in sheets]) > 300
    assert prove(out) == []


@pytest.mark.parametrize(("tasks", "given", "listed"), [
    (1_000, None, None),    # every card, up to 1,000 tasks
    (1_001, None, 3),       # then the 3 cheapest besides the chosen card
    (20_000, None, 3),
    (10, 2, 2),             # as the setting says, whatever the size
    (20_000, 15, 15),
])
def test_every_card_is_listed_up_to_a_thousand_tasks(tasks, given, listed):
    assert options_listed(SimpleNamespace(candidates_per_task=given), tasks) == listed
