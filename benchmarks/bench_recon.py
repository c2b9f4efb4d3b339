"""Time the reconcile step (sum_bills in DuckDB, then reconcile) on a generated 200,000-line FOCUS CSV with usage.

For bills of 1M, 10M and 30M lines against the bare DuckDB aggregation (the floor), see focus_bills.py:
    python3 benchmarks/focus_bills.py compare /tmp/bill1m /tmp/bill10m /tmp/bill30m --rounds 3
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from budgetgen.recon import DEFAULT_GPU_LINE_PATTERN, reconcile
from budgetgen.recon.bill_sums import BillSource, sum_bills

MONTHS = ("2026-07", "2026-08", "2026-09", "2026-10", "2026-11", "2026-12")
TASKS = tuple(f"T{n:02d}" for n in range(1, 41))
# (ChargeDescription, ServiceName, ServiceCategory, ConsumedUnit, unit price)
PRODUCTS = (
    ("$1.006 per On Demand Linux g5.xlarge Instance Hour", "Amazon Elastic Compute Cloud", "Compute", "Hours", 1.006),
    ("$32.77 per On Demand Linux p4d.24xlarge Instance Hour", "Amazon Elastic Compute Cloud", "Compute", "Hours", 32.77),
    ("$0.0116 per On Demand Linux t2.micro Instance Hour", "Amazon Elastic Compute Cloud", "Compute", "Hours", 0.0116),
    ("$0.08 per GB-month of General Purpose SSD (gp3)", "Amazon Elastic Compute Cloud", "Storage", "GB-Mo", 0.08),
    ("$0.023 per GB - first 50 TB / month of storage used", "Amazon Simple Storage Service", "Storage", "GB-Mo", 0.023),
    ("$0.09 per GB - first 10 TB / month data transfer out", "Amazon Elastic Compute Cloud", "Compute", "GB", 0.09),
    ("$0.005 per In-use public IPv4 address per hour", "Amazon Virtual Private Cloud", "Networking", "Hours", 0.005),
    ("$0.30 per metric-month", "AmazonCloudWatch", "Management and Governance", "Metrics", 0.30),
)


def focus_frame(lines: int, resources: int, seed: int = 7) -> pd.DataFrame:
    """A FOCUS-shaped bill: several months, `resources` resources, task tags on some, NULLs, mixed formats."""
    rng = np.random.default_rng(seed)
    product = rng.integers(0, len(PRODUCTS), resources)
    resource = rng.integers(0, resources, lines)
    picked = [PRODUCTS[i] for i in product[resource]]
    description, service, category, unit, price = (np.array(column) for column in zip(*picked))
    quantity = rng.uniform(0.01, 1.0, lines).round(6)
    day = rng.integers(1, 29, lines)
    hour = rng.integers(0, 24, lines)
    month = np.array(MONTHS)[rng.integers(0, len(MONTHS), lines)]
    start = np.char.add(np.char.add(month, "-"), np.char.zfill(day.astype(str), 2))
    start = np.where(rng.random(lines) < 0.5, np.char.add(start, [f" {h:02d}:00:00" for h in hour]),
                     np.char.add(start, [f"T{h:02d}:00:00Z" for h in hour]))
    task = np.array(TASKS)[rng.integers(0, len(TASKS), resources)][resource]
    tagged = (rng.random(resources) < 0.3)[resource]
    tags = np.where(tagged, [json.dumps({"task_id": t, "team": "ml"}) for t in task], "NULL")
    return pd.DataFrame({
        "BilledCost": (quantity * price.astype(float)).round(10),
        "BillingCurrency": "USD",
        "ChargeCategory": np.where(rng.random(lines) < 0.5, "Usage", "usage"),
        "ChargeDescription": description,
        "ChargeFrequency": np.where(rng.random(lines) < 0.5, "Usage-Based", "Usage-based"),
        "ChargePeriodStart": start,
        "ConsumedQuantity": quantity,
        "ConsumedUnit": unit,
        "EffectiveCost": (quantity * price.astype(float)).round(10),
        "ProviderName": "AWS",
        "RegionId": "us-east-1",
        "ResourceId": np.char.add("i-0bench", resource.astype(str)),
        "ResourceName": "NULL",
        "ResourceType": "instance",
        "ServiceCategory": category,
        "ServiceName": service,
        "SkuId": np.char.add("SKU", product[resource].astype(str)),
        "SubAccountId": "123456789012",
        "Tags": tags,
        "x_Operation": "RunInstances",
    })


def usage_frame(resources: int, seed: int = 7) -> pd.DataFrame:
    """Monthly utilisation of every resource, in read_usage's shape."""
    rng = np.random.default_rng(seed)
    ids = np.repeat(np.char.add("i-0bench", np.arange(resources).astype(str)), len(MONTHS))
    return pd.DataFrame({
        "resource_id": ids,
        "month": np.tile(MONTHS, resources),
        "avg_util_pct": rng.uniform(0, 100, len(ids)),
        "mem_avg_gb": rng.uniform(0, 20, len(ids)),
        "mem_peak_gb": rng.uniform(10, 24, len(ids)),
        "mem_total_gb": 24.0,
        "oom_events": rng.integers(0, 6, len(ids)).astype(float),
    })


def main() -> None:
    """Write the bill to a temp dir, then time reading and reconciling it."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--resources", type=int, default=1_000)
    args = parser.parse_args()
    planned = {t: dict.fromkeys(MONTHS, 500.0) for t in TASKS}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "focus.csv"
        focus_frame(args.lines, args.resources).to_csv(path, index=False)
        usage = usage_frame(args.resources)
        started = time.perf_counter()
        bills = sum_bills([BillSource(path, path.name)], "USD", DEFAULT_GPU_LINE_PATTERN, {}, ["A100 80G", "L4"])
        read_seconds = time.perf_counter() - started
        months = reconcile(bills.sums, usage, planned, dict.fromkeys(MONTHS, 1000.0), 0.20, 3, 0.10)
        total_seconds = time.perf_counter() - started
    resources = sum(len(m.resources) for m in months.values())
    print(f"{int(bills.sums['lines'].sum()):,} lines in {len(bills.sums):,} sums, {len(months)} months, "
          f"{resources:,} resource-months")
    print(f"sum_bills {read_seconds:.2f} s, reconcile {total_seconds - read_seconds:.2f} s, total {total_seconds:.2f} s")


if __name__ == "__main__":
    main()
