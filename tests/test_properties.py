"""Property tests over random valid inventories: engine invariants, and workbooks that recalculate to the cache."""

from __future__ import annotations

import dataclasses
import itertools
import math
import os
from pathlib import Path

import pytest
from conftest import TODAY, formula_cells, local_recalc, make_input, prove, same
from formula_proof import proof_of
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from lo_recalc import is_error, recalc_many, soffice_path

from budgetgen.core.errors import Code, InputError
from budgetgen.core.inputs import Inputs
from budgetgen.core.schema import KINDS, SERVING_METHODS, TIER_NAMES, TRAINING_KINDS, TRAINING_METHODS
from budgetgen.core.values import add_months
from budgetgen.io.reader import read_inputs
from budgetgen.plan.engine import Plan, plan_budget, plan_task
from budgetgen.workbook import write_workbook

CI = os.environ.get("CI") == "true"
SKIP_REASON = "LibreOffice (soffice) not installed: apt-get install libreoffice-calc-nogui"
NO_FIT = {Code.DOES_NOT_FIT, Code.NO_PRICE, Code.TOO_MANY_CARDS}
CATALOG = ("RTX 4090", "RTX A6000", "L40S", "A100 80G", "H100 80G", "H200", "L4")
CUSTOM = "Custom MI300"
COST_CENTERS = ("research", "product", "ml-platform", "knowledge-base")
PERIOD_STARTS = ("2026-07", "2026-11", "2027-01")
WORKDIR_COUNTER = itertools.count()
GENERATED: list[Path] = []  # workbooks that passed the `formulas` property, for the LibreOffice property
LIBREOFFICE_BOOKS = 4       # of them, the first few

