"""Same outputs: the sample plan built now equals the committed baseline (tests/data/baseline, written by
make_baseline.py --write): the JSON results and every cell's cached value, the GPUs sheet's by column name.

History: written before the tier and kind records (issue 20), which left it unchanged; rewritten once on
purpose when prices got their currencies and the catalog its sourced offers (issue 21): the sample's FX sheet
and the USD offers moved ML01 to an MI300X and added the FX table and the GPUs sheet's currency columns; once
more for the two verdict prompts BuyVsRent gained (A9:I10: no on-demand price, no power figure), no value moved;
once more when reconciliation read commitments the FOCUS way (issue 21): new cells only (Recon tabs: EffectiveCost,
compared with plan and PricingCategory columns, the commitment lines block; Assumptions: the tiers' FOCUS
PricingCategory, the off_plan_pricing action), the FX table one row lower for that action, no value changed; once more for calculation model v3 (issue 22): its
new Tasks, Candidates and GPUs columns and Assumptions rows, KB02 and KB03 72.93 a month cheaper (LoRA MFU, QLoRA
FLOPs), the period total 153,791.55 -> 153,518.06 (273.49 = 72.93 x 3 months x 1.25).;
once more for commitments (issue 21): the Commitments sheet, the GPUs reserved_1y/3y columns, BuyVsRent's best
commitment rate (J:K), Order's commitments block, the JSON's `commitments` and month `commitments` (0 in the
sample: a 3-month plan commits nothing) were added; Summary's month table gained the commitments column C
(extras, buffer and total one column right), Assumptions and About two setting rows (the discounts: the rows
below two down), Checks a tie-out before the Recon ones and Order the block before the sign-off; no value
changed, the JSON's only new keys. Then the two PCIe settings' meanings (D50, D52)
got their sources, no value changed. Then Summary was laid out to print on two pages: the by-tier table's
months moved down the rows, into the month table's G:J, caps and months over cap under them, the four over-cap
warnings joined on one line, by kind and by cost center below; Recon tabs' titles split over A1:A2; no value
changed. Then the live choice added Tasks' cheaper GPU now and its saving, Candidates' saving against the
chosen GPU and each task's best so far, Tasks' gpu named in the input, and a Checks row (0 tasks; the Recon
tie-outs one row lower); no value changed. Then consumer cards were no longer chosen for online services
(the consumer_online setting, a row on Assumptions and About: the rows below one down): the RTX 4090 candidates of
ML03 and ML05 are excluded (their JSON monthly_cost null); no chosen GPU and no total moved with the tests' offers. Then About's word table gained the Recon flags and
statuses (shown in the workbook's language): the sentence texts below it eight rows down. Then services with
peak_factor 1 and under a fifth of their capacity to spare were warned: KB01 (13%) and ML05, a warning each (the
JSON's task warnings, Summary's warning lines); no number moved."""

from __future__ import annotations

import gzip
import json
import math
import sys
from pathlib import Path

import pytest

BASELINE = Path(__file__).parent / "data" / "baseline"
sys.path.insert(0, str(BASELINE))
import make_baseline


def _close(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return a == b


def _differences(old, new, path=""):
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new)):
            if key not in new:
                yield f"{path}/{key}: gone"
            elif key not in old:
                yield f"{path}/{key}: new"
            else:
                yield from _differences(old[key], new[key], f"{path}/{key}")
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new)):
            yield from _differences(a, b, f"{path}[{i}]")
    elif not _close(old, new):
        yield f"{path}: {old!r} -> {new!r}"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[dict, dict]:
    results, cells = make_baseline.build_sample(tmp_path_factory.mktemp("baseline"))
    return json.loads(json.dumps(results, sort_keys=True, default=str)), cells


@pytest.fixture(scope="module")
def baseline() -> dict:
    with gzip.open(BASELINE / "q3.json.gz", "rt", encoding="utf-8") as fh:
        return json.load(fh)


def test_results_json_unchanged(built, baseline):
    assert list(_differences(baseline["results"], built[0])) == []


def _by_header(cells: dict[str, object]) -> dict[str, object]:
    """A sheet's cells keyed by row and column name (the header text before its unit), so that a column added
    in between moves no value."""
    from openpyxl.utils.cell import coordinate_from_string

    heads = {}
    for ref, value in cells.items():
        col, row = coordinate_from_string(ref)
        if row == 1:
            heads[col] = str(value).split(" (")[0]
    out = {}
    for ref, value in cells.items():
        col, row = coordinate_from_string(ref)
        out[f"{row}:{heads.get(col, col)}"] = heads[col] if row == 1 else value  # a header's unit may change
    return out


def test_every_cell_unchanged(built, baseline):
    old, new = dict(baseline["cells"]), dict(built[1])
    old["GPUs"], new["GPUs"] = _by_header(old["GPUs"]), _by_header(new["GPUs"])
    assert list(_differences(old, new)) == []
