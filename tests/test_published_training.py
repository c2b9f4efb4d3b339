"""Calculation model v4, training: FP8 runs and runs above 4,096 cards against published figures
(`data/published_v4_training.csv`, each row with its source). Rows marked `fit` set TrainFp8Efficiency,
ScaleFreeCards and ScaleEfficiency; `held_out` rows were kept aside and only checked. Every row goes through the
whole product (input workbook -> reader -> engine) and must land in the training band, 0.75-1.35x the published
GPU-hours."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from test_published_v3 import BANDS
from test_serving_engine import _gpu_sheet, _plan, _rows, _rows_by_id

DATA = Path(__file__).parent / "data"
ROWS = _rows(DATA / "published_v4_training.csv")


def _task(row: dict) -> dict:
    size = {"model": row["model"]} if row["model"] else {"model_params_b": float(row["params_b"])}
    return {"task_id": row["id"], "kind": "pretrain", **size, "method": row["method"],
            "train_precision": row["train_precision"], "gpu": row["gpu"], "cards": int(row["cards"]),
            "train_tokens": float(row["train_tokens"]), "deadline_days": 3650}


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, dict]:
    tmp = tmp_path_factory.mktemp("v4train")
    plan = _plan(tmp, [_task(r) for r in ROWS], settings={"max_cards": 100_000},
                 gpus=_gpu_sheet(sorted({r["gpu"] for r in ROWS})))
    return _rows_by_id(plan)


def _ratio(row: dict, results: dict) -> float:
    return results[row["id"]]["compute_gpu_hours"] / float(row["published"])


def test_every_published_training_row_is_in_band(results, capsys):
    low, high = BANDS["train"]
    with capsys.disabled():
        print("\nrow  split     engine/published  label")
        for r in ROWS:
            print(f"{r['id']:<5}{r['split']:<10}{_ratio(r, results):>8.2f}  {r['label']}")
    missed = {r["id"]: round(_ratio(r, results), 2) for r in ROWS if not low <= _ratio(r, results) <= high}
    assert missed == {}


def test_the_set_has_sourced_fit_and_held_out_rows_above_4096_cards_and_in_fp8():
    assert {r["split"] for r in ROWS} == {"fit", "held_out"}
    assert all(r["source"] and float(r["published"]) > 0 for r in ROWS)
    assert any(int(r["cards"]) > 4096 and r["split"] == "held_out" for r in ROWS)
    assert any(r["train_precision"] == "fp8" and r["model"] == "Llama-3.1-405B" for r in ROWS)


def test_an_fp8_405b_run_by_hand(results):
    """T01, Megatron-Bridge's 405B FP8 on 1,024 H100 (292 tokens/s a card, 711 TFLOP/s of 6N): the FP8 peak 1,979
    at 0.93 x MFU 0.40, the speedup 1 + 1,023 x 0.95 (below ScaleFreeCards: no loss at scale)."""
    per_card = 1979e12 * 0.93 * 0.40 * (1 + 1023 * 0.95) / 1024        # 699 TFLOP/s a card, before 6N
    hours = 6 * 405.8e9 * 1e12 / (per_card * 3600)
    assert results["T01"]["compute_gpu_hours"] == pytest.approx(hours)
    published_per_card = 6 * 405.8e9 * 292 / 1e12                       # 711 TFLOP/s
    assert hours / 951_294 == pytest.approx(published_per_card / (per_card / 1e12), rel=1e-3)
    assert 0.95 < hours / 951_294 < 1.05    # model v3 (TrainFp8Efficiency 0.75): 1.24 long


def test_a_run_above_4096_cards_loses_speed_per_card_as_published(results):
    """Llama 3 405B: 430 TFLOP/s a card on 8,192 H100 and 400 on 16,384, 0.930 a doubling; the engine keeps
    ScaleEfficiency (0.93) a doubling beyond 4,096 cards: 0.93 on 8,192, 0.93^2 on 16,384."""
    def per_card(tid):
        row = results[tid]
        return row["speedup"] / row["cards_per_run"]
    flat = 1 - 0.95 / 8192                        # (1 + (n - 1) x 0.95) / n at 8,192 cards, before the loss
    assert per_card("T04") == pytest.approx((1 + 8191 * 0.95) / 8192 * 0.93)
    assert per_card("T05") / per_card("T04") == pytest.approx(400 / 430, abs=0.005)
    assert per_card("T04") == pytest.approx(0.95 * 0.93, rel=1e-3) and flat > 0.99
    # GPU-hours grow with the card count: the same 1T tokens cost more on 16,384 cards than on 8,192
    assert results["T05"]["compute_gpu_hours"] / results["T04"]["compute_gpu_hours"] == pytest.approx(1 / 0.93, rel=2e-3)


def test_up_to_4096_cards_no_loss_at_scale(results):
    """MT-NLG on 2,240 and 3,360 A100 (H03, H04) and Falcon on 4,096 (H02): below ScaleFreeCards the per-card
    speed is the flat scaling alone."""
    for tid in ("H02", "H03", "H04"):
        row = results[tid]
        assert row["speedup"] == pytest.approx(1 + (row["cards_per_run"] - 1) * 0.95)


def test_the_engine_picks_enough_cards_above_4096_for_a_deadline(tmp_path):
    """A 405B run of 15T tokens in 60 days: about 1.5 million H100 days at 0.38 MFU; the closed form corrects
    the card count for the loss at scale, so the chosen shape meets the deadline and one node fewer would not."""
    task = {"task_id": "BIG", "kind": "pretrain", "model": "Llama-3.1-405B", "gpu": "H100 80G",
            "train_tokens": 15e12, "deadline_days": 60}
    row = _rows_by_id(_plan(tmp_path, [task], settings={"max_cards": 100_000},
                            gpus=_gpu_sheet(["H100 80G"])))["BIG"]
    cards = row["cards_per_run"]
    assert cards > 4096
    assert row["wall_hours_per_run"] <= 60 * 24
    fewer = cards - 8
    factor = 0.93 ** math.log2(fewer / 4096)
    flops = 6 * 405.8e9 * 15e12
    wall_fewer = flops / (989e12 * 0.40 * (1 + (fewer - 1) * 0.95) * factor * 3600) * 1.3 + 0.5
    assert wall_fewer > 60 * 24 * 0.99    # within a node of the fewest cards that meet it


def test_cards_up_to_100000_are_accepted_and_more_refused(tmp_path):
    from budgetgen.core.errors import InputError
    task = {"task_id": "T", "kind": "pretrain", "model_params_b": 7, "gpu": "H100 80G", "train_tokens": 1e12,
            "cards": 100_000}
    row = _rows_by_id(_plan(tmp_path, [task], gpus=_gpu_sheet(["H100 80G"])))["T"]
    assert row["cards_per_run"] == 100_000
    with pytest.raises(InputError) as caught:
        _plan(tmp_path, [task | {"cards": 100_001}], "more.xlsx", gpus=_gpu_sheet(["H100 80G"]))
    assert "must be at most 100000" in str(caught.value)


@pytest.mark.slow
def test_libreoffice_recalculates_the_v4_formulas_to_the_engine_values(tmp_path):
    """A workbook that takes model v4's new branches: a run the engine sizes above ScaleFreeCards for its deadline
    (cards_for_deadline's closed form and the speedup's loss), an FP8 run typed on 16,384 cards, and a 70B model on
    8 cards (the tensor-parallel doublings weighted by size). LibreOffice recalculates every formula cell to the
    engine's cached value."""
    from conftest import TODAY, formula_cells, make_input
    from lo_recalc import recalc_with_libreoffice, soffice_path

    from budgetgen.io.reader import read_inputs
    from budgetgen.plan.engine import plan_budget
    from budgetgen.workbook import write_workbook

    if soffice_path() is None:
        pytest.skip("LibreOffice (soffice) not installed")
    from test_libreoffice import lo_mismatches
    tasks = [{"task_id": "BIG", "kind": "pretrain", "model": "Llama-3.1-405B", "gpu": "H100 80G",
              "train_tokens": 15e12, "deadline_days": 60},
             {"task_id": "FP8", "kind": "pretrain", "model": "Llama-3.1-405B", "gpu": "H100 80G", "cards": 16_384,
              "train_precision": "fp8", "train_tokens": 1e12, "deadline_days": 3650},
             {"task_id": "TP8", "kind": "inference", "model": "Llama-3.3-70B", "gpu": "H100 80G", "cards": 8,
              "method": "fp8", "prompt_tokens": 1000, "tokens_per_request": 1000, "requests_per_day": 1e6,
              "tier": "on_demand"}]
    path = make_input(tmp_path / "in.xlsx", tasks, settings={"max_cards": 100_000}, gpus=_gpu_sheet(["H100 80G"]))
    plan = plan_budget(read_inputs(path, today=TODAY))
    rows = _rows_by_id(plan)
    assert rows["BIG"]["cards_per_run"] > 4096 and rows["TP8"]["tp"] < 0.85 ** 3
    out = write_workbook(plan, tmp_path / "out.xlsx")
    assert lo_mismatches(formula_cells(out), recalc_with_libreoffice(out, tmp_path)) == []


