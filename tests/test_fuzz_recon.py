"""Fuzzing bills and usage through `budgetgen build`: lines made wrong end in `Error:` lines naming their file, row
and column, or in a reconciliation whose billed totals per month and task are the sums of the valid lines worked
out here (a line found again in a later bill counted once; GPU or not by the line, never by its tag; a line in USD
or EUR converted at the plan's FX sheet rate, a currency without a rate refused)."""

from __future__ import annotations

import csv
import datetime as dt
import json
import math
import re
from collections import defaultdict

import pytest
from click.testing import CliRunner
from conftest import make_input
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from test_bad_input import errors_in

from budgetgen.cli import main

TASKS = [{"task_id": "T1", "kind": "finetune", "model_params_b": 7, "method": "lora", "train_tokens": "5M"},
         {"task_id": "S1", "kind": "inference", "model_params_b": 7, "requests_per_day": 1000,
          "tokens_per_request": 200}]
HEADER = ["ChargePeriodStart", "ChargePeriodEnd", "BilledCost", "BillingCurrency", "ResourceId", "ServiceName",
          "ServiceCategory", "ChargeDescription", "SkuId", "ConsumedQuantity", "ConsumedUnit", "Tags"]
# Kinds of line, and whether each is a GPU line by FOCUS ServiceCategory and the instance family or GPU named on it.
KINDS = {
    "gpu": ({"ServiceName": "Amazon EC2", "ServiceCategory": "Compute", "ChargeDescription": "p5.48xlarge On Demand",
             "SkuId": "P5-OD", "ConsumedUnit": "Hours"}, True),
    "gpu_named": ({"ServiceName": "Cloud Cards", "ServiceCategory": "Compute",
                   "ChargeDescription": "H100 80G card-hours", "SkuId": "H100-HR", "ConsumedUnit": "Hours"}, True),
    "storage": ({"ServiceName": "Amazon S3", "ServiceCategory": "Storage", "ChargeDescription": "GPU checkpoint storage",
                 "SkuId": "S3-STD", "ConsumedUnit": "GB-Mo"}, False),   # says GPU, is storage
    "egress": ({"ServiceName": "Amazon EC2", "ServiceCategory": "Networking", "ChargeDescription": "Data transfer out",
                "SkuId": "DT-OUT", "ConsumedUnit": "GB"}, False),
    "cpu": ({"ServiceName": "Amazon EC2", "ServiceCategory": "Compute", "ChargeDescription": "m5.large On Demand",
             "SkuId": "M5-OD", "ConsumedUnit": "Hours"}, False),
}
T1, S1, NONE = '{"task_id": "T1"}', '{"task_id": "S1"}', "NULL"
# (kind, resource, start, cost, tags) of each bill's lines; b2 repeats b1's August lines (counted once).
B1 = [("gpu", "i-gpu1", "2026-07-03T00:00:00Z", "1200.50", T1), ("gpu_named", "i-gpu2", "2026-07-10T00:00:00Z", "800", S1),
      ("storage", "vol-1", "2026-07-20T00:00:00Z", "45.25", T1), ("egress", "i-gpu1", "2026-07-21T00:00:00Z", "12.5", NONE),
      ("cpu", "i-cpu1", "2026-07-22T00:00:00Z", "30", S1), ("gpu", "i-gpu3", "2026-07-25T00:00:00Z", "500", NONE),
      ("gpu", "i-gpu1", "2026-08-02T00:00:00Z", "1100", T1), ("gpu", "i-gpu1", "2026-08-05T00:00:00Z", "-100", T1)]
B2 = [*B1[6:], ("gpu_named", "i-gpu2", "2026-08-09T00:00:00Z", "700", '{"task_id": "s1"}')]
COLUMN = {"start": "ChargePeriodStart", "cost": "BilledCost", "currency": "BillingCurrency", "tags": "Tags"}

UTC = dt.UTC
# Texts and what the bill contract makes of them: a value, "empty" (refused: required), None (refused).
COSTS = {"12.5": 12.5, "-40": -40.0, "0": 0.0, "+3.25": 3.25, " 7 ": 7.0, "1e15": 1e15, "-1e15": -1e15,
         "1e-400": 0.0, "": "empty", "NULL": "empty", "abc": None, "1,5": None, "1,234.50": None, "$5": None,
         "inf": None, "-Infinity": None, "nan": None, "1e309": None, "1e308": None, "-1e308": None, "1e16": None,
         "1_000": 1000.0, "-0": 0.0, "5e-324": 5e-324, "0x10": None, "\uff11\uff12": None}
