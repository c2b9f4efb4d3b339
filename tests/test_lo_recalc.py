"""Tests for the headless LibreOffice recalculation helper in tests/lo_recalc.py."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest
import xlsxwriter
from lo_recalc import (
    LibreOfficeError,
    SheetValues,
    is_error,
    recalc_many,
    recalc_with_libreoffice,
    soffice_path,
)

SKIP_REASON = (
    "LibreOffice (soffice) not installed: apt-get install libreoffice-calc-nogui"
)

MONTHS = ["2024-01", "2024-02", "2024-03", "2024-04", "2024-05", "2024-06"]
AMOUNTS = [120.5, 80.25, 310.0, 45.75, 990.0, 12.5]
CATEGORIES = ["cards", "rent", "cards", "cards", "rent", "cards"]
RATE = 0.15
CUTOFF = "2024-03"


pytestmark = pytest.mark.slow

def _require_soffice() -> None:
    """Skip when LibreOffice is missing, but fail on CI where it must be installed."""
    if soffice_path() is None:
        if os.environ.get("CI") == "true":
            pytest.fail(SKIP_REASON + " (required when CI=true)")
        pytest.skip(SKIP_REASON)


def _spreadsheet_ceil(x: float) -> float:
    """CEILING(x, 1) as spreadsheets compute it: round to 15 significant digits first."""
    return float(math.ceil(float(f"{x:.15g}")))


def _wrong_cache_workbook(path: Path) -> None:
    """Write formulas whose cached values are deliberately wrong."""
    workbook = xlsxwriter.Workbook(str(path), {"use_future_functions": True})
    sheet = workbook.add_worksheet("Sheet1")
    sheet.write_number("A1", 21)
    sheet.write_formula("B1", "=A1*2", None, 999)
    sheet.write_formula("C1", '=IF(A1>20,"big","small")', None, "stale")
    sheet.write_formula("D1", "=SUM(A1:B1)", None, -1)
    workbook.close()


def _functions_workbook(path: Path) -> None:
    """Write defined names and every formula construct the budget workbooks rely on."""
    workbook = xlsxwriter.Workbook(str(path), {"use_future_functions": True})
    data = workbook.add_worksheet("Sheet1")
    calc = workbook.add_worksheet("Calc")
    workbook.define_name("Rate", "=Sheet1!$A$1")
    workbook.define_name("Months", "=Sheet1!$A$3:$A$8")
    data.write_number("A1", RATE)
    for row, (month, amount, category) in enumerate(
        zip(MONTHS, AMOUNTS, CATEGORIES, strict=True), start=2
    ):
        data.write_string(row, 0, month)
        data.write_number(row, 1, amount)
        data.write_string(row, 2, category)
        # Cached value 0 everywhere: only a real recalculation gives the right numbers.
        data.write_formula(row, 3, f"=B{row + 1}*Rate", None, 0)
        data.write_formula(
            row, 4, f'=IF(A{row + 1}<="{CUTOFF}","past","future")', None, 0
        )
    calc.write_formula("A1", "=Rate*100", None, 0)
    calc.write_formula(
        "A2", '=INDEX(Sheet1!$B$3:$B$8,MATCH("2024-04",Months,0))', None, 0
    )
    calc.write_formula(
        "A3", '=SUMIFS(Sheet1!$B$3:$B$8,Sheet1!$C$3:$C$8,"cards")', None, 0
    )
    calc.write_formula(
        "A4",
        f'=SUMPRODUCT((Months<="{CUTOFF}")*(Sheet1!$C$3:$C$8="cards")*Sheet1!$B$3:$B$8)',
        None,
        0,
    )
    calc.write_formula("A5", "=CEILING(SUM(Sheet1!$B$3:$B$8)*Rate/7,1)", None, 0)
    calc.write_formula("A6", "=CEILING((0.1+0.2)*10,1)", None, 0)
    calc.write_formula("A7", '=IFERROR(MATCH("2099-01",Months,0),-1)', None, 0)
    calc.write_formula("A8", "=IFERROR(1/0,0)", None, 99)
    calc.write_formula("A9", '=Sheet1!A5<="2024-03"', None, 0)
    calc.write_formula("A10", '=Sheet1!A6<="2024-03"', None, 1)
    calc.write_formula("A11", '=IF(Rate>0.1,"high","low")', None, 0)
    calc.write_formula("A12", '=IF(Rate>1,"high","")', None, "stale")
    calc.write_formula(
        "A13", "=AND(Rate>0,MAX(Sheet1!$B$3:$B$8)>MIN(Sheet1!$B$3:$B$8))", None, 0
    )
    workbook.close()


def _errors_workbook(path: Path) -> None:
    """Write formulas that evaluate to spreadsheet errors."""
    workbook = xlsxwriter.Workbook(str(path), {"use_future_functions": True})
    sheet = workbook.add_worksheet("Errors")
    sheet.write_number("A1", 0)
    sheet.write_formula("B1", "=10/A1", None, 5)
    sheet.write_formula("C1", '=MATCH("nope",A1:A1,0)', None, 1)
    sheet.write_formula("D1", "=B1+1", None, 6)
    workbook.close()


def _locale_workbook(path: Path) -> None:
    """Write decimal numbers with thousands/decimal formats that a de-DE locale would flip."""
    workbook = xlsxwriter.Workbook(str(path), {"use_future_functions": True})
    sheet = workbook.add_worksheet("Money")
    money = workbook.add_format({"num_format": "#,##0.00"})
    sheet.write_number("A1", 1234.5678, money)
    sheet.write_formula("B1", "=A1*2", money, 0)
    sheet.write_formula("C1", "=1.5+A1", None, 0)
    sheet.write_formula("D1", '=TEXT(A1,"#,##0.00")', None, 0)
    sheet.write_formula("E1", '=VALUE("2.5")', None, 0)
    workbook.close()


@pytest.fixture(scope="module")
def recalculated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, SheetValues]:
    """Build the test workbooks and recalculate them all in one soffice run."""
    _require_soffice()
    src = tmp_path_factory.mktemp("src")
    builders = {
        "functions": _functions_workbook,
        "errors": _errors_workbook,
        "locale": _locale_workbook,
    }
    paths = {name: src / f"{name}.xlsx" for name in builders}
    for name, build in builders.items():
        build(paths[name])
    results = recalc_many(list(paths.values()), tmp_path_factory.mktemp("lo"))
    return {name: results[path] for name, path in paths.items()}


def test_wrong_cached_values_are_recalculated(tmp_path: Path) -> None:
    """Cached values written by xlsxwriter are ignored: LibreOffice recomputes everything."""
    _require_soffice()
    path = tmp_path / "wrong_cache.xlsx"
    _wrong_cache_workbook(path)
    values = recalc_with_libreoffice(path, tmp_path / "work")["Sheet1"]
    assert values == {"A1": 21.0, "B1": 42.0, "C1": "big", "D1": 63.0}


def test_defined_names_and_functions(recalculated: dict[str, SheetValues]) -> None:
    """Defined names, lookups, conditional sums, CEILING, IFERROR and text IFs match Python."""
    data = recalculated["functions"]["Sheet1"]
    calc = recalculated["functions"]["Calc"]
    for index, (amount, month) in enumerate(zip(AMOUNTS, MONTHS, strict=True)):
        assert data[f"D{index + 3}"] == pytest.approx(amount * RATE)
        assert data[f"E{index + 3}"] == ("past" if month <= CUTOFF else "future")

    expected_sumifs = sum(
        a for a, c in zip(AMOUNTS, CATEGORIES, strict=True) if c == "cards"
    )
    expected_sumproduct = sum(
        a
        for a, c, m in zip(AMOUNTS, CATEGORIES, MONTHS, strict=True)
        if c == "cards" and m <= CUTOFF
    )
    assert calc["A1"] == pytest.approx(RATE * 100)
    assert calc["A2"] == AMOUNTS[MONTHS.index("2024-04")]
    assert calc["A3"] == pytest.approx(expected_sumifs)
    assert calc["A4"] == pytest.approx(expected_sumproduct)
    assert calc["A5"] == _spreadsheet_ceil(sum(AMOUNTS) * RATE / 7)
    # (0.1+0.2)*10 is 3.0000000000000004 in IEEE doubles: Python's ceil gives 4, spreadsheets 3.
    assert math.ceil((0.1 + 0.2) * 10) == 4
    assert calc["A6"] == _spreadsheet_ceil((0.1 + 0.2) * 10) == 3.0
    assert calc["A7"] == -1.0
    assert calc["A8"] == 0.0
    assert calc["A9"] is True
    assert calc["A10"] is False
    assert calc["A11"] == "high"
    assert calc["A12"] == ""
    assert calc["A13"] is True


def test_division_by_zero_is_a_detectable_error(
    recalculated: dict[str, SheetValues],
) -> None:
    """Errors come back as their text and propagate; is_error recognises them."""
    values = recalculated["errors"]["Errors"]
    assert values["B1"] == "#DIV/0!"
    assert values["C1"] == "#N/A"
    assert values["D1"] == "#DIV/0!"
    assert is_error(values["B1"]) and is_error(values["C1"]) and is_error("Err:502")
    assert not is_error(values["A1"]) and not is_error("past") and not is_error(0.0)


def test_en_us_numbers_read_as_floats(recalculated: dict[str, SheetValues]) -> None:
    """Formatted decimals stay floats and TEXT() uses en-US separators."""
    values = recalculated["locale"]["Money"]
    assert isinstance(values["A1"], float) and values["A1"] == 1234.5678
    assert isinstance(values["B1"], float) and values["B1"] == pytest.approx(2469.1356)
    assert values["C1"] == pytest.approx(1236.0678)
    assert values["D1"] == "1,234.57"
    assert values["E1"] == 2.5


def test_missing_recalc_setting_is_detected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without OOXMLRecalcMode=0 LibreOffice keeps cached values, and the canary notices."""
    _require_soffice()
    import lo_recalc

    monkeypatch.setattr(lo_recalc, "write_profile", lambda profile: None)
    path = tmp_path / "wrong_cache.xlsx"
    _wrong_cache_workbook(path)
    with pytest.raises(LibreOfficeError, match="kept cached values"):
        recalc_with_libreoffice(path, tmp_path / "work")


def test_same_basename_in_two_directories(tmp_path: Path) -> None:
    """Two inputs with the same file name are kept apart in one batch."""
    _require_soffice()
    first, second = tmp_path / "a" / "book.xlsx", tmp_path / "b" / "book.xlsx"
    for path, number in ((first, 1), (second, 2)):
        path.parent.mkdir()
        workbook = xlsxwriter.Workbook(str(path))
        workbook.add_worksheet("S").write_formula("A1", f"={number}*10", None, 0)
        workbook.close()
    results = recalc_many([first, second], tmp_path / "work")
    assert results[first]["S"]["A1"] == 10.0
    assert results[second]["S"]["A1"] == 20.0
