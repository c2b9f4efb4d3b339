"""The input reference (docs/input-reference.md), generated from the schema (a test keeps the page in step)."""

from __future__ import annotations

import sys
from pathlib import Path

from ..catalog.models import MODEL_COLUMNS
from ..core.schema import (
    BUDGET_COLUMNS,
    EXTRA_COLUMNS,
    FX_COLUMNS,
    GPU_COLUMNS,
    RAMP_COLUMNS,
    SCENARIO_COLUMNS,
    SETTINGS,
    TASK_COLUMNS,
    Column,
)

BEGIN = "<!-- input-reference:begin -->"
END = "<!-- input-reference:end -->"


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|") if text not in (None, "") else ""


def _columns_table(columns: tuple[Column, ...]) -> list[str]:
    lines = ["| column | required | unit | default | meaning |", "|---|---|---|---|---|"]
    for c in columns:
        allowed = f" One of: {', '.join(c.choices)}." if c.choices else ""
        lines.append(f"| `{c.name}` | {'yes' if c.required else ''} | {_cell(c.unit)} | {_cell(c.default)} | "
                     f"{_cell(c.help)}{allowed} |")
    return lines


def input_reference() -> str:
    """Markdown tables of every sheet's columns and every setting."""
    lines = [BEGIN, "", "#### Settings (columns `setting`, `value`, optional `note`)", "",
             "| setting | default | unit | name on Assumptions | meaning |", "|---|---|---|---|---|"]
    for s in SETTINGS:
        structural = " Shapes the workbook: change it in the input and rebuild." if s.structural else ""
        lines.append(f"| `{s.key}` | {_cell(s.default)} | {_cell(s.unit)} | `{s.name}` | {_cell(s.help)}.{structural} |")
    for title, columns in (("Tasks (required)", TASK_COLUMNS), ("GPUs (optional, merged over the built-in catalog)",
                                                                 GPU_COLUMNS),
                           ("Models (optional, merged over the built-in model catalog: `budgetgen models`)",
                            MODEL_COLUMNS), ("Extras (optional)", EXTRA_COLUMNS),
                           ("FX (optional: rates that replace the bundled reference rates)", FX_COLUMNS),
                           ("Ramp (optional: a month's multiplier of a task's typed demand)", RAMP_COLUMNS),
                           ("Scenarios (optional: low, base and high values of the drivers)", SCENARIO_COLUMNS),
                           ("Budgets (optional: a monthly budget per cost center or for the whole plan)",
                            BUDGET_COLUMNS)):
        lines += ["", f"#### {title}", "", *_columns_table(columns)]
    lines += ["", END]
    return "\n".join(lines)


def rewrite(path: str) -> None:
    """Replace the generated block (BEGIN to END) of the page at `path` with the schema's."""
    page = Path(path).read_text(encoding="utf-8")
    start, end = page.index(BEGIN), page.index(END) + len(END)
    Path(path).write_text(page[:start] + input_reference() + page[end:], encoding="utf-8")


if __name__ == "__main__":  # python -m budgetgen.io.reference [PAGE]: rewrite PAGE's block, or print the block
    if len(sys.argv) > 1:
        rewrite(sys.argv[1])
    else:
        print(input_reference())
