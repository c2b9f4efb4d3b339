"""Opening untrusted input workbooks: every bad file ends in one clear problem, with bounded work."""

from __future__ import annotations

import hashlib
import os
import struct
import zipfile
from collections.abc import Callable
from pathlib import Path

import openpyxl
import openpyxl.xml
import pytest
import xlsxwriter
from hypothesis import given, settings
from hypothesis import strategies as st
from openpyxl.worksheet._read_only import ReadOnlyWorksheet

from budgetgen.core.errors import BudgetgenError, Code, InputError, Problem
from budgetgen.io.safefile import (
    MB,
    OLE_MAGIC,
    SAVE_AS_XLSX,
    iter_rows,
    load_input_workbook,
)

pytestmark = pytest.mark.filterwarnings("error")

MAIN_NS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
LAUGHS = (
    '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol0 "lol">'
    + "".join(f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10))
    + "]>"
)


def sha256(path: Path) -> str:
    """The file's SHA-256, to prove reading never changes it."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def problem_of(call: Callable[[], object]) -> Problem:
    """The one problem `call` raises."""
    with pytest.raises(InputError) as info:
        call()
    assert len(info.value.problems) == 1
    return info.value.problems[0]


def load_problem(path: Path) -> Problem:
    """The problem opening `path` raises: placed at the file's name, and the file left unchanged."""
    before = sha256(path) if path.is_file() else None
    problem = problem_of(lambda: load_input_workbook(path))
    assert (problem.sheet, problem.cell) == (path.name, "")
    assert str(problem).startswith(f"{path.name} ")
    assert (sha256(path) if path.is_file() else None) == before
    return problem


def read_rows(path: Path, max_rows: int = 100_000) -> list[tuple[int, tuple]]:
    """Every row iter_rows yields from the sheet Tasks, the workbook closed afterwards."""
    wb = load_input_workbook(path)
    try:
        return list(iter_rows(wb["Tasks"], max_rows=max_rows))
    finally:
        wb.close()


def rewrite(src: Path, dst: Path, members: dict[str, bytes]) -> Path:
    """Copy the workbook zip `src` to `dst`, replacing or adding the given members."""
    replace = dict(members)
    with (
        zipfile.ZipFile(src) as old,
        zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as new,
    ):
        for item in old.infolist():
            new.writestr(item.filename, replace.pop(item.filename, old.read(item)))
        for name, data in replace.items():
            new.writestr(name, data)
    return dst


def sheet_xml(body: str, dimension: str = "A1") -> bytes:
    """A worksheet part with a declared dimension and the given sheetData content."""
    return (
        f'<worksheet xmlns="{MAIN_NS}"><dimension ref="{dimension}"/><sheetData>{body}</sheetData></worksheet>'
    ).encode()


def ole_file(*streams: str, gap: int = 0) -> bytes:
    """A compound-file header, `gap` filler bytes, then directory entries naming `streams`."""
    entries = b"".join(
        (name.encode("utf-16-le") + b"\0\0").ljust(64, b"\0") + struct.pack("<H", 2 * len(name) + 2).ljust(64, b"\0")
        for name in ("Root Entry", *streams)
    )
    return OLE_MAGIC.ljust(512, b"\0") + bytes(gap) + entries


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """The work reading does, counted: rows and cells openpyxl's read-only sheets hand over (bound work, not time)."""
    counts = {"rows": 0, "cells": 0}
    original = ReadOnlyWorksheet._cells_by_row

    def counting(self, *args, **kwargs):
        for row in original(self, *args, **kwargs):
            counts["rows"] += 1
            counts["cells"] += len(row)
            yield row

    monkeypatch.setattr(ReadOnlyWorksheet, "_cells_by_row", counting)
    return counts


@pytest.fixture
def workbook(tmp_path: Path) -> Path:
    """A valid input: shared strings, a formula with its cached value, styled empty cells."""
    path = tmp_path / "inventory.xlsx"
    wb = xlsxwriter.Workbook(path)
    ws = wb.add_worksheet("Tasks")
    yellow = wb.add_format({"bg_color": "#FFFFCC"})
    ws.write_row(0, 0, ["task_id", "gpu_hours", "cost"])
    ws.write_row(1, 0, ["t1", 7])
    ws.write_formula(1, 2, "=B2*2", None, 14)
    ws.write_blank(2, 0, None, yellow)
    ws.write_row(3, 0, ["t2", 3.5, None, "note"])
    ws.write_blank(3, 9, None, yellow)
    wb.close()
    return path


