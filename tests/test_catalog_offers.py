"""Offers: the built-in prices as sourced offers, derived from the price snapshot, chosen per plan, read from quote
sheets and written into an input's GPUs sheet by `budgetgen catalog import`."""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import subprocess
import sys
from importlib import resources

import openpyxl
import pytest
from click.testing import CliRunner
from conftest import DATA, REPO, SAMPLE, TODAY, make_input

from budgetgen import catalog, prices
from budgetgen.cli import main
from budgetgen.errors import Code, InputError
from budgetgen.price_files import read_price_file
from budgetgen.prices import ListedPrice, Offer, choose_offer, derive_offers
from budgetgen.reader import read_inputs

SNAPSHOT = DATA / "prices" / "gpu_prices.csv"  # a copy of the dated snapshot (see tests/data/prices/README.md)
SUMMARY = DATA / "prices" / "gpu_price_summary.csv"
CLASSES = {"H100 80G": "datacenter", "B200": "datacenter", "RTX 4090": "consumer", "L40S": "datacenter",
           "A10": "datacenter", "L4": "datacenter", "MI300X": "datacenter", "A100 80G": "datacenter"}


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def snapshot():
    """The offers derived from the test copy of the snapshot (row_flags.csv beside it)."""
    return read_price_file(SNAPSHOT, CLASSES)


def offer(found, gpu: str, provider: str) -> Offer:
    (o,) = [o for o in found.offers if o.gpu == gpu and o.provider == provider]
    return o


# ------------------------------------------------------------------ derived from the snapshot

def test_b200_medians_worked_out_by_hand_from_its_rows(snapshot):
    """B200 rows: nebius 44/8 = 5.5 (1 row); runpod 7.99 (4 rows); shadeform 4.99, 4.9 x4, 4.5 -> middle two 4.9;
    primeintellect 6.4068 6.3984 6.3956 6.3942 6.3934 6.3928 6.3924 -> 6.3942; gcp's 8 rows are accelerator-only
    (flagged), left out. Market: the middle two of 4.9, 5.5, 6.3942, 7.99 = (5.5 + 6.3942) / 2 = 5.9471."""
    assert offer(snapshot, "B200", "nebius").prices["on_demand"] == 5.5
    assert offer(snapshot, "B200", "nebius").region == "us-central1"  # its one region
    assert offer(snapshot, "B200", "runpod").prices["on_demand"] == 7.99
    assert offer(snapshot, "B200", "shadeform").prices["on_demand"] == pytest.approx(4.9)
    assert offer(snapshot, "B200", "primeintellect").prices["on_demand"] == pytest.approx(6.3942)
    assert not [o for o in snapshot.offers if o.gpu == "B200" and o.provider == "gcp"]
    market = offer(snapshot, "B200", "market")
    assert market.prices["on_demand"] == pytest.approx(5.9471, abs=1e-4) and market.prices["spot"] is None
    assert market.currency == "USD" and market.region == "any" and market.as_of == "2026-12-03"
    assert "gcp 8" in market.source and "0727c2bd9e77f91cb1377127c5f793a28cf01384" in market.source


def test_a_consumer_card_counts_the_marketplaces_a_datacenter_card_does_not(snapshot):
    """RTX 4090 provider medians: hyperbolic 0.25 (15 rows of 0.25, one of 0.23), runpod 0.69, shadeform 0.6
    (0.4, 0.6 x4, 0.49 -> middle two 0.6), vast 0.4: all count for a consumer card, median (0.4 + 0.6) / 2 = 0.5;
    spot only runpod's 0.34. H100: hyperbolic and vast are marketplaces, not counted for a datacenter card."""
    assert offer(snapshot, "RTX 4090", "shadeform").prices["on_demand"] == pytest.approx(0.6)
    assert offer(snapshot, "RTX 4090", "market").prices["on_demand"] == pytest.approx(0.5)
    assert offer(snapshot, "RTX 4090", "market").prices["spot"] == pytest.approx(0.34)
    h100 = offer(snapshot, "H100 80G", "market")
    assert "not counted: hyperbolic (marketplace), vast (marketplace)" in h100.source
    assert "hyperbolic 1.29" not in h100.source


