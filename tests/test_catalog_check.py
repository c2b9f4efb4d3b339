"""The catalog consistency check at load: rent against round-the-clock on demand, idle and spot against on
demand, the age of the prices; warnings (never errors), one per GPU and rule, naming the figures and the cell."""

from __future__ import annotations

import dataclasses
import datetime as dt
from importlib import resources

import pytest
from conftest import TODAY, make_input

from budgetgen.catalog import gpus as catalog
from budgetgen.catalog import prices
from budgetgen.catalog.gpus import catalog_warnings
from budgetgen.core.inputs import Gpu, Settings
from budgetgen.io.reader import read_inputs

SHIPPED = resources.files("budgetgen") / "data" / "gpus.csv"
BATCH = {"task_id": "T", "kind": "batch", "model_params_b": 1, "batch_requests": 10, "tokens_per_request": 10}
CARD = {"gpu": "Card X", "vram_gb": 48, "bandwidth_gbs": 900, "tflops": 200}
CHECK_KEYS = {"catalog_monthly_over_on_demand", "catalog_idle_over_on_demand", "catalog_spot_over_on_demand",
              "catalog_prices_old"}


def card(on_demand=None, monthly=None, idle=None, spot=None, purchase=None, as_of="") -> Gpu:
    return Gpu("Card X", "datacenter", 48, 900, 200, "pcie", 0.5,
               {"monthly": monthly, "on_demand": on_demand, "idle": idle, "spot": spot},
               purchase_price=purchase, as_of=as_of)


def checked(gpu: Gpu, build_date: str = "2026-06-15", hours_per_month: float = 730) -> list:
    return catalog_warnings([gpu], Settings(build_date=build_date, hours_per_month=hours_per_month))


def sheet_warnings(tmp_path, gpus: list[dict], today: dt.date = TODAY) -> list:
    """The catalog check's warnings on Card X of a workbook with a GPUs sheet (the test catalog's GPUs left out)."""
    inputs = read_inputs(make_input(tmp_path / "in.xlsx", [BATCH], gpus=gpus), today=today)
    return [w for w in inputs.warnings if w.key in CHECK_KEYS and w.params["gpu"] == "Card X"]


# ------------------------------------------------------------------ monthly rent against on demand all month

@pytest.mark.parametrize("monthly, hours, flagged", [
    (1500, 730, True),    # 730 h x 2 = 1,460 < 1,500: on demand around the clock is cheaper
    (1460, 730, False),   # equal: the rent is no dearer than on demand all month
    (1459, 730, False),
    (1450, 720, True),    # a 720-hour month: 720 x 2 = 1,440 < 1,450
])
def test_monthly_rent_above_hours_per_month_times_on_demand(monthly, hours, flagged):
    warnings = checked(card(on_demand=2, monthly=monthly), hours_per_month=hours)
    assert [w.key for w in warnings] == (["catalog_monthly_over_on_demand"] if flagged else [])
    if flagged:
        assert warnings[0].params["around_the_clock"] == pytest.approx(hours * 2)


def test_rent_warning_names_the_gpu_the_figures_and_the_cell(tmp_path):
    (w,) = sheet_warnings(tmp_path, [{**CARD, "on_demand_per_hour": 2, "monthly_per_card": 1500}])
    # make_input writes the columns in the order given: gpu A, vram B, bandwidth C, tflops D, on demand E, monthly F
    assert w == ("Card X: monthly_per_card 1,500 is more than 730 h x on_demand_per_hour 2 = 1,460: on demand "
                 "would be cheaper even around the clock; check the prices (GPUs!F2)")
    assert w.render("zh") == ("Card X：包月单价 monthly_per_card 1,500 高于 730 小时 × 按需单价 on_demand_per_hour 2 = "
                              "1,460：即使全天运行按需也更便宜；请核对价格（GPUs!F2）")