def test_openpyxl_parses_with_defusedxml() -> None:
    assert openpyxl.xml.DEFUSEDXML is True


def test_refuses_to_open_without_defusedxml(workbook: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(openpyxl.xml, "DEFUSEDXML", False)
    with pytest.raises(BudgetgenError) as info:
        load_input_workbook(workbook)
    assert "defusedxml" in str(info.value)
    assert not isinstance(info.value, InputError)


def test_reads_cached_values_real_row_numbers_and_leaves_the_file_unchanged(
    workbook: Path,
) -> None:
    before = sha256(workbook)
    assert read_rows(workbook) == [
        (1, ("task_id", "gpu_hours", "cost")),
        (2, ("t1", 7, 14)),
        (4, ("t2", 3.5, None, "note")),
    ]
    assert sha256(workbook) == before


@pytest.mark.parametrize("name", ["inventory.xlsm", "INVENTORY.XLSX"])
def test_accepts_xlsm_and_any_case_suffix(workbook: Path, name: str) -> None:
    path = workbook.rename(workbook.with_name(name))
    assert read_rows(path)[0] == (1, ("task_id", "gpu_hours", "cost"))


def test_missing_file(tmp_path: Path) -> None:
    problem = load_problem(tmp_path / "nowhere.xlsx")
    assert problem.code is Code.NOT_A_FILE
    assert "does not exist" in problem.message
    assert str(tmp_path) in problem.message


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(Path.mkdir, id="folder"),
        pytest.param(
            lambda path: os.mkfifo(path),
            id="fifo",
            marks=pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX only"),
        ),
    ],
)
def test_not_a_regular_file(tmp_path: Path, make: Callable[[Path], object]) -> None:
    path = tmp_path / "inventory.xlsx"
    make(path)
    problem = load_problem(path)
    assert problem.code is Code.NOT_A_FILE
    assert "give the path of the .xlsx workbook itself" in problem.message


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("inventory.xls", "Excel 97-2003"),
        ("inventory.csv", "CSV"),
        ("inventory.ods", "OpenDocument"),
        ("inventory.numbers", "Numbers"),
        ("inventory.xlsb", "binary"),
        ("inventory.json", '".json"'),
        ("inventory", "without a suffix"),
    ],
)
def test_wrong_suffix_even_with_workbook_content(workbook: Path, name: str, kind: str) -> None:
    path = workbook.rename(workbook.with_name(name))
    problem = load_problem(path)
    assert problem.code is Code.WRONG_FORMAT
    assert kind in problem.message
    assert problem.message.endswith(SAVE_AS_XLSX)


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"", "empty"),
        (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj", "PDF"),
        (ole_file("Workbook", "SummaryInformation"), "97-2003"),
        (b"task_id,gpu_hours\nt1,7\n", "zip archive"),
    ],
    ids=["empty", "pdf", "old-xls", "csv-text"],
)
def test_content_that_is_not_a_workbook(tmp_path: Path, content: bytes, says: str) -> None:
    path = tmp_path / "inventory.xlsx"
    path.write_bytes(content)
    problem = load_problem(path)
    assert problem.code is Code.WRONG_FORMAT
    assert says in problem.message


# The second gap puts the name "EncryptionInfo" (after a 512-byte header and two 128-byte
# entries) 10 bytes before the end of the first chunk read.
@pytest.mark.parametrize("gap", [0, MB - 10 - 512 - 2 * 128], ids=["at-start", "a-megabyte-in"])
def test_password_protected(tmp_path: Path, gap: int) -> None:
    path = tmp_path / "inventory.xlsx"
    path.write_bytes(ole_file("\x06DataSpaces", "EncryptionInfo", "EncryptedPackage", gap=gap))
    problem = load_problem(path)
    assert problem.code is Code.ENCRYPTED
    assert "remove the password (File > Info > Protect Workbook)" in problem.message