def test_flagged_rows_are_left_out(snapshot):
    """RunPod's L40S rows are flagged (spot above on-demand, columns swapped in the source): no RunPod L40S offer.
    L40S market: aws 3.7664, cudo 1.0464, nebius 2.2844, shadeform 1.45 -> (1.45 + 2.2844) / 2 = 1.8672."""
    assert not [o for o in snapshot.offers if o.gpu == "L40S" and o.provider == "runpod"]
    assert offer(snapshot, "L40S", "market").prices["on_demand"] == pytest.approx(1.8672)
    assert "runpod 4" in offer(snapshot, "L40S", "market").source


@pytest.mark.parametrize(("label", "gpu", "provider"), [
    ("A10", "A10", "lambda"), ("L4", "L4", "aws"), ("L4", "L4", "gcp"), ("L40S", "L40S", "cudo"),
    ("MI300X", "MI300X", "runpod"), ("B200", "B200", "shadeform"), ("RTX4090", "RTX 4090", "vast"),
])
def test_provider_offers_agree_with_the_snapshots_own_summary(snapshot, label, gpu, provider):
    """Where one label maps to the GPU and no row is flagged, a provider's offer is the summary file's median."""
    with SUMMARY.open(newline="", encoding="utf-8") as fh:
        row = next(r for r in csv.DictReader(fh) if r["gpu"] == label and r["provider"] == provider)
    assert offer(snapshot, gpu, provider).prices["on_demand"] == pytest.approx(
        float(row["on_demand_per_gpu_hour_median"]))


def test_derive_offers_from_rows_by_hand():
    rows = [ListedPrice("lambda", "all-listed-regions", "a", "H100", 3.0, None),
            ListedPrice("lambda", "all-listed-regions", "b", "H100-SXM", 2.0, None),
            ListedPrice("aws", "us-east-1", "p5", "H100", 10.0, 4.0),
            ListedPrice("vast", "x", "v", "H100", 1.0, None),
            ListedPrice("aws", "us-east-1", "p4", "A100", 5.0, None)]  # A100 40GB: not in the catalog
    derived = derive_offers(rows, {"H100 80G": "datacenter"}, suspect={("lambda", "all-listed-regions", "a", "H100")})
    assert [(o.provider, o.prices["on_demand"], o.prices["spot"], o.region) for o in derived] == [
        ("market", 6.0, 4.0, "any"), ("aws", 10.0, 4.0, "us-east-1"), ("lambda", 2.0, None, "any"),
        ("vast", 1.0, None, "x")]  # one region: the offer's
    assert "1 row(s) flagged suspect" in derived[2].source


def test_every_datacenter_card_the_snapshot_prices_has_a_sourced_dated_usd_price(monkeypatch):
    """Each card's on-demand price is a named provider's USD offer (the cheapest eligible one), never the market's
    median where a provider's own offer exists, with the snapshot as its source and date."""
    monkeypatch.setattr(catalog, "CATALOG_RESOURCE", resources.files("budgetgen") / "data" / "gpus.csv")
    monkeypatch.setattr(prices, "OFFERS_RESOURCE", resources.files("budgetgen") / "data" / "prices.csv")
    usd = {g.name: g for g in catalog.builtin_catalog("USD")}
    for name in ("H100 80G", "H200", "B200", "A100 80G", "L40S", "L4", "A10", "MI300X", "RTX 4090"):
        g = usd[name]
        assert g.prices["on_demand"] > 0 and g.provider not in ("market", "") and g.currency == "USD", name
        assert g.offer("on_demand").split(" · ")[0] == g.provider, name
        assert "price snapshot (gpu_prices.csv) retrieved 2026-12-03" in g.source and g.as_of == "2026-12-03"


def test_every_datacenter_card_of_the_shipped_catalog_has_a_sourced_dated_on_demand_offer():
    """Read from the shipped package files themselves (not the tests' fixed copies): each datacenter card of
    gpus.csv has at least one prices.csv row with an on-demand price, a source and a date, so a new card
    without a sourced price fails here."""
    data = resources.files("budgetgen") / "data"
    with (data / "gpus.csv").open(newline="", encoding="utf-8") as fh:
        datacenter = [row["gpu"] for row in csv.DictReader(fh) if row["class"] == "datacenter"]
    with (data / "prices.csv").open(newline="", encoding="utf-8") as fh:
        priced = {row["gpu"] for row in csv.DictReader(fh)
                  if row["on_demand_per_hour"].strip() and float(row["on_demand_per_hour"]) > 0
                  and row["source"].strip() and row["as_of"].strip()}
    assert {"H800", "L20", "H20", "A800 80G", "H200", "B200", "MI300X", "L4"} <= set(datacenter)
    assert [g for g in datacenter if g not in priced] == []


