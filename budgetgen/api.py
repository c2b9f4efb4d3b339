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

from .core.i18n import Message

if TYPE_CHECKING:
    from .plan.engine import Plan
    from .recon import MonthRecon

StrPath = str | PathLike[str]


@dataclass(frozen=True)
class Result:
    """A finished build: the plan, each billed month's reconciliation, and the files written."""

    plan: Plan
    recon: Mapping[str, MonthRecon]
    workbook: Path
    json: Path | None = None
    warnings: tuple[str, ...] = ()  # about the bills and usage, one per finding (grouped in plan.warnings)
    billed_input: Mapping[str, float] = dataclasses.field(default_factory=dict)  # BilledCost of each month's lines


def default_output(input_path: StrPath) -> Path:
    """Where `build` writes when no output is given: outputs/<input stem>-budget.xlsx."""
    return Path("outputs") / f"{Path(input_path).stem}-budget.xlsx"


def results_json(plan, recon: Mapping, billed_input: Mapping[str, float] | None = None) -> str:
    """The engine's results (and the reconciliation months, with `billed_input` the BilledCost of each month's
    input lines for their checks) as the JSON text `--json` writes."""
    from .io.results import plan_json
    from .plan.checks import recon_checks

    checks = recon_checks(plan.inputs.settings, recon, billed_input or {})
    return json.dumps(plan_json(plan, {month: r.to_json() for month, r in recon.items()}, checks), indent=2,
                      ensure_ascii=False)


def build_budget(input_path: StrPath, output: StrPath | None = None, *, bills: Iterable[StrPath] = (),
                 usage: Iterable[StrPath] = (), json_path: StrPath | None = None, lang: str = "en",
                 bill_sums: StrPath | None = None,
                 build_date: dt.date | None = None, progress: Callable[[str], None] | None = None) -> Result:
    """Validate, plan and write the budget workbook (and the results as JSON); return the plan and the paths.

    `bills` are FOCUS bills and `usage` GPU utilisation files to reconcile (`bill_sums`: the result of
    `budgetgen bill-sql`, CSV or Parquet, in place of `bills`); `lang` is "en" or "zh";
    `build_date` stands for today (the default plan period, the file's properties); `progress` is told
    about each stage. Raises InputError listing every problem of the inputs, OutputError when an output
    cannot be written; in either case no output file is created or changed.
    """
    # Loaded here, not when the CLI starts: the bill engine (DuckDB, pandas) and the writers (`budgetgen --help`)
    from .core.warnings import group_warnings
    from .io.reader import read_inputs
    from .io.safefile import check_outputs, staged_outputs
    from .plan.engine import plan_budget
    from .recon import reconcile_plan
    from .recon.bill_sums import expand_bill_path
    from .workbook import resources_csv_paths, write_workbook

    input_path, output = Path(input_path), Path(output) if output is not None else default_output(input_path)
    json_path = Path(json_path) if json_path is not None else None
    bill_paths, usage_paths = [Path(p) for p in bills], [Path(p) for p in usage]
    progress = progress or _quiet
    if isinstance(build_date, dt.datetime):
        build_date = build_date.date()
    # Every file a bill folder or glob expands to is an input no output may replace, and an output a bill folder
    # or glob would pick up is refused too: both before anything is read.
    bill_files = [f for p in bill_paths for f in expand_bill_path(p, p.name)]
    bill_sums = Path(bill_sums) if bill_sums is not None else None
    check_outputs((output, json_path),
                  (input_path, *bill_files, *usage_paths, *([bill_sums] if bill_sums else [])), collected=bill_paths)
    with staged_outputs((output, json_path)) as staging:
        progress(f"reading {input_path.name}")
        inputs = read_inputs(input_path, today=build_date)
        progress(f"planning {len(inputs.tasks):,} tasks on {len(inputs.gpus)} GPUs")
        plan = plan_budget(inputs)
        if bill_paths or bill_sums or inputs.bills_sheet is not None:
            progress(f"reconciling {len(bill_paths) + (inputs.bills_sheet is not None)} bill(s)")
        # DuckDB spills into the staging folder: the destination's disk, removed with it, never $TMPDIR.
        reconciled = reconcile_plan(plan, bill_paths, usage_paths, temp_parent=staging[output].parent, progress=progress,
                                    bill_sums=bill_sums)
        recon, billed = reconciled.months, reconciled.billed_input
        # The bills' and usage warnings join the plan's, grouped with them by kind, so the Summary, the JSON and the
        # command line list the same lines.
        warnings = reconciled.warnings + months_outside_plan(recon, plan.months)
        plan = dataclasses.replace(plan, warnings=group_warnings(plan.warnings + warnings, plan.inputs.settings.currency))
        if json_path is not None:
            staging[json_path].write_text(results_json(plan, recon, billed), encoding="utf-8")
        # xlsxwriter's temporary files go beside the file it writes, inside the staging folder.
        write_workbook(plan, staging[output], recon=recon, billed_input=billed, progress=progress, lang=lang,
                       tmpdir=staging[output].parent)
        # A month of more resources than a Resources sheet lists live has them in a CSV file write_workbook wrote
        # beside the workbook: staged with it, so it is renamed into place with the other outputs.
        for target in resources_csv_paths(plan, recon, output):
            staging.paths[target] = staging[output].with_name(target.name)
    return Result(plan, recon, output, json_path, warnings, billed)


def months_outside_plan(recon: Mapping[str, object], months: tuple[str, ...]) -> tuple[Message, ...]:
    """A warning naming the billed months outside the plan (a bill of 1950 or 2300 is reconciled against nothing)."""
    outside = sorted(m for m in recon if m not in months)
    if not outside:
        return ()
    return (Message("bill_months_outside_plan", months=", ".join(outside), first=months[0], last=months[-1]),)


def _quiet(message: str) -> None:
    """No progress messages."""