# ---------------------------------------------------------------- model v4: FP4 training

FP4_ROWS = _rows(DATA / "published_v4_fp4_training.csv")


@pytest.fixture(scope="module")
def fp4_results(tmp_path_factory) -> dict[str, dict]:
    """Each published FP4 run planned twice on its card: in FP8 and in FP4 (ids suffixed -fp8, -fp4)."""
    tasks = [{"task_id": f"{r['id']}-{p}", "kind": "pretrain", "model": r["model"], "method": "full",
              "train_precision": p, "gpu": r["gpu"], "cards": int(r["cards"]), "train_tokens": 1e12,
              "deadline_days": 3650} for r in FP4_ROWS for p in ("fp8", "fp4")]
    tasks.append({"task_id": "H100-fp4", "kind": "pretrain", "model": "Llama-3.1-8B", "method": "full",
                  "train_precision": "fp4", "gpu": "H100 80G", "cards": 8, "train_tokens": 1e12, "deadline_days": 3650})
    tasks.append(tasks[-1] | {"task_id": "H100-fp8", "train_precision": "fp8"})
    gpus = _gpu_sheet(sorted({r["gpu"] for r in FP4_ROWS} | {"H100 80G"}))
    return _rows_by_id(_plan(tmp_path_factory.mktemp("v4fp4"), tasks, gpus=gpus))