def test_a_sheet_price_against_a_builtin_one_names_the_typed_cell_once(tmp_path):
    """The test catalog's RTX 4090 rents at 3,000 a month; typing an on-demand price of 2.5 makes 730 x 2.5 = 1,825:
    one warning for the merged GPU, at the on-demand cell (the rent was not typed)."""
    inputs = read_inputs(make_input(tmp_path / "in.xlsx", [BATCH], gpus=[{"gpu": "rtx 4090", "on_demand_per_hour": 2.5}]),
                         today=TODAY)
    (w,) = [w for w in inputs.warnings if w.key in CHECK_KEYS]
    assert w.params["gpu"] == "RTX 4090" and w.params["monthly"] == 3000
    assert w.params["around_the_clock"] == pytest.approx(1825)
    assert str(w.params["place"]) == "GPUs!B2"


def test_the_test_catalogs_own_contradiction_is_reported_as_builtin(tmp_path):
    """tests/data/gpus.csv keeps the RTX 4090 at 3,000 a month and 3 an hour (the numbers of SPEC §10.2):
    730 x 3 = 2,190 < 3,000, from the built-in catalog."""
    inputs = read_inputs(make_input(tmp_path / "in.xlsx", [BATCH]), today=TODAY)
    (w,) = [w for w in inputs.warnings if w.key in CHECK_KEYS]
    assert (w.params["gpu"], w.params["monthly"], w.params["around_the_clock"]) == ("RTX 4090", 3000, 2190)
    assert w.endswith("(built-in catalog)") and w.render("zh").endswith("（内置目录）")


# ------------------------------------------------------------------ idle and spot against on demand

@pytest.mark.parametrize("tier, column", [("idle", "idle_per_hour"), ("spot", "spot_per_hour")])
@pytest.mark.parametrize("price, flagged", [(2.5, True), (2, False), (1.2, False)])
def test_idle_and_spot_above_on_demand(tier, column, price, flagged):
    warnings = checked(card(on_demand=2, **{tier: price}))
    assert [w.key for w in warnings] == ([f"catalog_{tier}_over_on_demand"] if flagged else [])
    if flagged:
        assert f"{column} 2.5 is more than on_demand_per_hour 2" in warnings[0]


def test_each_rule_once_per_gpu_each_at_its_cell(tmp_path):
    """Every price contradicts: three warnings, one per rule, each at the cell of its own figure."""
    warnings = sheet_warnings(tmp_path, [{**CARD, "on_demand_per_hour": 2, "monthly_per_card": 1500,
                                          "idle_per_hour": 3, "spot_per_hour": 2.1}])
    assert [(w.key, str(w.params["place"])) for w in warnings] == [
        ("catalog_monthly_over_on_demand", "GPUs!F2"), ("catalog_idle_over_on_demand", "GPUs!G2"),
        ("catalog_spot_over_on_demand", "GPUs!H2")]


def test_a_price_contradiction_on_the_gpus_sheet_is_a_warning_and_the_plan_builds(tmp_path):
    import budgetgen

    path = make_input(tmp_path / "in.xlsx", [{**BATCH, "gpu": "Card X", "tier": "idle"}],
                      gpus=[{**CARD, "on_demand_per_hour": 2, "idle_per_hour": 3}])
    result = budgetgen.build_budget(path, tmp_path / "out.xlsx", build_date=TODAY)
    assert "Card X: idle_per_hour 3 is more than on_demand_per_hour 2" in "\n".join(result.plan.warnings)
    assert result.plan.tasks[0].row["gpu"] == "Card X"


def test_without_an_on_demand_price_there_is_nothing_to_compare():
    assert checked(card(monthly=99999, idle=50, spot=50)) == []


# ------------------------------------------------------------------ the age of the prices

@pytest.mark.parametrize("as_of, build_date, flagged", [
    ("2026-01", "2026-07-31", False),     # a month counts as its last day: Jan 31 + 6 months = Jul 31, not before
    ("2026-01", "2026-08-01", True),
    ("2026-01-15", "2026-07-15", False),  # exactly six months
    ("2026-01-15", "2026-07-16", True),
    ("2026-08-31", "2027-02-28", False),  # Aug 31 + 6 months is the end of February
    ("2026-08-31", "2027-03-01", True),
    ("2026-07", "2026-06-15", False),     # dated after the build date
    ("mid 2025", "2027-06-01", False),    # not a date: nothing to compare
    ("", "2027-06-01", False),
])
def test_prices_older_than_six_months(as_of, build_date, flagged):
    warnings = checked(card(on_demand=2, as_of=as_of), build_date=build_date)
    assert [w.key for w in warnings] == (["catalog_prices_old"] if flagged else [])


