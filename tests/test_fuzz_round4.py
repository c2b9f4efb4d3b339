"""Property-based fuzzers of the inputs added since round three (issue 34): a share setting, the Scenarios and
Ramp sheets, the providers and regions settings. Each example is built from random cells; its oracle, worked out
here from the input contract alone (not from budgetgen's parser), is either the plan's numbers or the exact cells
that must be refused. Bounded (derandomized, a few dozen examples each) so that CI stays fast."""

from __future__ import annotations

import csv
import math
import unicodedata

import pytest
from conftest import DATA, TODAY, make_input
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from budgetgen.core.errors import Code, InputError
from budgetgen.io.reader import read_inputs
from budgetgen.plan.engine import plan_budget

FUZZ = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
# A small training task on one H100 on demand: its cost is linear in its demand and its prices, and it is too small
# for any commitment (the Commitments' adjustment stays 0), so that the oracles below can be plain products.
TASK = {"task_id": "F1", "kind": "finetune", "model_params_b": 1, "method": "lora", "train_tokens": "20M",
        "gpu": "H100 80G", "cards": 1, "tier": "on_demand"}
MONTHS = ("2026-07", "2026-08", "2026-09")


def outcome(book):
    """The plan of `book`, or the (code, sheet, cell) of every problem reading it."""
    try:
        return plan_budget(read_inputs(book, today=TODAY))
    except InputError as exc:
        return {(p.code, p.sheet, p.cell) for p in exc.problems}


# ---------------------------------------------------------------- how the input contract reads a cell

TEXTS = {"1,500": 1500, "12,345": 12_345, "1,5": None, "2k": 2000, "0.5": 0.5, "-0": 0.0, "seven": None,
         "1e309": None, "inf": None, "nan": None, "#N/A": None, "=1+1": None, "": "blank", " ": "blank"}
PERCENT_TEXTS = {"25%": 0.25, "250%": 2.5, "90%": 0.9, "150%": 1.5, "0%": 0.0, "-10%": -0.1, "1e3%": 10.0}


def contract_number(raw, *, percent: bool, plain_above_one: bool = True):
    """What a number cell holds by the contract (README "Bad input"): a float, "blank", or None (refused). A
    percentage only in a percent column; a bare number above 1 in a share is refused as ambiguous."""
    if raw is None:
        return "blank"
    if isinstance(raw, str) and raw in PERCENT_TEXTS:
        value = PERCENT_TEXTS[raw] if percent else None
        sign = True
    elif isinstance(raw, str):
        value, sign = TEXTS[raw], False
    else:
        value, sign = float(raw), False
    if value in (None, "blank"):
        return value
    if not math.isfinite(value) or abs(value) > 1e15 or 0 < abs(value) < 1e-9:
        return None
    if percent and not plain_above_one and not sign and value > 1:
        return None
    return value


numbers = st.one_of(st.sampled_from([*TEXTS, *PERCENT_TEXTS]), st.none(),
                    st.sampled_from((0, -1, 1e-12, 0.001, 0.0009, 0.25, 1, 2, 25, 999, 1000, 1001, 1e6, 1.5e6)),
                    st.floats(min_value=-2, max_value=3000, allow_nan=False), st.integers(min_value=-5, max_value=50))


# ---------------------------------------------------------------- a share setting: hidden_cost_buffer

@FUZZ
@given(typed=numbers)
def test_the_buffer_setting_is_the_rate_the_contract_reads_or_refused_at_its_cell(tmp_path_factory, typed):
    book = make_input(tmp_path_factory.mktemp("buffer") / "in.xlsx", [TASK], settings={"hidden_cost_buffer": typed})
    rate = contract_number(typed, percent=True, plain_above_one=False)
    if rate == "blank":
        rate = 0.25
    got = outcome(book)
    if rate is None or rate < 0:
        event("refused")
        assert got == {(Code.OUT_OF_RANGE if rate is None or rate >= 0 else Code.NEGATIVE, "Settings", "B3")} or \
            {cell for _, _, cell in got} == {"B3"}, (typed, got)
        return
    event("built")
    assert not isinstance(got, set), (typed, got)
    for month in MONTHS:
        totals = got.month_totals[month]
        assert totals.commitments == 0
        assert totals.buffer == pytest.approx(rate * totals.gpu, rel=1e-12, abs=1e-9), typed


