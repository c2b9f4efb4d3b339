"""Buy versus rent for every GPU type the plan uses: a GPU without a purchase price keeps its row, blank on the
owning side and saying what to type; typing the price on GPUs recalculates the row live."""

from __future__ import annotations

import json

import openpyxl
import pytest
from conftest import TODAY, disagreements, local_recalc, make_input, recalc_formulas, same
from lo_recalc import recalc_many, soffice_path

import budgetgen
from budgetgen.core import i18n

# Owning settings spelled out, so that every number below is derived from them by hand.
OWNING = {"electricity_per_kwh": 1.0, "depreciation_years": 3, "upkeep_per_year": 2000}
SERVICE = {"kind": "inference", "model_params_b": 7, "method": "int4", "requests_per_day": 10000,
           "tokens_per_request": 500, "tokens_per_sec": 100, "tier": "on_demand"}
TASKS = [
    {**SERVICE, "task_id": "ALLDAY", "gpu": "A100 80G", "serving_hours_per_day": 24},  # 24 h a day on each card
    {**SERVICE, "task_id": "SHORT", "gpu": "H100 80G", "serving_hours_per_day": 4},    # 4 h a day on each card
    {**SERVICE, "task_id": "EVENING", "gpu": "RTX 4090", "serving_hours_per_day": 8},  # the test catalog: 25,000
]
PRICE = 250000
# Owning one card at 250,000 over 3 years with 2,000 a year of upkeep: 250,000 / 1,095 + 2,000 / 365 a day.
DAILY_FIXED = 250000 / 1095 + 2000 / 365          # 228.3105 + 5.4795 = 233.7900
A100_BREAK_EVEN = DAILY_FIXED / (12 - 0.6)        # on demand 12 an hour, 600 W at 1.0 a kWh: 20.51 h a day < 24
H100_BREAK_EVEN = DAILY_FIXED / (45 - 1.0)        # on demand 45 an hour, 1,000 W: 5.31 h a day > 4
COLUMNS = "ABCDEFGHI"  # gpu, purchase, power, on demand, fixed, energy, break-even, plan use, verdict


def build(tmp_path, lang="en", gpus=None):
    path = make_input(tmp_path / "in.xlsx", TASKS, settings=OWNING, gpus=gpus)
    out, js = tmp_path / "out.xlsx", tmp_path / "out.json"
    result = budgetgen.build_budget(path, out, json_path=js, lang=lang, build_date=TODAY)
    return result, out, json.loads(js.read_text(encoding="utf-8"))


def sheet_rows(values: dict, book: openpyxl.Workbook) -> dict[str, list]:
    """BuyVsRent's rows by GPU name, from a recalculation's values."""
    rows = range(2, book["BuyVsRent"].max_row + 1)
    return {values[("BUYVSRENT", f"A{r}")]: [values.get(("BUYVSRENT", f"{c}{r}")) for c in COLUMNS[1:]]
            for r in rows if values.get(("BUYVSRENT", f"A{r}"))}


def purchase_cell(book: openpyxl.Workbook, gpu: str, lang: str, column: str = "purchase_price") -> str:
    """The GPUs sheet's purchase_price (or other `column`) input cell of `gpu`, found by its header and its name."""
    ws = book["GPUs"]
    col = next(c for c in ws[1] if str(c.value).startswith(i18n.name(column, lang))).column_letter
    row = next(c.row for c in ws["A"] if c.value == gpu)
    return f"GPUs!{col}{row}"


