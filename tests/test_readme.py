"""The README's input reference is the one generated from the schema."""

from conftest import REPO

from budgetgen.reference import input_reference


def test_readme_input_reference_is_generated_from_the_schema():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert input_reference() in readme, "regenerate it: python -m budgetgen.reference"


def test_readme_states_the_two_commands():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "python3 -m pip install . && budgetgen build inputs/q3.xlsx" in readme
    assert "python3 -m pip install '.[test]' && python3 -m pytest -q" in readme
