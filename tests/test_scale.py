"""What changes with a large inventory: the inventory's cap counts tasks (the rows below the header), and an Order line
serving thousands of tasks names the first and counts the rest."""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
from conftest import REPO, TODAY, make_input

from budgetgen.core.errors import InputError
from budgetgen.core.i18n import tr
from budgetgen.io import reader
from budgetgen.io.reader import read_inputs
from budgetgen.workbook.order import tasks_served


def _book(lang: str):
    return SimpleNamespace(t=lambda text: tr(text, lang))


def test_an_order_line_of_few_tasks_names_them_all():
    assert tasks_served(_book("en"), ("ML01", "KB03")) == "ML01, KB03"


@pytest.mark.parametrize(("lang", "more"), [("en", " and 1,969 more"), ("zh", "等另外1,969个")])
def test_an_order_line_of_thousands_of_tasks_names_what_fits_in_250_characters(lang, more):
    ids = tuple(f"T{i:05d}" for i in range(2_000))   # 6 characters each, 8 with the separator
    # n ids take 8n - 2 characters: 31 take 246, a 32nd would make 254; 2,000 - 31 = 1,969 more
    assert tasks_served(_book(lang), ids) == ", ".join(ids[:31]) + more


def test_the_cap_is_the_documented_fifty_thousand_tasks():
    docs = (REPO / "docs" / "speed-and-scale.md").read_text(encoding="utf-8")
    assert reader.MAX_TABLE_ROWS == 50_000
    assert "Inventories are capped at 50,000 tasks" in docs


TASK = {"kind": "inference", "model_params_b": 7, "requests_per_day": 1000, "tokens_per_request": 200}


@pytest.mark.parametrize("tasks", [1, 3])
def test_as_many_tasks_as_the_cap_are_read(tmp_path, monkeypatch, tasks):
    monkeypatch.setattr(reader, "MAX_TABLE_ROWS", 3)
    book = make_input(tmp_path / "in.xlsx", [{"task_id": f"T{i}", **TASK} for i in range(tasks)])
    assert [t.task_id for t in read_inputs(book, today=TODAY).tasks] == [f"T{i}" for i in range(tasks)]


def test_one_task_more_than_the_cap_is_refused_at_its_row(tmp_path, monkeypatch):
    monkeypatch.setattr(reader, "MAX_TABLE_ROWS", 3)
    book = make_input(tmp_path / "in.xlsx", [{"task_id": f"T{i}", **TASK} for i in range(4)])
    with pytest.raises(InputError) as caught:
        read_inputs(book, today=TODAY)
    problem, = caught.value.problems
    # the header in row 1, the tasks in rows 2-5: the fourth task, row 5, is one too many
    assert problem.sheet == "Tasks"
    assert "has more than 3 rows below its header (row 5 is one too many)" in str(problem)


@pytest.mark.parametrize("command", [["--help"], ["bill-sql", "--help"], ["catalog", "--help"]])
def test_the_cli_starts_without_the_bill_engine_or_the_readers(command):
    """`budgetgen --help` loads neither pandas nor DuckDB nor openpyxl (they cost over a second to import): the
    commands import them when they run. (Its time is measured by benchmarks/bench_start.py, not here.)"""
    probe = ("import sys\nfrom budgetgen.cli import main\ntry:\n    main()\nexcept SystemExit:\n    pass\n"
             "print(sorted(m for m in ('pandas', 'duckdb', 'openpyxl', 'sqlglot') if m in sys.modules))")
    run = subprocess.run([sys.executable, "-c", probe, *command], capture_output=True, text=True, check=True,
                         cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert run.stdout.strip().splitlines()[-1] == "[]"


GIB = 2**30


@pytest.mark.parametrize(("memory", "address_space", "cgroup", "limit"), [
    (24 * GIB, None, None, "1024MiB"),        # 1 GB on a large machine (a quarter of it, 6 GB, is more)
    (2 * GIB, None, None, "512MiB"),          # a quarter of a small machine: 2 GB / 4
    (24 * GIB, 3 * GIB // 2, None, "768MiB"),  # ulimit -v 1.5 GB: half of it
    (24 * GIB, GIB // 2, None, "256MiB"),     # half of a small address space, under 1 GB
    (64 * GIB, None, GIB, "512MiB"),          # half of the cgroup's 1 GB limit
    (64 * GIB, None, 8 * GIB, "1024MiB"),     # a cgroup's 8 GB leaves the 1 GB
    (24 * GIB, 100 * 2**20, None, "64MiB"),   # never below the least DuckDB reads a bill in
])
def test_a_blank_recon_memory_limit_is_sized_from_the_machine(monkeypatch, memory, address_space, cgroup, limit):
    import resource

    from budgetgen.recon import bill_sums

    monkeypatch.setattr(os, "sysconf", lambda name: {"SC_PAGE_SIZE": 4096, "SC_PHYS_PAGES": memory // 4096}[name])
    unlimited = resource.RLIM_INFINITY
    monkeypatch.setattr(resource, "getrlimit", lambda which: (address_space or unlimited, unlimited))
    monkeypatch.setattr(bill_sums, "_cgroup_memory_max", lambda: cgroup)
    assert bill_sums.machine_memory_limit() == limit


@pytest.mark.parametrize("given", [None, "1KB"])
def test_the_bills_are_read_with_the_setting_else_the_machine_sized_limit(tmp_path, monkeypatch, given):
    """A blank recon_memory_limit reaches DuckDB as machine_memory_limit's (replaced here by a limit too small to
    read a bill in, so that the build names it); a typed one as typed."""
    import datetime as dt

    from conftest import FOCUS_SAMPLE

    from budgetgen.api import build_budget
    from budgetgen.recon import pipeline

    monkeypatch.setattr(pipeline, "machine_memory_limit", lambda: "2KB")
    settings = {"currency": "USD", "period_start": "2024-09", "period_months": 2}
    book = make_input(tmp_path / "usd.xlsx", [{"task_id": "T1", **TASK, "gpu": "RTX 4090", "tier": "on_demand"}],
                      settings=settings if given is None else {**settings, "recon_memory_limit": given})
    with pytest.raises(InputError) as caught:
        build_budget(book, tmp_path / "out.xlsx", bills=[FOCUS_SAMPLE], build_date=dt.date(2024, 8, 1))
    problem, = caught.value.problems
    assert problem.sheet == "Settings"
    assert problem.message.startswith(f'recon_memory_limit: "{given or "2KB"}" is below the 64MB')
