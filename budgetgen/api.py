"""The library's front door: `build_budget` reads an inventory, plans it and writes the workbook (and JSON).

The command line's `build` is this function plus printing; a script or a notebook calls it the same way.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING

from .engine import Plan, plan_budget
from .reader import read_inputs
from .recon import reconcile_plan
from .results import plan_json
from .safefile import check_outputs, staged_outputs
from .workbook import write_workbook

if TYPE_CHECKING:
    from .recon import MonthRecon

StrPath = str | PathLike[str]


@dataclass(frozen=True)
class Result:
    """A finished build: the plan, each billed month's reconciliation, and the files written."""

    plan: Plan
    recon: Mapping[str, MonthRecon]
    workbook: Path
    json: Path | None = None
    warnings: tuple[str, ...] = ()  # about the bills and usage (also at the end of plan.warnings)


def default_output(input_path: StrPath) -> Path:
    """Where `build` writes when no output is given: outputs/<input stem>-budget.xlsx."""
    return Path("outputs") / f"{Path(input_path).stem}-budget.xlsx"


def results_json(plan, recon: dict) -> str:
    """The engine's results (and the reconciliation months) as the JSON text `--json` writes."""
    return json.dumps(plan_json(plan, {month: r.to_json() for month, r in recon.items()}), indent=2, ensure_ascii=False)


def build_budget(input_path: StrPath, output: StrPath | None = None, *, bills: Iterable[StrPath] = (),
                 usage: Iterable[StrPath] = (), json_path: StrPath | None = None, lang: str = "en",
                 build_date: dt.date | None = None, progress: Callable[[str], None] | None = None) -> Result:
    """Validate, plan and write the budget workbook (and the results as JSON); return the plan and the paths.

    `bills` are FOCUS bills and `usage` GPU utilisation files to reconcile; `lang` is "en" or "zh";
    `build_date` stands for today (the default plan period, the file's properties); `progress` is told
    about each stage. Raises InputError listing every problem of the inputs, OutputError when an output
    cannot be written; in either case no output file is created or changed.
    """
    input_path, output = Path(input_path), Path(output) if output is not None else default_output(input_path)
    json_path = Path(json_path) if json_path is not None else None
    bills, usage = [Path(p) for p in bills], [Path(p) for p in usage]
    progress = progress or _quiet
    if isinstance(build_date, dt.datetime):
        build_date = build_date.date()
    check_outputs((output, json_path), (input_path, *bills, *usage))
    progress(f"reading {input_path.name}")
    inputs = read_inputs(input_path, today=build_date)
    progress(f"planning {len(inputs.tasks):,} tasks on {len(inputs.gpus)} GPUs")
    plan = plan_budget(inputs)
    if bills or inputs.bills_sheet is not None:
        progress(f"reconciling {len(bills) + (inputs.bills_sheet is not None)} bill(s)")
    reconciled = reconcile_plan(plan, bills, usage, progress=progress)
    recon, billed = reconciled.months, reconciled.billed_input
    # The bills' and usage warnings join the plan's, so the Summary and the JSON list them all.
    plan = dataclasses.replace(plan, warnings=plan.warnings + reconciled.warnings)
    with staged_outputs((output, json_path)) as staging:
        if json_path is not None:
            staging[json_path].write_text(results_json(plan, recon), encoding="utf-8")
        # xlsxwriter's temporary files go beside the file it writes, inside the staging folder.
        write_workbook(plan, staging[output], recon=recon, billed_input=billed, progress=progress, lang=lang,
                       tmpdir=staging[output].parent)
    return Result(plan, recon, output, json_path, reconciled.warnings)


def _quiet(message: str) -> None:
    """No progress messages."""
