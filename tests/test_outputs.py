"""Writing outputs safely (issue 16): all or nothing, never beside debris, never over what is not a file."""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import fcntl
import hashlib
import io
import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path

import openpyxl
import pytest
from click.testing import CliRunner
from conftest import REPO, SAMPLE, SHIPPED_SAMPLE, listing, make_input

import budgetgen
from budgetgen.cli import main
from budgetgen.core.errors import Code, InputError, OutputError
from budgetgen.io import safefile
from budgetgen.io.safefile import STAGE_PREFIX, check_outputs, staged_outputs

EARLIER = b"an earlier output, which a failed command must leave as it was"
SERVICE = {"task_id": "S1", "task": "chat", "kind": "inference", "model_params_b": 7, "method": "int4",
           "requests_per_day": 1000, "tokens_per_request": 500, "serving_hours_per_day": 8, "tokens_per_sec": 100}


def cli(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args])


def error_lines(result) -> list[str]:
    return [line for line in result.output.splitlines() if line.startswith("Error: ")]


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def earlier(*paths: Path) -> None:
    """Earlier outputs at `paths` (written with open(): the disk_full fixture fails Path.write_bytes)."""
    for path in paths:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(EARLIER)


# ------------------------------------------------------------------ refused before any work


def test_same_path_for_workbook_and_json_is_refused(tmp_path, debris):
    out = tmp_path / "out" / "x"
    earlier(out)
    debris.watch(tmp_path)
    result = cli("build", SAMPLE, "-o", out, "--json", out)
    assert result.exit_code == 1
    assert error_lines(result) == [f"Error: x is named for two outputs ({out} and {out}): give each its own path"]
    assert "Wrote" not in result.output and out.read_bytes() == EARLIER
    debris.check()


def test_same_file_by_two_spellings_is_refused(tmp_path, debris):
    (tmp_path / "out").mkdir()
    debris.watch(tmp_path)
    result = cli("build", SAMPLE, "-o", tmp_path / "out" / "b.xlsx", "--json", tmp_path / "out" / ".." / "out" / "b.xlsx")
    assert result.exit_code == 1 and "is named for two outputs" in error_lines(result)[0]
    debris.check()


@pytest.mark.parametrize("kind", ["fifo", "character device", "socket"])
def test_an_output_that_is_not_a_regular_file_is_never_replaced(tmp_path, debris, kind):
    node = tmp_path / "node.xlsx"
    if kind == "fifo":
        os.mkfifo(node)
    elif kind == "character device":
        os.mknod(node, stat.S_IFCHR | 0o600, os.makedev(1, 3))  # what /dev/null is (tests run as root, like CI)
    else:
        import socket

        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(node))
        sock.close()
    before = os.stat(node)
    debris.watch(tmp_path)
    result = cli("build", SAMPLE, "-o", node)
    assert result.exit_code == 1
    [error] = error_lines(result)
    assert error.startswith(f"Error: node.xlsx exists and is a {kind}, not a regular file: it is never replaced")
    after = os.stat(node)
    assert (after.st_ino, after.st_mode, after.st_rdev) == (before.st_ino, before.st_mode, before.st_rdev)
    debris.check()


@pytest.mark.parametrize("command", ["init", "diff"])
def test_init_and_diff_refuse_a_fifo(tmp_path, debris, command):
    node = tmp_path / "node.xlsx"
    os.mkfifo(node)
    debris.watch(tmp_path)
    args = ("init", node, "--force") if command == "init" else ("diff", SAMPLE, SAMPLE, "-o", node)
    result = cli(*args)
    assert result.exit_code == 1 and "is a fifo, not a regular file" in error_lines(result)[0]
    assert stat.S_ISFIFO(os.stat(node).st_mode)
    debris.check()


