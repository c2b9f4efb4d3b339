"""Cell values to typed values: suffix numbers (7B, 5M), percentages, months, choices."""

from __future__ import annotations

import datetime as dt
import math
import re

from .errors import Code
from .i18n import Message, canonical_value
from .schema import Column, Value

SUFFIX = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}
_NUMBER = re.compile(r"^([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[-+]?\d+)?)\s*([kmbgt%]?)$", re.IGNORECASE)
# Commas only group thousands: "1,500" and "12,345,678.5" are numbers, "1,5" and "1,0,0,0,0" are not.
_GROUPED = re.compile(r"^([-+]?)(\d{1,3}(?:,\d{3})+)(?![\d,])")
_MONTH = re.compile(r"^(\d{4})[-/.](\d{1,2})$")
# Magnitudes a cell may hold, in the column's unit: beyond them a plan's arithmetic overflows
# (1e308 tokens is infinite GPU-hours) and no real inventory goes there.
LARGEST = 1e15
SMALLEST = 1e-9


class BadValue(ValueError):
    """A cell value that does not fit its column: a problem code, and a Message saying why and how to fix it."""

    def __init__(self, code: Code, message: Message):
        super().__init__(message)
        self.code = code

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
    not_a_number = BadValue(Code.NOT_A_NUMBER, Message("not_a_number", raw=str(raw), what=what,
                                                       example=_example(column)))
    if isinstance(raw, bool):
        raise not_a_number
    if isinstance(raw, (int, float)):
        value = float(raw)
    else:
        match = _NUMBER.match(_ungrouped(str(raw).strip().replace("_", ""), raw))
        if not match or (match.group(2) == "%" and column.type != "percent"):  # 50% of a GB/s means nothing
            raise not_a_number
        value = float(match.group(1))
        suffix = match.group(2).lower()
        if suffix == "%":
            value /= 100
        elif suffix:
            value = value * SUFFIX[suffix] / column.scale
    if column.type == "percent" and not column.plain_above_one and value > 1 and math.isfinite(value) \
            and not (isinstance(raw, str) and raw.strip().endswith("%")):
        # 25 in a share: 25% or 2,500%? Never guessed (a 2,500% buffer is a silently wrong budget)
        raise BadValue(Code.OUT_OF_RANGE, Message("percent_ambiguous", shown=_show(raw), value=value,
                                                  share=value / 100))
    _check_range(value, raw, column, what)
    return int(value) if column.type == "count" else value


def _ungrouped(text: str, raw: object) -> str:
    """The text with its thousands separators removed; a comma anywhere else makes it no number."""
    if "," not in text:
        return text
    match = _GROUPED.match(text)
    if not match or "," in text[match.end():]:
        raise BadValue(Code.NOT_A_NUMBER, Message("comma_not_thousands", raw=str(raw)))
    return match.group(1) + match.group(2).replace(",", "") + text[match.end():]


def _check_range(value: float, raw: object, column: Column, what: str) -> None:
    """Finite, of a size a plan can hold, and within the column's bounds."""
    shown = _show(raw)
    if not math.isfinite(value):
        raise BadValue(Code.NOT_FINITE, Message("not_finite", raw=str(raw), what=what))
    if column.minimum is not None and value < column.minimum:  # a negative price is NEGATIVE, a zero one
        code = Code.NEGATIVE if column.minimum == 0 else Code.OUT_OF_RANGE  # NOT_POSITIVE
        raise BadValue(code, Message("below_minimum", shown=shown, what=what, lo=column.minimum))
    if column.positive and value <= 0:
        raise BadValue(Code.NOT_POSITIVE, Message("not_positive", shown=shown, what=what))
    if column.maximum is not None and value > column.maximum:
        raise BadValue(Code.OUT_OF_RANGE, Message("above_maximum", shown=shown, what=what, hi=column.maximum))
    if abs(value) > LARGEST:
        raise BadValue(Code.OUT_OF_RANGE,
                       Message("too_large", shown=shown, what=what, bound=LARGEST) if value > 0 else
                       Message("too_small", shown=shown, what=what, bound=-LARGEST))
    if 0 < abs(value) < SMALLEST:
        key = "too_close_to_zero" if column.positive else "too_close_to_zero_or_0"
        raise BadValue(Code.OUT_OF_RANGE, Message(key, shown=shown, what=what, smallest=SMALLEST))
    if column.type == "count" and value != int(value):
        raise BadValue(Code.NOT_WHOLE, Message("not_whole", shown=shown, unit=column.unit))


_FIRST_DAY = re.compile(r"(\d{4}-\d{1,2})-0?1(?:[ T]00:00(?::00)?)?")


def parse_month(raw: object) -> str:
    """A YYYY-MM month from text or a date cell."""
    if isinstance(raw, (dt.date, dt.datetime)):
        return f"{raw.year:04d}-{raw.month:02d}"
    text = str(raw).strip()
    # a date cell read as text (a Settings value): Excel makes 2027-01 typed into a cell the date 2027-01-01
    first_day = _FIRST_DAY.fullmatch(text)
    if first_day:
        text = first_day.group(1)
    match = _MONTH.match(text)
    if not match or not 1 <= int(match.group(2)) <= 12:
        raise BadValue(Code.BAD_MONTH, Message("not_a_month", raw=str(raw)))
    return f"{int(match.group(1)):04d}-{int(match.group(2)):02d}"


def normalise_choice(raw: object) -> str:
    return re.sub(r"[\s\-]+", "_", str(raw).strip().lower())


_YES_NO = {"true": "yes", "false": "no"}  # a yes/no column's TRUE or FALSE cell (a checkbox, or TRUE typed in Excel)


def parse_choice(raw: object, choices: tuple[str, ...]) -> str:
    value = normalise_choice(canonical_value(raw))
    if set(choices) == set(_YES_NO.values()):
        value = _YES_NO.get(value, value)
    if value not in choices:
        raise BadValue(Code.UNKNOWN_VALUE, Message("not_a_choice", raw=str(raw), choices=tuple(choices)))
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
        raise BadValue(Code.BAD_DATE, Message("not_a_date", raw=str(raw))) from None


SPREADSHEET_ERRORS = frozenset(("#N/A", "#REF!", "#VALUE!", "#DIV/0!", "#NAME?", "#NUM!", "#NULL!", "#SPILL!",
                                "#CALC!", "#GETTING_DATA", "#FIELD!", "#BLOCKED!", "#CONNECT!", "#BUSY!", "#UNKNOWN!"))
"""What a spreadsheet saves as the result of a formula that failed (openpyxl reads it as that text): never a value."""


def parse_cell(raw: object, column: Column) -> Value:
    """The typed value of a non-blank cell, or BadValue (a cached spreadsheet error such as #N/A is one)."""
    if isinstance(raw, str) and raw.strip().upper() in SPREADSHEET_ERRORS:
        raise BadValue(Code.FORMULA, Message("error_value", raw=raw.strip()))
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
