"""Files in and out: open an untrusted input workbook safely and read its rows without trusting what it
declares; write a command's outputs beside their destinations and rename them into place together."""

from __future__ import annotations

import errno
import fnmatch
import hashlib
import io
import os
import posixpath
import re
import shutil
import signal
import stat
import tempfile
import threading
import zipfile
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring

from budgetgen.core.errors import BudgetgenError, Code, InputError, OutputError, Problem

if TYPE_CHECKING:  # openpyxl itself loads when a workbook is read, not when the CLI starts
    import openpyxl
    from openpyxl.worksheet._read_only import ReadOnlyWorksheet
    from openpyxl.worksheet.worksheet import Worksheet

fcntl: ModuleType | None
try:  # POSIX: the final renames of concurrent builds into one folder take turns
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

MB = 1024 * 1024
# Checked on the zip's declared sizes before anything is unpacked (zip bombs).
# All members together; then unpacked/packed for any member above RATIO_MIN_SIZE.
MAX_UNCOMPRESSED = 256 * MB
MAX_RATIO = 200
RATIO_MIN_SIZE = 10 * MB
# openpyxl loads every shared string before the first cell is read (about 10 us each): 500,000 strings are some
# seconds, far more than an inventory and a year of bills hold, while 4 million took 90 s and 740 MB.
MAX_SHARED_STRINGS = 500_000
MAX_SHARED_STRINGS_SIZE = 64 * MB
SHARED_STRINGS_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"
SHARED_STRING = re.compile(rb"<(?:\w{1,16}:)?si[\s>/]")
FORMULA = re.compile(rb"<(?:\w{1,16}:)?f[\s>/]")
# A cell (<c .../> or <c ...>...</c>), its cached value, its type and reference, as spreadsheets write them.
CELL = re.compile(rb"<(?:\w{1,16}:)?c\b([^>]*?)(?:/>|>(.*?)</(?:\w{1,16}:)?c>)", re.DOTALL)
VALUE = re.compile(rb"<(?:\w{1,16}:)?v\b[^>]*?(?:/>|>(.*?)</(?:\w{1,16}:)?v>)", re.DOTALL)
CELL_TYPE = re.compile(rb'\st="(\w+)"')
CELL_REF = re.compile(rb'\sr="([A-Z]{1,3}[0-9]{1,7})"')
TAG_WINDOW = 24  # bytes a scanned tag may span across two read chunks
MAIN_NS = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
PKG_NS = "{http://schemas.openxmlformats.org/package/2006/content-types}"
REL_NS = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
PKG_REL_NS = "{http://schemas.openxmlformats.org/package/2006/relationships}"
# Cell types whose empty <v> is a saved result (an empty text); any other formula cell without one has none.
TEXT_TYPES = ("str", "s", "inlineStr")
# Characters an Excel cell can hold. iter_rows passes longer text through whole (never
# truncated, never a crash); the caller rejects it at its cell, among all other problems.
MAX_TEXT = 32_767
EXCEL_MAX_ROWS = 1_048_576

# .xlsm is read like .xlsx: openpyxl never loads (let alone runs) its macros.
ACCEPTED_SUFFIXES = (".xlsx", ".xlsm")
SAVE_AS_XLSX = "save it as .xlsx (Excel Workbook) and run again"
KNOWN_FORMATS = {
    ".xls": "an Excel 97-2003 workbook",
    ".xlsb": "an Excel binary workbook",
    ".xltx": "an Excel template",
    ".xltm": "an Excel template",
    ".csv": "a CSV text file",
    ".txt": "a text file",
    ".ods": "an OpenDocument spreadsheet",
    ".numbers": "an Apple Numbers file",
    ".pdf": "a PDF document",
}
# Directory entry names of an OLE compound file are UTF-16LE.
OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
ENCRYPTION_INFO = "EncryptionInfo".encode("utf-16-le")
# A workbook file is never larger than what it unpacks to (plus the zip's own directory).
MAX_FILE = MAX_UNCOMPRESSED + MB
SCAN_CHUNK = MB  # XML parts are scanned in chunks of this size


