"""Offers: the built-in prices as sourced offers, derived from the price snapshot, chosen per plan, read from quote
sheets and written into an input's GPUs sheet by `budgetgen catalog import`."""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import hashlib
import os
import subprocess
import sys
from importlib import resources

import openpyxl
import pytest
from click.testing import CliRunner
from conftest import DATA, REPO, SAMPLE, TODAY, make_input

from budgetgen.catalog import gpus as catalog
from budgetgen.catalog import prices
from budgetgen.catalog.price_files import read_price_file
from budgetgen.catalog.prices import ListedPrice, Offer, choose_offer, derive_offers
from budgetgen.cli import main
from budgetgen.core.errors import Code, InputError
from budgetgen.io.reader import read_inputs

SNAPSHOT = DATA / "prices" / "gpu_prices.csv"  # a copy of the dated snapshot (see tests/data/prices/README.md)
SUMMARY = DATA / "prices" / "gpu_price_summary.csv"
CLASSES = {"H100 80G": "datacenter", "B200": "datacenter", "RTX 4090": "consumer", "L40S": "datacenter",
           "A10": "datacenter", "L4": "datacenter", "MI300X": "datacenter", "A100 80G": "datacenter",
           "H100 PCIe": "datacenter", "A100 40G": "datacenter"}


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

def test_b200_prices_are_the_smallest_host_shapes_worked_out_by_hand(snapshot):
    """B200 rows: nebius has one shape, 8 GPUs at 44/8 = 5.5; runpod 1x/2x/4x/8x at 7.99 -> its 1x, 7.99;
    shadeform's fewest GPUs is 1 (datacrunch_B200 in helsinki-finland-5, 4.9; its 8x hosts at 4.99 and 4.5 are not
    its smallest shape) -> 4.9 in that one region; primeintellect runpod__1xB200 6.4068 (the 2x..7x hosts at 6.3984
    down to 6.3924 are left); gcp's 8 rows are accelerator-only (flagged), left out. Market: the middle two of 4.9,
    5.5, 6.4068, 7.99 = (5.5 + 6.4068) / 2 = 5.9534."""
    assert offer(snapshot, "B200", "nebius").prices["on_demand"] == 5.5
    assert offer(snapshot, "B200", "nebius").region == "us-central1"  # its one region
    assert offer(snapshot, "B200", "runpod").prices["on_demand"] == 7.99
    shadeform = offer(snapshot, "B200", "shadeform")
    assert (shadeform.prices["on_demand"], shadeform.region) == (pytest.approx(4.9), "helsinki-finland-5")
    assert offer(snapshot, "B200", "primeintellect").prices["on_demand"] == pytest.approx(6.4068)
    assert not [o for o in snapshot.offers if o.gpu == "B200" and o.provider == "gcp"]
    market = offer(snapshot, "B200", "market")
    assert market.prices["on_demand"] == pytest.approx(5.9534, abs=1e-4) and market.prices["spot"] is None
    assert market.currency == "USD" and market.region == "any" and market.as_of == "retrieved 2026-12-03"
    assert "gcp 8 flagged suspect" in market.source and "0727c2bd9e77f91cb1377127c5f793a28cf01384" in market.source
    assert "1-GPU datacrunch_B200" in shadeform.source


def test_a_consumer_card_counts_the_marketplaces_a_datacenter_card_does_not(snapshot):
    """RTX 4090, 1-GPU rows: hyperbolic 0.25, 0.25, 0.23, 0.25 (host sizes the snapshot does not give: their
    median) -> 0.25; runpod 0.69 (spot 0.34); shadeform 0.6 (oslo-norway-3, its only 1-GPU region); vast 0.4. All
    count for a consumer card: median of 0.25, 0.4, 0.6, 0.69 = 0.5; spot only runpod's 0.34. H100: hyperbolic's
    rows do not tell SXM from PCIe, and vast is a marketplace, not counted for a datacenter card."""
    assert offer(snapshot, "RTX 4090", "hyperbolic").prices["on_demand"] == pytest.approx(0.25)
    assert offer(snapshot, "RTX 4090", "shadeform").prices["on_demand"] == pytest.approx(0.6)
    assert offer(snapshot, "RTX 4090", "market").prices["on_demand"] == pytest.approx(0.5)
    assert offer(snapshot, "RTX 4090", "market").prices["spot"] == pytest.approx(0.34)
    h100 = offer(snapshot, "H100 80G", "market")
    assert "not counted: vast (marketplace)" in h100.source
    assert "hyperbolic 21 whose instance type does not tell the card (form factor) (H100)" in h100.source


