"""Tiers and kinds are records: a fifth tier and a fifth kind, one record each, build a whole plan.

The records are added in a fresh interpreter before anything derives from them (as a record added to
`budgetgen/core/records.py` would be), then the plan is built; this process reads what came out.
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys

import openpyxl
import pytest
from conftest import TEST_CATALOG, make_input, recalc_formulas, same

from budgetgen.core.records import TASK_KINDS, TIERS, excel_is
from budgetgen.core.schema import KIND, TIER

pytestmark = pytest.mark.slow

ADD_RECORDS = """
import json, pathlib, sys
from budgetgen.core import records
from budgetgen.core.records import SERVING_METHODS, TaskKind, Tier
records.TIERS += (Tier("flex", "flex_per_hour", per_card_month=False, for_online=True, reruns=False,
                       focus_category="Committed", zh="弹性预留", meaning="flexible reserved rate; blank: not offered",
                       meaning_zh="弹性预留价格；空白：不提供"),)
records.TASK_KINDS += (TaskKind("evaluation", training=False, online=False, methods=SERVING_METHODS,
                                default_method="fp16", default_tier="flex",
                                requires=("batch_requests", "tokens_per_request"),
                                ignores=("train_tokens", "epochs", "requests_per_day", "serving_hours_per_day",
                                         "min_replicas"),
                                zh="评测", requests="batch_requests", meaning="offline model evaluation"),)
