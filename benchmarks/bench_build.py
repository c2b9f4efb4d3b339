"""Speed and memory of `budgetgen build` against the floor of the libraries it stands on.

    python benchmarks/bench_build.py            # 100 / 1,000 / 10,000 tasks; 10k / 100k / 1M bill lines
    python benchmarks/bench_build.py --quick    # 100 / 1,000 tasks; 10k / 100k lines
    python benchmarks/bench_build.py --tasks 10000 --lines 1000000 --rounds 3   # one size, the median
    python benchmarks/bench_build.py --tasks 10000 --lines 1000000 --keep /tmp/b10k   # and keep its files
    python benchmarks/bench_build.py --tasks 10000 --lines 1000000 --stages   # then one build's stages
    python benchmarks/bench_build.py --tasks 50000 --months 12 --floor   # 12 months; and the workbook's floor

It generates the inventories and FOCUS bills in a temporary folder, times the whole `budgetgen build`
process (wall and CPU seconds) with its peak memory, and times the floors on the same data:
- workbook: xlsxwriter alone (constant_memory, each formula through `store_formula`, each value through
  `write_string`/`write_number`, zipped at xlsxwriter's level) writing exactly the formulas (with their cached
  values) and the values budgetgen's workbook package wrote, in a plain grid. The ratios printed are budgetgen's
  workbook package against it: CPU seconds, and the file's size. budgetgen writes the Tasks and Candidates rows a
  row at a time (`ColumnBlock`) instead of through xlsxwriter's cell writer, and zips at a lower level, so it can
  be faster than this floor (and its file somewhat larger);
- bill: DuckDB's bare aggregation of the same CSV or Parquet file (focus_bills.floor).
"""

from __future__ import annotations

import argparse
import marshal
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import ClassVar
from xml.sax.saxutils import unescape

import numpy as np
import pandas as pd
import xlsxwriter
from focus_bills import floor

from budgetgen.api import build_budget
from budgetgen.io.reader import read_inputs
from budgetgen.plan.engine import plan_budget
from budgetgen.recon import DEFAULT_GPU_LINE_PATTERN
from budgetgen.recon.bill_sums import BillSource, sum_bills
from budgetgen.workbook import write_workbook
from budgetgen.workbook.book import Sheet, store_formula
from budgetgen.workbook.formats import cached

KINDS = ("finetune", "pretrain", "inference", "batch")
FIRST_MONTH = "2026-07"
MONTHS = ("2026-07", "2026-08", "2026-09")   # the bill's months (the plan's first three)


def make_inventory(path: Path, n: int, seed: int = 1, months: int = 3) -> None:
    """An inventory of n tasks of every kind over `months` plan months (USD plan, built-in prices converted)."""
    rnd = random.Random(seed)
    headers = ["task_id", "task", "kind", "model_params_b", "method", "train_tokens", "runs_per_month",
               "requests_per_day", "batch_requests", "tokens_per_request", "serving_hours_per_day", "concurrency",
               "cost_center"]
    wb = xlsxwriter.Workbook(str(path), {"constant_memory": True})
    ws = wb.add_worksheet("Settings")
    for r, row in enumerate([("setting", "value"), ("currency", "USD"), ("catalog_fx", 0.14),
                             ("period_start", FIRST_MONTH), ("period_months", months)]):
        ws.write_row(r, 0, row)
    ws = wb.add_worksheet("Tasks")
    ws.write_row(0, 0, headers)
    for i in range(n):
        kind = KINDS[i % 4]
        row = {"task_id": f"T{i:05d}", "task": f"workload {i}", "kind": kind, "cost_center": f"cc{i % 17}",
               "model_params_b": rnd.choice((1, 3, 7, 13, 34, 70))}
        if kind in ("finetune", "pretrain"):
            row["method"] = rnd.choice(("full", "lora", "qlora")) if kind == "finetune" else "full"
            if row["method"] == "full":
                row["model_params_b"] = min(row["model_params_b"], 13)
            row.update(train_tokens=rnd.choice((1e6, 1e7, 1e8)), runs_per_month=rnd.choice((0.5, 1, 2)))
        elif kind == "inference":
            row.update(method=rnd.choice(("fp16", "int8", "int4")), requests_per_day=rnd.choice((1e3, 1e4, 1e5)),
                       tokens_per_request=300, concurrency=16, serving_hours_per_day=rnd.choice((8, 24)))
        else:
            row.update(method=rnd.choice(("fp16", "int8", "int4")), batch_requests=1e4, tokens_per_request=300,
                       concurrency=32, runs_per_month=4)
        ws.write_row(i + 1, 0, [row.get(h) for h in headers])
    wb.close()


