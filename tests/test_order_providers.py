"""Providers on the plan (issue 21): Candidates shows the provider and region of the offer behind each GPU's prices,
and Order groups its lines by provider, a block each with its subtotal in the plan currency, printed a page per
provider with the GPU column on every page. A small USD plan whose three GPUs are quoted by two providers on its
GPUs sheet; every expected figure is worked out by hand from the typed prices."""

from __future__ import annotations

import shutil

import openpyxl
import pytest
from conftest import make_input

import budgetgen
from budgetgen.workbook.layout import OrderLayout

HPM = 730  # hours_per_month's default: a card served around the clock bills 730 GPU-hours a month
MONTHS = 3
CNY_RATE = 0.5  # USD per CNY, typed on the input's FX sheet
QUOTES = [  # the GPUs sheet: the catalog's rows in its order (L40S, A100 80G, H100 80G), prices typed per GPU-hour
    {"gpu": "L40S", "on_demand_per_hour": 2.0, "currency": "CNY", "provider": "zeta", "region": "us-east"},
    {"gpu": "A100 80G", "on_demand_per_hour": 1.5, "currency": "USD", "provider": "acme", "region": "eu-north"},
    {"gpu": "H100 80G", "on_demand_per_hour": 2.0, "currency": "USD", "provider": "acme", "region": "eu-west"},
]
GPUS = [{**q, "source": "test quote", "as_of": "2026-06-01"} for q in QUOTES]
FX = [["currency", "rate", "as_of", "source"], ["CNY", CNY_RATE, "2026-06-01", "bank"]]


def _service(task_id: str, gpu: str, replicas: int) -> dict:
    """A 7B service held on `replicas` single cards around the clock (its speed typed, so the minimum decides)."""
    return {"task_id": task_id, "kind": "inference", "model_params_b": "7B", "requests_per_day": 100,
            "tokens_per_request": 200, "tokens_per_sec": 5000, "cards": 1, "min_replicas": replicas, "gpu": gpu,
            "tier": "on_demand", "serving_hours_per_day": 24}


TASKS = [_service("S1", "H100 80G", 2), _service("S2", "A100 80G", 1), _service("S3", "L40S", 1)]
# By hand: S1 2 cards x 730 h x 3 months = 4,380 GPU-hours x 2.0 = 8,760; S2 2,190 x 1.5 = 3,285; S3 2,190 x
# (2.0 CNY x 0.5 USD per CNY = 1.0 USD) = 2,190: zeta's quote is in CNY, converted at the typed rate, never relabelled
ACME = 2 * HPM * MONTHS * 2.0 + HPM * MONTHS * 1.5   # 12,045
ZETA = HPM * MONTHS * 2.0 * CNY_RATE                 # 2,190


@pytest.fixture(scope="module")
def quoted(tmp_path_factory):
    folder = tmp_path_factory.mktemp("providers")
    book = make_input(folder / "in.xlsx", TASKS, gpus=GPUS, extra_sheets={"FX": FX},
                      settings={"currency": "USD", "period_months": MONTHS, "build_date": "2026-06-15"})
    out = folder / "quoted.xlsx"
    return budgetgen.build_budget(book, out).plan, out


def _rows(out, sheet: str, data_only: bool = True) -> list[tuple]:
    return list(openpyxl.load_workbook(out, data_only=data_only)[sheet].iter_rows(values_only=True))


def _order_blocks(out) -> list[tuple]:
    """Order's rows from the first provider block to the total, with their 1-based row numbers."""
    rows = _rows(out, "Order")
    end = next(i for i, r in enumerate(rows) if r[0] == "Total")
    return [(i + 1, r) for i, r in enumerate(rows[OrderLayout.first:end + 1], start=OrderLayout.first) if any(r)]


