"""What changes with a large inventory: an Order line serving thousands of tasks names the first and counts the rest."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from budgetgen.i18n import tr
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