def test_the_h800_and_l20_rents_are_the_page_prices_they_quote():
    """H800 25.00 and L20 4.00 CNY a card-hour: the figures of the 共绩算力 page price table the rows cite, in CNY,
    on-demand only (the page gives no other tier)."""
    shipped = prices.read_offers(resources.files("budgetgen") / "data" / "prices.csv")
    offers = {o.gpu: o for o in shipped if o.gpu in ("H800", "L20")}
    for gpu, price in (("H800", 25.0), ("L20", 4.0)):
        o = offers[gpu]
        assert (o.provider, o.region, o.currency, o.prices["on_demand"]) == ("cn-market", "cn", "CNY", price)
        assert f"'{gpu} | " in o.source and f"| {price:.2f} 元/小时'" in o.source and "gongjiyun.com" in o.source
        assert [t for t, p in o.prices.items() if p is not None] == ["on_demand"] and o.as_of == "2026-08"


def test_the_shipped_prices_csv_is_what_the_tool_derives(tmp_path):
    """tools/make_prices.py run on the snapshot copy rebuilds the shipped file byte for byte (its hand-entered
    CNY rows kept)."""
    out = tmp_path / "prices.csv"
    out.write_bytes((resources.files("budgetgen") / "data" / "prices.csv").read_bytes())
    done = subprocess.run([sys.executable, str(REPO / "tools" / "make_prices.py"), str(DATA / "prices"), "--out", str(out)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == (resources.files("budgetgen") / "data" / "prices.csv").read_bytes()


# ------------------------------------------------------------------ choosing one offer

OFFERS = [Offer("H100 80G", "cn-market", "cn", "CNY", {"on_demand": 45.0}),
          Offer("H100 80G", "market", "any", "USD", {"on_demand": 2.95}),
          Offer("H100 80G", "nebius", "eu-north1", "USD", {"on_demand": 2.95}),
          Offer("H100 80G", "lambda", "any", "USD", {"on_demand": 3.09}),
          Offer("H200", "nebius", "any", "USD", {"on_demand": 3.5})]


@pytest.mark.parametrize(("args", "expected"), [
    ({"currency": "CNY"}, "cn-market"),  # a CNY plan keeps the CNY prices
    ({"currency": "USD"}, "market"),
    ({"currency": "EUR"}, "market"),  # none in EUR: the market offer
    ({}, "market"),
    ({"provider": "Lambda"}, "lambda"),
    ({"provider": "nebius", "region": "eu-north1"}, "nebius"),
    ({"provider": "lambda", "region": "us-east-1"}, "lambda"),  # its any-region offer serves every region
    ({"provider": "aws"}, None),
])
def test_choose_offer(args, expected):
    chosen = choose_offer(OFFERS, "h100 80g", **args)
    assert (chosen.provider if chosen else None) == expected


def test_the_regional_offer_comes_before_the_any_region_one():
    offers = [Offer("L4", "p", "any", "USD", {"on_demand": 1.0}), Offer("L4", "p", "eu", "USD", {"on_demand": 2.0})]
    assert choose_offer(offers, "L4", provider="p", region="eu").region == "eu"


# ------------------------------------------------------------------ plans and GPUs rows

TASK = {"task_id": "T", "kind": "batch", "model_params_b": 1, "batch_requests": 10, "tokens_per_request": 10}


def test_a_usd_plan_prices_each_tier_at_its_cheapest_named_usd_offer(tmp_path):
    """A100 80G in the test prices.csv: on demand primeintellect 1.54 (under cudo 1.5882, shadeform 1.65, runpod
    and the market's 1.765, lambda 1.79, aws 5.1207, gcp 5.8631); spot aws 0.7953 (under runpod 1.19, gcp 1.8655);
    no monthly rent. The row's provider is its on-demand offer's."""
    inputs = read_inputs(make_input(tmp_path / "in.xlsx", [TASK], settings={"currency": "USD"}), today=TODAY)
    a100 = inputs.gpu("A100 80G")
    assert (a100.provider, a100.currency, a100.as_of) == ("primeintellect", "USD", "2026-12-03")
    assert a100.prices["on_demand"] == pytest.approx(1.54) and a100.offer("on_demand") == "primeintellect"
    assert a100.prices["spot"] == pytest.approx(0.7953) and a100.offer("spot") == "aws"
    assert a100.prices["monthly"] is None  # the snapshot has no monthly rent
    # H100 80G: hyperbolic's 1.29 and vast's 1.8 are marketplace asks, which count for consumer and workstation
    # cards only: cudo's regional 1.9784 is the cheapest a datacenter card is rented at
    h100 = inputs.gpu("H100 80G")
    assert (h100.prices["on_demand"], h100.offer("on_demand")) == (pytest.approx(1.9784), "cudo · no-kristiansand-1")
    assert (h100.prices["spot"], h100.offer("spot")) == (pytest.approx(1.25), "nebius · eu-north1")
    # RTX A6000 is priced in CNY only: a USD plan (offer_currency plan) leaves it unpriced, never converted
    a6000 = inputs.gpu("RTX A6000")
    assert all(p is None for p in a6000.prices.values())


def test_offer_currency_any_converts_a_card_priced_in_another_currency_only(tmp_path):
    inputs = read_inputs(make_input(tmp_path / "in.xlsx", [TASK], settings={"currency": "USD",
                                                                          "offer_currency": "any"}), today=TODAY)
    a6000 = inputs.gpu("RTX A6000")
    assert (a6000.currency, a6000.listed_prices["on_demand"]) == ("CNY", 5)
    assert a6000.prices["on_demand"] == pytest.approx(5 * inputs.fx.rate("CNY").rate) and a6000.fx < 1


def test_a_cny_plan_keeps_the_cny_prices_and_sources(tmp_path):
    inputs = read_inputs(make_input(tmp_path / "in.xlsx", [TASK]), today=TODAY)
    h100 = inputs.gpu("H100 80G")
    assert (h100.provider, h100.region, h100.currency, h100.prices["on_demand"]) == ("cn-market", "cn", "CNY", 45)
    # H200 has USD offers only: a CNY plan leaves it unpriced; with offer_currency any, shadeform's 3.3687 (the
    # cheapest named datacenter offer: vast is a marketplace) converted into CNY
    assert all(p is None for p in inputs.gpu("H200").prices.values())
    anyway = read_inputs(make_input(tmp_path / "any.xlsx", [TASK], settings={"offer_currency": "any"}), today=TODAY)
    h200 = anyway.gpu("H200")
    assert (h200.provider, h200.currency, h200.listed_prices["on_demand"]) == ("shadeform", "USD", 3.3687)
    assert h200.prices["on_demand"] == pytest.approx(3.3687 * anyway.fx.rate("USD").rate) and h200.fx > 1


def test_a_gpus_row_in_another_currency_is_converted_and_a_bad_code_refused_at_its_cell(tmp_path):
    path = make_input(tmp_path / "in.xlsx", [TASK], gpus=[{"gpu": "H100 80G", "on_demand_per_hour": 3, "currency": "usd"},
                                                         {"gpu": "L4", "on_demand_per_hour": 9, "currency": "yen!"}])
    with pytest.raises(InputError) as caught:
        read_inputs(path, today=TODAY)
    assert [(p.code, p.place) for p in caught.value.problems] == [(Code.UNKNOWN_VALUE, "GPUs!C3")]
    path = make_input(tmp_path / "ok.xlsx", [TASK], gpus=[{"gpu": "H100 80G", "on_demand_per_hour": 3, "currency": "usd"}])
    h100 = read_inputs(path, today=TODAY).gpu("H100 80G")
    # a USD row over a CNY catalog row: its prices replace the CNY ones, converted, never relabelled
    assert (h100.currency, h100.listed_prices["on_demand"], h100.prices["monthly"]) == ("USD", 3, None)
    assert h100.prices["on_demand"] == pytest.approx(3 * h100.fx) and h100.fx > 1


def test_a_gpus_row_naming_a_provider_replaces_the_builtin_offer(tmp_path):
    path = make_input(tmp_path / "in.xlsx", [TASK], gpus=[
        {"gpu": "A100 80G", "provider": "acme", "on_demand_per_hour": 10, "as_of": "2026-06-01"},  # currency blank
        {"gpu": "H100 80G", "spot_per_hour": 9}])  # no provider: the other built-in prices stay, unattributed
    inputs = read_inputs(path, today=TODAY)
    a100, h100 = inputs.gpu("A100 80G"), inputs.gpu("H100 80G")
    assert a100.prices == {"monthly": None, "on_demand": 10, "idle": None, "spot": None,
                           "reserved_1y": None, "reserved_3y": None}
    assert (a100.provider, a100.region, a100.currency, a100.source) == ("acme", "", "CNY", "")
    assert h100.prices == {"monthly": 27900, "on_demand": 45, "idle": 22.5, "spot": 9,
                           "reserved_1y": None, "reserved_3y": None}
    # a typed price makes the row the user's: the built-in offer's provider, region and source are not shown
    # beside it (Candidates and Order would otherwise name cn-market behind the user's own quote)
    assert (h100.provider, h100.region, h100.source) == ("", "", "")


# ------------------------------------------------------------------ quote sheets

QUOTES = [["gpu", "provider", "region", "tier", "price", "currency", "as_of", "source"],
          ["H100", "acme", "eu-west", "on_demand", "2.5", "USD", "2026-11-30", "email 2026-11-30"],
          ["h100 80g", "acme", "eu-west", "spot", "1.2", "usd", "2026-11-02", ""],
          ["B200", "acme", "", "monthly", "3000", "USD", "2026-11-30", ""]]


def write_csv(path, rows):
    with path.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows)
    return path


def test_a_quote_sheet_groups_tiers_into_offers(tmp_path):
    found = read_price_file(write_csv(tmp_path / "quotes.csv", QUOTES), CLASSES)
    h100, b200 = found.offers
    assert (h100.gpu, h100.provider, h100.region, h100.currency) == ("H100 80G", "acme", "eu-west", "USD")
    assert h100.prices == {"monthly": None, "on_demand": 2.5, "idle": None, "spot": 1.2,
                           "reserved_1y": None, "reserved_3y": None}
    assert h100.as_of == "2026-11-02"  # dated by its oldest quote
    assert h100.source == "email 2026-11-30; quotes.csv row 3"
    assert (b200.region, b200.prices["monthly"]) == ("any", 3000)


def test_a_quote_sheet_in_xlsx_reads_the_same(tmp_path):
    wb = openpyxl.Workbook()
    for row in QUOTES:
        wb.active.append(row)
    wb.save(tmp_path / "quotes.xlsx")
    xlsx = read_price_file(tmp_path / "quotes.xlsx", CLASSES).offers
    assert [dataclasses.replace(o, source=o.source.replace("xlsx", "csv")) for o in xlsx] == \
        list(read_price_file(write_csv(tmp_path / "quotes.csv", QUOTES), CLASSES).offers)


def test_quote_sheet_problems_name_file_row_and_column(tmp_path):
    rows = [QUOTES[0], ["H100", "acme", "", "on_demand", "cheap", "USD", "2026-11-30", ""],
            ["Z99", "acme", "", "on_demand", "1", "USD", "2026-11-30", ""],
            ["L4", "acme", "", "hourly", "1", "USD", "2026-31-11", ""],
            ["L4", "acme", "", "spot", "1", "dollars", "2026-11-30", ""],
            ["B200", "acme", "", "spot", "1", "USD", "2026-11-30", ""],
            ["B200", "acme", "any", "spot", "2", "USD", "2026-11-30", ""]]
    with pytest.raises(InputError) as caught:
        read_price_file(write_csv(tmp_path / "q.csv", rows), CLASSES)
    assert [(p.code, p.place) for p in caught.value.problems] == [
        (Code.NOT_A_NUMBER, "q.csv!E2"), (Code.UNKNOWN_VALUE, "q.csv!A3"), (Code.UNKNOWN_VALUE, "q.csv!D4"),
        (Code.BAD_DATE, "q.csv!G4"), (Code.UNKNOWN_VALUE, "q.csv!F5"), (Code.DUPLICATE_GPU, "q.csv!D7")]
    assert "q.csv!D7 tier: spot of B200 from acme in any is already quoted at D6" in str(caught.value)


def test_a_file_of_neither_format_is_one_problem(tmp_path):
    with pytest.raises(InputError) as caught:
        read_price_file(write_csv(tmp_path / "x.csv", [["a", "b"], [1, 2]]), CLASSES)
    (problem,) = caught.value.problems
    assert problem.code == Code.MISSING_COLUMN and problem.place == "x.csv!A1"


def test_a_bad_snapshot_cell_is_named(tmp_path):
    with SNAPSHOT.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))[:4]
    rows[2][8] = "n/a"
    with pytest.raises(InputError) as caught:
        read_price_file(write_csv(tmp_path / "gpu_prices.csv", rows), CLASSES)
    assert [(p.code, p.place) for p in caught.value.problems] == [(Code.NOT_A_NUMBER, "gpu_prices.csv!I3")]


