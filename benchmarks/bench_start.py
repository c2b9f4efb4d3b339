"""How fast the CLI starts: `budgetgen --help` and `budgetgen validate` on a one-task inventory, each a fresh process.

    python benchmarks/bench_start.py            # 7 rounds each, the median
    python benchmarks/bench_start.py --rounds 15

Prints, per command, the CPU seconds (user + system) of the whole process, the interpreter's floor (`python -c
pass`), the CPU seconds of importing budgetgen's CLI module in that process, and the heavy libraries loaded (pandas,
DuckDB, openpyxl, xlsxwriter, numpy, sqlglot). The target: the import under 0.3 s, and neither command loading pandas
or DuckDB (validate reads the inventory with openpyxl, which loads numpy where it is installed).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import openpyxl

HEAVY = ("pandas", "duckdb", "openpyxl", "xlsxwriter", "numpy", "sqlglot")
# Run in the measured process: the import of budgetgen.cli timed alone, then the command, then what it loaded.
PROBE = """
import json, resource, sys, time
start = time.process_time()
import budgetgen.cli
imported = time.process_time() - start
sys.argv = ["budgetgen", *sys.argv[1:]]
try:
    budgetgen.cli.main()
except SystemExit:
    pass
use = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"import": imported, "cpu": use.ru_utime + use.ru_stime,
                  "heavy": [m for m in HEAVY if m in sys.modules]}), file=sys.stderr)
""".replace("HEAVY", repr(HEAVY))


def one_task(path: Path) -> Path:
    """A one-task inventory (the reader's least work)."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Tasks"
    ws.append(["task_id", "kind", "model_params_b", "requests_per_day", "tokens_per_request"])
    ws.append(["T1", "inference", 7, 1000, 200])
    wb.save(path)
    return path


def run(args: list[str], cwd: Path) -> dict:
    """One fresh process (in `cwd`, so that the budgetgen measured is PYTHONPATH's, not the current folder's)."""
    out = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, check=True, cwd=cwd)
    return json.loads(out.stderr.strip().splitlines()[-1])


def floor() -> float:
    probe = "import resource;u=resource.getrusage(resource.RUSAGE_SELF);print(u.ru_utime+u.ru_stime)"
    return float(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        book = one_task(Path(tmp) / "one.xlsx")
        base = statistics.median(floor() for _ in range(args.rounds))
        print("| command | process CPU s | interpreter floor s | import of budgetgen.cli CPU s | heavy libraries |")
        print("|---|---:|---:|---:|---|")
        for label, command in (("budgetgen --help", ["--help"]), ("budgetgen validate (1 task)", ["validate", str(book)])):
            runs = [run(command, Path(tmp)) for _ in range(args.rounds)]
            cpu = statistics.median(r["cpu"] for r in runs)
            imported = statistics.median(r["import"] for r in runs)
            print(f"| {label} | {cpu:.2f} | {base:.2f} | {imported:.3f} | {', '.join(runs[0]['heavy']) or 'none'} |",
                  flush=True)


if __name__ == "__main__":
    main()
