"""Reading a built workbook's Order sheet as a procurement officer would: its provider blocks, each block's
reservations and rent lines under their headers, the subtotals and the totals, by label (never by budgetgen's
layout code, so a test of the layout can fail)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import openpyxl


@dataclass
class Block:
    title: str
    title_row: int  # 1-based
    reservations: list[dict] = field(default_factory=list)  # header (without its unit) -> value, plus "_row"
    lines: list[dict] = field(default_factory=list)
    subtotal: float | None = None
    subtotal_row: int = 0


@dataclass
class OrderSheet:
    blocks: list[Block]
    totals: dict[str, float]  # label -> value (GPU total, extras, buffer, plan total)
    total_rows: dict[str, int]
    header_rows: list[int]

    def line(self, gpu: str, tier: str) -> dict:
        return next(x for b in self.blocks for x in b.lines if (x["rent"], x["tier"]) == (gpu, tier))

    @property
    def lines(self) -> list[dict]:
        return [x for b in self.blocks for x in b.lines]

    @property
    def reservations(self) -> list[dict]:
        return [x for b in self.blocks for x in b.reservations]


def _bare(header) -> str:
    """A header without its unit; a month's two-line header (2027, 01) as the month (2027-01)."""
    return str(header).split(" (")[0].replace("\n", "-") if header is not None else ""


def read_order(path: Path, data_only: bool = True) -> OrderSheet:
    ws = openpyxl.load_workbook(path, data_only=data_only)["Order"]
    blocks: list[Block] = []
    totals: dict[str, float] = {}
    total_rows: dict[str, int] = {}
    header_rows: list[int] = []
    header: list[str] | None = None
    kind = ""
    for n, row in enumerate(ws.iter_rows(values_only=True), start=1):
        first = row[0]
        if isinstance(first, str) and first.startswith("provider:"):
            blocks.append(Block(first, n))
            header = None
        elif first in ("reserve", "rent") and blocks:
            header, kind = [_bare(h) for h in row], first
            header_rows.append(n)
        elif isinstance(first, str) and first.startswith("Subtotal") and blocks:
            blocks[-1].subtotal = next(v for v in reversed(row) if isinstance(v, int | float))
            blocks[-1].subtotal_row = n
            header = None
        elif isinstance(first, str) and first in ("GPU total (reservations and rent)", "extras (Summary)",
                                                  "hidden-cost buffer (Summary)", "Plan total"):
            totals[first] = next(v for v in reversed(row) if v is not None)
            total_rows[first] = n
        elif first == "sign-off":
            break
        elif header is not None and first:
            values = dict(zip(header, row, strict=False))
            values["_row"] = n
            (blocks[-1].reservations if kind == "reserve" else blocks[-1].lines).append(values)
    return OrderSheet(blocks, totals, total_rows, header_rows)
