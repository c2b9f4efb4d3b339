"""The README's two commands and its length; the input reference and the worked example in docs/ (see test_docs)."""

import csv
import json

import pytest
from conftest import REPO, SHIPPED_SAMPLE, shipped_catalogs

from budgetgen.io.reference import input_reference


def test_input_reference_is_generated_from_the_schema():
    page = (REPO / "docs" / "input-reference.md").read_text(encoding="utf-8")
    assert input_reference() in page, "regenerate it: python -m budgetgen.io.reference"


def test_readme_is_at_most_400_lines():
    """The README says what budgetgen is, the two commands, the finance quick start, the commands and where to read
    on; the rest is in docs/."""
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 400, f"README.md has {len(lines)} lines: move a section to docs/"


def test_readme_states_the_two_commands():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "python3 -m pip install . && budgetgen build inputs/q3.xlsx" in readme
    assert "python3 -m pip install '.[test]' && python3 -m pytest -q" in readme


@pytest.fixture(scope="module")
def shipped_build(tmp_path_factory):
    """The shipped sample built by the CLI with the catalogs the package ships (not the tests' fixed copies), as a
    user's `budgetgen build inputs/q3.xlsx` builds it: (output, JSON results)."""
    from click.testing import CliRunner

    from budgetgen.cli import main

    folder = tmp_path_factory.mktemp("shipped")
    with shipped_catalogs():
        result = CliRunner().invoke(main, ["build", str(SHIPPED_SAMPLE), "-o", str(folder / "q3-budget.xlsx"),
                                           "--json", str(folder / "q3.json"), "-q", "--date", "2026-06-15"])
    assert result.exit_code == 0, result.output
    return result.output, json.loads((folder / "q3.json").read_text(encoding="utf-8"))


def test_worked_example_prints_what_the_build_prints(shipped_build):
    """The finance guide's worked example is the shipped sample's build output, line for line (period and month
    totals): what a user's `budgetgen build` prints."""
    guide = (REPO / "docs" / "finance-guide.md").read_text(encoding="utf-8")
    totals = [line for line in shipped_build[0].splitlines() if line.startswith(("Period total", "  2026-"))]
    assert len(totals) == 4
    for line in totals:
        assert line in guide, line


def _cheapest_offer(gpu: str, currency: str, column: str = "on_demand_per_hour") -> float:
    """The cheapest price of `gpu` in `currency` on `column`, read from the shipped prices.csv by hand."""
    with (REPO / "budgetgen" / "data" / "prices.csv").open(encoding="utf-8") as f:
        return min(float(r[column]) for r in csv.DictReader(f)
                   if r["gpu"] == gpu and r["currency"] == currency and r[column])


def test_the_shipped_sample_rents_each_card_at_its_cheapest_sourced_offer(shipped_build):
    """KB01, 2 replicas of an RTX 4090 8 hours a day: the RTX 4090 has CNY offers, so the plan rents it at the cheapest
    of them, 2 x 8 h x 730/24 days x price; KB03's A100 80G has none, so (offer_currency any) its cheapest USD offer
    converted at the sample's FX sheet (6.6529 CNY a dollar) x 15.47 GPU-hours. Every task is priced and every used
    offer names its provider."""
    tasks = {t["task_id"]: t for t in shipped_build[1]["tasks"]}
    rtx = _cheapest_offer("RTX 4090", "CNY")
    assert rtx == 1.24  # the price index's cheapest seller (docs/prices.md)
    assert tasks["KB01"]["monthly_cost"] == pytest.approx(2 * 8 * 730 / 24 * rtx, abs=0.005)
    a100 = _cheapest_offer("A100 80G", "USD") * 6.6529
    assert tasks["KB03"]["monthly_cost"] == pytest.approx(tasks["KB03"]["gpu_hours_per_month"] * a100, rel=1e-9)
    assert all(t["monthly_cost"] > 0 and t["offer"] for t in tasks.values())
