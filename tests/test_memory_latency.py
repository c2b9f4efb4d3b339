"""Calculation model v3, last part: per-card activations of sharded fine-tunes, the `optimizer` choice and latency
targets per service. Worked values derived by hand from the sources the defaults name, through the engine, and the
shipped workbook's formulas recalculated against the engine."""

from __future__ import annotations

import pytest
from conftest import TODAY, make_input
from test_serving_engine import SHIPPED_GPUS, _gpu_sheet, _models_sheet, _rows

from budgetgen.core.errors import Code, InputError
from budgetgen.core.schema import SETTINGS_BY_KEY
from budgetgen.io.reader import read_inputs
from budgetgen.model.columns import CALCS
from budgetgen.plan.engine import Exclusion, plan_budget

GPUS = ["H100 80G", "A100 80G", "L40S", "H20", "RTX 4090", "H200"]
MODELS = ["Llama-3.1-8B", "Llama-3.1-70B", "Qwen3-30B-A3B", "DeepSeek-V3"]


def _plan(tmp_path, tasks, settings=None, gpus=GPUS):
    path = make_input(tmp_path / "in.xlsx", tasks, settings={"max_cards": 64, **(settings or {})},
                      gpus=_gpu_sheet(gpus), extra_sheets={"Models": _models_sheet(MODELS)})
    return plan_budget(read_inputs(path, today=TODAY))


def _task(tid, **values):
    return {"task_id": tid, "tier": "on_demand", **values}


def _full(tid, model, **values):
    return _task(tid, kind="finetune", model=model, method="full", train_tokens=1e8, deadline_days=3650, **values)


def _chat(tid, model, **values):
    return _task(tid, kind="inference", model=model, **({"requests_per_day": 100_000, "prompt_tokens": 1000,
                                                        "tokens_per_request": 500} | values))


def _candidate(plan, tid, gpu):
    tp = next(t for t in plan.tasks if t.task.task_id == tid)
    return next(c for c in tp.candidates if c.gpu == gpu)


# ---------------------------------------------------------------- per-card activations


def test_a_sharded_full_fine_tune_holds_one_micro_batch_of_activations_on_every_card(tmp_path):
    plan = _plan(tmp_path, [_full("T", "Llama-3.1-70B", gpu="H100 80G")])
    row = plan.tasks[0].row
    states = 70.6 * 16                          # 1,129.6 GB of weights, gradients and AdamW state, sharded
    # 2.68 GB: one checkpointed micro-batch, and 0.53 GB: its bf16 logits (2,048 x 128,256 x 2 bytes), on every card
    own = 2048 * 80 * 8192 * 2 / 1e9 + 2048 * 128256 * 2 / 1e9
    assert row["activations_gb"] == pytest.approx(own)
    assert row["vram_gb"] == pytest.approx(states + own)
    # (1,132.8 - 3.21) / (72 - 3.21) = 16.4 -> 17 cards -> whole nodes: 24. One micro-batch for all cards would have
    # made it CEILING(1,132.8 / 72) = 16, and each of the 16 cards would hold 70.6 + 3.21 GB over its 72.
    assert (states + own - own) / (80 * 0.9 - own) == pytest.approx(16.42, abs=0.01)
    assert row["cards_min"] == 24


def test_a_card_its_own_activations_fill_is_not_a_candidate_at_any_card_count(tmp_path):
    # 200,000 tokens x 32 layers x 4,096 x 2 bytes + 200,000 x 128,256 bf16 logits x 2 bytes = 52.4 + 51.3 = 103.7
    # GB a card: more than an 80 GB card offers (72), less than an H200's 141 x 0.90 = 126.9
    assert 200_000 * (32 * 4096 + 128256) * 2 / 1e9 == pytest.approx(103.7, abs=0.05)
    plan = _plan(tmp_path, [_full("T", "Llama-3.1-8B")], settings={"micro_batch_tokens": 200_000},
                 gpus=["H100 80G", "H200"])
    h100 = _candidate(plan, "T", "H100 80G")
    assert h100.exclusion is Exclusion.ACTIVATIONS
    assert "103.7 GB" in h100.excluded and "72.0 GB" in h100.excluded
    assert plan.tasks[0].row["gpu"] == "H200"


