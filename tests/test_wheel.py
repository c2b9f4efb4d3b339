"""The package as users get it: a wheel built from the sources, installed into a fresh venv, runs the sample."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import openpyxl
import pytest
from conftest import REPO, SHIPPED_SAMPLE

pytestmark = pytest.mark.slow

SHIPPED_CATALOG = REPO / "budgetgen" / "data" / "gpus.csv"


def run(*args: object, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    done = subprocess.run([str(a) for a in args], check=False, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, f"{args}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A fresh venv with the wheel built from a copy of the sources installed (dependencies as the tests have them)."""
    root = tmp_path_factory.mktemp("wheel")
    src = root / "src"
    shutil.copytree(REPO / "budgetgen", src / "budgetgen", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("setup.cfg", "pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    scratch = root / "tmp"
    scratch.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(TMPDIR=str(scratch), PIP_DISABLE_PIP_VERSION_CHECK="1")
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", root / "dist", src,
        cwd=root, env=env)
    [wheel] = (root / "dist").glob("budgetgen-*.whl")
    run(sys.executable, "-m", "venv", "--without-pip", root / "venv", cwd=root, env=env)
    python = root / "venv" / "bin" / "python"
    # The dependencies are the ones this interpreter runs the tests with, wherever they live: the system's
    # site-packages as root in CI, an outer venv's when the tests run in a venv (whose --system-site-packages
    # would reach the base interpreter instead). A .pth file puts those folders after the venv's own.
    site_packages = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))",
                             cwd=root, env=env).stdout.strip())
    ours = [p for p in sys.path if p and Path(p).name in ("site-packages", "dist-packages") and Path(p).is_dir()]
    (site_packages / "test-dependencies.pth").write_text("".join(f"{p}\n" for p in ours), encoding="utf-8")
    run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--ignore-installed", wheel,
        cwd=root, env=env)
    return root, env


def test_the_wheel_ships_the_catalog(venv):
    root, _ = venv
    [wheel] = (root / "dist").glob("budgetgen-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        shipped = archive.read("budgetgen/data/gpus.csv")
    assert shipped == SHIPPED_CATALOG.read_bytes()


def test_the_installed_package_is_the_wheel_not_the_sources(venv):
    root, env = venv
    where = run(root / "venv" / "bin" / "python", "-c", "import budgetgen; print(budgetgen.__file__)",
                cwd=root, env=env).stdout.strip()
    assert Path(where).is_relative_to(root / "venv"), where


def test_budgetgen_catalog_from_the_wheel_lists_the_shipped_gpus(venv):
    root, env = venv
    shown = run(root / "venv" / "bin" / "budgetgen", "catalog", cwd=root, env=env).stdout
    with SHIPPED_CATALOG.open(newline="", encoding="utf-8") as fh:
        # a row whose memory, bandwidth or peak is blank (sources conflict) is not offered
        names = [row["gpu"] for row in csv.DictReader(fh) if all(row[c] for c in ("vram_gb", "bandwidth_gbs", "tflops"))]
    specs = shown.split("\n\n")[0].splitlines()[2:]  # the specs table, before the offers
    listed = [line[:12].strip() for line in specs]
    assert listed == names


def test_budgetgen_build_from_the_wheel_writes_the_sample_budget(venv):
    root, env = venv
    out, js = root / "work" / "q3-budget.xlsx", root / "work" / "q3.json"
    done = run(root / "venv" / "bin" / "budgetgen", "build", SHIPPED_SAMPLE, "-o", out, "--json", js, "--quiet",
               cwd=root, env=env)
    assert done.stdout.startswith(f"Wrote {out}\n")
    about = openpyxl.load_workbook(out, read_only=True)["About"]
    facts = {row[0]: row[1] for row in about.iter_rows(min_row=3, values_only=True)}
    assert facts["input SHA-256"] == hashlib.sha256(SHIPPED_SAMPLE.read_bytes()).hexdigest()
    document = json.loads(js.read_text(encoding="utf-8"))
    assert document["months"] == ["2026-07", "2026-08", "2026-09"]  # the sample's Settings: 2026-07, 3 months
    assert sorted(p.name for p in out.parent.iterdir()) == ["q3-budget.xlsx", "q3.json"]


def test_the_library_api_from_the_wheel(venv):
    root, env = venv
    script = ("import sys, budgetgen; r = budgetgen.build_budget(sys.argv[1], sys.argv[2]); "
              "print(r.workbook, len(r.plan.tasks), sorted(budgetgen.__all__) == sorted(set(budgetgen.__all__)))")
    out = root / "api" / "q3.xlsx"
    printed = run(root / "venv" / "bin" / "python", "-c", script, SHIPPED_SAMPLE, out, cwd=root, env=env).stdout.split()
    book = openpyxl.load_workbook(SHIPPED_SAMPLE, read_only=True)
    tasks = sum(1 for row in book["Tasks"].iter_rows(min_row=2, values_only=True) if row and row[0] is not None)
    book.close()
    assert printed == [str(out), str(tasks), "True"] and out.is_file()