def test_fp4_training_is_as_much_faster_than_fp8_as_published(fp4_results, capsys):
    """NVIDIA's MaxText NVFP4 runs on GB200 (FP4 peak 10,000 TFLOP/s, FP8 5,000) were 1.35x (Llama 3 8B: 1,497 ->
    2,017 TFLOP/s a GPU) and 1.43x (405B: 1,557 -> 2,224) as fast as FP8. The engine's FP4 unit at
    TrainFp4Efficiency 0.65 against the FP8 unit at TrainFp8Efficiency 0.93: 10,000 x 0.65 / (5,000 x 0.93) =
    1.398 (model v3, both at the FP8 rule: 2.0, 1.48x and 1.40x the published speed-up)."""
    low, high = BANDS["train"]
    by_hand = 10_000 * 0.65 / (5_000 * 0.93)
    assert by_hand == pytest.approx(1.398, abs=0.001)
    with capsys.disabled():
        print("\nrow  published  engine  label")
        for r in FP4_ROWS:
            engine = fp4_results[f"{r['id']}-fp8"]["compute_gpu_hours"] / fp4_results[f"{r['id']}-fp4"]["compute_gpu_hours"]
            print(f"{r['id']:<5}{float(r['published_speedup']):>9.2f}{engine:>8.3f}  {r['label']}")
    for r in FP4_ROWS:
        assert float(r["fp4_tflops_per_gpu"]) / float(r["fp8_tflops_per_gpu"]) == pytest.approx(
            float(r["published_speedup"]), abs=0.015)       # the row's two figures give its speed-up
        fp8, fp4 = (fp4_results[f"{r['id']}-{p}"] for p in ("fp8", "fp4"))
        assert fp4["peak_tflops"] == pytest.approx(10_000 * 0.65) and fp8["peak_tflops"] == pytest.approx(5_000 * 0.93)
        speedup = fp8["compute_gpu_hours"] / fp4["compute_gpu_hours"]
        assert speedup == pytest.approx(by_hand)
        # GPU-hours in FP4 against those the published speed-up gives from the same FP8 run: in the training band
        assert low <= fp4["compute_gpu_hours"] / (fp8["compute_gpu_hours"] / float(r["published_speedup"])) <= high


def test_fp4_training_on_a_card_without_an_fp4_unit_is_fp8_training(fp4_results):
    """H100 has no FP4 unit: an FP4 run trains on its FP8 unit at TrainFp8Efficiency, as FP8 does."""
    assert fp4_results["H100-fp4"]["peak_tflops"] == pytest.approx(1979 * 0.93)
    assert fp4_results["H100-fp4"]["compute_gpu_hours"] == pytest.approx(fp4_results["H100-fp8"]["compute_gpu_hours"])


def test_the_fp4_rows_are_sourced_and_dated():
    assert len(FP4_ROWS) == 2 and all(r["source"] and "read 2026-12-04" in r["source"] for r in FP4_ROWS)
