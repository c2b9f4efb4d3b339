"""`budgetgen diff`: what changed between two versions and what each change does to the period total."""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import math
import shutil

import openpyxl
import pytest
from conftest import SAMPLE, TODAY, local_recalc, make_input, prove

from budgetgen.core.errors import InputError
from budgetgen.io.reader import read_inputs
from budgetgen.plan.diff import diff_files, format_table, read_version, write_diff_workbook
from budgetgen.plan.engine import plan_budget
from budgetgen.workbook import write_workbook

NEW_TASK = {"task_id": "KB04", "task": "FAQ bot", "kind": "inference", "model_params_b": "7B", "method": "int8",
            "requests_per_day": 2000, "tokens_per_request": 300, "serving_hours_per_day": 12}
EDITS = [("gpu changed", "A100 80G"), ("task removed", "KB03"), ("task added", "KB04")]


def edited_sample(path, price=False, drop=False, add=False):
    """A copy of the sample with the A100 80G on demand at 10, without KB03, with KB04, as asked."""
    shutil.copy(SAMPLE, path)
    wb = openpyxl.load_workbook(path)
    if price:
        gpus = wb.create_sheet("GPUs")
        gpus.append(["gpu", "on_demand_per_hour"])
        gpus.append(["A100 80G", 10])
    tasks = wb["Tasks"]
    if drop:
        tasks.delete_rows(next(c.row for c in tasks["A"] if c.value == "KB03"))
    if add:
        tasks.append([NEW_TASK.get(c.value) for c in tasks[1]])
    wb.save(path)
    return path


def total(path) -> float:
    return plan_budget(read_inputs(path, TODAY)).period_total


@pytest.fixture(scope="module")
def books(tmp_path_factory):
    d = tmp_path_factory.mktemp("diff")
    staged = {"price": edited_sample(d / "price.xlsx", price=True),
              "dropped": edited_sample(d / "dropped.xlsx", price=True, drop=True),
              "new": edited_sample(d / "new.xlsx", price=True, drop=True, add=True)}
    for name, src in (("old", SAMPLE), ("new", staged["new"])):
        staged[f"{name}-budget"] = write_workbook(plan_budget(read_inputs(src, TODAY)), d / f"{name}-budget.xlsx")
    return staged


@pytest.fixture(scope="module")
def sample_diff(books):
    return diff_files(SAMPLE, books["new"], TODAY)


def test_the_total_change_is_attributed_to_exactly_the_three_edits(books, sample_diff):
    d = sample_diff
    assert [(c.kind, c.key) for c in d.changes] == EDITS
    assert d.old_total == total(SAMPLE) and d.new_total == total(books["new"])
    gpu, removed, added = (c.delta for c in d.changes)
    assert gpu == pytest.approx(total(books["price"]) - total(SAMPLE), rel=1e-9)
    assert gpu < 0  # a price cut
    assert removed == pytest.approx(total(books["dropped"]) - total(books["price"]), rel=1e-9)
    assert added == pytest.approx(total(books["new"]) - total(books["dropped"]), rel=1e-9)
    assert math.isclose(math.fsum(c.delta for c in d.changes), d.new_total - d.old_total, rel_tol=1e-9)


def test_a_task_moves_the_total_by_its_period_cost_and_buffer(books, sample_diff):
    _, removed, added = sample_diff.changes
    priced = plan_budget(read_inputs(books["price"], TODAY))
    new = plan_budget(read_inputs(books["new"], TODAY))
    kb03 = next(t.row["period_cost"] for t in priced.tasks if t.task.task_id == "KB03")
    kb04 = next(t.row["period_cost"] for t in new.tasks if t.task.task_id == "KB04")
    buffer = 1 + priced.inputs.settings.hidden_cost_buffer
    assert removed.delta == pytest.approx(-kb03 * buffer, rel=1e-9)
    assert added.delta == pytest.approx(kb04 * buffer, rel=1e-9)
    assert "on_demand_per_hour: 12 -> 10" in sample_diff.changes[0].detail