def test_a_gpu_without_prices_has_no_age_to_report():
    assert checked(card(as_of="2020-01"), build_date="2027-01-01") == []
    assert [w.key for w in checked(card(purchase=25000, as_of="2020-01"), build_date="2027-01-01")] == \
        ["catalog_prices_old"]


def test_old_prices_on_the_gpus_sheet_name_the_as_of_cell(tmp_path):
    (w,) = sheet_warnings(tmp_path, [{**CARD, "on_demand_per_hour": 2, "as_of": "2026-07"}],
                          today=dt.date(2027, 2, 1))
    assert w == ("Card X: prices as_of 2026-07 are more than 6 months before the build date 2027-02-01: check them "
                 "with your provider and enter current ones on the GPUs sheet (GPUs!F2)")


# ------------------------------------------------------------------ the shipped catalog

def shipped(monkeypatch, currency: str | None = "CNY") -> list:
    """The shipped catalog priced by its offers in `currency` (CNY: the Chinese-market rows)."""
    monkeypatch.setattr(catalog, "CATALOG_RESOURCE", SHIPPED)
    monkeypatch.setattr(prices, "OFFERS_RESOURCE", SHIPPED.with_name("prices.csv"))
    return catalog.builtin_catalog(currency)


def shipped_warnings(monkeypatch, build_date: str, currency: str | None = "CNY") -> list:
    return catalog_warnings(shipped(monkeypatch, currency), Settings(build_date=build_date))


def test_the_shipped_catalog_has_no_price_contradiction(monkeypatch):
    contradictions = CHECK_KEYS - {"catalog_prices_old"}
    for currency, day in (("CNY", "2026-08-10"), (None, "2026-12-03"), ("USD", "2026-12-03")):
        assert [w for w in shipped_warnings(monkeypatch, day, currency) if w.key in contradictions] == [], currency


def test_undated_prices_are_called_undated_not_of_the_day_they_were_read(monkeypatch):
    """The snapshot states no date (its rows were read 2026-12-03): every GPU it prices is warned of as undated,
    never as priced on 2026-12-03; from 2027-06-04 (read + 6 months, the build date after it) the warning says even
    the day they were read is more than 6 months back."""
    catalog_ = shipped(monkeypatch, "USD")
    usd = [g.name for g in catalog_ if g.currency == "USD"]
    assert {"H100 80G", "H100 PCIe", "A100 40G", "H200", "B200", "MI300X", "L4", "A10"} <= set(usd)
    assert all(g.as_of == "retrieved 2026-12-03" for g in catalog_ if g.currency == "USD")
    undated = [g.name for g in catalog_ if g.as_of == "retrieved 2026-12-03"]  # the USD ones and the index's CNY ones
    fresh = shipped_warnings(monkeypatch, "2027-06-03", "USD")
    assert [w.params["gpu"] for w in fresh if w.key == "catalog_prices_undated" and w.params["read"] == "2026-12-03"] \
        == undated
    assert not [w for w in fresh if w.key == "catalog_prices_undated_old"]
    assert [w.params["gpu"] for w in fresh if w.key == "catalog_prices_old"] == ["H800", "L20"]  # dated 2026-08-09
    old = shipped_warnings(monkeypatch, "2027-06-04", "USD")
    assert [w.params["gpu"] for w in old if w.key == "catalog_prices_undated_old"] == undated
    assert "states no date and was read on 2026-12-03, more than 6 months before the build date 2027-06-04" in \
        next(w for w in old if w.key == "catalog_prices_undated_old")


