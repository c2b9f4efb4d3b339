"""A realistic 12-month USD plan made the way a new finance user makes one: `budgetgen init --currency USD`, the
example rows replaced by a 2027 inventory (a 70B chatbot 24/7 growing 4% a month, an 8B RAG service with latency
targets, LoRA and QLoRA fine-tunes, a 7B pretraining run with a deadline, a nightly batch job), two extras and a
whole-plan budget. Every tier and GPU left blank: the engine chooses them.

`python tests/usd_plan.py OUT.xlsx` writes it (for rendering by hand); the tests call `make_usd_plan`.
"""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

import openpyxl

from budgetgen.io.template import write_template

BUILD_DATE = "2026-12-04"
SETTINGS = {"build_date": BUILD_DATE, "period_start": "2027-01", "period_months": 12}
TASKS = [
    {"task_id": "CHAT70", "task": "Customer chatbot, 70B, around the clock", "kind": "inference",
     "model": "Llama-3.1-70B", "method": "fp16", "requests_per_day": 120_000, "prompt_tokens": 1_500,
     "tokens_per_request": 400, "growth_per_month": 0.04, "cost_center": "support"},
    {"task_id": "RAG8", "task": "Internal RAG search, 8B, office hours", "kind": "inference",
     "model": "Llama-3.1-8B", "method": "fp16", "requests_per_day": 40_000, "prompt_tokens": 3_000,
     "tokens_per_request": 300, "serving_hours_per_day": 12, "ttft_ms": 1_500, "tpot_ms": 60,
     "cost_center": "knowledge-base"},
    {"task_id": "LORA8", "task": "Weekly LoRA refresh of the 8B", "kind": "finetune", "model": "Llama-3.1-8B",
     "method": "lora", "train_tokens": "50M", "epochs": 2, "runs_per_month": 4, "cost_center": "knowledge-base"},
    {"task_id": "QLORA70", "task": "QLoRA of the 70B on support tickets", "kind": "finetune",
     "model": "Llama-3.1-70B", "method": "qlora", "train_tokens": "20M", "runs_per_month": 1,
     "start_month": "2027-03", "end_month": "2027-08", "cost_center": "support"},
    {"task_id": "PRE7", "task": "7B domain pretraining, due in 30 days", "kind": "pretrain", "model_params_b": 7,
     "method": "full", "train_tokens": "140B", "runs_per_month": 0.5, "deadline_days": 30,
     "start_month": "2027-04", "end_month": "2027-05", "cost_center": "research"},
    {"task_id": "BATCH8", "task": "Nightly summaries of the day's tickets", "kind": "batch",
     "model": "Llama-3.1-8B", "method": "fp16", "batch_requests": 200_000, "prompt_tokens": 1_000,
     "tokens_per_request": 250, "runs_per_month": 30, "cost_center": "support"},
]
EXTRAS = [{"item": "Object storage", "category": "storage", "monthly_cost": 2_000},
          {"item": "Egress", "category": "egress", "monthly_cost": 1_500}]


def _fill(ws, rows: list[dict]) -> None:
    """Replace a sheet's rows below its header with `rows` by the header's column names."""
    headers = [c.value for c in ws[1]]
    ws.delete_rows(2, ws.max_row)
    for row in rows:
        unknown = set(row) - set(headers)
        assert not unknown, f"{ws.title} has no column {unknown}"
        ws.append([row.get(h) for h in headers])


def make_usd_plan(path: Path, tasks: list[dict] | None = None, settings: dict | None = None) -> Path:
    """`init --currency USD` at BUILD_DATE, then the inventory, the settings and the extras typed in."""
    write_template(path, currency="USD", today=dt.date.fromisoformat(BUILD_DATE))
    wb = openpyxl.load_workbook(path)
    _fill(wb["Tasks"], TASKS if tasks is None else tasks)
    _fill(wb["Extras"], EXTRAS)
    values = {**SETTINGS, **(settings or {})}
    for row in wb["Settings"].iter_rows(min_row=2):
        if row[0].value in values:
            row[1].value = values.pop(row[0].value)
    for key, value in values.items():
        wb["Settings"].append([key, value])
    wb.save(path)
    return path


if __name__ == "__main__":
    print(make_usd_plan(Path(sys.argv[1])))