# ---------------------------------------------------------------- Scenarios: a price driver's three levels

@pytest.fixture(scope="module")
def price_one():
    """The plan's period total with every price as typed (no Scenarios sheet)."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        plan = plan_budget(read_inputs(make_input(Path(folder) / "in.xlsx", [TASK]), today=TODAY))
    assert all(t.commitments == 0 for t in plan.month_totals.values())
    return sum(t.total for t in plan.month_totals.values())


def scenario_oracle(low, base, high) -> tuple[set[str], dict[str, float]]:
    """The Scenarios cells (B2, C2, D2) that must be refused, or each level's multiplier."""
    cells = dict(zip(("low", "base", "high"), ("B2", "C2", "D2"), strict=True))
    read = {level: contract_number(raw, percent=True) for level, raw in zip(cells, (low, base, high), strict=True)}
    bad = {cells[lv] for lv, v in read.items() if v is None or (v != "blank" and not 0.001 <= v <= 1000)}
    if bad:
        return bad, {}
    value = {"base": 1.0 if read["base"] == "blank" else read["base"]}
    value.update({lv: value["base"] if read[lv] == "blank" else read[lv] for lv in ("low", "high")})
    for lower, upper in (("low", "base"), ("base", "high")):
        if value[lower] > value[upper]:
            bad.add(cells[upper] if read[upper] != "blank" else cells[lower])
    return bad, value


def _blank_some(values, blanks):
    return tuple(None if b else v for v, b in zip(values, blanks, strict=True))


# mostly readable, ordered levels (some blank), else anything
levels = st.one_of(
    st.tuples(st.lists(st.one_of(st.floats(min_value=0.001, max_value=1000), st.sampled_from([0.9, 1, 1.5, 1000])),
                       min_size=3, max_size=3).map(sorted), st.lists(st.booleans(), min_size=3, max_size=3))
    .map(lambda t: _blank_some(*t)),
    st.tuples(numbers, numbers, numbers))


@pytest.mark.slow
@FUZZ
@given(values=levels)
def test_a_price_scenario_moves_the_total_by_its_multiplier_or_is_refused_at_its_cells(
        tmp_path_factory, price_one, values):
    low, base, high = values
    book = make_input(tmp_path_factory.mktemp("scenarios") / "in.xlsx", [TASK], extra_sheets={
        "Scenarios": [["driver", "low", "base", "high"], ["price", low, base, high]]})
    bad, value = scenario_oracle(low, base, high)
    got = outcome(book)
    if bad:
        event("refused")
        assert isinstance(got, set) and {cell for _, sheet, cell in got if sheet == "Scenarios"} == bad, \
            (low, base, high, got)
        assert {sheet for _, sheet, _ in got} == {"Scenarios"}
        return
    event("built")
    assert not isinstance(got, set), (low, base, high, got)
    for level, multiplier in value.items():
        assert got.scenario_totals[level] == pytest.approx(multiplier * price_one, rel=1e-9), (level, multiplier)


# ---------------------------------------------------------------- Ramp: a multiplier per month

@FUZZ
@given(cells=st.tuples(numbers, numbers, numbers))
def test_a_ramp_scales_each_months_cost_or_is_refused_at_its_cells(tmp_path_factory, price_one, cells):
    book = make_input(tmp_path_factory.mktemp("ramp") / "in.xlsx", [TASK], extra_sheets={
        "Ramp": [["task_id", *MONTHS], ["F1", *cells]]})
    read = [contract_number(raw, percent=False) for raw in cells]
    bad = {f"{col}2" for col, v in zip("BCD", read, strict=True)
           if v is None or (v != "blank" and not 0 <= v <= 1e6)}
    if not bad and read == [0, 0, 0]:  # paused every month: nothing to plan (was a ZeroDivisionError)
        bad = {"A2"}
    got = outcome(book)
    if bad:
        event("refused")
        assert isinstance(got, set) and {cell for _, _, cell in got} == bad and {s for _, s, _ in got} == {"Ramp"}, \
            (cells, got)
        return
    event("built")
    assert not isinstance(got, set), (cells, got)
    (task,) = got.tasks
    per_month = price_one / 3 / 1.25  # the GPU cost of a month at the typed demand (total = 3 x gpu x 1.25)
    for month, factor, value in zip(MONTHS, read, task.months, strict=True):
        factor = 1.0 if factor == "blank" else factor
        assert value.cost == pytest.approx(factor * per_month, rel=1e-9, abs=1e-9), (month, cells)
        assert got.month_totals[month].gpu == pytest.approx(factor * per_month, rel=1e-9, abs=1e-9)


