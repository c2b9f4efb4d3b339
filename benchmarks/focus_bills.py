"""Generate large FOCUS bills in chunks (a folder of Parquet parts, or one CSV) and time the DuckDB floor.

The floor is the bare aggregation the reconciliation needs, run by DuckDB on the same files with the
same memory limit: per invoice month x resource x task x GPU class x service category, the sums of
BilledCost and ConsumedQuantity, the line count and the first and last charge time.

    python3 benchmarks/focus_bills.py generate --lines 30000000 --out /tmp/bill30m
    python3 benchmarks/focus_bills.py floor /tmp/bill30m
    python3 benchmarks/focus_bills.py recon /tmp/bill30m          # budgetgen's reconcile step alone
    python3 benchmarks/focus_bills.py compare /tmp/bill1m /tmp/bill10m /tmp/bill30m --rounds 3
    python3 benchmarks/focus_bills.py generate --lines 5000000 --format csv --out /tmp/bill5m.csv
    python3 benchmarks/focus_bills.py limited /tmp/bill5m.csv --address-space 2048   # a build under 2 GB
    python3 benchmarks/focus_bills.py generate --lines 30000000 --resources 40000 --tag-keys 12 --out /tmp/b30m
    python3 benchmarks/focus_bills.py build /tmp/b30m    # whole builds: --bills, and --bill-sums on the query's result

`compare` runs the floor and the reconcile step interleaved, each in a fresh process (its peak RSS is the
whole process's), and prints the README's table. `build` times whole `budgetgen build` processes with default
settings (a 40-task inventory, bench_build.make_inventory, whose first task ids the bill's Tags name): with the
bill's lines (`--bills`), and with the result of `budgetgen bill-sql`'s query run over the same lines by DuckDB as a
warehouse would (`--bill-sums`; the query's own time is printed apart), against the floor with the memory limit a
build takes by default; in wall and CPU seconds (user + system; DuckDB groups on 2 threads) and peak memory.
"""

from __future__ import annotations

import argparse
import functools
import json
import resource
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

MONTHS = ("2026-07", "2026-08", "2026-09")
TASKS = tuple(f"T{n:05d}" for n in range(40))   # bench_build.make_inventory's first 40 task ids
CHUNK = 1_000_000
# (ChargeDescription, ServiceName, ServiceCategory, ConsumedUnit, unit price)
PRODUCTS = (
    ("$1.006 per On Demand Linux g5.xlarge Instance Hour", "Amazon Elastic Compute Cloud", "Compute", "Hours", 1.006),
    ("$32.77 per On Demand Linux p4d.24xlarge Instance Hour", "Amazon Elastic Compute Cloud", "Compute", "Hours", 32.77),
    ("$0.0116 per On Demand Linux t2.micro Instance Hour", "Amazon Elastic Compute Cloud", "Compute", "Hours", 0.0116),
    ("$0.08 per GB-month of General Purpose SSD (gp3)", "Amazon Elastic Compute Cloud", "Storage", "GB-Mo", 0.08),
    ("$0.023 per GB - first 50 TB / month of storage used", "Amazon Simple Storage Service", "Storage", "GB-Mo", 0.023),
    ("$0.09 per GB - first 10 TB / month data transfer out", "Amazon Elastic Compute Cloud", "Networking", "GB", 0.09),
    ("$0.005 per In-use public IPv4 address per hour", "Amazon Virtual Private Cloud", "Networking", "Hours", 0.005),
    ("$0.30 per metric-month", "AmazonCloudWatch", "Management and Governance", "Metrics", 0.30),
)
GPU_PATTERN = r"(?i)\b(g4dn|g5g?|g6e?|p3|p4de?|p5)\.|\bgpus?\b"