@dataclass(frozen=True)
class InputFile:
    """An input file's bytes, read once: everything checked, parsed and hashed comes from these."""

    name: str
    data: bytes = field(repr=False)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


def read_input_file(path: Path) -> InputFile:
    """Read an input workbook's bytes once (a regular .xlsx/.xlsm of a sane size) or raise InputError."""
    path = Path(path)
    _check_path(path)
    try:
        with path.open("rb") as f:
            data = f.read(MAX_FILE + 1)
    except OSError as exc:
        raise _fail(
            path.name,
            Code.UNREADABLE,
            f"cannot be opened ({exc.strerror}); close it in other programs and check its permissions",
        ) from exc
    if len(data) > MAX_FILE:
        raise _fail(
            path.name,
            Code.TOO_LARGE,
            f"is larger than the {MAX_FILE / MB:,.0f} MB budgetgen reads; "
            "remove images and data the budget does not need, or save it again from Excel",
        )
    return InputFile(path.name, data)


def load_input_workbook(source: Path | InputFile) -> openpyxl.Workbook:
    """Open the input read-only (cached values, no formulas, no macros; close() it) or raise InputError."""
    import openpyxl
    import openpyxl.xml

    if not openpyxl.xml.DEFUSEDXML:
        raise BudgetgenError("openpyxl is not using defusedxml; install defusedxml and unset OPENPYXL_DEFUSEDXML")
    source = source if isinstance(source, InputFile) else read_input_file(source)
    _check_content(source)
    _check_zip(source)
    try:
        return openpyxl.load_workbook(io.BytesIO(source.data), read_only=True, data_only=True, keep_links=False)
    except Exception as exc:  # noqa: BLE001 - whatever openpyxl raises becomes one clear problem
        message = f"could not be read ({_describe(exc)}); open it in Excel and save it again as .xlsx"
    # Raised outside the except block so the failed reader is freed at once.
    raise _fail(source.name, Code.UNREADABLE, message)


def iter_rows(ws: Worksheet | ReadOnlyWorksheet, max_rows: int = 100_000,
              header: bool = False) -> Iterator[tuple[int, tuple]]:
    """Yield (row number, values) for each non-empty row, trailing empty cells dropped. With `header`, the first
    non-empty row is the table's header and `max_rows` counts the rows below it."""
    from openpyxl.worksheet._read_only import ReadOnlyWorksheet

    if isinstance(ws, ReadOnlyWorksheet):
        ws.reset_dimensions()  # the declared <dimension> may be forged: read only the rows really there
    # From A1 whatever the sheet declares; an explicit range also gets a closable generator.
    rows = ws.iter_rows(min_row=1, min_col=1, values_only=True)
    try:
        yield from _filled_rows(_guarded(rows, ws.title), ws.title, max_rows, header)
    finally:
        rows.close()  # frees the sheet's open zip member even when reading stops early


def _filled_rows(rows: Iterator[tuple], sheet: str, max_rows: int, header: bool = False) -> Iterator[tuple[int, tuple]]:
    """Number the rows, skip the empty ones, and stop at once when there are too many (with `header`, below the
    first)."""
    count = -1 if header else 0
    what = "rows below its header" if header else "filled rows"
    for number, values in enumerate(rows, start=1):
        if number > EXCEL_MAX_ROWS:
            raise _fail(
                sheet,
                Code.UNREADABLE,
                f"has rows past Excel's last row {EXCEL_MAX_ROWS:,}, so the file is damaged; "
                "open it in Excel and save it again",
            )
        if values.count(None) == len(values):
            continue
        count += 1
        if count > max_rows:
            raise _fail(
                sheet,
                Code.TOO_LARGE,
                f"has more than {max_rows:,} {what} (row {number:,} is one too many); "
                "delete the rows the budget does not need or split the inventory",
            )
        yield number, _trim(values)