ENGINE_SETTINGS = settings(max_examples=60, deadline=None, derandomize=CI,
                           suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
# Each example proves a workbook cell by cell (one to four s of CPU): eight per run, other ones each local run.
WORKBOOK_SETTINGS = settings(max_examples=8, deadline=None, derandomize=CI,
                             suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def log_floats(lo: float, hi: float, digits: int = 3) -> st.SearchStrategy[float]:
    """Log-uniform floats from `lo` to `hi`, rounded to a few significant digits as a person would type them."""
    return st.floats(math.log10(lo), math.log10(hi)).map(lambda e: min(hi, max(lo, float(f"{10 ** e:.{digits}g}"))))


def typed(lo: float, hi: float, round_values: tuple[float | str, ...], digits: int = 3) -> st.SearchStrategy:
    """`log_floats`, or a round number as people type it, maybe with a suffix (these hit CEILING boundaries)."""
    return st.one_of(log_floats(lo, hi, digits), st.sampled_from(round_values))


def maybe(strategy: st.SearchStrategy, blank_share: int = 1) -> st.SearchStrategy:
    """The strategy's value, or blank (None) about one time in `blank_share` + 1."""
    return st.one_of(*[st.none()] * blank_share, strategy)


@st.composite
def tasks_strategy(draw, task_id: str, months: int, gpu_names: tuple[str, ...]) -> dict:
    """One valid Tasks row of any kind, with optional columns left blank or filled."""
    kind = draw(st.sampled_from(KINDS))
    training = kind in TRAINING_KINDS
    row = {"task_id": task_id, "task": f"{kind} task {task_id}", "kind": kind,
           "model_params_b": draw(typed(0.1, 1000, ("7B", "13B", "70B", 1.3, "405B"))),
           "method": draw(maybe(st.sampled_from(TRAINING_METHODS if training else SERVING_METHODS)))}
    if training:
        row["train_tokens"] = draw(typed(1e5, 1e12, ("5M", "180M", "20B", "1T")))
        row["epochs"] = draw(maybe(st.sampled_from([1, 2, 3, 0.5, 1.5])))
        row["runs_per_month"] = draw(maybe(log_floats(0.25, 30, 2)))
    elif kind == "inference":
        row["requests_per_day"] = draw(typed(1, 1e8, (1000, 10000, 28800, 86400, 100000)))
        row["tokens_per_request"] = draw(typed(1, 4000, (100, 200, 500)))
        row["serving_hours_per_day"] = draw(maybe(st.one_of(st.integers(1, 24), st.sampled_from([8, 24]))))
        row["concurrency"] = draw(maybe(st.sampled_from([1, 4, 16, 64])))
    else:
        row["batch_requests"] = draw(typed(1, 1e7, (3600, 36000, 100000)))
        row["tokens_per_request"] = draw(typed(1, 4000, (100, 200, 500)))
        row["runs_per_month"] = draw(maybe(log_floats(0.25, 60, 2)))
        row["concurrency"] = draw(maybe(st.sampled_from([1, 8, 64])))
    if not training:
        row["tokens_per_sec"] = draw(maybe(typed(5, 20000, (50, 100, 200, 1000)), 2))
        row["kv_cache_gb"] = draw(maybe(st.sampled_from([0, 2, 16, 40]), 3))
    row["gpu"] = draw(maybe(st.sampled_from(gpu_names), 3))
    row["cards"] = draw(maybe(st.integers(1, 8), 4))
    row["tier"] = draw(maybe(st.sampled_from(TIER_NAMES)))
    row["mfu"] = draw(maybe(st.sampled_from([0.2, 0.35, 0.5, 0.7]), 3))
    first = draw(st.integers(0, months - 1))
    last = draw(st.integers(first, months - 1))
    row["start_month"] = draw(maybe(st.just(first)))
    row["end_month"] = draw(maybe(st.just(last)))
    row["cost_center"] = draw(maybe(st.sampled_from(COST_CENTERS)))
    return row


@st.composite
def inventories(draw, max_tasks: int) -> dict:
    """Settings, Tasks, sometimes a GPUs sheet (a custom GPU, a price for an unpriced card) and Extras."""
    months = draw(st.integers(1, 6))
    start = draw(st.sampled_from(PERIOD_STARTS))
    config = draw(st.fixed_dictionaries({}, optional={
        "mfu": st.sampled_from([0.25, 0.4, 0.55]),
        "hidden_cost_buffer": st.sampled_from([0, 0.1, 0.2, 0.25, 0.3, 0.5]),
        "max_cards": st.integers(1, 16),
        "gpu_choice": st.sampled_from(["cheapest", "balanced"]),
        "spot_overhead": st.sampled_from([0, 0.15, 0.4]),
        "peak_factor": st.sampled_from([0.8, 1, 1.5, 3]),
        "hours_per_month": st.sampled_from([672, 720, 730, 744]),
        "setup_hours": st.sampled_from([0, 0.5, 2]),
        "usable_vram": st.sampled_from([0.8, 0.9, 0.95]),
        "tier_cap_monthly": log_floats(1e3, 1e6),
        "tier_cap_spot": log_floats(1e2, 1e5),
    }))
    config.update(period_start=start, period_months=months)
    gpus = []
    if draw(st.booleans()):
        gpus.append({"gpu": CUSTOM, "class": draw(st.sampled_from(["consumer", "workstation", "datacenter"])),
                     "vram_gb": draw(st.sampled_from([16, 48, 96, 192])),
                     "bandwidth_gbs": draw(log_floats(300, 8000)), "tflops": draw(log_floats(50, 2500)),
                     "interconnect": draw(st.sampled_from(["nvlink", "pcie"])),
                     "scaling": draw(st.sampled_from([0.3, 0.5, 0.9, 1])),
                     "on_demand_per_hour": draw(maybe(log_floats(0.5, 80))),
                     "monthly_per_card": draw(maybe(log_floats(300, 50000))),
                     "idle_per_hour": draw(maybe(log_floats(0.2, 40))),
                     "spot_per_hour": draw(maybe(log_floats(0.1, 30))),
                     "purchase_price": draw(maybe(log_floats(5000, 400000))),
                     "power_w": draw(maybe(st.sampled_from([300, 700, 1000])))})
    if draw(st.booleans()):
        gpus.append({"gpu": draw(st.sampled_from(["H200", "L4"])), "on_demand_per_hour": draw(log_floats(1, 60)),
                     "monthly_per_card": draw(maybe(log_floats(500, 40000)))})
    names = CATALOG + ((CUSTOM,) if any(g["gpu"] == CUSTOM for g in gpus) else ())
    count = draw(st.integers(1, max_tasks))
    tasks = [draw(tasks_strategy(f"T{i + 1:02d}", months, names)) for i in range(count)]
    for task in tasks:
        for key in ("start_month", "end_month"):
            if task[key] is not None:
                task[key] = add_months(start, task[key])
    extras = [{"item": f"extra {i}", "category": draw(st.sampled_from(["storage", "egress", "other"])),
               "monthly_cost": draw(log_floats(1, 5000)),
               "start_month": add_months(start, draw(st.integers(0, months - 1)))}
              for i in range(draw(st.integers(0, 2)))]
    return {"tasks": tasks, "settings": config, "gpus": gpus or None, "extras": extras or None}


def placeable(inputs: Inputs) -> Inputs:
    """The inputs without the tasks that fit no GPU (or have no price); `assume` away inventories left empty."""
    kept = []
    for task in inputs.tasks:
        try:
            plan_task(task, inputs)
        except InputError as exc:
            if not {p.code for p in exc.problems} <= NO_FIT:
                raise
            event(f"dropped a task: {exc.problems[0].code.value}")
            continue
        kept.append(task)
    assume(kept)
    return dataclasses.replace(inputs, tasks=tuple(kept))


def plan_of(inventory: dict, folder: Path) -> Plan:
    """Write the inventory as an input workbook, read it back as a finance user's file, and plan it."""
    folder.mkdir(parents=True, exist_ok=True)
    path = make_input(folder / "input.xlsx", inventory["tasks"], settings=inventory["settings"],
                      gpus=inventory["gpus"], extras=inventory["extras"])
    return plan_budget(placeable(read_inputs(path, today=TODAY)))


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("properties")


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-9)


def _doubled(tp, inputs: Inputs):
    """The same task on the same GPU with twice the work: tokens for training, requests for serving."""
    field = {"inference": "requests_per_day", "batch": "batch_requests"}.get(tp.task.kind, "train_tokens")
    pinned = {**tp.task.values, "gpu": tp.row["gpu"]}
    base = plan_task(dataclasses.replace(tp.task, values=pinned), inputs)
    try:
        more = plan_task(dataclasses.replace(tp.task, values={**pinned, field: pinned[field] * 2}), inputs)
    except InputError as exc:  # twice the work may miss the run's deadline on the cards the user gave
        assert {p.code for p in exc.problems} <= NO_FIT
        return base, None
    return base, more


@pytest.mark.slow
@ENGINE_SETTINGS
@given(inventory=inventories(max_tasks=6))
def test_engine_invariants(workdir, inventory):
    """Costs are never negative, totals add up, cards cover the memory, and more work never needs fewer hours."""
    plan = plan_of(inventory, workdir / f"engine{next(WORKDIR_COUNTER)}")
    s = plan.inputs.settings
    for tp in plan.tasks:
        r = tp.row
        gpu = plan.inputs.gpu(r["gpu"])
        assert r["monthly_cost"] >= 0 and r["period_cost"] >= 0 and r["gpu_hours_per_month"] > 0
        assert all(r[f"cost_{t}"] is None or r[f"cost_{t}"] >= 0 for t in TIER_NAMES)
        assert r["cards_held"] >= r["cards_per_run"] >= r["cards_min"] >= 1
        assert r["cards_billed"] >= r["cards_held"]
        assert r["vram_gb"] <= r["cards_per_run"] * gpu.vram_gb * s.usable_vram * (1 + 1e-12)
        if tp.task.kind == "inference":  # the replicas serve the peak traffic in the serving hours
            capacity = r["replicas"] * r["tokens_per_sec_used"] * 3600 * r["serving_hours_per_day"]
            assert capacity >= r["tokens_per_day"] * s.peak_factor * (1 - 1e-12)
        suited = ("monthly", "on_demand") if tp.task.kind == "inference" else TIER_NAMES
        priced = [r[f"cost_{t}"] for t in suited if r[f"cost_{t}"] is not None]
        assert r[f"cost_{r['cheapest_tier']}"] == min(priced) if priced else r["cheapest_tier"] is None
        if tp.task.values["gpu"] is None:
            assert tp.task.values["cards"] is not None or r["cards_min"] <= s.max_cards
            options = [c for c in tp.candidates if not c.excluded]
            if s.gpu_choice == "cheapest":
                assert r["monthly_cost"] == min(c.row["monthly_cost"] for c in options)
        assert sum(c.chosen for c in tp.candidates) == 1
        base, more = _doubled(tp, plan.inputs)
        assert base.row["gpu_hours_per_month"] == pytest.approx(r["gpu_hours_per_month"], rel=1e-12)
        if more is not None:
            assert more.row["gpu_hours_per_month"] >= base.row["gpu_hours_per_month"]
            assert more.row["monthly_cost"] >= base.row["monthly_cost"]
    for month in plan.months:
        t = plan.month_totals[month]
        active = [tp.row["monthly_cost"] for tp in plan.tasks
                  if tp.task.values["start_month"] <= month <= tp.task.values["end_month"]]
        extras = [e.monthly_cost for e in plan.inputs.extras if e.start_month <= month <= e.end_month]
        assert t.gpu >= 0 and t.extras >= 0 and t.buffer >= 0
        assert _close(t.gpu, math.fsum(active))
        assert _close(t.extras, math.fsum(extras))
        assert _close(t.buffer, s.hidden_cost_buffer * (t.gpu + t.commitments))   # BUFFER: commitments included
        assert _close(t.total, t.gpu + t.commitments + t.extras + t.buffer)
        assert _close(math.fsum(plan.tier_totals[tier][month] for tier in TIER_NAMES), t.gpu)
    assert _close(plan.period_total, math.fsum(t.total for t in plan.month_totals.values()))
    # a commitment is never a loss: its whole term (months after the plan included) costs no more than the rent its
    # covered hours displace within the plan
    for c in plan.commitments:
        assert c.cards == 0 or c.term_total <= math.fsum(c.displaced) * (1 + 1e-9), (c.gpu, c.tier)


def _formula_mismatches(cells: dict, recalculated: dict) -> list[tuple]:
    return [(key, formula, cached, recalculated.get(key, "<missing>")) for key, (formula, cached) in cells.items()
            if not same(recalculated.get(key), cached)]


# On one xdist worker, in this order: LibreOffice recalculates the workbooks the `formulas` property generated
# (on another worker it would have to generate them again).
SAME_WORKER = pytest.mark.xdist_group("generated_workbooks")


@pytest.mark.slow
@SAME_WORKER
@WORKBOOK_SETTINGS
@given(inventory=inventories(max_tasks=5))
def test_written_workbook_recalculates_to_the_cached_values(workdir, inventory):
    """Every formula of a random plan's workbook, evaluated by `formulas` from the cells it reads, is the engine's
    cached value (tests/formula_proof.py), and the workbook ties out."""
    folder = workdir / f"book{next(WORKDIR_COUNTER)}"
    plan = plan_of(inventory, folder)
    out = write_workbook(plan, folder / "budget.xlsx")
    proof = proof_of(out)
    assert proof.cached(("CHECKS", 2, 4)) is True
    assert [str(m) for m in proof.mismatches()] == []
    assert proof.evaluate(("CHECKS", 2, 4)) is True
    if len(GENERATED) < LIBREOFFICE_BOOKS:
        GENERATED.append(out)


@pytest.mark.slow
@SAME_WORKER
def test_libreoffice_agrees_on_the_generated_workbooks(workdir):
    """LibreOffice, in one run, recalculates every workbook of the `formulas` property to its cached values."""
    if soffice_path() is None:
        if CI:
            pytest.fail(SKIP_REASON + " (required when CI=true)")
        pytest.skip(SKIP_REASON)
    if not GENERATED:  # run on its own (-k): generate the workbooks first
        test_written_workbook_recalculates_to_the_cached_values(workdir)
    books = list(dict.fromkeys(GENERATED))
    assert books
    recalculated = recalc_many(books, workdir / "lo")
    for book in books:
        values = {sheet.upper(): cells for sheet, cells in recalculated[book].items()}
        lo = {(sheet, cell): v for sheet, cells in values.items() for cell, v in cells.items()}
        assert _formula_mismatches(formula_cells(book), lo) == [], book
        assert [k for k, v in lo.items() if is_error(v)] == [], book
        assert lo[("CHECKS", "D2")] is True, book


def _one_book(folder: Path, tasks: list[dict], gpus: list[dict] | None = None) -> Path:
    folder.mkdir()
    plan = plan_budget(read_inputs(make_input(folder / "input.xlsx", tasks, gpus=gpus), today=TODAY))
    return write_workbook(plan, folder / "budget.xlsx")


BATCH = {"kind": "batch", "model_params_b": 7, "batch_requests": 1000, "tokens_per_request": 100}


def test_cost_centers_differing_only_in_case_are_summed_apart(tmp_path):
    """Two cost centers that differ only in case keep their own totals, and the Checks tie out."""
    out = _one_book(tmp_path / "case", [{**BATCH, "task_id": "T1", "cost_center": "Research"},
                                        {**BATCH, "task_id": "T2", "cost_center": "research"}])
    assert prove(out) == []
    recalculated = local_recalc(out)
    assert recalculated[("CHECKS", "D2")] is True
    centers = {v for (sheet, _), v in recalculated.items() if sheet == "SUMMARY" and v in ("Research", "research")}
    assert centers == {"Research", "research"}


def test_a_gpu_name_with_a_wildcard_character_is_refused(tmp_path):
    """MATCH reads * ? ~ as wildcards, so a GPU named 'A100*' would read another row: the reader refuses it."""
    gpus = [{"gpu": "A100*", "vram_gb": 40, "bandwidth_gbs": 1500, "tflops": 200, "on_demand_per_hour": 7}]
    path = make_input(tmp_path / "wild.xlsx", [{**BATCH, "task_id": "T1", "gpu": "A100*", "tier": "on_demand"}],
                      gpus=gpus)
    with pytest.raises(InputError) as info:
        read_inputs(path, today=TODAY)
    found = [(p.code, p.sheet, p.cell) for p in info.value.problems]
    assert (Code.UNKNOWN_VALUE, "GPUs", "A2") in found

