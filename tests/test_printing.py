"""Page breaks fall between blocks: a block that fits on a page is never split across two."""

from __future__ import annotations

import pytest

from budgetgen.workbook.printing import MIN_SCALE, ROW_PT, page_breaks, width_pt

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
