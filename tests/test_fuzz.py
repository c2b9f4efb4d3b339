"""Fuzzing `budgetgen build`: any cell of a valid input made wrong ends in a workbook or in `Error:` lines."""

from __future__ import annotations

import datetime as dt
import hashlib
import operator
import re
import zipfile
from pathlib import Path

import openpyxl
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openpyxl.utils import get_column_letter
from test_bad_input import errors_in, shown

from budgetgen.cli import main

SHEETS = {
    "Settings": [
        ["setting", "value"],
        ["period_start", "2026-07"],
        ["currency", "CNY"],
        ["hidden_cost_buffer", 0.25],
        ["mfu", "40%"],
        ["period_months", 3],
    ],
    "Tasks": [
        ["task_id", "task", "kind", "model_params_b", "method", "train_tokens", "epochs", "requests_per_day",
         "batch_requests", "tokens_per_request", "gpu", "tier", "start_month", "end_month", "cost_center", "owner"],
        ["F1", "LoRA refresh", "finetune", 7, "lora", "5M", 3, None, None, None, None, "on_demand", "2026-07",
         "2026-09", "ml", "alice"],
        ["P1", "small pretrain", "pretrain", 1, None, "1B", None, None, None, None, None, "spot", None, None,
         "research", None],
        ["S1", "chat service", "inference", "7B", "int4", None, None, 10_000, None, 500, "RTX 4090", "monthly", None,
         None, "kb", "bob"],
        ["B1", "nightly summaries", "batch", 13, "int8", None, None, None, 200_000, 300, None, "idle", "2026-08",
         None, "kb", None],
    ],
    "Extras": [
        ["item", "category", "monthly_cost", "start_month", "end_month"],
        ["object storage", "storage", 400, None, None],
        ["egress", "egress", 600, "2026-08", "2026-09"],
    ],
}
PAYLOADS = ('=HYPERLINK("http://x.invalid","x")', "=cmd|' /C calc'!A0", "+1+1", "@SUM(1)", "-2+3",
            "http://x.invalid/a")
ODD_TEXT = ("NaN", "nan", "inf", "-Infinity", "1e309", "1e308", "-0", "7B", "5M", "2T", "40%", "1,5", "0x10",
            "2026-07", "2026-13", "July", "TRUE", " ", "", "lora", "spot", "H100 80G")
INJECTED = re.compile(rb"<f>[^<]*(?:HYPERLINK|cmd\||x\.invalid)")

EXTREMES = (1e308, -1e308, 1e-308, 5e-324, 1e300, 1e15, 1e16, 10**20, -1.0, 0, 0.5)

values = st.one_of(
    st.sampled_from(PAYLOADS + ODD_TEXT),
    st.sampled_from(EXTREMES),
    st.sampled_from(EXTREMES),
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=False, allow_infinity=False),
    st.dates(min_value=dt.date(1900, 3, 1)),
    st.datetimes(min_value=dt.datetime(1900, 3, 1)),
    st.times(),
    st.text(st.characters(exclude_categories=("Cs", "Cc", "Cn")), max_size=20),
    st.builds(operator.mul, st.sampled_from(["y", "\N{SLIGHTLY SMILING FACE}"]), st.sampled_from([30_000, 40_000])),
)
# (sheet, row, column): mostly a cell of a table's body; sometimes a header or one past the table.
BODY = [(name, r, c) for name, rows in SHEETS.items() for r in range(1, len(rows)) for c in range(len(rows[0]))]
places = st.one_of(st.sampled_from(BODY), st.sampled_from(BODY),
                   st.tuples(st.sampled_from(list(SHEETS)), st.integers(0, 10), st.integers(0, 20)))
# Up to three cells changed, each to a value, a text starting with = kept as a formula or typed as text.
mutations = st.lists(st.tuples(places, values, st.booleans()), min_size=1, max_size=3)


def write_input(path: Path, edits: list[tuple]) -> Path:
    """The valid input with `edits` applied; a text starting with = is a formula unless typed as text."""
    wb = openpyxl.Workbook()
    wb.remove(wb.active)
    for name, rows in SHEETS.items():
        ws = wb.create_sheet(name)
        for row in rows:
            ws.append(row)
    for (name, row, col), value, typed_as_text in edits:
        rows = SHEETS[name]
        cell = wb[name].cell(row % (len(rows) + 1) + 1, col % (len(rows[0]) + 1) + 1, value)
        if typed_as_text and cell.data_type == "f":
            cell.data_type = "s"
    wb.save(path)
    return path


@settings(max_examples=40, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(edits=mutations)
def test_build_ends_in_a_workbook_or_in_errors(tmp_path_factory, edits):
    folder = tmp_path_factory.mktemp("fuzz")
    book = write_input(folder / "q3.xlsx", edits)
    before = hashlib.sha256(book.read_bytes()).hexdigest()
    out = folder / "outputs" / "budget.xlsx"
    result = CliRunner().invoke(main, ["build", str(book), "-o", str(out)], catch_exceptions=True)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    assert "Traceback" not in result.output
    assert hashlib.sha256(book.read_bytes()).hexdigest() == before
    if result.exit_code == 0:
        assert result.stdout.startswith(f"Wrote {out}\n")
        with zipfile.ZipFile(out) as z:
            for part in z.namelist():
                data = z.read(part)
                assert not INJECTED.search(data) and b"<hyperlink" not in data, part
        return
    assert result.exit_code == 1, result.output
    errors_in(result.output)
    assert not out.parent.exists() or list(out.parent.iterdir()) == []


NUMBER_CELLS = [(name, r, c) for name, rows in SHEETS.items() for r in range(1, len(rows))
                for c, value in enumerate(rows[r]) if isinstance(value, (int, float)) or str(value)[-1:] in "MB%"]


@pytest.mark.parametrize("value", [1e308, -1e308, 1e-308, 10**20])
def test_extreme_number_in_any_number_cell_is_refused_at_that_cell(tmp_path, value):
    """Each number cell of the valid input in turn, the rest left valid, so nothing masks an overflow."""
    for place in NUMBER_CELLS:
        book = write_input(tmp_path / "q3.xlsx", [(place, value, False)])
        result = CliRunner().invoke(main, ["build", str(book), "-o", str(tmp_path / "budget.xlsx")])
        name, row, col = place
        assert isinstance(result.exception, SystemExit) and result.exit_code == 1, (place, result.exc_info)
        assert shown(result.output)[0].startswith(f"Error: {name}!{get_column_letter(col + 1)}{row + 1} "), place
        assert not (tmp_path / "budget.xlsx").exists()