def test_zip_that_is_not_a_workbook(tmp_path: Path) -> None:
    path = tmp_path / "inventory.xlsx"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("mimetype", "application/vnd.oasis.opendocument.spreadsheet")
        archive.writestr("content.xml", "<office:document-content/>")
    problem = load_problem(path)
    assert problem.code is Code.WRONG_FORMAT
    assert "xl/workbook.xml" in problem.message


@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_damaged_zip(workbook: Path, damage: str) -> None:
    data = workbook.read_bytes()
    workbook.write_bytes(data[: len(data) // 2] if damage == "truncated" else b"PK\x03\x04" + bytes(200))
    problem = load_problem(workbook)
    assert problem.code is Code.UNREADABLE
    assert "damaged" in problem.message


def test_zip_bomb_over_the_total_size(tmp_path: Path) -> None:
    path = tmp_path / "bomb.xlsx"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.writestr("xl/workbook.xml", "<workbook/>")
        with archive.open("xl/worksheets/sheet1.xml", "w", force_zip64=True) as member:
            zeros = bytes(MB)
            for _ in range(300):
                member.write(zeros)
    problem = load_problem(path)
    assert problem.code is Code.TOO_LARGE
    assert "unpacks to 300 MB, more than the 256 MB" in problem.message


def test_member_packed_like_a_zip_bomb(workbook: Path, tmp_path: Path) -> None:
    path = rewrite(
        workbook,
        tmp_path / "ratio.xlsx",
        {"xl/media/image1.png": bytes(20 * MB)},
    )
    problem = load_problem(path)
    assert problem.code is Code.TOO_LARGE
    assert "xl/media/image1.png" in problem.message
    assert "zip bomb" in problem.message


@pytest.mark.parametrize(
    ("member", "xml"),
    [
        (
            "xl/sharedStrings.xml",
            f'<sst xmlns="{MAIN_NS}"><si><t>&lol9;</t></si></sst>',
        ),
        (
            "xl/worksheets/sheet1.xml",
            sheet_xml('<row r="1"><c r="A1"><v>&lol9;</v></c></row>').decode(),
        ),
    ],
    ids=["shared-strings", "worksheet"],
)
def test_billion_laughs(workbook: Path, tmp_path: Path, member: str, xml: str) -> None:
    path = rewrite(workbook, tmp_path / "laughs.xlsx", {member: (LAUGHS + xml).encode()})
    problem = load_problem(path)
    assert problem.code is Code.UNREADABLE
    assert "billion laughs" in problem.message


def test_other_openpyxl_failure_is_one_problem(workbook: Path, tmp_path: Path) -> None:
    path = rewrite(workbook, tmp_path / "broken.xlsx", {"xl/workbook.xml": b"<workbook"})
    problem = load_problem(path)
    assert problem.code is Code.UNREADABLE
    assert "could not be read (ParseError: " in problem.message


@pytest.mark.parametrize("dimension", ["A1:A1", "A1:XFD1048576", "C3:XFD1048576"])
def test_forged_dimension_is_not_trusted(workbook: Path, tmp_path: Path, dimension: str, parsed: dict) -> None:
    body = '<row r="1"><c r="A1"><v>1</v></c><c r="B1"><v>2</v></c></row><row r="3"><c r="A3"><v>3</v></c></row>'
    path = rewrite(
        workbook,
        tmp_path / "forged.xlsx",
        {"xl/worksheets/sheet1.xml": sheet_xml(body, dimension)},
    )
    assert read_rows(path) == [(1, (1, 2)), (3, (3,))]
    assert parsed["rows"] <= 3 and parsed["cells"] <= 3 * 2  # not the 16,384 columns or 1,048,576 rows declared


def test_rows_padded_to_the_last_column_are_trimmed(workbook: Path, tmp_path: Path) -> None:
    body = (
        '<row r="1"><c r="A1"><v>1</v></c><c r="XFD1" s="1"/></row>'
        '<row r="2"><c r="XFD2" s="1"/></row>'
        '<row r="3"><c r="A3"><v>3</v></c><c r="C3"><v>4</v></c><c r="XFD3" s="1"/></row>'
    )
    path = rewrite(workbook, tmp_path / "wide.xlsx", {"xl/worksheets/sheet1.xml": sheet_xml(body)})
    assert read_rows(path) == [(1, (1,)), (3, (3, None, 4))]


def test_too_many_rows(tmp_path: Path, parsed: dict) -> None:
    path = tmp_path / "big.xlsx"
    wb = xlsxwriter.Workbook(path, {"constant_memory": True})
    ws = wb.add_worksheet("Tasks")
    for row in range(3_000):
        ws.write_number(row, 0, row)
    wb.close()
    problem = problem_of(lambda: read_rows(path, max_rows=1_000))
    assert (problem.code, problem.sheet, problem.cell) == (Code.TOO_LARGE, "Tasks", "")
    assert "more than 1,000 filled rows (row 1,001" in problem.message
    assert parsed["rows"] == 1_001  # reading stopped at the first row too many, not at the end of the sheet


def test_stops_reading_at_the_first_row_too_many(workbook: Path, tmp_path: Path) -> None:
    rows = "".join(f'<row r="{r}"><c r="A{r}"><v>{r}</v></c></row>' for r in (1, 2, 3))
    damaged = sheet_xml(rows)[: -len(b"</sheetData></worksheet>")] + b"<row <<"
    path = rewrite(workbook, tmp_path / "tail.xlsx", {"xl/worksheets/sheet1.xml": damaged})
    assert problem_of(lambda: read_rows(path, max_rows=2)).code is Code.TOO_LARGE
    problem = problem_of(lambda: read_rows(path, max_rows=3))
    assert (problem.code, problem.sheet) == (Code.UNREADABLE, "Tasks")
    assert "could not be read (ParseError: " in problem.message


@pytest.mark.parametrize("row", [1_048_577, 2_000_000_000])
def test_row_number_past_excel_limit(workbook: Path, tmp_path: Path, row: int) -> None:
    body = f'<row r="1"><c r="A1"><v>1</v></c></row><row r="{row}"><c r="A{row}"><v>2</v></c></row>'
    path = rewrite(workbook, tmp_path / "far.xlsx", {"xl/worksheets/sheet1.xml": sheet_xml(body)})
    problem = problem_of(lambda: read_rows(path))
    assert (problem.code, problem.sheet) == (Code.UNREADABLE, "Tasks")
    assert "1,048,576" in problem.message


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="lists open files from /proc")
def test_file_is_closed_when_reading_stops_early(workbook: Path) -> None:
    wb = load_input_workbook(workbook)
    with pytest.raises(InputError) as info:  # keeps the failed reader's frames alive
        list(iter_rows(wb["Tasks"], max_rows=1))
    wb.close()
    assert info.value.problems[0].code is Code.TOO_LARGE
    open_files = {os.path.realpath(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd")}
    assert os.path.realpath(workbook) not in open_files


def test_text_longer_than_a_cell_holds_is_passed_whole(workbook: Path, tmp_path: Path) -> None:
    cell = f'<c r="B1" t="inlineStr"><is><t>{"y" * 1_000_000}</t></is></c>'
    path = rewrite(
        workbook, tmp_path / "long.xlsx", {"xl/worksheets/sheet1.xml": sheet_xml(f'<row r="1">{cell}</row>')}
    )
    rows = read_rows(path)
    assert [(row, len(values), len(values[1])) for row, values in rows] == [(1, 2, 1_000_000)]


grids = st.dictionaries(
    st.tuples(st.integers(1, 12), st.integers(1, 6)),
    st.one_of(st.integers(-1000, 1000), st.text("abc xyz", min_size=1, max_size=5)),
    max_size=20,
)


@settings(max_examples=30, deadline=None)
@given(cells=grids, read_only=st.booleans())
def test_rows_are_the_cells_really_there(
    tmp_path_factory: pytest.TempPathFactory,
    cells: dict[tuple[int, int], object],
    read_only: bool,
) -> None:
    path = tmp_path_factory.mktemp("grid") / "grid.xlsx"
    wb = openpyxl.Workbook()
    for (row, col), value in cells.items():
        wb.active.cell(row, col, value)
    wb.save(path)
    expected = []
    for row in sorted({r for r, _ in cells}):
        width = max(c for r, c in cells if r == row)
        expected.append((row, tuple(cells.get((row, col)) for col in range(1, width + 1))))
    wb = openpyxl.load_workbook(path, read_only=read_only)
    try:
        assert list(iter_rows(wb.active)) == expected
    finally:
        wb.close()
