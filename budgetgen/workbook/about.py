"""About: what made the workbook, from which input, with which settings, and how to read it."""

from __future__ import annotations

from .. import __version__
from ..core.i18n import name as input_name
from ..core.i18n import word
from ..core.schema import SETTINGS
from ..plan.engine import Plan
from .book import Book
from .layout import SENTENCES, SHOWN_WORDS, WORD_KEYS, WORD_SHOWN, sentence_texts
from .printing import print_setup

SHEET = "About"
HOW_TO_READ = (
    "Summary: the period total, each month (GPU + extras + hidden-cost buffer), by tier, kind and cost center.",
    ("Blue cells on light yellow are inputs: prices (GPUs), assumptions (Assumptions), the chosen GPU and the "
     "task inputs (Tasks). Change them and every formula recalculates; the sheets are protected without a "
     "password so that only input cells take typing."),
    ("Black cells are formulas, green cells are links to another sheet; every formula carries the value "
     "budgetgen computed, so the file reads correctly in any viewer."),
    "Checks must read TRUE in its first row: every total ties out to its parts.",
    ("Order lists what to buy or reserve per GPU type and tier, a block and a printed page per provider; TaskList "
     "is the tasks' key columns for printing (Tasks holds every column and prints across several pages)."),
    ("Candidates shows every GPU for every task (in a large inventory the chosen one and the cheapest: "
     "candidates_per_task) with its cost and the provider behind its price; Tiers the money per price tier against "
     "the caps; "
     "BuyVsRent whether owning a card pays; Recon tabs compare the plan with the cloud bill and GPU usage."),
)


def write_about(book: Book, ws, plan: Plan) -> None:
    inputs, s, t = plan.inputs, plan.inputs.settings, book.t
    ws.set_column(0, 0, 26)
    ws.set_column(1, 1, 90)
    ws.write_string(0, 0, t("About this workbook"), book.f.title)
    rows = [("made by", f"budgetgen {__version__}"), ("input file", inputs.source_name),
            ("input SHA-256", inputs.source_sha256), ("build date", s.build_date or ""),
            ("plan", f"{plan.months[0]} {t('to')} {plan.months[-1]}, {s.currency}")]
    rows += [(f"{t('setting')} {input_name(x.key, book.lang)}",
              "" if s.value(x.key) is None else str(s.value(x.key))) for x in SETTINGS]
    rows += [("how to read", t(line)) for line in HOW_TO_READ]
    for i, (label, text) in enumerate(rows, start=2):
        ws.write_string(i, 0, t(label), book.f.bold)
        book.wrapped(ws, i, 1, text, 90)
    words = len(rows) + 3
    last = _words(book, ws, words)
    print_setup(ws, book.lang, [26, 90], last, blocks=[(0, len(rows) + 1), (words, last)])


def _words(book: Book, ws, r: int) -> int:
    """How the sheets show each enumeration value (WordKey, WordShown) and the texts of the Summary's formula
    sentences (TextAdvice0, ...); returns the last row written."""
    book.header(ws, r, ["value (formulas compare this)", "shown as"])
    for row, key in enumerate(SHOWN_WORDS, start=r + 1):
        ws.write_string(row, 0, key)
        ws.write_string(row, 1, word(key, book.lang), book.f.get("input", "text"))
    last = r + len(SHOWN_WORDS)
    book.define_range(WORD_KEYS, SHEET, r + 1, last, 0)
    book.define_range(WORD_SHOWN, SHEET, r + 1, last, 1)
    row = last + 2
    book.header(ws, row, ["name", "text of a Summary sentence"])
    for key, template in SENTENCES.items():
        texts = sentence_texts(book.t(template))
        if len(texts) != len(sentence_texts(template)):
            raise ValueError(f"the translation of {template!r} must keep its placeholders in order")
        for i, text in enumerate(texts):
            row += 1
            ws.write_string(row, 0, f"Text{key}{i}")
            ws.write_string(row, 1, text, book.f.get("input", "text"))
            book.define(f"Text{key}{i}", SHEET, row, 1)
    return row
