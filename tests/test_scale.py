"""What changes with a large inventory: the inventory's cap counts tasks (the rows below the header), and an Order line
serving thousands of tasks names the first and counts the rest."""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
from conftest import REPO, TODAY, make_input

from budgetgen import reader
from budgetgen.errors import InputError
from budgetgen.i18n import tr
from budgetgen.reader import read_inputs
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
