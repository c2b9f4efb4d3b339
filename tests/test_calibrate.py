"""`budgetgen calibrate`: per-GPU efficiencies fitted to measured runs, on the shared published sets and on runs
whose true efficiency is known."""

from __future__ import annotations

import csv
import dataclasses
import math
from importlib.resources import files
from pathlib import Path

import openpyxl
import pytest
from click.testing import CliRunner
from conftest import TODAY, make_input
from test_published_v3 import FIT
from test_serving_engine import PUBLISHED

from budgetgen import calibrate, catalog, models
from budgetgen.cli import main
from budgetgen.engine import plan_budget
from budgetgen.errors import Code, InputError
from budgetgen.model import Settings
from budgetgen.reader import read_inputs


@pytest.fixture
def shipped_catalogs(monkeypatch):
    """The catalogs the package ships: the published runs name cards and models the tests' fixed copies lack."""
    monkeypatch.setattr(catalog, "CATALOG_RESOURCE", files("budgetgen") / "data" / "gpus.csv")
    monkeypatch.setattr(models, "MODELS_RESOURCE", files("budgetgen") / "data" / "models.csv")
    models.builtin_models.cache_clear()
    yield
    models.builtin_models.cache_clear()


def _published_runs() -> list[dict]:
    """The 33 published serving runs and the fit set's runs of catalog models on a stated card count."""
    runs = [{"kind": "serve", "model": c["model"], "gpu": c["gpu"], "cards": c["cards"], "method": c["precision"],
             "kv_cache_dtype": "fp8" if c["kv_cache_bytes"] == "1" else "fp16", "prompt": c["prompt_tokens"],
             "output": c["output_tokens"], "concurrency": c["concurrency"],
             "measured": c["published_output_tokens_per_s"]} for c in PUBLISHED]
    for r in FIT:
        if r["kind"] == "serve" and r["cards"] and "replica" in r["published_unit"]:
            runs.append({"kind": "serve", "model": r["model"], "gpu": r["gpu"], "cards": r["cards"],
                         "method": r["method"], "kv_cache_dtype": r["kv_cache_dtype"], "prompt": r["prompt"],
                         "output": r["output"], "concurrency": r["concurrency"], "measured": r["published"]})
        if r["kind"] == "train" and r["model"]:
            precision = next((p for p in ("fp8", "fp4") if p.upper() in r["label"]), "")
            runs.append({"kind": "train", "model": r["model"], "gpu": r["gpu"], "cards": r["cards"],
                         "method": r["method"], "train_precision": precision, "tokens": r["train_tokens"],
                         "measured": float(r["published"]) / float(r["cards"])})   # wall-clock hours
    return runs


def _write_csv(path: Path, runs: list[dict]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=calibrate.MEASURED_COLUMNS)
        writer.writeheader()
        writer.writerows(runs)
    return path


