"""The built-in model catalog: its data against the sourced figures, lookups, the Models sheet overlay, the listing."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from budgetgen.catalog.models import (
    MODEL_COLUMNS,
    ModelCatalog,
    ModelRecordError,
    ModelSpec,
    UnknownModelError,
    builtin_models,
    format_models_table,
)

DATA = Path(__file__).parent / "data"
CATALOG = builtin_models()


def _sourced() -> list[dict[str, str]]:
    with open(DATA / "models_sourced.csv", newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _names(sourced: str) -> list[str]:
    """'Llama-3.1-70B / 3.3-70B' -> both names; 'GLM-4.5 (355B-A32B)' -> 'GLM-4.5'; 'DeepSeek-V3 / R1' -> both."""
    first, *others = sourced.split(" (")[0].split(" / ")
    stem = first.rsplit("-", 2)[0] if first.startswith("Llama") else first.rsplit("-", 1)[0]
    return [first] + [f"{stem}-{other}" for other in others]


def _number(text: str) -> float | None:
    return float(text) if text.strip() else None


@pytest.mark.parametrize("row", _sourced(), ids=lambda r: r["model"])
def test_every_sourced_model_is_in_the_catalog_with_its_figures(row):
    for name in _names(row["model"]):
        m = CATALOG.find(name)
        assert (m.total_params_b, m.active_params_b) == (float(row["total_params_b"]), float(row["active_params_b"]))
        assert (m.layers, m.attn_heads) == (int(row["layers"]), int(row["attn_heads"]))
        if row["kv_heads"] == "MLA":   # 512 latent + 64 rope elements per layer and token
            assert (m.kv_latent, m.kv_heads, m.head_dim) == (512 + 64, None, None)
        else:
            assert (m.kv_heads, m.head_dim, m.kv_latent) == (int(row["kv_heads"]), int(row["head_dim"]), None)
        if row["hidden"]:
            assert m.hidden == int(row["hidden"])
        assert m.native_context == _number(row["native_context"])
        assert m.source


def test_catalog_holds_current_models_plus_the_benchmark_and_qlora_ones():
    names = {m.name for m in CATALOG.models}
    assert {"Llama-3.1-70B", "Llama-3.3-70B", "DeepSeek-V3", "DeepSeek-R1", "GLM-4.5", "GLM-4.5-Air",
            "Llama-4-Scout", "Kimi-K2", "gpt-oss-120b", "MiniMax-M2", "Qwen3-235B-A22B"} <= names
    assert {"Llama-2-7B", "Llama-2-13B", "Llama-2-70B", "LLaMA-65B"} <= names
    assert len(names) == len(CATALOG.models) >= 24
    moe = [m.name for m in CATALOG.models if m.is_moe]
    assert len(moe) >= 8 and "Llama-3.1-8B" not in moe
    for m in CATALOG.models:   # every architecture is complete: the hidden size sizes LoRA activations
        assert m.hidden and m.layers and m.attn_heads and (m.kv_latent or (m.kv_heads and m.head_dim)), m.name


def test_llama_65b_is_the_paper_architecture():
    # LLaMA paper Table 2: 65.2B parameters, dimension 8192, 64 heads, 80 layers; 2,048-token context.
    m = CATALOG.find("LLaMA-65B")
    assert (m.total_params_b, m.hidden, m.attn_heads, m.layers, m.head_dim, m.native_context) == \
        (65.2, 8192, 64, 80, 8192 // 64, 2048)


@pytest.mark.parametrize("typed", ["Llama-3.1-8B", "llama-3.1-8b", "LLAMA-3.1-8B", "  Llama-3.1-8B "])
def test_lookup_ignores_case_and_surrounding_spaces(typed):
    assert CATALOG.find(typed).name == "Llama-3.1-8B"
    assert typed in CATALOG


@pytest.mark.parametrize(("typed", "meant"), [("Llama-3.1-8", "Llama-3.1-8B"), ("deepseek v3", "DeepSeek-V3"),
                                              ("Qwen3-325B-A22B", "Qwen3-235B-A22B"), ("kimi k2", "Kimi-K2")])
def test_a_near_miss_suggests_the_catalog_name(typed, meant):
    with pytest.raises(UnknownModelError) as caught:
        CATALOG.find(typed)
    assert caught.value.suggestion == meant
    assert str(caught.value) == f'"{typed}" is not a catalog model; did you mean "{meant}"?'


def test_a_far_miss_points_to_the_listing():
    with pytest.raises(UnknownModelError) as caught:
        CATALOG.find("banana bread")
    assert caught.value.suggestion is None
    assert "`budgetgen models`" in str(caught.value)


def test_models_sheet_overrides_given_values_and_adds_new_models():
    sheet = [{"model": "llama-3.1-8b", "native_context": 8192, "source": "our fine-tune"},
             {"model": "Ours-MoE", "total_params_b": 50.0, "active_params_b": 5.0, "layers": 24, "hidden": 3072,
              "attn_heads": 24, "kv_heads": 8, "head_dim": 128},
             {"model": "Ours-dense", "total_params_b": 3.0},
             {"model": None, "total_params_b": 9.0}]   # a blank row
    merged = CATALOG.overlay(sheet)
    llama = merged.find("Llama-3.1-8B")
    assert (llama.name, llama.native_context, llama.source, llama.layers, llama.total_params_b) == \
        ("Llama-3.1-8B", 8192, "our fine-tune", 32, 8.0)
    assert merged.find("ours-moe").is_moe and merged.find("Ours-MoE").active_params_b == 5.0
    dense = merged.find("Ours-dense")
    assert (dense.active_params_b, dense.layers, dense.kv_heads) == (3.0, None, None)
    assert len(merged.models) == len(CATALOG.models) + 2
    assert CATALOG.find("Llama-3.1-8B").native_context == 131072 and "Ours-MoE" not in CATALOG


def test_resizing_a_dense_model_moves_its_active_parameters_along():
    resized = CATALOG.overlay([{"model": "Llama-2-7B", "total_params_b": 7.0}]).find("Llama-2-7B")
    assert (resized.total_params_b, resized.active_params_b) == (7.0, 7.0)
    moe = CATALOG.overlay([{"model": "DeepSeek-V3", "total_params_b": 685.0}]).find("DeepSeek-V3")
    assert (moe.total_params_b, moe.active_params_b) == (685.0, 37.6)


@pytest.mark.parametrize(("record", "says"), [
    ({"model": "Mine"}, 'model "Mine": total_params_b is required'),
    ({"model": "Mine", "total_params_b": 7.0, "active_params_b": 9.0}, "active_params_b 9 is more than"),
    ({"model": "Mine", "total_params_b": 7.0, "kv_heads": 8}, "kv_heads and head_dim go together"),
    # what the KV-cache, prefill and activation formulas multiply together is given together
    ({"model": "Mine", "total_params_b": 7.0, "kv_heads": 8, "head_dim": 128, "attn_heads": 32},
     "layers is required with kv_heads, head_dim"),
    ({"model": "Mine", "total_params_b": 7.0, "kv_latent": 576}, "layers is required with kv_latent"),
    ({"model": "Mine", "total_params_b": 7.0, "hidden": 4096}, "layers is required with hidden"),
    ({"model": "Mine", "total_params_b": 7.0, "layers": 32, "kv_heads": 8, "head_dim": 128},
     "attn_heads is required with head_dim"),
    ({"model": "Mine", "total_params_b": 7.0, "layers": 32, "attn_heads": 32, "kv_heads": 64, "head_dim": 128},
     "kv_heads 64 does not divide attn_heads 32"),
    ({"model": "Mine", "total_params_b": 7.0, "layers": 32, "attn_heads": 32, "kv_heads": 12, "head_dim": 128},
     "kv_heads 12 does not divide attn_heads 32"),
    ({"model": "Llama-3.1-8B", "kv_heads": 64}, "kv_heads 64 does not divide attn_heads 32"),  # over the catalog's
])
def test_a_models_sheet_row_that_cannot_make_a_model_says_why(record, says):
    with pytest.raises(ModelRecordError) as caught:
        CATALOG.overlay([record])
    assert says in str(caught.value)


def test_listing_shows_every_model_with_its_architecture():
    text = format_models_table(CATALOG)   # the catalog read at import: the shipped one
    lines = text.splitlines()
    assert lines[1].split() == ["model", "total", "B", "active", "B", "layers", "hidden", "heads", "kv", "heads",
                                "head", "dim", "latent", "context", "experts", "top-k"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[2:]}
    assert set(rows) == {m.name for m in CATALOG.models}
    assert rows["DeepSeek-V3"] == ["671", "37.6", "61", "7,168", "128", "-", "-", "576", "-", "256", "8"]
    assert rows["Llama-2-7B"] == ["6.74", "6.74", "32", "4,096", "32", "32", "128", "-", "4,096", "-", "-"]
    small = format_models_table(ModelCatalog((ModelSpec("tiny", 1.0, 1.0),)))
    assert small.splitlines()[2].split() == ["tiny", "1", "1", "-", "-", "-", "-", "-", "-", "-", "-", "-"]


def test_models_sheet_columns_are_the_catalog_columns():
    with open(Path(__file__).parents[1] / "budgetgen" / "data" / "models.csv", encoding="utf-8") as fh:
        header = next(csv.reader(fh))
    assert [c.name for c in MODEL_COLUMNS] == header
