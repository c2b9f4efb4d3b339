"""Regenerate budgetgen/data/prices.csv: the hand-entered offers it holds (the Chinese-market CNY rows) followed by
the USD offers derived from a price snapshot (gpu_prices.csv and row_flags.csv, see its README.md).

    python3 tools/make_prices.py [SNAPSHOT_FOLDER] [--catalog GPUS_CSV] [--out PRICES_CSV]

Defaults: /work/shared/data/prices, the package's gpus.csv and prices.csv. Rows whose source starts with
"price snapshot" are the derived ones and are replaced; every other row is kept as it is, in its order.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from budgetgen.catalog import gpus as catalog
from budgetgen.catalog import prices
from budgetgen.catalog.price_files import read_price_file


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("snapshot", nargs="?", type=Path, default=Path("/work/shared/data/prices"))
    parser.add_argument("--catalog", type=Path, default=ROOT / "budgetgen" / "data" / "gpus.csv")
    parser.add_argument("--out", type=Path, default=ROOT / "budgetgen" / "data" / "prices.csv")
    args = parser.parse_args()
    catalog.CATALOG_RESOURCE = args.catalog
    kept = [o for o in prices.read_offers(args.out) if not o.source.startswith(prices.SNAPSHOT_SOURCE)]
    derived = read_price_file(args.snapshot / "gpu_prices.csv", catalog.catalog_classes())
    prices.write_offers([*kept, *derived.offers], args.out)
    print(f"Wrote {args.out}: {len(kept)} kept, {len(derived.offers)} derived from {args.snapshot} "
          f"(flags: {derived.flags or 'none'}; labels not in the catalog: {', '.join(derived.skipped)})")


if __name__ == "__main__":
    main()
