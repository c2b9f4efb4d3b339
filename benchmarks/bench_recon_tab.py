"""Time a month of many GPU resources through the workbook: reconcile, write, and LibreOffice's recalculation.

The plan is the `budgetgen init` template's; its first month gets a bill of `--resources` GPU resources (a third
untagged, the rest on the template's tasks) with utilisation for each, so most are flagged and carry savings. The
Recon tab lists recon_top_resources of them (50), the month's Resources sheet the others.

    python3 benchmarks/bench_recon_tab.py --resources 100000
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from budgetgen.cli import main as cli
from budgetgen.io.reader import read_inputs
from budgetgen.plan.engine import plan_budget
from budgetgen.recon import plan_facts, plan_targets, reconcile
from budgetgen.recon.bill_sums import SUM_KEYS
from budgetgen.workbook import write_workbook

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import lo_recalc
from lo_recalc import is_error, recalc_many, soffice_path


def _timed_reads(seconds: list[float]):
    """lo_recalc.read_values timed into `seconds`: reading the recalculated file back is openpyxl's time, not
    LibreOffice's."""
    read = lo_recalc.read_values

    def timed(path):
        started = time.perf_counter()
        try:
            return read(path)
        finally:
            seconds.append(time.perf_counter() - started)
    return timed


def month_sums(month: str, tasks: list[str], resources: int, seed: int = 7) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The bill's sums (bill_sums.BillSums.sums' shape) of one month of GPU resources, and their usage."""
    rng = np.random.default_rng(seed)
    ids = np.char.add("i-0bench", np.arange(resources).astype(str))
    task = np.where(rng.random(resources) < 1 / 3, "", np.array(tasks)[rng.integers(0, len(tasks), resources)])
    start = pd.Timestamp(f"{month}-01", tz="UTC")
    sums = pd.DataFrame({
        "month": month, "resource_id": ids, "task_id": task, "is_gpu": True, "category": "gpu",
        "service_name": "Amazon Elastic Compute Cloud", "hours_unit": True, "commitment": "", "commitment_id": "",
        "commitment_type": "", "pricing_category": "", "billed": rng.uniform(10, 2000, resources).round(2),
        "quantity": rng.uniform(10, 720, resources).round(2), "lines": rng.integers(1, 720, resources),
        "first_charge": start, "last_charge": start + pd.Timedelta(days=27), "effective": np.nan,
        "effective_missing": 1,
    })
    usage = pd.DataFrame({"resource_id": ids, "month": month, "avg_util_pct": rng.uniform(0, 100, resources),
                          "mem_avg_gb": 10.0, "mem_peak_gb": rng.uniform(5, 24, resources), "mem_total_gb": 24.0,
                          "oom_events": rng.integers(0, 5, resources).astype(float)})
    return sums[[*SUM_KEYS, *(c for c in sums.columns if c not in SUM_KEYS)]], usage


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--resources", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        cli(["init", str(tmp / "in.xlsx")], standalone_mode=False)
        plan = plan_budget(read_inputs(tmp / "in.xlsx"))
        month = plan.months[0]
        sums, usage = month_sums(month, [tp.task.task_id for tp in plan.tasks], args.resources)
        planned, buffers = plan_targets(plan)
        s = plan.inputs.settings
        started = time.perf_counter()
        recon = reconcile(sums, usage, planned, buffers, s.low_util_threshold, s.oom_threshold,
                          s.variance_tolerance, facts=plan_facts(plan))
        reconciled = time.perf_counter() - started
        out = tmp / "out.xlsx"
        started = time.perf_counter()
        write_workbook(plan, out, recon=recon, billed_input={month: float(sums["billed"].sum())})
        written = time.perf_counter() - started
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        mr = recon[month]
        flagged = sum(1 for r in mr.resources if r.flags)
        print(f"{len(mr.resources):,} GPU resources in {month} ({flagged:,} flagged), achievable saving "
              f"{mr.achievable_saving:,.2f} {s.currency}")
        print(f"reconcile {reconciled:.1f} s, write {written:.1f} s, file {out.stat().st_size / 1e6:.1f} MB, "
              f"peak {peak:.0f} MB")
        if soffice_path() is None:
            print("LibreOffice (soffice) not installed: no recalculation")
            return
        reads: list[float] = []
        lo_recalc.read_values = _timed_reads(reads)
        started = time.perf_counter()
        values = recalc_many([out], tmp, timeout=1200)[out]
        recalculated = time.perf_counter() - started - sum(reads)
        tab = values[f"Recon {month}"]
        errors = [ref for sheet in (f"Recon {month}", f"Resources {month}") for ref, v in values.get(sheet, {}).items()
                  if is_error(v)]
        saving = next(v for ref, v in tab.items() if ref.startswith("B") and
                      tab.get("A" + ref[1:]) == "achievable saving")
        print(f"LibreOffice opened, recalculated and saved the workbook in {recalculated:.1f} s (reading the values "
              f"back with openpyxl {sum(reads):.1f} s more); "
              f"Checks D2 {values['Checks']['D2']}, achievable saving {saving:,.2f}, error cells {len(errors)}")


if __name__ == "__main__":
    main()
