"""Property tests of bills in each shape a user hands over: CSV, Parquet, an xlsx file and the input's Bills sheet.

Lines are drawn at random (GPU, CPU and storage lines, credits, repeats of an earlier bill's lines, date cells
where the shape has them, at most one line made wrong or one fault of the bill's shape: a column twice, a hidden
copy sheet, a bill of a header alone), summed by DuckDB through `sum_bills`, and compared with
an oracle worked out here: per month, Σ BilledCost of the valid lines, a line already in an earlier bill counted
once, split into GPU and other by the line's description and service category. A line made wrong must instead
be an error at its file and row (or cell), and nothing else.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict

import duckdb
import openpyxl
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from openpyxl.utils import get_column_letter
from test_bills import CATALOG

from budgetgen.core.errors import Code, InputError
from budgetgen.recon import DEFAULT_GPU_LINE_PATTERN
from budgetgen.recon.bill_sums import BillSource, sum_bills
from budgetgen.recon.table import sheet_frame

pytestmark = [pytest.mark.filterwarnings("error"), pytest.mark.slow]

HEAD = ["ChargePeriodStart", "BilledCost", "BillingCurrency", "ResourceId", "ServiceCategory", "ChargeDescription",
        "Tags"]
# kind: (ServiceCategory, ChargeDescription, GPU or not) — p5 is an AWS GPU family, m5 is not; storage that says
# GPU is storage.
KINDS = {"gpu": ("Compute", "p5.48xlarge On Demand", True), "cpu": ("Compute", "m5.large On Demand", False),
         "storage": ("Storage", "GPU checkpoint storage", False)}
# What a wrong line holds, the code of its problem and the column it is placed at.
WRONG = {"cost": ("abc", Code.NOT_A_NUMBER, "BilledCost"), "start": ("epoch", Code.BAD_MONTH, "ChargePeriodStart"),
         "tags": ("env=prod", Code.WRONG_FORMAT, "Tags")}

line = st.tuples(
    st.sampled_from(sorted(KINDS)),
    st.integers(7, 9),  # month
    st.integers(1, 28),  # day
    st.integers(-50_000, 500_000).map(lambda cents: cents / 100),  # BilledCost, credits negative
    st.sampled_from(["i-1", "i-2", "vol-1"]),
    st.sampled_from(["{}", '{"task_id": "T1"}', '{"user:task_id": "S1", "team": "ml"}']),
)


@st.composite
def bills(draw, shape: str):
    """Two bills' lines (the second may repeat lines of the first) and at most one wrong line: (bill, index, what)."""
    first = draw(st.lists(line, min_size=1, max_size=12))
    repeated = draw(st.lists(st.sampled_from(first), max_size=3))
    second = draw(st.lists(line, max_size=6)) + repeated
    assume(second != first)  # two bills of the same bytes are refused as one bill given twice
    kinds = sorted(WRONG) if shape in ("csv", "xlsx", "sheet") else ["start", "tags"]  # Parquet's cost is DOUBLE
    wrong = draw(st.none() | st.tuples(st.integers(0, 1), st.integers(0, 100), st.sampled_from(kinds)))
    if wrong is not None:
        lines = (first, second)[wrong[0]]
        wrong = (wrong[0], wrong[1] % len(lines), wrong[2]) if lines else None
    fault = draw(st.none() | st.sampled_from(FAULTS[shape])) if wrong is None else None
    return [first, second], wrong, fault


# Faults of a bill's shape, drawn instead of a wrong line: an extra bill of a header alone (a warning: the sums
# stand), the first bill's BilledCost column written twice, a hidden copy of its sheet (errors at the bill).
FAULTS = {"csv": ["empty", "twice"], "parquet": ["empty", "twice"], "xlsx": ["empty", "twice", "hidden"],
          "sheet": ["twice"]}
FAULT_PROBLEM = {"twice": Code.DUPLICATE_COLUMN, "hidden": Code.WRONG_FORMAT}


def oracle(sources: list[list[tuple]]) -> dict[str, tuple[float, float]]:
    """{month: (Σ GPU lines, Σ all lines)} of the lines not already in an earlier bill."""
    seen: set = set()
    sums: dict[str, list[float]] = defaultdict(list)
    gpu: dict[str, list[float]] = defaultdict(list)
    for lines in sources:
        keys = set()
        for kind, month, day, cost, resource, _tags in lines:
            key = (resource, month, day, KINDS[kind][1], cost)
            keys.add(key)
            if key in seen:
                continue
            name = f"2026-{month:02d}"
            sums[name].append(cost)
            gpu[name].append(cost if KINDS[kind][2] else 0.0)
        seen |= keys
    return {m: (math.fsum(gpu[m]), math.fsum(sums[m])) for m in sums}


def cells(kind, month, day, cost, resource, tags, shape: str) -> list:
    """A line's values as the shape holds them: texts in CSV, typed values elsewhere, date cells in sheets."""
    service, description, _ = KINDS[kind]
    start = dt.datetime(2026, month, day, 10) if shape in ("xlsx", "sheet") else f"2026-{month:02d}-{day:02d}T10:00:00Z"
    return [start, cost if shape != "csv" else f"{cost:.2f}", "USD", resource, service, description, tags]


def spoiled(values: list, what: str) -> list:
    bad, _, column = WRONG[what]
    values = list(values)
    values[HEAD.index(column)] = bad
    return values