def test_a_named_card_its_activations_fill_is_an_error_at_the_gpu_cell(tmp_path):
    with pytest.raises(InputError) as caught:
        _plan(tmp_path, [_full("T", "Llama-3.1-8B", gpu="H100 80G")], settings={"micro_batch_tokens": 400_000})
    problem, = caught.value.problems
    assert (problem.code, problem.sheet, problem.cell) == (Code.DOES_NOT_FIT, "Tasks", "H2")   # its gpu
    assert "activations" in str(problem)


# ---------------------------------------------------------------- the optimizer


def test_the_optimizer_sets_the_state_bytes_a_trained_parameter_holds_on_the_card(tmp_path):
    plan = _plan(tmp_path, [_full("A", "Llama-3.1-8B"), _full("B", "Llama-3.1-8B", optimizer="adamw_8bit"),
                            _full("C", "Llama-3.1-8B", optimizer="cpu_offload"),
                            _task("L", kind="finetune", model="Llama-3.1-8B", method="lora", train_tokens=1e8,
                                  optimizer="cpu_offload")])
    rows = {t.task.task_id: t.row for t in plan.tasks}
    own = 2048 * 32 * 4096 * 2 / 1e9 + 2048 * 128256 * 2 / 1e9   # 0.54 GB and 0.53 GB of logits on every card
    assert rows["A"]["vram_gb"] == pytest.approx(8.0 * (2 + 2 + 4 + 4 + 4) + own)   # 129.1 GB
    assert rows["B"]["vram_gb"] == pytest.approx(8.0 * (2 + 2 + 4 + 1 + 1) + own)   # 81.1 GB
    assert rows["C"]["vram_gb"] == pytest.approx(8.0 * (2 + 2) + own)               # 33.1 GB
    assert rows["L"]["vram_gb"] == pytest.approx(8.0 * 2 + 8.0 * 0.01 * 4 + own)
    assert rows["A"]["cards_per_run"] == 2 and rows["C"]["cards_per_run"] == 1   # 80 GB cards offer 72 GB


def test_cpu_offload_runs_the_sourced_slowdown_longer_and_lora_only_on_its_trained_share(tmp_path):
    plan = _plan(tmp_path, [_full("A", "Llama-3.1-8B", gpu="A100 80G", cards=2),
                            _full("C", "Llama-3.1-8B", gpu="A100 80G", cards=2, optimizer="cpu_offload"),
                            _task("L", kind="finetune", model="Llama-3.1-8B", method="lora", train_tokens=1e8,
                                  gpu="A100 80G"),
                            _task("M", kind="finetune", model="Llama-3.1-8B", method="lora", train_tokens=1e8,
                                  gpu="A100 80G", optimizer="cpu_offload")])
    rows = {t.task.task_id: t.row for t in plan.tasks}
    assert rows["C"]["compute_gpu_hours"] / rows["A"]["compute_gpu_hours"] == pytest.approx(2.5)
    assert rows["M"]["compute_gpu_hours"] / rows["L"]["compute_gpu_hours"] == pytest.approx(1 + 1.5 * 0.01)


def test_the_optimizer_defaults_are_the_arithmetic_of_their_sources():
    # ZeRO (arXiv:1910.02054) 3.1: mixed-precision Adam keeps fp32 parameters, momentum and variance, 4 + 4 + 4
    assert SETTINGS_BY_KEY["adam_state_bytes"].default == 4 + 4 + 4
    # 8-bit optimizers (arXiv:2110.02861): the two moments at 1 byte, the fp32 master kept
    assert SETTINGS_BY_KEY["adam_8bit_state_bytes"].default == 4 + 1 + 1
    # DeepSpeed ZenFlow blog: ZeRO-Offload leaves the GPU idle over 60% of each step, so a step is 1 / 0.4 the
    # GPU's own time
    assert SETTINGS_BY_KEY["cpu_offload_slowdown"].default == pytest.approx(1 / (1 - 0.60))