def test_dev_null_and_a_folder_are_refused_by_the_check():
    # Checked without building: were the check broken, a test must not replace the machine's /dev/null.
    with pytest.raises(InputError) as info:
        check_outputs([Path("/dev/null"), Path("/")])
    said = {p.sheet: (p.code, p.message) for p in info.value.problems}
    assert said == {"null": (Code.OUTPUT, ("exists and is a character device, not a regular file: it is never "
                                          "replaced; choose another output path")),
                    "": (Code.OUTPUT, ("exists and is a folder, not a regular file: it is never replaced; "
                                      "choose another output path"))}


def test_the_library_refuses_a_folder_as_output(tmp_path):
    (tmp_path / "taken.xlsx").mkdir()
    with pytest.raises(InputError) as info:
        budgetgen.build_budget(SAMPLE, tmp_path / "taken.xlsx")
    assert "exists and is a folder" in info.value.problems[0].message
    assert listing(tmp_path) == {"taken.xlsx"}


def test_a_symlink_to_a_regular_file_is_replaced_by_the_new_file(tmp_path):
    target = tmp_path / "real.xlsx"
    earlier(target)
    link = tmp_path / "link.xlsx"
    link.symlink_to(target)
    assert cli("build", SAMPLE, "-o", link).exit_code == 0
    assert not link.is_symlink() and zipfile.is_zipfile(link) and target.read_bytes() == EARLIER


# ------------------------------------------------------------------ a full disk


@pytest.fixture
def disk_full(monkeypatch):
    """Writing a file into a zip, or a file's bytes or text, fails with ENOSPC, as on a full disk."""

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(zipfile.ZipFile, "write", full)
    monkeypatch.setattr(Path, "write_bytes", full)
    monkeypatch.setattr(Path, "write_text", full)


def test_disk_full_during_build_keeps_the_earlier_workbook_and_json(tmp_path, debris, disk_full):
    out, js = tmp_path / "out" / "b.xlsx", tmp_path / "out" / "b.json"
    earlier(out, js)
    debris.watch(tmp_path)
    result = cli("build", SAMPLE, "-o", out, "--json", js)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert error_lines(result) == [(f"Error: cannot write {out} and {js}: the disk is full (No space left on device); "
                                   "free some space or choose another folder; nothing was written")]
    assert out.read_bytes() == js.read_bytes() == EARLIER
    debris.check()


def test_disk_full_during_the_workbook_alone(tmp_path, debris, monkeypatch):
    """The JSON is staged first and fine; the workbook's zip fails: neither file is replaced."""
    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(zipfile.ZipFile, "write", full)
    out, js = tmp_path / "b.xlsx", tmp_path / "b.json"
    earlier(out, js)
    debris.watch(tmp_path)
    result = cli("build", SAMPLE, "-o", out, "--json", js)
    assert result.exit_code == 1 and "the disk is full" in error_lines(result)[0]
    assert out.read_bytes() == js.read_bytes() == EARLIER
    debris.check()


def test_disk_full_during_init_keeps_the_earlier_file(tmp_path, debris, disk_full):
    path = tmp_path / "inventory.xlsx"
    earlier(path)
    debris.watch(tmp_path)
    result = cli("init", path, "--force")
    assert result.exit_code == 1 and "the disk is full" in error_lines(result)[0]
    assert path.read_bytes() == EARLIER
    debris.check()


def test_disk_full_during_diff_keeps_the_earlier_diff(tmp_path, debris, disk_full):
    out = tmp_path / "diff.xlsx"
    earlier(out)
    debris.watch(tmp_path)
    result = cli("diff", SAMPLE, SAMPLE, "-o", out)
    assert result.exit_code == 1
    assert error_lines(result) == [f"Error: cannot write {out}: No space left on device"]  # the destination named
    assert out.read_bytes() == EARLIER
    debris.check()


