"""Input workbooks whose values pass a type check but not the sense of the plan: each is a problem at its cell,
never a traceback nor a value silently taken."""

from __future__ import annotations

import openpyxl
import pytest
from conftest import make_input

from budgetgen.core.errors import Code, InputError
from budgetgen.io.reader import read_inputs

pytestmark = pytest.mark.filterwarnings("error")

SERVICE = {"task_id": "S1", "kind": "inference", "model": "Llama-3.1-8B", "requests_per_day": 1000,
           "tokens_per_request": 200}


def problems(path) -> list:
    with pytest.raises(InputError) as caught:
        read_inputs(path)
    return caught.value.problems


def places(found) -> list[tuple]:
    return [(p.code, p.sheet, p.cell) for p in found]


def test_a_plan_past_december_9999_is_a_settings_problem_not_a_traceback(tmp_path):
    """9999-12 plus 3 months is 10000-02, which sorts before 9999-12 as text: the last start is 9999-10."""
    book = make_input(tmp_path / "in.xlsx", [SERVICE], {"period_start": "9999-12"})
    found, = problems(book)
    assert places([found]) == [(Code.OUT_OF_RANGE, "Settings", "A2")]
    assert found.message.endswith("runs past 9999-12, the last month a workbook can show: start by 9999-10")


def test_ids_the_same_after_case_folding_or_without_invisible_characters_are_duplicates(tmp_path):
    book = make_input(tmp_path / "in.xlsx", [{**SERVICE, "task_id": "STRASSE"}, {**SERVICE, "task_id": "straße"},
                                             SERVICE, {**SERVICE, "task_id": "S\u200b1"}])
    assert places(problems(book)) == [(Code.DUPLICATE_TASK, "Tasks", "A3"), (Code.DUPLICATE_TASK, "Tasks", "A5")]


def test_a_resource_twice_on_assignments_is_refused_not_the_last_taken(tmp_path):
    book = make_input(tmp_path / "in.xlsx", [SERVICE, {**SERVICE, "task_id": "S2"}],
                      extra_sheets={"Assignments": [["resource_id", "task_id"], ["i-1", "S1"], ["i-1", "S2"]]})
    found, = problems(book)
    assert places([found]) == [(Code.DUPLICATE_TASK, "Assignments", "A3")]
    assert found.message.startswith('resource_id: "i-1" is already assigned in A2')


@pytest.mark.parametrize(("column", "value", "code"), [
    ("serving_hours_per_day", 48, Code.OUT_OF_RANGE),  # a day has 24
    ("concurrency", 0.3, Code.NOT_WHOLE),  # sequences are whole
    ("active_params_b", 9, Code.OUT_OF_RANGE),  # Llama-3.1-8B has 8 billion in all
    ("prompt_tokens", 200_000, Code.OUT_OF_RANGE),  # beyond its context of 131,072 tokens
])
def test_task_values_beyond_what_they_measure_are_refused(tmp_path, column, value, code):
    book = make_input(tmp_path / "in.xlsx", [{**SERVICE, column: value}])
    found, = problems(book)
    assert (found.code, found.sheet, found.cell) == (code, "Tasks", "F2")


def test_active_parameters_above_the_typed_total(tmp_path):
    book = make_input(tmp_path / "in.xlsx", [{"task_id": "S1", "kind": "inference", "model_params_b": 7,
                                              "active_params_b": 8, "requests_per_day": 1000,
                                              "tokens_per_request": 200}])
    found, = problems(book)
    assert places([found]) == [(Code.OUT_OF_RANGE, "Tasks", "D2")]
    assert found.message.startswith("active_params_b: 8 is more than the model's 7 billion parameters")


@pytest.mark.parametrize("error", ["#N/A", "#REF!", "#VALUE!"])
def test_a_cached_spreadsheet_error_is_no_setting(tmp_path, error):
    """A gpu_line_pattern of #N/A would match no line: GPU billed 0."""
    book = make_input(tmp_path / "in.xlsx", [SERVICE], {"gpu_line_pattern": error})
    found, = problems(book)
    assert places([found]) == [(Code.FORMULA, "Settings", "B3")]
    assert f'"{error}" is a spreadsheet error' in found.message


@pytest.mark.parametrize(("title", "meant"), [("Extra", "Extras"), ("Setting", "Settings"), ("assignment", "Assignments")])
def test_a_sheet_named_nearly_like_an_input_sheet_is_named_not_ignored(tmp_path, title, meant):
    book = make_input(tmp_path / "in.xlsx", [SERVICE], extra_sheets={title: [["item", "monthly_cost"], ["x", 5]]})
    if meant == "Settings":  # the only Settings sheet is the one misnamed: its period_start would be ignored
        wb = openpyxl.load_workbook(book)
        del wb[title]
        wb["Settings"].title = title
        wb.save(book)
    found, = problems(book)
    assert places([found]) == [(Code.MISSING_SHEET, title, "")]
    assert f'budgetgen reads a sheet named "{meant}"' in found.message


def test_a_sheet_of_notes_is_not_taken_for_an_input_sheet(tmp_path):
    book = make_input(tmp_path / "in.xlsx", [SERVICE], extra_sheets={"Notes": [["anything"]]})
    assert [t.task_id for t in read_inputs(book).tasks] == ["S1"]