# ------------------------------------------------------------------ budgetgen catalog import

def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def gpus_sheet(path) -> dict[str, dict[str, object]]:
    ws = openpyxl.load_workbook(path)["GPUs"]
    header = [c.value for c in ws[1]]
    return {row[0]: dict(zip(header, row)) for row in ws.iter_rows(min_row=2, values_only=True)}


def test_import_the_snapshot_into_a_copy_of_the_input(tmp_path):
    into = tmp_path / "q3.xlsx"
    into.write_bytes(SAMPLE.read_bytes())
    before = digest(into)
    result = run("catalog", "import", SNAPSHOT, "--into", into)
    assert result.exit_code == 0, result.output
    assert digest(into) == before  # the input is never changed
    out = tmp_path / "q3-priced.xlsx"
    sheet = gpus_sheet(out)
    # H200 provider medians: nebius 3.5 (every row), runpod 3.99 (H200-SXM, every row), shadeform 3.3687 (the
    # snapshot's summary), aws and gcp above 6 in every row: the middle of five is runpod's 3.99
    assert sheet["H200"]["provider"] == "market" and sheet["H200"]["on_demand_per_hour"] == pytest.approx(3.99)
    assert sheet["H100 80G"]["currency"] == "USD" and sheet["H100 80G"]["as_of"] == "2026-12-03"
    assert openpyxl.load_workbook(out).sheetnames == ["Settings", "Tasks", "Extras", "FX", "GPUs"]  # the rest kept
    assert "  H200: market (any) USD on_demand 3.99, spot" in result.output
    assert "labels not in the catalog, skipped: A100, A10G, H100-NVL, L40, RTX6000-Ada" in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q3-priced.xlsx", "q3.xlsx"]  # no temporary file left


