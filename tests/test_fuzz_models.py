"""Fuzzing the Models sheet: a model's figures made wrong end in `Error:` lines at the cells that hold them (or the
Tasks cells naming a model that could not be made), or in a plan whose numbers match SPEC-models worked by hand."""

from __future__ import annotations

import json
import math

import openpyxl
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from openpyxl.utils import get_column_letter
from test_bad_input import errors_in
from test_fuzz import build_sheets, ceil15

# A mixture of experts the built-in catalog does not know: 30B parameters, 3B active per token, grouped-query
# attention with 4 key/value heads of 128 elements for 32 query heads.
MODEL_ROW = {"model": "Fuzz-MoE", "total_params_b": 30, "active_params_b": 3, "layers": 48, "hidden": 2048,
             "attn_heads": 32, "kv_heads": 4, "head_dim": 128, "kv_latent": None, "native_context": 32_768}
COUNTS = ("layers", "hidden", "attn_heads", "kv_heads", "head_dim", "kv_latent", "native_context")
GPU_ROW = {"gpu": "Fuzz", "vram_gb": 80, "bandwidth_gbs": 2000, "tflops": 400, "scaling": 0.8,
           "on_demand_per_hour": 10}
# The tasks name the model in other cases than the sheet: names match ignoring case.
TASKS = [
    ["task_id", "kind", "model", "method", "train_tokens", "prompt_tokens", "tokens_per_request",
     "requests_per_day", "gpu", "tier"],
    ["S1", "inference", "fuzz-moe", "fp16", None, 1000, 250, 200_000, "Fuzz", "on_demand"],
    ["T1", "finetune", "FUZZ-MOE", "lora", 1e11, None, None, None, "Fuzz", "on_demand"],
]
MODEL_CELLS = {"S1": "Tasks!C2", "T1": "Tasks!C3"}
PROMPT_S1 = TASKS[1][5]   # S1's prompt_tokens (Tasks!F2)
GPU_CELLS = {"S1": "Tasks!I2", "T1": "Tasks!I3"}

# Texts and what the input contract makes of them, per unit: billions of parameters, or a count (None: refused).
TEXTS = {"seven": (None, None), "32.5": (32.5, None), "1,024": (1024, 1024), "1,5": (None, None),
         "7B": (7, 7e9), "2k": (2e-6, 2000), "50%": (None, None), "inf": (None, None), "1e309": (None, None),
         "-3": (None, None), "0": (None, None), " 64 ": (64, 64), "": ("blank", "blank")}
# Plausible figures (most builds), then everything a typist or a script might put in a cell.
plausible = st.one_of(st.sampled_from((1, 2, 4, 8, 16, 32, 64, 96, 128, 256, 576)), st.integers(1, 120),
                      st.floats(min_value=0.5, max_value=300, allow_nan=False))
values = st.one_of(
    plausible, plausible, plausible,
    st.sampled_from(list(TEXTS)), st.none(),
    st.sampled_from((0, -1, 1, 2, 3, 4, 8, 16, 64, 128, 0.5, 32.5, 1e15, 1e16, 1e-12, 5e3)),
    st.integers(min_value=-2, max_value=200),
    st.floats(min_value=0.01, max_value=500, allow_nan=False),
)
edits = st.lists(st.tuples(st.sampled_from([c for c in MODEL_ROW if c != "model"]), values), min_size=1,
                 max_size=3).map(dict)


def contract_value(column: str, raw):
    """What the input contract makes of a Models cell: a number, "blank", or None when the cell is refused."""
    if raw is None or raw == "":
        return "blank"
    if isinstance(raw, str):
        value = TEXTS[raw][column in COUNTS]
        if value in (None, "blank"):
            return value
    else:
        value = float(raw)
    if not math.isfinite(value) or value <= 0 or value > 1e15 or value < 1e-9:
        return None
    if column in COUNTS and value != int(value):
        return None
    return value


def row_problem(model: dict) -> bool:
    """Whether the model's figures (refused cells left out) cannot make a model: SPEC-models §A's columns, and what
    the §D formulas multiply together given together."""
    given = {c for c, v in model.items() if v is not None}
    total, active = model["total_params_b"], model["active_params_b"]
    if total is None or (active is not None and active > total):
        return True
    if "kv_latent" not in given and ("kv_heads" in given) != ("head_dim" in given):
        return True
    if given & {"hidden", "kv_heads", "head_dim", "kv_latent"} and "layers" not in given:
        return True
    if "head_dim" in given and "attn_heads" not in given:
        return True
    return {"kv_heads", "attn_heads"} <= given and model["attn_heads"] % model["kv_heads"] != 0


