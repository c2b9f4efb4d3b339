"""`init` marks its example rows; `build` warns while any of them is left in the inventory."""

from __future__ import annotations

import openpyxl
from click.testing import CliRunner

from budgetgen.cli import main

DATE = ("--date", "2026-06-15")


def _run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_build_warns_while_the_template_example_rows_are_present(tmp_path):
    book = tmp_path / "plan.xlsx"
    assert _run("init", book).exit_code == 0
    ids = [r[0] for r in openpyxl.load_workbook(book)["Tasks"].iter_rows(min_row=2, values_only=True) if r[0]]
    assert ids == ["EXAMPLE-01", "EXAMPLE-02", "EXAMPLE-03", "EXAMPLE-04", "EXAMPLE-05"]
    result = _run("build", book, "-o", tmp_path / "out.xlsx", *DATE)
    assert result.exit_code == 0, result.output
    assert ("Warning: EXAMPLE-01, EXAMPLE-02, EXAMPLE-03, EXAMPLE-04, EXAMPLE-05: the template's example rows are still in "
            "the Tasks sheet") in result.output


def test_no_warning_once_the_examples_are_replaced(tmp_path):
    book = tmp_path / "plan.xlsx"
    assert _run("init", book).exit_code == 0
    wb = openpyxl.load_workbook(book)
    ws = wb["Tasks"]
    for row, task_id in zip(range(2, 7), ("KB01", "RS01", "KB02", "KB03", "AP01"), strict=True):
        ws.cell(row, 1).value = task_id
    wb.save(book)
    result = _run("build", book, "-o", tmp_path / "out.xlsx", *DATE)
    assert result.exit_code == 0, result.output
    assert "example rows" not in result.output