def chunk_table(lines: int, resources: int, seed: int, tag_keys: int = 2) -> pa.Table:
    """One chunk of a FOCUS-shaped bill: hourly lines of `resources` resources, some tagged with a task.

    tag_keys: the keys of each Tags object. 2: task_id (30% of the resources, else no Tags) and team; more: every
    resource has Tags, its own (a Name and further keys whose values vary by resource), task_id on 30% of them."""
    rng = np.random.default_rng(seed)
    product = np.random.default_rng(0).integers(0, len(PRODUCTS), resources)  # the same per resource in every chunk
    task_of = np.random.default_rng(1).integers(0, len(TASKS), resources)
    tagged_res = np.random.default_rng(2).random(resources) < 0.3
    res = rng.integers(0, resources, lines)
    prod = product[res]
    price = np.array([p[4] for p in PRODUCTS])[prod]
    quantity = rng.uniform(0.01, 1.0, lines).round(6)
    month = rng.integers(0, len(MONTHS), lines)
    day = rng.integers(1, 29, lines)
    hour = rng.integers(0, 24, lines)
    start_us = (np.array([np.datetime64(f"{m}-01", "us") for m in MONTHS])[month]
                + (day - 1) * np.timedelta64(86_400_000_000, "us") + hour * np.timedelta64(3_600_000_000, "us"))
    if tag_keys <= 2:
        tag_texts = ["NULL"] + [json.dumps({"task_id": t, "team": "ml"}) for t in TASKS]
        tags = coded(np.where(tagged_res[res], task_of[res] + 1, 0), tag_texts)
    else:
        tags = coded(res, resource_tag_texts(resources, tag_keys))
    cost = (quantity * price).round(10)
    zeros = np.zeros(lines, dtype=np.int32)
    return pa.table({
        "BilledCost": cost,
        "BillingCurrency": coded(zeros, ["USD"]),
        "ChargeCategory": coded(zeros, ["Usage"]),
        "ChargeDescription": coded(prod, [p[0] for p in PRODUCTS]),
        "ChargePeriodStart": pa.array(start_us, pa.timestamp("us", tz="UTC")),
        "ChargePeriodEnd": pa.array(start_us + np.timedelta64(3_600_000_000, "us"), pa.timestamp("us", tz="UTC")),
        "ConsumedQuantity": quantity,
        "ConsumedUnit": coded(prod, [p[3] for p in PRODUCTS]),
        "EffectiveCost": cost,
        "ProviderName": coded(zeros, ["AWS"]),
        "ResourceId": coded(res, [f"i-0bench{r}" for r in range(resources)]),
        "ServiceCategory": coded(prod, [p[2] for p in PRODUCTS]),
        "ServiceName": coded(prod, [p[1] for p in PRODUCTS]),
        "SkuId": coded(prod, [f"SKU{i}" for i in range(len(PRODUCTS))]),
        "Tags": tags,
    })


def coded(indices: np.ndarray, values: list[str]) -> pa.DictionaryArray:
    """A text column as a dictionary of `values` and each line's index into it."""
    return pa.DictionaryArray.from_arrays(pa.array(indices, pa.int32()), pa.array(values, pa.string()))


@functools.cache
def resource_tag_texts(resources: int, keys: int) -> list[str]:
    """Every resource's Tags text (resource_tags), the same in every chunk."""
    task_of = np.random.default_rng(1).integers(0, len(TASKS), resources)
    tagged = np.random.default_rng(2).random(resources) < 0.3
    return [resource_tags(r, TASKS[task_of[r]] if tagged[r] else None, keys) for r in range(resources)]


def resource_tags(resource: int, task: str | None, keys: int) -> str:
    """A resource's Tags: `keys` keys (task_id among them when it has a task), values that vary by resource."""
    tags = {"task_id": task} if task else {}
    tags.update({"Name": f"node-{resource}", "team": f"team{resource % 23}", "env": ("prod", "dev")[resource % 2],
                 "owner": f"user{resource % 997}", "cluster": f"k8s-{resource % 31}"})
    n = 0
    while len(tags) < keys:
        tags[f"label{n}"] = f"v{resource % (7 + n)}"
        n += 1
    return json.dumps(dict(list(tags.items())[:keys]))


def generate(lines: int, out: Path, fmt: str, resources: int, tag_keys: int = 2) -> None:
    """Write `lines` bill lines in chunks: Parquet parts in the folder `out`, or one CSV file `out`."""
    writer = None
    if fmt == "parquet":
        out.mkdir(parents=True, exist_ok=True)
    done, part = 0, 0
    while done < lines:
        n = min(CHUNK, lines - done)
        table = chunk_table(n, resources, seed=part, tag_keys=tag_keys)
        if fmt == "parquet":
            pq.write_table(table, out / f"part-{part:05d}.parquet")
        else:
            table = table.cast(pa.schema([pa.field(f.name, pa.string() if pa.types.is_dictionary(f.type) else f.type)
                                          for f in table.schema]))
            if writer is None:
                writer = pacsv.CSVWriter(str(out), table.schema)
            writer.write_table(table)
        done += n
        part += 1
        print(f"  {done:,} lines", file=sys.stderr)
    if writer is not None:
        writer.close()


