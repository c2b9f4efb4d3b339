"""The Spark text `budgetgen bill-sql --dialect spark` prints, run by Spark itself (a local pyspark session) over a
Parquet bill, and Spark's result (written by Spark as Parquet) given to `build --bill-sums`: the reconciliation is
the one `build --bills` makes of the same Parquet lines with DuckDB, to the cent.

Two bills: the sample plan's CNY bill (tagged GPU lines, an untagged one, storage) in UTC, and the FinOps
Foundation's FOCUS sample (1,000 lines with commitments, credits and adjustments) with Asia/Shanghai as the billing
time zone, where Spark's conversion of the UTC instants decides months and days. A FOCUS table in a warehouse has
every FOCUS column: the view Spark queries adds those a test bill lacks as NULL, as the local reading takes an absent
column. The session's time zone is UTC, as the query expects (docs/reconciliation.md).

Needs pyspark (the `spark` extra: `pip install '.[spark]'`) and a Java runtime (Debian: default-jre-headless); CI
installs both and runs this module, elsewhere it is skipped with the reason when either is missing.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import math
import os
import shutil
from collections import defaultdict
from pathlib import Path
from zoneinfo import ZoneInfo

import duckdb
import pytest
from click.testing import CliRunner
from conftest import FOCUS_SAMPLE, SAMPLE, make_input

from budgetgen import api
from budgetgen.cli import main
from budgetgen.recon.bill_sql import FOCUS_COLUMNS

# pyspark 4.3 warns on import under pandas 3 ("does not yet fully support pandas >= 3.0.0"); the test moves no data
# through pandas on the Spark side (Parquet in, Parquet out), so the warning says nothing about it.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("spark"),
              pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")]

CNY_BILL = Path(__file__).resolve().parent / "data" / "baseline" / "bill_cny.csv"
BUILD_DATE = dt.date(2026, 6, 15)
TIMESTAMPS = ("ChargePeriodStart", "ChargePeriodEnd", "BillingPeriodStart", "BillingPeriodEnd")
NUMBERS = ("BilledCost", "ConsumedQuantity", "EffectiveCost")


def _missing() -> str | None:
    """Why Spark cannot run here (None when it can)."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark not installed: pip install '.[spark]'"
    java_home = os.environ.get("JAVA_HOME")
    if shutil.which("java") is None and not (java_home and (Path(java_home) / "bin" / "java").exists()):
        return "Java not installed (pyspark needs it): apt-get install default-jre-headless"
    return None


if (REASON := _missing()) is not None:
    if os.environ.get("CI") == "true":
        pytest.fail(REASON + " (required when CI=true)", pytrace=False)
    pytest.skip(REASON, allow_module_level=True)


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory):
    """One local Spark session for the module (the JVM takes some 30 s to start), its files in a test folder. Spark
    installs its own SIGINT handler, which raises once the session is gone: the worker's own is put back after."""
    import signal

    from pyspark.sql import SparkSession

    interrupt = signal.getsignal(signal.SIGINT)
    session = (SparkSession.builder.master("local[1]").appName("budgetgen-bill-sql")
               .config("spark.sql.session.timeZone", "UTC").config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "1")
               .config("spark.local.dir", str(tmp_path_factory.mktemp("spark-local"))).getOrCreate())
    yield session
    session.stop()
    signal.signal(signal.SIGINT, interrupt)


def parquet_bill(csv_bill: Path, out: Path) -> Path:
    """A CSV bill as a Parquet file with typed columns: amounts DOUBLE, times TIMESTAMP WITH TIME ZONE (UTC)."""
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    relation = f"read_csv('{csv_bill}', header=true, nullstr='NULL', all_varchar=true)"
    columns = [c for c, *_ in con.execute(f"DESCRIBE SELECT * FROM {relation}").fetchall()]
    typed = ", ".join(f'CAST("{c}" AS TIMESTAMPTZ) AS "{c}"' if c in TIMESTAMPS else
                      f'CAST("{c}" AS DOUBLE) AS "{c}"' if c in NUMBERS else f'"{c}"' for c in columns)
    con.execute(f"COPY (SELECT {typed} FROM {relation}) TO '{out}' (FORMAT parquet)")
    con.close()
    return out


def spark_sums(spark, bill: Path, folder: Path, timezone: str) -> Path:
    """The printed Spark query run by Spark over the Parquet bill; its result as the Parquet file Spark writes."""
    from pyspark.sql import functions

    printed = CliRunner().invoke(main, ["bill-sql", "--dialect", "spark", "--timezone", timezone])
    assert printed.exit_code == 0, printed.output
    frame = spark.read.parquet(str(bill))
    kinds = {**dict.fromkeys(TIMESTAMPS, "timestamp"), **dict.fromkeys(NUMBERS, "double")}
    for column in FOCUS_COLUMNS:
        if column not in frame.columns:
            frame = frame.withColumn(column, functions.lit(None).cast(kinds.get(column, "string")))
    frame.createOrReplaceTempView("focus_bill")
    spark.sql(printed.output.strip().rstrip(";")).coalesce(1).write.parquet(str(folder / "spark-sums"))
    parts = sorted((folder / "spark-sums").glob("part-*.parquet"))
    assert len(parts) == 1, parts
    return parts[0]


