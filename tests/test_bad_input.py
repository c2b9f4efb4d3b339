"""Bad input and untrusted files through `budgetgen build` (§9): one clear error each, exit 1, no file changed."""

from __future__ import annotations

import csv
import hashlib
import itertools
import json
import os
import re
import struct
import subprocess
import sys
import zipfile
from collections import Counter
from pathlib import Path

import openpyxl
import pytest
import xlsxwriter
from click.testing import CliRunner, Result
from conftest import REPO, TEST_CATALOG, local_recalc, make_input, prove
from defusedxml import ElementTree

from budgetgen.cli import main
from budgetgen.io.reader import MAX_TABLE_ROWS

SERVICE = {"task_id": "T1", "task": "chat", "kind": "inference", "model_params_b": 7, "requests_per_day": 1000,
           "tokens_per_request": 200, "cost_center": "kb"}
TRAINING = {"task_id": "F1", "kind": "finetune", "model_params_b": 7, "train_tokens": "5M"}
BATCH = {**SERVICE, "kind": "batch", "requests_per_day": None, "batch_requests": 5000}
EARLIER = b"the budget built last month"
CPU_SECONDS = 10  # each untrusted file is refused (or built) within this much work (not wall time: a busy
# machine stretches that, never the CPU time the build itself spends)
PEAK_MB = 1024  # and in less memory than this
MAIN_NS = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
REL_NS = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
PAYLOADS = ('=HYPERLINK("http://x.invalid","x")', "=cmd|' /C calc'!A0", "+1+1", "@SUM(1)", "-2+3",
            "http://x.invalid/a")
PLAIN = tuple(f"plain {sorted(PAYLOADS).index(p)}" for p in PAYLOADS)  # harmless, sorting as the payloads do
PROGRESS = re.compile(r"\[\s*\d+\.\d+s\] ")  # build's timed stage messages on stderr


def build(*args: object) -> Result:
    """`budgetgen build` in-process, exceptions caught as the console would show them."""
    return CliRunner().invoke(main, ["build", *map(str, args)])


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under `folder` and its SHA-256, to prove a failed build changed nothing."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink()}


def shown(output: str) -> list[str]:
    """The lines a user reads, less the progress messages."""
    return [line for line in output.splitlines() if not PROGRESS.match(line)]


def errors_in(output: str) -> list[str]:
    """The `Error:` lines of a failed command, checking that nothing else was printed but their count."""
    lines = shown(output)
    errors = [line for line in lines if line.startswith("Error: ")]
    rest = [line for line in lines if not line.startswith("Error: ")]
    assert errors, output
    assert rest in ([], [f"{len(errors)} problem(s) found; nothing was written."]), output
    return errors


def error_lines(result: Result) -> list[str]:
    """The `Error:` lines of a build that failed as it should: exit 1, no traceback."""
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit)
    return errors_in(result.output)


def refused(book: Path, *args: object, out: Path | None = None) -> list[str]:
    """Build `book`, which must fail: the `Error:` lines, the input and an earlier output left byte for byte."""
    out = out or book.parent / "outputs" / "budget.xlsx"
    if not out.exists():
        out.parent.mkdir(exist_ok=True)
        out.write_bytes(EARLIER)
    before = snapshot(book.parent)
    errors = error_lines(build(book, "-o", out, *args))
    assert snapshot(book.parent) == before
    return errors


def as_typed_text(book: Path) -> Path:
    """Store every cell openpyxl took for a formula as text, as Excel keeps a cell typed with a leading '."""
    wb = openpyxl.load_workbook(book)
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for cell in row:
                if cell.data_type == "f":
                    cell.data_type = "s"
    wb.save(book)
    return book


def rewrite(book: Path, members: dict[str, bytes]) -> Path:
    """Replace or add members of the workbook zip in place."""
    with zipfile.ZipFile(book) as old:
        parts = {item.filename: old.read(item) for item in old.infolist()}
    with zipfile.ZipFile(book, "w", zipfile.ZIP_DEFLATED) as new:
        for name, data in {**parts, **members}.items():
            new.writestr(name, data)
    return book


def replace_text(book: Path, old: str, new: str) -> Path:
    """Replace `old` by `new` in the one XML part that holds it (openpyxl would cut a text at 32,767 characters)."""
    with zipfile.ZipFile(book) as z:
        parts = {name: z.read(name).decode() for name in z.namelist() if old in z.read(name).decode()}
    assert len(parts) == 1, parts.keys()
    return rewrite(book, {name: xml.replace(old, new).encode() for name, xml in parts.items()})


def write_input(book: Path, rows, options: dict | None = None) -> xlsxwriter.Workbook:
    """An open xlsxwriter input (shared strings, as Excel saves) with Settings and `rows` on Tasks; close() it."""
    wb = xlsxwriter.Workbook(book, options or {})
    settings = wb.add_worksheet("Settings")
    for r, row in enumerate([["setting", "value"], ["period_start", "2026-07"]]):
        settings.write_row(r, 0, row)
    ws = wb.add_worksheet("Tasks")
    for r, row in enumerate(rows):
        ws.write_row(r, 0, row)
    return wb