def floor(source: str, memory_limit: str = "1GB") -> dict:
    """The bare DuckDB aggregation of a bill folder/file/glob: seconds, groups and peak RSS of this process."""
    import duckdb

    path = Path(source)
    if path.is_dir():
        pattern = str(path / "*.parquet")
    else:
        pattern = source
    reader = "read_parquet" if pattern.endswith(".parquet") else "read_csv_auto"
    started, cpu = time.perf_counter(), time.process_time()
    con = duckdb.connect(config={"memory_limit": memory_limit, "threads": 2, "temp_directory": spill_folder()})
    rows = con.execute(f"""
        SELECT strftime(CAST(ChargePeriodStart AS TIMESTAMP), '%Y-%m') AS month, ResourceId,
               json_extract_string(NULLIF(Tags, 'NULL'), '$.task_id') AS task_id,
               regexp_matches(coalesce(ChargeDescription, '') || ' ' || coalesce(SkuId, ''), '{GPU_PATTERN}') AS gpu,
               ServiceCategory,
               sum(BilledCost) AS billed, sum(ConsumedQuantity) AS quantity, count(*) AS lines,
               min(ChargePeriodStart) AS first, max(ChargePeriodStart) AS last
        FROM {reader}(?)
        GROUP BY ALL
    """, [pattern]).fetchall()
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"seconds": round(seconds, 2), "cpu": round(cpu, 2), "groups": len(rows), "peak_mb": round(peak_mb)}


def recon(source: str, memory_limit: str = "1GB") -> dict:
    """budgetgen's reconcile step on a bill: sum_bills (DuckDB) then reconcile with a month of utilisation for
    every resource (so flags, idle cards, savings and the daily spikes are worked out); seconds (the usage frame's making left out),
    groups, the most GPU resources in a month, peak RSS."""
    import pandas as pd

    from budgetgen.recon import DEFAULT_GPU_LINE_PATTERN, reconcile
    from budgetgen.recon.bill_sums import BillSource, sum_bills

    started = time.perf_counter()
    bills = sum_bills([BillSource(source, Path(source).name)], "USD", DEFAULT_GPU_LINE_PATTERN, {},
                      ["A100 80G", "H100 80G", "L4"], memory_limit=memory_limit)
    summed = time.perf_counter() - started
    pairs = bills.sums[["resource_id", "month"]].drop_duplicates()
    rng = np.random.default_rng(3)
    usage = pd.DataFrame({"resource_id": pairs["resource_id"].to_numpy(), "month": pairs["month"].to_numpy(),
                          "avg_util_pct": rng.uniform(0, 100, len(pairs)), "mem_avg_gb": 10.0,
                          "mem_peak_gb": rng.uniform(5, 24, len(pairs)), "mem_total_gb": 24.0,
                          "oom_events": rng.integers(0, 5, len(pairs)).astype(float)})
    planned = {t: dict.fromkeys(MONTHS, 1000.0) for t in TASKS}
    started = time.perf_counter()
    months = reconcile(bills.sums, usage, planned, dict.fromkeys(MONTHS, 500.0), 0.2, 3, 0.1, daily=bills.daily)
    seconds = summed + time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"seconds": round(seconds, 2), "groups": len(bills.sums), "days": len(bills.daily), "months": len(months),
            "resources": max(len(m.resources) for m in months.values()), "peak_mb": round(peak_mb)}