STARTS = {"2026-07-15": dt.datetime(2026, 7, 15, tzinfo=UTC),
          "2026-07-31T23:30:00-05:00": dt.datetime(2026, 8, 1, 4, 30, tzinfo=UTC),
          "2026-08-01T01:00:00+08:00": dt.datetime(2026, 7, 31, 17, tzinfo=UTC),
          "2026/7/3": dt.datetime(2026, 7, 3, tzinfo=UTC), "2026-08": dt.datetime(2026, 8, 1, tzinfo=UTC),
          "2026-09-30 23:59:59": dt.datetime(2026, 9, 30, 23, 59, 59, tzinfo=UTC),
          "2026-10-01T00:00:00Z": dt.datetime(2026, 10, 1, tzinfo=UTC),
          "9999-12-15": dt.datetime(9999, 12, 15, tzinfo=UTC), "0001-01-01": None, "1899-12-31": None,
          "9999-12-31T23:59:59Z": None,  # beyond the dates a workbook shows
          "": "empty", "NULL": "empty", "2026-13-01": None, "2026-02-30": None, "July 2026": None, "20260715": None}
RATES = {"CNY": 1.0, "USD": 7.0, "EUR": 8.0}   # the plan's FX sheet: CNY per 1 unit
FX_SHEET = [["currency", "rate", "as_of", "source"], ["USD", RATES["USD"], "2026-07-31", "test rate"],
            ["EUR", RATES["EUR"], "2026-07-31", "test rate"]]
CURRENCIES = {"CNY": "CNY", "cny": "CNY", " CNY ": "CNY", "": "CNY", "NULL": "CNY", "null": "CNY", "USD": "USD",
              "eur": "EUR", "C N Y": "C N Y"}
TAGS = {T1: "T1", S1: "S1", '{"task_id": "s1"}': "S1", '{"Task_ID": " S1 "}': "S1", '{"user:task-id": "S1"}': "S1",
        '{"task_id": "T9"}': "T9", '{"task_id": "T1", "team": "nlp"}': "T1", '{"team": "ml"}': "", NONE: "",
        "": "", '{"task_id": ""}': "", '{"task_id": null}': "", '{"task_id": 1}': "1", '{"task_id": "T*"}': "T*",
        "task_id=T1": None, '["task_id", "T1"]': None, "{task_id: T1}": None, "multitask": None}
TEXTS = {"start": STARTS, "cost": COSTS, "currency": CURRENCIES, "tags": TAGS}
line_edits = st.one_of(
    st.tuples(st.sampled_from(["b1.csv", "b2.csv"]), st.integers(0, 8), st.just("cost"),
              st.one_of(st.sampled_from(list(COSTS)), st.floats(-1e6, 1e6).map(repr))),
    *(st.tuples(st.sampled_from(["b1.csv", "b2.csv"]), st.integers(0, 8), st.just(c), st.sampled_from(list(TEXTS[c])))
      for c in ("start", "currency", "tags")),
)

# nvidia-smi samples of i-gpu1 (its id is the file's name): time, utilisation, memory used, card memory.
SMI_HEADER = "timestamp, utilization.gpu [%], memory.used [MiB], memory.total [MiB]"
SAMPLES = [("2026/07/03 10:00:00.000", "40 %", "1000 MiB", "81920 MiB"),
           ("2026-07-31T23:00:00Z", "60 %", "30000 MiB", "81920 MiB"),
           ("2026/08/02 10:00:00.000", "10 %", "500 MiB", "81920 MiB")]
MIB = 2 ** 20 / 1e9
UTILS = {"40 %": 40.0, "40": 40.0, "40%": 40.0, "0 %": 0.0, "100 %": 100.0, "[N/A]": "missing", "140 %": None,
         "-5 %": None, "abc %": None, "inf %": None, "40 MiB": None}
MEMORY = {"1000 MiB": 1000 * MIB, "1000": 1000 * MIB, "2 GiB": 2 * 2 ** 30 / 1e9, "1.5 GB": 1.5, "500 MB": 0.5,
          "0 MiB": 0.0, "[N/A]": "missing", "2 G": None, "-3 MiB": None, "inf MiB": None, "lots": None, "40 %": None}
TIMES = {"2026/07/03 10:00:00.000": "2026-07", "2026-07-31T23:00:00Z": "2026-07", "2026/7/9": "2026-07",
         "2026/08/01 00:00:00.000": "2026-08", "2026/08/02 10:00:00.000": "2026-08", "2026/13/03 10:00": None,
         "yesterday": None, "": None}