def _check_path(path: Path) -> None:
    """Reject a missing path, a folder, or a suffix other than .xlsx/.xlsm."""
    if not path.exists():
        raise _fail(
            path.name,
            Code.NOT_A_FILE,
            f"does not exist (looked for {path.absolute()}); check the folder and the file name",
        )
    if not path.is_file():
        kind = "a folder" if path.is_dir() else "not a regular file"
        raise _fail(
            path.name,
            Code.NOT_A_FILE,
            f"is {kind}; give the path of the .xlsx workbook itself",
        )
    suffix = path.suffix.lower()
    if suffix not in ACCEPTED_SUFFIXES:
        kind = KNOWN_FORMATS.get(suffix, f'a "{suffix}" file' if suffix else "a file without a suffix")
        raise _fail(
            path.name,
            Code.WRONG_FORMAT,
            f"is {kind}, not an .xlsx workbook; {SAVE_AS_XLSX}",
        )


def _check_content(source: InputFile) -> None:
    """Sniff the first bytes: an .xlsx is a zip archive, whatever its name says."""
    head = source.data[: len(OLE_MAGIC)]
    if not head:
        raise _fail(source.name, Code.WRONG_FORMAT, f"is empty (0 bytes); {SAVE_AS_XLSX}")
    if head.startswith(b"%PDF"):
        raise _fail(
            source.name,
            Code.WRONG_FORMAT,
            "is a PDF document renamed, not a spreadsheet; give the .xlsx workbook",
        )
    if head == OLE_MAGIC:
        # An OLE compound file is an old .xls, or an .xlsx encrypted with a password: only the
        # latter names a stream EncryptionInfo.
        if ENCRYPTION_INFO in source.data:
            raise _fail(
                source.name,
                Code.ENCRYPTED,
                "is password-protected; remove the password (File > Info > Protect Workbook) and save again",
            )
        raise _fail(
            source.name,
            Code.WRONG_FORMAT,
            f"is an Excel 97-2003 (.xls) file renamed; {SAVE_AS_XLSX}",
        )
    if not head.startswith(b"PK"):
        raise _fail(
            source.name,
            Code.WRONG_FORMAT,
            f"is not an Excel workbook (an .xlsx file is a zip archive); {SAVE_AS_XLSX}",
        )


def _check_zip(source: InputFile) -> None:
    """Check the zip's declared sizes (bombs) and that it holds a workbook, before anything unpacks it."""
    try:
        with zipfile.ZipFile(io.BytesIO(source.data)) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise _fail(
            source.name,
            Code.UNREADABLE,
            f"is damaged ({_describe(exc)}); open it in Excel and save it again as .xlsx",
        ) from exc
    total = sum(m.file_size for m in members)
    if total > MAX_UNCOMPRESSED:
        raise _fail(
            source.name,
            Code.TOO_LARGE,
            f"unpacks to {total / MB:,.0f} MB, more than the {MAX_UNCOMPRESSED / MB:,.0f} MB budgetgen reads; "
            "remove images and data the budget does not need, or save it again from Excel",
        )
    for m in members:
        if m.file_size > RATIO_MIN_SIZE and m.file_size > MAX_RATIO * m.compress_size:
            raise _fail(
                source.name,
                Code.TOO_LARGE,
                f"holds {m.filename} packed {m.file_size / max(m.compress_size, 1):,.0f} to 1 "
                f"({m.file_size / MB:,.0f} MB unpacked), which looks like a zip bomb; save it again from Excel",
            )
    if "xl/workbook.xml" not in {m.filename for m in members}:
        raise _fail(
            source.name,
            Code.WRONG_FORMAT,
            f"is a zip archive but not an Excel workbook (no xl/workbook.xml inside); {SAVE_AS_XLSX}",
        )
    with zipfile.ZipFile(io.BytesIO(source.data)) as archive:
        _check_shared_strings(archive, source.name)