def make_bill(path: Path, lines: int, tasks: int, seed: int = 2) -> None:
    """A FOCUS bill of hourly lines over the plan's months: GPU instances tagged with tasks, storage, egress."""
    rng = np.random.default_rng(seed)
    resources = max(10, lines // 500)
    resource = rng.integers(0, resources, lines)
    gpu = resource % 3 != 0
    day = rng.integers(0, 28, lines)
    month = np.array(MONTHS)[rng.integers(0, len(MONTHS), lines)]
    tagged = gpu & (resource % 5 != 0)
    frame = pd.DataFrame({
        "BillingPeriodStart": [f"{m}-01 00:00:00" for m in month],
        "ChargePeriodStart": [f"{m}-{d + 1:02d} {h:02d}:00:00" for m, d, h in
                              zip(month, day, rng.integers(0, 24, lines), strict=True)],
        "BilledCost": np.round(rng.uniform(0.01, 5.0, lines), 6),
        "BillingCurrency": "USD",
        "ResourceId": [f"i-{r:06x}" for r in resource],
        "ServiceName": np.where(gpu, "Amazon Elastic Compute Cloud", "Amazon Simple Storage Service"),
        "ServiceCategory": np.where(gpu, "Compute", "Storage"),
        "ChargeCategory": "Usage",
        "ChargeDescription": np.where(gpu, "USD 1.006 per On Demand Linux g5.xlarge Instance Hour", "S3 storage"),
        "SkuId": np.where(gpu, "SKU-G5XLARGE", "SKU-S3"),
        "ConsumedQuantity": 1.0,
        "ConsumedUnit": np.where(gpu, "Hours", "GB-Mo"),
        "Tags": np.where(tagged, [f'{{"task_id": "T{r % max(tasks, 1):05d}"}}' for r in resource], "NULL"),
    })
    frame.to_csv(path, index=False)
    frame.to_parquet(path.with_suffix(".parquet"), index=False)


BUILD = [sys.executable, "-m", "budgetgen", "build"]
"""The build of the budgetgen this script imports (PYTHONPATH), not whichever `budgetgen` is on PATH."""


def timed_process(args: list[str]) -> tuple[float, float, float]:
    """Seconds, CPU seconds (user + system) and peak resident memory (MB) of one command, measured in a fresh
    parent process."""
    probe = ("import resource,subprocess,sys,time;t=time.perf_counter();"
             "r=subprocess.run(sys.argv[1:],stdout=subprocess.DEVNULL);"
             "u=resource.getrusage(resource.RUSAGE_CHILDREN);"
             "print(time.perf_counter()-t,u.ru_utime+u.ru_stime,u.ru_maxrss,r.returncode)")
    out = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, check=True).stdout
    seconds, cpu, rss_kb, code = out.split()
    if code != "0":
        raise SystemExit(f"build failed: {' '.join(args)}")
    return float(seconds), float(cpu), int(rss_kb) / 1024


class Recording:
    """Cells appended to a file in chunks (marshal), read back in order: the floor's input without holding millions
    of formulas in memory."""

    CHUNK = 100_000

    def __init__(self, path: Path):
        self.path, self.buffer, self.count = path, [], 0
        self.fh = path.open("wb")

    def add(self, item) -> None:
        self.buffer.append(item)
        if len(self.buffer) >= self.CHUNK:
            self.flush()

    def flush(self) -> None:
        if self.buffer:
            marshal.dump(self.buffer, self.fh)
            self.count += len(self.buffer)
            self.buffer = []

    def close(self) -> None:
        self.flush()
        self.fh.close()

    def __iter__(self):
        with self.path.open("rb") as fh:
            while True:
                try:
                    yield from marshal.load(fh)
                except EOFError:
                    return


