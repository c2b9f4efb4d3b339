"""Every use budgetgen makes of xlsxwriter's private API, in one module: nothing else imports an underscore name
of xlsxwriter or reaches into a worksheet's row table.

Why at all: the public API writes one cell per call, and for each formula runs some 40 regular expressions
(dynamic-array and future-function prefixes) that budgetgen's formulas never need (book.SAFE_FUNCTIONS). On the
Tasks and Candidates sheets of a large inventory (millions of formulas, 150,000 Candidates rows of 39 cells) that
per-cell work was most of the build. So budgetgen puts a formula in the row table as write_formula does, minus the
rewriting (`place_cell`), and writes a row of a column block as one string at the moment xlsxwriter writes the
row out (`RowCells`, `StreamedSheet`), escaping texts exactly as xlsxwriter does. And xlsxwriter zips at zlib's
default level with no option for another (`zip_level`).

These names are not xlsxwriter's API and change between releases: `_utf16_len` and `_utf16_truncate` first
appear in 3.3.1 (3.3.0 measures a string with len()), and the bytes a block row renders must match the bytes
xlsxwriter writes. So setup.cfg pins `SUPPORTED_VERSIONS`, releases checked to have every name in
`PRIVATE_NAMES` and to write the same cells; tests/test_xlsx_private.py checks the installed version is in that
range, that every name exists, and (test_fast_paths) that a block row's bytes are xlsxwriter's own.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Iterator
from typing import NamedTuple, Protocol

import xlsxwriter.workbook
from xlsxwriter.utility import _preserve_whitespace, _utf16_len, _utf16_truncate
from xlsxwriter.worksheet import CellFormulaTuple, Worksheet
from xlsxwriter.xmlwriter import XMLwriter

SUPPORTED_VERSIONS = (">=3.3.1", "<3.4")  # setup.cfg's install_requires says the same (a test compares them)

# Each private name used below, as a dotted path from the xlsxwriter package (a test imports every one).
PRIVATE_NAMES = (
    "utility._preserve_whitespace", "utility._utf16_len", "utility._utf16_truncate",
    "worksheet.CellFormulaTuple", "worksheet.Worksheet._check_dimensions", "worksheet.Worksheet._write_single_row",
    "worksheet.Worksheet._write_cell", "format.Format._get_xf_index", "xmlwriter.XMLwriter._escape_control_characters",
    "workbook.ZipFile",
)
# A worksheet's undocumented attributes used below (set in its __init__, so a test reads them off a worksheet).
WORKSHEET_ATTRIBUTES = ("table", "previous_row", "constant_memory", "fh")

utf16_len = _utf16_len
utf16_truncate = _utf16_truncate
preserve_whitespace = _preserve_whitespace
escape_control_characters = XMLwriter._escape_control_characters


def style_index(cell_format) -> int:
    """The style number xlsxwriter gives a format (numbered in order of first use, the moment it is asked)."""
    return cell_format._get_xf_index()


def place_cell(ws, row: int, col: int, cell) -> int:
    """Put a cell into the worksheet's row table as xlsxwriter's write_* methods do: the dimension check (0, or
    -1 outside the sheet, -2 for a row constant_memory has already written out), the previous rows written out,
    the cell stored. Returns the check's code; on a code nothing is stored."""
    code = ws._check_dimensions(row, col)
    if code:
        return code
    if ws.constant_memory and row > ws.previous_row:
        ws._write_single_row(row)
    ws.table[row][col] = cell
    return 0


def writes_rows_in_order(ws) -> bool:
    """Whether the worksheet is in constant_memory mode: each row written out to its file once the next begins."""
    return ws.constant_memory


def row_written_out(ws, row: int) -> bool:
    """Whether constant_memory has written row `row` out already (a write there returns a negative code)."""
    return ws.constant_memory and row < ws.previous_row


def extend_dimensions(ws, row: int, col: int) -> int:
    """The dimension check alone (the sheet's used range grows to row, col): the code as in `place_cell`."""
    return ws._check_dimensions(row, col)


def formula_cell(formula: str, cell_format, value) -> CellFormulaTuple:
    """The row-table entry of a formula (without `=`, not rewritten) with its cached value."""
    return CellFormulaTuple(formula, cell_format, value)


class CellsRenderer(Protocol):
    def render(self, row: int, values: list) -> str:
        """The XML of the cells."""
        ...


class RowCells(NamedTuple):
    """Several adjacent cells held in the row table at their first column, rendered to XML by `renderer` when
    xlsxwriter writes the row out (a StreamedSheet only)."""

    renderer: CellsRenderer
    row: int
    values: list


class StreamedSheet(Worksheet):
    """xlsxwriter's worksheet, which also writes a RowCells entry, as its renderer's XML."""

    def _write_cell(self, row, col, cell) -> None:
        if cell.__class__ is RowCells:
            self.fh.write(cell.renderer.render(cell.row, cell.values))
        else:
            super()._write_cell(row, col, cell)


_ZIP_LEVEL_LOCK = threading.Lock()


@contextlib.contextmanager
def zip_level(level: int) -> Iterator[None]:
    """Workbooks closed inside zip their parts at zlib level `level`: xlsxwriter's module-level ZipFile is
    replaced meanwhile (a lock keeps threads from seeing each other's replacement) and given back after."""
    with _ZIP_LEVEL_LOCK:
        original = xlsxwriter.workbook.ZipFile
        xlsxwriter.workbook.ZipFile = functools.partial(original, compresslevel=level)
        try:
            yield
        finally:
            xlsxwriter.workbook.ZipFile = original
