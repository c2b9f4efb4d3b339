"""The README's two commands and its length; the input reference and the worked example in docs/ (see test_docs)."""

from conftest import REPO

from budgetgen.reference import input_reference


def test_input_reference_is_generated_from_the_schema():
    page = (REPO / "docs" / "input-reference.md").read_text(encoding="utf-8")
    assert input_reference() in page, "regenerate it: python -m budgetgen.reference"


def test_readme_is_at_most_400_lines():
    """The README says what budgetgen is, the two commands, the finance quick start, the commands and where to read
    on; the rest is in docs/."""
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 400, f"README.md has {len(lines)} lines: move a section to docs/"


def test_readme_states_the_two_commands():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "python3 -m pip install . && budgetgen build inputs/q3.xlsx" in readme
    assert "python3 -m pip install '.[test]' && python3 -m pytest -q" in readme


def test_worked_example_prints_what_the_build_prints(tmp_path, monkeypatch):
    """The finance guide's worked example is the sample's build output, line for line (period and month totals), with
    the catalogs the package ships (not the tests' fixed copies): what a user's `budgetgen build` prints."""
    from importlib.resources import files

    from click.testing import CliRunner
    from conftest import SAMPLE

    from budgetgen import catalog, models, prices
    from budgetgen.cli import main

    monkeypatch.setattr(catalog, "CATALOG_RESOURCE", files("budgetgen") / "data" / "gpus.csv")
    monkeypatch.setattr(prices, "OFFERS_RESOURCE", files("budgetgen") / "data" / "prices.csv")
    monkeypatch.setattr(models, "MODELS_RESOURCE", files("budgetgen") / "data" / "models.csv")
    models.builtin_models.cache_clear()

    guide = (REPO / "docs" / "finance-guide.md").read_text(encoding="utf-8")
    try:
        result = CliRunner().invoke(main, ["build", str(SAMPLE), "-o", str(tmp_path / "q3-budget.xlsx"), "-q",
                                           "--date", "2026-06-15"])
    finally:
        models.builtin_models.cache_clear()   # the next test's model catalog is the fixed copy again
    assert result.exit_code == 0, result.output
    totals = [line for line in result.output.splitlines() if line.startswith(("Period total", "  2026-"))]
    assert len(totals) == 4
    for line in totals:
        assert line in guide, line
