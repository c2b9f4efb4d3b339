"""The cell-by-cell proof (tests/formula_proof.py) can fail: a wrong formula or a wrong cached value planted in a
copy of a built workbook is caught at its cell; the formula texts are split into templates as Excel reads them,
and the compiled functions run as `formulas` dispatches them."""

from __future__ import annotations

import html
import re
import zipfile
from pathlib import Path

import openpyxl
import pytest
from conftest import TODAY, make_input
from formula_proof import Proof, proof_of, prove, split_formula
from test_workbook import BASE_SETTINGS, BASE_TASKS

from budgetgen.io.reader import read_inputs
from budgetgen.plan.engine import plan_budget
from budgetgen.workbook import write_workbook

# ------------------------------------------------------------------ editing a built workbook's XML


def _sheet_part(book: zipfile.ZipFile, title: str) -> str:
    """The zip member of the worksheet called `title`."""
    workbook = book.read("xl/workbook.xml").decode()
    rid = re.search(rf'<sheet name="{re.escape(html.escape(title, quote=True))}" sheetId="\d+" r:id="(rId\d+)"',
                    workbook).group(1)
    rels = book.read("xl/_rels/workbook.xml.rels").decode()
    target = re.search(rf'<Relationship Id="{rid}" Type="[^"]*" Target="([^"]*)"', rels).group(1)
    return "xl/" + target.removeprefix("/xl/")


def plant(source: Path, target: Path, sheet: str, cell: str, formula: str | None = None,
          cached: float | None = None) -> None:
    """Copy the workbook, changing one formula cell's text and/or its cached number in the sheet's XML (openpyxl
    would drop every cached value on saving)."""
    with zipfile.ZipFile(source) as book:
        part = _sheet_part(book, sheet)
        members = {name: book.read(name) for name in book.namelist()}
    xml = members[part].decode()
    found = re.search(rf'<c r="{cell}"[^>]*>(<f>[^<]*</f>)(<v>[^<]*</v>)?</c>', xml)
    assert found, f"{sheet}!{cell} is not a formula cell"
    new = found.group(0)
    if formula is not None:
        new = new.replace(found.group(1), f"<f>{html.escape(formula.removeprefix('='), quote=False)}</f>")
    if cached is not None:
        new = new.replace(found.group(2), f"<v>{cached!r}</v>")
    members[part] = xml.replace(found.group(0), new).encode()
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
        for name, data in members.items():
            out.writestr(name, data)


def _column(path: Path, sheet: str, header: str) -> str:
    ws = openpyxl.load_workbook(path, read_only=True)[sheet]
    headers = next(ws.iter_rows(max_row=1, values_only=True))
    return openpyxl.utils.get_column_letter(next(i for i, h in enumerate(headers, 1) if str(h).startswith(header)))


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """A two-task plan's workbook (a fine-tune, row 2 of Tasks, and a service, row 3) and its proof: planting an
    error costs one proof of the copy, a second or so for this plan."""
    folder = tmp_path_factory.mktemp("small")
    plan = plan_budget(read_inputs(make_input(folder / "in.xlsx", BASE_TASKS[:2], settings=BASE_SETTINGS),
                                   today=TODAY))
    path = write_workbook(plan, folder / "out.xlsx")
    proof = Proof(path)
    assert proof.mismatches() == []
    return path, proof


def test_a_formula_reading_the_wrong_row_is_caught_at_its_cell(small, tmp_path):
    """The service's cost a month (Tasks row 3) pointed at the row below, a copy-and-paste slip: only that cell is
    wrong, since every other formula reads its cached value."""
    path, proof = small
    cost = _column(path, "Tasks", "cost a month")
    formula = proof.formulas[("TASKS", 3, openpyxl.utils.column_index_from_string(cost))]
    slipped = re.sub(r"(\$?[A-Z]{1,3})3\b", r"\g<1>4", formula)
    assert slipped != formula
    broken = tmp_path / "broken.xlsx"
    plant(path, broken, "Tasks", f"{cost}3", formula=slipped)
    assert [(m.sheet, m.cell, m.formula) for m in prove(broken)] == [("Tasks", f"{cost}3", slipped)]


@pytest.mark.slow
def test_a_doubled_term_in_one_month_cell_is_caught(small, tmp_path):
    path, proof = small
    monthly = openpyxl.load_workbook(path, data_only=True)["Monthly"]
    cell = next(c.coordinate for row in monthly.iter_rows(min_row=3, min_col=9) for c in row
                if isinstance(c.value, float) and c.value > 0)
    formula = proof.formulas[("MONTHLY", monthly[cell].row, monthly[cell].column)]
    broken = tmp_path / "broken.xlsx"
    plant(path, broken, "Monthly", cell, formula=f"({formula.removeprefix('=')})*2")
    mismatches = prove(broken)
    assert [(m.sheet, m.cell) for m in mismatches] == [("Monthly", cell)]
    assert mismatches[0].computed == pytest.approx(2 * mismatches[0].cached, rel=1e-12)


