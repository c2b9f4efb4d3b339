"""What Excel reads: every output sheet's XML, not what a tolerant reader makes of it.

A formula is stored without its leading `=`; every formula cell carries a cached value `<v>` (an empty
cached string is xlsxwriter's `<v></v>` without a type, or `t="str"`); every column of a table sheet,
each month column of Monthly and Extras included, has a header in the first row; no formula answering a number
or TRUE/FALSE is left in the General number format (LibreOffice gives such a cell its result's format when it first
computes it, and doing so while printing aborts the PDF export with a default profile).
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path
from xml.etree import ElementTree

import openpyxl
import pytest
from conftest import SAMPLE, TODAY
from test_recon_workbook import built  # noqa: F401  (a build with bills and usage, by the CLI)

from budgetgen.io.reader import read_inputs
from budgetgen.plan.engine import plan_budget
from budgetgen.workbook import write_workbook

NS = {"m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main",
      "r": "http://schemas.openxmlformats.org/officeDocument/2006/relationships"}
REL = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
TABLE_SHEETS = ("GPUs", "Tasks", "Candidates", "Monthly", "Extras", "Tiers", "BuyVsRent", "Checks")


def sheet_xml(path: Path) -> dict[str, str]:
    """Sheet name -> the XML text of its worksheet part, found through the workbook's relationships."""
    with zipfile.ZipFile(path) as z:
        rels = ElementTree.fromstring(z.read("xl/_rels/workbook.xml.rels"))
        target = {r.get("Id"): r.get("Target") for r in rels}
        book = ElementTree.fromstring(z.read("xl/workbook.xml"))
        return {s.get("name"): z.read("xl/" + target[s.get(REL)].removeprefix("/xl/")).decode("utf-8")
                for s in book.find("m:sheets", NS)}


def _cells(xml: str):
    for c in ElementTree.fromstring(xml).iter(f"{{{NS['m']}}}c"):
        yield c.get("r"), c


def general_styles(path: Path) -> set[str]:
    """The cell style indexes (`s`) of the workbook at `path` whose number format is General."""
    with zipfile.ZipFile(path) as z:
        styles = ElementTree.fromstring(z.read("xl/styles.xml"))
    xfs = styles.find("m:cellXfs", NS)
    return {str(i) for i, xf in enumerate(xfs) if xf.get("numFmtId", "0") == "0"}


def defects(path: Path) -> list[str]:
    """Every stored `=`, formula without a cached value, non-text formula in the General format and unheaded table
    column of the workbook at `path`."""
    found = []
    general = general_styles(path)
    for sheet, xml in sheet_xml(path).items():
        found += [f"{sheet}: formula stored with '=': {m.group(0)[:60]}" for m in re.finditer(r"<f[^>]*>=[^<]*", xml)]
        for ref, c in _cells(xml):
            if c.find("m:f", NS) is None:
                continue
            v = c.find("m:v", NS)
            if v is None:
                found.append(f"{sheet}!{ref}: formula without a cached value")
            elif not (v.text or "") and c.get("t") not in (None, "str"):
                found.append(f"{sheet}!{ref}: empty cached value of type {c.get('t')}")
            elif c.get("s", "0") in general and c.get("t") not in ("str", "e") and (v.text or ""):
                found.append(f"{sheet}!{ref}: a formula answering {v.text} in the General number format")
        if sheet in TABLE_SHEETS:
            columns = {re.sub(r"\d", "", ref) for ref, _ in _cells(xml)}
            headed = {re.sub(r"\d", "", ref) for ref, c in _cells(xml)
                      if re.fullmatch(r"[A-Z]+1", ref) and c.get("t") in ("s", "inlineStr", "str")}
            found += [f"{sheet}!{col}1: column without a header" for col in sorted(columns - headed)]
    return found


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    return write_workbook(plan_budget(read_inputs(SAMPLE, today=TODAY)), tmp_path_factory.mktemp("xml") / "q3.xlsx")


def test_the_sample_build_has_no_file_defects(sample):
    sheets = sheet_xml(sample)
    assert {"Summary", "Tasks", "Candidates", "Monthly", "Extras", "Checks"} <= set(sheets)
    assert sum(xml.count("<f>") for xml in sheets.values()) > 1000
    assert defects(sample) == []


def test_a_build_with_bills_has_no_file_defects(built):  # noqa: F811
    out, _ = built
    assert any(name.startswith("Recon ") for name in sheet_xml(out))
    assert defects(out) == []


def test_every_month_column_is_headed_with_its_month(sample):
    plan = plan_budget(read_inputs(SAMPLE, today=TODAY))
    wb = openpyxl.load_workbook(sample, read_only=True)
    for sheet in ("Monthly", "Extras"):
        first, second = (list(r) for r in wb[sheet].iter_rows(min_row=1, max_row=2, values_only=True))
        start = first.index(plan.months[0])
        assert first[start:start + len(plan.months)] == list(plan.months), sheet
        assert second[start:start + len(plan.months)] == list(range(1, len(plan.months) + 1)), sheet


def test_the_defect_finder_sees_each_defect(tmp_path, sample):
    """A stored '=', a formula without a cached value, an unheaded month column and a TRUE/FALSE formula in the
    General format are each reported."""
    broken = tmp_path / "broken.xlsx"
    with zipfile.ZipFile(sample) as src, zipfile.ZipFile(broken, "w") as dst:
        names = {s: n for s, n in zip(sheet_xml(sample), sorted(
            (i for i in src.namelist() if i.startswith("xl/worksheets/sheet")),
            key=lambda n: int(re.search(r"\d+", n).group())), strict=True)}
        for item in src.infolist():
            data = src.read(item).decode("utf-8") if item.filename.endswith(".xml") else src.read(item)
            if item.filename == names["Tasks"]:
                data = data.replace("<f>", "<f>=", 1)
            elif item.filename == names["Summary"]:
                data = re.sub(r"(<f>[^<]*</f>)<v>[^<]*</v>", r"\1", data, count=1)
            elif item.filename == names["Monthly"]:
                data = re.sub(r'<c r="J1"[^>]*/>|<c r="J1".*?</c>', "", data, count=1)
            elif item.filename == names["Checks"]:
                data = re.sub(r'<c r="D3" s="\d+"', '<c r="D3"', data, count=1)
            dst.writestr(item, data)
    found = defects(broken)
    assert [d.split(":")[0] for d in found] == ["Summary!A2", "Tasks", "Monthly!J1", "Checks!D3"]
