"""Cell values to typed values: suffix numbers (7B, 5M), percentages, months, choices."""

from __future__ import annotations

import datetime as dt
import math
import re

from .i18n import Message, canonical_value
from .schema import Column

SUFFIX = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}
_NUMBER = re.compile(r"^([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[-+]?\d+)?)\s*([kmbgt%]?)$", re.IGNORECASE)
_MONTH = re.compile(r"^(\d{4})[-/.](\d{1,2})$")
# Magnitudes a cell may hold, in the column's unit: beyond them a plan's arithmetic overflows
# (1e308 tokens is infinite GPU-hours) and no real inventory goes there.
LARGEST = 1e15
SMALLEST = 1e-9


class BadValue(ValueError):
    """A cell value that does not fit its column; the text (a Message, args[0]) says why and how to fix it."""

    @property
    def message(self) -> Message:
        return self.args[0]


def text_length(text: str) -> int:
    """Length as Excel counts it, in UTF-16 code units (an emoji counts two)."""
    return len(text.encode("utf-16-le", errors="surrogatepass")) // 2


def is_blank(raw: object) -> bool:
    return raw is None or (isinstance(raw, str) and not raw.strip())


def _example(column: Column) -> Message:
    if column.scale == 1e9:
        return Message("example_billions")
    if column.type == "percent":
        return Message("example_percent")
    return Message("example_number")


def parse_number(raw: object, column: Column) -> float:
    """A number typed as a number or as text with a K/M/B/G/T suffix, in the column's unit."""
    what = column.unit or column.help
    if isinstance(raw, bool):
        raise BadValue(Message("not_a_number", raw=str(raw), what=what, example=_example(column)))
    if isinstance(raw, (int, float)):
        value = float(raw)
    else:
        text = str(raw).strip().replace(",", "").replace("_", "")
        match = _NUMBER.match(text)
        if not match:
            raise BadValue(Message("not_a_number", raw=str(raw), what=what, example=_example(column)))
        value = float(match.group(1))
        suffix = match.group(2).lower()
        if suffix == "%":
            value /= 100
        elif suffix:
            value = value * SUFFIX[suffix] / column.scale
    if not math.isfinite(value):
        raise BadValue(Message("not_finite", raw=str(raw), what=what))
    if column.positive and value <= 0:
        raise BadValue(Message("not_positive", shown=_show(raw), what=what))
    if abs(value) > LARGEST:
        raise BadValue(Message("too_large", shown=_show(raw), what=what, bound=LARGEST) if value > 0 else
                       Message("too_small", shown=_show(raw), what=what, bound=-LARGEST))
    if 0 < abs(value) < SMALLEST:
        key = "too_close_to_zero" if column.positive else "too_close_to_zero_or_0"
        raise BadValue(Message(key, shown=_show(raw), what=what, smallest=SMALLEST))
    if column.type == "count" and value != int(value):
        raise BadValue(Message("not_whole", shown=_show(raw), unit=column.unit))
    return int(value) if column.type == "count" else value


def parse_month(raw: object) -> str:
    """A YYYY-MM month from text or a date cell."""
    if isinstance(raw, (dt.date, dt.datetime)):
        return f"{raw.year:04d}-{raw.month:02d}"
    match = _MONTH.match(str(raw).strip())
    if not match or not 1 <= int(match.group(2)) <= 12:
        raise BadValue(Message("not_a_month", raw=str(raw)))
    return f"{int(match.group(1)):04d}-{int(match.group(2)):02d}"


def normalise_choice(raw: object) -> str:
    return re.sub(r"[\s\-]+", "_", str(raw).strip().lower())


def parse_choice(raw: object, choices: tuple[str, ...]) -> str:
    value = normalise_choice(canonical_value(raw))
    if value not in choices:
        raise BadValue(Message("not_a_choice", raw=str(raw), choices=tuple(choices)))
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
        raise BadValue(Message("not_a_date", raw=str(raw))) from None


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
