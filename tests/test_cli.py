"""The commands (§7): exit codes, `Error:` lines, the JSON results (§6), atomic output."""

from __future__ import annotations

import hashlib
import json

import pytest
from click.testing import CliRunner
from conftest import SAMPLE, make_input

from budgetgen.cli import main

TASK_KEYS = {"task_id", "kind", "method", "gpu", "tier", "cards", "cards_min", "vram_gb", "flops_per_run",
             "compute_hours", "compute_gpu_hours", "gpu_hours_per_run", "gpu_hours_per_month", "tokens_per_day",
             "tokens_per_sec", "card_days", "replicas", "monthly_cost", "cost_by_month", "tier_costs",
             "cheapest_tier", "candidates", "warnings"}


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_init_then_build_works_without_edits(tmp_path):
    book = tmp_path / "x.xlsx"
    assert run("init", book).exit_code == 0
    result = run("build", book, "-o", tmp_path / "x-budget.xlsx")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "x-budget.xlsx").stat().st_size > 10000
    assert "Period total" in result.output


def test_build_sample_writes_workbook_and_json(tmp_path):
    before = hashlib.sha256(SAMPLE.read_bytes()).hexdigest()
    out, js = tmp_path / "q3-budget.xlsx", tmp_path / "r.json"
    result = run("build", SAMPLE, "-o", out, "--json", js)
    assert result.exit_code == 0, result.output
    assert hashlib.sha256(SAMPLE.read_bytes()).hexdigest() == before
    data = json.loads(js.read_text())
    assert data["currency"] == "CNY" and data["months"] == ["2026-07", "2026-08", "2026-09"]
    for task in data["tasks"]:
        assert TASK_KEYS <= set(task)
        assert set(task["tier_costs"]) == {"monthly", "on_demand", "idle", "spot"}
        assert sum(c["chosen"] for c in task["candidates"]) == 1
        assert task["cards"] >= task["cards_min"]
    training = next(t for t in data["tasks"] if t["kind"] == "finetune")
    assert training["tokens_per_day"] is None and training["replicas"] is None
    service = next(t for t in data["tasks"] if t["kind"] == "inference")
    assert service["flops_per_run"] is None and service["replicas"] >= 1
    months = data["month_totals"]
    assert data["period_total"] == pytest.approx(sum(m["total"] for m in months.values()))
    for month, totals in months.items():
        assert totals["gpu"] == pytest.approx(sum(t["cost_by_month"][month] for t in data["tasks"]))
        assert totals["gpu"] == pytest.approx(sum(data["tier_totals"][t][month] for t in data["tier_totals"]))
        assert totals["buffer"] == pytest.approx(0.25 * totals["gpu"])


def test_validate_reports_five_mistakes_with_cells(tmp_path):
    path = make_input(tmp_path / "bad.xlsx", [
        {"task_id": "T1", "kind": "finetune", "model_params_b": "seven", "train_tokens": "1M", "tier": "on_demand"},
        {"task_id": "T1", "kind": "inference", "model_params_b": 7, "train_tokens": None, "tier": "sometimes"},
        {"task_id": "T3", "kind": "batch", "model_params_b": -1, "train_tokens": None, "tier": None},
    ])
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 1
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert "Traceback" not in result.output
    cells = [line.split()[1] for line in errors]
    assert "Tasks!C2" in cells          # "seven"
    assert "Tasks!A3" in cells          # duplicate T1
    assert "Tasks!E3" in cells          # tier "sometimes"
    assert "Tasks!C4" in cells          # -1 parameters
    assert any(c.startswith("Tasks!") and c.endswith("4") and c != "Tasks!C4" for c in cells) or \
        any("batch_requests" in e for e in errors)   # batch without batch_requests
    assert len(errors) >= 5
    assert 'Error: Tasks!C2 model_params_b: "seven" is not a number (billions of parameters, e.g. 7 or 7B)' in errors