def _check_shared_strings(archive: zipfile.ZipFile, name: str) -> None:
    """Bound the shared strings openpyxl would load up front: their part's unpacked size, then their count."""
    part = _shared_strings_part(archive, name)
    if part is None:
        return
    size = archive.getinfo(part).file_size
    if size > MAX_SHARED_STRINGS_SIZE:
        raise _too_many_strings(name, f"{size / MB:,.1f} MB of shared text")
    with archive.open(part) as stream:
        count = _count_tags(stream, SHARED_STRING, stop_after=MAX_SHARED_STRINGS)
    if count > MAX_SHARED_STRINGS:
        raise _too_many_strings(name, f"more than {MAX_SHARED_STRINGS:,} different texts")


def _too_many_strings(name: str, what: str) -> InputError:
    return _fail(
        name,
        Code.TOO_LARGE,
        f"holds {what}, more than an inventory needs (at most {MAX_SHARED_STRINGS:,} texts, "
        f"{MAX_SHARED_STRINGS_SIZE / MB:,.0f} MB); delete the sheets and rows the budget does not need",
    )


def _shared_strings_part(archive: zipfile.ZipFile, name: str) -> str | None:
    """The member openpyxl reads the shared strings from, as [Content_Types].xml names it (None: none)."""
    try:
        info = archive.getinfo("[Content_Types].xml")
    except KeyError:
        return None
    if info.file_size > MB:  # a content-types part lists a few dozen parts
        raise _fail(name, Code.UNREADABLE, "is damaged ([Content_Types].xml is too large); "
                    "open it in Excel and save it again as .xlsx")
    for override in _xml(archive, "[Content_Types].xml", name).iter(f"{PKG_NS}Override"):
        part = override.get("PartName", "").lstrip("/")
        if override.get("ContentType") == SHARED_STRINGS_TYPE and part in archive.namelist():
            return part
    return None


def _count_tags(stream, pattern: re.Pattern, stop_after: int) -> int:
    """Occurrences of a tag in a streamed XML part (read in 1 MB chunks), counting stopped past `stop_after`."""
    count, tail = 0, b""
    while count <= stop_after and (chunk := stream.read(SCAN_CHUNK)):
        data = tail + chunk
        keep = len(data) - TAG_WINDOW  # a tag starting in the last bytes is counted with the next chunk
        count += sum(1 for m in pattern.finditer(data) if m.start() < keep)
        tail = data[max(keep, 0):]
    return count + sum(1 for _ in pattern.finditer(tail))


def _xml(archive: zipfile.ZipFile, part: str, name: str):
    try:
        return fromstring(archive.read(part))
    except Exception as exc:  # a damaged part is one clear problem
        raise _fail(name, Code.UNREADABLE,
                    f"could not be read ({_describe(exc)}); open it in Excel and save it again as .xlsx") from exc


def unsaved_formulas(data: bytes, name: str, titles: set[str]) -> dict[str, list[str]]:
    """Sheet title -> the cells of the sheets `titles` that hold a formula but no saved result (written by a script,
    never opened in a spreadsheet): read as blank they would silently become defaults."""
    found: dict[str, list[str]] = {}
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for title, part in _sheet_parts(archive, name).items():
            if title in titles:
                with archive.open(part) as stream:
                    cells = formulas_without_result(stream)
                if cells:
                    found[title] = cells
    return found


def _sheet_parts(archive: zipfile.ZipFile, name: str) -> dict[str, str]:
    """Sheet title -> its member in the zip, from xl/workbook.xml and its relationships."""
    names = set(archive.namelist())
    if "xl/_rels/workbook.xml.rels" not in names:
        return {}
    targets = {}
    for rel in _xml(archive, "xl/_rels/workbook.xml.rels", name).iter(f"{PKG_REL_NS}Relationship"):
        target = rel.get("Target", "")
        targets[rel.get("Id")] = target.lstrip("/") if target.startswith("/") else posixpath.normpath(
            posixpath.join("xl", target))
    parts = {}
    for sheet in _xml(archive, "xl/workbook.xml", name).iter(f"{MAIN_NS}sheet"):
        part = targets.get(sheet.get(f"{REL_NS}id"))
        if part in names:
            parts[sheet.get("name")] = part
    return parts


