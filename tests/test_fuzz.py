"""Fuzzing `budgetgen build`: any cell of a valid input made wrong ends in a workbook or in `Error:` lines."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import operator
import re
import zipfile
from pathlib import Path

import openpyxl
import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, event, given, settings
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
@pytest.mark.slow
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


# ------------------------------------------------------------------ GPUs: right numbers, or errors at the right cells

GPU_ROW = {"gpu": "Fuzz", "vram_gb": 48, "bandwidth_gbs": 900, "tflops": 200, "scaling": 0.5,
           "on_demand_per_hour": 10, "idle_per_hour": 4, "purchase_price": 30_000, "power_w": 400}
GPU_TASKS = [
    ["task_id", "kind", "model_params_b", "method", "train_tokens", "batch_requests", "tokens_per_request",
     "tokens_per_sec", "runs_per_month", "gpu", "cards", "tier"],
    ["B1", "batch", 13, "int8", None, 200_000, 300, 500, 30, "Fuzz", None, "idle"],
    ["F1", "finetune", 1, "full", "1B", None, None, None, 1, "Fuzz", 2, "on_demand"],
]
TASK_CELL = {("B1", "gpu"): "Tasks!J2", ("B1", "tier"): "Tasks!L2", ("F1", "cards"): "Tasks!K3",
             ("F1", "tier"): "Tasks!L3", ("F1", "gpu"): "Tasks!J3"}
# Texts and what the input contract makes of them (None: refused).
GPU_TEXTS = {"1,500": 1500, "12,345": 12_345, "1,5": None, "1,0,0,0": None, "1e309": None, "inf": None, "nan": None,
             "2k": 2000, "-0": 0.0, "0.5": 0.5, "50%": 0.5, "-100%": -1.0, "seven": None, "": "blank"}
gpu_values = st.one_of(st.sampled_from(list(GPU_TEXTS)), st.none(),
                       st.sampled_from((0, -1, 1e-12, 1e-9, 0.25, 1, 2, 8, 1e15, 1e16, -1e308)),
                       st.floats(min_value=-1e3, max_value=1e6, allow_nan=False),
                       st.integers(min_value=-10, max_value=100_000))
gpu_edits = st.dictionaries(st.sampled_from([k for k in GPU_ROW if k != "gpu"]), gpu_values, min_size=1, max_size=3)
SPECS = ("vram_gb", "bandwidth_gbs", "tflops")
PRICES = ("on_demand_per_hour", "idle_per_hour", "purchase_price")


def contract_value(column: str, raw):
    """What the input contract makes of a GPUs cell: a number, "blank", or None when it must be refused."""
    if raw is None or raw == "":
        return "blank"
    if isinstance(raw, str):
        value = GPU_TEXTS[raw]
        if value is None or (raw.endswith("%") and column != "scaling"):
            return None
    else:
        value = float(raw)
    if not math.isfinite(value) or abs(value) > 1e15 or 0 < abs(value) < 1e-9:
        return None
    if column in SPECS or column in PRICES:  # a price of 0 is no offer: blank it (issue 34)
        return value if value > 0 else None
    if column == "scaling":
        return value if 0 <= value <= 1 else None
    return value if value >= 0 else None


def ceil15(x: float) -> int:
    """CEILING(x, 1) as spreadsheets compute it: x rounded to 15 significant digits first."""
    return math.ceil(float(f"{x:.15g}"))


def expected_outcome(gpu: dict) -> tuple[set[str], dict]:
    """Independently of the engine: the cells an error must name, or (no errors) each task's monthly cost."""
    values = {c: contract_value(c, raw) for c, raw in gpu.items() if c != "gpu"}
    column = {c: get_column_letter(i + 1) for i, c in enumerate(GPU_ROW)}
    bad = {f"GPUs!{column[c]}2" for c, v in values.items() if v is None or (v == "blank" and c in SPECS)}
    if bad:
        return bad | ({TASK_CELL[("B1", "gpu")], TASK_CELL[("F1", "gpu")]} if any(
            values[c] in (None, "blank") for c in SPECS) else set()), {}
    price = {c: None if values[c] == "blank" else values[c] for c in values}
    scaling = 0.5 if values["scaling"] == "blank" else values["scaling"]
    errors, costs = set(), {}
    # B1: 13B int8 serving holds 13 x 1 x 1.1 = 14.3 GB of weights and runtime and must fit 8 sequences of
    # 1,000 default prompt + 300 output tokens at 40,000 x sqrt(13) bytes a token: a replica is the fewest of 1, 2,
    # 4, 8 cards that do. 200,000 x 300 tokens at 500 tokens/s are 33.3 h of one replica; 30 runs a month leave
    # 730 / 30 - 0.5 h a run, so 2 replicas each paying the 0.5 h setup. Idle tier.
    fits = [n for n in (1, 2, 4, 8)
            if math.floor((n * values["vram_gb"] * 0.9 - 14.3) * 1e9 / (40_000 * math.sqrt(13) * 1300)) >= 8]
    if not fits:
        errors.add(TASK_CELL[("B1", "gpu")])
    elif price["idle_per_hour"] is None:
        errors.add(TASK_CELL[("B1", "tier")])
    else:
        hours = 200_000 * 300 / (500 * 3600)
        replicas = math.ceil(hours / (730 / 30 - 0.5))
        costs["B1"] = (hours + 0.5 * replicas) * fits[0] * 30 * price["idle_per_hour"]
    # F1: 1B full training needs 16 + 0.6 = 16.6 GB on the 2 cards given; 6 x 1e9 x 1e9 FLOPs at 40% MFU.
    if ceil15(16.6 / (values["vram_gb"] * 0.9)) > 2:
        errors.add(TASK_CELL[("F1", "cards")])
    elif price["on_demand_per_hour"] is None:
        errors.add(TASK_CELL[("F1", "tier")])
    else:
        hours = 6 * 1e9 * 1e9 / (values["tflops"] * 1e12 * 0.4 * (1 + scaling) * 3600)
        costs["F1"] = (hours * 1.3 * 1.3 + 0.5) * 2 * price["on_demand_per_hour"]
    return errors, costs


