"""Writes templates/: the blank input workbooks (English and Chinese) `budgetgen init --date 2026-12-01` writes,
with the catalogs the package ships. Run after a change to the input sheets or the catalog:
`python3 tools/make_templates.py` (tests/test_templates.py says when it is due)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from budgetgen.io.template import write_templates

if __name__ == "__main__":
    for path in write_templates(ROOT / "templates"):
        print(f"wrote {path.relative_to(ROOT)}")
