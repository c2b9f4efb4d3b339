"""Page breaks fall between blocks: a block that fits on a page is never split across two."""

from __future__ import annotations

import openpyxl
import pytest
import xlsxwriter

from budgetgen.workbook.printing import MIN_SCALE, ROW_PT, page_breaks, print_setup, width_pt

PAGE = 20 * ROW_PT   # twenty default rows


@pytest.mark.parametrize(("blocks", "heights", "expected"), [
    ([(0, 9), (10, 19), (20, 29)], {}, [20]),          # rows 0-19 fill the page; the third block starts the next
    ([(0, 9), (12, 25)], {}, [12]),                    # 0-25 would not fit; 12-25 does, on a page of its own
    ([(0, 4), (5, 9)], {3: 200.0}, [5]),               # a tall row pushes the second block over
    ([(0, 50)], {}, []),                               # longer than a page: no manual break, the printer's
    ([(0, 5), (8, 12)], {}, []),                       # both fit on the first page
    ([(0, 15), (16, 45), (46, 50), (51, 62)], {}, [51]),  # the printer splits the long block at 20 and 40; 40-62 will not fit
])
def test_page_breaks_keep_blocks_whole(blocks, heights, expected):
    assert page_breaks(blocks, PAGE, heights) == expected


def test_width_estimate_uses_the_wider_font():
    """Ten columns 14 characters wide at 10 px a character and 5 px padding: 1,450 px = 1,087.5 pt, which
    fitted to landscape A4 (741 pt) would be 68 % (>= MIN_SCALE), and twenty such columns 34 % (< MIN_SCALE)."""
    assert width_pt([14] * 10) == pytest.approx(1087.5)
    assert 741 / width_pt([14] * 10) >= MIN_SCALE > 741 / width_pt([14] * 20)


@pytest.mark.parametrize(("blocks", "one_page_tall", "breaks"), [
    # 40 x 15 pt = 600 pt on a 487 pt landscape page: 81 % (>= MIN_SCALE), every row on one page, no break
    ([(0, 24), (25, 39)], True, []),
    # 100 rows, 1,500 pt: 32 % is too small; full size, broken before the block that would not fit (rows 0-49
    # are 750 pt, rows 25-49 375 pt; the last block, 750 pt, is the printer's to break)
    ([(0, 24), (25, 49), (50, 99)], False, [25]),
    # 20 rows, 300 pt: one page tall at full size already
    ([(0, 9), (10, 19)], False, []),
])
def test_a_sheet_printed_across_pages_is_one_page_tall_where_readable(tmp_path, blocks, one_page_tall, breaks):
    """Twenty columns 14 characters wide are too wide for one page (34 %, see above), so they print across pages
    with the id column repeated; one page tall where that keeps the text at MIN_SCALE or larger, so that every
    page holds every row's label."""
    path = tmp_path / "across.xlsx"
    last = blocks[-1][1]
    wb = xlsxwriter.Workbook(str(path))
    ws = wb.add_worksheet("Across")
    for row in range(last + 1):
        ws.write_string(row, 0, f"id {row}")
    print_setup(ws, "en", [14] * 20, last, repeat_cols=(0, 0), blocks=blocks)
    wb.close()
    sheet = openpyxl.load_workbook(path)["Across"]
    fitted = bool(sheet.sheet_properties.pageSetUpPr and sheet.sheet_properties.pageSetUpPr.fitToPage)
    assert fitted == one_page_tall
    if fitted:   # any number of pages wide (0), one tall (1, the default, which the file may leave out)
        assert sheet.page_setup.fitToWidth == 0 and sheet.page_setup.fitToHeight in (None, 1)
    assert sheet.print_title_cols == "$A:$A"
    assert [b.id for b in sheet.row_breaks.brk] == breaks


@pytest.mark.parametrize(("blocks", "forced", "expected"), [
    ([(0, 4), (5, 9), (10, 14)], [5, 10], [5, 10]),   # all fit on one page; each forced block starts its own
    ([(0, 4), (5, 9), (10, 14)], [10], [10]),         # only the forced one breaks
    ([(0, 15), (16, 25), (26, 30)], [26], [16, 26]),  # 16-25 would not fit after 0-15: broken there as well
])
def test_forced_breaks_start_a_page_at_their_block(blocks, forced, expected):
    assert page_breaks(blocks, PAGE, {}, forced) == expected


def test_a_sheet_with_forced_breaks_across_pages_is_never_squeezed_one_page_tall(tmp_path):
    """The case above that prints one page tall (40 rows at 81 %), with a page forced at row 25 (an Order's second
    provider): full size instead, the break kept, the id column repeated on every page."""
    path = tmp_path / "forced.xlsx"
    wb = xlsxwriter.Workbook(str(path))
    ws = wb.add_worksheet("Across")
    for row in range(40):
        ws.write_string(row, 0, f"id {row}")
    print_setup(ws, "en", [14] * 20, 39, repeat_cols=(0, 0), blocks=[(0, 24), (25, 39)], breaks=[25])
    wb.close()
    sheet = openpyxl.load_workbook(path)["Across"]
    assert not (sheet.sheet_properties.pageSetUpPr and sheet.sheet_properties.pageSetUpPr.fitToPage)
    assert sheet.print_title_cols == "$A:$A"
    assert [b.id for b in sheet.row_breaks.brk] == [25]


@pytest.mark.parametrize("book", ["sample_book", "sample_book_zh"])
def test_no_assumptions_text_is_cut_by_the_cell_beside_it(request, book):
    """A text wider than its column shows whole only when it wraps or the cell to its right is empty: the unit
    `plan currency per USD` (21 characters in the 16-wide unit column, beside the meaning) printed cut short."""
    import openpyxl

    _, path = request.getfixturevalue(book)
    ws = openpyxl.load_workbook(path)["Assumptions"]
    cut = []
    for row in ws.iter_rows():
        for cell in row:
            if not isinstance(cell.value, str) or cell.value.startswith("=") or cell.alignment.wrap_text:
                continue
            width = ws.column_dimensions[cell.column_letter].width
            chars = sum(2 if ord(c) >= 0x2E80 else 1 for c in cell.value)
            if chars > width and ws.cell(cell.row, cell.column + 1).value not in (None, ""):
                cut.append(f"{cell.coordinate} {cell.value!r}")
    assert cut == []


@pytest.mark.parametrize("book", ["sample_book", "sample_book_zh"])
def test_every_header_row_is_tall_enough_for_its_texts(request, book):
    """A header cell (white on navy) wraps its text; its row must be at least as tall as the lines that text takes
    at the least (its characters, CJK twice, over the column's width, 12 points a line): the Commitments block
    headers stood at 30 points and printed `commitment rate (USD/card-` without `hour)`."""
    import math

    import openpyxl

    _, path = request.getfixturevalue(book)
    low = []
    for ws in openpyxl.load_workbook(path).worksheets:
        for row in ws.iter_rows():
            for cell in row:
                if not isinstance(cell.value, str) or (cell.fill.fgColor.rgb or "")[-6:] != "1F3864":
                    continue
                width = (ws.column_dimensions[cell.column_letter].width or 8.43) - 0.71  # xlsxwriter's padding
                chars = sum(2 if ord(c) >= 0x2E80 else 1 for c in cell.value)
                lines = math.ceil(0.75 * chars / width)   # letters at their narrowest: a bound below
                height = ws.row_dimensions[cell.row].height or 15
                if 12 * lines > height:
                    low.append(f"{ws.title}!{cell.coordinate} {cell.value!r} {height}")
    assert low == []
