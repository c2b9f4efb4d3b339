"""Bills summed by DuckDB: duplicates, time zones, invoice months, folders, every xlsx sheet, coverage."""

from __future__ import annotations

import datetime as dt
import shutil

import pandas as pd
import pytest
from test_bills import write_csv

from budgetgen.core.errors import Code, InputError
from budgetgen.recon import DEFAULT_GPU_LINE_PATTERN
from budgetgen.recon.bill_sums import BillSource, sum_bills

pytestmark = pytest.mark.filterwarnings("error")
GPU = "$1.006 per On Demand Linux g5.xlarge Instance Hour"


def summed(*paths, zone: str = "UTC"):
    return sum_bills([BillSource(p, getattr(p, "name", "Bills")) for p in paths], "USD", DEFAULT_GPU_LINE_PATTERN,
                     {}, [], billing_timezone=zone)


def test_the_same_file_under_another_name_is_refused(tmp_path):
    first = write_csv(tmp_path, [{"BilledCost": "5"}], name="a.csv")
    copy = tmp_path / "copy.csv"
    shutil.copy(first, copy)
    for second in (first, copy):
        with pytest.raises(InputError) as caught:
            summed(first, second)
        problem, = caught.value.problems
        assert problem.code == Code.DUPLICATE_FILE and "same bill" in problem.message


def test_identical_lines_across_bills_count_once_and_are_reported(tmp_path):
    line = {"ResourceId": "i-a", "ChargeDescription": GPU, "BilledCost": "7.25", "Tags": '{"task_id": "T1"}'}
    a = write_csv(tmp_path, [line, line, {"BilledCost": "1"}], name="a.csv")   # two same lines in one bill stay
    b = write_csv(tmp_path, [line, {"BilledCost": "2"}], name="b.csv")
    result = summed(a, b)
    assert result.billed == {"2026-07": pytest.approx(7.25 * 2 + 1 + 2)}
    assert result.duplicates == {"2026-07": (1, 7.25)}
    assert "1 bill line(s) found again" in result.warnings[0]
    assert result.sums["lines"].sum() == 4


def test_an_offset_timestamp_counts_in_its_utc_month_or_the_billing_zone(tmp_path):
    path = write_csv(tmp_path, [{"ChargePeriodStart": "2026-07-31T23:30:00-05:00", "BilledCost": "3"}])
    assert list(summed(path).billed) == ["2026-08"]
    assert list(summed(path, zone="America/Chicago").billed) == ["2026-07"]   # CDT is -05:00


def test_a_tagged_storage_line_keeps_its_task_and_is_not_gpu(tmp_path):
    path = write_csv(tmp_path, [{"ServiceCategory": "Storage", "ChargeDescription": "gp3 for the g5.xlarge box",
                                 "Tags": '{"task_id": "T7"}', "BilledCost": "4"}])
    row, = summed(path).sums.itertuples()
    assert (row.task_id, row.is_gpu, row.category, row.billed) == ("T7", False, "storage", 4.0)


def test_an_invalid_billing_period_start_is_an_error(tmp_path):
    header = ["ChargePeriodStart", "BillingPeriodStart", "BilledCost"]
    path = write_csv(tmp_path, [{"BillingPeriodStart": "2026-07-01"}, {"BillingPeriodStart": "July"}],
                     header=header)
    with pytest.raises(InputError) as caught:
        summed(path)
    problem, = caught.value.problems
    assert (problem.code, problem.sheet, problem.cell) == (Code.BAD_MONTH, "focus.csv", "row 3")


def test_a_folder_of_parquet_parts_names_the_part_and_row(tmp_path):
    folder = tmp_path / "export"
    folder.mkdir()
    for n, cost in enumerate(([1.0, 2.0], [3.0, float("inf")])):
        pd.DataFrame({"ChargePeriodStart": ["2026-07-01", "2026-07-09"], "BilledCost": cost}).to_parquet(
            folder / f"part-{n}.parquet")
    with pytest.raises(InputError) as caught:
        summed(folder)
    problem, = caught.value.problems
    assert (problem.sheet, problem.cell) == ("part-1.parquet", "row 2")
    pd.DataFrame({"ChargePeriodStart": ["2026-07-09"], "BilledCost": [4.0]}).to_parquet(folder / "part-1.parquet")
    result = summed(folder)
    assert result.billed == {"2026-07": 7.0}
    assert result.coverage == {"2026-07": (dt.date(2026, 7, 1), dt.date(2026, 7, 9), 2)}
    assert summed(tmp_path / "export" / "*.parquet").billed == {"2026-07": 7.0}


def test_every_sheet_of_an_xlsx_bill_is_read(tmp_path):
    path = tmp_path / "bill.xlsx"
    with pd.ExcelWriter(path) as writer:
        pd.DataFrame({"ChargePeriodStart": ["2026-07-01"], "BilledCost": [2.0]}).to_excel(writer, sheet_name="July", index=False)
        pd.DataFrame({"ChargePeriodStart": ["2026-08-01"], "BilledCost": [3.0]}).to_excel(writer, sheet_name="Aug", index=False)
        pd.DataFrame({"note": ["totals"]}).to_excel(writer, sheet_name="Notes", index=False)
    with pytest.raises(InputError) as caught:
        summed(path)
    assert {(p.code, p.sheet) for p in caught.value.problems} == {(Code.MISSING_COLUMN, "bill.xlsx[Notes]")}


