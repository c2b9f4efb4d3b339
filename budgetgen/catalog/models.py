"""The built-in model catalog (package data `budgetgen/data/models.csv`) and the Models sheet overlay."""

from __future__ import annotations

import csv
import difflib
import json
from dataclasses import dataclass, fields
from functools import cache
from importlib import resources

from ..core.schema import MODEL_COLUMNS, Value

MODELS_RESOURCE = resources.files("budgetgen") / "data" / "models.csv"

_TEXT = {"model", "source"}


@dataclass(frozen=True)
class ModelSpec:
    """One catalog model: size, architecture (None: unknown) and where the figures came from."""

    name: str
    total_params_b: float
    active_params_b: float
    layers: int | None = None
    hidden: int | None = None
    attn_heads: int | None = None
    kv_heads: int | None = None
    head_dim: int | None = None
    kv_latent: int | None = None
    native_context: int | None = None
    vocab_size: int | None = None  # tokens of the vocabulary (embedding, output head, logits)
    experts: int | None = None  # routed experts per MoE layer
    experts_per_token: int | None = None  # routed experts a token uses
    source: str = ""

    @property
    def is_moe(self) -> bool:
        return self.active_params_b < self.total_params_b


class UnknownModelError(KeyError):
    """A model name that is not in the catalog."""

    def __init__(self, name: str, suggestion: str | None):
        self.name, self.suggestion = name, suggestion
        hint = f'; did you mean "{suggestion}"?' if suggestion else "; `budgetgen models` lists the catalog"
        super().__init__(f'"{name}" is not a catalog model{hint}')

    def __str__(self) -> str:
        return self.args[0]


class ModelRecordError(ValueError):
    """A Models sheet row that cannot make a model."""


def _parse(column: str, text: str) -> object:
    if column in _TEXT:
        return text
    if not text.strip():
        return None
    value = float(text)
    return int(value) if value.is_integer() and column not in ("total_params_b", "active_params_b") else value


def model_from_record(rec: dict[str, Value]) -> ModelSpec:
    """A ModelSpec from a record keyed by the Models sheet's column names (numbers already parsed)."""
    name = str(rec.get("model") or "").strip()
    total = rec.get("total_params_b")
    if not name or total is None:
        raise ModelRecordError(f'model "{name}": total_params_b is required (billions of parameters, e.g. 7)')
    active = rec.get("active_params_b")
    active = total if active is None else active
    if active > total:
        raise ModelRecordError(f'model "{name}": active_params_b {active:g} is more than total_params_b {total:g}')
    if rec.get("kv_latent") is None and (rec.get("kv_heads") is None) != (rec.get("head_dim") is None):
        raise ModelRecordError(f'model "{name}": kv_heads and head_dim go together (or kv_latent for MLA)')
    _check_architecture(name, rec)
    architecture = {f.name: rec.get(f.name) for f in fields(ModelSpec)
                    if f.name not in ("name", "total_params_b", "active_params_b", "source")}
    return ModelSpec(name=name, total_params_b=float(total), active_params_b=float(active), **architecture,
                     source=str(rec.get("source") or ""))


def _check_architecture(name: str, rec: dict[str, Value]) -> None:
    """The figures the formulas multiply together are given together: every per-layer figure with `layers`,
    `head_dim` with `attn_heads` (prompt attention), and key/value heads that each serve a group of query heads."""
    per_layer = [c for c in ("hidden", "kv_heads", "head_dim", "kv_latent") if rec.get(c) is not None]
    if per_layer and rec.get("layers") is None:
        raise ModelRecordError(f'model "{name}": layers is required with {", ".join(per_layer)}')
    if rec.get("head_dim") is not None and rec.get("attn_heads") is None:
        raise ModelRecordError(f'model "{name}": attn_heads is required with head_dim')
    experts, top_k = rec.get("experts"), rec.get("experts_per_token")
    if (experts is None) != (top_k is None):
        raise ModelRecordError(f'model "{name}": experts and experts_per_token go together')
    if experts is not None and top_k >= experts:
        raise ModelRecordError(f'model "{name}": experts_per_token {top_k:g} is not fewer than experts {experts:g}')
    kv_heads, attn_heads = rec.get("kv_heads"), rec.get("attn_heads")
    if kv_heads is not None and attn_heads is not None and attn_heads % kv_heads:
        raise ModelRecordError(f'model "{name}": kv_heads {kv_heads:g} does not divide attn_heads {attn_heads:g} '
                               "(each key/value head serves a group of query heads)")


