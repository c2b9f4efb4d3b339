"""`budgetgen catalog import`: the offer chosen per GPU from a price file, written into the GPUs sheet of a copy of
an input workbook (the input itself is never changed; the copy appears whole or not at all)."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

from ..core.i18n import canonical_name, canonical_sheet
from ..core.schema import normalise_header
from ..io.safefile import check_outputs, load_input_workbook, read_input_file, staged_outputs
from .gpus import catalog_classes
from .price_files import PriceFile, read_price_file
from .prices import OFFER_FIELDS, Offer, choose_offer

SUFFIX = "-priced"  # the default output: the input's name with this before its extension


@dataclass(frozen=True)
class Imported:
    """What an import wrote: the output, what the price file gave, and the offer written per GPU."""

    output: Path
    found: PriceFile
    written: tuple[Offer, ...]
    not_offered: tuple[str, ...]  # catalog GPUs the file (or the asked provider/region) has no offer for


def default_priced(path: Path) -> Path:
    return path.with_name(f"{path.stem}{SUFFIX}{path.suffix}")


def import_prices(price_path: Path, input_path: Path, output: Path | None = None, provider: str | None = None,
                  region: str | None = None) -> Imported:
    """Write the offer chosen for each catalog GPU (`prices.choose_offer` with `provider`, `region`) into the GPUs
    sheet of a copy of `input_path`: an existing row of that GPU (its name, any case) gets the offer's
    columns (provider, region, currency, tier prices, purchase price, source, as_of; a tier not offered is
    cleared), a GPU not on the sheet gets a new row. Every other sheet and cell is kept."""
    import openpyxl  # loaded here, not when the CLI starts

    input_path = Path(input_path)
    output = Path(output) if output else default_priced(input_path)
    check_outputs([output], [input_path])
    source = read_input_file(input_path)
    load_input_workbook(source).close()  # the input's safety checks (a zip, sane sizes) before a full load
    classes = catalog_classes()
    found = read_price_file(price_path, classes)
    chosen = {gpu: choose_offer(found.offers, gpu, provider=provider, region=region) for gpu in classes}
    written = tuple(offer for offer in chosen.values() if offer is not None)
    wb = openpyxl.load_workbook(io.BytesIO(source.data), keep_vba=input_path.suffix.lower() == ".xlsm")
    _write_offers(wb, written, classes)
    with staged_outputs([output]) as staging:
        wb.save(staging[output])
    return Imported(output, found, written, tuple(g for g, o in chosen.items() if o is None))


def _write_offers(wb, offers: tuple[Offer, ...], classes) -> None:
    ws = next((ws for ws in wb.worksheets if canonical_sheet(ws.title) == "GPUs"), None) or wb.create_sheet("GPUs")
    header = {normalise_header(canonical_name(cell.value)): cell.column for cell in ws[1] if cell.value is not None}
    for name in ("gpu", *OFFER_FIELDS):
        if normalise_header(name) not in header:
            column = max(header.values(), default=0) + 1
            ws.cell(1, column, name)
            header[normalise_header(name)] = column
    gpu_column = header[normalise_header("gpu")]
    names = {name.lower(): name for name in classes}  # matched as the reader matches them: by name, any case
    rows: dict[str, int] = {}
    for at in range(2, ws.max_row + 1):
        value = ws.cell(at, gpu_column).value
        if value is not None and (known := names.get(str(value).strip().lower())):
            rows.setdefault(known, at)
    for offer in offers:
        if offer.gpu in rows:
            row = rows[offer.gpu]
        else:
            row = rows[offer.gpu] = ws.max_row + 1
            ws.cell(row, gpu_column, offer.gpu)
        for name, value in offer.fields().items():
            cell = ws.cell(row, header[normalise_header(name)])
            cell.value = _cell_text(value)
            if cell.data_type == "f":  # openpyxl takes a text that starts with = for a formula: a price file's
                cell.data_type = "s"  # provider =cmd|'/C calc'!A0 would be a live DDE formula in the priced copy


def _cell_text(value: object) -> object:
    """A value a cell can hold: control characters of a text (a terminal escape in a provider's name) as escapes."""
    from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE

    if not isinstance(value, str):
        return value
    return ILLEGAL_CHARACTERS_RE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), value)