def test_mi300x_matmul_efficiency_lies_between_the_two_maximum_achievable_gemm_tables():
    h100 = 794.5 / 989                                      # stas00/ml-engineering MAMF table, BF16: 80.3%
    low, high = (668.4 / 1300) / h100, (708 / 1307) / h100  # MAMF table 51.4%; AMD's MAF table 54.2%
    mi300x = next(r for r in _rows(SHIPPED_GPUS) if r["gpu"] == "MI300X")
    assert (round(low, 3), round(high, 3)) == (0.640, 0.674)
    assert low <= float(mi300x["matmul_efficiency"]) <= high
    assert "668.4 of 1300" in mi300x["source"] and "708 of 1307" in mi300x["source"]


# ---------------------------------------------------------------- latency targets


def _by_hand_llama8b_on_h100(tpot_ms: float) -> float:
    """Sequences one H100 80G holds Llama-3.1-8B fp16 decode steps within tpot_ms (dense, one card: no per-layer
    cost). Weights 8.0e9 x 2 bytes; KV cache 2 x 32 layers x 8 heads x 128 x 2 bytes = 131,072 bytes a token, a
    sequence reading 1,000 + 500 / 2 of them; 3,350 GB/s at the 0.70 decode efficiency."""
    read = 3350e9 * 0.70
    room = tpot_ms / 1000 - 0.001                 # less the 1 ms step overhead
    return (room * read - 8.0e9 * 2) / (131_072 * (1000 + 500 / 2))


@pytest.mark.parametrize(("tpot", "batch"), [(15, 102), (12, 59)])
def test_a_time_per_token_target_caps_the_batch_exactly_for_a_dense_model(tmp_path, tpot, batch):
    assert int(_by_hand_llama8b_on_h100(tpot)) == batch      # 102.7 and 59.8
    plan = _plan(tmp_path, [_chat("S", "Llama-3.1-8B", gpu="H100 80G", tpot_ms=tpot)])
    row = plan.tasks[0].row
    assert row["latency_batch"] == row["batch"] == batch
    assert row["t_step"] <= tpot / 1000 < row["t_step"] + 131_072 * 1250 / (3350e9 * 0.70)   # one more misses


def test_capping_the_batch_adds_replicas(tmp_path):
    free, capped = _plan(tmp_path, [_chat("S", "Llama-3.1-8B", gpu="H100 80G", requests_per_day=2e6),
                                    _chat("T", "Llama-3.1-8B", gpu="H100 80G", requests_per_day=2e6, tpot_ms=12)]).tasks
    assert free.row["batch"] == 160 and capped.row["batch"] == 59
    assert capped.row["replicas"] > free.row["replicas"]
    assert capped.row["monthly_cost"] > free.row["monthly_cost"]


def test_a_time_to_first_token_target_leaves_the_prompt_reading_out_of_the_step(tmp_path):
    plan = _plan(tmp_path, [_chat("S", "Llama-3.1-8B", gpu="H100 80G", ttft_ms=40)])
    row = plan.tasks[0].row
    assert row["step_target"] == pytest.approx(0.040 - row["t_pre"])
    assert row["t_pre"] + row["t_step"] <= 0.040


def test_a_mixture_of_experts_cap_is_conservative_never_optimistic(tmp_path):
    plan = _plan(tmp_path, [_chat("M", "Qwen3-30B-A3B", gpu="H20", method="fp16", tpot_ms=15),
                            _chat("D", "DeepSeek-V3", gpu="H200", method="fp8", tpot_ms=40)])
    for tp in plan.tasks:
        assert tp.row["batch"] >= 1 and tp.row["t_step"] <= tp.row["step_target"] + 0.001   # + StepOverheadMs


