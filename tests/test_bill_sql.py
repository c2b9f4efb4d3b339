"""The bill's grouping as one query for a warehouse: `budgetgen bill-sql` prints it in each dialect, and
`build --bill-sums` reads its result in place of the lines, to the same reconciliation as `build --bills`.

The query runs here on DuckDB over a table `focus_bill` made from a bill file. A FOCUS export in a warehouse has
every FOCUS column; a test bill lacks some (the sample plan's CNY bill has no BillingPeriodStart, EffectiveCost,
SkuId...), so the view adds those as NULL, which is what the local reading takes an absent column for.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import duckdb
import openpyxl
import pytest
import sqlglot
from click.testing import CliRunner
from conftest import FOCUS_SAMPLE, make_input

from budgetgen import api
from budgetgen.cli import main
from budgetgen.core.errors import InputError
from budgetgen.recon.bill_sql import _TEXT_COLUMNS, DIALECTS

pytestmark = pytest.mark.xdist_group("bill_sql")

ROOT = Path(__file__).resolve().parents[1]
CNY_BILL = ROOT / "tests" / "data" / "baseline" / "bill_cny.csv"
SAMPLE_PLAN = ROOT / "tests" / "data" / "q3.xlsx"
BUILD_DATE = dt.date(2026, 6, 15)
FOCUS_READ = [c for c, _ in _TEXT_COLUMNS] + ["BilledCost", "ConsumedQuantity", "EffectiveCost",
                                               "ChargePeriodStart", "BillingPeriodStart"]


def printed_sql(*args: str) -> str:
    result = CliRunner().invoke(main, ["bill-sql", *args])
    assert result.exit_code == 0, result.output
    return result.output


def run_printed_query(bill: Path, out: Path, timezone: str = "UTC") -> Path:
    """The DuckDB text `budgetgen bill-sql` prints, run over a view of the bill file; its result saved as `out`."""
    sql = printed_sql("--dialect", "duckdb", "--timezone", timezone)
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")  # a warehouse's FOCUS timestamps are UTC
    relation = f"read_csv('{bill}', header=true, nullstr='NULL')"  # as a warehouse loads the sample
    have = {c for c, *_ in con.execute(f"DESCRIBE SELECT * FROM {relation}").fetchall()}
    absent = "".join(f", NULL AS {c}" for c in FOCUS_READ if c not in have)
    con.execute(f"CREATE VIEW focus_bill AS SELECT *{absent} FROM {relation}")
    fmt = "(FORMAT parquet)" if out.suffix == ".parquet" else "(HEADER)"
    con.execute(f"COPY ({sql.strip().rstrip(';')}) TO '{out}' {fmt}")
    con.close()
    return out


@pytest.mark.parametrize("dialect", DIALECTS)
def test_each_dialects_text_parses_back_in_that_dialect(dialect):
    text = printed_sql("--dialect", dialect, "--table", "billing.focus_export", "--timezone", "Asia/Shanghai")
    statements = [s for s in sqlglot.parse(text, read=dialect) if s is not None]
    assert len(statements) == 1
    query = statements[0]
    assert isinstance(query, sqlglot.exp.Select)
    assert [t.sql(dialect) for t in query.find_all(sqlglot.exp.Table)] == ["billing.focus_export"]
    # one grouping: month, day and the 15 texts
    assert len(query.args["group"].expressions) == 2 + len(_TEXT_COLUMNS)
    assert "Asia/Shanghai" in text


def recon_cells(path: Path) -> dict:
    """Every cell of the Recon tabs (value or formula), by sheet and coordinate."""
    wb = openpyxl.load_workbook(path)
    return {(ws.title, c.coordinate): c.value for ws in wb.worksheets if ws.title.startswith("Recon")
            for row in ws.iter_rows() for c in row if c.value is not None}


def recon_values(path: Path) -> dict:
    wb = openpyxl.load_workbook(path, data_only=True)
    return {(ws.title, c.coordinate): c.value for ws in wb.worksheets if ws.title.startswith("Recon")
            for row in ws.iter_rows() for c in row if c.value is not None}


def build_both(tmp: Path, plan: Path, bill: Path, suffix: str) -> tuple[tuple[dict, Path], tuple[dict, Path]]:
    """The plan built with --bills and with --bill-sums (the printed query's result): (JSON, workbook) each."""
    sums = run_printed_query(bill, tmp / f"sums{suffix}")
    built = []
    for name, kwargs in (("lines", {"bills": [bill]}), ("sums", {"bill_sums": sums})):
        out = tmp / f"{name}.xlsx"
        api.build_budget(plan, out, json_path=tmp / f"{name}.json", build_date=BUILD_DATE, **kwargs)
        built.append((json.loads((tmp / f"{name}.json").read_text(encoding="utf-8")), out))
    return built[0], built[1]


def same_values(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key, value in a.items():
        if isinstance(value, float):
            assert b[key] == pytest.approx(value, rel=1e-12, abs=1e-9), key
        else:
            assert b[key] == value, key


@pytest.mark.slow
def test_sample_plans_cny_bill_through_the_printed_query_reconciles_as_its_lines(tmp_path):
    (lines_json, lines_xlsx), (sums_json, sums_xlsx) = build_both(tmp_path, SAMPLE_PLAN, CNY_BILL, ".csv")
    assert lines_json["reconciliation"], "the bill has reconciled months"
    assert json.dumps(sums_json["reconciliation"], sort_keys=True) == \
        json.dumps(lines_json["reconciliation"], sort_keys=True)
    assert recon_cells(sums_xlsx) == recon_cells(lines_xlsx)
    same_values(recon_values(lines_xlsx), recon_values(sums_xlsx))


@pytest.mark.slow
def test_focus_sample_through_the_printed_query_as_parquet_reconciles_as_its_lines(tmp_path):
    # The FinOps Foundation's sample: 1,000 lines, USD, invoice months 2024-09 and 2024-10.
    plan = make_input(tmp_path / "usd.xlsx", [
        {"task_id": "T1", "kind": "inference", "model_params_b": 7, "method": "int4", "requests_per_day": 1000,
         "tokens_per_request": 500, "tokens_per_sec": 100, "serving_hours_per_day": 8, "gpu": "RTX 4090",
         "tier": "on_demand"}], settings={"currency": "USD", "period_start": "2024-09", "period_months": 2})
    (lines_json, lines_xlsx), (sums_json, sums_xlsx) = build_both(tmp_path, plan, FOCUS_SAMPLE, ".parquet")
    assert sorted(lines_json["reconciliation"]) == ["2024-09", "2024-10"]
    assert json.dumps(sums_json["reconciliation"], sort_keys=True) == \
        json.dumps(lines_json["reconciliation"], sort_keys=True)
    assert recon_cells(sums_xlsx) == recon_cells(lines_xlsx)
    same_values(recon_values(lines_xlsx), recon_values(sums_xlsx))


def test_a_result_for_another_time_zone_or_beside_bills_is_refused_by_name(tmp_path):
    sums = run_printed_query(CNY_BILL, tmp_path / "sums.csv", timezone="Asia/Shanghai")
    with pytest.raises(InputError) as caught:  # the sample plan's billing_timezone is UTC
        api.build_budget(SAMPLE_PLAN, tmp_path / "out.xlsx", bill_sums=sums, build_date=BUILD_DATE)
    first = caught.value.problems[0]
    assert (first.sheet, first.cell) == ("sums.csv", "row 2")
    assert "Asia/Shanghai" in str(first)
    assert not (tmp_path / "out.xlsx").exists()
    with pytest.raises(InputError) as caught:
        api.build_budget(SAMPLE_PLAN, tmp_path / "out.xlsx", bills=[CNY_BILL], bill_sums=sums, build_date=BUILD_DATE)
    assert caught.value.problems[0].sheet == "sums.csv"