from budgetgen.catalog import gpus as catalog, models, prices
catalog.CATALOG_RESOURCE = pathlib.Path(sys.argv[1])
prices.OFFERS_RESOURCE = pathlib.Path(sys.argv[1]).with_name("prices.csv")
models.MODELS_RESOURCE = pathlib.Path(sys.argv[1]).with_name("models.csv")
import budgetgen
result = budgetgen.build_budget(sys.argv[2], sys.argv[3], json_path=sys.argv[4])
print(json.dumps({"total": result.plan.period_total}))
"""
ON_DEMAND, RESERVED, MONTHLY = 10.0, 6.0, 5000.0


@pytest.fixture(scope="module")
def fifth(tmp_path_factory):
    folder = tmp_path_factory.mktemp("records")
    # A catalog of one card, priced on the new tier too (the catalog reads each tier's price column), keeps the
    # Candidates sheet, and so the recalculation below, small.
    card = {"gpu": "TestCard", "class": "datacenter", "vram_gb": 80, "bandwidth_gbs": 2000, "tflops": 300,
            "interconnect": "nvlink", "scaling": 0.9, "source": "test", "as_of": "2026-06-01"}
    offer = {"gpu": "TestCard", "provider": "test", "region": "any", "currency": "CNY", "on_demand_per_hour": ON_DEMAND,
             "flex_per_hour": RESERVED, "monthly_per_card": MONTHLY, "source": "test", "as_of": "2026-06-01"}
    for name, row in (("gpus.csv", card), ("prices.csv", offer)):
        with (folder / name).open("w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(row))
            writer.writeheader()
            writer.writerow(row)
    shutil.copy(TEST_CATALOG.with_name("models.csv"), folder / "models.csv")
    tasks = [{"task_id": "EV1", "kind": "evaluation", "model_params_b": "7B", "batch_requests": 20000,
              "tokens_per_request": 300, "gpu": "TestCard"},
             {"task_id": "EV2", "kind": "evaluation", "model_params_b": "7B", "batch_requests": 20000,
              "tokens_per_request": 300, "gpu": "TestCard", "tier": "on_demand"},
             {"task_id": "CH1", "kind": "inference", "model_params_b": "7B", "requests_per_day": 5000,
              "tokens_per_request": 300, "gpu": "TestCard", "tier": "on_demand"}]
    book = make_input(folder / "in.xlsx", tasks, settings={"build_date": "2026-06-15"})
    out, js = folder / "out.xlsx", folder / "out.json"
    done = subprocess.run([sys.executable, "-c", ADD_RECORDS, str(folder / "gpus.csv"), str(book), str(out), str(js)],
                          check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(js.read_text(encoding="utf-8")), out


def test_the_records_this_process_sees_are_the_four():
    # The additions lived in the other interpreter only. (The fifth tier was named reserved_1y until that name
    # became a commitment record; commitments are not task tiers.)
    assert [t.name for t in TIERS if t.for_tasks] == ["monthly", "on_demand", "idle", "spot"]
    assert [t.name for t in TIERS if not t.for_tasks] == ["reserved_1y", "reserved_3y"] and "evaluation" not in KIND
    assert len(TASK_KINDS) == 4 and set(TIER) == {t.name for t in TIERS}


def test_fifth_kind_defaults_to_its_tier_and_is_priced_on_it(fifth):
    results, _ = fifth
    rows = {t["task_id"]: t for t in results["tasks"]}
    ev1, ev2 = rows["EV1"], rows["EV2"]
    assert ev1["tier"] == "flex" and ev1["kind"] == "evaluation"
    # An hourly tier prices the same GPU-hours as on-demand: the costs stand as the two prices, 6 to 10.
    assert ev1["tier_costs"]["flex"] == pytest.approx(ev1["tier_costs"]["on_demand"] * RESERVED / ON_DEMAND)
    assert ev1["monthly_cost"] == pytest.approx(ev1["tier_costs"]["flex"])
    # On on_demand, the evaluation is cheaper on the new tier; offline work may use every tier.
    assert ev2["cheapest_tier"] == "flex"
    assert ev2["tier_advice"] == "cheaper on flex"


def test_fifth_tier_suits_online_services_as_its_record_says(fifth):
    results, _ = fifth
    chat = next(t for t in results["tasks"] if t["task_id"] == "CH1")
    hours = chat["tier_costs"]["on_demand"] / ON_DEMAND
    assert chat["tier_costs"]["flex"] == pytest.approx(hours * RESERVED)
    cheapest = min((v, k) for k, v in chat["tier_costs"].items() if v is not None and k in
                   ("monthly", "on_demand", "flex"))[1]
    assert chat["cheapest_tier"] == cheapest


def test_fifth_tier_has_its_price_column_totals_and_words(fifth):
    results, out = fifth
    wb = openpyxl.load_workbook(out, read_only=True, data_only=True)
    gpu_headers = [c.value for c in next(wb["GPUs"].iter_rows(max_row=1))]
    assert any(str(h).startswith("flex_per_hour") for h in gpu_headers)
    assert set(results["tier_totals"]) == {"monthly", "on_demand", "idle", "spot", "flex"}
    tiers_sheet = [r[0] for r in wb["Tiers"].iter_rows(min_row=2, values_only=True)]
    assert tiers_sheet.count("flex") == len(results["months"])


def test_workbook_with_fifth_tier_and_kind_recalculates_to_its_cached_values(fifth):
    _, out = fifth
    cached = {}
    formulas_wb = openpyxl.load_workbook(out)
    values_wb = openpyxl.load_workbook(out, data_only=True)
    for ws in formulas_wb.worksheets:
        for row in ws.iter_rows():
            for cell in row:
                if cell.data_type == "f":
                    cached[(ws.title.upper(), cell.coordinate)] = values_wb[ws.title][cell.coordinate].value
    recalculated = recalc_formulas(out)
    wrong = {k: (v, recalculated.get(k)) for k, v in cached.items() if not same(v, recalculated.get(k))}
    assert cached and wrong == {}


@pytest.mark.parametrize(("names", "expected"), [
    ((), "FALSE"), (("spot",), '{tier}="spot"'), (("a", "b"), 'OR({tier}="a",{tier}="b")')])
def test_excel_is_asks_the_records_names(names, expected):
    assert excel_is("{tier}", names) == expected