def test_calibrating_on_the_published_sets_lowers_the_fit_error_and_writes_pasteable_gpu_rows(
        tmp_path, shipped_catalogs):
    runs = _published_runs()
    assert len(runs) == 33 + 5 + 4   # 5 serving runs per replica on stated cards, 4 training runs of catalog models
    measured = _write_csv(tmp_path / "measured.csv", runs)
    out = tmp_path / "fit.xlsx"
    result = CliRunner().invoke(main, ["calibrate", str(measured), "-o", str(out), "--date", "2026-12-03"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert len([line for line in lines if line.split()[:1] and line.split()[0].isdigit()]) == len(runs)
    error = next(line for line in lines if line.startswith("sum of squared log ratios"))
    before, after = (float(word.rstrip(",")) for word in error.split() if word[0].isdigit())
    assert after < before
    # the sheet's rows go on an input's GPUs sheet as they are, and the plan uses the fitted figures
    sheet = openpyxl.load_workbook(out)["GPUs"]
    header = [c.value for c in sheet[1]]
    rows = [dict(zip(header, (c.value for c in row), strict=True)) for row in sheet.iter_rows(min_row=2)]
    assert {r["gpu"] for r in rows} == {r["gpu"] for r in runs}
    assert all(r["source"].startswith("calibrated from ") and " runs on 2026-12-03" in r["source"] for r in rows)
    settings = {r[0].value: r[1].value for r in openpyxl.load_workbook(out)["Settings"].iter_rows(min_row=2)}
    assert set(settings) == {"mfu", "lora_mfu"}   # full and LoRA/QLoRA training runs: both fitted, both moved
    moved = next(r for r in rows if r["bandwidth_efficiency"] not in (None, 0.70))
    task = {"task_id": "S", "kind": "inference", "model": "Llama-3.1-8B", "gpu": moved["gpu"], "cards": 1,
            "requests_per_day": 1000, "tokens_per_request": 200, "tier": "on_demand"}
    path = make_input(tmp_path / "in.xlsx", [task], gpus=[moved], settings=settings)
    plan = plan_budget(read_inputs(path, today=TODAY))
    assert plan.tasks[0].row["bandwidth_share"] == moved["bandwidth_efficiency"]
    assert plan.inputs.settings.lora_mfu == settings["lora_mfu"]


@pytest.mark.parametrize(("bandwidth", "matmul", "lora_mfu"), [(0.50, None, 0.55), (0.85, 0.60, 0.55),
                                                               (0.70, None, 0.42)])
def test_calibration_recovers_the_efficiencies_that_made_the_runs(bandwidth, matmul, lora_mfu, tmp_path):
    """Runs 'measured' on an H100 that reaches `bandwidth` of its memory bandwidth and `matmul` of the matmul
    peak, and LoRA at `lora_mfu`: a single stream (bandwidth-bound), a big batch (matmul-bound) and a LoRA run.
    The fit starts from the catalog's blank figures and the default settings and finds the true ones."""
    gpus = {g.name.lower(): g for g in catalog.builtin_catalog()}
    truth = dataclasses.replace(gpus["h100 80g"], bandwidth_efficiency=bandwidth, matmul_efficiency=matmul)
    made = dataclasses.replace(Settings(), lora_mfu=lora_mfu)
    catalog_models = models.builtin_models()
    shapes = [{"kind": "serve", "method": "fp16", "prompt": 100, "output": 500, "concurrency": 1, "cards": 1},
              {"kind": "serve", "method": "fp8", "prompt": 2000, "output": 200, "concurrency": 256, "cards": 1},
              {"kind": "train", "method": "lora", "tokens": 1e8, "cards": 1}]
    runs = []
    for line, shape in enumerate(shapes, start=2):
        run = calibrate.MeasuredRun(line=line, model="Llama-3.1-8B", gpu="H100 80G", measured=1, **shape)
        value = calibrate.predict(run, truth, made, catalog_models)
        runs.append(dataclasses.replace(run, measured=value))
    fit = calibrate.calibrate(runs, gpus, Settings(), catalog_models, "calibrated from {n} runs")
    (fitted,) = fit.gpus
    assert (fitted.bandwidth_efficiency or Settings().decode_efficiency) == pytest.approx(bandwidth, abs=0.011)
    assert (fitted.matmul_efficiency or 1.0) == pytest.approx(matmul or 1.0, abs=0.011)
    assert fit.settings.get("lora_mfu", 0.55) == pytest.approx(lora_mfu, abs=0.011)
    assert max(abs(math.log(r)) for r in fit.after) < 0.02 < max(abs(math.log(r)) for r in fit.before)
    assert fitted.source.startswith("calibrated from 2 runs")   # the serving runs fit the card


def test_a_measured_run_that_cannot_be_read_is_a_problem_at_its_row(tmp_path):
    path = _write_csv(tmp_path / "bad.csv", [
        {"kind": "serve", "model": "Llama-3.1-8B", "gpu": "H100 80G", "cards": 1, "output": 200, "measured": 900},
        {"kind": "bake", "model": "Llama-3.1-8B", "gpu": "H100 80G", "cards": 1, "measured": 1},
        {"kind": "train", "model": "Llama-9", "gpu": "H100 80G", "cards": "two", "measured": 5},
    ])
    gpus = {g.name.lower(): g for g in catalog.builtin_catalog()}
    with pytest.raises(InputError) as caught:
        calibrate.read_measured(path, models.builtin_models(), gpus)
    found = {(p.cell, p.code, str(p.message).split(":")[0]) for p in caught.value.problems}
    assert found == {("A3", Code.UNKNOWN_VALUE, "kind"), ("B4", Code.UNKNOWN_VALUE, "model"),
                     ("D4", Code.NOT_A_NUMBER, "cards"), ("K4", Code.REQUIRED, "tokens")}


def test_the_calibrate_command_refuses_bad_runs_and_writes_nothing(tmp_path):
    path = _write_csv(tmp_path / "bad.csv", [{"kind": "serve", "model": "Llama-3.1-8B", "gpu": "No Such GPU",
                                               "cards": 1, "output": 200, "measured": 900}])
    out = tmp_path / "fit.xlsx"
    result = CliRunner().invoke(main, ["calibrate", str(path), "-o", str(out)])
    assert result.exit_code == 1
    assert 'Error: bad.csv!C2 gpu: "No Such GPU" is not a catalog GPU' in result.output
    assert not out.exists()