def test_two_built_budgets_give_the_same_diff(books, sample_diff):
    built = diff_files(books["old-budget"], books["new-budget"], TODAY)
    assert [(c.kind, c.key, c.detail) for c in built.changes] == \
        [(c.kind, c.key, c.detail) for c in sample_diff.changes]
    for ours, theirs in zip(built.changes, sample_diff.changes):
        assert math.isclose(ours.delta, theirs.delta, rel_tol=1e-9)
    assert math.isclose(built.new_total - built.old_total, sample_diff.total_change, rel_tol=1e-9)


def test_a_built_budget_keeps_its_chosen_gpus_as_given(books):
    inputs = read_version(books["old-budget"], TODAY)
    tasks = {t.task_id: t.values for t in inputs.tasks}
    chosen = {t.task.task_id: t.row["gpu"] for t in plan_budget(read_inputs(SAMPLE, TODAY)).tasks}
    assert tasks["ML01"]["gpu"] == chosen["ML01"]  # blank in the input: the engine's choice is now a decision
    assert tasks["KB01"]["requests_per_day"] == 10000
    assert inputs.source_sha256 == hashlib.sha256(books["old-budget"].read_bytes()).hexdigest()


def test_budgets_built_on_different_days_are_the_same_plan(tmp_path):
    days = [dt.date(2026, 6, 15), dt.date(2026, 6, 20)]
    a, b = (write_workbook(plan_budget(read_inputs(SAMPLE, day)), tmp_path / f"{day}.xlsx") for day in days)
    assert diff_files(a, b).changes == ()  # each keeps its own build_date: not a change to the plan


def test_identical_inputs_have_no_changes():
    d = diff_files(SAMPLE, SAMPLE, TODAY)
    assert d.changes == ()
    assert d.total_change == 0
    assert "no changes" in format_table(d)


def test_table_shows_each_change_and_the_total(sample_diff):
    text = format_table(sample_diff)
    lines = text.splitlines()
    for (kind, key), change in zip(EDITS, sample_diff.changes):
        line = next(x for x in lines if x.startswith(f"{kind} {key}"))
        assert f"{change.delta:+,.0f}" in line
    last = lines[-1]
    assert last.startswith("total") and f"{sample_diff.total_change:+,.0f}" in last
    assert f"{sample_diff.old_total:,.0f} -> {sample_diff.new_total:,.0f}" in last


@pytest.mark.slow
def test_diff_workbook_lists_the_changes_and_checks_they_add_up(tmp_path, sample_diff):
    path = write_diff_workbook(sample_diff, tmp_path / "out" / "diff.xlsx")
    ws = openpyxl.load_workbook(path, data_only=True)["Diff"]
    rows = list(ws.iter_rows(values_only=True))
    assert [(r[0], r[1]) for r in rows[1:4]] == EDITS
    assert [r[3] for r in rows[1:4]] == pytest.approx([c.delta for c in sample_diff.changes], rel=1e-12)
    labels = {r[0]: r for r in rows if r[0]}
    assert labels["total change"][3] == pytest.approx(sample_diff.total_change, rel=1e-9)
    assert labels["changes add up"][3] is True
    check = next(i for i, r in enumerate(rows, start=1) if r[0] == "changes add up")
    new_row = next(i for i, r in enumerate(rows, start=1) if r[0] == "new period total")
    assert prove(path) == []
    assert local_recalc(path)[("DIFF", f"D{check}")] is True
    assert local_recalc(path, {f"Diff!D{new_row}": sample_diff.new_total + 1})[("DIFF", f"D{check}")] is False


KB01 = {"task_id": "KB01", "kind": "inference", "model_params_b": 7, "method": "int4", "requests_per_day": 10000,
        "tokens_per_request": 500, "serving_hours_per_day": 8, "tokens_per_sec": 100, "gpu": "RTX 4090"}
# 13B full: 16 bytes a parameter (208 GB) is more than any one card of the test catalog holds (H200 141 GB)
FULL = {"task_id": "FT01", "kind": "finetune", "model_params_b": 13, "method": "full", "train_tokens": "20M"}


def versions(tmp_path, old: dict, new: dict):
    """Two input workbooks from make_input keyword arguments, diffed."""
    paths = [make_input(tmp_path / f"{name}.xlsx", **kw) for name, kw in (("old", old), ("new", new))]
    return diff_files(*paths, TODAY)


