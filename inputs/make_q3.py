"""Writes inputs/q3.xlsx and its Chinese twin inputs/q3-zh.xlsx, the sample inventory: `python inputs/make_q3.py`.

The knowledge-base team of the source articles (two RTX 4090 for the chat service, QLoRA fine-tunes of the
same card, A100 80G experiments on demand, storage and egress) plus an 8B full fine-tune, a 13B pretraining run
of the team's own architecture on spot, a 70B fp8 service, a nightly batch job and a mixture-of-experts coding
assistant. Tasks name catalog models (`budgetgen models`); services give their prompt lengths. The tasks that
name no tier leave it to the engine, which prices each card on every tier it has an offer for and takes the
cheapest. The built-in catalog's Chinese-market offers are on-demand rents only, so the plan takes the cards the
Chinese market does not price (A100 80G, H100 80G, ...) from the USD offers, converted at the FX sheet's rate
(`offer_currency: any`).
"""

from pathlib import Path

import openpyxl
from openpyxl.styles import Font, PatternFill

from budgetgen.core.i18n import name, sheet_name, word
from budgetgen.core.schema import SETTINGS_BY_KEY, TASK_COLUMNS

SETTINGS = [
    ("currency", "CNY", "plan currency"),
    ("period_start", "2026-07", "Q3"),
    ("period_months", 3, ""),
    ("hidden_cost_buffer", "25%", "storage, egress, images, platform fees, unrefundable balance"),
    ("gpu_choice", "cheapest", ""),
    ("offer_currency", "any", "CNY offers first; a card the Chinese market does not price takes its USD offers"),
]
TASK_HEADERS = ["task_id", "task", "kind", "model", "model_params_b", "method", "train_tokens", "epochs",
                "runs_per_month", "requests_per_day", "batch_requests", "prompt_tokens", "tokens_per_request",
                "serving_hours_per_day", "tokens_per_sec", "gpu", "cards", "tier", "start_month", "end_month",
                "cost_center", "owner"]
TASKS = [
    ["KB01", "Knowledge-base chat service (7B int4, measured)", "inference", "Qwen2.5-7B", None, "int4", None, None,
     None, 10000, None, 1500, 500, 8, 100, "RTX 4090", None, None, None, None, "knowledge-base", "Li Wei"],
    ["KB02", "Knowledge-base QLoRA refresh", "finetune", "Qwen2.5-7B", None, "qlora", "5M", 3, 2, None, None, None,
     None, None, None, "RTX 4090", None, None, None, None, "knowledge-base", "Li Wei"],
    ["KB03", "Retrieval experiments (LoRA)", "finetune", "Qwen2.5-7B", None, "lora", "180M", 1, 1, None, None, None,
     None, None, None, "A100 80G", None, "on_demand", None, None, "knowledge-base", "Chen Jing"],
    ["ML01", "Support model full fine-tune", "finetune", "Llama-3.1-8B", None, "full", "200M", 2, 1, None, None, None,
     None, None, None, None, None, "on_demand", "2026-08", "2026-09", "ml-platform", "Sara Novak"],
    ["ML02", "13B domain pretraining (own architecture)", "pretrain", None, "13B", "full", "20B", 1, 0.5, None, None,
     None, None, None, None, None, None, "spot", "2026-08", None, "research", "Sara Novak"],
    ["ML03", "70B assistant API (fp8)", "inference", "Llama-3.3-70B", None, "fp8", None, None, None, 50000, None,
     2000, 400, 24, None, None, None, None, None, None, "product", "Omar Haddad"],
    ["ML04", "Nightly ticket summaries (14B int8)", "batch", "Qwen2.5-14B", None, "int8", None, None, 30, None,
     200000, 800, 300, None, None, None, None, None, None, None, "support", "Omar Haddad"],
    ["ML05", "Coding assistant (MoE, fp8)", "inference", "Qwen3-30B-A3B", None, "fp8", None, None, None, 20000, None,
     3000, 600, 10, None, "L40S", None, None, None, None, "product", "Omar Haddad"],
]
EXTRAS = [
    ("item", "category", "monthly_cost", "start_month", "end_month"),
    ("Object storage for checkpoints and data", "storage", 400, None, None),
    ("Egress to users", "egress", 600, None, None),
    ("Container registry and images", "images", 150, "2026-08", None),
]
# The rate the plan converts the catalog's USD offers with, typed so that the sample's numbers do not move with
# the bundled reference rates: the ECB's of 2026-10-30 (1 USD = 6.6529 CNY).
FX = [
    ("currency", "rate", "as_of", "source"),
    ("USD", 6.6529, "2026-10-30", "ECB reference rate"),
]


CHOICE_TASK_COLUMNS = {c.name for c in TASK_COLUMNS if c.type == "choice"}
OWNER_ZH = "负责人"  # an undeclared column: echoed at the right of the Tasks sheet


def _in(lang: str) -> tuple[list, list, list, list]:
    """The one data set with its sheet's headers, setting keys and enumeration values in `lang`."""
    settings = [(name(k, lang), word(v, lang) if SETTINGS_BY_KEY[k].choices else v, note) for k, v, note in SETTINGS]
    headers = [OWNER_ZH if h == "owner" and lang == "zh" else name(h, lang) for h in TASK_HEADERS]
    tasks = [[word(v, lang) if h in CHOICE_TASK_COLUMNS and v else v for h, v in zip(TASK_HEADERS, row)]
             for row in TASKS]
    extras = [tuple(name(h, lang) for h in EXTRAS[0])] + [(item, word(cat, lang), *rest)
                                                            for item, cat, *rest in EXTRAS[1:]]
    return settings, headers, tasks, extras


def write(path: Path, lang: str = "en") -> None:
    wb = openpyxl.Workbook()
    bold, fill = Font(bold=True, color="FFFFFF"), PatternFill("solid", fgColor="1F3864")

    def sheet(ws, rows):
        for row in rows:
            ws.append(list(row))
        for cell in ws[1]:
            cell.font, cell.fill = bold, fill
        ws.freeze_panes = "B2"

    settings, headers, tasks, extras = _in(lang)
    ws = wb.active
    ws.title = sheet_name("Settings", lang)
    sheet(ws, [tuple(name(h, lang) for h in ("setting", "value", "note")), *settings])
    sheet(wb.create_sheet(sheet_name("Tasks", lang)), [headers, *tasks])
    sheet(wb.create_sheet(sheet_name("Extras", lang)), extras)
    sheet(wb.create_sheet(sheet_name("FX", lang)), [tuple(name(h, lang) for h in FX[0]), *FX[1:]])
    wb.save(path)


if __name__ == "__main__":
    write(Path(__file__).with_name("q3.xlsx"))
    write(Path(__file__).with_name("q3-zh.xlsx"), "zh")