def write(folder, shape: str, index: int, rows: list[list], fault: str | None = None):
    """One bill in `shape`: a path, or the Bills sheet's frame as the reader hands it over; `fault` "twice" writes
    BilledCost a second time (with other values), "hidden" adds a hidden copy of the sheet."""
    head = [*HEAD, "BilledCost"] if fault == "twice" else HEAD
    rows = [[*r, 1.0 if shape != "csv" else "1.00"] for r in rows] if fault == "twice" else rows
    if shape == "sheet":
        return sheet_frame([(1, tuple(head)), *((n + 2, tuple(r)) for n, r in enumerate(rows))])
    path = folder / f"bill{index}.{shape}"
    if shape == "csv":
        path.write_text("\n".join([",".join(head), *(",".join(_quoted(v) for v in r) for r in rows)]) + "\n",
                        encoding="utf-8")
    elif shape == "xlsx":
        wb = openpyxl.Workbook()
        for r in (head, *rows):
            wb.active.append(r)
        if fault == "hidden":
            copy = wb.copy_worksheet(wb.active)
            copy.sheet_state = "hidden"
        wb.save(path)
    else:
        columns = ", ".join(f'"{h}" {"DOUBLE" if h == "BilledCost" else "VARCHAR"}' for h in HEAD)
        con = duckdb.connect()
        con.execute(f"CREATE TABLE b ({columns})")
        if rows:
            con.executemany("INSERT INTO b VALUES (?, ?, ?, ?, ?, ?, ?)", [r[:len(HEAD)] for r in rows])
        twice = ", BilledCost + 1 AS billed_cost" if fault == "twice" else ""  # one column under two of its names
        con.execute(f"COPY (SELECT *{twice} FROM b) TO '{path}' (FORMAT parquet)")
        con.close()
    return path


def _quoted(value) -> str:
    text = str(value)
    return '"' + text.replace('"', '""') + '"' if any(c in text for c in ',"\n') else text


def place(shape: str, index: int, row: int, column: str) -> tuple[str, str]:
    """Where the problem of line `row` (0-based) of bill `index` is named."""
    if shape == "sheet":
        return ("Bills", f"{get_column_letter(HEAD.index(column) + 1)}{row + 2}")
    name = f"bill{index}.{shape}"
    if shape == "xlsx":
        return (name, f"{get_column_letter(HEAD.index(column) + 1)}{row + 2}")
    return (name, f"row {row + (2 if shape == 'csv' else 1)}")


def check(tmp_path_factory, shape: str, drawn) -> None:
    sources, wrong, fault = drawn
    folder = tmp_path_factory.mktemp(shape)
    rows = [[cells(*values, shape=shape) for values in lines] for lines in sources]
    if wrong is not None:
        index, row, what = wrong
        rows[index][row] = spoiled(rows[index][row], what)
    given_sources = [write(folder, shape, i, r, fault if i == 0 else None) for i, r in enumerate(rows)]
    if fault == "empty":
        given_sources.append(write(folder, shape, 2, []))
    if shape == "sheet":  # the sheet, then a CSV of the second bill: the only sheet is the first source
        given_sources[1] = write(folder, "csv", 1, [cells(*v, shape="csv") if wrong is None or wrong[0] != 1
                                                    or n != wrong[1] else spoiled(cells(*v, shape="csv"), wrong[2])
                                                    for n, v in enumerate(sources[1])])
    names = ["Bills" if not hasattr(s, "name") else s.name for s in given_sources]
    try:
        result = sum_bills([BillSource(s, n) for s, n in zip(given_sources, names, strict=True)], "USD",
                           DEFAULT_GPU_LINE_PATTERN, {}, CATALOG)
    except InputError as exc:
        if fault in FAULT_PROBLEM:
            name = "Bills" if shape == "sheet" else f"bill0.{shape}"
            name = f"{name}[Sheet Copy]" if fault == "hidden" else name
            assert [(p.code, p.sheet) for p in exc.problems] == [(FAULT_PROBLEM[fault], name)]
            return
        assert wrong is not None, exc
        index, row, what = wrong
        expected = place("csv" if shape == "sheet" and index == 1 else shape, index, row, WRONG[what][2])
        assert [(p.code, p.sheet, p.cell) for p in exc.problems] == [(WRONG[what][1], *expected)]
        return
    assert wrong is None, f"the wrong line {wrong} was read"
    assert fault not in FAULT_PROBLEM, f"the bill's {fault} column or sheet was read"
    empty = [name for name, lines in zip(names, sources, strict=False) if not lines]
    assert [w.params["file"] for w in result.warnings if w.key == "bill_without_lines"] == (
        [*empty, f"bill2.{shape}"] if fault == "empty" else empty)
    expected = oracle(sources)
    assert set(result.billed) == set(expected)
    for month, (gpu, total) in expected.items():
        assert result.billed[month] == pytest.approx(total, abs=1e-6)
        sums = result.sums[(result.sums["month"] == month) & result.sums["is_gpu"]]
        assert math.fsum(sums["billed"]) == pytest.approx(gpu, abs=1e-6)


FUZZ = settings(max_examples=4, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@pytest.mark.parametrize("shape", ["csv", "parquet", "xlsx", "sheet"])   # sheet: the input's Bills sheet
@FUZZ
@given(data=st.data())
def test_bills_sum_to_the_valid_deduplicated_lines(tmp_path_factory, shape, data):
    check(tmp_path_factory, shape, data.draw(bills(shape)))