def formulas_without_result(stream) -> list[str]:
    """A1 references of the formula cells of one sheet part that carry no cached value.

    The part is scanned row by row with regular expressions (the XML parser takes seconds for a sheet of formulas);
    only the rows that hold a formula are looked at cell by cell.
    """
    cells, pending = [], b""
    while chunk := stream.read(SCAN_CHUNK):
        data = pending + chunk
        cut = data.rfind(b"</row>") + len(b"</row>") if b"</row>" in data else 0
        cells += _unsaved_in(data[:cut])
        pending = data[cut:]
    return cells + _unsaved_in(pending)


def _unsaved_in(rows: bytes) -> list[str]:
    if not FORMULA.search(rows):
        return []
    out = []
    for cell in CELL.finditer(rows):
        body = cell.group(2) or b""
        if not FORMULA.search(body):
            continue
        value = VALUE.search(body)
        kind = CELL_TYPE.search(cell.group(1))
        text_type = kind is not None and kind.group(1).decode() in TEXT_TYPES
        ref = CELL_REF.search(cell.group(1))
        if ref and (value is None or (not value.group(1) and not text_type)):
            out.append(ref.group(1).decode())
    return out


def _guarded(rows: Iterator[tuple], sheet: str) -> Iterator[tuple]:
    """Pass rows through, turning any failure of openpyxl's lazy parsing into an UNREADABLE problem."""
    while True:
        try:
            values = next(rows)
        except StopIteration:
            return
        except Exception as exc:  # whatever openpyxl raises becomes one clear problem
            raise _fail(
                sheet,
                Code.UNREADABLE,
                f"could not be read ({_describe(exc)}); open the file in Excel and save it again",
            ) from exc
        yield values


def _trim(values: tuple) -> tuple:
    """Drop the trailing None cells of a row, by bisection: a row padded out to column XFD stays cheap."""
    lo, hi = 0, len(values)  # values[hi:] is all None; the last value is at index lo or after
    while lo < hi:
        mid = (lo + hi) // 2
        if values[mid:hi].count(None) == hi - mid:
            hi = mid
        else:
            lo = mid + 1
    return values[:hi]


def _describe(exc: BaseException) -> str:
    """The short text of an exception's root cause: its class and the first line of its message."""
    while exc.__cause__ is not None:  # openpyxl wraps parse errors in a ValueError naming the path
        exc = exc.__cause__
    if isinstance(exc, DefusedXmlException):
        return "it declares XML entities, which Excel never writes: a possible 'billion laughs' attack"
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0][:200]}" if lines else type(exc).__name__


def _fail(place: str, code: Code, message: str, cell: str = "") -> InputError:
    """An InputError with one problem, placed at a file name or a sheet (and cell)."""
    return InputError([Problem(code, place, cell, message)])


# ---------------------------------------------------------------- outputs

STAGE_PREFIX = ".budgetgen-"
DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


def check_outputs(targets: Iterable[Path | None], inputs: Iterable[Path] = (),
                  collected: Iterable[Path] = ()) -> None:
    """Refuse, before any work, outputs that would overwrite an input or each other, or replace what is not a file.

    An input is the same file by its resolved path (symbolic links followed); a hard link of an input may be an
    output, since the rename replaces the link, never the input's content.
    `collected` are folders and globs whose files are read as inputs (bills): an output with a suffix they read
    that would land among them is refused too, so that the next run does not read it back.
    An existing output that is a folder, a device node or a fifo is never replaced (`-o /dev/null` as root would
    replace the system's); a symbolic link to a regular file is replaced by the new file, as editors do.
    """
    inputs = [Path(p) for p in inputs]
    sources = {p.resolve(): p for p in inputs}
    seen: dict[Path, Path] = {}
    problems = []
    for target in (Path(t) for t in targets if t is not None):
        key = target.resolve()
        source = sources.get(key)
        if source is not None:
            problems.append(Problem(Code.OUTPUT, source.name, "",
                                    "the output would overwrite the input: choose another -o/--json path"))
        elif key in seen:
            problems.append(Problem(Code.OUTPUT, target.name, "",
                                    f"is named for two outputs ({seen[key]} and {target}): give each its own path"))
        elif (kind := _special_kind(target)) is not None:
            problems.append(Problem(Code.OUTPUT, target.name, "",
                                    f"exists and is {kind}, not a regular file: it is never replaced; "
                                    "choose another output path"))
        elif (where := _collected_by(target, collected)) is not None:
            problems.append(Problem(Code.OUTPUT, target.name, "",
                                    f"would be written into {where}, which is read as input: the next run would "
                                    "read the output back; choose a path outside it"))
        seen.setdefault(key, target)
    if problems:
        raise InputError(problems)