usage_edits = st.one_of(st.tuples(st.integers(0, 2), st.just(0), st.sampled_from(list(TIMES))),
                        st.tuples(st.integers(0, 2), st.just(1), st.sampled_from(list(UTILS))),
                        st.tuples(st.integers(0, 2), st.sampled_from([2, 3]), st.sampled_from(list(MEMORY))))


def bill_lines(base: list[tuple]) -> list[dict]:
    lines = []
    for kind, resource, start, cost, tags in base:
        fields, _ = KINDS[kind]
        end = (dt.datetime.fromisoformat(start) + dt.timedelta(hours=1)).isoformat().replace("+00:00", "Z")
        lines.append({**fields, "ChargePeriodStart": start, "ChargePeriodEnd": end, "BilledCost": cost,
                      "BillingCurrency": "CNY", "ResourceId": resource, "ConsumedQuantity": "1", "Tags": tags,
                      "kind": kind})
    return lines


def contract(column: str, text: str):
    """What the bill contract makes of a cell of a base line (written by this test) or of a mutated one."""
    if text in TEXTS[column]:
        return TEXTS[column][text]
    if column == "start":
        return dt.datetime.fromisoformat(text)
    return float(text)  # a cost written as Python writes a float


def expected_bills(files: dict[str, list[dict]]) -> tuple[set, dict]:
    """Independently of budgetgen: the places its errors must name (file, row, column), or each month's sums."""
    errors = set()
    for name, lines in files.items():
        other_currency = {}
        for row, line in enumerate(lines, start=2):
            for key in ("cost", "start", "tags"):
                if contract(key, line[COLUMN[key]]) in (None, "empty"):
                    errors.add((name, f"row {row}", COLUMN[key]))
            currency = contract("currency", line["BillingCurrency"])
            if currency not in RATES:
                other_currency.setdefault(currency, row)   # one error per currency without a rate: its first line
        errors |= {(name, f"row {row}", "BillingCurrency") for row in other_currency.values()}
    if errors:
        return errors, {}
    seen_in: dict[tuple, int] = {}
    counted = []
    for source, lines in enumerate(files.values()):
        for line in lines:
            fields, _ = KINDS[line["kind"]]
            start = contract("start", line["ChargePeriodStart"])
            key = (line["ResourceId"], start, line["ChargePeriodEnd"], fields["SkuId"], contract("cost", line["BilledCost"]))
            if seen_in.setdefault(key, source) == source:   # a line first found in an earlier bill is left out
                counted.append(line)
    months: dict[str, dict] = defaultdict(lambda: {"billed_total": [], "gpu_billed": [], "non_gpu_billed": [],
                                                   "unallocated": [], "tasks": defaultdict(lambda: ([], []))})
    for line in counted:
        cost = contract("cost", line["BilledCost"]) * RATES[contract("currency", line["BillingCurrency"])]
        task = contract("tags", line["Tags"])
        month = months[contract("start", line["ChargePeriodStart"]).astimezone(UTC).strftime("%Y-%m")]
        gpu = KINDS[line["kind"]][1]
        month["billed_total"].append(cost)
        month["gpu_billed" if gpu else "non_gpu_billed"].append(cost)
        if gpu and not task:
            month["unallocated"].append(cost)
        if task:
            month["tasks"][task][0 if gpu else 1].append(cost)
    return set(), {m: {k: (math.fsum(v) if k != "tasks" else {t: (math.fsum(g), math.fsum(n)) for t, (g, n) in v.items()})
                       for k, v in sums.items()} for m, sums in months.items()}


def expected_usage(samples: list[list[str]]) -> tuple[set, dict]:
    """The usage places errors must name, or per month i-gpu1's mean utilisation and peak memory share."""
    headers = [h.strip() for h in SMI_HEADER.split(",")]
    errors, months = set(), defaultdict(lambda: ([], [], []))
    for row, sample in enumerate(samples, start=2):
        month = TIMES.get(sample[0])
        if month is None:
            errors.add(("i-gpu1.csv", f"row {row}", headers[0]))
        values = []
        for column, (text, table) in enumerate(zip(sample[1:], (UTILS, MEMORY, MEMORY)), start=1):
            value = table[text] if text in table else float(text.split()[0]) * (MIB if column > 1 else 1)
            if value is None:
                errors.add(("i-gpu1.csv", f"row {row}", headers[column]))
            values.append(value)
        for bucket, value in zip(months[month], values):
            if value != "missing":
                bucket.append(value)
    if errors:
        return errors, {}
    figures = {}
    for month, (util, used, total) in months.items():
        share = max(used) / max(total) if used and total and max(total) > 0 else None
        figures[month] = (math.fsum(util) / len(util) if util else None, share)
    return set(), figures