def test_a_step_that_cannot_be_planned_alone_is_counted_in_the_next(tmp_path):
    d = versions(tmp_path, {"tasks": [KB01, FULL]},
                 {"tasks": [KB01, {**FULL, "method": "lora"}], "settings": {"max_cards": 1}})
    setting, task = d.changes
    assert (setting.kind, setting.key, setting.delta) == ("setting changed", "max_cards", 0.0)
    assert "could not be planned on its own" in setting.note and "task changed FT01" in setting.note
    assert (task.kind, task.key) == ("task changed", "FT01")
    assert task.delta == pytest.approx(d.total_change, rel=1e-9) and task.delta < 0
    assert "setting changed max_cards" in task.note


def test_a_new_plan_period_is_noted_and_still_adds_up(tmp_path):
    d = versions(tmp_path, {"tasks": [KB01, FULL]}, {"tasks": [KB01, FULL], "settings": {"period_start": "2026-08",
                                                                                        "period_months": 4}})
    assert [(c.kind, c.key) for c in d.changes] == [("setting changed", "period_start"),
                                                     ("setting changed", "period_months"),
                                                     ("task changed", "KB01"), ("task changed", "FT01")]
    assert "start_month: 2026-07 -> 2026-08" in d.changes[2].detail
    assert "plan periods differ (2026-07 to 2026-09 against 2026-08 to 2026-11)" in d.notes[0]
    # no step before the last task's months move into the new period can be planned: it carries the whole change
    assert [c.delta for c in d.changes[:3]] == [0.0, 0.0, 0.0]
    assert all("its effect is counted in task changed FT01" in c.note for c in d.changes[:3])
    assert d.changes[-1].delta == pytest.approx(d.total_change, rel=1e-9) and d.total_change > 0
    assert "Note: the plan periods differ" in format_table(d)


def test_settings_and_extras_changes_are_priced_one_by_one(tmp_path):
    storage = {"item": "Storage", "category": "storage", "monthly_cost": 100}
    old = {"tasks": [KB01], "extras": [storage, {**storage, "monthly_cost": 200}, {"item": "Egress",
                                                                                    "monthly_cost": 50}]}
    new = {"tasks": [KB01], "settings": {"hidden_cost_buffer": 0.3},
           "extras": [storage, {"item": "Egress", "monthly_cost": 80}, {"item": "Images", "monthly_cost": 10,
                                                                        "start_month": "2026-09"}]}
    d = versions(tmp_path, old, new)
    assert [(c.kind, c.key) for c in d.changes] == [("setting changed", "hidden_cost_buffer"),
                                                     ("extra removed", "Storage (2)"), ("extra changed", "Egress"),
                                                     ("extra added", "Images")]
    gpu = plan_budget(read_inputs(tmp_path / "old.xlsx", TODAY)).month_totals["2026-07"].gpu * 3
    assert [c.delta for c in d.changes] == pytest.approx([gpu * 0.05, -600, 90, 10], rel=1e-9)


def test_a_bad_version_is_named_in_every_problem(tmp_path, books):
    bad = make_input(tmp_path / "bad.xlsx", [{**KB01, "model_params_b": "seven"}])
    with pytest.raises(InputError) as caught:
        diff_files(SAMPLE, bad, TODAY)
    assert [p.place for p in caught.value.problems] == ["[bad.xlsx]Tasks!C2"]
    budget = tmp_path / "bad-budget.xlsx"
    wb = openpyxl.load_workbook(books["old-budget"])
    cell = next(r[1] for r in wb["Assumptions"].iter_rows() if r[0].value == "mfu")
    cell.value = "lots"
    wb.save(budget)
    with pytest.raises(InputError) as caught:
        diff_files(budget, SAMPLE, TODAY)
    assert [p.place for p in caught.value.problems] == [f"[bad-budget.xlsx]Assumptions!{cell.coordinate}"]


def test_a_version_and_its_own_budget_are_the_same_plan(tmp_path):
    usd = make_input(tmp_path / "usd.xlsx", [KB01], settings={"currency": "USD", "catalog_fx": 0.137})
    budget = write_workbook(plan_budget(read_inputs(usd, TODAY)), tmp_path / "usd-budget.xlsx")
    same = diff_files(usd, budget, TODAY)  # converted prices lose their 17th digit in the workbook
    assert same.changes == () and same.total_change == pytest.approx(0, abs=1e-9)
    cny = diff_files(make_input(tmp_path / "cny.xlsx", [KB01]), usd, TODAY)
    assert ("setting changed", "currency") in [(c.kind, c.key) for c in cny.changes]
    assert "the currencies differ (CNY against USD)" in cny.notes[0]