def test_import_a_provider_updates_the_existing_rows(tmp_path):
    into = make_input(tmp_path / "in.xlsx", [TASK], gpus=[{"gpu": "h100 80g", "on_demand_per_hour": 1, "idle_per_hour": 1}])
    result = run("catalog", "import", SNAPSHOT, "--into", into, "--provider", "nebius", "-o", tmp_path / "out.xlsx")
    assert result.exit_code == 0, result.output
    sheet = gpus_sheet(tmp_path / "out.xlsx")
    row = sheet["h100 80g"]
    assert row["provider"] == "nebius" and row["region"] == "eu-north1" and row["currency"] == "USD"
    assert row["on_demand_per_hour"] == 2.95 and row["idle_per_hour"] is None  # not offered by nebius
    assert "not offered: RTX 4090" in result.output
    # the priced copy is an input like any other: a USD plan builds from it, the row nebius's offer
    wb = openpyxl.load_workbook(tmp_path / "out.xlsx")
    wb["Settings"].append(["currency", "USD"])
    wb.save(tmp_path / "usd.xlsx")
    h100 = read_inputs(tmp_path / "usd.xlsx", today=TODAY).gpu("H100 80G")
    assert (h100.provider, h100.prices["on_demand"], h100.prices["idle"]) == ("nebius", 2.95, None)


def test_import_prints_file_text_escaped(tmp_path):
    quotes = write_csv(tmp_path / "q.csv", [QUOTES[0], ["L4", "acme\x1b[31m", "", "spot", "1", "USD", "2026-11-30"]])
    into = make_input(tmp_path / "in.xlsx", [TASK])
    result = run("catalog", "import", quotes, "--into", into)
    assert result.exit_code == 0 and "\x1b" not in result.output and "acme\\x1b[31m" in result.output


def test_import_errors_write_nothing(tmp_path):
    into = make_input(tmp_path / "in.xlsx", [TASK])
    bad = write_csv(tmp_path / "q.csv", [QUOTES[0], ["L4", "acme", "", "spot", "x", "USD", "2026-11-30"]])
    result = CliRunner().invoke(main, ["catalog", "import", str(bad), "--into", str(into)])
    assert result.exit_code == 1 and "Error: q.csv!E2 price:" in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.xlsx", "q.csv"]
    same = CliRunner().invoke(main, ["catalog", "import", str(SNAPSHOT), "--into", str(into), "-o", str(into)])
    assert same.exit_code == 1 and "would overwrite the input" in same.output