def reconciliations(spark, plan: Path, csv_bill: Path, folder: Path, timezone: str) -> tuple[dict, dict]:
    """(the JSON's reconciliation of `build --bills` on the Parquet bill, that of `build --bill-sums` on Spark's
    result)."""
    bill = parquet_bill(csv_bill, folder / "bill.parquet")
    sums = spark_sums(spark, bill, folder, timezone)
    out = []
    for name, source in (("lines", {"bills": [bill]}), ("spark", {"bill_sums": sums})):
        api.build_budget(plan, folder / f"{name}.xlsx", json_path=folder / f"{name}.json", build_date=BUILD_DATE,
                         **source)
        out.append(json.loads((folder / f"{name}.json").read_text(encoding="utf-8"))["reconciliation"])
    return out[0], out[1]


def differences(a, b, where: str = "") -> list[str]:
    """Where two JSON values differ: numbers by half a cent or more, anything else at all."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return [f"{where}: keys {sorted(a.keys() ^ b.keys())}"]
        return [d for k in a for d in differences(a[k], b[k], f"{where}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where}: {len(a)} items against {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in differences(x, y, f"{where}[{i}]")]
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) and not isinstance(b, bool):
        return [] if abs(a - b) < 0.005 else [f"{where}: {a} against {b}"]
    return [] if a == b else [f"{where}: {a!r} against {b!r}"]


def test_sample_plans_cny_bill_through_spark_reconciles_as_its_lines(spark, tmp_path):
    lines, through_spark = reconciliations(spark, SAMPLE, CNY_BILL, tmp_path, "UTC")
    assert differences(lines, through_spark) == []
    # the bill by hand: January's GPU lines 5,200 + 800 + 950 (tagged) + 300 (i-orphan, untagged), storage 120;
    # February one tagged GPU line of 5,200
    january, february = through_spark["2027-01"], through_spark["2027-02"]
    assert (january["billed_total"], january["gpu_billed"], january["unallocated"], january["non_gpu_billed"]) == \
        pytest.approx((7370.0, 7250.0, 300.0, 120.0), abs=0.005)
    assert february["billed_total"] == pytest.approx(5200.0, abs=0.005)
    assert {t["task_id"]: t["billed"] for t in january["tasks"] if t["billed"]} == \
        pytest.approx({"KB01": 5200.0, "ML01": 800.0, "ML05": 950.0}, abs=0.005)


def focus_sample_by_hand(timezone: str) -> dict[str, tuple[float, dt.date, dt.date]]:
    """The FOCUS sample read with the csv module: each invoice month's BilledCost and first and last charge day, in
    `timezone` (its timestamps are UTC)."""
    zone = ZoneInfo(timezone)
    costs, days = defaultdict(list), defaultdict(list)

    def local(text: str) -> dt.datetime:
        return dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC).astimezone(zone)

    with FOCUS_SAMPLE.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            month = local(row["BillingPeriodStart"]).strftime("%Y-%m")
            costs[month].append(float(row["BilledCost"]))
            days[month].append(local(row["ChargePeriodStart"]).date())
    return {m: (math.fsum(costs[m]), min(days[m]), max(days[m])) for m in costs}


def test_focus_sample_through_spark_in_another_time_zone_reconciles_as_its_lines(spark, tmp_path):
    zone = "Asia/Shanghai"
    plan = make_input(tmp_path / "usd.xlsx", [
        {"task_id": "T1", "kind": "inference", "model_params_b": 7, "method": "int4", "requests_per_day": 1000,
         "tokens_per_request": 500, "tokens_per_sec": 100, "serving_hours_per_day": 8, "gpu": "RTX 4090",
         "tier": "on_demand"}],
        settings={"currency": "USD", "period_start": "2024-09", "period_months": 2, "billing_timezone": zone})
    lines, through_spark = reconciliations(spark, plan, FOCUS_SAMPLE, tmp_path, zone)
    assert differences(lines, through_spark) == []
    expected = focus_sample_by_hand(zone)
    assert sorted(through_spark) == sorted(expected)
    for month, (billed, first, last) in expected.items():
        got = through_spark[month]
        assert got["billed_total"] == pytest.approx(billed, abs=0.005), month
        assert (got["coverage"]["first"], got["coverage"]["last"]) == (first.isoformat(), last.isoformat()), month
