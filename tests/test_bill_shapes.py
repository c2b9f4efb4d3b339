"""Bills and usage in every shape a user hands over (CSV, Parquet, xlsx, the Bills sheet) made wrong in the ways real
exports go wrong: each is an error naming the file, sheet, row or column, or a warning where the value is usable;
none is read silently wrong and none ends in a traceback."""

from __future__ import annotations

import datetime as dt
import json

import duckdb
import openpyxl
import pytest
from conftest import make_input
from test_bills import CATALOG, bills

from budgetgen.core.errors import Code, InputError
from budgetgen.io.reader import read_inputs
from budgetgen.recon import DEFAULT_GPU_LINE_PATTERN, read_usage
from budgetgen.recon.bill_sums import BillSource, sum_bills
from budgetgen.recon.table import sheet_frame

pytestmark = pytest.mark.filterwarnings("error")

HEAD = ["ChargePeriodStart", "BilledCost", "BillingCurrency", "ResourceId", "ChargeDescription", "Tags"]
LINE = ["2026-07-03T00:00:00Z", "100", "USD", "i-1", "p5.48xlarge", '{"task_id": "T1"}']
LINE2 = ["2026-07-04T00:00:00Z", "50", "USD", "i-1", "p5.48xlarge", '{"task_id": "T1"}']


def problems_of(call) -> list:
    with pytest.raises(InputError) as caught:
        call()
    return caught.value.problems


def places(problems) -> list[tuple]:
    return [(p.code, p.sheet, p.cell) for p in problems]


def summed(*paths, memory_limit: str = "1GB"):
    """sum_bills over the paths (USD plan), the warnings included."""
    return sum_bills([BillSource(p, p.name) for p in paths], "USD", DEFAULT_GPU_LINE_PATTERN, {}, CATALOG,
                     memory_limit=memory_limit)


def csv_text(path, text: str):
    path.write_text(text, encoding="utf-8")
    return path


def xlsx(path, rows, more=None):
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "bill"
    for row in rows:
        ws.append(row)
    if more:
        more(wb)
    wb.save(path)
    return path


def parquet(path, select: str):
    duckdb.sql(f"COPY ({select}) TO '{path}' (FORMAT parquet)")
    return path


# ------------------------------------------------------------------ a column twice


def test_a_header_twice_in_an_xlsx_bill_is_refused_not_a_traceback(tmp_path):
    path = xlsx(tmp_path / "dup.xlsx", [[*HEAD, "BilledCost"], [*LINE, "7"]])
    problem, = problems_of(lambda: bills(path))
    assert places([problem]) == [(Code.DUPLICATE_COLUMN, "dup.xlsx", "")]
    assert problem.message == ('has the column "BilledCost" 2 times (BilledCost, BilledCost): keep one, so no value '
                               'is read from the wrong one')


def test_a_header_twice_on_the_bills_sheet_is_refused(tmp_path):
    frame = sheet_frame([(1, (*HEAD, "BilledCost")), (2, (*LINE, "7"))])
    problem, = problems_of(lambda: bills(frame))
    assert places([problem]) == [(Code.DUPLICATE_COLUMN, "Bills", "")]


def test_a_header_twice_in_a_csv_bill_is_refused_not_the_first_taken(tmp_path):
    """DuckDB renames the second BilledCost to BilledCost_1, which no declaration matches: 100 would be read and 7
    dropped."""
    path = csv_text(tmp_path / "dup.csv", ",".join([*HEAD, "BilledCost"]) + "\n" + ",".join(LINE[:5]) + ",{},7\n")
    assert places(problems_of(lambda: bills(path))) == [(Code.DUPLICATE_COLUMN, "dup.csv", "")]


def test_two_names_of_one_column_in_parquet_are_refused(tmp_path):
    path = parquet(tmp_path / "dup.parquet", "SELECT '2026-07-03' AS ChargePeriodStart, 5.0 AS BilledCost, "
                                             "'USD' AS BillingCurrency, 6.0 AS billed_cost")
    problem, = problems_of(lambda: bills(path))
    assert places([problem]) == [(Code.DUPLICATE_COLUMN, "dup.parquet", "")]
    assert "(BilledCost, billed_cost)" in problem.message


def test_a_usage_column_twice_is_refused(tmp_path):
    path = csv_text(tmp_path / "u.csv", "resource_id,month,gpu_util_pct,mem_used_gb,gpu_util_pct\n"
                                        "i-1,2026-07,50,10,90\n")
    assert places(problems_of(lambda: read_usage(path, "u.csv"))) == [(Code.DUPLICATE_COLUMN, "u.csv", "")]


# ------------------------------------------------------------------ xlsx bills


def test_formulas_without_a_saved_result_in_an_xlsx_bill_are_refused_at_their_cells(tmp_path):
    """openpyxl writes formulas without results: read as blank, the currency would be missing, not USD."""
    def formulas(wb):
        wb["bill"]["C2"] = '="US"&"D"'
        wb["bill"]["F3"] = '=A1'
    path = xlsx(tmp_path / "f.xlsx", [HEAD, LINE, LINE2], formulas)
    assert places(problems_of(lambda: bills(path))) == [(Code.FORMULA_WITHOUT_VALUE, "f.xlsx", "C2"),
                                                        (Code.FORMULA_WITHOUT_VALUE, "f.xlsx", "F3")]


