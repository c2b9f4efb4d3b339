"""Providers on the plan (issue 21): Candidates shows the provider and region of the offer behind each GPU's prices,
and Order groups its lines by provider, a block each with its subtotal in the plan currency, printed a page per
provider with the GPU column on every page. A small USD plan whose three GPUs are quoted by two providers on its
GPUs sheet; every expected figure is worked out by hand from the typed prices."""

from __future__ import annotations

import shutil

import openpyxl
import pytest
from conftest import make_input
from order_sheet import read_order

import budgetgen

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


def test_order_has_a_block_per_provider_with_its_subtotal(quoted):
    """zeta first (its L40S comes first in the catalog), then acme's A100 80G and H100 80G together; subtotals
    2,190 and 3,285 + 8,760 = 12,045; the GPU total 14,235, what the Summary's GPU total is (no commitment in a
    3-month plan). zeta's L40S is quoted at 2.0 CNY: its unit price on the USD Order is 1.0 (2.0 x 0.5), not 2.0
    under the USD label."""
    plan, out = quoted
    order = read_order(out)
    assert [(b.title, [(x["rent"], x["tier"]) for x in b.lines], b.reservations) for b in order.blocks] == [
        ("provider: zeta · region: us-east", [("L40S", "on_demand")], []),
        ("provider: acme · region: eu-north, eu-west", [("A100 80G", "on_demand"), ("H100 80G", "on_demand")], [])]
    assert [x["total"] for x in order.lines] == pytest.approx([ZETA, HPM * MONTHS * 1.5, 2 * HPM * MONTHS * 2.0])
    assert [x["unit price"] for x in order.lines] == pytest.approx([2.0 * CNY_RATE, 1.5, 2.0])
    assert [b.subtotal for b in order.blocks] == pytest.approx([ZETA, ACME])
    assert order.totals["GPU total (reservations and rent)"] == pytest.approx(ZETA + ACME)
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
    """The subtotal and GPU total rows of Order by their label."""
    order = read_order(out)
    rows = {f"Subtotal {b.title.split(': ')[1].split(' · ')[0]}": b.subtotal_row for b in order.blocks}
    return {**rows, "Total": order.total_rows["GPU total (reservations and rent)"]}


def test_order_prints_one_page_wide_with_no_forced_break(quoted):
    """The providers' blocks flow onto as few pages as hold them whole (here one: no break, forced or not), and the
    sheet prints one page wide, so no column prints away from its GPU in column A."""
    _, out = quoted
    ws = openpyxl.load_workbook(out)["Order"]
    assert [b.id for b in ws.row_breaks.brk] == []
    assert ws.sheet_properties.pageSetUpPr.fitToPage and (ws.page_setup.fitToWidth or 1, ws.page_setup.fitToHeight) == (1, 0)  # 1 wide is the default


def test_candidates_show_the_offer_behind_each_price(quoted):
    """Each candidate row names the offer of its tier's price on GPUs: the quotes' provider and region for the three
    quoted cards (a quote names one provider for the row), the built-in catalog's cheapest offer of the tier for
    the others. The column is a lookup on GPUs by the candidate's GPU and tier."""
    plan, out = quoted
    rows = _rows(out, "Candidates")
    header = [str(h).split(" (")[0] for h in rows[0]]
    gpu, tier, offer = (header.index(k) for k in ("gpu", "tier", "offer"))
    assert header[offer - 1] == "cost a month"   # beside the costs
    seen = {(r[gpu], r[tier], r[offer]) for r in rows[1:]}
    assert {("L40S", "on_demand", "zeta · us-east"), ("A100 80G", "on_demand", "acme · eu-north"),
            ("H100 80G", "on_demand", "acme · eu-west")} <= seen
    for name, t, shown in seen - {("L40S", "on_demand", "zeta · us-east"), ("A100 80G", "on_demand", "acme · eu-north"),
                                  ("H100 80G", "on_demand", "acme · eu-west")}:
        assert (shown or "") == plan.inputs.gpu(name).offer(t)
    formulas = _rows(out, "Candidates", data_only=False)
    assert all(str(r[offer]).startswith("=IF(CHOOSE(MATCH(") for r in formulas[1:])