class RecordingSheet(Sheet):
    """Records every formula and value cell as it goes into the file, so the floor can write the same cells."""

    formulas: ClassVar[Recording]
    values: ClassVar[Recording]

    def _write_cell(self, row, col, cell):
        kind = type(cell).__name__
        if kind == "RowCells":  # a row of budgetgen's ColumnBlock: its value and formula cells
            number = str(cell.row + 1)
            for formula, value in zip(cell.renderer._formulas, cell.values, strict=True):
                if formula is not None:
                    text = formula.replace("{r}", number).replace("{p}", str(cell.row)) if isinstance(formula, str) \
                        else number.join(formula)
                    RecordingSheet.formulas.add((unescape(text), cached(value)))
                elif value is not None and value != "":
                    RecordingSheet.values.add(value)
        elif kind == "Formula":
            RecordingSheet.formulas.add((cell.formula, cell.value))
        elif kind == "Number":
            RecordingSheet.values.add(cell.number)
        elif kind == "String":
            RecordingSheet.values.add(cell.string if isinstance(cell.string, str) else str(cell.string))
        return super()._write_cell(row, col, cell)


def workbook_part(inventory: Path, out: Path) -> tuple[float, Recording, Recording]:
    """budgetgen's workbook alone (in process, recording a second time for the floor): CPU seconds, formulas,
    values."""
    plan = plan_budget(read_inputs(inventory))
    start = time.process_time()
    write_workbook(plan, out)
    seconds = time.process_time() - start
    RecordingSheet.formulas = Recording(out.with_name("formulas.marshal"))
    RecordingSheet.values = Recording(out.with_name("values.marshal"))
    original = xlsxwriter.Workbook.add_worksheet
    xlsxwriter.Workbook.add_worksheet = lambda wb, name=None, cls=None: original(wb, name, RecordingSheet)
    try:
        write_workbook(plan, out.with_name("recorded.xlsx"))
    finally:
        xlsxwriter.Workbook.add_worksheet = original
        RecordingSheet.formulas.close()
        RecordingSheet.values.close()
    out.with_name("recorded.xlsx").unlink()
    return seconds, RecordingSheet.formulas, RecordingSheet.values


def workbook_floor(out: Path, formulas: Recording, values: Recording, width: int = 40) -> float:
    """xlsxwriter alone writing the same formulas (with their cached values) and the same values in a grid: CPU
    seconds."""
    start = time.process_time()
    wb = xlsxwriter.Workbook(str(out), {"constant_memory": True})
    wb.use_zip64()  # a large inventory's formulas in one sheet pass 4 GB of XML
    ws = wb.add_worksheet("Floor")
    i = 0
    for formula, value in formulas:
        row, col = divmod(i, width)
        store_formula(ws, row, col, formula, None, value)
        i += 1
    for value in values:
        row, col = divmod(i, width)
        if isinstance(value, str):
            ws.write_string(row, col, value)
        else:
            ws.write_number(row, col, value)
        i += 1
    wb.close()
    return time.process_time() - start


def floor_ratios(inventory: Path, folder: Path) -> tuple[float, float, float, int]:
    """budgetgen's workbook package against the xlsxwriter floor: writer CPU s, floor CPU s, file size ratio,
    formulas."""
    writer_s, formulas, values = workbook_part(inventory, folder / "w.xlsx")
    floor_s = workbook_floor(folder / "f.xlsx", formulas, values)
    size = (folder / "w.xlsx").stat().st_size / (folder / "f.xlsx").stat().st_size
    for name in ("w.xlsx", "f.xlsx", "formulas.marshal", "values.marshal"):
        (folder / name).unlink()
    return writer_s, floor_s, size, formulas.count


def bill_part(bill: Path) -> tuple[float, float]:
    """sum_bills (the reconcile step's reading) against the floor: DuckDB's bare aggregation of the same file."""
    start = time.perf_counter()
    floor(str(bill))
    floor_s = time.perf_counter() - start
    start = time.perf_counter()
    sum_bills([BillSource(bill, bill.name)], "USD", DEFAULT_GPU_LINE_PATTERN, {}, ["RTX 4090", "A100 80G"])
    return time.perf_counter() - start, floor_s


