"""Exceptions and the problems they carry: every message names sheet, cell, value and fix."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from .i18n import Message


class Code(str, Enum):
    """Stable problem codes, so tests assert codes and places rather than prose."""

    NOT_A_FILE = "not_a_file"
    WRONG_FORMAT = "wrong_format"
    ENCRYPTED = "encrypted"
    TOO_LARGE = "too_large"
    UNREADABLE = "unreadable"
    MISSING_SHEET = "missing_sheet"
    MISSING_COLUMN = "missing_column"
    DUPLICATE_SHEET = "duplicate_sheet"
    NOT_A_NUMBER = "not_a_number"
    NOT_FINITE = "not_finite"
    NEGATIVE = "negative"
    NOT_POSITIVE = "not_positive"
    NOT_WHOLE = "not_whole"
    OUT_OF_RANGE = "out_of_range"
    FORMULA_WITHOUT_VALUE = "formula_without_value"
    UNKNOWN_VALUE = "unknown_value"
    DUPLICATE_COLUMN = "duplicate_column"
    DUPLICATE_TASK = "duplicate_task"
    DUPLICATE_SETTING = "duplicate_setting"
    DUPLICATE_GPU = "duplicate_gpu"
    REQUIRED = "required"
    BAD_MONTH = "bad_month"
    BAD_DATE = "bad_date"
    MONTH_OUTSIDE_PLAN = "month_outside_plan"
    DOES_NOT_FIT = "does_not_fit"
    DEADLINE_WITHIN_SETUP = "deadline_within_setup"
    NO_PRICE = "no_price"
    TOO_MANY_CARDS = "too_many_cards"
    FORMULA = "formula"
    CURRENCY = "currency"
    OUTPUT = "output"
    TOO_BIG_FOR_EXCEL = "too_big_for_excel"
    DUPLICATE_FILE = "duplicate_file"


def printable(text: object) -> str:
    """Text that came from a file as the terminal shows it: control characters (escape sequences, newlines), format
    characters (bidi overrides, zero-width) and separators other than the space as Python escapes (`\\x1b`,
    `\\n`, `\\u202e`), so no value can move the cursor, reorder a line or forge one. Every printed message that
    quotes a file passes through here."""
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in str(text))


def _cell_key(cell: str) -> tuple[int, int]:
    """Sort key for an A1 reference: row first, then column (so a row's problems read left to right)."""
    m = re.fullmatch(r"(?:row )?([A-Z]*)(\d*)", cell or "")  # a sheet's B7 or a file's "row 7"
    if not m:
        return (0, 0)
    letters, digits = m.groups()
    col = 0
    for ch in letters:
        col = col * 26 + ord(ch) - 64
    return (int(digits or 0), col)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the input, at one place.

    `message` is English text; the reader's and engine's are `i18n.Message`s, which `render` shows in another
    language (the others, e.g. from safefile, stay English). `str()` is always English.
    """

    code: Code
    sheet: str
    cell: str
    message: str

    @property
    def place(self) -> str:
        if self.sheet and self.cell:
            return f"{self.sheet}!{self.cell}"
        return self.sheet or ""

    def __str__(self) -> str:
        return f"{self.place} {self.message}".strip()

    def render(self, lang: str) -> str:
        """The problem in `lang`: sheet!cell stays ASCII, the message is translated when it is a Message."""
        message = self.message.render(lang) if isinstance(self.message, Message) else self.message
        return f"{self.place} {message}".strip()

    def sort_key(self) -> tuple:
        return (self.sheet, _cell_key(self.cell), self.message)


class BudgetgenError(Exception):
    """Base class of every error budgetgen reports to the user."""


class InputError(BudgetgenError):
    """The input has one or more problems; all of them are listed."""

    def __init__(self, problems: list[Problem]):
        self.problems = sorted(problems, key=Problem.sort_key)
        super().__init__("\n".join(str(p) for p in self.problems))


class OutputError(BudgetgenError):
    """The output could not be written where asked."""


class CellWriteError(BudgetgenError):
    """xlsxwriter refused a cell, or would cut or drop it: an internal error of budgetgen's writer."""

    def __init__(self, sheet: str, cell: str, method: str, code: int, reason: str):
        self.sheet, self.cell, self.method, self.code = sheet, cell, method, code
        super().__init__(f"{sheet}!{cell} was not written: {reason} (xlsxwriter's {method} returned {code}); "
                         "this is an internal error of budgetgen's writer, please report it")
