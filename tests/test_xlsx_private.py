"""The writer checks what xlsxwriter returns, and keeps xlsxwriter's private API in one module, pinned.

xlsxwriter's write_* methods return -1 (outside the sheet, or a row constant_memory has written out already) or
-2 (a text cut at 32,767 characters) and go on; every write of budgetgen's sheets raises CellWriteError instead,
naming the sheet and cell. The private names live in workbook/xlsx_private.py, whose version range setup.cfg pins.
"""

from __future__ import annotations

import configparser
import importlib
import importlib.metadata
import re
from pathlib import Path

import pytest
import xlsxwriter
from click.testing import CliRunner
from conftest import REPO, SAMPLE, TODAY

from budgetgen.cli import main
from budgetgen.core.errors import BudgetgenError, CellWriteError
from budgetgen.io.reader import read_inputs
from budgetgen.plan.engine import plan_budget
from budgetgen.workbook import book as book_module
from budgetgen.workbook import write_workbook
from budgetgen.workbook.book import ColumnBlock, Sheet, store_formula
from budgetgen.workbook.xlsx_private import PRIVATE_NAMES, SUPPORTED_VERSIONS, WORKSHEET_ATTRIBUTES

LONG = "x" * 32_768  # one character more than a cell holds
WIDE = "\N{SLIGHTLY SMILING FACE}" * 16_384  # 16,384 characters, but 32,768 UTF-16 units: also too long


def _sheet(tmp_path: Path, constant_memory: bool = True):
    """A workbook with one checked sheet, S; xlsxwriter's row files in tmp_path (a workbook that fails to close
    leaves them)."""
    wb = xlsxwriter.Workbook(str(tmp_path / "w.xlsx"), {"constant_memory": constant_memory, "tmpdir": str(tmp_path)})
    return wb, wb.add_worksheet("S", Sheet)


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text))


# ------------------------------------------------------------------ the pin

def test_setup_cfg_pins_the_versions_xlsx_private_supports():
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    requirement = next(line.strip() for line in config["options"]["install_requires"].splitlines()
                       if line.strip().lower().startswith("xlsxwriter"))
    assert requirement == "xlsxwriter" + ",".join(SUPPORTED_VERSIONS) == "xlsxwriter>=3.3.1,<3.4"


def test_installed_xlsxwriter_is_inside_the_pinned_range():
    installed = _version(importlib.metadata.version("xlsxwriter"))
    low, high = SUPPORTED_VERSIONS
    assert low.startswith(">=") and high.startswith("<")
    assert _version(low) <= installed < _version(high), installed


@pytest.mark.parametrize("dotted", PRIVATE_NAMES)
def test_every_private_name_exists(dotted):
    module, *attributes = dotted.split(".")
    obj = importlib.import_module(f"xlsxwriter.{module}")
    for attribute in attributes:
        obj = getattr(obj, attribute)  # AttributeError: a release without the name
    assert obj is not None


def test_the_worksheet_attributes_exist(tmp_path):
    wb, ws = _sheet(tmp_path)
    assert [a for a in WORKSHEET_ATTRIBUTES if not hasattr(ws, a)] == []
    wb.close()


def test_no_other_module_uses_xlsxwriter_private_names():
    """An underscore name imported from xlsxwriter, or a worksheet's private method or row table reached,
    anywhere in the package but xlsx_private."""
    private = re.compile(r"from xlsxwriter[\w.]* import [^\n]*\b_\w|\._(check_dimensions|write_single_row|write_cell"
                         r"|get_xf_index|escape_control_characters)\b|\.table\[|\.previous_row\b|workbook\.ZipFile")
    found = [f"{path.relative_to(REPO)}:{n}" for path in sorted((REPO / "budgetgen").rglob("*.py"))
             if path.name != "xlsx_private.py"
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if private.search(line)]
    assert found == []


# ------------------------------------------------------------------ checked writes

@pytest.mark.parametrize("text", [LONG, WIDE], ids=["32768-chars", "32768-utf16-units"])
def test_a_text_longer_than_a_cell_is_an_error_not_a_cut(tmp_path, text):
    wb, ws = _sheet(tmp_path)
    ws.write_string(0, 0, "x" * 32_767)  # the most a cell holds: written
    with pytest.raises(CellWriteError) as caught:
        ws.write_string(2, 1, text)
    wb.close()
    error = caught.value
    assert (error.sheet, error.cell, error.method, error.code) == ("S", "B3", "write_string", -2)
    assert str(error).startswith("S!B3 was not written: a text longer than the 32,767 characters a cell holds")
    assert isinstance(error, BudgetgenError)  # the CLI prints it as `Error: ...`, no traceback