def _record(model: ModelSpec) -> dict[str, Value]:
    return {"model": model.name} | {f.name: getattr(model, f.name) for f in fields(ModelSpec) if f.name != "name"}


@dataclass(frozen=True)
class ModelCatalog:
    """Models by name; lookups ignore case and suggest the nearest name on a miss."""

    models: tuple[ModelSpec, ...]

    def _by_key(self) -> dict[str, ModelSpec]:
        return {m.name.lower(): m for m in self.models}

    def suggest(self, name: str) -> str | None:
        """The catalog name nearest to `name` (ignoring case), or None when nothing is close."""
        keys = self._by_key()
        close = difflib.get_close_matches(name.strip().lower(), list(keys), n=1, cutoff=0.6)
        return keys[close[0]].name if close else None

    def find(self, name: str) -> ModelSpec:
        """The model called `name`, ignoring case; UnknownModelError with a suggestion otherwise."""
        model = self._by_key().get(str(name).strip().lower())
        if model is None:
            raise UnknownModelError(str(name), self.suggest(str(name)))
        return model

    def __contains__(self, name: object) -> bool:
        return str(name).strip().lower() in self._by_key()

    def overlay(self, records: list[dict[str, Value]]) -> ModelCatalog:
        """This catalog with Models sheet records applied: a known name takes the record's given (non-blank)
        values over the catalog row; a new name is a new model (total_params_b required)."""
        merged = {m.name.lower(): _record(m) for m in self.models}
        for rec in records:
            name = str(rec.get("model") or "").strip()
            if not name:
                continue
            base = merged.setdefault(name.lower(), {c.name: None for c in MODEL_COLUMNS} | {"model": name})
            given = {k: v for k, v in rec.items() if v is not None and k != "model"}
            if "total_params_b" in given and "active_params_b" not in given \
                    and base.get("active_params_b") == base.get("total_params_b"):
                base["active_params_b"] = None  # a dense row resized: active follows the new total
            base.update(given)
        return ModelCatalog(tuple(model_from_record(rec) for rec in merged.values()))


@cache
def builtin_models() -> ModelCatalog:
    """The built-in catalog."""
    with MODELS_RESOURCE.open("r", newline="", encoding="utf-8") as fh:  # type: ignore[call-overload]  # typeshed: no newline
        records = [{k: _parse(k, v) for k, v in row.items()} for row in csv.DictReader(fh)]
    return ModelCatalog(tuple(model_from_record(rec) for rec in records))


def models_json(catalog: ModelCatalog | None = None) -> str:
    """The catalog as JSON, the `budgetgen models --json` listing: one object a model, the Models sheet's columns."""
    catalog = builtin_models() if catalog is None else catalog
    return json.dumps([_record(m) for m in catalog.models], indent=2, ensure_ascii=False)


def format_models_table(catalog: ModelCatalog | None = None) -> str:
    """The catalog as a text table, the `budgetgen models` listing."""
    catalog = builtin_models() if catalog is None else catalog
    width = max(len(m.name) for m in catalog.models) + 2
    header = (f"{'model':<{width}}{'total B':>9}{'active B':>10}{'layers':>8}{'hidden':>8}{'heads':>7}"
              f"{'kv heads':>10}{'head dim':>10}{'latent':>8}{'context':>10}{'experts':>9}{'top-k':>7}")
    lines = ["Built-in model catalog (add or override rows on a Models sheet):", header]

    def cell(value, w):
        return f"{value:>{w},}" if value is not None else f"{'-':>{w}}"

    for m in catalog.models:
        lines.append(f"{m.name:<{width}}{m.total_params_b:>9g}{m.active_params_b:>10g}{cell(m.layers, 8)}"
                     f"{cell(m.hidden, 8)}{cell(m.attn_heads, 7)}{cell(m.kv_heads, 10)}{cell(m.head_dim, 10)}"
                     f"{cell(m.kv_latent, 8)}{cell(m.native_context, 10)}{cell(m.experts, 9)}"
                     f"{cell(m.experts_per_token, 7)}")
    return "\n".join(lines) + "\n"