def child(command: str, source: str, memory_limit: str, address_space: int | None = None) -> dict:
    """One measurement in a fresh process (optionally under an address-space limit in bytes)."""
    import subprocess

    limit = (f"import resource;resource.setrlimit(resource.RLIMIT_AS,({address_space},{address_space}));"
             if address_space else "")
    code = (f"{limit}import json,sys;sys.path.insert(0,{str(Path(__file__).parent)!r});import focus_bills;"
            f"print(json.dumps(focus_bills.{command}({source!r},{memory_limit!r})))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    if done.returncode:
        return {"error": (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]}
    return json.loads(done.stdout[done.stdout.rindex("{"):].strip())


def compare(sources: list[str], rounds: int, memory_limit: str) -> None:
    """Floor and reconcile step interleaved, `rounds` times each; the medians as a Markdown table."""
    print("| bill | GPU resources a month | reconcile step s | peak MB | DuckDB floor s | floor peak MB | ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for source in sources:
        ours, floors = [], []
        for _ in range(rounds):
            floors.append(child("floor", source, memory_limit))
            ours.append(child("recon", source, memory_limit))
            print(f"  {source}: floor {floors[-1]}, recon {ours[-1]}", file=sys.stderr, flush=True)
        o, f = (sorted(r, key=lambda x: x.get("seconds", 1e9))[len(r) // 2] for r in (ours, floors))
        print(f"| {source} | {o.get('resources', 0):,} | {o['seconds']:.1f} | {o['peak_mb']:,} | {f['seconds']:.1f} | "
              f"{f['peak_mb']:,} | "
              f"{o['seconds'] / f['seconds']:.2f} |", flush=True)


def spill_folder() -> str:
    """A temporary folder for DuckDB to spill to, removed when this process ends (DuckDB's default is ./.tmp)."""
    import atexit
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix="focus-bills-")
    atexit.register(shutil.rmtree, folder, True)
    return folder


def parquet_glob(source: str) -> str:
    return str(Path(source) / "*.parquet") if Path(source).is_dir() else source


def warehouse_sums(source: str, out: Path, memory_limit: str) -> tuple[float, int]:
    """`budgetgen bill-sql`'s DuckDB query run over a Parquet bill as a warehouse runs it (the FOCUS columns the bill
    lacks as NULL, timestamps in UTC), its result written to `out` as Parquet: seconds, and the most distinct
    resources in a month."""
    import duckdb

    from budgetgen.recon.bill_sql import FOCUS_COLUMNS, grouping_sql

    started = time.perf_counter()
    con = duckdb.connect(config={"memory_limit": memory_limit, "threads": 2, "temp_directory": spill_folder()})
    con.execute("SET TimeZone = 'UTC'")
    relation = f"read_parquet('{parquet_glob(source)}')"
    have = {c for c, *_ in con.execute(f"DESCRIBE SELECT * FROM {relation}").fetchall()}
    absent = "".join(f", NULL::VARCHAR AS {c}" for c in FOCUS_COLUMNS if c not in have)
    con.execute(f"CREATE VIEW focus_bill AS SELECT *{absent} FROM {relation}")
    con.execute(f"COPY ({grouping_sql('duckdb').rstrip(';')}) TO '{out}' (FORMAT parquet)")
    seconds = time.perf_counter() - started
    (resources,), = con.execute(f"SELECT max(n) FROM (SELECT count(DISTINCT resource_id) AS n FROM '{out}' "
                                "GROUP BY month)").fetchall()
    con.close()
    return seconds, resources


def build(sources: list[str], rounds: int, memory_limit: str | None) -> None:
    """Whole builds with default settings, `--bills` and `--bill-sums`, against the floor, `rounds` times each
    (fresh processes, interleaved); the medians as a Markdown table."""
    import tempfile

    sys.path.insert(0, str(Path(__file__).parent))
    from bench_build import BUILD, make_inventory, timed_process

    from budgetgen.recon.bill_sums import machine_memory_limit

    memory_limit = memory_limit or machine_memory_limit()
    print(f"floor memory limit {memory_limit}", file=sys.stderr)
    print("| bill | resources a month | floor s (CPU s) | floor peak MB | `--bills` s (CPU s) | peak MB | ratio "
          "(CPU ratio) | `--bill-sums` s (CPU s) | peak MB | ratio (CPU ratio) | query s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        inventory = folder / "inventory.xlsx"
        make_inventory(inventory, len(TASKS))
        for source in sources:
            sums = folder / "sums.parquet"
            query_s, resources = warehouse_sums(source, sums, memory_limit)
            floors, lines, summed = [], [], []
            for _ in range(rounds):
                floors.append(child("floor", source, memory_limit))
                lines.append(timed_process([*BUILD, str(inventory), "-o", str(folder / "out.xlsx"), "--bills", source,
                                            "--quiet"]))
                summed.append(timed_process([*BUILD, str(inventory), "-o", str(folder / "out.xlsx"), "--bill-sums",
                                             str(sums), "--quiet"]))
                print(f"  {source}: floor {floors[-1]}, --bills {lines[-1]}, --bill-sums {summed[-1]}", file=sys.stderr,
                      flush=True)
            f = sorted(floors, key=lambda x: x["seconds"])[len(floors) // 2]
            cells = [f"{source} | {resources:,} | {f['seconds']:.1f} ({f['cpu']:.1f}) | {f['peak_mb']:,}"]
            for runs in (lines, summed):
                seconds, cpu, peak = sorted(runs)[len(runs) // 2]
                cells.append(f"{seconds:.1f} ({cpu:.1f}) | {peak:,.0f} | {seconds / f['seconds']:.2f} "
                             f"({cpu / f['cpu']:.2f})")
            print(f"| {' | '.join(cells)} | {query_s:.1f} |", flush=True)


def limited(bill: str, address_space_mb: int) -> None:
    """A whole build with this bill in a child process under an address-space limit (ulimit -v): its exit
    code, time, peak memory and last line; it must build or end in a clean `Error:` line, never abort."""
    import subprocess
    import tempfile

    sys.path.insert(0, str(Path(__file__).parent))
    from bench_build import make_inventory

    with tempfile.TemporaryDirectory() as tmp:
        inventory = Path(tmp) / "inventory.xlsx"
        make_inventory(inventory, 100)
        limit = address_space_mb * 1024 * 1024
        code = (f"import resource,runpy,sys;resource.setrlimit(resource.RLIMIT_AS,({limit},{limit}));"
                f"sys.argv=['budgetgen','build',{str(inventory)!r},'-o',{str(Path(tmp) / 'out.xlsx')!r},"
                f"'--bills',{bill!r}];runpy.run_module('budgetgen',run_name='__main__')")
        probe = ("import resource,subprocess,sys,time;t=time.perf_counter();"
                 "r=subprocess.run(sys.argv[1:],capture_output=True,text=True);"
                 "print(round(time.perf_counter()-t,1),resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss//1024,"
                 "r.returncode);print((r.stdout+r.stderr).strip().splitlines()[-3:])")
        done = subprocess.run([sys.executable, "-c", probe, sys.executable, "-c", code], capture_output=True,
                              text=True, check=False)
        print(done.stdout.strip() or done.stderr.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="write a bill of --lines lines")
    gen.add_argument("--lines", type=int, required=True)
    gen.add_argument("--out", type=Path, required=True)
    gen.add_argument("--format", choices=("parquet", "csv"), default="parquet")
    gen.add_argument("--resources", type=int, default=2_000)
    gen.add_argument("--tag-keys", type=int, default=2, help="keys of each Tags object (more than 2: every resource "
                     "has Tags of its own)")
    fl = sub.add_parser("floor", help="time the bare DuckDB aggregation of a bill")
    fl.add_argument("source")
    fl.add_argument("--memory-limit", default="1GB")
    rc = sub.add_parser("recon", help="time budgetgen's reconcile step on a bill")
    rc.add_argument("source")
    rc.add_argument("--memory-limit", default="1GB")
    cp = sub.add_parser("compare", help="floor and reconcile step interleaved, in fresh processes")
    cp.add_argument("sources", nargs="+")
    cp.add_argument("--rounds", type=int, default=3)
    cp.add_argument("--memory-limit", default="1GB")
    bd = sub.add_parser("build", help="whole builds, --bills and --bill-sums, against the floor")
    bd.add_argument("sources", nargs="+", help="Parquet bills (folders of parts)")
    bd.add_argument("--rounds", type=int, default=1)
    bd.add_argument("--memory-limit", help="the floor's and the query's (default: what a build takes by default)")
    lm = sub.add_parser("limited", help="a whole build with this bill under an address-space limit")
    lm.add_argument("bill")
    lm.add_argument("--address-space", type=int, default=2048, help="MB (ulimit -v)")
    args = parser.parse_args()
    if args.command == "limited":
        limited(args.bill, args.address_space)
        return
    if args.command == "generate":
        generate(args.lines, args.out, args.format, args.resources, args.tag_keys)
    elif args.command == "build":
        build(args.sources, args.rounds, args.memory_limit)
    elif args.command == "compare":
        compare(args.sources, args.rounds, args.memory_limit)
    else:
        print(json.dumps({"floor": floor, "recon": recon}[args.command](args.source, args.memory_limit)))


if __name__ == "__main__":
    main()