def sheet_parts(book: Path) -> dict[str, str]:
    """Sheet name -> its part in the zip, from the workbook's relationships."""
    with zipfile.ZipFile(book) as z:
        rels = ElementTree.fromstring(z.read("xl/_rels/workbook.xml.rels"))
        workbook = ElementTree.fromstring(z.read("xl/workbook.xml"))
    target = {r.get("Id"): r.get("Target") for r in rels}
    return {s.get("name"): "xl/" + target[s.get(f"{REL_NS}id")].removeprefix("/xl/")
            for s in workbook.iter(f"{MAIN_NS}sheet")}


def compound_file(streams: dict[str, bytes]) -> bytes:
    """A minimal OLE compound file (512-byte sectors) holding `streams`, as an encrypted .xlsx is stored."""
    end, free, fat_sector = 0xFFFFFFFE, 0xFFFFFFFF, 0xFFFFFFFD
    datas = [data.ljust(4096, b"\0") for data in streams.values()]  # from the mini-stream cutoff: plain sectors
    sectors = [data.ljust(-(-len(data) // 512) * 512, b"\0") for data in datas]
    fat, start = [fat_sector, end], []
    for data in sectors:
        start.append(len(fat))
        fat += [*range(len(fat) + 1, len(fat) + len(data) // 512), end]
    assert len(fat) <= 128, "one FAT sector"

    def entry(name: str, kind: int, right: int, child: int, first: int, size: int) -> bytes:
        encoded = (name + "\0").encode("utf-16-le")
        return (encoded.ljust(64, b"\0") + struct.pack("<HBBIII", len(encoded), kind, 1, free, right, child)
                + bytes(36) + struct.pack("<IQ", first, size))

    names = list(streams)  # siblings ordered by length, then name, as the format requires
    entries = entry("Root Entry", 5, free, 1, end, 0) + b"".join(
        entry(name, 2, i + 2 if i + 1 < len(names) else free, free, start[i], len(datas[i]))
        for i, name in enumerate(names))
    header = (bytes.fromhex("d0cf11e0a1b11ae1") + bytes(16)
              + struct.pack("<HHHHH6xIIIIIIIII", 0x3E, 3, 0xFFFE, 9, 6, 0, 1, 1, 0, 4096, end, 0, end, 0)
              + struct.pack("<I", 0) + struct.pack("<I", free) * 108)
    return (header + struct.pack(f"<{len(fat)}I", *fat).ljust(512, b"\xff") + entries.ljust(512, b"\0")
            + b"".join(sectors))


# ------------------------------------------------------------------ §9: one clear error per problem

def _rename_tasks_sheet(book: Path) -> None:
    wb = openpyxl.load_workbook(book)
    wb["Tasks"].title = "Jobs"
    wb.save(book)


def _formula_as_currency(book: Path) -> None:
    wb = openpyxl.load_workbook(book)
    wb["Settings"].append(["currency", "=cmd|' /C calc'!A0"])
    wb["Settings"]["B3"].data_type = "s"
    wb.save(book)


INPUT_CASES = {
    "missing_sheet": ([SERVICE], _rename_tasks_sheet, [
        "Error: Tasks sheet is missing: the workbook needs a Tasks sheet (run `budgetgen init FILE` for a template)"]),
    "missing_column": ([{k: v for k, v in SERVICE.items() if k != "kind"}], None, [
        ("Error: Tasks!A1 missing required column kind (finetune, pretrain, inference (online serving) or batch "
        "(offline batch inference)): add it to the header row")]),
    "text_in_number_column": ([{**SERVICE, "model_params_b": "seven"}], None, [
        'Error: Tasks!D2 model_params_b: "seven" is not a number (billions of parameters, e.g. 7 or 7B)']),
    "negative": ([{**SERVICE, "requests_per_day": -5}], None, [
        "Error: Tasks!E2 requests_per_day: -5 must be greater than zero (requests/day)"]),
    "zero": ([{**SERVICE, "model_params_b": 0}], None, [
        "Error: Tasks!D2 model_params_b: 0 must be greater than zero (billions of parameters)"]),
    "huge_number": ([{**SERVICE, "requests_per_day": 1e308}], None, [
        "Error: Tasks!E2 requests_per_day: 1e+308 is too large (requests/day): at most 1e+15"]),
    "unknown_kind": ([{**SERVICE, "kind": "training"}], None, [
        'Error: Tasks!C2 kind: "training" is not one of finetune, pretrain, inference, batch']),
    "unknown_method": ([{**SERVICE, "method": "int3"}], None, [
        'Error: Tasks!H2 method: "int3" is not one of full, lora, qlora, fp16, bf16, fp8, int8, int4, fp4']),
    "method_of_another_kind": ([{**SERVICE, "method": "lora"}], None, [
        'Error: Tasks!H2 method: "lora" is not a method for inference tasks (use fp16, bf16, fp8, int8, int4, fp4)']),
    "unknown_tier": ([{**SERVICE, "tier": "sometimes"}], None, [
        'Error: Tasks!H2 tier: "sometimes" is not one of monthly, on_demand, idle, spot']),
    "unknown_gpu": ([{**SERVICE, "gpu": "RTX 9999"}], None, [
        ('Error: Tasks!H2 gpu: "RTX 9999" is not in the catalog (use one of RTX 4090, RTX A6000, L40S, A100 80G, '
        "H100 80G, H200, L4, or add it to the GPUs sheet)")]),
    "duplicate_task_id": ([SERVICE, {**SERVICE, "task": "chat again"}], None, [
        'Error: Tasks!A3 task_id: "T1" is already used in A2 (task ids must be unique, ignoring case)']),
    "training_without_tokens": ([{**TRAINING, "train_tokens": None}], None, [
        "Error: Tasks!D2 train_tokens: required for finetune tasks (tokens per epoch): fill it in"]),
    "serving_without_traffic": ([{**SERVICE, "requests_per_day": None}], None, [
        "Error: Tasks!E2 requests_per_day: required for inference tasks (requests/day): fill it in"]),
    "batch_without_requests": ([{**SERVICE, "kind": "batch", "requests_per_day": None}], None, [
        "Error: Tasks!A2 batch_requests: required for batch tasks (requests/run): fill it in"]),
    # a run whose deadline is no longer than the 0.5 h of setup_hours it starts with: 0.01 days = 0.24 h
    "batch_deadline_within_setup": ([{**BATCH, "deadline_days": 0.01}], None, [
        ("Error: Tasks!I2 deadline_days: 0.01 days (0.24 h) is no longer than the 0.5 h of setup_hours every run "
         "starts with, so no GPU finishes a run: lengthen deadline_days or lower setup_hours on Settings")]),
    "training_deadline_within_setup": ([{**TRAINING, "deadline_days": 0.01}], None, [
        ("Error: Tasks!E2 deadline_days: 0.01 days (0.24 h) is no longer than the 0.5 h of setup_hours every run "
         "starts with, so no GPU finishes a run: lengthen deadline_days or lower setup_hours on Settings")]),
    # no deadline_days: a run's share of the month, 730 h / 2,000 runs = 0.365 h
    "runs_within_setup": ([{**TRAINING, "runs_per_month": 2000}], None, [
        ("Error: Tasks!E2 runs_per_month: 2000 runs a month leave 0.365 h a run, no longer than the 0.5 h of "
         "setup_hours every run starts with, so no GPU finishes a run: run less often, give deadline_days or lower "
         "setup_hours on Settings")]),
    # 2,000B fp16: 4,400 GB with runtime + 8 sequences of 1,000 + 100 tokens x 40,000 x sqrt(2000) bytes = 17.2 GB
    "fits_no_gpu": ([{**SERVICE, "model_params_b": 2000}], None, [
        ("Error: Tasks!D2 model_params_b: needs 4,417.2 GB of GPU memory, more than 64 x the largest card "
        "(H200, 141 GB): use lora/qlora or int8/int4, or raise max_cards")]),
    "months_outside_plan": ([{**SERVICE, "start_month": "2026-01", "end_month": "2027-01"}], None, [
        ("Error: Tasks!H2 start_month: 2026-01 is outside the plan 2026-07 to 2026-09 "
        "(change the month or the period_start/period_months settings)"),
        ("Error: Tasks!I2 end_month: 2027-01 is outside the plan 2026-07 to 2026-09 "
        "(change the month or the period_start/period_months settings)")]),
    "text_longer_than_a_cell_in_utf16": ([{**SERVICE, "task": "\N{SLIGHTLY SMILING FACE}" * 20_000}], None, [
        "Error: Tasks!B2 task: text of 40,000 characters is longer than a cell holds (32,767): shorten it"]),
    "currency_that_is_no_code": ([SERVICE], _formula_as_currency, [
        ('Error: Settings!B3 currency: "=cmd|\' /C calc\'!A0" is not an ISO currency code (three letters, '
        "e.g. USD, EUR, CNY)")]),
}


@pytest.mark.parametrize(("tasks", "damage", "expected"), INPUT_CASES.values(), ids=INPUT_CASES)
def test_bad_inventory_is_one_clear_error_per_problem(tmp_path, tasks, damage, expected):
    book = as_typed_text(make_input(tmp_path / "q3.xlsx", tasks))
    if damage:
        damage(book)
    assert refused(book) == expected


def test_every_problem_of_a_workbook_at_once_sorted_by_row_then_column(tmp_path):
    book = make_input(tmp_path / "q3.xlsx", [
        {**SERVICE, "model_params_b": "seven"}, {**SERVICE, "tier": "sometimes"}, {**TRAINING, "train_tokens": -1}])
    cells = [line.split()[1] for line in refused(book)]
    assert cells == ["Tasks!D2", "Tasks!A3", "Tasks!H3", "Tasks!I4"]  # row by row, left to right


def test_validate_names_a_deadline_no_longer_than_the_setup(tmp_path):
    """`validate` on a batch run due in 0.01 days (0.24 h, under the 0.5 h setup) says so at its cell, where it
    raised a TypeError; the same task due in 0.03 days (0.72 h: 0.22 h of work a replica) is fine."""
    book = make_input(tmp_path / "q3.xlsx", [{**BATCH, "task_id": "B1", "deadline_days": 0.03},
                                             {**BATCH, "task_id": "B2", "deadline_days": 0.01}])
    result = CliRunner().invoke(main, ["validate", str(book)])
    assert error_lines(result) == [
        ("Error: Tasks!I3 deadline_days: 0.01 days (0.24 h) is no longer than the 0.5 h of setup_hours every run "
         "starts with, so no GPU finishes a run: lengthen deadline_days or lower setup_hours on Settings")]
    fine = make_input(tmp_path / "fine.xlsx", [{**BATCH, "task_id": "B1", "deadline_days": 0.03}])
    assert CliRunner().invoke(main, ["validate", str(fine)]).exit_code == 0


@pytest.mark.parametrize(("name", "content", "expected"), [
    ("q3.xls", None, ("q3.xls is an Excel 97-2003 workbook, not an .xlsx workbook; "
                     "save it as .xlsx (Excel Workbook) and run again")),
    ("q3.csv", None, "q3.csv is a CSV text file, not an .xlsx workbook; save it as .xlsx (Excel Workbook) and run again"),
    ("q3.ods", None, ("q3.ods is an OpenDocument spreadsheet, not an .xlsx workbook; "
                     "save it as .xlsx (Excel Workbook) and run again")),
    ("q3.xlsx", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\n",
     "q3.xlsx is a PDF document renamed, not a spreadsheet; give the .xlsx workbook"),
    ("q3.xlsx", b"", "q3.xlsx is empty (0 bytes); save it as .xlsx (Excel Workbook) and run again"),
    ("q3.xlsx", compound_file({"EncryptionInfo": struct.pack("<HHI", 4, 4, 0x40) + b"<?xml version='1.0'?>",
                               "EncryptedPackage": struct.pack("<Q", 6000) + b"\x5a" * 6000}),
     "q3.xlsx is password-protected; remove the password (File > Info > Protect Workbook) and save again"),
], ids=["xls", "csv", "ods", "pdf-renamed", "empty", "password-protected"])
def test_file_that_is_no_xlsx_workbook(tmp_path, name, content, expected):
    book = tmp_path / name
    if content is None:  # a real workbook under another format's name
        make_input(book.with_suffix(".xlsx"), [SERVICE]).rename(book)
    else:
        book.write_bytes(content)
    assert refused(book) == [f"Error: {expected}"]


# ------------------------------------------------------------------ where the output goes

def test_output_equal_to_the_input_is_refused(tmp_path):
    book = make_input(tmp_path / "q3.xlsx", [SERVICE])
    assert refused(book, out=book) == [
        "Error: q3.xlsx the output would overwrite the input: choose another -o/--json path"]


def test_output_through_a_link_to_the_input_is_refused(tmp_path):
    book = make_input(tmp_path / "q3.xlsx", [SERVICE])
    (tmp_path / "link.xlsx").symlink_to(book)
    assert refused(book, out=tmp_path / "link.xlsx") == [
        "Error: q3.xlsx the output would overwrite the input: choose another -o/--json path"]


def test_output_onto_a_hard_link_of_the_input_replaces_the_link_not_the_input(tmp_path):
    book = make_input(tmp_path / "q3.xlsx", [SERVICE])
    os.link(book, tmp_path / "budget.xlsx")
    before = hashlib.sha256(book.read_bytes()).hexdigest()
    result = build(book, "-o", tmp_path / "budget.xlsx")
    assert result.exit_code == 0, result.output
    assert hashlib.sha256(book.read_bytes()).hexdigest() == before
    assert zipfile.is_zipfile(tmp_path / "budget.xlsx") and (tmp_path / "budget.xlsx").stat().st_ino != book.stat().st_ino


def test_output_equal_to_a_bill_is_refused(tmp_path):
    book = make_input(tmp_path / "q3.xlsx", [SERVICE])
    bill = tmp_path / "bill.csv"
    bill.write_text("ChargePeriodStart,BilledCost,BillingCurrency\n2026-07-01,100,CNY\n")
    assert refused(book, "--bills", bill, out=bill)[0].startswith("Error: ")


def test_missing_output_folder_is_created(tmp_path):
    book = make_input(tmp_path / "q3.xlsx", [SERVICE])
    out = tmp_path / "new" / "deeper" / "budget.xlsx"
    result = build(book, "-o", out)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"Wrote {out}\n")
    assert "Summary" in sheet_parts(out)
    assert sorted(p.name for p in out.parent.iterdir()) == ["budget.xlsx"]


@pytest.mark.parametrize("below", ["budget.xlsx", "sub/budget.xlsx"], ids=["file-as-folder", "under-a-file"])
def test_unwritable_output_folder(tmp_path, below):
    book = make_input(tmp_path / "q3.xlsx", [SERVICE])
    (tmp_path / "taken").write_text("a regular file where the folder should be")
    out = tmp_path / "taken" / below
    before = snapshot(tmp_path)
    result = build(book, "-o", out)
    errors = error_lines(result)
    assert len(errors) == 1 and errors[0].startswith(f"Error: cannot write to {out.parent}: ")
    assert snapshot(tmp_path) == before


def test_unwritable_json_leaves_the_earlier_workbook(tmp_path):
    book = make_input(tmp_path / "q3.xlsx", [SERVICE])
    (tmp_path / "taken").write_text("a regular file")
    assert refused(book, "--json", tmp_path / "taken" / "r.json")[0].startswith("Error: cannot write ")


# ------------------------------------------------------------------ formula, DDE and link injection

def injected_build(folder: Path, texts: tuple[str, ...]) -> Path:
    """Build a plan whose user texts (names, ids, cost centers, extras, bill fields) are `texts`."""
    folder.mkdir()
    tasks = [{**SERVICE, "task_id": t, "task": t, "cost_center": t, "owner": t, texts[0]: t} for t in texts]
    gpus = [{"gpu": texts[1], "vram_gb": 24, "bandwidth_gbs": 1000, "tflops": 100, "monthly_per_card": 99_999,
             "source": texts[0], "provider": texts[2], "as_of": "2026-06-01"}]  # as_of is a date
    extras = [{"item": t, "category": "storage", "monthly_cost": 10} for t in texts]
    book = as_typed_text(make_input(folder / "q3.xlsx", tasks, settings={"currency": "USD", "catalog_fx": 0.14},
                                    gpus=gpus, extras=extras))
    bill = folder / "bill.csv"
    with bill.open("w", newline="") as fh:
        rows = [["2026-07-01", 10, "USD", t, json.dumps({"task_id": t}), t] for t in texts]
        csv.writer(fh).writerows([["ChargePeriodStart", "BilledCost", "BillingCurrency", "ResourceId", "Tags",
                                   "ServiceName"], *rows])
    before = snapshot(folder)
    result = build(book, "-o", folder / "budget.xlsx", "--bills", bill)
    assert result.exit_code == 0, result.output
    assert {k: v for k, v in snapshot(folder).items() if k != "budget.xlsx"} == before
    return folder / "budget.xlsx"


def formulas(book: Path) -> Counter:
    """(sheet or part, cell or tag, formula) of every formula: cells, defined names, conditional formats, charts."""
    found: Counter = Counter()
    sheets = {part: name for name, part in sheet_parts(book).items()}
    with zipfile.ZipFile(book) as z:
        for part in (p for p in z.namelist() if p.endswith(".xml")):
            root = ElementTree.fromstring(z.read(part))
            if part in sheets:
                for cell in root.iter(f"{MAIN_NS}c"):
                    for f in cell.iter(f"{MAIN_NS}f"):
                        found[(sheets[part], cell.get("r"), f.text)] += 1
            for element in root.iter():
                tag = element.tag.rsplit("}", 1)[-1]
                if tag in ("definedName", "formula", "formula1", "formula2") or (tag == "f" and part not in sheets):
                    found[(part, element.get("name", tag), element.text)] += 1
    return found


def strings_by_sheet(book: Path) -> dict[str, set[str]]:
    """The text values (shared or inline strings, not formula results) of each sheet."""
    with zipfile.ZipFile(book) as z:
        sst = z.read("xl/sharedStrings.xml") if "xl/sharedStrings.xml" in z.namelist() else b"<sst/>"
        shared = ["".join(t.text or "" for t in si.iter(f"{MAIN_NS}t")) for si in ElementTree.fromstring(sst)]
        out = {}
        for name, part in sheet_parts(book).items():
            texts = set()
            for cell in ElementTree.fromstring(z.read(part)).iter(f"{MAIN_NS}c"):
                if cell.get("t") == "s":
                    texts.add(shared[int(cell.find(f"{MAIN_NS}v").text)])
                elif cell.get("t") == "inlineStr":
                    texts.add("".join(t.text or "" for t in cell.iter(f"{MAIN_NS}t")))
            out[name] = texts
    return out


def test_user_text_is_written_as_text_never_as_a_formula_or_link(tmp_path):
    attacked = injected_build(tmp_path / "attacked", PAYLOADS)
    plain = injected_build(tmp_path / "plain", PLAIN)
    generated = formulas(plain)
    assert any(sheet == "Recon 2026-07" for sheet, _, _ in generated)  # the bill went through too
    assert formulas(attacked) == generated
    with zipfile.ZipFile(attacked) as z:
        for part in z.namelist():
            data = z.read(part)
            assert b"<hyperlink" not in data, part
            assert b"relationships/hyperlink" not in data and b"externalLink" not in data, part
            assert b"ddeLink" not in data, part
    strings = strings_by_sheet(attacked)
    for sheet in ("Tasks", "Extras", "Summary", "Recon 2026-07"):
        assert set(PAYLOADS) <= strings[sheet], sheet
    assert {PAYLOADS[0], PAYLOADS[1], PAYLOADS[2]} <= strings["GPUs"]


def test_formula_cells_in_the_input_arrive_as_their_cached_values(tmp_path):
    book = tmp_path / "q3.xlsx"
    wb = write_input(book, [list(SERVICE), list(SERVICE.values())])
    ws = wb.get_worksheet_by_name("Tasks")
    ws.write_formula(1, 1, '=HYPERLINK("http://x.invalid","click")', None, "chat")
    ws.write_formula(1, 3, "=3+4", None, 7)
    wb.close()
    result = build(book, "-o", tmp_path / "budget.xlsx")
    assert result.exit_code == 0, result.output
    assert all("HYPERLINK" not in f and "3+4" not in f for _, _, f in formulas(tmp_path / "budget.xlsx"))
    out = openpyxl.load_workbook(tmp_path / "budget.xlsx")["Tasks"]
    assert (out["B2"].data_type, out["B2"].value) == ("s", "chat")
    params = next(c.column_letter for c in out[1] if str(c.value).startswith("model_params_b"))
    assert out[f"{params}2"].value == 7


def test_cost_centers_are_matched_exactly_after_recalculation(tmp_path):
    centers = ["=a", "a", "Team*", "team-b"]  # read as SUMIFS criteria, "=a" would match "a" and "Team*" team-b
    book = as_typed_text(make_input(tmp_path / "q3.xlsx", [
        {**SERVICE, "task_id": f"T{i}", "cost_center": c} for i, c in enumerate(centers)]))
    assert build(book, "-o", tmp_path / "budget.xlsx").exit_code == 0
    assert prove(tmp_path / "budget.xlsx", sheets=("Summary", "Checks")) == []   # the sums by cost center, the checks
    values = local_recalc(tmp_path / "budget.xlsx", sheets=("Checks",))
    checks = {values[("CHECKS", f"A{row}")]: values[("CHECKS", f"D{row}")] for row in range(2, 12)}
    assert checks["by cost center = Summary GPU total"] is True
    assert checks["ALL CHECKS"] is True


# ------------------------------------------------------------------ untrusted files through the whole CLI

ISOLATED = """
import json, pathlib, resource, sys, time
from click.testing import CliRunner
from budgetgen.catalog import gpus as catalog, models, prices
from budgetgen.cli import main
catalog.CATALOG_RESOURCE = pathlib.Path(sys.argv[1])  # the tests' fixed catalogs, as in conftest
prices.OFFERS_RESOURCE = pathlib.Path(sys.argv[1]).with_name("prices.csv")
models.MODELS_RESOURCE = pathlib.Path(sys.argv[1]).with_name("models.csv")
start = time.process_time()
result = CliRunner().invoke(main, sys.argv[2:])


def peak_mb():
    # This process's own peak: VmHWM of its memory map. ru_maxrss would carry the parent's peak over fork and
    # exec on Linux (a test worker holding compiled workbooks), not this build's.
    status = pathlib.Path("/proc/self/status")
    if status.exists():
        line = next(l for l in status.read_text().splitlines() if l.startswith("VmHWM:"))
        return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


print(json.dumps({"exit_code": result.exit_code, "output": result.output, "stdout": result.stdout,
                  "exception": repr(result.exception),
                  "cpu_seconds": time.process_time() - start, "peak_mb": peak_mb()}))
"""


def build_isolated(*args: object) -> dict:
    """`budgetgen build` in a fresh interpreter: its result, CPU seconds and peak memory (MB) measured in there."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", ISOLATED, TEST_CATALOG, "build", *map(str, args)], capture_output=True,
                          text=True, env=env, timeout=120, check=True)
    run = json.loads(done.stdout)
    assert run["cpu_seconds"] < CPU_SECONDS, run
    assert run["peak_mb"] < PEAK_MB, run
    return run


def refused_isolated(book: Path) -> list[str]:
    """The `Error:` lines of building an untrusted `book` in its own interpreter, nothing changed."""
    before = snapshot(book.parent)
    run = build_isolated(book, "-o", book.parent / "outputs" / "budget.xlsx")
    assert (run["exit_code"], run["exception"]) == (1, "SystemExit(1)"), run
    assert "Traceback" not in run["output"]
    assert snapshot(book.parent) == before
    return errors_in(run["output"])


@pytest.mark.slow
def test_zip_bomb(tmp_path):
    book = tmp_path / "q3.xlsx"
    with zipfile.ZipFile(book, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.writestr("xl/workbook.xml", "<workbook/>")
        with archive.open("xl/worksheets/sheet1.xml", "w", force_zip64=True) as member:
            for _ in range(300):
                member.write(bytes(1024 * 1024))
    assert refused_isolated(book) == [
        ("Error: q3.xlsx unpacks to 300 MB, more than the 256 MB budgetgen reads; remove images and data the budget "
        "does not need, or save it again from Excel")]


def test_valid_inventory_carrying_a_zip_bomb_member(tmp_path):
    book = rewrite(make_input(tmp_path / "q3.xlsx", [SERVICE]), {"xl/media/image1.png": bytes(20 * 1024 * 1024)})
    [error] = refused_isolated(book)
    assert re.fullmatch(r"Error: q3\.xlsx holds xl/media/image1\.png packed \d,\d{3} to 1 \(20 MB unpacked\), "
                        r"which looks like a zip bomb; save it again from Excel", error), error


@pytest.mark.slow
def test_billion_laughs_in_the_shared_strings(tmp_path):
    laughs = ('<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol0 "lol">'
              + "".join(f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10)) + "]>")
    book = tmp_path / "q3.xlsx"
    write_input(book, [list(SERVICE), list(SERVICE.values())]).close()
    with zipfile.ZipFile(book) as z:
        sst = z.read("xl/sharedStrings.xml").decode()
    rewrite(book, {"xl/sharedStrings.xml": (laughs + sst.replace("<t>chat</t>", "<t>&lol9;</t>")).encode()})
    assert refused_isolated(book) == [
        ("Error: q3.xlsx could not be read (it declares XML entities, which Excel never writes: a possible "
        "'billion laughs' attack); open it in Excel and save it again as .xlsx")]


def test_forged_dimension_on_a_small_inventory_still_builds(tmp_path):
    book = make_input(tmp_path / "q3.xlsx", [SERVICE, TRAINING])
    honest = build(book, "-o", tmp_path / "honest.xlsx")
    part = sheet_parts(book)["Tasks"]
    with zipfile.ZipFile(book) as z:
        xml, forged = re.subn(r'<dimension ref="A1:H3"', '<dimension ref="A1:XFD1048576"', z.read(part).decode())
    assert forged == 1
    rewrite(book, {part: xml.encode()})
    run = build_isolated(book, "-o", tmp_path / "forged.xlsx")
    assert run["exit_code"] == 0, run
    assert run["stdout"] == honest.stdout.replace("honest.xlsx", "forged.xlsx")


@pytest.mark.slow
def test_too_many_task_rows_stops_at_the_row_cap(tmp_path):
    book = tmp_path / "q3.xlsx"
    tasks = ([f"T{row}"] for row in range(1, MAX_TABLE_ROWS + 2))   # one too many (the cap is read before the rows)
    write_input(book, itertools.chain([list(SERVICE)], tasks), {"constant_memory": True}).close()
    assert refused_isolated(book) == [
        (f"Error: Tasks has more than {MAX_TABLE_ROWS:,} rows below its header (row {MAX_TABLE_ROWS + 2:,} is one "
         "too many); "
        "delete the rows the budget does not need or split the inventory")]


@pytest.mark.slow
@pytest.mark.parametrize(("length", "builds"), [(30_000, True), (40_000, False)])
def test_very_long_task_name(tmp_path, length, builds):
    book = make_input(tmp_path / "q3.xlsx", [{**SERVICE, "task": "LONG-NAME"}])
    replace_text(book, "LONG-NAME", "y" * length)  # openpyxl would cut it at 32,767
    if not builds:
        assert refused_isolated(book) == [
            "Error: Tasks!B2 task: text of 40,000 characters is longer than a cell holds (32,767): shorten it"]
        return
    run = build_isolated(book, "-o", tmp_path / "budget.xlsx")
    assert run["exit_code"] == 0, run
    assert openpyxl.load_workbook(tmp_path / "budget.xlsx", read_only=True)["Tasks"]["B2"].value == "y" * length


# ------------------------------------------------------------------ round two: nothing silently wrong

CARD = {"gpu": "MyCard", "vram_gb": 32, "bandwidth_gbs": 900, "tflops": 100, "monthly_per_card": 500}
ROUND_TWO = {
    "formula_without_result": ([SERVICE], {"hidden_cost_buffer": "=0.1+0.2"}, None, None, [
        "Error: Settings!B3 holds a formula with no saved result: open and save it in Excel, or type the value"]),
    "formula_in_a_required_cell": ([{**SERVICE, "model_params_b": "=3+4"}], None, None, None, [
        "Error: Tasks!D2 holds a formula with no saved result: open and save it in Excel, or type the value"]),
    "formula_extras_cost": ([SERVICE], None, None, [{"item": "disk", "monthly_cost": "=200*2"}], [
        "Error: Extras!B2 holds a formula with no saved result: open and save it in Excel, or type the value"]),
    "negative_kv_cache": ([{**SERVICE, "kv_cache_gb": -5}], None, None, None, [
        "Error: Tasks!H2 kv_cache_gb: -5 must be at least 0 (GB)"]),
    "scaling_minus_100_percent_on_2_cards": ([{**SERVICE, "gpu": "MyCard", "cards": 2}], None,
                                             [{**CARD, "scaling": "-100%"}], None, [
        ('Error: GPUs!F2 scaling: "-100%" must be at least 0 (efficiency of each added card: speedup(n) = 1 + (n-1) '
        "x scaling)")]),
    "negative_gpu_price": ([SERVICE], None, [{**CARD, "monthly_per_card": -500}], None, [
        "Error: GPUs!E2 monthly_per_card: -500 must be at least 0 (per card-month, in the row's currency)"]),
    "negative_extras_cost": ([SERVICE], None, None, [{"item": "disk", "monthly_cost": -400}], [
        "Error: Extras!B2 monthly_cost: -400 must be at least 0 (currency/month)"]),
    "catalog_fx_0": ([SERVICE], {"currency": "USD", "catalog_fx": 0}, None, None, [
        'Error: Settings!B4 catalog_fx: "0" must be greater than zero (plan currency per CNY)']),
    "a_billion_cards": ([{**SERVICE, "cards": 1e9}], None, None, None, [
        "Error: Tasks!H2 cards: 1000000000 must be at most 100000 (cards)"]),
    "comma_as_decimal_point": ([{**SERVICE, "requests_per_day": "1,5"}], None, None, None, [
        ('Error: Tasks!E2 requests_per_day: "1,5" is not a number: a comma may only separate thousands (1,500); '
         "write decimals with a point (1.5)")]),
    "text_1e309": ([{**SERVICE, "requests_per_day": "1e309"}], None, None, None, [
        'Error: Tasks!E2 requests_per_day: "1e309" is not a finite number (requests/day)']),
    "gpu_twice": ([SERVICE], None, [CARD, {**CARD, "gpu": "MYCARD"}], None, [
        'Error: GPUs!A3 gpu: "MYCARD" is already given in A2 (GPU names must be unique, ignoring case): keep one row']),
}


@pytest.mark.parametrize(("tasks", "settings", "gpus", "extras", "expected"), ROUND_TWO.values(), ids=ROUND_TWO)
def test_input_that_would_be_silently_wrong_is_refused(tmp_path, tasks, settings, gpus, extras, expected):
    book = make_input(tmp_path / "q3.xlsx", tasks, settings=settings, gpus=gpus, extras=extras)
    assert refused(book) == expected


def test_round_two_problems_in_chinese(tmp_path):
    book = make_input(tmp_path / "q3.xlsx", [{**SERVICE, "model_params_b": "=3+4", "requests_per_day": "1,5"}])
    result = build(book, "-o", tmp_path / "budget.xlsx", "--lang", "zh")
    assert result.exit_code == 1 and not (tmp_path / "budget.xlsx").exists()
    assert shown(result.output) == [
        "错误：Tasks!D2 含有没有保存结果的公式：请在 Excel 中打开并保存，或直接填写数值",
        '错误：Tasks!E2 requests_per_day："1,5" 不是数字：逗号只能用作千位分隔符（1,500）；小数请用小数点（1.5）',
        "发现 2 个问题；未写入任何文件。"]


def test_setting_and_sheet_given_twice(tmp_path):
    book = make_input(tmp_path / "q3.xlsx", [SERVICE], settings={"hidden_cost_buffer": "25%"})
    wb = openpyxl.load_workbook(book)
    wb["Settings"].append(["hidden_cost_buffer", "30%"])
    wb.save(book)
    assert refused(book) == ["Error: Settings!A4 setting hidden_cost_buffer is already given in A3: keep one row"]
    wb.create_sheet("任务").append(list(SERVICE))
    wb.save(book)
    assert refused(book) == ['Error: Tasks sheets "Tasks" and "任务" are both the Tasks sheet: keep one']


def _many_strings(book: Path, count: int) -> Path:
    """An inventory whose Tasks sheet also holds `count` different texts in a column nobody reads."""
    wb = write_input(book, [list(SERVICE) + ["note"], list(SERVICE.values())])
    ws = wb.get_worksheet_by_name("Tasks")
    for i in range(count):
        ws.write_string(i + 1, len(SERVICE), f"note {i}")
    wb.close()
    return book


def test_too_many_shared_strings_are_refused_before_openpyxl_loads_them(tmp_path, monkeypatch):
    def never(*args, **kwargs):
        raise AssertionError("openpyxl loaded a workbook the bound should have refused")

    monkeypatch.setattr("budgetgen.io.safefile.MAX_SHARED_STRINGS", 1000)
    (tmp_path / "small").mkdir()
    small = _many_strings(tmp_path / "small" / "q3.xlsx", 900)
    assert build(small, "-o", tmp_path / "small" / "budget.xlsx").exit_code == 0
    big = _many_strings(tmp_path / "q3.xlsx", 1000)  # 1000 notes and the other texts: over the bound
    monkeypatch.setattr("openpyxl.load_workbook", never)   # safefile imports openpyxl where it reads
    assert refused(big) == [
        ("Error: q3.xlsx holds more than 1,000 different texts, more than an inventory needs (at most 1,000 texts, "
        "64 MB); delete the sheets and rows the budget does not need")]


def test_shared_strings_larger_than_the_bound_are_refused_by_their_declared_size(tmp_path, monkeypatch):
    monkeypatch.setattr("budgetgen.io.safefile.MAX_SHARED_STRINGS_SIZE", 64 * 1024)
    book = _many_strings(tmp_path / "q3.xlsx", 0)
    replace_text(book, "<t>chat</t>", "<t>" + "x" * 100_000 + "</t>")
    with zipfile.ZipFile(book) as z:
        assert z.getinfo("xl/sharedStrings.xml").file_size > 100_000
    [error] = refused(book)
    assert error.startswith("Error: q3.xlsx holds 0.1 MB of shared text, more than an inventory needs")