def test_a_row_past_the_last_is_an_error(tmp_path):
    wb, ws = _sheet(tmp_path, constant_memory=False)
    ws.write_number(1_048_575, 0, 1)  # row 1,048,576: the last
    with pytest.raises(CellWriteError) as caught:
        ws.write_number(1_048_576, 0, 1)
    wb.close()
    assert (caught.value.cell, caught.value.code) == ("row 1,048,577, column 1", -1)
    assert "outside the sheet (Excel has 1,048,576 rows and 16,384 columns)" in str(caught.value)


def test_a_column_past_the_last_in_a1_notation_is_an_error(tmp_path):
    wb, ws = _sheet(tmp_path, constant_memory=False)
    with pytest.raises(CellWriteError) as caught:
        ws.write("XFE1", "one column too far")  # XFD is the 16,384th column
    wb.close()
    assert (caught.value.cell, caught.value.method, caught.value.code) == ("XFE1", "write", -1)


def test_a_cell_behind_a_written_row_is_an_error_not_dropped(tmp_path):
    """constant_memory writes a row out when a later row begins: a cell for an earlier row is dropped."""
    wb, ws = _sheet(tmp_path)
    ws.write_string(4, 0, "row 5")
    with pytest.raises(CellWriteError) as caught:
        ws.write_string(1, 2, "row 2, too late")
    wb.close()
    assert (caught.value.cell, caught.value.code) == ("C2", -1)
    assert "its row was already written out" in str(caught.value)


def test_a_checked_range_method(tmp_path):
    wb, ws = _sheet(tmp_path, constant_memory=False)
    with pytest.raises(CellWriteError) as caught:
        ws.merge_range(0, 0, 0, 16_384, "too wide")
    wb.close()
    assert (caught.value.sheet, caught.value.cell, caught.value.method) == ("S", "A1", "merge_range")


def test_store_formula_is_checked(tmp_path):
    wb, ws = _sheet(tmp_path)
    store_formula(ws, 3, 0, "1+1", None, 2)
    with pytest.raises(CellWriteError) as behind:
        store_formula(ws, 0, 0, "1+1", None, 2)
    with pytest.raises(CellWriteError) as outside:
        store_formula(ws, 3, 16_384, "1+1", None, 2)
    wb.close()
    assert (behind.value.cell, behind.value.method, behind.value.code) == ("A1", "store_formula", -2)
    assert "already written out" in str(behind.value)
    assert (outside.value.cell, outside.value.code) == ("row 4, column 16,385", -1)


def test_column_block_rows_are_checked(tmp_path):
    wb, ws = _sheet(tmp_path)
    text = wb.add_format({"num_format": "@"})
    block = ColumnBlock([(1, "a", None, text), (2, "b", "{r}*2", text)])
    block.store(ws, 5, {"a": "ok", "b": 12})
    with pytest.raises(CellWriteError) as behind:
        block.store(ws, 2, {"a": "late", "b": 6})
    block.store(ws, 6, {"a": LONG, "b": 14})
    with pytest.raises(CellWriteError) as cut:
        wb.close()  # the row is rendered when xlsxwriter writes it out
    assert (behind.value.sheet, behind.value.cell, behind.value.code) == ("S", "C3", -2)
    assert (cut.value.sheet, cut.value.cell, cut.value.code) == ("S", "B7", -2)
    assert "32,767" in str(cut.value)


def test_every_sheet_of_the_budget_writes_through_the_checks(tmp_path, monkeypatch):
    """A text too long for a cell in any sheet writer's header stops the build with the cell named and leaves
    no workbook, where xlsxwriter would cut it and go on."""
    plan = plan_budget(read_inputs(SAMPLE, today=TODAY))
    monkeypatch.setattr(book_module.Book, "t", lambda self, text: LONG)
    out, staging = tmp_path / "out" / "budget.xlsx", tmp_path / "staging"
    staging.mkdir()
    with pytest.raises(CellWriteError) as caught:
        write_workbook(plan, out, tmpdir=staging)
    assert caught.value.sheet == "Assumptions" and caught.value.code == -2  # the first sheet written
    assert list(out.parent.iterdir()) == []


def test_the_cli_shows_the_write_error_without_a_traceback(tmp_path, monkeypatch):
    monkeypatch.setattr(book_module.Book, "t", lambda self, text: LONG)
    result = CliRunner().invoke(main, ["build", str(SAMPLE), "-o", str(tmp_path / "b.xlsx"), "-q"])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    assert "Error: Assumptions!" in result.output and "Traceback" not in result.output