def test_a_hidden_copy_sheet_is_refused_not_counted_twice(tmp_path):
    def hidden(wb):
        ws = wb.create_sheet("copy")
        for row in (HEAD, LINE):
            ws.append(row)
        ws.sheet_state = "hidden"
    path = xlsx(tmp_path / "h.xlsx", [HEAD, LINE], hidden)
    problem, = problems_of(lambda: bills(path))
    assert places([problem]) == [(Code.WRONG_FORMAT, "h.xlsx[copy]", "")]
    assert "hidden sheet" in problem.message


@pytest.mark.parametrize("error", ["#N/A", "#REF!"])
def test_a_cached_spreadsheet_error_in_a_bill_is_refused_not_read_as_text(tmp_path, error):
    path = xlsx(tmp_path / "e.xlsx", [HEAD, [*LINE[:4], error, LINE[5]]])
    problem, = problems_of(lambda: bills(path))
    assert places([problem]) == [(Code.FORMULA, "e.xlsx", "E2")]
    assert problem.message == f'ChargeDescription: "{error}" is a spreadsheet error, not a value: fix the formula ' \
                              'or type the value'


def test_dates_typed_as_date_cells_on_the_bills_and_usage_sheets_are_read(tmp_path):
    head = [*HEAD, "BillingPeriodStart"]
    book = make_input(tmp_path / "in.xlsx", [{"task_id": "T1", "kind": "finetune", "model_params_b": 7,
                                              "method": "lora", "train_tokens": "5M"}], {"currency": "USD"},
                      extra_sheets={"Bills": [head, [dt.datetime(2026, 7, 3), 100, "USD", "i-1", "p5.48xlarge",
                                                     "{}", dt.date(2026, 8, 1)]],
                                    "Usage": [["resource_id", "month", "gpu_util_pct", "mem_used_gb"],
                                              ["i-1", dt.datetime(2026, 7, 1), 50, 10]]})
    inputs = read_inputs(book)
    lines = bills(inputs.bills_sheet)
    assert list(lines["month"]) == ["2026-08"]  # the invoice month, from a date cell
    assert list(read_usage(inputs.usage_sheet, "Usage")["month"]) == ["2026-07"]


# ------------------------------------------------------------------ CSV bills


def test_an_unquoted_comma_is_an_error_at_its_row_not_a_dropped_field(tmp_path):
    path = csv_text(tmp_path / "c.csv", ",".join(HEAD) + "\n" + ",".join(LINE[:5]) + ",{}\n"
                    + "2026-07-04T00:00:00Z,100,USD,i-1,p5.48xlarge, 2 cards,{}\n")
    problem, = problems_of(lambda: bills(path))
    assert places([problem]) == [(Code.WRONG_FORMAT, "c.csv", "row 3")]
    assert problem.message.startswith("has 7 fields where the header has 6")


def test_a_row_with_a_field_missing_is_an_error_at_its_row(tmp_path):
    path = csv_text(tmp_path / "c.csv", ",".join(HEAD) + "\n2026-07-04T00:00:00Z,100,USD,i-1,p5.48xlarge\n")
    assert places(problems_of(lambda: bills(path))) == [(Code.WRONG_FORMAT, "c.csv", "row 2")]


def test_newlines_inside_quoted_fields_and_pretty_printed_tags_are_read(tmp_path):
    tags = json.dumps({"task_id": "T1", "team": "ml"}, indent=2).replace('"', '""')
    path = csv_text(tmp_path / "n.csv", ",".join(HEAD) + "\n"
                    + f'2026-07-03T00:00:00Z,100,USD,i-1,"p5.48xlarge\nsecond line","{tags}"\n'
                    + "2026-07-05T00:00:00Z,25,USD,i-2,storage,{}\n")
    lines = bills(path)
    assert list(lines["billed_cost"]) == [100.0, 25.0]
    assert list(lines["task_id"]) == ["T1", ""]


def test_utf16_without_a_bom_is_named_as_such(tmp_path):
    path = tmp_path / "u16.csv"
    path.write_bytes((",".join(HEAD) + "\n" + ",".join(LINE[:5]) + ",{}\n").encode("utf-16-le"))
    problem, = problems_of(lambda: bills(path))
    assert places([problem]) == [(Code.WRONG_FORMAT, "u16.csv", "")]
    assert problem.message.startswith("is not UTF-8 text (it holds NUL bytes: UTF-16")


@pytest.mark.parametrize("start", ["epoch", "infinity", "2026-07-03T00:00:00+99:00", "2026-07-03T10:00-05:75"])
def test_texts_duckdb_would_read_as_instants_are_no_dates(tmp_path, start):
    path = csv_text(tmp_path / "t.csv", ",".join(HEAD) + f"\n{start},100,USD,i-1,p5.48xlarge,{{}}\n")
    problem, = problems_of(lambda: bills(path))
    assert places([problem]) == [(Code.BAD_MONTH, "t.csv", "row 2")]