def shape(n: float) -> int:
    """Cards of a training run holding n cards (§F): 1, 2, 4, then whole 8-card nodes."""
    return next((s for s in (1, 2, 4) if n <= s), None) or 8 * ceil15(n / 8)


def serving_by_hand(m: dict) -> dict | None:
    """S1 by SPEC-models §D: fp16 weights and KV cache, 1,000 prompt and 250 output tokens, 200,000 requests a day
    over 24 h on the 80 GB card; None when no replica of 1, 2, 4 or 8 cards holds 8 sequences."""
    total, active = m["total_params_b"], min(m["total_params_b"], m["active_params_b"] or m["total_params_b"])
    if m["kv_latent"] is not None:
        kv = m["layers"] * m["kv_latent"] * 2
    elif m["kv_heads"] is not None:
        kv = 2 * m["layers"] * m["kv_heads"] * m["head_dim"] * 2
    else:
        kv = 40_000 * math.sqrt(active)

    def held(n):  # sequences of 1,250 tokens the KV cache of n cards holds, after 10% runtime on the weights
        return max(0, math.floor(float(f"{(n * 80 * 0.9 - total * 2 * 1.1) * 1e9 / (kv * 1250):.15g}")))
    fits = [n for n in (1, 2, 4, 8) if (m["attn_heads"] is None or m["attn_heads"] % n == 0) and held(n) >= 8]
    if not fits:
        return None
    n = fits[0]
    batch = max(1, min(160 * n, held(n)))
    tp = 0.8 ** (math.log2(n) * max(1, (50 * n / total) ** 0.4))   # model v4: less of the model a card, more a doubling
    t_mem = (min(total, active * batch) * 1e9 * 2 + batch * kv * (1000 + 250 / 2)) / (n * 2000e9 * 0.7 * tp)
    t_cmp = 2 * active * 1e9 * batch / (n * 400e12 * 0.6 * tp)
    # model v3: a mixture of experts pays 25 µs a layer, a replica of n PCIe cards two all-reduces a layer (50 µs and
    # a ring's 2(n-1)/n of the batch's hidden states at 25 GB/s); the layers unknown, neither
    t_layers = 0
    if m["layers"] is not None:
        per_layer = 25e-6 if active < total else 0
        if n > 1:
            ring = 2 * (n - 1) / n * batch * m["hidden"] * 2 / 25e9 if m["hidden"] is not None else 0
            per_layer += 2 * (50e-6 + ring)
        t_layers = m["layers"] * per_layer
    t_step = 1 / 1000 + t_layers + max(t_mem, t_cmp)
    attention = 2 * m["layers"] * m["attn_heads"] * m["head_dim"] * 1000 ** 2 if m["head_dim"] is not None else 0
    t_pre = (2 * active * 1e9 * 1000 + attention) / (n * 400e12 * 0.75 * tp)
    req_s = 1 / (t_pre + 250 * t_step / batch)
    replicas = max(1, ceil15(200_000 / (24 * 3600 * req_s)))
    return {"cards_per_run": n, "kv_bytes_per_token": kv, "batch_used": batch, "active_params_b": active,
            "requests_per_sec": req_s, "monthly_cost": replicas * n * 730 * 10}


