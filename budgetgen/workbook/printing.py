"""Print setup shared by every sheet: A4, landscape where wide, one page wide where that stays readable,
header rows (and, on sheets printed across pages, the key columns) repeated, blocks kept on one page,
and a footer with the file, the sheet and the page.

Widths are estimated for the widest font a reader may print with: Excel draws a column `w` characters
wide as `7w + 5` pixels of Calibri, but LibreOffice without Calibri substitutes DejaVu Sans, about 10
pixels a character. Estimating with the wider font keeps a page fitted to one page wide readable in
both (Excel prints it somewhat larger).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence

A4 = 9                            # xlsxwriter's paper code
PORTRAIT = (494.0, 734.0)         # printable points of A4 inside xlsxwriter's default margins (0.7 in, 0.75 in)
LANDSCAPE = (741.0, 487.0)
ROW_PT = 15.0                     # xlsxwriter's default row height
CHAR_PX = 10                      # pixels a character of column width, in the wider font
MIN_SCALE = 0.65                  # narrower than this when fitted to one page wide: print across pages instead
FOOTER = {"en": "&L&8&F&C&8&A&R&8Page &P of &N", "zh": "&L&8&F&C&8&A&R&8第 &P 页，共 &N 页"}


def width_pt(widths: Iterable[float]) -> float:
    """Printed width of columns `widths` characters wide."""
    return sum((w * CHAR_PX + 5) * 0.75 for w in widths)


def rows_pt(first: int, last: int, heights: Mapping[int, float]) -> float:
    """Printed height of rows first..last, `heights` in points where not ROW_PT."""
    return sum(heights.get(r, ROW_PT) for r in range(first, last + 1))


def page_breaks(blocks: Sequence[tuple[int, int]], page_height: float,
                heights: Mapping[int, float] | None = None, forced: Iterable[int] = ()) -> list[int]:
    """Rows to break before so that no block (first, last row) that fits on a page is split across two, and a
    page starts at each `forced` row (a block's first).

    `heights` are the rows' printed heights in points where not ROW_PT; `page_height` the printable height
    in the sheet's points (the page's height over the print scale).
    """
    height = functools.partial(rows_pt, heights=heights or {})
    forced = set(forced)
    breaks, page_start = [], 0
    for first, last in sorted(blocks):
        if first > page_start and (first in forced or height(page_start, last) > page_height
                                   and height(first, last) <= page_height):
            breaks.append(first)
            page_start = first
        while height(page_start, last) > page_height:   # where the printer itself breaks a longer block
            fits = page_start
            while height(page_start, fits + 1) <= page_height:
                fits += 1
            page_start = fits + 1
    return breaks


def print_setup(ws, lang: str, widths: Sequence[float], last_row: int, *, header_rows: tuple[int, int] | None = None,
                repeat_cols: tuple[int, int] | None = None, blocks: Sequence[tuple[int, int]] = (),
                heights: Mapping[int, float] | None = None, breaks: Sequence[int] = ()) -> None:
    """Set up `ws` for printing its first `len(widths)` columns and rows 0..last_row.

    One page wide when that keeps the text at MIN_SCALE or larger; otherwise across pages with `repeat_cols`
    on each page, so every value prints next to its row's label: one page tall where that too keeps the text at
    MIN_SCALE or larger (each page then holds every row of its columns, all the labels with them), else at
    full size with page breaks between `blocks`. A page starts at each of `breaks` (a block's first row), so a
    sheet with breaks is never squeezed one page tall.
    """
    wide = width_pt(widths)
    landscape = wide > PORTRAIT[0]
    page_w, page_h = LANDSCAPE if landscape else PORTRAIT
    scale = min(1.0, page_w / wide)
    ws.set_paper(A4)
    if landscape:
        ws.set_landscape()
    else:
        ws.set_portrait()
    heights = heights or {}
    if scale >= MIN_SCALE:
        ws.fit_to_pages(1, 0)
    else:
        scale = min(1.0, page_h / rows_pt(0, last_row, heights))   # the scale that prints every row on one page
        if MIN_SCALE <= scale < 1.0 and not breaks:
            ws.fit_to_pages(0, 1)
        else:
            scale = 1.0
        if repeat_cols is not None:
            ws.repeat_columns(*repeat_cols)
    ws.print_area(0, 0, last_row, len(widths) - 1)
    if header_rows is not None:
        ws.repeat_rows(*header_rows)
    ws.set_footer(FOOTER[lang])
    if blocks:
        usable = page_h / scale
        if header_rows is not None:
            usable -= (header_rows[1] - header_rows[0] + 1) * ROW_PT
        ws.set_h_pagebreaks(page_breaks(blocks, usable, heights, breaks))
