"""What bill and usage files contain: their columns declared once, like the input sheets' in schema.py.

Header matching (`match_headers`), type parsing and the error messages of `bills` and `usage` all follow
these declarations. A header matches a column's name or one of its aliases ignoring case, spaces,
underscores and dashes (schema.normalise_header, the reader's rule), then also without a `[unit]` suffix;
Chinese headers of the input sheets (`资源编号`) count as their English names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..core.i18n import canonical_name
from ..core.schema import Column, normalise_header

_UNIT_SUFFIX = re.compile(r"\[([^\]]*)\]")
GB_PER_UNIT = {"b": 1e-9, "kib": 1024 / 1e9, "mib": 1048576 / 1e9, "gib": 2**30 / 1e9, "mb": 1e-3, "gb": 1.0}


@dataclass(frozen=True)
class FileColumn(Column):
    """A column of a bill or usage file: a schema Column plus the other headers it goes by and its bounds.

    type: text | number | choice (one of `choices`, any case) | month | timestamp (a date or date-time, read as its
    month).
    alias_unit: the unit of a header matched by an alias that names none (nvidia-smi's memory is MiB).
    """

    aliases: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    alias_unit: str = ""

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(normalise_header(h) for h in (self.name, *self.aliases))


F = FileColumn
COMMITMENT_STATUSES = ("Used", "Unused")
"""FOCUS CommitmentDiscountStatus."""
PRICING_CATEGORIES = ("Standard", "Dynamic", "Committed", "Other")
"""FOCUS PricingCategory (a tier record's focus_category is one of them)."""
BILL_INPUT_COLUMNS: tuple[FileColumn, ...] = (
    F("ChargePeriodStart", "timestamp", required=True, example="2026-07-01T00:00:00Z",
      help="start of the charge period; its month is the line's month unless BillingPeriodStart gives one"),
    F("BillingPeriodStart", "timestamp", help="start of the invoice period; where given, its month is the line's"),
    F("BilledCost", "number", "currency", required=True, example="12.5",
      help="what the invoice charges for the line, in its BillingCurrency (credits negative)"),
    F("BillingCurrency", "text", help="ISO code of the line's currency; another than the plan's is converted "
      "at the month's rate (FX sheet, else the ECB reference)"),
    F("ResourceId", "text", help="the resource billed; the Assignments sheet and usage files refer to it"),
    F("ResourceName", "text", help="display name of the resource"),
    F("ResourceType", "text", help="kind of resource"),
    F("ServiceName", "text", help="the provider's service"),
    F("ServiceCategory", "text", help="FOCUS service category (Compute, Storage, Networking, ...)"),
    F("ChargeCategory", "text", help="Usage, Purchase, Tax, Credit or Adjustment"),
    F("ChargeDescription", "text", help="the provider's description of the charge"),
    F("SkuId", "text", help="the provider's SKU"),
    F("ConsumedQuantity", "number", help="quantity consumed, in ConsumedUnit"),
    F("ConsumedUnit", "text", help="unit of ConsumedQuantity (Hours counts GPU hours)"),
    F("Tags", "text", help='JSON object of tags; its task_id ties the line to a task, e.g. {"task_id": "T01"}'),
    F("EffectiveCost", "number", "currency",
      help="the line's amortised cost: committed discounts applied and upfront fees spread over the usage they "
           "cover (a commitment's Purchase line is 0 here); the plan is compared with it where every line has it"),
    F("CommitmentDiscountId", "text", help="the commitment (reservation, savings plan) the line draws on or bills"),
    F("CommitmentDiscountStatus", "choice", choices=COMMITMENT_STATUSES,
      help="Used: usage the commitment covered; Unused: the commitment's unused part, shown on its own line"),
    F("CommitmentDiscountType", "text", help="the provider's kind of commitment (Reserved Instance, Savings Plan, ...)"),
    F("PricingCategory", "choice", choices=PRICING_CATEGORIES,
      help="how the line is priced; a task's GPU lines are checked against its tier's category "
           "(monthly: Committed, on_demand: Standard, spot: Dynamic, idle: Other)"),
)

USAGE_INPUT_COLUMNS: tuple[FileColumn, ...] = (
    F("resource_id", "text", aliases=("resource", "instance_id"),
      help="the bill's ResourceId; a file without this column takes its file name"),
    F("month", "month", "YYYY-MM", help="the month of a monthly row"),
    F("timestamp", "timestamp", aliases=("time", "date"), help="the time of a sample"),
    F("gpu_util_pct", "number", "%", required=True, aliases=("utilization.gpu [%]", "utilization.gpu", "gpu_util"), minimum=0, maximum=100,
      help="GPU utilisation in percent (45 means 45%)"),
    F("mem_used_gb", "number", "GB", required=True, aliases=("memory.used [MiB]", "memory.used"), minimum=0, alias_unit="MiB",
      help="GPU memory used"),
    F("mem_total_gb", "number", "GB", aliases=("memory.total [MiB]", "memory.total"), minimum=0, alias_unit="MiB",
      help="GPU memory of the card"),
    F("oom_events", "number", "events", aliases=("oom",), minimum=0, help="out-of-memory events"),
)


def duplicate_headers(headers: Iterable[object], declared: Iterable[FileColumn]) -> dict[str, list[str]]:
    """Each declared column that more than one header matches (written twice, or as two of its names), with the
    headers: match_headers would take the first and silently drop the other's values."""
    keys = []
    for header in headers:
        text = str(canonical_name(header))
        keys.append((str(header), {normalise_header(text), normalise_header(_UNIT_SUFFIX.sub("", text))}))
    found = {}
    for column in declared:
        matching = [header for header, own in keys if own & set(column.keys)]
        if len(matching) > 1:
            found[column.name] = matching
    return found


def header_unit(header: str) -> str:
    """The `[unit]` written in a header (`memory.used [MiB]` → `MiB`), "" when none."""
    found = _UNIT_SUFFIX.search(header)
    return found.group(1).strip() if found else ""


def match_headers(headers: Iterable[object], declared: Iterable[FileColumn]) -> dict[str, str]:
    """Each declared column's header in the file (the first that matches); absent columns are left out."""
    exact: dict[str, str] = {}
    bare: dict[str, str] = {}
    for header in headers:
        text = str(canonical_name(header))
        exact.setdefault(normalise_header(text), str(header))
        bare.setdefault(normalise_header(_UNIT_SUFFIX.sub("", text)), str(header))
    found = {}
    for column in declared:
        header = next((exact[k] for k in column.keys if k in exact), None) or \
            next((bare[k] for k in column.keys if k in bare), None)
        if header is not None:
            found[column.name] = header
    return found


def gb_per_unit(header: str, column: FileColumn) -> float:
    """GB per unit of a memory column: its header's `[unit]`, the alias unit for an alias, else GB."""
    unit = header_unit(header)
    if not unit and normalise_header(header) != normalise_header(column.name):
        unit = column.alias_unit
    return GB_PER_UNIT.get(unit.lower(), 1.0) if unit else 1.0


def columns_reference() -> str:
    """Markdown tables of the bill and usage columns, for docs/reconciliation.md (a test keeps it in step)."""
    lines = ["<!-- recon-columns:begin -->"]
    for title, columns in (("Bill columns (FOCUS; `--bills` or a `Bills` sheet)", BILL_INPUT_COLUMNS),
                           ("Usage columns (`--usage` or a `Usage` sheet)", USAGE_INPUT_COLUMNS)):
        lines += ["", f"#### {title}", "", "| column | also read as | required | unit | meaning |", "|---|---|---|---|---|"]
        for c in columns:
            aliases = ", ".join(f"`{a}`" for a in c.aliases)
            bounds = "" if c.minimum is None else f" From {c.minimum:g}" + (
                f" to {c.maximum:g}." if c.maximum is not None else " up.")
            choices = f" One of {', '.join(c.choices)}." if c.choices else ""
            lines.append(f"| `{c.name}` | {aliases} | {'yes' if c.required else ''} | {c.unit} | "
                         f"{c.help.replace('|', chr(92) + '|')}.{bounds}{choices} |")
    lines += ["", "<!-- recon-columns:end -->"]
    return "\n".join(lines)


if __name__ == "__main__":
    print(columns_reference())
