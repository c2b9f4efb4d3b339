"""Recalculate .xlsx workbooks in headless LibreOffice and read back every cell's value."""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

import openpyxl
import xlsxwriter
from openpyxl.cell.cell import Cell, MergedCell
from openpyxl.utils.datetime import to_excel

CellValue = float | str | bool | None
SheetValues = dict[str, dict[str, CellValue]]

DEFAULT_TIMEOUT = 180.0

# Error texts as they come back through an .xlsx file. LibreOffice-only codes (Err:5xx) are
# mapped to Excel codes on export (e.g. Err:502 -> #VALUE!, a parse error -> #N/A), but they
# are listed too in case a caller reads values from another source.
ERROR_TEXTS = frozenset(
    {
        "#NULL!",
        "#DIV/0!",
        "#VALUE!",
        "#REF!",
        "#NAME?",
        "#NUM!",
        "#N/A",
        "#GETTING_DATA",
    }
)

_REGISTRY = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry"
 xmlns:xs="http://www.w3.org/2001/XMLSchema"
 xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Calc/Formula/Load"><prop oor:name="OOXMLRecalcMode" \
oor:op="fuse"><value>0</value></prop></item>
<item oor:path="/org.openoffice.Office.Calc/Formula/Load"><prop oor:name="ODFRecalcMode" \
oor:op="fuse"><value>0</value></prop></item>
<item oor:path="/org.openoffice.Setup/L10N"><prop oor:name="ooSetupSystemLocale" \
oor:op="fuse"><value>en-US</value></prop></item>
<item oor:path="/org.openoffice.Setup/L10N"><prop oor:name="ooLocale" \
oor:op="fuse"><value>en-US</value></prop></item>
</oor:items>
"""

_CANARY_NAME = "recalc_canary.xlsx"
_CANARY_WRONG, _CANARY_RIGHT = 999.0, 42.0


class LibreOfficeError(RuntimeError):
    """LibreOffice is missing, failed, timed out, or did not recalculate."""


def soffice_path() -> str | None:
    """Return the soffice executable ($SOFFICE, then PATH), or None when not installed."""
    override = os.environ.get("SOFFICE")
    if override:
        return shutil.which(override)
    return shutil.which("soffice") or shutil.which("libreoffice")


def is_error(value: object) -> bool:
    """Tell whether a recalculated value is a spreadsheet error such as '#DIV/0!'."""
    return isinstance(value, str) and (value in ERROR_TEXTS or value.startswith("Err:"))


def write_profile(profile_dir: Path) -> None:
    """Create a LibreOffice user profile that always recalculates and uses the en-US locale."""
    user = profile_dir / "user"
    user.mkdir(parents=True, exist_ok=True)
    (user / "registrymodifications.xcu").write_text(_REGISTRY, encoding="utf-8")


def _write_canary(path: Path) -> None:
    """Write a workbook whose only formula carries a deliberately wrong cached value."""
    workbook = xlsxwriter.Workbook(str(path))
    sheet = workbook.add_worksheet("Canary")
    sheet.write_number("A1", 21)
    sheet.write_formula("B1", "=A1*2", None, _CANARY_WRONG)
    workbook.close()


# The workbook's format for a formula answering TRUE or FALSE (book.Formats "bool"): 1 shows its first text, 0 the
# last, each a quoted text ("TRUE") or, as LibreOffice writes it back, escaped characters (\是).
_LITERAL = r'(?:"[^"]*"|(?:\\.)+)'
_BOOLEAN_FORMAT = re.compile(rf"({_LITERAL});\1;{_LITERAL}")


def _cell_value(cell: Cell | MergedCell) -> CellValue:
    """Normalise one openpyxl cell value to float/str/bool/None."""
    value = cell.value
    if value is None:
        # LibreOffice writes a formula's "" result as <c t="str"><v></v></c>; openpyxl reads it
        # back as None but keeps data_type "str", which is how it differs from a blank cell.
        return "" if cell.data_type == "str" else None
    if isinstance(value, bool | str):
        return value
    if isinstance(value, int | float) and value in (0, 1) and _BOOLEAN_FORMAT.fullmatch(cell.number_format or ""):
        return bool(value)   # LibreOffice keeps a TRUE/FALSE shown through a number format as the number
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return float(to_excel(value))
    return str(value)


def read_values(path: Path) -> SheetValues:
    """Read cached values of every non-blank cell: sheet name -> A1 reference -> value."""
    workbook = openpyxl.load_workbook(path, data_only=True)
    try:
        result: SheetValues = {}
        for sheet in workbook.worksheets:
            cells: dict[str, CellValue] = {}
            for row in sheet.iter_rows():
                for cell in row:
                    value = _cell_value(cell)
                    if value is not None:
                        cells[cell.coordinate] = value
            result[sheet.title] = cells
        return result
    finally:
        workbook.close()


def _run_soffice(args: list[str], env: dict[str, str], timeout: float) -> str:
    """Run soffice in its own process group, killing the whole group on timeout."""
    proc = subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=env,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        raise LibreOfficeError(
            f"soffice timed out after {timeout:.0f}s:\n{output}"
        ) from exc
    if proc.returncode != 0:
        raise LibreOfficeError(f"soffice exited with {proc.returncode}:\n{output}")
    return output


def recalc_many(
    paths: Sequence[Path], workdir: Path, timeout: float = DEFAULT_TIMEOUT
) -> dict[Path, SheetValues]:
    """Recalculate several workbooks in one soffice run and return each one's cell values."""
    soffice = soffice_path()
    if soffice is None:
        raise LibreOfficeError("LibreOffice (soffice) not installed")
    workdir.mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix="lo_recalc_", dir=workdir)).resolve()
    profile, in_dir, out_dir = run_dir / "profile", run_dir / "in", run_dir / "out"
    write_profile(profile)
    in_dir.mkdir()
    out_dir.mkdir()

    # Copy inputs under unique names so that equal basenames cannot collide in out_dir.
    staged: dict[Path, Path] = {}
    for index, path in enumerate(dict.fromkeys(paths)):
        target = in_dir / f"f{index:03d}_{Path(path).stem}.xlsx"
        shutil.copyfile(path, target)
        staged[path] = target
    canary = in_dir / _CANARY_NAME
    _write_canary(canary)

    args = [
        soffice,
        f"-env:UserInstallation={profile.as_uri()}",
        "--headless",
        "--norestore",
        "--nologo",
        "--nodefault",
        "--nolockcheck",
        "--convert-to",
        "xlsx",
        "--outdir",
        str(out_dir),
        *(str(p) for p in staged.values()),
        str(canary),
    ]
    env = {**os.environ, "HOME": str(run_dir)}
    output = _run_soffice(args, env, timeout)

    def converted(source: Path) -> SheetValues:
        """Read one converted file, failing loudly when soffice did not produce it."""
        result = out_dir / source.name
        if not result.is_file():
            raise LibreOfficeError(f"soffice did not convert {source.name}:\n{output}")
        return read_values(result)

    check = converted(canary).get("Canary", {}).get("B1")
    if check != _CANARY_RIGHT:
        raise LibreOfficeError(
            f"LibreOffice kept cached values (canary B1={check!r}, expected {_CANARY_RIGHT}): "
            "OOXMLRecalcMode=0 was not applied"
        )
    return {original: converted(source) for original, source in staged.items()}


