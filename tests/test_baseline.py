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
got their sources, no value changed. Once more for model v3's last part (issue 22: per-card activations,
`optimizer`, latency targets): new Tasks input columns (optimizer, ttft_ms, tpot_ms), calculated columns and
Assumptions rows move cells; the one value that moved is ML01's `vram_gb`, 132.8 -> 128.5 GB (the architecture's
checkpointed micro-batch replaces the per-parameter allowance on every card), still 2 A800 80G, no cost changed. Once more for providers on the plan (issue 21): Candidates gained the
provider and region columns (AR:AS); Order's lines moved into a block per provider (cn-market, then market's
H200) with a title and a subtotal each, the total and the blocks below it a few rows down; About's reading
guide for Order and Candidates says so; no value changed, the JSON unchanged. Then a warning names the sample bills' months outside the plan (2027-01,
2027-02: reconciled against no planned cost): the JSON's warnings and Summary's warning list (A41) one longer,
no value changed. Then for reconciliation with money to act on: the Recon tabs'
non-GPU block by the Extras' five categories with planned and not-planned columns, five more total rows (non-GPU
not planned, credits, refunds, saving from idle cards, achievable saving), a credits row in like for like, the
cards-to-drop column replaced by idle cards (M) and a to-attribute-or-stop column (P), the tasks' GPU resources (R);
the JSON's resources' cards_to_drop became idle_cards, new month keys; no billed, planned or total value moved.
Then the recon_top_resources setting: Assumptions' settings from row 29 one down (About's list too), and the Recon
tabs list the flagged resources first by money at stake (2027-01: i-orphan, 300 to attribute or stop, first). Then for demand ramps, scenarios and unit costs: the Demand and Scenarios
sheets, Summary's scenario selector (A4:B4), Monthly's plan-total column (I, the months one column right), Tasks'
growth_per_month, api_price_per_m_tokens and unit-cost columns (the columns after them to the right), the
constants Million and Thousand on Assumptions (the rows below two down), the JSON's `scenarios`, `cards_by_month`
and `unit_costs`; no value changed (the sample has no growth and no Scenarios sheet). Then the GPUs sheet's
price_change_per_year column (blank in the sample: the columns after it one right) and the constant MonthsPerYear
on Assumptions (the rows below one down); no value changed. Then the Budgets sheet and Summary's months over
budget (D4, G4, 0: the sample has no Budgets sheet); no value changed. Then owned-hardware TCO: the settings pue,
colocation_per_kw_month, residual_value and discount_rate (neutral defaults: Assumptions and About rows below them
down), BuyVsRent's break-even utilisation column (L) and the JSON's `break_even_utilisation`; no value changed. Then the
Demand sheet's ramp block (blank inputs: the blocks after it three columns right); no value changed. Then Summary was laid out to print on two pages: the by-tier table's
months moved down the rows, into the month table's G:J, caps and months over cap under them, the four over-cap
warnings joined on one line, by kind and by cost center below; Recon tabs' titles split over A1:A2; no value
changed. Then the live choice added Tasks' cheaper GPU now and its saving, Candidates' saving against the
chosen GPU and each task's best so far, Tasks' gpu named in the input, and a Checks row (0 tasks; the Recon
tie-outs one row lower); no value changed. Then consumer cards were no longer chosen for online services
(the consumer_online setting, a row on Assumptions and About: the rows below one down): the RTX 4090 candidates of
ML03 and ML05 are excluded (their JSON monthly_cost null); no chosen GPU and no total moved with the tests' offers. Then About's word table gained the Recon flags and
statuses (shown in the workbook's language): the sentence texts below it eight rows down. Then services with
peak_factor 1 and under a fifth of their capacity to spare were warned: KB01 (13%) and ML05, a warning each (the
JSON's task warnings, Summary's warning lines); no number moved. Then the Order's
commitments block lost its note column (the note once under the block's total, merged across it) and Summary
gained the selector row above the buffer note (the month table one row down); Order's commitment header 'committed cards'
became 'cards' (C35); no value changed. Then the daily view: the recon_spike_factor
setting (Assumptions from row 31 one down, About's words and list longer), each Recon tab's daily GPU table at its
foot (2027-01 A55:E59, 2027-02 A50:E51: one billed day per task, so no median and no spike) and the JSON's
`daily`; no value moved. Then issue 30's totals and warnings: the Recon tabs' totals gained the month's
`commitments planned (Commitments)` row after the planned GPU total (the rows below one down; 0 in the sample's
months outside the plan) and like for like's GPU row became `GPU and commitments`, Checks gained the priced-now
row before the Recon tie-outs, Summary's and the JSON's warnings are one line per kind (ML03 and ML05's no-failover,
KB01 and ML05's peak headroom, the tier advice grouped; the bills' months first), and the JSON's reconciliation
months end with planned_commitments, planned_gpu_all, billed_gpu_all and planned_all; no total moved. Then issue 30's plan: a blank tier is chosen per card over the tiers
its kind may use and each tier priced at its cheapest eligible offer (offer_currency auto: this CNY plan buys in the
Chinese market, so the H200's converted USD offer is gone and ML01 is planned on 2 A100 80G again, ML01 900.89 a month
in August and September: the period total 153,518.06 -> 154,153.15, as test_i18n derives), Candidates' `tier` and
`offer` columns (the provider and region columns gone), the GPUs sheet's four `<tier>_offer` columns and the
offer_currency, providers and regions settings, Commitments' replaced-price column, and the Order rebuilt as a block
per provider (reservations, then rent net of them) with its totals down to the plan total and two checks in place of
one. Then large inventories (issue 33): Candidates' shorter formulas (the model figures read once per task
on Tasks, a training run's cards a column of its own), and bad input round four (issue 34); no total moved. Then About's reading guide says Candidates lists a large inventory's chosen and cheapest cards; no
value moved. Then the sample frozen in tests/data/q3.xlsx (the shipped one follows the shipped catalog), recon_memory_limit
blank by default (About's B39 '1GB' -> '') and the unpriced-cards warning naming the tasks each card was left out of
(JSON warnings[1] and Summary's warning list), and the JSON's new `order` and `budgets`; no value changed. Then issue 30's printed Recon summary: each Recon tab opens with its one-page summary (like for like,
usage and variance, the actions per flag, the bill's coverage, a note), the detail below it (by task from row 43 of
2027-01 and 2027-02), and the JSON's reconciliation months end with `currencies` (empty: the sample bill is in CNY);
the recon_memory_limit cells blank as the scale merge made its default; no value moved. Then model v4's training at scale (issue 31): the scale_free_cards and scale_efficiency settings
(Assumptions and About rows below them two down), TrainFp8Efficiency 0.75 -> 0.93 and the speedup formula's loss
beyond scale_free_cards; the sample trains on at most a few cards in bf16, so no value moved. Then model v4's
decode settings (kv_read_efficiency, tp_reference_params_b, tp_size_exponent: Assumptions and About rows three
down) and the tensor-parallel factor by model size: ML03 (Llama-3.3-70B fp8 on 2 A100 80G) 398.9 -> 378.9 output
tokens/s a replica, still one replica, no cost moved; its L40S candidate needs 20 cards instead of 16. Then the
GPUs sheet's training_efficiency column (blank in the sample: the columns after it one right); no value moved.
Then recon_memory_limit's help on Assumptions (D33): blank is 1GB, not a quarter of the machine; no value
moved. Then model v4's tensor-parallel loss by each card's share of the model (tp_reference_params_b 405 -> 50
billions a card, tp_size_exponent 0.16 -> 0.4), the BytesFp4 constant (Assumptions A106, the constants below it one
down) and the train_fp4_efficiency setting (Assumptions and About rows below it one down): ML03 (Llama-3.3-70B fp8
on 2 A100 80G, 35.3B a card) tp 0.807 -> 0.830, 378.9 -> 389.5 output tokens/s a replica, still one replica, and
its candidates' speeds with it; no cost moved. Then the checks computed once from the plan (issue 32): the JSON's
new `checks` (the Checks sheet's rows, the Recon tie-outs last, each with its computed and expected value, currency
and whether it passes); no cell changed. Then model v4's vocabulary (issue 31): the Models vocab_size column
(Tasks: model: vocab_size before the experts columns, the columns after it one right; Models M, source to N), the
logit_bytes and fallback_vocab_size settings (Assumptions and About rows below them two down), the
EmbeddingMatrices constant and lora_workspace_gb 1.5 -> 0: the training rows' VRAM counts a micro-batch's bf16
logits and a QLoRA base's bf16 embedding and head (KB02 QLoRA 7.08 -> 7.82 GB, KB03 18.33 -> 17.45, ML01
128.54 -> 129.06 GB); their cards and no cost moved."""

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
