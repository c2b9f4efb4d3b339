"""Warnings a person reads (issue 30): one line per kind of warning with its count and items, money in the plan's
currency, the bills' and the services' warnings before the age of catalog prices; the command line, the JSON and
Summary's warning list show the same lines. The expected sentences are written out by hand."""

from __future__ import annotations

import csv
import json

import openpyxl
from click.testing import CliRunner
from conftest import make_input

from budgetgen.cli import main
from budgetgen.core.i18n import Message
from budgetgen.core.warnings import ITEMS_SHOWN, group_warnings, kind_of
from budgetgen.io.reader import read_inputs

WHEN = Message("catalog_age_build_date", build_date="2027-06-01")
OLD = [Message("catalog_prices_old", gpu=f"G{i}", as_of="2026-07", months=6, when=WHEN, place=Message("catalog_builtin"))
       for i in range(1, 15)]
UNKNOWN = [Message("unknown_bill_task", file="bill.csv", value=v) for v in ("X1", "X2", "X3")]
SAVINGS = [Message("tier_saving", tid="T1", cheapest="spot", tier="monthly", saving=100.0),
           Message("tier_saving", tid="T2", cheapest="on_demand", tier="monthly", saving=250.4)]
SPOT = Message("inference_on_spot", tid="T9")


def test_one_line_per_kind_with_its_count_and_items_the_bills_first():
    lines = group_warnings([*OLD, *SAVINGS, SPOT, *UNKNOWN], "USD")
    gpus = ", ".join(f"G{i} (2026-07, built-in catalog)" for i in range(1, 15))
    assert list(lines) == [
        ("bill.csv: 3 task_ids match no task of the plan (ignoring case): X1, X2, X3; their lines count as billed to "
        "unplanned tasks"),
        "T9: online inference on spot: an interruption takes the service down",
        # 100 + 250.4 = 350.4 a month in all, whole units as the CLI shows money
        ("A cheaper tier for 2 tasks, 350 USD a month in all: T1 (spot instead of monthly, 100 USD a month), "
        "T2 (on_demand instead of monthly, 250 USD a month)"),
        (f"Prices of 14 GPUs are more than 6 months older than the build date 2027-06-01: {gpus}; check them with "
        "your provider and enter current ones on the GPUs sheet"),
    ]
    assert [kind_of(w) for w in lines] == ["unknown_bill_task", "inference_on_spot", "tier_saving",
                                           "catalog_prices_old"]
    assert lines[3].render("zh").startswith("14 个 GPU 的价格早于编制日期 2027-06-01 超过 6 个月：G1（2026-07，内置目录）、G2")
    assert lines[2].render("zh").startswith("2 个任务有更便宜的计费方式，合计每月 350 USD：T1（竞价代替包月，每月 100 USD）")


def test_a_kind_met_once_keeps_its_sentence_with_money_in_the_plan_currency():
    assert group_warnings([SAVINGS[0]], "EUR") == ("T1: spot is cheaper than monthly by 100 EUR a month",)
    over = Message("over_budget", center="search", months=2, budget=5800.0, overrun=123.4)
    assert group_warnings([over], "CNY") == (("search: 2 plan month(s) over the monthly budget of 5,800 CNY (Budgets), "
                                             "123 CNY over in all"),)


def test_grouping_again_with_later_warnings_merges_them_into_their_kind():
    once = group_warnings([*OLD, *UNKNOWN], "USD")
    again = group_warnings([*once, Message("unknown_bill_task", file="bill.csv", value="X4")], "USD")
    assert len(again) == 2 and again[0].startswith("bill.csv: 4 task_ids match no task of the plan (ignoring case): "
                                                   "X1, X2, X3, X4;")
    assert again[1] == once[1]
    assert group_warnings(again, "USD") == again


def test_a_long_kind_names_its_first_items_and_counts_the_rest():
    many = [Message("no_failover", tid=f"S{i:02d}") for i in range(1, ITEMS_SHOWN + 6)]
    (line,) = group_warnings(many, "USD")
    shown = ", ".join(f"S{i:02d}" for i in range(1, ITEMS_SHOWN + 1))
    assert line == (f"One replica, no failover, for {ITEMS_SHOWN + 5} services: {shown}, ... and 5 more; a card fault "
                    "stops the service (min_replicas 2 keeps a spare)")


# A plan whose catalog prices are all old by its last month, and a bill naming two tasks the plan does not have.
TASKS = [{"task_id": "T1", "kind": "finetune", "model_params_b": 7, "method": "lora", "train_tokens": "50M",
          "tier": "on_demand"}]   # a typed tier: the engine keeps it, and advises the cheaper one
BILL_HEADER = ["ChargePeriodStart", "BilledCost", "BillingCurrency", "ResourceId", "ChargeDescription", "ServiceName",
               "ServiceCategory", "ChargeCategory", "ConsumedQuantity", "ConsumedUnit", "Tags"]
BILL = [["2028-01-05", 100.0, "CNY", f"i-{t}", "gpu instance hour", "GPU Cloud", "Compute", "Usage", 10, "Hours",
         json.dumps({"task_id": t})] for t in ("NOPE1", "NOPE2")]


def test_the_command_line_the_json_and_summary_show_the_same_grouped_lines(tmp_path):
    book = make_input(tmp_path / "in.xlsx", TASKS, settings={"period_start": "2028-01", "build_date": "2027-12-01"})
    bill = tmp_path / "bill.csv"
    with bill.open("w", newline="") as fh:
        csv.writer(fh).writerows([BILL_HEADER, *BILL])
    out, js = tmp_path / "out.xlsx", tmp_path / "out.json"
    result = CliRunner().invoke(main, ["build", str(book), "-o", str(out), "--bills", str(bill), "--json", str(js),
                                       "-q"])
    assert result.exit_code == 0, result.output
    printed = [line.removeprefix("Warning: ") for line in result.output.splitlines() if line.startswith("Warning: ")]
    in_json = json.loads(js.read_text())["warnings"]
    ws = openpyxl.load_workbook(out)["Summary"]
    label = next(r for r in range(1, ws.max_row + 1) if ws.cell(r, 1).value == "Warnings")
    on_summary = []
    for r in range(label + 3, ws.max_row + 1):   # the lines below the two written as formulas, to the first blank
        if not ws.cell(r, 1).value:
            break
        on_summary.append(ws.cell(r, 1).value)
    assert printed == in_json
    # Summary writes the tier advice as a live formula line of its own (label + 1), the other lines as text
    advice = [line for line in printed if " is cheaper than " in line]
    assert len(advice) == 1 and on_summary == [line for line in printed if line not in advice]
    # every GPU the catalog check finds old, in one line; the bill's unknown tasks in one line, before it
    old = [w.params["gpu"] for w in read_inputs(book).warnings if getattr(w, "key", "") == "catalog_prices_old"]
    assert len(old) >= 5
    prices = [i for i, line in enumerate(printed) if line.startswith(f"Prices of {len(old)} GPUs are more than")]
    bills = [i for i, line in enumerate(printed) if line.startswith("bill.csv: 2 task_ids match no task")]
    assert len(prices) == 1 and len(bills) == 1 and bills[0] < prices[0]
    assert all(f"{gpu} (" in printed[prices[0]] for gpu in old)
    assert not any("prices as_of" in line for line in printed)   # no single price-age sentence left