def stage_times(inventory: Path, bills: list[Path], out: Path) -> None:
    """One build in this process, wall and CPU seconds of each stage (between build_budget's progress messages)."""
    last = [time.perf_counter(), time.process_time(), "start"]

    def progress(message: str) -> None:
        now, cpu = time.perf_counter(), time.process_time()
        print(f"  {last[2][:40]:40s} {now - last[0]:6.1f} s wall {cpu - last[1]:6.1f} s CPU", file=sys.stderr)
        last[:] = [now, cpu, message]

    start, cpu = time.perf_counter(), time.process_time()
    build_budget(inventory, out, bills=bills, progress=progress)
    progress("end")
    print(f"  in process: {time.perf_counter() - start:.1f} s wall, {time.process_time() - cpu:.1f} s CPU",
          file=sys.stderr)


TABLE = ("| tasks | months | bill lines | build s | build CPU s | peak MB | workbook CPU s | floor CPU s | CPU ratio "
         "| size ratio | formulas |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")


def one_size(folder: Path, tasks: int, lines: int, months: int = 3, rounds: int = 1, with_floor: bool = True,
             stages: bool = False) -> None:
    """The whole build of one inventory (and bill), `rounds` times (each time and peak memory, and the median), then
    budgetgen's workbook package against the xlsxwriter floor: one row of TABLE."""
    inventory, bill = folder / f"t{tasks}m{months}.xlsx", folder / f"b{lines}.csv"
    make_inventory(inventory, tasks, months=months)
    bills = []
    if lines:
        make_bill(bill, lines, tasks)
        bills = ["--bills", str(bill.with_suffix(".parquet"))]
    runs = [timed_process([*BUILD, str(inventory), "-o", str(folder / "out.xlsx"), *bills, "--quiet"])
            for _ in range(rounds)]
    for seconds, cpu, peak in runs:
        print(f"  {tasks:,} tasks x {months} months + {lines:,} lines: {seconds:.1f} s, CPU {cpu:.1f} s, "
              f"peak {peak:,.0f} MB", file=sys.stderr)
    seconds, cpu, peak = sorted(runs)[len(runs) // 2]
    (folder / "out.xlsx").unlink()
    row = f"| {tasks:,} | {months} | {lines:,} | {seconds:.1f} | {cpu:.1f} | {peak:,.0f} |"
    if with_floor:
        writer_s, floor_s, size, formulas = floor_ratios(inventory, folder)
        row += f" {writer_s:.1f} | {floor_s:.1f} | {writer_s / floor_s:.2f} | {size:.2f} | {formulas:,} |"
    else:
        row += " | | | | |"
    print(row, flush=True)
    if stages:
        stage_times(inventory, [bill.with_suffix(".parquet")] if lines else [], folder / "stages.xlsx")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller sizes only")
    parser.add_argument("--tasks", type=int, help="one size only: this many tasks (with --lines)")
    parser.add_argument("--lines", type=int, help="one size only: this many bill lines (Parquet)")
    parser.add_argument("--months", type=int, default=3, help="plan months of the inventories (default 3)")
    parser.add_argument("--rounds", type=int, default=1, help="with --tasks: builds to take the median of")
    parser.add_argument("--floor", action="store_true", help="with --tasks: also the workbook against its floor")
    parser.add_argument("--keep", type=Path, help="with --tasks: generate into this folder and keep the files")
    parser.add_argument("--stages", action="store_true", help="with --tasks: then one build in process, by stage")
    args = parser.parse_args()
    if args.tasks:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) if args.keep is None else args.keep
            folder.mkdir(parents=True, exist_ok=True)
            print(TABLE)
            one_size(folder, args.tasks, args.lines or 0, args.months, args.rounds, args.floor, args.stages)
        return
    task_sizes = (100, 1_000) if args.quick else (100, 1_000, 10_000)
    bill_sizes = (10_000, 100_000) if args.quick else (10_000, 100_000, 1_000_000)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        print(TABLE)
        for tasks, lines in zip(task_sizes, bill_sizes, strict=True):
            one_size(folder, tasks, lines, args.months)
        print()
        print("| bill lines | format | sum_bills s | DuckDB floor s | ratio |")
        print("|---:|---|---:|---:|---:|")
        for lines in bill_sizes:
            for suffix in (".csv", ".parquet"):
                bill = (folder / f"b{lines}.csv").with_suffix(suffix)
                ours, floor_s = bill_part(bill)
                print(f"| {lines:,} | {suffix[1:]} | {ours:.2f} | {floor_s:.2f} | {ours / floor_s:.2f} |", flush=True)


if __name__ == "__main__":
    main()