@pytest.mark.slow
def test_a_wrong_cached_value_is_caught_at_its_cell_and_where_it_is_read(small, tmp_path):
    """The service's cost a month cached 1 % high: its own formula disagrees, and so do the cells that read it (its
    month cells on Monthly, among others), while the sheets that do not read it still prove."""
    path, _ = small
    cost = _column(path, "Tasks", "cost a month")
    tasks = openpyxl.load_workbook(path, data_only=True)["Tasks"]
    broken = tmp_path / "broken.xlsx"
    plant(path, broken, "Tasks", f"{cost}3", cached=tasks[f"{cost}3"].value * 1.01)
    wrong = {(m.sheet, m.cell) for m in prove(broken)}
    assert ("Tasks", f"{cost}3") in wrong
    assert {sheet for sheet, _ in wrong} >= {"Tasks", "Monthly"}
    assert not {sheet for sheet, _ in wrong} & {"GPUs", "Assumptions", "Commitments"}


@pytest.mark.slow
def test_the_unbroken_copy_is_proven(small, tmp_path):
    """The planting itself changes nothing else: the same text and number written back prove."""
    path, proof = small
    copy = tmp_path / "copy.xlsx"
    summary = openpyxl.load_workbook(path, data_only=True)["Summary"]
    plant(path, copy, "Summary", "B3", formula=proof.formulas[("SUMMARY", 3, 2)], cached=summary["B3"].value)
    assert prove(copy) == []


def test_a_shared_template_compiles_once_and_the_fast_runner_agrees_with_schedula(sample_book):
    """Cells whose formulas differ only in where they point share a compiled function; running its nodes in order
    (formula_proof._Steps) gives what `formulas`' dispatcher gives, for one cell of every template."""
    proof = proof_of(sample_book[1])
    firsts = {}
    for cell in proof.formulas:
        firsts.setdefault(proof.parts(cell)[0], cell)
    assert len(firsts) < len(proof.formulas) / 10
    for template, cell in firsts.items():
        assert repr(proof.evaluate(cell)) == repr(proof.evaluate_dispatched(cell)), (template, cell)


# ------------------------------------------------------------------ templates


@pytest.mark.parametrize(("formula", "template", "refs"), [
    ("=IF($F2>0,G2*H2/$F2,0)", "=IF(_P0>0,_P1*_P2/_P0,0)",
     [("ref", "TASKS!F2"), ("ref", "TASKS!G2"), ("ref", "TASKS!H2")]),
    ("=SUM(G4:G6)+Tasks!$AU$2", "=SUM(_P0)+_P1", [("ref", "TASKS!G4:G6"), ("ref", "TASKS!AU2")]),
    ("='Recon 2026-07'!B3*MfuRate", "=_P0*_P1", [("ref", "RECON 2026-07!B3"), ("name", "MFURATE")]),
    ('=IF(A2="B2 and Tera",TRUE,FALSE)', '=IF(_P0="B2 and Tera",TRUE,FALSE)', [("ref", "TASKS!A2")]),
    ("=LOG10(Fp8Rate)+1E3+GpuTflopsFp8", "=LOG10(_P0)+1E3+_P1", [("name", "FP8RATE"), ("name", "GPUTFLOPSFP8")]),
    ("=INDEX(TaskId,$A3)&CHOOSE(2,$B3,$C3)", "=INDEX(_P0,_P1)&CHOOSE(2,_P2,_P3)",
     [("name", "TASKID"), ("ref", "TASKS!A3"), ("ref", "TASKS!B3"), ("ref", "TASKS!C3")]),
])
def test_references_become_placeholders(formula, template, refs):
    assert split_formula(formula, "TASKS") == (template, refs)


def test_a_column_of_formulas_is_one_template():
    rows = [split_formula(f"=IF($F{r}>0,G{r}*HoursPerMonth,0)", "TASKS") for r in (2, 3, 40)]
    assert len({template for template, _ in rows}) == 1
    assert [refs[0] for _, refs in rows] == [("ref", "TASKS!F2"), ("ref", "TASKS!F3"), ("ref", "TASKS!F40")]


def test_local_recalc_follows_a_typed_value_through_the_sheets(small):
    """Typing a dearer on-demand price for the fine-tune's A100 80G: the candidates, the task's cost, its months and
    the totals on Summary are evaluated again from the new price; what does not read it keeps its value."""
    path, proof = small
    gpus = openpyxl.load_workbook(path)["GPUs"]
    row = next(c.row for c in gpus["A"] if c.value == "A100 80G")
    price = f"GPUs!{_column(path, 'GPUs', 'on_demand_per_hour')}{row}"
    before, after = proof.values(), proof.values({price: 99})
    changed = {k[0] for k in before if before[k] != after.get(k)}
    assert changed >= {"GPUS", "CANDIDATES", "TASKS", "MONTHLY", "SUMMARY"}
    assert after[("SUMMARY", "B3")] > before[("SUMMARY", "B3")]
    assert after[("CHECKS", "D2")] is True                         # the workbook still ties out
    assert "EXTRAS" not in changed and "ASSUMPTIONS" not in changed