def build_sheets(folder: Path, sheets: dict[str, list[list]]) -> tuple[Result, Path, Path]:
    """`budgetgen build` of an input holding `sheets` (name: rows), to a workbook and JSON in folder/outputs."""
    wb = openpyxl.Workbook()
    wb.remove(wb.active)
    for name, rows in sheets.items():
        ws = wb.create_sheet(name)
        for row in rows:
            ws.append(row)
    wb.save(folder / "q3.xlsx")
    out, js = folder / "outputs" / "budget.xlsx", folder / "outputs" / "budget.json"
    return CliRunner().invoke(main, ["build", str(folder / "q3.xlsx"), "-o", str(out), "--json", str(js)]), out, js


@pytest.mark.slow
@settings(max_examples=30, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(edits=gpu_edits)
def test_gpu_values_give_the_right_numbers_or_errors_at_their_cells(tmp_path_factory, edits):
    gpu = {**GPU_ROW, **edits}
    result, out, js = build_sheets(tmp_path_factory.mktemp("fuzz-gpus"), {
        "Settings": SHEETS["Settings"][:2], "Tasks": GPU_TASKS, "GPUs": [list(gpu), list(gpu.values())]})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    errors, costs = expected_outcome(gpu)
    event("refused" if errors else "built")
    if errors:
        assert result.exit_code == 1, (edits, result.output)
        assert {line.split()[1] for line in errors_in(result.output)} == errors, edits
        assert not out.parent.exists() or list(out.parent.iterdir()) == []
        return
    assert result.exit_code == 0, (edits, result.output)
    plan = json.loads(js.read_text())
    assert {t["task_id"]: t["monthly_cost"] for t in plan["tasks"]} == pytest.approx(costs, rel=1e-9), edits
    purchase = contract_value("purchase_price", gpu["purchase_price"])
    if purchase != "blank":  # §3.7: price over 3 years plus 2,000 a year of upkeep, a day
        assert plan["buy_vs_rent"]["Fuzz"]["daily_fixed"] == pytest.approx(purchase / (3 * 365) + 2000 / 365)