COLLECTED_SUFFIXES = (".csv", ".parquet", ".xlsx")
"""What a folder or glob of bills reads (recon.bill_sums)."""


def _collected_by(target: Path, collected: Iterable[Path]) -> Path | None:
    """The folder or glob of `collected` that would read `target` as an input (None: none)."""
    if target.suffix.lower() not in COLLECTED_SUFFIXES:
        return None
    resolved = target.resolve()
    for source in (Path(c) for c in collected):
        if source.is_dir():
            if resolved.is_relative_to(source.resolve()):
                return source
        elif re.search(r"[*?\[]", str(source)) and not source.exists():
            pattern = str(source.absolute())
            if fnmatch.fnmatchcase(str(target.absolute()), pattern) or \
                    fnmatch.fnmatchcase(str(resolved), pattern):
                return source
    return None


def _special_kind(path: Path) -> str | None:
    """What an existing path is when it is not a regular file (None: a regular file, or nothing there)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode):
        return None
    for test, kind in ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a fifo"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "a special file"


@dataclass
class Staging:
    """Where a command writes its outputs: one new private folder beside each destination's folder."""

    paths: dict[Path, Path] = field(default_factory=dict)  # destination -> the file to write instead
    folders: dict[Path, Path] = field(default_factory=dict)  # destination's folder -> its staging folder

    def __getitem__(self, target: Path) -> Path:
        """The file to write in place of `target`; its folder is scratch space removed with the staging."""
        return self.paths[Path(target)]


@contextmanager
def staged_outputs(targets: Iterable[Path | None]) -> Iterator[Staging]:
    """Write each target to the path `staging[target]`; on a clean exit all are renamed into place together.

    The staging folders are unique (two commands writing the same file never share a temporary name), sit in
    the destination's folder (so the rename is atomic and the disk is the destination's, not $TMPDIR's), and
    are removed on any exit, an exception or KeyboardInterrupt included, with any destination folder created for
    them when nothing was committed. An OSError while writing (a full disk, a read-only folder) becomes an
    OutputError, and every earlier output stays as it was. The renames are one set: the stop signals wait until
    all are done, and a rename that fails puts the ones before it back.
    """
    staging = Staging()
    created: list[Path] = []
    committed = False
    try:
        for target in (Path(t) for t in targets if t is not None):
            folder = target.parent
            if folder not in staging.folders:
                staging.folders[folder] = _make_staging_folder(folder, created)
            staging.paths[target] = staging.folders[folder] / target.name
        try:
            yield staging
            _commit(staging)
            committed = True
        except OutputError as exc:  # a writer's own message names the file it wrote: the destination, to the user
            message = str(exc)
            for target, staged in staging.paths.items():
                message = message.replace(str(staged), str(target))
            raise OutputError(message) from None
        except Exception as exc:
            cause = _os_error(exc)
            if cause is None:
                raise
            raise OutputError(f"cannot write {_names(staging.paths)}: "
                              f"{why_not_writable(cause, next(iter(staging.folders)))}; "
                              "nothing was written") from None
    finally:
        for folder in staging.folders.values():
            shutil.rmtree(folder, ignore_errors=True)
        if not committed:
            for folder in reversed(created):  # deepest first; a folder something else filled meanwhile stays
                try:
                    folder.rmdir()
                except OSError:
                    pass


