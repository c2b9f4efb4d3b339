"""SPEC-models §F, capacity that can run: card shapes, deadlines per run, max_cards per run or replica, replicas of
a batch run against its deadline, the new warnings, and a deadline changed in the workbook recalculating cards and
money (the `formulas` package and LibreOffice)."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import openpyxl
import pytest
from conftest import TODAY, disagreements, local_recalc, make_input, recalc_formulas
from lo_recalc import recalc_with_libreoffice, soffice_path

from budgetgen.api import build_budget
from budgetgen.core.errors import InputError
from budgetgen.io.reader import read_inputs
from budgetgen.plan.engine import Exclusion, plan_budget

SHAPES = (1, 2, 4, 8)


def _plan(tmp_path: Path, tasks: list[dict], settings: dict | None = None, name: str = "in.xlsx"):
    return plan_budget(read_inputs(make_input(tmp_path / name, tasks, settings=settings), today=TODAY))


# ---------------------------------------------------------------- training runs that end in time

PRETRAIN_1B = {"task_id": "P1", "kind": "pretrain", "model_params_b": 1, "train_tokens": "50B", "gpu": "RTX 4090"}


def _wall(cards: int, single: float, scaling: float = 0.33) -> float:
    """Wall clock of one run: compute hours on `cards` x (1 + run overhead 0.3) + 0.5 h setup."""
    return single / (1 + (cards - 1) * scaling) * 1.3 + 0.5


def test_1b_on_50b_tokens_gets_the_cards_that_finish_within_the_month(tmp_path):
    # 6 x 1e9 x 50e9 FLOPs at 165.2 TFLOP/s x 0.40: 1,261 h on one RTX 4090; the month is 730 h of wall clock.
    single = 6 * 1e9 * 50e9 / (165.2e12 * 0.40 * 3600)
    assert _wall(4, single) > 730 >= _wall(8, single)    # 4 cards: 824 h; 8 (one node): 495 h
    row = _plan(tmp_path, [PRETRAIN_1B]).tasks[0].row
    assert row["single_card_hours"] == pytest.approx(single)
    assert row["deadline_used"] == pytest.approx(730 / 24)
    assert row["cards_per_run"] == 8
    assert row["wall_hours_per_run"] == pytest.approx(_wall(8, single))
    assert row["wall_hours_per_run"] <= row["deadline_used"] * 24


def test_1b_on_50b_tokens_with_too_few_cards_allowed_is_an_error_naming_the_option(tmp_path):
    with pytest.raises(InputError) as caught:
        _plan(tmp_path, [PRETRAIN_1B], settings={"max_cards": 4})
    (problem,) = caught.value.problems
    assert problem.cell == "E2"      # the task's gpu cell
    assert "needs 8 x RTX 4090 to finish in 30.4167 days, max_cards is 4" in str(problem)


def test_with_no_gpu_named_the_error_names_the_fastest_option(tmp_path):
    task = {k: v for k, v in PRETRAIN_1B.items() if k != "gpu"} | {"train_tokens": "50T"}
    with pytest.raises(InputError) as caught:
        _plan(tmp_path, [task])
    (problem,) = caught.value.problems
    assert problem.cell == "A2"
    assert "no GPU finishes a run within 30.4167 days on at most 64 cards: the fastest option is" in str(problem)


def test_a_users_cards_that_cannot_meet_the_deadline_is_an_error_at_that_cell(tmp_path):
    single = 6 * 1e9 * 50e9 / (165.2e12 * 0.40 * 3600)
    with pytest.raises(InputError) as caught:
        _plan(tmp_path, [PRETRAIN_1B | {"cards": 2}])
    (problem,) = caught.value.problems
    assert problem.cell == "F2"      # the cards cell
    assert f"2 x RTX 4090 take {_wall(2, single):,.0f} h a run, past the deadline of 30.4167 days: 8 cards" \
        in str(problem)


def test_training_cards_are_1_2_4_or_whole_nodes_of_8(tmp_path):
    # 70B full training: 70 x 16 + 0.6 x 70 = 1,162 GB on 72 GB usable: 17 cards of memory, so 3 nodes (24).
    row = _plan(tmp_path, [{"task_id": "X", "kind": "pretrain", "model_params_b": 70, "train_tokens": "1M",
                            "gpu": "A100 80G"}]).tasks[0].row
    assert math.ceil(1162 / 72) == 17
    assert row["cards_min"] == row["cards_per_run"] == 24


# ---------------------------------------------------------------- serving replicas and batch runs

def test_a_nightly_batch_that_cannot_finish_in_24_h_gets_more_replicas(tmp_path):
    task = {"task_id": "N", "kind": "batch", "model": "Qwen2.5-14B", "method": "int8", "batch_requests": 400_000,
            "prompt_tokens": 800, "tokens_per_request": 300, "deadline_days": 1, "gpu": "RTX 4090"}
    row = _plan(tmp_path, [task]).tasks[0].row
    one_replica = 400_000 / (row["requests_per_sec"] * 3600)
    assert one_replica > 24
    assert row["replicas"] == math.ceil(one_replica / (24 - 0.5)) > 1
    assert row["wall_hours_per_run"] == pytest.approx(one_replica / row["replicas"] + 0.5)
    assert row["wall_hours_per_run"] <= 24
    assert row["cards_held"] == row["replicas"] * row["cards_per_run"]


SERVICES = [{"task_id": f"S{i}", "kind": "inference", "model": model, "method": method, "requests_per_day": 1e5,
             "prompt_tokens": prompt, "tokens_per_request": 300, "tier": "on_demand"}
            for i, (model, method, prompt) in enumerate([
                ("Llama-3.3-70B", "fp16", 2000), ("Llama-3.3-70B", "fp8", 8000), ("Llama-3.3-70B", "int4", 30000),
                ("Qwen2.5-72B", "fp16", 4000), ("Qwen2.5-32B", "fp16", 16000), ("Qwen3-235B-A22B", "fp8", 2000),
                ("Llama-3.1-8B", "fp16", 100000), ("Qwen2.5-14B", "fp16", 30000)])]


def test_no_serving_replica_has_3_5_6_or_7_cards_and_every_size_divides_the_heads(tmp_path):
    plan = _plan(tmp_path, SERVICES)
    heads = {"Llama-3.3-70B": 64, "Qwen2.5-72B": 64, "Qwen2.5-32B": 40, "Qwen3-235B-A22B": 64,
             "Llama-3.1-8B": 32, "Qwen2.5-14B": 40}
    seen = set()
    for tp in plan.tasks:
        for c in tp.candidates:
            if c.exclusion is None or c.exclusion.fits:
                cards = c.row["cards_per_run"]
                seen.add(cards)
                assert cards in SHAPES, (tp.task.task_id, c.gpu, cards)
                assert heads[tp.task.values["model"]] % cards == 0
            elif c.exclusion is Exclusion.REPLICA_TOO_LARGE:
                assert c.excluded == "needs more than 8 cards per replica: use fp8/int4 or a larger card"
    assert {2, 4, 8} <= seen        # the sweep reaches multi-card replicas


def test_a_28_head_model_is_never_split_over_8_cards(tmp_path):
    # Qwen2.5-7B: 28 heads, 28 layers, 4 KV heads of 128; 8 sequences of 160k tokens hold 73 GB of KV cache: 4 L4
    # (86.4 GB usable, 16.8 GB of weights and runtime) are too few, and 8 does not divide 28.
    task = {"task_id": "L", "kind": "inference", "model": "Qwen2.5-7B", "requests_per_day": 100,
            "prompt_tokens": 159_000, "tokens_per_request": 1000, "concurrency": 8, "tier": "on_demand"}
    assert 8 * 2 * 28 * 4 * 128 * 2 * 160_000 / 1e9 > 4 * 24 * 0.9 - 7.6 * 2 * 1.1
    plan = _plan(tmp_path, [task])
    by_gpu = {c.gpu: c for c in plan.tasks[0].candidates}
    assert by_gpu["L4"].exclusion is Exclusion.REPLICA_TOO_LARGE
    assert all(28 % c.row["cards_per_run"] == 0 for c in plan.tasks[0].candidates if c.exclusion is None)


def test_warnings_no_failover_consumer_card_all_day_and_slow_streams(tmp_path):
    service = {"task_id": "W", "kind": "inference", "model": "Qwen2.5-7B", "method": "int4", "requests_per_day": 100,
               "prompt_tokens": 500, "tokens_per_request": 200, "gpu": "RTX 4090", "serving_hours_per_day": 24}
    slow = {"task_id": "Z", "kind": "inference", "model": "Llama-3.3-70B", "requests_per_day": 100,
            "prompt_tokens": 2000, "tokens_per_request": 200, "gpu": "L40S", "concurrency": 64, "tier": "on_demand"}
    spare = service | {"task_id": "R", "min_replicas": 2, "serving_hours_per_day": 12}
    plan = _plan(tmp_path, [service, slow, spare])
    text = "\n".join(w for tp in plan.tasks for w in tp.warnings)   # each task's own (the plan groups them by kind)
    assert "W: one replica, no failover" in text and "R: one replica" not in text
    assert "W: RTX 4090 is a consumer card serving 24 h a day (over 12)" in text
    assert "R: RTX 4090 is a consumer card" not in text
    rows = {tp.task.task_id: tp.row for tp in plan.tasks}
    assert rows["Z"]["user_tokens_per_sec"] < 10 and f"Z: a user sees {rows['Z']['user_tokens_per_sec']:.1f}" in text
    assert rows["R"]["replicas"] == 2 and rows["W"]["user_tokens_per_sec"] >= 10 and "W: a user sees" not in text


# ---------------------------------------------------------------- the workbook recalculates cards from the deadline

def _deadline_book(tmp_path: Path, days: float | None) -> tuple[Path, object]:
    task = PRETRAIN_1B | {"tier": "on_demand"} | ({"deadline_days": days} if days is not None else {})
    source = make_input(tmp_path / f"in-{days}.xlsx", [task])
    out = tmp_path / f"out-{days}.xlsx"
    build_budget(source, out, build_date=TODAY)
    return out, plan_budget(read_inputs(source, today=TODAY))


def _tasks_cells(path: Path, *headers: str) -> list[str]:
    ws = openpyxl.load_workbook(path)["Tasks"]
    found = {c.value.split("\n")[0]: c.column_letter for c in ws[1] if c.value}
    return [next(col for h, col in found.items() if h.startswith(header)) + "2" for header in headers]


@pytest.mark.slow
def test_changing_deadline_days_in_the_workbook_recalculates_cards_and_money(tmp_path):
    """The one-task plan `formulas` recalculates after an edit (Tasks, Summary and what they read); the cell-by-cell
    evaluation gives the same values."""
    out, _ = _deadline_book(tmp_path, None)
    _, second = _deadline_book(tmp_path, 60)
    deadline, cards, cost = _tasks_cells(out, "deadline_days", "cards per run", "cost a month")
    values = recalc_formulas(out, {f"Tasks!{deadline}": 60}, sheets=("Tasks", "Summary"))
    assert disagreements(values, local_recalc(out, {f"Tasks!{deadline}": 60})) == []
    row = second.tasks[0].row
    single = 6 * 1e9 * 50e9 / (165.2e12 * 0.40 * 3600)
    assert _wall(1, single) > 60 * 24 >= _wall(2, single)     # 60 days: 2 cards (1,233 h) finish, 1 (1,640 h) not
    assert row["cards_per_run"] == 2
    assert values[("TASKS", cards)] == row["cards_per_run"]
    assert values[("TASKS", cost)] == pytest.approx(row["monthly_cost"], rel=1e-9)
    assert values[("SUMMARY", "B3")] == pytest.approx(second.period_total, rel=1e-9)


@pytest.mark.slow
@pytest.mark.skipif(soffice_path() is None, reason="LibreOffice is not installed")
def test_libreoffice_recalculates_cards_and_money_from_a_changed_deadline(tmp_path):
    out, _ = _deadline_book(tmp_path, None)
    _, second = _deadline_book(tmp_path, 60)
    deadline, cards, cost = _tasks_cells(out, "deadline_days", "cards per run", "cost a month")
    edited = tmp_path / "edited.xlsx"
    shutil.copy(out, edited)
    wb = openpyxl.load_workbook(edited)
    wb["Tasks"][deadline] = 60
    wb.save(edited)
    values = recalc_with_libreoffice(edited, tmp_path / "lo")
    assert values["Tasks"][cards] == second.tasks[0].row["cards_per_run"] == 2
    assert values["Tasks"][cost] == pytest.approx(second.tasks[0].row["monthly_cost"], rel=1e-9)