def test_flagged_rows_are_left_out(snapshot):
    """RunPod's L40S rows are flagged (spot above on-demand, columns swapped in the source): no RunPod L40S offer.
    nebius's 1-GPU L40S rows in eu-north1 (its 2- and 4-GPU hosts left): 1.5484 1.7468 1.8172 1.9452 2.1436 2.2844
    2.342 2.7516 -> (1.9452 + 2.1436) / 2 = 2.0444."""
    assert not [o for o in snapshot.offers if o.gpu == "L40S" and o.provider == "runpod"]
    assert offer(snapshot, "L40S", "nebius").prices["on_demand"] == pytest.approx(2.0444)
    assert "runpod 4 flagged suspect" in offer(snapshot, "L40S", "market").source


def test_rows_the_source_marks_stale_are_left_out(snapshot):
    """Every AWS row of the snapshot carries `vintage:pre-2025-06-AWS-GPU-price-cut` (the price list before AWS's
    mid-2025 cut): no AWS offer for any card, and the market offers say how many rows were left out (L40S: 31)."""
    assert not [o for o in snapshot.offers if o.provider == "aws"]
    assert "aws 31 marked stale by the source" in offer(snapshot, "L40S", "market").source


def test_pcie_and_sxm_h100_rows_price_different_cards(snapshot):
    """Lambda lists gpu_1x_h100_pcie at 2.49 and gpu_1x/2x/4x/8x_h100_sxm5 at 3.29/3.19/3.09/2.99; RunPod's `H100`
    is the H100 PCIe (SkyPilot's RunPod GPU map), 2.39 at every size, and its `H100-SXM` 2.99 (spot 2.69). So H100
    PCIe: lambda 2.49, runpod 2.39, market (2.39 + 2.49) / 2 = 2.44; H100 80G (SXM): lambda 3.29 (its smallest SXM
    host, not the 8x's 2.99), runpod 2.99."""
    assert offer(snapshot, "H100 PCIe", "lambda").prices["on_demand"] == 2.49
    assert offer(snapshot, "H100 PCIe", "runpod").prices["on_demand"] == 2.39
    assert offer(snapshot, "H100 PCIe", "market").prices["on_demand"] == pytest.approx(2.44)
    assert offer(snapshot, "H100 80G", "lambda").prices["on_demand"] == 3.29
    assert (offer(snapshot, "H100 80G", "runpod").prices["on_demand"], offer(snapshot, "H100 80G", "runpod").prices["spot"]) \
        == (2.99, 2.69)


def test_the_40gb_a100_is_its_own_card(snapshot):
    """40 GB A100 rows that say SXM4 (or AWS p4d / GCP a2-highgpu): lambda gpu_1x_a100_sxm4 1.29; shadeform
    denvr_A100-sxm4 1.25 (1 GPU, calgary-canada-1; its x8 left); gcp a2-highgpu-1g us-central1 3.6734 (spot 1.443;
    its other regions flagged suspect); vast 1.2 (a marketplace, not counted); AWS p4d stale. Lambda's gpu_1x_a100
    and shadeform's paperspace_A100 do not say SXM or PCIe: left out. Market: median of 1.25, 1.29, 3.6734 = 1.29."""
    assert offer(snapshot, "A100 40G", "shadeform").region == "calgary-canada-1"
    assert offer(snapshot, "A100 40G", "market").prices["on_demand"] == pytest.approx(1.29)
    assert offer(snapshot, "A100 40G", "market").prices["spot"] == pytest.approx(1.443)
    assert offer(snapshot, "A100 40G", "gcp").prices["on_demand"] == pytest.approx(3.6734)


def test_a_snapshot_row_resolves_to_a_card_by_label_and_instance_type():
    assert prices.resolve_label("H100", provider="lambda", instance_type="gpu_1x_h100_pcie") == ("H100 PCIe", "")
    assert prices.resolve_label("H100", provider="runpod", instance_type="1x_H100_SECURE") == ("H100 PCIe", "")
    assert prices.resolve_label("H100", provider="vast", instance_type="1x-H100_SXM-32-65536") == ("H100 80G", "")
    assert prices.resolve_label("H100", provider="hyperbolic", instance_type="1x-H100-28-271") == \
        (None, prices.UNTOLD_CARD)
    assert prices.resolve_label("A100-80GB", provider="cudo", instance_type="epyc-genoa-a100-pcie_1x2v4gb") == \
        ("A100 PCIe", "")
    assert prices.resolve_label("Z99") == (None, prices.UNKNOWN_LABEL)
    assert prices.resolve_label("h100 80g", ["H100 80G"]) == ("H100 80G", "")  # a catalog name is itself