def test_a_date_typed_into_a_built_budget_is_a_month(tmp_path, books):
    edited = tmp_path / "edited-budget.xlsx"
    wb = openpyxl.load_workbook(books["old-budget"])
    tasks = wb["Tasks"]
    column = next(c.column for c in tasks[1] if c.value.startswith("start_month"))
    row = next(c.row for c in tasks["A"] if c.value == "ML01")
    tasks.cell(row, column).value = dt.datetime(2026, 9, 1)
    wb.save(edited)
    d = diff_files(books["old-budget"], edited, TODAY)
    assert [(c.kind, c.key, c.detail) for c in d.changes] == [("task changed", "ML01", "start_month: 2026-08 -> 2026-09")]
    assert d.changes[0].delta < 0


def test_a_removed_gpu_still_named_by_an_old_task_waits_for_that_task(tmp_path):
    mine = {"gpu": "MyCard", "vram_gb": 24, "bandwidth_gbs": 1000, "tflops": 150, "monthly_per_card": 2500}
    d = versions(tmp_path, {"tasks": [{**KB01, "gpu": "MyCard"}], "gpus": [mine]}, {"tasks": [KB01]})
    assert [(c.kind, c.key, c.delta) for c in d.changes[:1]] == [("gpu removed", "MyCard", 0.0)]
    assert "KB01: gpu MyCard is not in the catalog" in d.changes[0].note
    assert (d.changes[1].kind, d.changes[1].key) == ("task changed", "KB01")
    assert d.changes[1].delta == pytest.approx(d.total_change, rel=1e-9) and d.total_change != 0


def test_many_added_tasks_plan_each_task_once_and_attribute_exactly(tmp_path, monkeypatch):
    # 40 tasks added and the hidden-cost buffer changed: the work is one plan of each task per task step and
    # one re-plan of the old tasks for the setting, not a re-plan of everything after each of the 41 steps.
    import budgetgen.plan.diff as diff_module

    tasks = [{**NEW_TASK, "task_id": f"N{i:03d}", "requests_per_day": 1000 + 37 * i} for i in range(41)]
    old = read_inputs(make_input(tmp_path / "old.xlsx", tasks[:1], settings={"hidden_cost_buffer": 0.25}), TODAY)
    new = read_inputs(make_input(tmp_path / "new.xlsx", tasks, settings={"hidden_cost_buffer": 0.22}), TODAY)
    calls = []
    real = diff_module.plan_task
    monkeypatch.setattr(diff_module, "plan_task", lambda task, inputs: calls.append(task.task_id) or real(task, inputs))
    result = diff_module.diff_inputs(old, new)
    # The old task once to start and once more for the setting; each added task but the last (whose total is the
    # new version's) once.
    assert calls == ["N000", "N000", *(t["task_id"] for t in tasks[1:40])]
    assert [c.kind for c in result.changes] == ["setting changed"] + ["task added"] * 40
    # Each step's change is what re-planning everything gives, computed here the slow way.
    expected, previous = [], plan_budget(old).period_total
    settings = dataclasses.replace(old.settings, hidden_cost_buffer=0.22)
    for n in range(1, 42):
        current = plan_budget(dataclasses.replace(new, settings=settings, tasks=new.tasks[:n])).period_total
        expected.append(current - previous)
        previous = current
    assert [c.delta for c in result.changes] == expected
    assert math.fsum(c.delta for c in result.changes) == pytest.approx(result.new_total - result.old_total)


def test_a_detail_longer_than_a_cell_is_cut_with_a_note_not_silently():
    """The note for 40,000 characters, " [... 40,000 more characters cut: `budgetgen diff` prints all]", is 62
    long, so 32,767 - 62 = 32,705 are kept and 7,295 cut; its final form names 7,295 (61 long): 32,766 in all."""
    from budgetgen.plan.diff import cell_text

    assert cell_text("x" * 40_000) == "x" * 32_705 + " [... 7,295 more characters cut: `budgetgen diff` prints all]"
    assert cell_text("x" * 32_767) == "x" * 32_767