PLACE = re.compile(r"^Error: (?P<file>[^!\s]+)(?:!(?P<row>row \d+) (?P<column>[^:]+):)?")


def places(output: str) -> set[tuple]:
    """(file, row, column) of each Error line; row and column None for an error about a whole file."""
    return {PLACE.match(line).group("file", "row", "column") for line in errors_in(output)}


# 25 generated cases (some 0.5 s of CPU each) and, always, the cases this fuzz found wrong once: a charge dated
# before 1900, one in December 9999, a bad BilledCost and Tags that are no JSON on one bill, a bill given twice.
@pytest.mark.slow
@settings(max_examples=25, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(edits=st.lists(line_edits, max_size=3), usage=st.lists(usage_edits, max_size=2),
       repeat=st.sampled_from([None, None, None, 0, 6]), again=st.sampled_from([None] * 6 + ["b3.csv", "b1.csv"]))
@example(edits=[("b1.csv", 0, "start", "1899-12-31")], usage=[], repeat=None, again=None)
@example(edits=[("b1.csv", 0, "start", "9999-12-15")], usage=[], repeat=None, again=None)
@example(edits=[("b1.csv", 1, "cost", "abc"), ("b1.csv", 2, "tags", "multitask")], usage=[], repeat=None, again=None)
@example(edits=[], usage=[], repeat=None, again="b1.csv")
def test_bills_and_usage_give_the_right_sums_or_errors_at_their_rows(tmp_path_factory, edits, usage, repeat, again):
    folder = tmp_path_factory.mktemp("fuzz-recon")
    files = {"b1.csv": bill_lines(B1), "b2.csv": bill_lines(B2)}
    if repeat is not None:  # a line twice in one bill: two charges, both counted
        files["b1.csv"].append(dict(files["b1.csv"][repeat]))
    for name, index, key, text in edits:
        lines = files[name]
        lines[index % len(lines)][COLUMN[key]] = text
    if again == "b3.csv":  # b1 again under another name: the same bill twice
        files["b3.csv"] = files["b1.csv"]
    for name, lines in files.items():
        with (folder / name).open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=HEADER, quoting=csv.QUOTE_ALL, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(lines)
    samples = [list(s) for s in SAMPLES]
    for row, column, text in usage:
        if text is not None:
            samples[row][column] = text
    (folder / "i-gpu1.csv").write_text("\n".join([SMI_HEADER, *(", ".join(s) for s in samples)]) + "\n")
    book = make_input(folder / "q3.xlsx", TASKS, extra_sheets={"FX": FX_SHEET})
    out, js = folder / "outputs" / "budget.xlsx", folder / "outputs" / "budget.json"
    args = ["build", str(book), "-o", str(out), "--json", str(js), "--usage", str(folder / "i-gpu1.csv")]
    for name in [*files, *(["b1.csv"] if again == "b1.csv" else [])]:  # b1.csv given twice
        args += ["--bills", str(folder / name)]
    result = CliRunner().invoke(main, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), (edits, result.exc_info)

    bill_errors, months = ({(again, None, None)}, {}) if again else expected_bills(files)
    usage_errors, utilisation = expected_usage(samples)
    errors = bill_errors | usage_errors
    event("built" if not errors else "refused")
    if errors:
        assert result.exit_code == 1, (edits, usage, result.output)
        assert places(result.output) == errors, (edits, usage, result.output)
        assert not out.parent.exists() or list(out.parent.iterdir()) == []
        return
    assert result.exit_code == 0, (edits, usage, result.output)
    recon = json.loads(js.read_text())["reconciliation"]
    assert set(recon) == set(months), edits
    for month, sums in months.items():
        got = recon[month]
        for key in ("billed_total", "gpu_billed", "non_gpu_billed", "unallocated"):
            assert got[key] == pytest.approx(sums[key], rel=1e-12, abs=1e-9), (month, key, edits)
        tasks = {t["task_id"]: (t["billed"], t["non_gpu_billed"]) for t in got["tasks"] if t["billed"] or
                 t["non_gpu_billed"]}
        wanted = {t: v for t, v in sums["tasks"].items() if any(v)}
        assert set(tasks) == set(wanted), (month, edits)
        for task, figures in wanted.items():
            assert tasks[task] == pytest.approx(figures, rel=1e-12, abs=1e-9), (month, task, edits)
        for resource in got["resources"]:
            if resource["resource_id"] == "i-gpu1" and month in utilisation:
                for got_value, wanted in zip((resource["avg_util_pct"], resource["mem_peak_share"]), utilisation[month]):
                    assert got_value == (None if wanted is None else pytest.approx(wanted, rel=1e-12)), (month, usage)