@pytest.mark.parametrize("setting, value, key", [
    ("billing_timezone", "Mars/Olympus", "is not a time zone"),
    ("memory_limit", "lots", "is not an amount of memory"),
])
def test_bad_engine_settings_are_clear_errors(tmp_path, setting, value, key):
    path = write_csv(tmp_path, [{}])
    options = {"billing_timezone": value} if setting == "billing_timezone" else {"memory_limit": value}
    with pytest.raises(InputError) as caught:
        sum_bills([BillSource(path, path.name)], "USD", DEFAULT_GPU_LINE_PATTERN, {}, [], **options)
    problem, = caught.value.problems
    assert problem.sheet == "Settings" and key in problem.message


def test_a_bill_larger_than_the_memory_limit_allows_is_a_clear_error(tmp_path):
    folder = tmp_path / "big"
    folder.mkdir()
    for n in range(2):
        pd.DataFrame({"ChargePeriodStart": pd.date_range("2026-07-01", periods=200_000, freq="min", tz="UTC"),
                      "BilledCost": 1.0 + n, "ResourceId": [f"i-{i}" for i in range(200_000)]}).to_parquet(
            folder / f"part-{n}.parquet")
    with pytest.raises(InputError) as caught:
        sum_bills([BillSource(folder, "big")], "USD", DEFAULT_GPU_LINE_PATTERN, {}, [], memory_limit="4MB")
    problem, = caught.value.problems
    assert problem.sheet == "Settings" and "recon_memory_limit" in problem.message


@pytest.mark.parametrize("text_hash", ["hash", "collide"])
def test_groups_by_the_texts_hash_or_by_the_texts_where_two_share_a_hash(tmp_path, monkeypatch, text_hash):
    """One source is grouped by a hash of its texts (create_all_groups); where two distinct texts share a hash (here
    every text hashes to 0) it groups by the texts themselves: the same groups and sums. Worked by hand: i-a 2 + 3
    in July, 4 in August; i-b (another SKU on the same resource id) 5 in July; a line with no resource 1."""
    from budgetgen.recon import bill_sums

    if text_hash == "collide":
        monkeypatch.setattr(bill_sums, "text_hash", lambda keys: "0::UBIGINT")
    path = write_csv(tmp_path, [
        {"ResourceId": "i-a", "ChargeDescription": GPU, "BilledCost": "2", "ChargePeriodStart": "2026-07-01T00:00:00Z"},
        {"ResourceId": "i-a", "ChargeDescription": GPU, "BilledCost": "3", "ChargePeriodStart": "2026-07-02T00:00:00Z"},
        {"ResourceId": "i-a", "ChargeDescription": GPU, "BilledCost": "4", "ChargePeriodStart": "2026-08-01T00:00:00Z"},
        {"ResourceId": "i-a", "ChargeDescription": "gp3 volume", "BilledCost": "5",
         "ChargePeriodStart": "2026-07-01T00:00:00Z"},
        {"ResourceId": "", "BilledCost": "1", "ChargePeriodStart": "2026-07-03T00:00:00Z"}])
    sums = summed(path).sums
    got = {(r.month, r.resource_id, r.is_gpu): (r.billed, r.lines) for r in sums.itertuples()}
    assert got == {("2026-07", "i-a", True): (5.0, 2), ("2026-07", "i-a", False): (5.0, 1),
                   ("2026-08", "i-a", True): (4.0, 1), ("2026-07", "", False): (1.0, 1)}


def test_only_texts_no_part_holds_leave_the_grouping_key():
    """A text is left out of the one-source grouping's key only when no part of the bill has its column (then it is
    NULL on every line, extra_text '' without an x_ column); a column in one part of two keeps it in the key."""
    from budgetgen.recon.bill_sums import _constant_texts, _Part, grouping_texts

    def part(*columns):
        return _Part("bill", "t", False, columns, dict.fromkeys(columns, "VARCHAR"), None)

    a = part("ResourceId", "BilledCost", "ChargePeriodStart", "BillingCurrency")
    b = part("ResourceId", "ResourceName", "x_team")
    held = {"resource_id", "resource_name", "currency"}
    all_texts = {"resource_id", "resource_name", "resource_type", "service_name", "service_category", "description",
                 "sku", "consumed_unit", "tags", "currency", "charge_category", "commitment_id",
                 "commitment_status", "commitment_type", "pricing_category"}
    assert _constant_texts([a, b]) == dict.fromkeys(all_texts - held, "NULL::VARCHAR")
    assert _constant_texts([a]) == {**dict.fromkeys(all_texts - {"resource_id", "currency"}, "NULL::VARCHAR"),
                                    "extra_text": "''"}
    grouping = grouping_texts(_constant_texts([a]))
    assert grouping["keys"] == "resource_id, currency, "
    assert "NULL::VARCHAR AS resource_name" in grouping["texts"] and "'' AS extra_text" in grouping["texts"]


def test_texts_empty_on_every_row_of_a_warehouse_result_leave_its_grouping_key():
    """The warehouse result's grouping (bill_sql._sums_constants): a text NULL on all three rows (sku) and extra_text
    ('' always) leave the key and are written back; a text NULL on one row of three (tags) stays in it."""
    import duckdb

    from budgetgen.recon.bill_sql import _sums_constants
    from budgetgen.recon.bill_sums import _TEXTS

    con = duckdb.connect()
    columns = ", ".join(f"{value} AS {name}" for name, value in
                        [(n, "'x'") for n in _TEXTS if n not in ("sku", "tags")]
                        + [("sku", "NULL::VARCHAR"), ("tags", "CASE WHEN i = 2 THEN NULL ELSE 'team' END")])
    con.execute(f"CREATE TEMP VIEW sums_file AS SELECT {columns} FROM range(3) t(i)")
    assert _sums_constants(con) == {"sku": "CAST(NULL AS VARCHAR)", "extra_text": "''"}