def training_by_hand(m: dict) -> dict | None:
    """T1 by SPEC-models §E and §F: LoRA on 1e11 tokens, one run a month; None when no run of at most 64 cards
    holds the model or finishes within the month."""
    total, active = m["total_params_b"], min(m["total_params_b"], m["active_params_b"] or m["total_params_b"])
    if m["hidden"] is not None:  # frozen bf16 base, 1% trained with 16 bytes of state, one checkpointed micro-batch
        # and its bf16 logits: the row gives no vocab_size, so the fallback's 202,048 words (Llama 4's)
        vram = 2 * total + total * 0.01 * 16 + 2048 * m["layers"] * m["hidden"] * 2 / 1e9 + 2048 * 202048 * 2 / 1e9
        card = 80 * 2 ** 30 / 1e9
    else:
        vram = 2 * total + total * 0.01 * 16 + 0.6 * total
        card = 80 * 0.9
    cards_min = shape(ceil15(vram / card))
    flops = 4 * active * 1e9 * 1e11
    mfu = 0.55  # model v3: LoRA at lora_mfu, dense or not (no expert counts: no expert exchange)
    work = flops / (400e12 * mfu * 3600) * 1.3
    needed = 1 if work <= 730 - 0.5 else 1 + (work / (730 - 0.5) - 1) / 0.8
    cards = shape(max(cards_min, ceil15(needed)))
    if cards_min > 64 or cards > 64:
        return None
    hours = flops / (400e12 * mfu * (1 + (cards - 1) * 0.8) * 3600)
    return {"cards_per_run": cards, "vram_gb": vram, "active_params_b": active,
            "monthly_cost": (hours * 1.3 * 1.3 + 0.5) * cards * 10}


def expected_outcome(row: dict, twin: bool) -> tuple[set[str], dict]:
    """Independently of the engine: the cells the errors must name, or (no errors) each task's figures."""
    column = {c: get_column_letter(i + 1) for i, c in enumerate(MODEL_ROW)}
    parsed = {c: contract_value(c, v) for c, v in row.items() if c != "model"}
    bad = {f"Models!{column[c]}2" for c, v in parsed.items() if v is None}
    model = {c: None if v in (None, "blank") else v for c, v in parsed.items()}
    errors = bad | ({"Models!A3"} if twin else set())
    context = model.get("native_context")
    if not bad and not row_problem(model) and context is not None and context < PROMPT_S1:
        errors.add("Tasks!F2")   # S1's prompt is longer than the model's context: refused at its prompt_tokens
    if row_problem(model):  # the row makes no model: the tasks naming it name an unknown model
        errors |= set(MODEL_CELLS.values()) | (set() if bad else {"Models!A2"})
    if errors:
        return errors, {}
    by_hand = {"S1": serving_by_hand(model), "T1": training_by_hand(model)}
    return {GPU_CELLS[t] for t, figures in by_hand.items() if figures is None}, by_hand


# 40 generated rows (some 0.2 s of CPU each) and, always, the rows each make no model in their own way: per-layer
# figures without layers, head_dim without attn_heads, kv_heads that do not divide attn_heads.
@settings(max_examples=40, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@pytest.mark.slow
@given(edits=edits, twin=st.sampled_from([False, False, False, False, True]))
@example(edits={"layers": None}, twin=False)
@example(edits={"attn_heads": None}, twin=False)
@example(edits={"kv_heads": 3}, twin=False)
def test_model_figures_give_the_right_numbers_or_errors_at_their_cells(tmp_path_factory, edits, twin):
    row = {**MODEL_ROW, **edits}
    models = [list(MODEL_ROW), list(row.values())]
    if twin:  # the same model again, its name in capitals: names are unique ignoring case
        models.append([MODEL_ROW["model"].upper(), *list(MODEL_ROW.values())[1:]])
    result, out, js = build_sheets(tmp_path_factory.mktemp("fuzz-models"), {
        "Settings": [["setting", "value"], ["period_start", "2026-07"]], "Tasks": TASKS,
        "GPUs": [list(GPU_ROW), list(GPU_ROW.values())], "Models": models})
    assert result.exception is None or isinstance(result.exception, SystemExit), (edits, result.exc_info)
    errors, figures = expected_outcome(row, twin)
    event("built" if not errors else "no replica or run fits" if errors <= set(GPU_CELLS.values()) else "refused")
    if errors:
        assert result.exit_code == 1, (edits, twin, result.output)
        assert {line.split()[1] for line in errors_in(result.output)} == errors, (edits, twin, result.output)
        assert not out.parent.exists() or list(out.parent.iterdir()) == []
        return
    assert result.exit_code == 0, (edits, result.output)
    tasks = {t["task_id"]: t for t in json.loads(js.read_text())["tasks"]}
    for task_id, expected in figures.items():
        got = {key: tasks[task_id][key] for key in expected}
        assert got == pytest.approx(expected, rel=1e-9), (task_id, edits)
    cached = openpyxl.load_workbook(out, data_only=True)["Models"]
    names = [str(r[0]).lower() for r in cached.iter_rows(values_only=True)]
    assert "fuzz-moe" in names  # the workbook prints the model the plan used