def test_every_gpu_the_plan_uses_has_a_row_priced_or_not(tmp_path):
    result, _, document = build(tmp_path)
    rows = {b.gpu: b for b in result.plan.buy_vs_rent}
    assert set(rows) == {"A100 80G", "H100 80G", "RTX 4090"}
    a100 = rows["A100 80G"]
    assert (a100.daily_fixed, a100.break_even_hours_per_day, a100.verdict) == (None, None, "no purchase price")
    assert a100.energy_per_hour == pytest.approx(0.6) and a100.plan_hours_per_day == pytest.approx(24)
    # the RTX 4090 has its purchase price (25,000): 25,000 / 1,095 + 2,000 / 365 = 28.31 a day; / (3 - 0.6)
    assert rows["RTX 4090"].break_even_hours_per_day == pytest.approx((25000 / 1095 + 2000 / 365) / 2.4)
    assert rows["RTX 4090"].verdict == "rent"  # 8 h a day < 11.8
    assert document["buy_vs_rent"]["H100 80G"] == {
        "purchase_price": None, "daily_fixed": None, "energy_per_hour": pytest.approx(1.0),
        "break_even_hours_per_day": None, "plan_hours_per_day": pytest.approx(4), "verdict": "no purchase price",
        # the 3-year term's rate: 45 on demand x (1 - 0.47); no purchase price, so no break-even against it
        "best_commitment_rate": pytest.approx(45 * 0.53), "break_even_vs_commitment": None,
        "break_even_utilisation": None}  # no break-even, no share of the day
    assert document["buy_vs_rent"]["RTX 4090"]["purchase_price"] == 25000


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_typing_a_purchase_price_on_gpus_recalculates_the_row(tmp_path, lang):
    _, out, _ = build(tmp_path, lang)
    book = openpyxl.load_workbook(out)
    prompt = i18n.tr("enter purchase_price on GPUs to compare", lang)
    before = sheet_rows(local_recalc(out, sheets=("BuyVsRent",)), book)
    assert before["A100 80G"] == ["", 600, 12, "", pytest.approx(0.6), "", pytest.approx(24), prompt]
    assert before["H100 80G"] == ["", 1000, 45, "", pytest.approx(1.0), "", pytest.approx(4), prompt]

    changes = {purchase_cell(book, gpu, lang): PRICE for gpu in ("A100 80G", "H100 80G")}
    after = sheet_rows(local_recalc(out, changes=changes, sheets=("BuyVsRent",)), book)
    assert after["A100 80G"] == [PRICE, 600, 12, pytest.approx(DAILY_FIXED), pytest.approx(0.6),
                                 pytest.approx(A100_BREAK_EVEN), pytest.approx(24), i18n.word("buy", lang)]
    assert after["H100 80G"] == [PRICE, 1000, 45, pytest.approx(DAILY_FIXED), pytest.approx(1.0),
                                 pytest.approx(H100_BREAK_EVEN), pytest.approx(4), i18n.word("rent", lang)]
    assert round(A100_BREAK_EVEN, 2) == 20.51 and round(H100_BREAK_EVEN, 2) == 5.31
    assert after["RTX 4090"] == before["RTX 4090"]


def test_the_price_typed_in_the_workbook_and_in_the_input_agree(tmp_path):
    """Entering 250,000 on the input's GPUs sheet gives the engine the numbers the workbook recalculated to."""
    result, out, document = build(tmp_path, gpus=[{"gpu": "A100 80G", "purchase_price": PRICE}])
    a100 = next(b for b in result.plan.buy_vs_rent if b.gpu == "A100 80G")
    assert a100.daily_fixed == pytest.approx(DAILY_FIXED)
    assert a100.break_even_hours_per_day == pytest.approx(A100_BREAK_EVEN) and a100.verdict == "buy"
    assert document["buy_vs_rent"]["A100 80G"]["verdict"] == "buy"
    recalculated = sheet_rows(local_recalc(out, sheets=("BuyVsRent",)), openpyxl.load_workbook(out))["A100 80G"]
    ws = openpyxl.load_workbook(out, data_only=True)["BuyVsRent"]
    cached = next([c.value for c in row[1:9]] for row in ws.iter_rows(min_row=2) if row[0].value == "A100 80G")
    assert all(same(a, b) for a, b in zip(recalculated, cached)) and recalculated[-1] == cached[-1] == "buy"


# Two GPUs of the input's own, owned at PRICE, busy 24 h a day: one rented only by the month (no on-demand price),
# one with no power figure. A blank read as 0 made renting free ("rent") or electricity free (OWN-2: break-even
# 233.79 / 12 = 19.5 h a day < 24, "buy").
OWN = {"class": "datacenter", "vram_gb": 80, "bandwidth_gbs": 2000, "tflops": 300, "purchase_price": PRICE}
OWN_GPUS = [{**OWN, "gpu": "OWN-1", "monthly_per_card": 6000, "power_w": 700},
            {**OWN, "gpu": "OWN-2", "on_demand_per_hour": 12}]
OWN_TASKS = [{**SERVICE, "task_id": "RESERVED", "gpu": "OWN-1", "tier": "monthly", "serving_hours_per_day": 24},
             {**SERVICE, "task_id": "ONDEMAND", "gpu": "OWN-2", "serving_hours_per_day": 24}]


