"""Money in the plan's currency: prices carry their currency, a dated rate converts them, nothing is relabelled.

Expected rates are read from the ECB data set directly (the `currency_converter` package), independently of
budgetgen's own lookup; amounts are worked out here from the test catalog's offers (tests/data/prices.csv): the
A100 80G's Chinese-market offer (12 CNY on demand, 8,250 a month) and its USD market offer (1.765 on demand).
"""

from __future__ import annotations

import datetime as dt

import openpyxl
import pytest
from click.testing import CliRunner
from conftest import TODAY, make_input
from currency_converter import CurrencyConverter

from budgetgen import InputError, read_inputs
from budgetgen.api import build_budget
from budgetgen.cli import main
from budgetgen.core.errors import Code

A100_CNY = 12.0  # the A100 80G's cn-market on-demand price per card-hour, in CNY
A100_MONTHLY_CNY = 8250.0
A100_USD = 1.54  # its cheapest USD offer on demand (primeintellect; no monthly rent)
A6000_CNY = 5.0  # the RTX A6000 has a cn-market offer only
DAY = dt.date(2026, 12, 3)
BATCH = {"task_id": "T1", "kind": "batch", "model_params_b": "7B", "batch_requests": 1000, "tokens_per_request": 100,
         "gpu": "A100 80G", "tier": "on_demand"}


def ecb(currency: str, plan: str, day: dt.date) -> float:
    """Plan currency per unit on the last ECB day at or before `day`."""
    converter = CurrencyConverter()
    last = min(converter.bounds[currency].last_date, converter.bounds[plan].last_date, day)
    return converter.convert(1, currency, plan, date=last)


@pytest.mark.parametrize("currency", ["USD", "EUR"])
def test_init_plan_left_as_written_is_priced_in_its_currency(tmp_path, currency):
    book = tmp_path / "plan.xlsx"
    result = CliRunner().invoke(main, ["init", str(book), "--currency", currency, "--date", DAY.isoformat()])
    assert result.exit_code == 0, result.output
    inputs = read_inputs(book, today=DAY)
    rate, usd = ecb("CNY", currency, DAY), ecb("USD", currency, DAY)
    a100, a6000 = inputs.gpu("A100 80G"), inputs.gpu("RTX A6000")
    assert inputs.settings.currency == currency and a100.currency == currency
    # the A100's cheapest USD offer (USD x 1 in a USD plan; an EUR plan has no EUR market: the USD one, converted)
    assert a100.prices["on_demand"] == pytest.approx(A100_USD * usd, rel=1e-12) and a100.prices["monthly"] is None
    # the A6000 has a Chinese-market offer only: out of the plan's market, unpriced (never relabelled, never 0)
    assert all(p is None for p in a6000.prices.values())
    # a converted row says what it was converted from, at which rate and on which day
    sheet = openpyxl.load_workbook(book, read_only=True)["GPUs"]
    rows = list(sheet.iter_rows(values_only=True))
    header = rows[0]
    row = next(r for r in rows if r[0] == "A100 80G")
    source = row[header.index("source")]
    if currency != "USD":
        assert "converted from" in source and "USD" in source and f"{usd:.6g} {currency} per USD" in source
    assert row[header.index("currency")] == currency
    # money-sized defaults and the example extras follow the currency: 1.0 CNY/kWh, 2,000 CNY a year, 400 CNY
    assert inputs.settings.electricity_per_kwh == pytest.approx(float(f"{1.0 * rate:.3g}"))
    assert inputs.settings.upkeep_per_year == pytest.approx(float(f"{2000 * rate:.3g}"))
    assert inputs.extras[0].monthly_cost == pytest.approx(float(f"{400 * rate:.3g}"))