def test_dated_chinese_market_prices_age_from_the_day_their_source_states(monkeypatch):
    """In a CNY plan the L40S, H800 and L20 are priced by 共绩算力's page prices, collected 2026-08-09 (a stated
    date): not old until 2027-02-09, old from 2027-02-10; the price index's rows (RTX 4090, RTX A6000, H20, A800 80G)
    state no date and are warned of as undated the whole time."""
    dated = [g.name for g in shipped(monkeypatch) if g.as_of == "2026-08-09"]
    assert dated == ["L40S", "H800", "L20"]
    assert not [w for w in shipped_warnings(monkeypatch, "2027-02-09") if w.key == "catalog_prices_old"]
    old = shipped_warnings(monkeypatch, "2027-02-10")
    assert [w.params["gpu"] for w in old if w.key == "catalog_prices_old"] == dated
    undated = [w.params["gpu"] for w in old if w.key == "catalog_prices_undated" and w.params["read"] == "2026-12-03"]
    assert {"RTX 4090", "RTX A6000", "H20", "A800 80G"} <= set(undated)


@pytest.mark.parametrize("as_of, build_date, key", [
    ("retrieved 2026-12-03", "2027-06-03", "catalog_prices_undated"),
    ("retrieved 2026-12-03", "2027-06-04", "catalog_prices_undated_old"),
    ("retrieved:2026-12-03;commit_date:unknown", "2026-12-04", "catalog_prices_undated"),  # the snapshot's own form
    ("2026-12-03", "2027-06-04", "catalog_prices_old"),
])
def test_an_undated_price_is_warned_of_as_undated(as_of, build_date, key):
    (warning,) = checked(card(on_demand=2, as_of=as_of), build_date=build_date)
    assert warning.key == key and warning.params.get("read", "2026-12-03") == "2026-12-03"


def test_a_spot_price_above_another_offers_on_demand_is_no_contradiction():
    """The catalog prices each tier by its cheapest offer: a spot price of one provider above another's on-demand
    price is only the dearer offer (never chosen), not a contradiction; within one offer it still is."""
    mixed = dataclasses.replace(card(on_demand=1.25, spot=1.443), offers={"on_demand": "shadeform", "spot": "gcp"})
    assert checked(mixed) == []
    same = dataclasses.replace(card(on_demand=1.25, spot=1.443), offers={"on_demand": "gcp", "spot": "gcp"})
    assert [w.key for w in checked(same)] == ["catalog_spot_over_on_demand"]


def test_prices_age_up_to_the_plan_month_they_pay_for():
    """Built on 2026-12-03 for January to March 2027 with prices of 2026-07 (read as July 31): the build date is
    4 months after them, but March 2027 is 7 months after July 31, more than six: flagged, naming that month."""
    settings = Settings(build_date="2026-12-03", plan_months=("2027-01", "2027-02", "2027-03"))
    [warning] = catalog_warnings([card(on_demand=2, as_of="2026-07")], settings)
    assert warning.key == "catalog_prices_old" and "before the plan month 2027-03 they pay for" in warning
    # a plan that ends by January 2027 pays prices at most six months old (July 31 + 6 months = January 31)
    assert catalog_warnings([card(on_demand=2, as_of="2026-07")],
                            Settings(build_date="2026-12-03", plan_months=("2026-12", "2027-01"))) == []


def test_gpus_that_would_run_a_task_but_have_no_price_for_its_tier_are_named_once(tmp_path):
    """Card X (48 GB) holds a 1B batch job but has no idle price (the batch default tier): it can never be chosen,
    which one warning says, naming the tasks it was left out of; once priced, it is no longer named."""
    from budgetgen.plan.engine import plan_budget

    def unpriced(gpu_row: dict, name: str) -> list:
        inputs = read_inputs(make_input(tmp_path / name, [BATCH, {**BATCH, "task_id": "U"}], gpus=[gpu_row]),
                             today=TODAY)
        return [w for w in plan_budget(inputs).warnings if w.key == "gpus_unpriced"]

    [warning] = unpriced(CARD, "a.xlsx")
    assert "Card X (T, U)" in warning.params["gpus"] and "Card X (T, U): left out of the choice" in str(warning)
    priced = unpriced({**CARD, "idle_per_hour": 1}, "b.xlsx")
    assert all("Card X" not in w.params["gpus"] for w in priced)
