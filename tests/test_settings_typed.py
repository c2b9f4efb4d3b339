"""Settings is a typed dataclass whose fields are the schema's settings: same keys, types that fit, defaults from it."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import TODAY, make_input

from budgetgen.core.inputs import Settings
from budgetgen.core.schema import COMMITMENT_SETTINGS, SETTINGS, TIER, TIER_CAP_SETTINGS
from budgetgen.io.reader import read_inputs

# The Python type a setting of each schema type holds once read (values.parse_cell: a count is a whole int, a
# month YYYY-MM text, a date YYYY-MM-DD text); a setting without a default may also be None.
PYTHON_TYPE = {"number": "float", "percent": "float", "count": "int", "text": "str", "choice": "str",
               "month": "str", "date": "str"}
DERIVED = {"plan_months", "tier_caps", "discounts"}  # not rows of the Settings sheet
TIER_KEYS = {s.key for s in TIER_CAP_SETTINGS + COMMITMENT_SETTINGS}


def _fields() -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(Settings) if f.name not in DERIVED}


def test_every_setting_is_a_field_or_a_tier_setting_and_nothing_else():
    keys = {s.key for s in SETTINGS}
    assert set(_fields()) == keys - TIER_KEYS
    assert set(Settings().tier_caps) == {f"tier_cap_{name}" for name in ("monthly", "on_demand", "idle", "spot")}
    assert set(Settings().discounts) == {"reserved_1y_discount", "reserved_3y_discount"}


@pytest.mark.parametrize("setting", [s for s in SETTINGS if s.key not in TIER_KEYS], ids=lambda s: s.key)
def test_each_field_is_typed_and_defaulted_as_the_schema_declares(setting):
    field = _fields()[setting.key]
    expected = PYTHON_TYPE[setting.type] + (" | None" if setting.default is None else "")
    assert field.type == expected
    assert getattr(Settings(), setting.key) == setting.default


def test_tier_settings_take_their_defaults_and_read_by_key():
    s = Settings.of({"tier_cap_spot": 500.0, "reserved_3y_discount": 0.5, "mfu": 0.35})
    assert s.tier_cap(TIER["spot"]) == 500.0
    assert s.tier_cap(TIER["idle"]) is None  # a cap's default: none
    assert s.discount(TIER["reserved_3y"]) == 0.5
    assert s.discount(TIER["reserved_1y"]) == 0.20  # records.py: CoreWeave's 1-year discount
    assert (s.value("tier_cap_spot"), s.value("reserved_3y_discount"), s.value("mfu")) == (500.0, 0.5, 0.35)


def test_an_unknown_key_is_refused():
    with pytest.raises(TypeError) as caught:
        Settings.of({"tier_cap_cheap": 1.0})
    assert "tier_cap_cheap" in str(caught.value)


def test_the_reader_fills_the_typed_fields(tmp_path):
    book = make_input(tmp_path / "in.xlsx", [
        {"task_id": "T1", "kind": "finetune", "model_params_b": "7B", "train_tokens": "5M", "gpu": "H100 80G"}],
        settings={"period_months": 2, "tier_cap_on_demand": 100, "max_cards": "8", "reserved_1y_discount": "30%"})
    s = read_inputs(book, today=TODAY).settings
    assert (s.period_months, s.max_cards) == (2, 8)
    assert isinstance(s.max_cards, int)
    assert s.plan_months == ("2026-07", "2026-08")
    assert s.tier_cap(TIER["on_demand"]) == 100
    assert s.discount(TIER["reserved_1y"]) == pytest.approx(0.30)