def test_failed_build_leaves_earlier_output_untouched(tmp_path):
    out = tmp_path / "out.xlsx"
    out.write_bytes(b"earlier output")
    bad = make_input(tmp_path / "bad.xlsx", [{"task_id": "T", "kind": "finetune", "model_params_b": "x"}])
    result = CliRunner().invoke(main, ["build", str(bad), "-o", str(out)])
    assert result.exit_code == 1 and result.stdout == "" and result.stderr.startswith("[")
    assert "Error: Tasks!C2 model_params_b" in result.stderr
    assert out.read_bytes() == b"earlier output"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_output_equal_to_input_is_refused(tmp_path):
    book = tmp_path / "x.xlsx"
    run("init", book)
    before = book.read_bytes()
    result = CliRunner().invoke(main, ["build", str(book), "-o", str(book)])
    assert result.exit_code == 1 and "would overwrite the input" in result.output
    assert book.read_bytes() == before


def test_catalog_lists_builtin_gpus():
    result = run("catalog")
    assert result.exit_code == 0
    assert "RTX 4090" in result.output and "H100 80G" in result.output and "27,900" in result.output
    offers = result.output.split("\n\n")[1].splitlines()
    assert offers[1].split()[:4] == ["gpu", "provider", "region", "cur"]
    assert any(line.split()[:6] == ["H100", "80G", "market", "any", "USD", "-"] for line in offers)


@pytest.mark.parametrize("command", ["init", "validate", "build", "diff", "catalog"])
def test_help_on_every_command(command):
    assert run(command, "--help").exit_code == 0


def test_output_is_an_ordinary_readable_file(tmp_path):
    out = tmp_path / "o.xlsx"
    assert run("build", SAMPLE, "-o", out).exit_code == 0
    assert out.stat().st_mode & 0o044 == 0o044   # readable by group and others under the usual umask 022


def test_progress_on_stderr_and_quiet(tmp_path):
    loud = CliRunner().invoke(main, ["build", str(SAMPLE), "-o", str(tmp_path / "a.xlsx")])
    quiet = CliRunner().invoke(main, ["build", str(SAMPLE), "-o", str(tmp_path / "b.xlsx"), "--quiet"])
    assert loud.exit_code == quiet.exit_code == 0
    assert "planning 8 tasks on 7 GPUs" in loud.stderr and "writing Candidates (56 rows)" in loud.stderr
    assert quiet.stderr == "" and "Period total" in quiet.stdout


def test_two_builds_of_the_same_input_are_byte_identical(tmp_path):
    first, second = tmp_path / "a" / "o.xlsx", tmp_path / "b" / "o.xlsx"
    assert run("build", SAMPLE, "-o", first, "--date", "2026-06-15").exit_code == 0
    assert run("build", SAMPLE, "-o", second, "--date", "2026-06-15").exit_code == 0
    assert first.read_bytes() == second.read_bytes()
    third = tmp_path / "c" / "o.xlsx"
    assert run("build", SAMPLE, "-o", third, "--date", "2026-06-16").exit_code == 0
    assert third.read_bytes() != first.read_bytes()      # the build date is in the file's properties


def test_about_sheet_names_version_input_and_its_hash(tmp_path):
    import openpyxl

    from budgetgen import __version__
    out = tmp_path / "o.xlsx"
    assert run("build", SAMPLE, "-o", out, "--date", "2026-06-15").exit_code == 0
    ws = openpyxl.load_workbook(out)["About"]
    about = {ws.cell(r, 1).value: ws.cell(r, 2).value for r in range(3, ws.max_row + 1)}
    assert about["made by"] == f"budgetgen {__version__}"
    assert about["input file"] == "q3.xlsx"
    assert about["input SHA-256"] == hashlib.sha256(SAMPLE.read_bytes()).hexdigest()
    assert about["build date"] == "2026-06-15" and about["setting period_start"] == "2026-07"