def test_a_real_full_disk_on_a_tiny_tmpfs(tmp_path, debris):
    """Where a 256 KB tmpfs can be mounted (root, as in CI), the disk really fills; elsewhere ENOSPC is simulated
    by the tests above, and this one checks the same promise on an ordinary folder with the size limit of the
    process (RLIMIT_FSIZE: writing past it fails with EFBIG, a full disk's cousin)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(disk)],
                             capture_output=True, check=False).returncode == 0
    try:
        out = disk / "b.xlsx"
        earlier(out)
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        limit = "" if mounted else "import resource; resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000)); "
        code = (f"import signal; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); {limit}"
                "from budgetgen.cli import main; main(prog_name='budgetgen')")
        before = listing(disk)
        done = subprocess.run([sys.executable, "-c", code, "build", str(SHIPPED_SAMPLE), "-o", str(out), "--quiet"],
                              capture_output=True, text=True, env=env, timeout=120, check=False)
        assert done.returncode == 1, done
        assert "Traceback" not in done.stderr and done.stdout == ""
        reason = "the disk is full (No space left on device)" if mounted else "File too large"
        assert done.stderr.startswith(f"Error: cannot write {out}: {reason}"), done.stderr
        assert out.read_bytes() == EARLIER and listing(disk) == before
    finally:
        if mounted:
            subprocess.run(["umount", str(disk)], check=True)
    debris.check()


# ------------------------------------------------------------------ $TMPDIR is not used


def test_build_init_and_diff_need_no_temporary_folder(tmp_path, monkeypatch):
    def none(*args, **kwargs):
        raise FileNotFoundError(errno.ENOENT, "No usable temporary directory found")

    monkeypatch.setattr(tempfile, "gettempdir", none)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "full-or-missing"))
    out = tmp_path / "out"
    assert cli("build", SAMPLE, "-o", out / "b.xlsx", "--json", out / "b.json").exit_code == 0
    assert cli("init", out / "i.xlsx").exit_code == 0
    assert cli("diff", SAMPLE, SAMPLE, "-o", out / "d.xlsx").exit_code == 0
    assert listing(out) == {"b.xlsx", "b.json", "i.xlsx", "d.xlsx"}


def test_no_usable_temporary_folder_is_a_clean_error_where_one_is_needed(tmp_path, monkeypatch):
    """Comparing built budgets unpacks them into a temporary folder: without one, one Error line."""
    def none(*args, **kwargs):
        raise FileNotFoundError(errno.ENOENT, "No usable temporary directory found in ['/nowhere']")

    built = tmp_path / "built.xlsx"
    assert cli("build", SAMPLE, "-o", built).exit_code == 0
    monkeypatch.setattr(tempfile, "gettempdir", none)
    result = cli("diff", built, built)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert error_lines(result) == ["Error: No usable temporary directory found in ['/nowhere']"]


# ------------------------------------------------------------------ interrupted


def test_interrupt_while_writing_leaves_nothing(tmp_path, debris, private_tmpdir):
    out, js = tmp_path / "out" / "b.xlsx", tmp_path / "out" / "b.json"
    earlier(out, js)
    seen: list[set[str]] = []

    def progress(message: str) -> None:
        if message.startswith("writing Candidates"):
            seen.append(listing(out.parent))
            raise KeyboardInterrupt

    debris.watch(tmp_path)
    with pytest.raises(KeyboardInterrupt):
        budgetgen.build_budget(SAMPLE, out, json_path=js, progress=progress)
    [staged] = seen
    staging = {name for name in staged if name.startswith(STAGE_PREFIX) and "/" not in name}
    assert len(staging) == 1 and len(staged) > 4  # the staged JSON, the workbook and xlsxwriter's sheet files
    assert out.read_bytes() == js.read_bytes() == EARLIER
    debris.check()
    assert listing(private_tmpdir) == set()


@pytest.fixture(scope="module")
def big_input(tmp_path_factory) -> Path:
    """An inventory large enough (1,000 tasks) that writing its workbook takes seconds after its third sheet."""
    folder = tmp_path_factory.mktemp("big")
    return make_input(folder / "big.xlsx", [{**SERVICE, "task_id": f"S{i}"} for i in range(1_000)])


def spawn(*args: object, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "budgetgen", *map(str, args)], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def wait_for(condition, proc: subprocess.Popen, what: str) -> None:
    for _ in range(1200):  # a bound on polls (of 50 ms), not a timing assertion
        if condition():
            return
        assert proc.poll() is None, f"the build ended before {what}: {proc.communicate()}"
        time.sleep(0.05)
    proc.kill()
    raise AssertionError(f"never saw {what}")


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_a_stop_signal_while_writing_cleans_up(tmp_path, debris, private_tmpdir, big_input, signum):
    out, js = tmp_path / "out" / "b.xlsx", tmp_path / "out" / "b.json"
    earlier(out, js)
    debris.watch(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(private_tmpdir)}
    proc = spawn("build", big_input, "-o", out, "--json", js, env=env)

    def writing() -> bool:  # the staging folder holds xlsxwriter's sheet files: the workbook is being written
        return sum(1 for name in listing(out.parent) if "/" in name) >= 3

    wait_for(writing, proc, "the workbook being written")
    proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signum, stderr
    assert stdout == "" and "Traceback" not in stderr
    assert stderr.splitlines()[-1] == f"Error: stopped by {signum.name}; no output was written or changed"
    assert out.read_bytes() == js.read_bytes() == EARLIER
    debris.check()


# ------------------------------------------------------------------ concurrent builds


def test_staging_names_are_unique_per_command(tmp_path):
    target = tmp_path / "r.json"
    with staged_outputs([target]) as first, staged_outputs([target]) as second:
        assert first[target] != second[target]
        first[target].write_text("first")
        second[target].write_text("second")
    assert target.read_text() == "first"  # the outer command commits last
    assert listing(tmp_path) == {"r.json"}


def test_a_build_waits_for_the_folder_lock_to_rename(tmp_path, private_tmpdir):
    """While another command holds the output folder's lock, a build stages its files but replaces nothing:
    the renames of two commands into one folder never interleave (a workbook and a JSON from different runs)."""
    out, js = tmp_path / "b.xlsx", tmp_path / "b.json"
    earlier(out, js)
    env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(private_tmpdir)}
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        proc = spawn("build", SHIPPED_SAMPLE, "-o", out, "--json", js, "--quiet", env=env)

        def staged() -> bool:  # both files staged under their final names: the build is at its renames
            names = {Path(n).name for n in listing(tmp_path) if "/" in n}
            return {"b.xlsx", "b.json"} <= names

        wait_for(staged, proc, "both outputs staged")
        assert out.read_bytes() == js.read_bytes() == EARLIER
        assert proc.poll() is None
    finally:
        os.close(fd)
    _stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    assert zipfile.is_zipfile(out) and json.loads(js.read_text())["currency"] == "CNY"
    assert listing(tmp_path) == {"b.xlsx", "b.json"}


@pytest.mark.slow
def test_two_builds_writing_the_same_files_end_with_one_builds_pair(tmp_path, private_tmpdir):
    a = make_input(tmp_path / "a.xlsx", [{**SERVICE, "task_id": f"A{i}"} for i in range(40)])
    b = make_input(tmp_path / "b.xlsx", [{**SERVICE, "task_id": f"B{i}"} for i in range(40)])
    out, js = tmp_path / "out" / "o.xlsx", tmp_path / "out" / "o.json"
    env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(private_tmpdir)}
    for _ in range(3):
        procs = [spawn("build", book, "-o", out, "--json", js, "--quiet", env=env) for book in (a, b)]
        results = [(p.wait(timeout=300), p.communicate()) for p in procs]
        assert [code for code, _ in results] == [0, 0], results
        tasks = openpyxl.load_workbook(out, read_only=True)["Tasks"]
        in_workbook = {row[0] for row in tasks.iter_rows(min_row=2, max_col=1, values_only=True)}
        in_json = {t["task_id"] for t in json.loads(js.read_text())["tasks"]}
        assert in_workbook == in_json and len(in_json) == 40
        assert listing(out.parent) == {"o.xlsx", "o.json"}


# ------------------------------------------------------------------ the input: one read, one hash


def test_the_hash_on_about_is_of_the_bytes_the_numbers_come_from(tmp_path, monkeypatch):
    book = tmp_path / "q3.xlsx"
    book.write_bytes(SAMPLE.read_bytes())
    read = sha(book)
    load = openpyxl.load_workbook   # safefile imports openpyxl where it reads a workbook

    def saved_meanwhile(*args, **kwargs):  # someone saves the input while budgetgen parses what it read
        book.write_bytes(SAMPLE.read_bytes() + b"saved again")
        return load(*args, **kwargs)

    monkeypatch.setattr(openpyxl, "load_workbook", saved_meanwhile)
    result = budgetgen.build_budget(book, tmp_path / "b.xlsx")
    monkeypatch.undo()
    assert sha(book) != read
    about = openpyxl.load_workbook(result.workbook, read_only=True)["About"]
    facts = {row[0]: row[1] for row in about.iter_rows(min_row=3, values_only=True)}
    assert facts["input SHA-256"] == read == result.plan.inputs.source_sha256


def test_the_input_is_opened_once(tmp_path, monkeypatch):
    book = tmp_path / "q3.xlsx"
    book.write_bytes(SAMPLE.read_bytes())
    opened = []
    real_open = io.open

    def counting_open(file, *args, **kwargs):
        if isinstance(file, (str, os.PathLike)) and Path(file).resolve() == book.resolve():
            opened.append(args[:1])
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(io, "open", counting_open)
    budgetgen.read_inputs(book)
    assert opened == [("rb",)]


# ------------------------------------------------------------------ the library


def test_build_budget_returns_the_plan_and_the_paths(tmp_path):
    out, js = tmp_path / "b.xlsx", tmp_path / "b.json"
    result = budgetgen.build_budget(str(SAMPLE), str(out), json_path=str(js), build_date=dt.date(2026, 6, 15))
    assert (result.workbook, result.json) == (out, js) and result.recon == {}
    assert json.loads(js.read_text())["period_total"] == pytest.approx(result.plan.period_total)
    with pytest.raises(AttributeError):
        result.workbook = out  # a frozen value
    assert set(budgetgen.__all__) >= {"build_budget", "Result", "read_inputs", "plan_budget", "BudgetgenError"}


def test_build_budget_raises_the_input_problems(tmp_path):
    bad = make_input(tmp_path / "bad.xlsx", [{**SERVICE, "model_params_b": "seven"}])
    with pytest.raises(InputError) as info:
        budgetgen.build_budget(bad, tmp_path / "b.xlsx")
    assert [(p.sheet, p.cell) for p in info.value.problems] == [("Tasks", "D2")]
    assert listing(tmp_path) == {"bad.xlsx"}


def test_an_unwritable_folder_is_an_output_error(tmp_path):
    (tmp_path / "file").write_text("a file where a folder should be")
    with pytest.raises(OutputError) as info:
        budgetgen.build_budget(SAMPLE, tmp_path / "file" / "b.xlsx")
    assert str(info.value) == f"cannot write to {tmp_path / 'file'}: {tmp_path / 'file'} is a file, not a folder; " \
                              "choose another path"


# ------------------------------------------------------------------ bills given as a folder or a glob

BILL_HEAD = "ChargePeriodStart,BilledCost,BillingCurrency,ResourceId,ChargeDescription\n"


def bill_folder(tmp_path: Path) -> Path:
    """A folder g/ holding one xlsx bill and one CSV bill, whose bytes a refused build must leave as they are."""
    folder = tmp_path / "g"
    folder.mkdir()
    wb = openpyxl.Workbook()
    wb.active.append(["ChargePeriodStart", "BilledCost", "BillingCurrency"])
    wb.active.append(["2026-07-03", 100, "CNY"])
    wb.save(folder / "bill.xlsx")
    (folder / "bill.csv").write_text(BILL_HEAD + "2026-07-04,50,CNY,i-1,x\n")
    return folder


@pytest.mark.parametrize(("bills", "output"), [
    ("g/*.xlsx", ["-o", "g/bill.xlsx"]),  # the glob's file replaced by the budget: exit 0 before
    ("g", ["--json", "g/bill.csv"]),  # a file of the folder replaced by the JSON
    ("g", ["-o", "g/sub/budget.xlsx"]),  # a new file the folder would read back as a bill next time
    ("g/*.xlsx", ["-o", "g/new.xlsx"]),  # the same for the glob
    ("linked", ["-o", "g/bill.xlsx"]),  # the folder reached through a link
])
def test_an_output_among_the_files_a_bill_folder_or_glob_reads_is_refused(tmp_path, debris, monkeypatch, bills,
                                                                          output):
    folder = bill_folder(tmp_path)
    (tmp_path / "linked").symlink_to(folder)
    monkeypatch.chdir(tmp_path)
    before = {p.name: sha(p) for p in folder.iterdir()}
    debris.watch(tmp_path)
    result = cli("build", SAMPLE, "--bills", bills, *output)
    assert result.exit_code == 1, result.output
    assert len(error_lines(result)) == 1 and "Traceback" not in result.output
    assert {p.name: sha(p) for p in folder.iterdir()} == before
    debris.check()


def test_duckdb_spills_inside_the_staging_folder_never_into_tmpdir(tmp_path, monkeypatch, private_tmpdir):
    from budgetgen.recon import bill_sums

    folder = bill_folder(tmp_path)
    made: list[Path] = []
    real = bill_sums.tempfile.TemporaryDirectory

    def recorded(*args, **kwargs):
        made.append(Path(kwargs["dir"]))
        return real(*args, **kwargs)

    monkeypatch.setattr(bill_sums.tempfile, "TemporaryDirectory", recorded)
    out = tmp_path / "out" / "b.xlsx"
    assert cli("build", SAMPLE, "--bills", folder / "bill.csv", "-o", out, "-q").exit_code == 0
    assert made and all(p.parent == out.parent and p.name.startswith(STAGE_PREFIX) for p in made)
    assert listing(out.parent) == {"b.xlsx"} and listing(private_tmpdir) == set()


# ------------------------------------------------------------------ the commit of several outputs


def test_a_rename_that_fails_puts_back_the_outputs_replaced_before_it(tmp_path, monkeypatch):
    first, second = tmp_path / "a.xlsx", tmp_path / "b.json"
    earlier(first, second)
    real, calls = os.replace, []

    def failing(src, dst):
        calls.append(Path(dst))
        if Path(dst) == second:
            raise OSError(errno.EIO, "Input/output error")
        real(src, dst)

    monkeypatch.setattr(safefile.os, "replace", failing)
    with pytest.raises(OutputError), staged_outputs([first, second]) as staging:
        staging[first].write_text("new workbook")
        staging[second].write_text("new json")
    assert calls[:2] == [first, second]  # the workbook was replaced, then put back
    assert first.read_bytes() == second.read_bytes() == EARLIER
    assert listing(tmp_path) == {"a.xlsx", "b.json"}


def test_a_stop_signal_during_the_renames_waits_until_all_are_done(tmp_path, monkeypatch):
    """A signal between the two renames used to leave a new workbook beside the old JSON."""
    first, second = tmp_path / "a.xlsx", tmp_path / "b.json"
    events: list[str] = []
    real = os.replace

    def replace(src, dst):
        real(src, dst)
        events.append(f"renamed {Path(dst).name}")
        if len(events) == 1:
            os.kill(os.getpid(), signal.SIGTERM)

    def handler(signum, frame):
        events.append("signal")

    monkeypatch.setattr(safefile.os, "replace", replace)
    previous = signal.signal(signal.SIGTERM, handler)
    try:
        with staged_outputs([first, second]) as staging:
            staging[first].write_text("new workbook")
            staging[second].write_text("new json")
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert events == ["renamed a.xlsx", "renamed b.json", "signal"]


def test_a_signal_after_the_commit_says_what_was_written(tmp_path, monkeypatch):
    out = tmp_path / "b.xlsx"

    def built(path, output, **kwargs):
        output.write_text("the budget")
        os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr("budgetgen.cli.build_budget", built)
    result = cli("build", SAMPLE, "-o", out)
    assert result.exit_code == 128 + signal.SIGTERM
    assert error_lines(result) == [f"Error: stopped by SIGTERM after writing {out}"]


def test_a_failed_build_removes_the_output_folders_it_made(tmp_path, debris):
    debris.watch(tmp_path)
    result = cli("build", tmp_path / "missing.xlsx", "-o", tmp_path / "new" / "deeper" / "b.xlsx")
    assert result.exit_code == 1
    debris.check()


@pytest.fixture(scope="module")
def long_bill(tmp_path_factory) -> Path:
    """A Parquet bill of a million lines: DuckDB sums it for a few seconds."""
    path = tmp_path_factory.mktemp("long") / "long.parquet"
    import duckdb

    duckdb.sql(f"""COPY (SELECT '2026-07-' || lpad((i % 28 + 1)::VARCHAR, 2, '0') AS ChargePeriodStart,
        (i % 100) / 10.0 AS BilledCost, 'CNY' AS BillingCurrency, 'i-' || (i % 5000)::VARCHAR AS ResourceId,
        'p5.48xlarge ' || (i % 777)::VARCHAR AS ChargeDescription FROM range(1000000) t(i))
        TO '{path}' (FORMAT parquet)""")
    return path


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name)
def test_stop_signals_during_duckdb_work_exit_with_their_number(tmp_path, private_tmpdir, long_bill, monkeypatch,
                                                                signum):
    """SIGTERM, SIGINT and SIGHUP while DuckDB sums a bill (it turns each into its own "interrupted" error, which
    was a traceback and exit 1): exit 128 + signal, one Error line, nothing left behind. The signal is sent from a
    second thread once the query runs; a harmless handler stands behind the command's own, so a signal that came
    late would fail this test, not stop the test run. (test_a_stop_signal_while_writing_cleans_up stops a build
    in a process of its own.)"""
    from budgetgen.recon import bill_sums

    real = bill_sums._reporting
    timers: list[threading.Timer] = []

    @contextlib.contextmanager
    def reporting(con, progress, what):
        with real(con, progress, what):
            if not timers:   # once, in the first query: a bill is read in more than one
                timers.append(threading.Timer(0.1, os.kill, (os.getpid(), signum)))
                timers[0].start()
            yield

    monkeypatch.setattr(bill_sums, "_reporting", reporting)
    book = make_input(tmp_path / "in.xlsx", [SERVICE])
    previous = signal.signal(signum, lambda *_: None)
    try:
        result = cli("build", book, "--bills", long_bill, "-o", tmp_path / "out" / "b.xlsx", "-q")
    finally:
        for timer in timers:   # a signal not yet sent is not sent after the handlers are put back
            timer.cancel()
            timer.join()
        signal.signal(signum, previous)
    assert result.exit_code == 128 + signum, result.output
    assert error_lines(result) == [f"Error: stopped by {signum.name}; no output was written or changed"]
    assert listing(tmp_path) == {"in.xlsx"} and listing(private_tmpdir) == set()


def test_a_full_standard_output_is_one_error_line(monkeypatch, capsys):
    """`budgetgen models > /dev/full`: the report cannot be printed; one Error line, no traceback."""
    with open("/dev/full", "w") as full:
        monkeypatch.setattr(sys, "stdout", full)
        with pytest.raises(SystemExit) as stopped:
            main(["models"])
    assert stopped.value.code == 1
    assert capsys.readouterr().err.splitlines() == [
        "Error: cannot write to standard output (No space left on device); the command ran, only its report was lost"]
