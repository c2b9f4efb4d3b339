"""Cell values to typed values: suffix numbers (7B, 5M), percentages, months, choices."""

from __future__ import annotations

import datetime as dt
import math
import re

from .i18n import canonical_value
from .schema import Column

SUFFIX = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}
_NUMBER = re.compile(r"^([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[-+]?\d+)?)\s*([kmbgt%]?)$", re.IGNORECASE)
_MONTH = re.compile(r"^(\d{4})[-/.](\d{1,2})$")
# Magnitudes a cell may hold, in the column's unit: beyond them a plan's arithmetic overflows
# (1e308 tokens is infinite GPU-hours) and no real inventory goes there.
LARGEST = 1e15
SMALLEST = 1e-9


class BadValue(ValueError):
    """A cell value that does not fit its column; the text says why and how to fix it."""


def text_length(text: str) -> int:
    """Length as Excel counts it, in UTF-16 code units (an emoji counts two)."""
    return len(text.encode("utf-16-le", errors="surrogatepass")) // 2


def is_blank(raw: object) -> bool:
    return raw is None or (isinstance(raw, str) and not raw.strip())


def _example(column: Column) -> str:
    if column.scale == 1e9:
        return "e.g. 7 or 7B"
    if column.type == "percent":
        return "e.g. 40% or 0.4"
    return "e.g. 1500 or 1.5k"


def parse_number(raw: object, column: Column) -> float:
    """A number typed as a number or as text with a K/M/B/G/T suffix, in the column's unit."""
    if isinstance(raw, bool):
        raise BadValue(f'"{raw}" is not a number ({column.unit or column.help}, {_example(column)})')
    if isinstance(raw, (int, float)):
        value = float(raw)
    else:
        text = str(raw).strip().replace(",", "").replace("_", "")
        match = _NUMBER.match(text)
        if not match:
            raise BadValue(f'"{raw}" is not a number ({column.unit or column.help}, {_example(column)})')
        value = float(match.group(1))
        suffix = match.group(2).lower()
        if suffix == "%":
            value /= 100
        elif suffix:
            value = value * SUFFIX[suffix] / column.scale
    if not math.isfinite(value):
        raise BadValue(f'"{raw}" is not a finite number ({column.unit or column.help})')
    if column.positive and value <= 0:
        raise BadValue(f"{_show(raw)} must be greater than zero ({column.unit or column.help})")
    if abs(value) > LARGEST:
        bound = f"too large ({column.unit or column.help}): at most {LARGEST:g}" if value > 0 else \
            f"too small ({column.unit or column.help}): at least {-LARGEST:g}"
        raise BadValue(f"{_show(raw)} is {bound}")
    if 0 < abs(value) < SMALLEST:
        zero = "" if column.positive else "0 or "
        raise BadValue(f"{_show(raw)} is too close to zero ({column.unit or column.help}): "
                       f"write {zero}a number of {SMALLEST:g} or more")
    if column.type == "count" and value != int(value):
        raise BadValue(f"{_show(raw)} must be a whole number ({column.unit})")
    return int(value) if column.type == "count" else value


def parse_month(raw: object) -> str:
    """A YYYY-MM month from text or a date cell."""
    if isinstance(raw, (dt.date, dt.datetime)):
        return f"{raw.year:04d}-{raw.month:02d}"
    match = _MONTH.match(str(raw).strip())
    if not match or not 1 <= int(match.group(2)) <= 12:
        raise BadValue(f'"{raw}" is not a month (write YYYY-MM, e.g. 2026-07)')
    return f"{int(match.group(1)):04d}-{int(match.group(2)):02d}"


def normalise_choice(raw: object) -> str:
    return re.sub(r"[\s\-]+", "_", str(raw).strip().lower())


def parse_choice(raw: object, choices: tuple[str, ...]) -> str:
    value = normalise_choice(canonical_value(raw))
    if value not in choices:
        raise BadValue(f'"{raw}" is not one of {", ".join(choices)}')
    return value


def parse_text(raw: object) -> str:
    if isinstance(raw, float) and raw.is_integer():
        return str(int(raw))
    if isinstance(raw, dt.datetime):
        return raw.date().isoformat() if raw.time() == dt.time() else raw.isoformat(sep=" ")
    return str(raw).strip()


def parse_date(raw: object) -> str:
    """A YYYY-MM-DD date from text or a date cell."""
    if isinstance(raw, (dt.date, dt.datetime)):
        return f"{raw.year:04d}-{raw.month:02d}-{raw.day:02d}"
    try:
        return dt.date.fromisoformat(str(raw).strip()).isoformat()
    except ValueError:
        raise BadValue(f'"{raw}" is not a date (write YYYY-MM-DD, e.g. 2026-07-01)') from None


def parse_cell(raw: object, column: Column) -> object:
    """The typed value of a non-blank cell, or BadValue."""
    if column.type in ("number", "count", "percent"):
        return parse_number(raw, column)
    if column.type == "date":
        return parse_date(raw)
    if column.type == "month":
        return parse_month(raw)
    if column.type == "choice":
        return parse_choice(raw, column.choices)
    return parse_text(raw)


def _show(raw: object) -> str:
    return f'"{raw}"' if isinstance(raw, str) else f"{raw:g}" if isinstance(raw, float) else str(raw)


def add_months(month: str, n: int) -> str:
    """The month n months after YYYY-MM."""
    year, mon = int(month[:4]), int(month[5:7])
    index = year * 12 + mon - 1 + n
    return f"{index // 12:04d}-{index % 12 + 1:02d}"