def test_protected_output_unlocks_inputs_and_locks_formulas(tmp_path):
    import openpyxl
    out = tmp_path / "o.xlsx"
    assert run("build", SAMPLE, "-o", out).exit_code == 0
    wb = openpyxl.load_workbook(out)
    assert all(ws.protection.sheet for ws in wb.worksheets)
    assert all(ws.protection.password is None for ws in wb.worksheets)
    gpus = wb["GPUs"]
    price = next(c for c in gpus[1] if c.value.startswith("on_demand_per_hour")).column
    assert gpus.cell(2, price).protection.locked is False            # a price can be edited
    tasks = wb["Tasks"]
    head = {c.value: c.column for c in tasks[1]}
    assert tasks.cell(2, head["gpu (chosen)"]).protection.locked is False
    cost = next(col for title, col in head.items() if title.startswith("cost a month"))
    assert tasks.cell(2, cost).data_type == "f" and tasks.cell(2, cost).protection.locked is True
    assumptions = wb["Assumptions"]
    mfu_row = next(r for r in range(2, 40) if assumptions.cell(r, 1).value == "mfu")
    assert assumptions.cell(mfu_row, 2).protection.locked is False


def test_diff_command_prints_changes_and_refuses_to_overwrite(tmp_path):
    same_result = run("diff", SAMPLE, SAMPLE)
    assert same_result.exit_code == 0 and "no changes" in same_result.output.lower()
    copy = tmp_path / "new.xlsx"
    copy.write_bytes(SAMPLE.read_bytes())
    refused = CliRunner().invoke(main, ["diff", str(SAMPLE), str(copy), "-o", str(copy)])
    assert refused.exit_code == 1 and "Error:" in refused.output
    assert copy.read_bytes() == SAMPLE.read_bytes()


# ------------------------------------------------------------------ text from files on the terminal

CLEAR, LINK = "\x1b[2J", "\x1b]8;;x.invalid\x07"


def test_a_task_id_cannot_reorder_or_forge_a_line(tmp_path):
    forged = "T1\u202e\nPeriod total 2026-07 to 2026-09: 0 CNY"
    book = make_input(tmp_path / "in.xlsx", [{"task_id": forged, "kind": "finetune", "model_params_b": 7,
                                              "method": "lora", "train_tokens": "5M", "tier": "on_demand"}])
    result = CliRunner().invoke(main, ["validate", str(book)])   # a warning names it: cheaper on spot
    assert "\u202e" not in result.output
    assert not any(line.startswith("Period total") for line in result.output.splitlines())
    assert "T1\\u202e\\nPeriod total" in result.output  # shown, as escapes, within its own line


def test_a_file_name_and_a_quoted_cell_reach_the_terminal_escaped(tmp_path):
    bill = tmp_path / f"bill{LINK}.csv"
    bill.write_text(f"ChargePeriodStart,BilledCost,BillingCurrency\n2026-07-03,12{CLEAR}\u202e5,CNY\n")
    book = make_input(tmp_path / "in.xlsx", [{"task_id": "T1", "kind": "finetune", "model_params_b": 7,
                                              "method": "lora", "train_tokens": "5M"}])
    result = CliRunner().invoke(main, ["build", str(book), "--bills", str(bill), "-o", str(tmp_path / "b.xlsx"), "-q"])
    assert result.exit_code == 1
    error, = [line for line in result.output.splitlines() if line.startswith("Error: ")]
    assert error.startswith("Error: bill\\x1b]8;;x.invalid\\x07.csv!row 2 BilledCost: \"12\\x1b[2J\\u202e5\"")
    assert "\x1b" not in result.output and "\u202e" not in result.output


def test_every_message_is_one_line_however_the_value_breaks():
    from budgetgen.core.errors import printable

    assert printable("a\nb\r\u2028c\u2029d\x85e") == "a\\nb\\r\\u2028c\\u2029d\\x85e"
    assert printable("\u202e\u2066\u200b\ufeff") == "\\u202e\\u2066\\u200b\\ufeff"  # bidi and zero-width
    assert printable("任务 T1 ü") == "任务 T1 ü"  # letters of any script stay as they are