def recalc_with_libreoffice(
    path: Path, workdir: Path, timeout: float = DEFAULT_TIMEOUT
) -> SheetValues:
    """Recalculate one workbook in headless LibreOffice and return its cell values."""
    return recalc_many([path], workdir, timeout)[path]


def export_pdf(paths: Sequence[Path], workdir: Path, timeout: float = DEFAULT_TIMEOUT) -> dict[Path, Path]:
    """Print several workbooks to PDF in one soffice run with a fresh default profile, as a reader's LibreOffice
    opens them: the cached values shown, nothing recalculated on load (unlike the recalculation's profile)."""
    soffice = soffice_path()
    if soffice is None:
        raise LibreOfficeError("LibreOffice (soffice) not installed")
    workdir.mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix="lo_pdf_", dir=workdir)).resolve()
    out_dir = run_dir / "out"
    out_dir.mkdir()
    args = [soffice, f"-env:UserInstallation={(run_dir / 'profile').as_uri()}", "--headless", "--norestore",
            "--nologo", "--nodefault", "--nolockcheck", "--convert-to", "pdf", "--outdir", str(out_dir),
            *(str(p) for p in paths)]
    output = _run_soffice(args, {**os.environ, "HOME": str(run_dir)}, timeout)
    pdfs = {Path(p): out_dir / f"{Path(p).stem}.pdf" for p in paths}
    missing = [str(p) for p, pdf in pdfs.items() if not pdf.is_file()]
    if missing:
        raise LibreOfficeError(f"soffice did not print {missing}:\n{output}")
    return pdfs