def test_a_blank_on_demand_price_or_power_figure_stays_unknown(tmp_path):
    path = make_input(tmp_path / "in.xlsx", OWN_TASKS, settings=OWNING, gpus=OWN_GPUS)
    out, js = tmp_path / "out.xlsx", tmp_path / "out.json"
    result = budgetgen.build_budget(path, out, json_path=js, build_date=TODAY)
    rows = {b.gpu: b for b in result.plan.buy_vs_rent}
    assert (rows["OWN-1"].break_even_hours_per_day, rows["OWN-1"].verdict) == (None, "no on-demand price")
    assert rows["OWN-1"].energy_per_hour == pytest.approx(0.7)  # 700 W at 1.0 a kWh
    assert (rows["OWN-2"].energy_per_hour, rows["OWN-2"].break_even_hours_per_day) == (None, None)
    assert rows["OWN-2"].verdict == "no power figure"
    assert json.loads(js.read_text(encoding="utf-8"))["buy_vs_rent"]["OWN-2"] == {
        "purchase_price": PRICE, "daily_fixed": pytest.approx(DAILY_FIXED), "energy_per_hour": None,
        "break_even_hours_per_day": None, "plan_hours_per_day": pytest.approx(24), "verdict": "no power figure",
        "best_commitment_rate": pytest.approx(12 * 0.53), "break_even_vs_commitment": None,  # 12 x (1 - 0.47)
        "break_even_utilisation": None}

    book = openpyxl.load_workbook(out)
    sheet = sheet_rows(local_recalc(out, sheets=("BuyVsRent",)), book)  # the formulas agree, blanks and all
    assert sheet["OWN-1"] == [PRICE, 700, "", pytest.approx(DAILY_FIXED), pytest.approx(0.7), "", pytest.approx(24),
                              "enter on_demand_per_hour on GPUs to compare"]
    assert sheet["OWN-2"] == [PRICE, "", 12, pytest.approx(DAILY_FIXED), "", "", pytest.approx(24),
                              "enter power_w on GPUs to compare"]
    # typing 1,000 W: 1.0 an hour, break-even 233.79 / (12 - 1) = 21.25 h a day < 24: buy
    typed = sheet_rows(local_recalc(out, changes={purchase_cell(book, "OWN-2", "en", "power_w"): 1000},
                                    sheets=("BuyVsRent",)), book)
    assert typed["OWN-2"] == [PRICE, 1000, 12, pytest.approx(DAILY_FIXED), pytest.approx(1.0),
                              pytest.approx(DAILY_FIXED / 11), pytest.approx(24), "buy"]
    assert round(DAILY_FIXED / 11, 2) == 21.25


@pytest.mark.slow
def test_formulas_recalculates_the_sheet_as_the_local_evaluation_does(tmp_path):
    """The one buy-versus-rent plan `formulas` recalculates (BuyVsRent and what it reads), before and after typing a
    power figure: the values of the cell-by-cell evaluation the tests above read."""
    path = make_input(tmp_path / "in.xlsx", OWN_TASKS[1:], settings=OWNING, gpus=OWN_GPUS[1:])
    out = tmp_path / "out.xlsx"
    budgetgen.build_budget(path, out, build_date=TODAY)
    power = {purchase_cell(openpyxl.load_workbook(out), "OWN-2", "en", "power_w"): 1000}
    for changes in ({}, power):
        whole = recalc_formulas(out, changes, sheets=("BuyVsRent",))
        assert disagreements(whole, local_recalc(out, changes)) == []
        assert whole[("BUYVSRENT", "I2")] == ("buy" if changes else "enter power_w on GPUs to compare")


@pytest.mark.slow
def test_typing_a_purchase_price_in_libreoffice_recalculates_the_row(tmp_path):
    """The same edit as a user makes it: the price typed into the GPUs cell of a copy, LibreOffice recalculating."""
    if soffice_path() is None:
        pytest.skip("LibreOffice (soffice) not installed")
    _, out, _ = build(tmp_path)
    wb = openpyxl.load_workbook(out)
    for gpu in ("A100 80G", "H100 80G"):
        wb["GPUs"][purchase_cell(wb, gpu, "en").split("!")[1]] = PRICE
    typed = tmp_path / "typed.xlsx"
    wb.save(typed)
    sheet = recalc_many([typed], tmp_path / "lo")[typed]["BuyVsRent"]
    rows = {sheet[f"A{r}"]: [sheet.get(f"{c}{r}") for c in COLUMNS[1:]] for r in range(2, 5)}
    assert rows["A100 80G"] == [PRICE, 600, 12, pytest.approx(DAILY_FIXED), pytest.approx(0.6),
                                pytest.approx(A100_BREAK_EVEN), pytest.approx(24), "buy"]
    assert rows["H100 80G"][5:] == [pytest.approx(H100_BREAK_EVEN), pytest.approx(4), "rent"]
