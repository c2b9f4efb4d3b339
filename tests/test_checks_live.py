"""Checks read the live GPUs sheet (issue 30): a price typed on GPUs after the build for a card a task fits but that
had no price for its tier counts on Checks, so the banner no longer says all checks pass beside a stale "no idle
price" on Candidates; a rebuild weighs the card.

The plan: one LoRA fine-tune on the idle tier, its GPU left to the build. In the test catalog H200 and L4 are priced
in USD on demand and spot only, so both fit the task but have no idle price: the check counts their idle price cells
on GPUs, 0 at the build."""

from __future__ import annotations

import shutil

import openpyxl
import pytest
from conftest import local_recalc, make_input, prove
from lo_recalc import recalc_with_libreoffice, soffice_path

import budgetgen
from budgetgen.plan.engine import Exclusion

FT = {"task_id": "FT", "kind": "finetune", "model_params_b": 7, "method": "lora", "train_tokens": "50M", "tier": "idle"}
LABEL = "GPUs priced on GPUs since the build for a task they fit = 0 (if not: rebuild to weigh them)"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    folder = tmp_path_factory.mktemp("live-checks")
    book = make_input(folder / "in.xlsx", [FT], settings={"period_months": 1, "build_date": "2026-06-15"})
    out = folder / "out.xlsx"
    return budgetgen.build_budget(book, out).plan, out


def _check_row(out) -> int:
    ws = openpyxl.load_workbook(out)["Checks"]
    return next(r for r in range(1, ws.max_row + 1) if ws.cell(r, 1).value == LABEL)


def _idle_cell(out, gpu: str) -> str:
    """The GPUs sheet cell of the GPU's idle price as listed (an input)."""
    ws = openpyxl.load_workbook(out)["GPUs"]
    col = next(c.column_letter for c in ws[1] if str(c.value).startswith("idle_per_hour (per card-hour"))
    row = next(r for r in range(2, ws.max_row + 1) if ws.cell(r, 1).value == gpu)
    assert ws[f"{col}{row}"].value is None   # no idle price at the build
    return f"{col}{row}"


def test_the_cards_without_an_idle_price_are_the_checks_cells(built):
    plan, out = built
    unpriced = [c.gpu for c in plan.tasks[0].candidates if c.exclusion is Exclusion.NO_PRICE]
    assert unpriced == ["H200", "L4"]
    ws = openpyxl.load_workbook(out)["Checks"]
    row = _check_row(out)
    assert ws.cell(row, 2).value == ('=COUNT(INDEX(GpuIdle,MATCH("H200",GpuName,0)),'
                                     'INDEX(GpuIdle,MATCH("L4",GpuName,0)))')
    cached = openpyxl.load_workbook(out, data_only=True)["Checks"]
    assert (cached.cell(row, 2).value, cached.cell(row, 4).value, cached["D2"].value) == (0, True, True)


@pytest.mark.slow
def test_a_price_typed_after_the_build_fails_the_check_in_formulas(built):
    """The workbook proven cell by cell (each formula, evaluated by `formulas` from the cached values it reads, is its
    cached value), then the typed price followed through every formula it reaches, evaluated again in dependency
    order as a spreadsheet does after an edit; LibreOffice recalculates the edited file in full below."""
    _, out = built
    row, cell = _check_row(out), _idle_cell(out, "L4")
    assert prove(out) == []
    before = local_recalc(out)
    assert (before[("CHECKS", f"B{row}")], before[("CHECKS", "D2")]) == (0, True)
    after = local_recalc(out, {f"GPUs!{cell}": 0.1})
    assert after[("CHECKS", f"B{row}")] == 1
    assert after[("CHECKS", f"D{row}")] is False and after[("CHECKS", "D2")] is False
    assert (before[("SUMMARY", "A2")], after[("SUMMARY", "A2")]) == ("All checks pass", "CHECKS FAIL — see Checks")


@pytest.mark.slow
@pytest.mark.skipif(soffice_path() is None, reason="LibreOffice is not installed")
def test_a_price_typed_after_the_build_fails_the_check_in_libreoffice(built, tmp_path):
    _, out = built
    row, cell = _check_row(out), _idle_cell(out, "L4")
    edited = tmp_path / "priced.xlsx"
    shutil.copy(out, edited)
    wb = openpyxl.load_workbook(edited)
    wb["GPUs"][cell] = 0.1
    wb.save(edited)
    values = recalc_with_libreoffice(edited, tmp_path / "lo")
    assert values["Checks"][f"B{row}"] == 1
    assert values["Checks"][f"D{row}"] is False and values["Checks"]["D2"] is False
    assert values["Summary"]["A2"] == "CHECKS FAIL — see Checks"
