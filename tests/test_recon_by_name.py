"""The Recon tab addresses its cells by column name (issue 32): each table's columns are declared once
(`ReconLayout.TASKS`, `RESOURCES`, `DAILY`, `LIKE`, `CURRENCIES`, `NON_GPU`, `VALUES`, `COMMITMENTS`), and the
letters in its formulas and the columns it writes follow from the declaration. Reordered declarations with a column
inserted build a tab whose every formula still evaluates, from the cached values of the cells it reads, to its own
cached value (the cell-by-cell proof of tests/formula_proof.py), with the same totals, each value under its header.

The plan and bill are tests/test_totals.py's (one service on H100s, reserved; a July bill with a reserved and an
on-demand GPU resource, the reservation fee and storage), with one resource listed on the tab: the other goes to
the month's Resources sheet, whose formulas read the tab's task block through names.
"""

from __future__ import annotations

import csv

import openpyxl
import pytest
from conftest import make_input, prove
from test_totals import EXTRAS, H100, HEADER, LINES, SVC

import budgetgen
from budgetgen.workbook.layout import Columns, ReconLayout

TAB, DETAIL = "Recon 2026-07", "Resources 2026-07"


def _moved(columns: Columns, spare: str | None) -> Columns:
    """The declaration reversed, a column `spare` inserted second (when given): every column moves."""
    pairs = list(zip(columns.names, columns.headers, strict=True))[::-1]
    return Columns(pairs[0], *([(spare, spare)] if spare else []), *pairs[1:])


def _build(folder, monkeypatch=None):
    book = make_input(folder / "in.xlsx", [SVC], gpus=[H100],
                      settings={"currency": "USD", "period_months": 12, "build_date": "2026-06-15",
                                "recon_top_resources": 1},
                      extras=[{"item": "storage", "category": "storage", "monthly_cost": EXTRAS}])
    bill = folder / "bill.csv"
    with bill.open("w", newline="") as fh:
        csv.writer(fh).writerows([HEADER, *LINES])
    return budgetgen.build_budget(book, folder / "out.xlsx", bills=[bill]).workbook


TABLES = ("TASKS", "RESOURCES", "DAILY", "LIKE", "CURRENCIES", "NON_GPU", "VALUES", "COMMITMENTS")


@pytest.fixture(scope="module")
def books(tmp_path_factory):
    """The workbook built with the declared columns, and with every Recon table's columns moved."""
    plain = _build(tmp_path_factory.mktemp("plain"))
    with pytest.MonkeyPatch.context() as patch:
        for table in TABLES:
            # The Resources sheet writes its columns as one adjacent block: its columns are reordered only.
            spare = None if table == "RESOURCES" else f"spare {table.lower()}"
            patch.setattr(ReconLayout, table, _moved(getattr(ReconLayout, table), spare))
        moved = _build(tmp_path_factory.mktemp("moved"))
        letters = {t: getattr(ReconLayout, t) for t in TABLES}
    return plain, moved, letters


def _under_headers(ws, header_row: int, first: int, last: int) -> dict[str, list]:
    """The cached values of rows first..last (1-based) by the header above their column."""
    heads = {c: ws.cell(header_row, c).value for c in range(1, ws.max_column + 1) if ws.cell(header_row, c).value}
    return {h: [ws.cell(r, c).value for r in range(first, last + 1)] for c, h in heads.items()}


def _find(ws, text: str, col: int = 1) -> int:
    return next(r for r in range(1, ws.max_row + 1) if ws.cell(r, col).value == text)


def test_the_columns_moved(books):
    _, _, moved = books
    assert moved["TASKS"].letter("variance") != ReconLayout.TASKS.letter("variance")
    assert moved["RESOURCES"].letter("flags") != ReconLayout.RESOURCES.letter("flags")
    assert (moved["VALUES"].letter("label"), moved["VALUES"].letter("value")) == ("C", "A")   # were A and B


def test_every_recon_formula_still_reads_the_right_cells(books):
    _, moved, _ = books
    wb = openpyxl.load_workbook(moved)
    assert DETAIL in wb.sheetnames   # the rest of the resources on their sheet, read through the tab's names
    formulas = sum(1 for ws in (wb[TAB], wb[DETAIL]) for row in ws.iter_rows() for c in row
                   if isinstance(c.value, str) and c.value.startswith("="))
    assert formulas > 50
    assert prove(moved, sheets=[TAB, DETAIL, "Checks", "Summary"]) == []


def test_the_values_follow_their_headers(books):
    """Each task and resource value sits under its header in both workbooks, and the totals, the named billed
    total and the checks are the same."""
    plain, moved, columns = books
    a, b = (openpyxl.load_workbook(p, data_only=True) for p in (plain, moved))
    for sheet, first_header in ((TAB, "task id"), (TAB, "resource")):
        rows = []
        for wb in (a, b):
            ws = wb[sheet]
            header = next(r for r in range(1, ws.max_row + 1)
                          if first_header in [ws.cell(r, c).value for c in range(1, ws.max_column + 1)])
            rows.append(_under_headers(ws, header, header + 1, header + 1))
        shown, moved_rows = rows
        assert {h: v for h, v in moved_rows.items() if not h.startswith("spare")} == shown
    plain_tab, moved_tab = a[TAB], b[TAB]
    label, value = columns["VALUES"]["label"] + 1, columns["VALUES"]["value"] + 1
    for text in ("billed total", "achievable saving", "GPU billed to tasks", "planned GPU total"):
        assert moved_tab.cell(_find(moved_tab, text, label), value).value == \
            pytest.approx(plain_tab.cell(_find(plain_tab, text), 2).value)
    checks = [b["Checks"].cell(r, 4).value for r in range(2, b["Checks"].max_row + 1)]
    assert checks == [True] * len(checks)
