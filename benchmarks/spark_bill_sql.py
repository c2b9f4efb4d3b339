"""Runs `budgetgen bill-sql --dialect spark` on a local Spark session over the sample plan's CNY bill and checks
that `build --bill-sums` on Spark's result reconciles exactly as `build --bills` on the lines (the JSON's
reconciliation). Needs pyspark and a Java runtime (`pip install pyspark`; Debian: default-jre-headless); its session
takes about 35 s to start, which is why this is a script beside the benchmarks and not part of the test suite (the
suite runs the DuckDB text the same way and parses every dialect's text back with sqlglot).

    python3 benchmarks/spark_bill_sql.py
"""

from __future__ import annotations

import datetime as dt
import json
import sys
import tempfile
from pathlib import Path

from click.testing import CliRunner
from pyspark.sql import SparkSession, functions

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from budgetgen import api
from budgetgen.cli import main
from budgetgen.recon.bill_sql import _TEXT_COLUMNS

CNY_BILL = ROOT / "tests" / "data" / "baseline" / "bill_cny.csv"
SAMPLE_PLAN = ROOT / "inputs" / "q3.xlsx"
BUILD_DATE = dt.date(2026, 6, 15)
FOCUS_READ = [c for c, _ in _TEXT_COLUMNS] + ["BilledCost", "ConsumedQuantity", "EffectiveCost",
                                              "ChargePeriodStart", "BillingPeriodStart"]


def spark_sql() -> str:
    result = CliRunner().invoke(main, ["bill-sql", "--dialect", "spark"])
    if result.exit_code:
        sys.exit(result.output)
    return result.output.strip().rstrip(";")


def main_() -> int:
    spark = (SparkSession.builder.master("local[1]").appName("budgetgen-bill-sql")
             .config("spark.sql.session.timeZone", "UTC").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "1").getOrCreate())
    try:
        frame = spark.read.csv(str(CNY_BILL), header=True, inferSchema=True, nullValue="NULL", escape="\"")
        for column in FOCUS_READ:
            if column not in frame.columns:
                frame = frame.withColumn(column, functions.lit(None).cast("string"))
        frame.createOrReplaceTempView("focus_bill")
        result = spark.sql(spark_sql()).toPandas()
    finally:
        spark.stop()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        result.to_csv(folder / "spark-sums.csv", index=False)
        api.build_budget(SAMPLE_PLAN, folder / "spark.xlsx", bill_sums=folder / "spark-sums.csv",
                         json_path=folder / "spark.json", build_date=BUILD_DATE)
        api.build_budget(SAMPLE_PLAN, folder / "lines.xlsx", bills=[CNY_BILL], json_path=folder / "lines.json",
                         build_date=BUILD_DATE)
        spark_json, lines_json = (json.loads((folder / f"{n}.json").read_text(encoding="utf-8"))["reconciliation"]
                                  for n in ("spark", "lines"))
    same = json.dumps(spark_json, sort_keys=True) == json.dumps(lines_json, sort_keys=True)
    print("Spark's sums reconcile as the lines" if same else "Spark's sums reconcile DIFFERENTLY from the lines")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main_())