@pytest.mark.parametrize(("label", "gpu", "provider"), [
    ("A10", "A10", "lambda"), ("MI300X", "MI300X", "runpod"),
])
def test_provider_offers_agree_with_the_snapshots_own_summary(snapshot, label, gpu, provider):
    """Where every row of a provider is one shape (or one price), its offer is the summary file's median."""
    with SUMMARY.open(newline="", encoding="utf-8") as fh:
        row = next(r for r in csv.DictReader(fh) if r["gpu"] == label and r["provider"] == provider)
    assert offer(snapshot, gpu, provider).prices["on_demand"] == pytest.approx(
        float(row["on_demand_per_gpu_hour_median"]))


def test_derive_offers_from_rows_by_hand():
    rows = [ListedPrice("lambda", "all-listed-regions", "a", "H100-SXM", 3.0, None, gpu_count=1),
            ListedPrice("lambda", "all-listed-regions", "b", "H100-SXM", 2.0, None, gpu_count=8),  # not its smallest
            ListedPrice("aws", "us-east-1", "p5.48xlarge", "H100", 10.0, 4.0, gpu_count=8),
            ListedPrice("vast", "x", "v", "H100-SXM", 1.0, None, gpu_count=1),
            ListedPrice("cudo", "y", "c", "H100-SXM", 2.5, None, gpu_count=1),
            ListedPrice("hyperbolic", "z", "h", "H100", 1.5, None, gpu_count=1),  # SXM or PCIe: not told
            ListedPrice("aws", "us-east-1", "p4", "A100", 5.0, None)]  # A100 40GB: not in this catalog
    derived = derive_offers(rows, {"H100 80G": "datacenter"}, suspect={("cudo", "y", "c", "H100-SXM")})
    assert [(o.provider, o.prices["on_demand"], o.prices["spot"], o.region) for o in derived] == [
        ("market", 6.5, 4.0, "any"), ("aws", 10.0, 4.0, "us-east-1"), ("lambda", 3.0, None, "any"),
        ("vast", 1.0, None, "x")]  # market: (3 + 10) / 2, vast a marketplace; one region: the offer's
    assert "cudo 1 flagged suspect" in derived[0].source and "hyperbolic 1 whose instance type" in derived[0].source


def test_the_smallest_host_is_the_fewest_gpus_then_vcpus_then_memory():
    def row(region, count, vcpus, memory, price, spot=None):
        return ListedPrice("p", region, f"{count}x{vcpus}", "L4", price, spot, gpu_count=count, vcpus=vcpus,
                           memory_gib=memory)
    rows = [row("a", 1, 8, 32, 1.0, 0.5), row("a", 1, 8, 32, 1.0, 0.3),  # one shape in two zones: both kept
            row("a", 1, 16, 64, 1.4), row("a", 2, 4, 16, 0.9),  # a bigger host; more GPUs
            row("b", 1, 4, 64, 2.0), row("b", 1, 4, 32, 2.2)]  # b: fewer GiB wins, dearer or not
    assert [(r.region, r.vcpus, r.memory_gib, r.spot) for r in prices.smallest_shape(rows)] == [
        ("a", 8, 32, 0.5), ("a", 8, 32, 0.3), ("b", 4, 32, None)]
    (derived,) = derive_offers(rows, {"L4": "datacenter"})  # p is no known provider: no market offer
    # a: 1.0, spot median(0.5, 0.3) = 0.4; b: 2.2; over regions: on-demand (1.0 + 2.2) / 2 = 1.6, spot 0.4
    assert (derived.prices["on_demand"], derived.prices["spot"]) == (pytest.approx(1.6), pytest.approx(0.4))


