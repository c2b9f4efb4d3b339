"""The fast paths of a large build give what the plain paths give.

Value and formula columns rendered a row at a time (ColumnBlock) against the same cells through xlsxwriter's
`write_string`, `write_number`, `write_blank` and `store_formula`; the workbook zipped at ZIP_LEVEL, with
xlsxwriter's ZipFile given back afterwards; the columns worked out once per task.
"""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path

import pytest
import xlsxwriter
import xlsxwriter.workbook
from conftest import SAMPLE, TODAY

from budgetgen.io.reader import read_inputs
from budgetgen.model.columns import TASK_CALCS, evaluate, evaluate_task
from budgetgen.plan.engine import plan_budget
from budgetgen.workbook import ZIP_LEVEL, write_workbook
from budgetgen.workbook.book import ColumnBlock, Sheet, store_formula
from budgetgen.workbook.formats import cached

# (key, formula with `{r}` for the row or None for a value, value): every kind of value a formula caches, formulas
# with the characters XML escapes, texts with them, with control characters, escapes and spaces to keep.
COLUMNS = [
    ("v1", None, "T<1> & T2"),
    ("v2", None, ""),
    ("v3", None, None),
    ("v4", None, 12),
    ("v5", None, 0.1 + 0.2),
    ("v6", None, " padded "),
    ("v7", None, "bell\x07 and _x0007_"),
    ("a", 'IF($B{r}<>"",$B{r}*2,"")', 1.5),
    ("b", "SUM($A{r}:$A{r})", 3),
    ("c", 'IF($A{r}>0,"x&y","")', ""),
    ("d", "1/0", float("inf")),
    ("e", '"cheaper on "&$A{r}', "cheaper on <spot> & more"),
    ("f", "$A{r}>1", True),
    ("g", "$A{r}=2", False),
    ("h", 'IF($A{r}=1,"","")', None),
    ("i", "NA()", "#N/A"),
    ("j", "1e300*1e300", 0.30000000000000004),
]


def _write(path: Path, fast: bool) -> None:
    """Three rows: a text cell in column A, the block's columns from column B, a number after them."""
    wb = xlsxwriter.Workbook(str(path), {"constant_memory": True, "strings_to_formulas": False})
    ws = wb.add_worksheet("S", Sheet)
    formats = [wb.add_format({"num_format": n}) for n in ("0.00", "#,##0", "@", "0%", "General")]
    columns = [(1 + i, key, formula, formats[i % len(formats)]) for i, (key, formula, _) in enumerate(COLUMNS)]
    block = ColumnBlock(columns)
    for row in range(3):
        ws.write_string(row, 0, f"row {row}", formats[2])
        values = {key: value for key, _, value in COLUMNS}
        if fast:
            block.store(ws, row, values)
        else:
            for col, key, formula, fmt in columns:
                if formula is not None:
                    store_formula(ws, row, col, formula.format(r=row + 1), fmt, cached(values[key]))
                elif values[key] is None or values[key] == "":
                    ws.write_blank(row, col, None, fmt)
                elif isinstance(values[key], str):
                    ws.write_string(row, col, values[key], fmt)
                else:
                    ws.write_number(row, col, values[key], fmt)
        ws.write_number(row, len(COLUMNS) + 1, row, formats[0])
    wb.close()


def test_column_block_writes_the_bytes_xlsxwriter_writes(tmp_path: Path):
    _write(tmp_path / "plain.xlsx", fast=False)
    _write(tmp_path / "fast.xlsx", fast=True)
    with zipfile.ZipFile(tmp_path / "plain.xlsx") as plain, zipfile.ZipFile(tmp_path / "fast.xlsx") as fast:
        assert plain.namelist() == fast.namelist()
        different = [n for n in plain.namelist() if plain.read(n) != fast.read(n)]
        sheet = fast.read("xl/worksheets/sheet1.xml").decode()
    assert different == []
    # and what they both wrote is what Excel reads: escaped texts and formulas, control characters as _xHHHH_,
    # kept spaces, numbers to 16 digits, typed cached values, styles numbered in the order of first use (column
    # A's text format is 1), the dimension of every row
    assert '<c r="B3" s="2" t="inlineStr"><is><t>T&lt;1&gt; &amp; T2</t></is></c><c r="C3" s="3"/><c r="D3" s="1"/>' \
        in sheet
    assert '<c r="F3" s="5"><v>0.3</v></c><c r="G3" s="2" t="inlineStr"><is><t xml:space="preserve"> padded </t>' in sheet
    assert "<t>bell_x0007_ and _x005F_x0007_</t>" in sheet
    assert '<f>IF($B2&lt;&gt;"",$B2*2,"")</f><v>1.5</v>' in sheet
    assert '<c r="M3" s="3" t="str"><f>"cheaper on "&amp;$A3</f><v>cheaper on &lt;spot&gt; &amp; more</v></c>' in sheet
    assert '<c r="N1" s="1" t="b"><f>$A1&gt;1</f><v>1</v></c>' in sheet
    assert '<c r="L2" s="2" t="e"><f>1/0</f><v>#NUM!</v></c>' in sheet
    assert '<c r="R2" s="3"><f>1e300*1e300</f><v>0.30000000000000004</v></c>' in sheet
    assert '<dimension ref="A1:S3"/>' in sheet


def test_block_columns_must_be_adjacent():
    with pytest.raises(ValueError) as exc:
        ColumnBlock([(1, "a", "1", None), (3, "b", "2", None)])
    assert "adjacent" in str(exc.value)


def test_workbook_zipped_at_the_set_level(tmp_path: Path):
    original = xlsxwriter.workbook.ZipFile
    out = write_workbook(plan_budget(read_inputs(SAMPLE, today=TODAY)), tmp_path / "out.xlsx")
    assert xlsxwriter.workbook.ZipFile is original
    with zipfile.ZipFile(out) as z:
        info = max(z.infolist(), key=lambda i: i.file_size)
        data = z.read(info)
    deflate = zlib.compressobj(ZIP_LEVEL, zlib.DEFLATED, -15)
    assert info.compress_size == len(deflate.compress(data) + deflate.flush())
    default = zlib.compressobj(6, zlib.DEFLATED, -15)
    assert info.compress_size != len(default.compress(data) + default.flush())


def test_task_columns_read_neither_the_gpu_nor_its_name():
    """evaluate_task works TASK_CALCS out once per task (with no GPU: reading one raises), and none of them reads
    the row's `gpu` (the task's input, not the candidate's): the results without it are the per-GPU results."""
    inputs = read_inputs(SAMPLE, today=TODAY)
    for task in inputs.tasks:
        model = inputs.model(task.values.get("model"))
        alone = evaluate_task({k: v for k, v in task.values.items() if k != "gpu"}, inputs.settings, model)
        for gpu in inputs.gpus:
            row = evaluate(task.values, inputs.settings, gpu, model)
            assert {c.key: row[c.key] for c in TASK_CALCS} == {c.key: alone[c.key] for c in TASK_CALCS}