# ---------------------------------------------------------------- providers, regions

def _rows(path):
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


OFFERS = _rows(DATA / "prices.csv")
CLASS = {r["gpu"]: r["class"] for r in _rows(DATA / "gpus.csv") if r["vram_gb"] and r["bandwidth_gbs"] and r["tflops"]}
COUNTS_FOR = {r["provider"]: r["counts_for"].split()
              for r in _rows(DATA.parent.parent / "budgetgen" / "data" / "providers.csv")}
PRICE_COLUMNS = ("on_demand_per_hour", "monthly_per_card", "idle_per_hour", "spot_per_hour")
PROVIDERS = sorted({r["provider"] for r in OFFERS} | set(COUNTS_FOR))
REGIONS = sorted({r["region"] for r in OFFERS} | {"any"})


def folded(text: str) -> str:
    """A name as the contract compares it: NFKC, without format characters, case folded, trimmed."""
    return "".join(c for c in unicodedata.normalize("NFKC", text) if unicodedata.category(c) != "Cf").strip().casefold()


def variant(name: str, how: int) -> str:
    """The same name as a user might type it: upper case, full width, with a zero-width space, padded."""
    return [name, name.upper(), "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in name),
            name[:1] + "\u200b" + name[1:], f"  {name} "][how]


def named(names):
    return st.lists(st.one_of(st.tuples(st.sampled_from(names), st.integers(0, 4)).map(lambda t: variant(*t)),
                              st.sampled_from(["awz", "narnia", "", " ", "\u202eswa"])), min_size=1, max_size=3)


def priced_gpus(providers: set[str] | None, regions: set[str] | None) -> set[str]:
    """The catalog GPUs a USD plan under offer_currency auto can price from the offers the filters leave."""
    out = set()
    for o in OFFERS:
        if o["gpu"] not in CLASS or o["currency"] != "USD" or not any(o[c] for c in PRICE_COLUMNS):
            continue
        if providers is not None and folded(o["provider"]) not in providers:
            continue
        if regions is not None and folded(o["region"]) not in regions | {"any"}:
            continue
        if o["provider"] in COUNTS_FOR and CLASS[o["gpu"]] not in COUNTS_FOR[o["provider"]]:
            continue
        out.add(o["gpu"])
    return out


@FUZZ
@given(providers=st.one_of(st.none(), named(PROVIDERS)), regions=st.one_of(st.none(), named(REGIONS)))
def test_the_offer_filters_price_what_they_name_or_are_refused_at_their_cell(tmp_path_factory, providers, regions):
    typed = {k: ",".join(v) for k, v in (("providers", providers), ("regions", regions))
             if v is not None and ",".join(v).strip()}  # a blank cell is no setting
    book = make_input(tmp_path_factory.mktemp("filters") / "in.xlsx", [{**TASK, "gpu": None, "cards": None}],
                      settings={"currency": "USD", **typed})
    cells = {key: f"B{i}" for i, key in enumerate(typed, start=4)}  # period_start B2, currency B3
    bad, wanted = set(), {}
    for key, text in typed.items():
        known = {folded(n) for n in (PROVIDERS if key == "providers" else REGIONS)}
        items = [folded(i) for i in text.split(",") if folded(i)]
        if not items or any(i not in known for i in items):
            bad.add(cells[key])
        wanted[key] = set(items)
    try:
        inputs = read_inputs(book, today=TODAY)
    except InputError as exc:
        got = {(p.sheet, p.cell) for p in exc.problems}
    else:
        got = None
    if bad:
        event("refused: a name")
        assert got == {("Settings", c) for c in bad}, (typed, got)
        return
    expected = priced_gpus(wanted.get("providers"), wanted.get("regions"))
    if not expected:
        event("refused: nothing left")
        assert got == {("Settings", next(iter(cells.values())))}, (typed, got)
        return
    event("built")
    assert got is None, (typed, got)
    assert {g.name for g in inputs.gpus if any(p is not None for p in g.prices.values())} == expected, typed