def test_every_datacenter_card_the_snapshot_prices_has_a_sourced_undated_usd_offer(monkeypatch):
    monkeypatch.setattr(catalog, "CATALOG_RESOURCE", resources.files("budgetgen") / "data" / "gpus.csv")
    monkeypatch.setattr(prices, "OFFERS_RESOURCE", resources.files("budgetgen") / "data" / "prices.csv")
    usd = {g.name: g for g in catalog.builtin_catalog("USD")}
    for name in ("H100 80G", "H100 PCIe", "H200", "B200", "A100 80G", "A100 PCIe", "A100 40G", "L40S", "L4", "A10",
                 "MI300X", "RTX 4090"):
        g = usd[name]
        assert g.prices["on_demand"] > 0 and g.currency == "USD" and g.provider not in ("", "market"), name
        assert g.source.startswith(f"{g.provider}") or "price snapshot (gpu_prices.csv)" in g.source, name
        assert g.as_of == "retrieved 2026-12-03", name  # the day it was read, said as such: no stated date
        assert g.offer("on_demand").split(" · ")[0] == g.provider, name


def test_every_datacenter_card_of_the_shipped_catalog_has_a_sourced_dated_on_demand_offer():
    """Read from the shipped package files themselves (not the tests' fixed copies): each datacenter card of
    gpus.csv has at least one prices.csv row with an on-demand price, a source and a date (stated, or the day an
    undated source was read), so a new card without a sourced price fails here; GB200 and MI325X are named as the
    cards no source prices (the snapshot has no row for them)."""
    data = resources.files("budgetgen") / "data"
    with (data / "gpus.csv").open(newline="", encoding="utf-8") as fh:
        datacenter = [row["gpu"] for row in csv.DictReader(fh) if row["class"] == "datacenter"]
    with (data / "prices.csv").open(newline="", encoding="utf-8") as fh:
        priced = {row["gpu"] for row in csv.DictReader(fh)
                  if row["on_demand_per_hour"].strip() and float(row["on_demand_per_hour"]) > 0
                  and row["source"].strip() and prices.read_as_of(row["as_of"]) is not None}
    assert {"H800", "L20", "H20", "A800 80G", "H200", "B200", "MI300X", "L4", "H100 PCIe", "A100 40G"} <= set(datacenter)
    assert [g for g in datacenter if g not in priced] == ["GB200", "MI325X"]