def test_builtin_cny_prices_in_a_usd_plan_are_converted_not_relabelled(tmp_path):
    book = make_input(tmp_path / "in.xlsx", [BATCH], settings={"currency": "USD", "build_date": DAY.isoformat(),
                                                              "offer_currency": "any"})
    inputs = read_inputs(book, today=DAY)
    a6000 = inputs.gpu("RTX A6000")
    assert a6000.currency == "CNY" and a6000.listed_prices["on_demand"] == A6000_CNY
    assert a6000.prices["on_demand"] == pytest.approx(A6000_CNY * ecb("CNY", "USD", DAY), rel=1e-12)
    assert inputs.fx.rate("CNY").as_of <= DAY.isoformat()
    # a USD offer where there is one: the A100 80G's, as it is
    assert inputs.gpu("A100 80G").prices["on_demand"] == A100_USD


def test_a_gpus_row_typed_in_cny_in_a_usd_plan_is_converted(tmp_path):
    gpus = [{"gpu": "A100 80G", "on_demand_per_hour": 10, "currency": "cny"}]
    book = make_input(tmp_path / "in.xlsx", [BATCH], settings={"currency": "USD"}, gpus=gpus,
                      extra_sheets={"FX": [["currency", "rate", "as_of", "source"], ["CNY", 0.5, "2026-06-01", "bank"]]})
    a100 = read_inputs(book, today=TODAY).gpu("A100 80G")
    # the typed rate, not the reference one; the built-in USD offer's spot price is not mixed into a CNY row
    assert a100.prices["on_demand"] == 5.0 and a100.prices["spot"] is None and a100.currency == "CNY"


def test_a_gpus_row_without_currency_is_in_the_plan_currency_and_never_mixed_with_cny(tmp_path):
    gpus = [{"gpu": "A100 80G", "on_demand_per_hour": 2.0}]
    book = make_input(tmp_path / "in.xlsx", [BATCH], settings={"currency": "USD"}, gpus=gpus)
    a100 = read_inputs(book, today=TODAY).gpu("A100 80G")
    assert a100.currency == "USD" and a100.prices["on_demand"] == 2.0
    assert a100.prices["monthly"] is None  # the built-in 8,250 is CNY: not carried into a USD row


def test_a_currency_without_a_rate_is_refused_at_its_cell(tmp_path):
    gpus = [{"gpu": "A100 80G", "on_demand_per_hour": 2.0, "currency": "XYZ"}]
    book = make_input(tmp_path / "in.xlsx", [BATCH], settings={"currency": "USD"}, gpus=gpus)
    with pytest.raises(InputError) as info:
        read_inputs(book, today=TODAY)
    problem = next(p for p in info.value.problems if p.sheet == "GPUs")
    headers = list(gpus[0])
    assert problem.code is Code.UNKNOWN_VALUE
    assert problem.cell == f"{chr(ord('A') + headers.index('currency'))}2"
    assert "XYZ" in str(problem) and "FX sheet" in str(problem)


def test_builtin_prices_without_a_rate_are_left_out_with_a_true_warning(tmp_path):
    book = make_input(tmp_path / "in.xlsx", [{**BATCH, "gpu": "Mine"}], settings={"currency": "XAU"},
                      gpus=[{"gpu": "Mine", "vram_gb": 80, "bandwidth_gbs": 2000, "tflops": 300,
                             "on_demand_per_hour": 0.001}])
    with pytest.raises(InputError) as info:  # no default electricity price in gold: it must be typed
        read_inputs(book, today=TODAY)
    assert {p.message.split(" ")[0] for p in info.value.problems} == {"electricity_per_kwh", "upkeep_per_year"}
    book = make_input(tmp_path / "in2.xlsx", [{**BATCH, "gpu": "Mine"}],
                      settings={"currency": "XAU", "electricity_per_kwh": 0.0001, "upkeep_per_year": 1},
                      gpus=[{"gpu": "Mine", "vram_gb": 80, "bandwidth_gbs": 2000, "tflops": 300,
                             "on_demand_per_hour": 0.001}])
    inputs = read_inputs(book, today=TODAY)
    assert inputs.gpu("A100 80G").prices["on_demand"] is None  # unknown, not 12 relabelled, not 0
    (warning,) = [w for w in inputs.warnings if getattr(w, "key", "") == "fx_unknown_builtin"]
    assert "A100 80G" in warning.params["names"] and warning.params["plan"] == "XAU"