def test_the_widest_real_offsets_are_read(tmp_path):
    """Kiribati is UTC+14:00, Baker Island UTC-12:00: 2026-07-31T20:00-12:00 is 08:00 UTC on 2026-08-01."""
    path = csv_text(tmp_path / "t.csv", ",".join(HEAD) + "\n2026-07-01T05:00:00+14:00,1,USD,i-1,x,{}\n"
                    "2026-07-31T20:00:00-12:00,2,USD,i-1,x,{}\n")
    assert list(bills(path)["month"]) == ["2026-06", "2026-08"]


def test_tags_that_are_no_json_or_name_two_tasks_are_refused(tmp_path):
    path = csv_text(tmp_path / "t.csv", ",".join(HEAD) + "\n2026-07-03,1,USD,i-1,x,env=prod\n"
                    '2026-07-03,1,USD,i-2,x,"{""task_id"": ""T1"", ""user:task_id"": ""T2""}"\n'
                    '2026-07-03,1,USD,i-3,x,"{""task_id"": ""T1"", ""Task-ID"": ""T1""}"\n')
    problems = problems_of(lambda: bills(path))
    assert places(problems) == [(Code.WRONG_FORMAT, "t.csv", "row 2"), (Code.WRONG_FORMAT, "t.csv", "row 3")]
    assert problems[0].message == 'Tags: "env=prod" is not a JSON object; write tags as {"task_id": "T01"}'
    assert problems[1].message.endswith("names more than one task (T1, T2); keep one task_id key")


# ------------------------------------------------------------------ warnings where the bill is usable


def test_a_header_only_csv_and_a_schema_only_parquet_are_warned_of(tmp_path):
    header = csv_text(tmp_path / "h.csv", ",".join(HEAD) + "\n")
    schema = parquet(tmp_path / "s.parquet", "SELECT '2026-07-03' AS ChargePeriodStart, 5.0 AS BilledCost, "
                                             "'USD' AS BillingCurrency LIMIT 0")
    result = summed(header, schema)
    assert result.sums.empty
    assert [w.key for w in result.warnings] == ["bill_without_lines", "bill_without_lines"]
    assert [w.params["file"] for w in result.warnings] == ["h.csv", "s.parquet"]


def test_a_bill_without_a_currency_column_is_warned_of(tmp_path):
    path = csv_text(tmp_path / "n.csv", "ChargePeriodStart,BilledCost\n2026-07-03,10\n")
    result = summed(path)
    assert result.billed == {"2026-07": 10.0}
    assert [str(w) for w in result.warnings] == [
        ("n.csv has no BillingCurrency column: its amounts are taken to be in the plan's currency USD; add the "
        "column to have it checked")]


# ------------------------------------------------------------------ Parquet bills


@pytest.mark.parametrize(("select", "header", "kind"), [
    ("true AS BilledCost, '2026-07-03' AS ChargePeriodStart", "BilledCost", "BOOLEAN"),
    ("1.5 AS BilledCost, 20260703 AS ChargePeriodStart", "ChargePeriodStart", "INTEGER"),
])
def test_parquet_columns_of_the_wrong_type_are_named(tmp_path, select, header, kind):
    path = parquet(tmp_path / "w.parquet", f"SELECT {select}, 'USD' AS BillingCurrency")
    problem, = problems_of(lambda: bills(path))
    assert places([problem]) == [(Code.WRONG_FORMAT, "w.parquet", "")]
    assert problem.message.startswith(f'column "{header}" holds {kind} values')


def test_a_parquet_bill_with_its_own_filename_column_is_read(tmp_path):
    path = parquet(tmp_path / "f.parquet", "SELECT '2026-07-03' AS ChargePeriodStart, 5.0 AS BilledCost, "
                                           "'USD' AS BillingCurrency, 'other.csv' AS filename")
    assert summed(path).billed == {"2026-07": 5.0}


def test_a_memory_limit_too_small_is_the_setting_not_an_unreadable_bill(tmp_path):
    path = csv_text(tmp_path / "b.csv", ",".join(HEAD) + "\n" + ",".join(LINE[:5]) + ",{}\n")
    problem, = problems_of(lambda: summed(path, memory_limit="1KB"))
    assert places([problem]) == [(Code.OUT_OF_RANGE, "Settings", "")]
    assert problem.message.startswith('recon_memory_limit: "1KB" is below the 64MB')


def test_billed_months_outside_the_plan_are_named():
    from budgetgen.api import months_outside_plan

    warning, = months_outside_plan({"1950-01": None, "2026-07": None, "2300-12": None}, ("2026-07", "2026-08"))
    assert str(warning).startswith("the bills hold months outside the plan 2026-07 to 2026-08: 1950-01, 2300-12;")
    assert months_outside_plan({"2026-08": None}, ("2026-07", "2026-08")) == ()
