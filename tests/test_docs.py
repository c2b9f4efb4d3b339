"""The documentation (README.md and docs/*.md) names every command, option, input sheet, column and setting, and its
links between pages resolve."""

from __future__ import annotations

import re
from collections.abc import Iterator

import click
import pytest
from conftest import REPO

from budgetgen.catalog.models import MODEL_COLUMNS
from budgetgen.cli import main
from budgetgen.core.schema import EXTRA_COLUMNS, GPU_COLUMNS, SETTINGS, SETTINGS_COLUMNS, SHEETS, TASK_COLUMNS
from budgetgen.io.reader import ASSIGNMENT_COLUMNS
from budgetgen.recon.columns import BILL_INPUT_COLUMNS, USAGE_INPUT_COLUMNS

PAGES = (REPO / "README.md", *sorted((REPO / "docs").glob("*.md")))
DOCS = "\n".join(page.read_text(encoding="utf-8") for page in PAGES)
README = (REPO / "README.md").read_text(encoding="utf-8")


def _commands(group: click.Group, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    for name, command in group.commands.items():
        yield (*path, name), command
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))


COMMANDS = dict(_commands(main))


def _command_table() -> dict[tuple[str, ...], str]:
    """The README's table of commands: the command's words (`budgetgen catalog import`) -> its synopsis cell."""
    section = README.split("\n## Commands\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        if not line.startswith("| `budgetgen"):
            continue
        synopsis = re.split(r"(?<!\\)\|", line)[1].strip().strip("`")
        words = []
        for word in synopsis.split()[1:]:
            if not re.fullmatch(r"[a-z][a-z-]*", word):   # PATH, [--option ...], -o, --version
                break
            words.append(word)
        rows[tuple(words)] = synopsis
    return rows


def test_the_command_table_is_read():
    assert ("build",) in _command_table() and ("catalog", "import") in _command_table()


@pytest.mark.parametrize("path", sorted(COMMANDS), ids=" ".join)
def test_every_command_and_its_options_are_in_the_readme_table(path):
    table = _command_table()
    assert path in table, f"`budgetgen {' '.join(path)}` has no row in the README's table of commands"
    for param in COMMANDS[path].params:
        if isinstance(param, click.Option) and not param.hidden:
            assert any(re.search(rf"(?<![\w-]){re.escape(opt)}(?![\w-])", table[path]) for opt in param.opts), \
                f"`budgetgen {' '.join(path)}`: option {'/'.join(param.opts)} is not in its README row"


def test_the_root_options_are_documented():
    for param in main.params:
        if isinstance(param, click.Option) and not param.hidden:
            assert any(f"budgetgen {opt}" in DOCS for opt in param.opts), param.opts


def _named(name: str) -> bool:
    return f"`{name}`" in DOCS


INPUTS = {
    **{f"Settings setting {s.key}": s.key for s in SETTINGS},
    **{f"{sheet} {c.name}": c.name for sheet, columns in SHEETS.items() for c in columns},
    **{f"Assignments {c.name}": c.name for c in ASSIGNMENT_COLUMNS},
    **{f"Bills {c.name}": c.name for c in BILL_INPUT_COLUMNS},
    **{f"Usage {c.name}": c.name for c in USAGE_INPUT_COLUMNS},
}


def test_the_sheets_walked_hold_the_schema_tuples():
    assert (SHEETS["Tasks"], SHEETS["GPUs"], SHEETS["Extras"], SHEETS["Settings"], SHEETS["Models"]) == (
        TASK_COLUMNS, GPU_COLUMNS, EXTRA_COLUMNS, SETTINGS_COLUMNS, MODEL_COLUMNS)


@pytest.mark.parametrize("what", sorted(INPUTS))
def test_every_input_column_and_setting_is_documented(what):
    assert _named(INPUTS[what]), f"{what} is in no page of the documentation (README.md, docs/*.md)"


@pytest.mark.parametrize("sheet", [*SHEETS, "Assignments", "Bills", "Usage"])
def test_every_input_sheet_is_documented(sheet):
    assert _named(sheet), f"the {sheet} sheet is in no page of the documentation"


def test_every_sheet_column_and_setting_is_in_the_input_reference():
    """The generated reference (docs/input-reference.md) carries each sheet's columns as a table row."""
    page = (REPO / "docs" / "input-reference.md").read_text(encoding="utf-8")
    missing = [s.key for s in SETTINGS if f"| `{s.key}` |" not in page]
    for sheet, columns in SHEETS.items():
        if sheet != "Settings":
            missing += [f"{sheet} {c.name}" for c in columns if f"| `{c.name}` |" not in page]
    assert not missing


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(text: str) -> set[str]:
    text = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    return {_anchor(m.group(1)) for m in re.finditer(r"^#+ (.+)$", text, flags=re.MULTILINE)}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_links_between_pages_resolve(page):
    text = page.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue   # a web address
        file, _, anchor = target.partition("#")
        path = (page.parent / file).resolve() if file else page
        assert path.is_file(), f"{page.name}: link to {target}: no such file"
        if anchor and path.suffix == ".md":
            assert anchor in _anchors(path.read_text(encoding="utf-8")), f"{page.name}: link to {target}: no heading"