def test_typed_quotes_are_not_called_old_but_catalog_prices_are(tmp_path):
    # A CNY plan: the A100 80G and H100 80G are priced by their Chinese-market offers, dated 2026-07
    late = dt.date(2027, 9, 1)  # the test catalog's prices are dated 2026-07: old by then
    gpus = [{"gpu": "A100 80G", "on_demand_per_hour": 9.5, "as_of": "2026-07"}]  # a fresh quote, stale date left
    book = make_input(tmp_path / "in.xlsx", [BATCH], settings={"period_start": "2027-10"}, gpus=gpus)
    old = {w.params["gpu"] for w in read_inputs(book, today=late).warnings
           if getattr(w, "key", "") == "catalog_prices_old"}
    assert "A100 80G" not in old and "H100 80G" in old


def test_the_workbook_converts_with_a_named_rate_it_shows(tmp_path):
    book = make_input(tmp_path / "in.xlsx", [BATCH], settings={"currency": "USD", "build_date": DAY.isoformat()},
                      gpus=[{"gpu": "A100 80G", "on_demand_per_hour": A100_CNY, "currency": "CNY"}])
    result = build_budget(book, tmp_path / "out.xlsx", build_date=DAY)
    wb = openpyxl.load_workbook(result.workbook)
    values = openpyxl.load_workbook(result.workbook, data_only=True)
    fx_cny = wb.defined_names["FxCNY"].attr_text
    sheet, cell = fx_cny.split("!")
    assert values[sheet.strip("'")][cell.replace("$", "")].value == pytest.approx(ecb("CNY", "USD", DAY))
    gpus = wb["GPUs"]
    header = [c.value for c in gpus[1]]
    col = next(i for i, h in enumerate(header) if str(h).startswith("on_demand_per_hour in the plan currency"))
    row = next(r for r in range(2, gpus.max_row + 1) if gpus.cell(r, 1).value == "A100 80G")
    formula = gpus.cell(row, col + 1).value
    assert formula.startswith("=IF(ISNUMBER(") and "*" in formula
    assert values["GPUs"].cell(row, col + 1).value == pytest.approx(A100_CNY * ecb("CNY", "USD", DAY))
    listed = header.index("on_demand_per_hour (per card-hour, in the row's currency)")
    assert gpus.cell(row, listed + 1).value == A100_CNY  # as listed, beside its currency
    assert gpus.cell(row, header.index("currency") + 1).value == "CNY"
    assert "USD" not in gpus.cell(row, listed + 1).number_format  # never under the plan currency's label


def test_a_rate_dated_over_30_days_before_the_plan_starts_is_warned(tmp_path):
    """An EUR plan starting 2026-07 converts USD prices at a typed rate of 2026-05-01 (61 days before): warned,
    naming the rate and its day; the same rate dated 2026-06-15 (16 days before) is not."""
    def warned(as_of: str) -> list:
        fx = [["currency", "rate", "as_of", "source"], ["USD", 0.9, as_of, "bank"]]
        book = make_input(tmp_path / f"in-{as_of}.xlsx", [BATCH], extra_sheets={"FX": fx},
                          settings={"currency": "EUR", "build_date": "2026-06-15", "electricity_per_kwh": 0.2,
                                    "upkeep_per_year": 300})
        inputs = read_inputs(book, today=TODAY)
        assert inputs.gpu("A100 80G").prices["on_demand"] == pytest.approx(A100_USD * 0.9)
        return [w for w in inputs.warnings if getattr(w, "key", "") == "fx_rate_old"]
    (old,) = warned("2026-05-01")
    assert (old.params["currency"], old.params["as_of"], old.params["start"]) == ("USD", "2026-05-01", "2026-07")
    assert warned("2026-06-15") == []
