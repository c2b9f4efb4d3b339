"""Calculation model v4, decode: long-context runs, a tensor-parallel series of a 70B model and TensorRT-LLM v0.6.1's
H100 FP8 runs (among them Falcon-180B on 8 cards at batch 1,024) against published figures
(`data/published_v4_serving.csv`, `data/published_v4_serving_h100.csv`, each row with its source). `fit` rows set
TpReferenceParams and TpSizeExponent and show that KV-cache reads need no efficiency of their own (KvReadEfficiency
1); `held_out` rows were only checked. Each row goes through the whole product (input workbook -> reader -> engine)
and must land in the serving band, 0.67-1.5x the published output tokens/s of the replica, or be a known miss
below, with its reason."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from test_published_v3 import BANDS
from test_serving_engine import _gpu_sheet, _models_sheet, _plan, _rows, _rows_by_id

DATA = Path(__file__).parent / "data"
ROWS = _rows(DATA / "published_v4_serving.csv") + _rows(DATA / "published_v4_serving_h100.csv")
# A row listed here that lands in its band fails the test too: the list says what the model cannot do, no more.
KNOWN_MISSES = {
    "V10": "Llama 3.3 70B FP4 on 2 B200 at 128/4,096: the published series itself gains 1.38x from 1 to 2 cards and "
           "2.03x from 2 to 4, which no loss per doubling follows; 1 card is over-stated too (V09, 1.33) (1.63 "
           "before model v4, 1.57 with the loss by model size)",
    "V24": "TensorRT-LLM v0.6.1's Llama-2-70B on 4 H100, 128/2,048 at batch 480: 2.2x; the same table's 128-token "
           "answers on 2 cards (T05, T07 in published_serving.csv) are in band at 1.12, its 2,048-token answers of "
           "a 7B model on one card too (V22, V23): what its long answers on several cards lost is not modelled",
    "V25": "the same table's Llama-2-70B on 2 H100 at 2,048/2,048 and batch 64: 1.6x (as V24)",
}


def _task(row: dict) -> dict:
    return {"task_id": row["id"], "kind": "inference", "model": row["model"], "gpu": row["gpu"],
            "cards": int(row["cards"]), "method": row["precision"], "prompt_tokens": float(row["prompt"]),
            "tokens_per_request": float(row["output"]),
            "concurrency": float(row["concurrency"]) if row["concurrency"] else None,
            "requests_per_day": 1000, "tier": "on_demand"}


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, dict]:
    assert {r["kv_cache_dtype"] for r in ROWS} == {"fp8"}   # one plan: the KV-cache width is a setting
    tmp = tmp_path_factory.mktemp("v4serve")
    plan = _plan(tmp, [_task(r) for r in ROWS], settings={"kv_cache_dtype": "fp8"},
                 gpus=_gpu_sheet(sorted({r["gpu"] for r in ROWS})),
                 extra_sheets={"Models": _models_sheet({r["model"] for r in ROWS})})
    return _rows_by_id(plan)


def _ratio(row: dict, results: dict) -> float:
    return results[row["id"]]["tokens_per_sec_used"] / float(row["published"])


def test_every_published_v4_serving_row_is_in_band_or_a_known_miss(results, capsys):
    low, high = BANDS["serve"]
    with capsys.disabled():
        print("\nrow  split     engine/published  label")
        for r in ROWS:
            print(f"{r['id']:<5}{r['split']:<10}{_ratio(r, results):>8.2f}  {r['label']}")
    missed = {r["id"] for r in ROWS if not low <= _ratio(r, results) <= high}
    assert missed == set(KNOWN_MISSES), {i: round(_ratio(r, results), 2) for r in ROWS
                                         if (i := r["id"]) in missed ^ set(KNOWN_MISSES)}


def test_the_set_has_sourced_long_context_and_70b_tp8_rows_fit_and_held_out():
    assert {r["split"] for r in ROWS} == {"fit", "held_out"}
    assert all(r["source"] and "2026-12-04" in r["source"] and float(r["published"]) > 0 for r in ROWS)
    assert len({r["id"] for r in ROWS}) == len(ROWS) == 28
    assert sum(r["model"] == "Llama-3.3-70B" and r["cards"] == "8" for r in ROWS) == 3
    assert sum(float(r["prompt"]) >= 5000 and r["split"] == "held_out" for r in ROWS) >= 5
    assert any(r["precision"] == "fp8" and r["concurrency"] == "1024" and r["split"] == "fit" for r in ROWS)


def _tp_by_hand(params_b: float, cards: int) -> float:
    """0.85 a doubling (NVLink), the doublings counted MAX(1, (50 x cards / params)^0.4) times."""
    return 0.85 ** (math.log2(cards) * max(1, (50 * cards / params_b) ** 0.4))


def test_a_70b_model_on_8_cards_loses_more_per_doubling_than_405b(results):
    """TpReferenceParams 50B a card, TpSizeExponent 0.4: Llama-3.3-70B (70.6B) on 8 cards holds 8.8B a card and
    counts its 3 doublings (50 x 8 / 70.6)^0.4 = 2.00 times each, 0.85^6.00 = 0.377 (model v3: 0.85^3 = 0.614;
    by model size alone 0.525); on 2 cards (35.3B a card) 1.15 times, 0.830; Llama-3.1-405B (405.8B) on 8 H100
    holds 50.7B a card and keeps 0.85^3."""
    assert _tp_by_hand(70.6, 8) == pytest.approx(0.377, abs=0.001)
    assert _tp_by_hand(70.6, 2) == pytest.approx(0.830, abs=0.001)
    tp8 = [r["id"] for r in ROWS if r["model"] == "Llama-3.3-70B" and r["cards"] == "8"]
    assert all(results[i]["tp"] == pytest.approx(_tp_by_hand(70.6, 8)) for i in tp8)
    assert results["V02"]["tp"] == pytest.approx(_tp_by_hand(70.6, 2))
    assert results["V15"]["tp"] == pytest.approx(0.85 ** 3)        # 405B on 8 H100: no extra loss
    assert results["V01"]["tp"] == 1                                 # one card: no tensor parallelism
    # model v3 (0.85 a doubling at every size) over-stated these three 1.42-1.48x; by model size 1.31-1.39x
    assert all(1.0 < _ratio(r, results) < 1.2 for r in ROWS if r["id"] in tp8)


def test_fp8_falcon_180b_on_8_h100_at_batch_1024_is_in_band(results):
    """V26, TensorRT-LLM v0.6.1's Falcon-180B FP8 on 8 H100 at batch 1,024 (128 in / 2,048 out, 724 tokens/s a
    card): compute-bound, 1.67x fast in model v3 (0.85^3), 1.58x with the loss by model size alone (0.574). Each
    card holds 22.5B: (50 x 8 / 180)^0.4 = 1.376 times 3 doublings, 0.85^4.13 = 0.511. On 4 cards (45B a card, T09
    of published_serving.csv) 1.043 times 2, 0.712."""
    row = results["V26"]
    assert row["batch"] == 1024 and row["t_cmp"] > row["t_mem"]    # compute-bound at batch 1,024
    assert row["tp"] == pytest.approx(_tp_by_hand(180, 8)) and row["tp"] == pytest.approx(0.511, abs=0.001)
    assert results["V27"]["tp"] == pytest.approx(_tp_by_hand(180, 4)) == pytest.approx(0.712, abs=0.001)
    by_hand = 2 * 180e9 * 1024 / (8 * 1979e12 * 0.80 * 0.60 * _tp_by_hand(180, 8))
    assert row["t_cmp"] == pytest.approx(by_hand)
    assert 1.3 < _ratio(next(r for r in ROWS if r["id"] == "V26"), results) <= 1.5


def test_fp4_weights_are_read_with_their_nvfp4_block_scales(results):
    """An NVFP4 weight is 4 bits plus an FP8 scale per 16: 0.5625 bytes. Llama-3.3-70B FP4 on one B200 (V01):
    70.6B x 0.5625 = 39.7 GB of weights, read every step at 0.70 of 7,700 GB/s with the FP8 cache of its batch."""
    row = results["V01"]
    assert row["bytes_per_param"] == 0.5625
    kv = row["batch"] * row["kv_bytes_per_token"] * (128 + 128 * 0.5)
    assert row["t_mem"] == pytest.approx((70.6e9 * 0.5625 + kv) / (7700e9 * 0.70))


def test_a_long_context_decode_reads_its_cache_at_the_weights_share(results):
    """Llama-3.1-8B, 20,000 in / 2,000 out on one H100 (V13, 1,351 tokens/s published): the engine batches 43
    sequences of 21,000 cached tokens (mean) at 65,536 fp8 bytes a token, 59 GB a step on top of 8 GB of weights,
    all at 0.70 of 3,350 GB/s."""
    row = results["V13"]
    kv_tok = 2 * 32 * 8 * 128 * 1
    assert row["kv_bytes_per_token"] == kv_tok
    by_hand = (8.0e9 * 1 + row["batch"] * kv_tok * (20000 + 2000 * 0.5)) / (3350e9 * 0.70)
    assert row["t_mem"] == pytest.approx(by_hand)
    assert 0.67 <= _ratio(next(r for r in ROWS if r["id"] == "V13"), results) <= 1.5


def test_the_2_card_fp4_miss_is_a_super_linear_step_no_loss_per_doubling_follows(results):
    """V10 (Llama 3.3 70B FP4 on 2 B200, 128 / 4,096) stays a known miss: the published series gains 1.38x from 1
    card to 2 and 2.03x from 2 to 4 at this length, more than the cards doubled; the engine's replica never gains
    more than twice from a doubling (its tensor-parallel factor only loses), so it cannot meet both steps."""
    published = {r["id"]: float(r["published"]) for r in ROWS}
    assert published["V10"] / published["V09"] == pytest.approx(1.38, abs=0.005)
    assert published["V11"] / published["V10"] == pytest.approx(2.03, abs=0.005)
    engine = {i: results[i]["tokens_per_sec_used"] for i in ("V09", "V10", "V11")}
    assert engine["V11"] / engine["V10"] < 2 and engine["V10"] / engine["V09"] < 2
    assert _ratio(next(r for r in ROWS if r["id"] == "V10"), results) > 1.5 > \
        _ratio(next(r for r in ROWS if r["id"] == "V11"), results)