def test_the_chinese_market_rents_are_the_figures_their_sources_quote():
    """On-demand only, in CNY, each the figure its source row shows, from the platform that row names, dated as the
    source dates it: 共绩算力's page prices (collected 2026-08-09) for H800 25.00, L20 4.00, RTX 4090 1.98 and L40S
    4.98; the price index's rows (no date: read 2026-12-03) for H20 7.5, A800 80G 5.15, RTX 4090 1.24 and A6000 2.2.
    No unsourced market mid-point is left (the A100 80G and H100 80G have no CNY offer)."""
    shipped = [o for o in prices.read_offers(resources.files("budgetgen") / "data" / "prices.csv") if o.currency == "CNY"]
    page = {(o.gpu, o.prices["on_demand"]) for o in shipped if o.provider == "共绩算力"}
    assert page == {("H800", 25.0), ("L20", 4.0), ("RTX 4090", 1.98), ("L40S", 4.98)}
    index = {(o.gpu, o.provider, o.prices["on_demand"]) for o in shipped if "gpu-price-index" in o.source}
    assert index == {("H20", "优云智算", 7.5), ("A800 80G", "晨涧云", 5.15), ("RTX 4090", "算家云", 1.24),
                     ("RTX A6000", "恒源云", 2.2)}
    for o in shipped:
        assert [t for t, p in o.prices.items() if p is not None] == ["on_demand"] and o.purchase_price is None
        assert o.region == "cn" and o.source.startswith("on-demand: ")
        assert o.as_of == ("2026-08-09" if o.provider == "共绩算力" else "retrieved 2026-12-03")
        if o.provider == "共绩算力":
            assert f"| {o.prices['on_demand']:.2f} 元/小时'" in o.source and "gongjiyun.com" in o.source
        else:
            assert f"| {o.prices['on_demand']:g} | {o.provider} |" in o.source
    assert not {o.gpu for o in shipped} & {"A100 80G", "H100 80G"}
    assert not [o for o in shipped if "mid-point" in o.source or "assumption" in o.source]


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
          ["H100-SXM", "acme", "eu-west", "on_demand", "2.5", "USD", "2026-11-30", "email 2026-11-30"],
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
    rows = [QUOTES[0], ["H100 80G", "acme", "", "on_demand", "cheap", "USD", "2026-11-30", ""],
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


def test_a_quote_for_a_label_of_two_cards_asks_which_card(tmp_path):
    """`H100` is the SXM or the PCIe card (3,350 or 2,000 GB/s): a quote must name which; `A100` may be the 40 GB SXM4
    card (the catalog's A100 40G) or the 40 GB PCIe one (not in the catalog): named too."""
    rows = [QUOTES[0], ["H100", "acme", "", "on_demand", "2", "USD", "2026-11-30", ""],
            ["A100", "acme", "", "on_demand", "1", "USD", "2026-11-30", ""]]
    with pytest.raises(InputError) as caught:
        read_price_file(write_csv(tmp_path / "q.csv", rows), CLASSES)
    assert [(p.code, p.place) for p in caught.value.problems] == [(Code.UNKNOWN_VALUE, "q.csv!A2"),
                                                                   (Code.UNKNOWN_VALUE, "q.csv!A3")]
    assert ('q.csv!A2 gpu: "H100" does not tell which card (form factor, memory) it is: name the catalog card '
            '(H100 80G, H100 PCIe)') in str(caught.value)
    assert "(A100 40G)" in str(caught.value)


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
    # H200 provider prices (each its smallest host): nebius 3.5 (1 GPU, every region), runpod 3.99 (1x H200-SXM),
    # shadeform 3.37 (1-GPU rows per region: 3.37 3.25 3.65 median(2.45, 3.25) 3.44 3.65 3.25 3.37 -> 3.37), gcp
    # 10.845 (8 GPUs, its unflagged rows); aws stale: the middle two of four, (3.5 + 3.99) / 2 = 3.745
    assert sheet["H200"]["provider"] == "market" and sheet["H200"]["on_demand_per_hour"] == pytest.approx(3.745)
    assert sheet["H100 80G"]["currency"] == "USD" and sheet["H100 80G"]["as_of"] == "retrieved 2026-12-03"
    assert openpyxl.load_workbook(out).sheetnames == ["Settings", "Tasks", "Extras", "FX", "GPUs"]  # the rest kept
    assert "  H200: market (any) USD on_demand 3.745, spot" in result.output
    # the tests' fixed catalog has no A10, A100 40G, B200 or MI300X: their labels are skipped with the unknown ones
    assert "labels not in the catalog, skipped: A10, A100, A10G, B200, H100-NVL, L40, MI300X, RTX6000-Ada" in result.output
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


# ------------------------------------------------------------------ SkyPilot's vms.csv

SKYPILOT = DATA / "skypilot"  # vms.csv files with the published headers and made-up rows (see its README.md)
READ_ON = dt.date(2026, 11, 30)


def vms_copy(tmp_path, cloud: str, text: str | None = None):
    """A copy of the fixture (or `text`) at <tmp>/<cloud>/vms.csv, last written on READ_ON."""
    path = tmp_path / cloud / "vms.csv"
    path.parent.mkdir()
    path.write_text(text if text is not None else (SKYPILOT / cloud / "vms.csv").read_text(encoding="utf-8"),
                    encoding="utf-8")
    stamp = dt.datetime.combine(READ_ON, dt.time(12)).timestamp()
    os.utime(path, (stamp, stamp))
    return path


def test_a_skypilot_vms_csv_reads_as_per_gpu_prices_of_the_smallest_host(tmp_path):
    """aws/vms.csv by hand: L4 has 1- and 4-GPU shapes: the 1-GPU ones; in us-east-1 the smallest host is
    g6.xlarge (4 vCPUs, 16 GiB; g6.2xlarge's 8 vCPUs left), listed in two zones at 0.8 (spot 0.3 and 0.5: 0.4); in
    eu-central-1 g6.xlarge at 1.2 (no spot). Offer: median(0.8, 1.2) = 1.0, spot 0.4. p5.48xlarge (an H100 SXM host)
    40 / 8 = 5.0, spot 16 / 8 = 2.0; p4d.24xlarge (A100 SXM 40 GB) 24 / 8 = 3.0, its SpotPrice 99999999 a
    placeholder: none. The accelerator row without an InstanceType is left out, Z99 names no card."""
    found = read_price_file(vms_copy(tmp_path, "aws"), {**CLASSES, "A100 40G": "datacenter"})
    assert found.kind == "vms" and found.description == "SkyPilot catalog file (vms.csv)"
    l4 = offer(found, "L4", "aws")
    assert (l4.prices["on_demand"], l4.prices["spot"], l4.region) == (pytest.approx(1.0), pytest.approx(0.4), "any")
    assert "1-GPU g6.xlarge" in l4.source and "3 of 5 row(s)" in l4.source
    h100 = offer(found, "H100 80G", "aws")
    assert (h100.prices["on_demand"], h100.prices["spot"], h100.region) == (5.0, 2.0, "us-east-1")
    a100 = offer(found, "A100 40G", "aws")
    assert (a100.prices["on_demand"], a100.prices["spot"]) == (3.0, None)
    assert offer(found, "L4", "market").prices["on_demand"] == pytest.approx(1.0)  # aws counts for datacenter cards
    assert {o.as_of for o in found.offers} == {"retrieved 2026-11-30"}  # the file states no date: the day it was written
    assert found.skipped == ("Z99",)
    assert found.notes == ("provider aws (the folder's name), prices dated retrieved 2026-11-30 (the file states no date)",
                           "1 GPU row(s) without an InstanceType (an accelerator priced apart from its host) left out")


def test_a_vms_csv_is_read_by_its_header_names_not_their_order(tmp_path):
    """lambda/vms.csv has Price before Region and SpotPrice last: gpu_1x_h100_pcie 2.0 -> H100 PCIe; the SXM rows'
    fewest GPUs is 1, 3.0 in us-east-1 and us-west-1 -> 3.0 (the 8x host's 20 / 8 = 2.5 is not the smallest shape)."""
    found = read_price_file(vms_copy(tmp_path, "lambda"), CLASSES)
    assert offer(found, "H100 PCIe", "lambda").prices["on_demand"] == 2.0
    assert offer(found, "H100 80G", "lambda").prices["on_demand"] == 3.0


def test_import_a_vms_csv_into_a_copy_of_the_input(tmp_path):
    into = make_input(tmp_path / "in.xlsx", [TASK])
    result = run("catalog", "import", vms_copy(tmp_path, "aws"), "--into", into, "--provider", "aws",
                 "-o", tmp_path / "out.xlsx")
    assert result.exit_code == 0, result.output
    assert "a SkyPilot catalog file (vms.csv)" in result.output and "provider aws (the folder's name)" in result.output
    sheet = gpus_sheet(tmp_path / "out.xlsx")
    assert (sheet["H100 80G"]["provider"], sheet["H100 80G"]["on_demand_per_hour"]) == ("aws", 5.0)
    assert sheet["L4"]["as_of"] == "retrieved 2026-11-30"


@pytest.mark.parametrize(("row", "place", "code"), [
    ("g6.xlarge,L4,1.0,4.0,16.0,,n/a,,us-east-1,use1-az1", "vms.csv!G2", Code.NOT_A_NUMBER),
    ("g6.xlarge,L4,0,4.0,16.0,,0.8,,us-east-1,use1-az1", "vms.csv!C2", Code.NOT_POSITIVE),
    ("g6.xlarge,L4,1.0,4.0,16.0,,-0.8,,us-east-1,use1-az1", "vms.csv!G2", Code.NEGATIVE),
])
def test_a_bad_vms_csv_cell_is_an_error_at_its_file_and_cell(tmp_path, row, place, code):
    header = (SKYPILOT / "aws" / "vms.csv").read_text(encoding="utf-8").splitlines()[0]
    path = vms_copy(tmp_path, "aws", f"{header}\n{row}\n")
    with pytest.raises(InputError) as caught:
        read_price_file(path, CLASSES)
    assert [(p.code, p.place) for p in caught.value.problems] == [(code, place)]
    into = make_input(tmp_path / "in.xlsx", [TASK])
    result = CliRunner().invoke(main, ["catalog", "import", str(path), "--into", str(into)])
    assert result.exit_code == 1 and f"Error: {place} " in result.output and "Traceback" not in result.output


def test_a_vms_csv_without_its_region_column_is_one_problem(tmp_path):
    path = vms_copy(tmp_path, "aws", "InstanceType,AcceleratorName,AcceleratorCount,Price\ng6.xlarge,L4,1,0.8\n")
    with pytest.raises(InputError) as caught:
        read_price_file(path, CLASSES)
    assert [p.code for p in caught.value.problems] == [Code.MISSING_COLUMN]
