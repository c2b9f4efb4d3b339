"""Exchange rates: the dated rate that turns a price in its source currency into the plan currency.

A rate is `plan currency per 1 unit` of the source currency. It comes from the input's FX sheet when the user
gives one, else from the bundled reference rates: the European Central Bank's daily reference rates as the
`currencyconverter` package ships them (a maintained data set, not hand-typed), on the last day it has at or
before the build date. The workbook shows every rate used on Assumptions as a named cell, so procurement can
change it and every converted price recalculates.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import metadata

REFERENCE_SOURCE = "ECB reference rate (currencyconverter {version})"


@dataclass(frozen=True)
class Rate:
    """Plan currency per 1 unit of `currency`, the day it holds for and where it came from."""

    currency: str
    rate: float
    as_of: str  # YYYY-MM-DD
    source: str
    reference: bool = False  # the bundled reference rate, not one the input gives

    @property
    def name(self) -> str:
        """The workbook-scoped name of the rate on Assumptions: FxCNY."""
        return f"Fx{self.currency}"


@functools.cache
def _converter():
    from currency_converter import CurrencyConverter

    return CurrencyConverter(fallback_on_missing_rate=True, fallback_on_wrong_date=False)


@functools.cache
def _version() -> str:
    return metadata.version("currencyconverter")


def reference_rate(currency: str, plan_currency: str, on: dt.date) -> Rate | None:
    """The bundled reference rate for `currency` in `plan_currency` on the last day at or before `on` (the last
    day the data has when `on` is later); None when the data lacks either currency or has no day that early."""
    if currency == plan_currency:
        return Rate(currency, 1.0, on.isoformat(), "same currency")
    converter = _converter()
    if currency not in converter.currencies or plan_currency not in converter.currencies:
        return None
    first = max(converter.bounds[currency].first_date, converter.bounds[plan_currency].first_date)
    last = min(converter.bounds[currency].last_date, converter.bounds[plan_currency].last_date)
    if on < first:
        return None
    day = min(on, last)
    rate = converter.convert(1, currency, plan_currency, date=day)
    if not math.isfinite(rate) or rate <= 0:
        return None
    return Rate(currency, rate, day.isoformat(), REFERENCE_SOURCE.format(version=_version()), reference=True)


@dataclass(frozen=True)
class FxTable:
    """The rates a plan uses, by source currency; the plan currency's own rate is 1."""

    plan_currency: str
    rates: Mapping[str, Rate]

    def rate(self, currency: str) -> Rate:
        return self.rates[currency]

    def convert(self, amount: float | None, currency: str) -> float | None:
        """`amount` in `currency` as plan currency; unknown stays unknown (None)."""
        return None if amount is None else amount * self.rates[currency].rate


def fx_table(plan_currency: str, currencies: Iterable[str], typed: Mapping[str, Rate], on: dt.date) -> \
        tuple[FxTable, list[str]]:
    """The rates for `currencies` (typed ones first, else the reference), and the currencies no rate is known for."""
    rates = {plan_currency: Rate(plan_currency, 1.0, on.isoformat(), "plan currency")}
    missing = []
    for currency in dict.fromkeys(currencies):
        if currency in rates:
            continue
        rate = typed.get(currency) or reference_rate(currency, plan_currency, on)
        if rate is None:
            missing.append(currency)
        else:
            rates[currency] = rate
    rates.update({c: r for c, r in typed.items() if c not in rates})
    return FxTable(plan_currency, rates), missing


def bill_rate(currency: str, month: str, plan_currency: str, fx: FxTable | None) -> Rate | None:
    """The rate that converts a bill's lines of `month` (YYYY-MM) in `currency` into the plan currency: the rate the
    input gives (its FX sheet, or catalog_fx for CNY), else the bundled reference rate of the month's last day,
    provided the reference has a day in that month. None when neither (a code that is no currency included)."""
    typed = fx.rates.get(currency) if fx is not None else None
    if typed is not None and not typed.reference:
        return typed
    try:
        first = dt.date.fromisoformat(f"{month}-01")
    except ValueError:
        return None
    last = (first + dt.timedelta(days=31)).replace(day=1) - dt.timedelta(days=1)
    rate = reference_rate(currency, plan_currency, last)
    return rate if rate is not None and rate.as_of >= first.isoformat() else None


def money_default(value: float, currency: str, plan_currency: str, on: dt.date) -> float | None:
    """A money-sized default declared in `currency`, in the plan currency at the reference rate, to three
    significant digits (a default is a round figure, not a quote); None when no rate is known."""
    rate = reference_rate(currency, plan_currency, on)
    if rate is None:
        return None
    amount = value * rate.rate
    return float(f"{amount:.3g}") if amount else 0.0


def plan_rates(inputs) -> tuple[Rate, ...]:
    """The rates the workbook shows, the plan currency's first: the inputs' FX table, and for GPUs given without
    one (inputs built in code) the rate each GPU carries."""
    s = inputs.settings
    rates = {s.currency: Rate(s.currency, 1.0, s.build_date or "", "plan currency")}
    if inputs.fx is not None:
        rates.update({c: r for c, r in inputs.fx.rates.items() if c != s.currency})
    for g in inputs.gpus:
        if g.currency and g.currency not in rates:
            rates[g.currency] = Rate(g.currency, g.fx, s.build_date or "", "as the GPU was given")
    return tuple(rates.values())