def test_order_has_a_block_per_provider_with_its_subtotal(quoted):
    """zeta first (its L40S comes first in the catalog), then acme's A100 80G and H100 80G together; subtotals
    2,190 and 3,285 + 8,760 = 12,045; the total 14,235, what the Summary's GPU total is. zeta's L40S is quoted at
    2.0 CNY: its unit price on the USD Order is 1.0 (2.0 x 0.5), not 2.0 under the USD label."""
    plan, out = quoted
    total = OrderLayout.columns.index("total")
    rows = [r for _, r in _order_blocks(out)]
    assert [(r[0], r[1]) for r in rows] == [
        ("provider: zeta · region: us-east", None), ("L40S", "on_demand"), ("Subtotal zeta", None),
        ("provider: acme · region: eu-north, eu-west", None), ("A100 80G", "on_demand"), ("H100 80G", "on_demand"),
        ("Subtotal acme", None), ("Total", None)]
    assert [r[total] for r in rows if r[1]] == pytest.approx([ZETA, HPM * MONTHS * 1.5, 2 * HPM * MONTHS * 2.0])
    unit_price = OrderLayout.columns.index("unit price")
    assert [r[unit_price] for r in rows if r[1]] == pytest.approx([2.0 * CNY_RATE, 1.5, 2.0])
    assert [r[total] for r in rows if str(r[0]).startswith(("Subtotal", "Total"))] == \
        pytest.approx([ZETA, ACME, ZETA + ACME])
    assert ZETA + ACME == pytest.approx(sum(m.gpu for m in plan.month_totals.values()))


H100_REQUOTE = 3.0  # test_libreoffice recalculates a copy with the H100 80G re-quoted at this price
ACME_REQUOTED = 2 * HPM * MONTHS * H100_REQUOTE + HPM * MONTHS * 1.5   # 4,380 x 3.0 + 3,285 = 16,425


def requote_h100(out, edited):
    """A copy of the quoted plan's workbook with the H100 80G's on-demand price typed over on GPUs."""
    gpus = _rows(out, "GPUs", data_only=False)
    price = gpus[0].index(next(h for h in gpus[0] if str(h).startswith("on_demand_per_hour")))
    row = 1 + next(i for i, r in enumerate(gpus) if r[0] == "H100 80G")
    shutil.copy(out, edited)
    wb = openpyxl.load_workbook(edited)
    wb["GPUs"].cell(row, price + 1).value = H100_REQUOTE
    wb.save(edited)
    return edited


def formulas_by_label(out) -> dict[str, int]:
    """The subtotal and total rows of Order by their label."""
    return {r[0]: n for n, r in _order_blocks(out) if str(r[0]).startswith(("Subtotal", "Total"))}


def test_order_prints_a_page_per_provider_with_the_gpu_column(quoted):
    """A page break before acme's block and before the total (so the sign-off page is the providers' sum); the
    header row repeats on every page, and the sheet prints one page wide, so no column prints away from its GPU in
    column A."""
    _, out = quoted
    ws = openpyxl.load_workbook(out)["Order"]
    starts = [n for n, r in _order_blocks(out) if str(r[0]).startswith(("provider:", "Total"))]
    assert sorted(b.id for b in ws.row_breaks.brk) == [n - 1 for n in starts[1:]]  # a break is after its row
    assert ws.print_title_rows == f"${OrderLayout.header + 1}:${OrderLayout.header + 1}"
    assert ws.sheet_properties.pageSetUpPr.fitToPage and (ws.page_setup.fitToWidth or 1, ws.page_setup.fitToHeight) == (1, 0)  # 1 wide is the default


def test_candidates_show_the_provider_and_region_behind_each_price(quoted):
    """Each candidate row names the provider and region of its GPU's row on GPUs: the quotes' for the three quoted
    cards, the built-in offer's for the others (a USD plan: the USD market median, region any). The column is a
    lookup of the GPU's name on GPUs (its recalculation, in `formulas` and LibreOffice, is the English sample's
    whole-workbook one)."""
    plan, out = quoted
    rows = _rows(out, "Candidates")
    header = [str(h).split(" (")[0] for h in rows[0]]
    gpu, provider, region = (header.index(k) for k in ("gpu", "provider", "region"))
    assert header[provider - 1] == "cost a month" and region == provider + 1   # beside the costs
    seen = {(r[gpu], r[provider], r[region]) for r in rows[1:]}
    assert {("L40S", "zeta", "us-east"), ("A100 80G", "acme", "eu-north"), ("H100 80G", "acme", "eu-west")} <= seen
    builtin = {g.name: g for g in plan.inputs.gpus if g.name not in {q["gpu"] for q in QUOTES} and g.provider}
    assert builtin and all((name, "market", "any") in seen for name, g in builtin.items()
                           if g.provider == "market" and any(r[gpu] == name for r in rows[1:]))
    formulas = _rows(out, "Candidates", data_only=False)
    letter = openpyxl.utils.get_column_letter(gpu + 1)
    assert {r[provider] for r in formulas[1:]} == {f'=INDEX(GpuProvider,MATCH(${letter}{i},GpuName,0))&""'
                                                   for i in range(2, len(formulas) + 1)}
