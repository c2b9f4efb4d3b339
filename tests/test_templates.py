"""templates/ holds the blank input workbooks (English and Chinese) finance can download without installing
anything: equal, cell by cell, list by list and note by note, to what `budgetgen init` writes as of the templates'
date with the catalogs the package ships. The files' bytes differ (xlsxwriter stamps the time of writing), so
their content is compared."""

from __future__ import annotations

from pathlib import Path

import openpyxl
import pytest
from conftest import REPO, shipped_catalogs

from budgetgen.io.template import TEMPLATES, write_templates


def content(path: Path) -> dict:
    """Every sheet's cell values, data validations (range, type, list) and notes, by sheet name."""
    wb = openpyxl.load_workbook(path)
    return {ws.title: {"cells": {c.coordinate: c.value for row in ws.iter_rows() for c in row if c.value is not None},
                       "lists": sorted((str(dv.sqref), dv.type, dv.formula1) for dv in ws.data_validations.dataValidation),
                       "notes": {c.coordinate: c.comment.text for row in ws.iter_rows() for c in row if c.comment}}
            for ws in wb.worksheets}


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """What init writes now, with the shipped catalogs (the tests' fixed copies are patched in for the session)."""
    with shipped_catalogs():
        return write_templates(tmp_path_factory.mktemp("templates"))


@pytest.mark.parametrize("lang", sorted(TEMPLATES))
def test_the_templates_are_what_init_writes(written, lang):
    committed = REPO / "templates" / TEMPLATES[lang]
    fresh = next(p for p in written if p.name == TEMPLATES[lang])
    expected = content(fresh)
    assert set(expected) >= {"Tasks", "GPUs"} or set(expected) >= {"任务", "GPU"}
    assert content(committed) == expected, "templates/ is stale: run python3 tools/make_templates.py"


def test_the_comparison_sees_an_edited_cell(written, tmp_path):
    """One example value changed in a copy: the content differs."""
    copy = tmp_path / "edited.xlsx"
    wb = openpyxl.load_workbook(written[0])
    ws = wb["Tasks"]
    ws["A2"] = f"{ws['A2'].value}x"
    wb.save(copy)
    assert content(copy)["Tasks"]["cells"] != content(written[0])["Tasks"]["cells"]
