"""Does a large budget open and recalculate in LibreOffice, and how long and how much memory does it take?

    python benchmarks/bench_libreoffice.py --tasks 10000 --months 12
    python benchmarks/bench_libreoffice.py --workbook /tmp/b10k/out.xlsx      # a budget built already

It builds the benchmark inventory's budget (bench_build.make_inventory, `budgetgen build`), then has headless
LibreOffice open it, recalculate every formula (the recalculation profile of tests/lo_recalc.py: always recalculate
on load) and save it as .xlsx, timing that soffice process (wall and CPU seconds, peak memory of its processes); a
canary workbook converted in the same run proves it recalculated.
Last it reads both files sheet by sheet and compares every cell LibreOffice computed with the value budgetgen
cached: numbers to 1e-9 relative, texts exactly, blanks as empty texts; it prints how many differ and the first few.
"""

from __future__ import annotations

import argparse
import math
import shutil
import sys
import tempfile
from itertools import zip_longest
from pathlib import Path

import openpyxl

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))   # the recalculation profile the LibreOffice tests use
from bench_build import BUILD, make_inventory, timed_process
from lo_recalc import _CANARY_RIGHT, _write_canary, read_values, soffice_path, write_profile


def recalculate(workbook: Path, folder: Path, timeout: float) -> tuple[Path, float, float, float]:
    """LibreOffice opens `workbook`, recalculates it and saves it to `folder`/out: the file, seconds, CPU seconds
    and peak MB of the soffice processes."""
    soffice = soffice_path()
    if soffice is None:
        raise SystemExit("LibreOffice (soffice) not installed")
    profile, out = folder / "profile", folder / "out"
    write_profile(profile)
    out.mkdir(exist_ok=True)
    canary = folder / "canary.xlsx"   # a formula cached wrong on purpose: right after the run only if recalculated
    _write_canary(canary)
    args = ["timeout", str(int(timeout)), soffice, f"-env:UserInstallation={profile.resolve().as_uri()}",
            "--headless", "--norestore", "--nologo", "--nodefault", "--nolockcheck", "--convert-to", "xlsx",
            "--outdir", str(out), str(canary), str(workbook)]
    seconds, cpu, peak = timed_process(args)
    result = out / workbook.name
    if not result.is_file():
        raise SystemExit(f"LibreOffice wrote no {result}")
    if read_values(out / canary.name)["Canary"]["B1"] != _CANARY_RIGHT:
        raise SystemExit("LibreOffice kept the cached values: it did not recalculate")
    return result, seconds, cpu, peak


def _plain(value):
    if value is None or value == "":
        return ""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    return value


def _same(a, b) -> bool:
    a, b = _plain(a), _plain(b)
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return a == b


def compare(cached: Path, recalculated: Path, shown: int = 5) -> tuple[int, int, list]:
    """Cells compared, cells that differ, and the first `shown` differences (sheet, cell, cached, LibreOffice)."""
    a = openpyxl.load_workbook(cached, read_only=True, data_only=True)
    b = openpyxl.load_workbook(recalculated, read_only=True, data_only=True)
    cells, differ, first = 0, 0, []
    for ws in a.worksheets:
        other = b[ws.title]
        for r, (row_a, row_b) in enumerate(zip_longest(ws.iter_rows(values_only=True),
                                                       other.iter_rows(values_only=True), fillvalue=()), start=1):
            for c, (x, y) in enumerate(zip_longest(row_a, row_b), start=1):
                cells += 1
                if not _same(x, y):
                    differ += 1
                    if len(first) < shown:
                        first.append((ws.title, f"{openpyxl.utils.get_column_letter(c)}{r}", x, y))
    return cells, differ, first


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--months", type=int, default=12)
    parser.add_argument("--workbook", type=Path, help="a budget built already (instead of --tasks)")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds LibreOffice may take")
    parser.add_argument("--keep", type=Path, help="work in this folder and keep the files")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        workbook = args.workbook
        if workbook is None:
            inventory = folder / f"t{args.tasks}m{args.months}.xlsx"
            make_inventory(inventory, args.tasks, months=args.months)
            workbook = folder / "budget.xlsx"
            seconds, cpu, peak = timed_process([*BUILD, str(inventory), "-o", str(workbook), "--quiet"])
            print(f"build: {seconds:.1f} s, CPU {cpu:.1f} s, peak {peak:,.0f} MB", file=sys.stderr)
        size = workbook.stat().st_size / 1e6
        result, seconds, cpu, peak = recalculate(workbook, folder, args.timeout)
        print(f"LibreOffice: {seconds:.1f} s, CPU {cpu:.1f} s, peak {peak:,.0f} MB", file=sys.stderr)
        cells, differ, first = compare(workbook, result)
        print("| workbook MB | LibreOffice open + recalculate + save s | CPU s | peak MB | cells compared | differ |")
        print("|---:|---:|---:|---:|---:|---:|")
        print(f"| {size:,.0f} | {seconds:.1f} | {cpu:.1f} | {peak:,.0f} | {cells:,} | {differ:,} |")
        for difference in first:
            print("  differs:", difference)
        if args.keep is None:
            shutil.rmtree(folder / "profile", ignore_errors=True)


if __name__ == "__main__":
    main()