def _make_staging_folder(folder: Path, created: list[Path]) -> Path:
    """A private folder inside `folder`; the folders made on the way are appended to `created` (outermost first)."""
    missing = [p for p in (folder, *folder.parents) if not p.exists()][::-1]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        created += missing
        return Path(tempfile.mkdtemp(prefix=STAGE_PREFIX, dir=folder))
    except OSError as exc:
        raise OutputError(f"cannot write to {folder}: {why_not_writable(exc, folder)}") from None


STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


def _commit(staging: Staging) -> None:
    """Rename every staged file into place, holding each destination folder's lock so that concurrent
    commands into one folder commit one after the other (their outputs always come from one command).

    The stop signals are held back while the files are renamed (they arrive once all are in place), and an
    OSError part way puts back the files already replaced: the outputs change together or not at all."""
    umask = os.umask(0)
    os.umask(umask)
    with ExitStack() as locks:
        for folder in sorted({f.resolve() for f in staging.folders}):  # one order everywhere: no deadlock
            locks.enter_context(_folder_lock(folder))
        for target, staged in staging.paths.items():
            if not staged.is_file():
                raise OutputError(f"{target} was not written")
            if (kind := _special_kind(target)) is not None:  # appeared while we were working
                raise OutputError(f"{target} is {kind}, not a regular file: it is never replaced")
            os.chmod(staged, 0o666 & ~umask)  # an ordinary file, whatever the writer created it as
        with _signals_held():
            _replace_all(staging)


def _replace_all(staging: Staging) -> None:
    """os.replace each staged file onto its target; on an OSError, the targets replaced so far are restored."""
    done: list[tuple[Path, Path | None]] = []  # (target, its old file kept in the staging folder; None: was new)
    try:
        for target, staged in staging.paths.items():
            kept = Path(tempfile.mkdtemp(prefix="old-", dir=staged.parent)) / target.name
            backup: Path | None = kept
            try:
                os.link(target, kept, follow_symlinks=False)  # the old file (or link) itself, no copy
            except FileNotFoundError:
                backup = None
            except OSError:  # a file system without hard links
                shutil.copy2(target, kept, follow_symlinks=False)
            os.replace(staged, target)
            done.append((target, backup))
    except OSError:
        for target, backup in reversed(done):
            if backup is None:
                target.unlink(missing_ok=True)
            else:
                os.replace(backup, target)
        raise


@contextmanager
def _signals_held() -> Iterator[None]:
    """Hold back the stop signals while the block runs: one that comes is noted and raised again at its end.

    Python runs signal handlers in the main thread between two steps of its own, whichever thread the system
    delivered the signal to, so swapping the handlers (not the thread's signal mask) is what holds them."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread handles signals
        return
    pending: list[int] = []
    previous = {s: signal.signal(s, lambda signum, frame: pending.append(signum)) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        for signum in pending:
            signal.raise_signal(signum)


@contextmanager
def _folder_lock(folder: Path) -> Iterator[None]:
    """An exclusive advisory lock on a folder (flock on its descriptor: no lock file is left behind)."""
    if fcntl is None:  # pragma: no cover - Windows
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _os_error(exc: BaseException) -> OSError | None:
    """The OSError behind an exception: itself, or what a library wrapped (xlsxwriter's FileCreateError(e))."""
    seen = set()
    todo = [exc]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, OSError):
            return current
        todo += [a for a in getattr(current, "args", ()) if isinstance(a, BaseException)]
        todo += [e for e in (current.__cause__, current.__context__) if e is not None]
    return None


def _names(paths: Iterable[Path]) -> str:
    return " and ".join(str(p) for p in paths)


def why_not_writable(exc: OSError, folder: Path) -> str:
    """An OSError on an output in words a finance user can act on."""
    blocked = next((p for p in (folder, *folder.parents) if p.exists() and not p.is_dir()), None)
    if blocked is not None:
        return f"{blocked} is a file, not a folder; choose another path"
    if exc.errno in DISK_FULL:
        return f"the disk is full ({os.strerror(exc.errno)}); free some space or choose another folder"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"{os.strerror(exc.errno)}; choose a folder you can write to"
    return exc.strerror or str(exc)