def test_latency_targets_belong_to_online_services_and_the_optimizer_to_training(tmp_path):
    plan = _plan(tmp_path, [_task("B", kind="batch", model="Llama-3.1-8B", batch_requests=1e5, tokens_per_request=500,
                                  tpot_ms=12, optimizer="cpu_offload"),
                            _full("F", "Llama-3.1-8B", tpot_ms=12)])
    batch, full = (t.row for t in plan.tasks)
    assert batch["tpot_ms"] is None and batch["optimizer"] is None and batch["latency_batch"] is None
    assert full["tpot_ms"] is None and full["optimizer_slowdown"] == 1


def test_a_card_that_misses_the_targets_at_batch_one_is_excluded_with_its_reason(tmp_path):
    # Llama-3.1-70B fp8 on 2 L40S: 70.6 GB read at 2 x 864 GB/s x 0.70 x 0.80 takes 73 ms a step alone
    plan = _plan(tmp_path, [_chat("S", "Llama-3.1-70B", method="fp8", tpot_ms=30)], gpus=["L40S", "H100 80G"])
    l40s = _candidate(plan, "S", "L40S")
    assert l40s.exclusion is Exclusion.LATENCY and l40s.row["latency_batch"] == 0
    assert "latency targets" in l40s.excluded and "ms a token" in l40s.excluded
    assert plan.tasks[0].row["gpu"] == "H100 80G"


def test_no_card_meeting_the_targets_is_an_error_at_the_target(tmp_path):
    with pytest.raises(InputError) as caught:
        _plan(tmp_path, [_chat("S", "Llama-3.1-70B", method="fp8", tpot_ms=2)], gpus=["L40S", "H100 80G"])
    problem, = caught.value.problems
    assert (problem.code, problem.sheet) == (Code.DOES_NOT_FIT, "Tasks")
    assert problem.cell.endswith("2") and "latency targets" in str(problem)


# ---------------------------------------------------------------- the columns' formulas agree with the engine

FORMULA_TASKS = [
    _full("F70", "Llama-3.1-70B", gpu="H100 80G"),
    _full("OFF", "Llama-3.1-8B", optimizer="cpu_offload", gpu="A100 80G"),
    _task("LO", kind="finetune", model="Llama-3.1-8B", method="qlora", train_tokens=1e8, optimizer="cpu_offload"),
    _task("UN", kind="pretrain", model_params_b=13, method="qlora", train_tokens=1e9, optimizer="adamw_8bit"),
    _chat("TP", "Llama-3.1-8B", gpu="H100 80G", tpot_ms=12),
    _chat("TT", "Qwen3-30B-A3B", method="fp8", ttft_ms=300, tpot_ms=20),
    _chat("NO", "Llama-3.1-8B"),
]
# the training columns, then the serving ones
CHANGED_COLUMNS = ("state_bytes", "activations_gb", "optimizer_slowdown", "vram_gb", "card_gb", "cards_min", "mfu_run",
                   "routed_b", "t_pre", "t_layers_fixed", "t_layers_per_sequence", "step_target", "latency_batch", "batch",
                   "t_layers", "t_step")


@pytest.mark.slow
def test_the_changed_columns_formulas_compute_what_the_engine_computes(tmp_path):
    """Each column's formula as the Tasks sheet holds it (placeholders for the row's cells), evaluated by `formulas`
    on the engine's row, gives the engine's value: the two views of every changed column, on every branch."""
    from test_serving import _excel_value

    plan = _plan(tmp_path, FORMULA_TASKS)
    calcs = {c.key: c for c in CALCS}
    for tp in plan.tasks:
        gpu = plan.inputs.gpu(tp.row["gpu"])
        row = tp.row | {f"gpu.{f}": getattr(gpu, f) for f in ("vram_gb", "bandwidth_gbs", "tflops", "tflops_fp8",
                                                               "tflops_fp4", "bandwidth_efficiency",
                                                               "matmul_efficiency", "interconnect")}
        for key in CHANGED_COLUMNS[:7] if tp.row["training"] else CHANGED_COLUMNS[7:]:
            value = _excel_value(calcs[key].excel, row)
            expected = "" if tp.row[key] is None else tp.row[key]
            assert value == (pytest.approx(expected, rel=1e-12) if expected != "" else ""), (tp.task.task_id, key)
