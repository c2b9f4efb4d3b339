"""What a reader prints: the sample workbook (and a 12-month plan of it) rendered to PDF by LibreOffice with a fresh
default profile, read page by page.

Each page's footer names its sheet (`&A`); the words' heights (pdftotext -bbox) tell the printed size of
the text. A 10 pt cell prints 13 pt tall in the PDF's word boxes at 100 %; a sheet squeezed onto one page
wide prints proportionally smaller.
"""

from __future__ import annotations

import csv
import html
import os
import re
import shutil
import subprocess
import zipfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import openpyxl
import pytest
import xlsxwriter
from click.testing import CliRunner
from conftest import SAMPLE, TODAY, make_input
from lo_recalc import export_pdf, soffice_path
from test_order import catalog_price
from test_order_providers import quoted  # noqa: F401  (a plan whose GPUs two providers quote)
from test_recon_workbook import built  # noqa: F401  (a build with bills and usage, by the CLI)
from usd_plan import make_usd_plan

from budgetgen.cli import main
from budgetgen.io.reader import read_inputs
from budgetgen.plan.engine import plan_budget
from budgetgen.recon import ACTIONS
from budgetgen.workbook import write_workbook

pytestmark = pytest.mark.slow  # one LibreOffice run prints the workbooks to PDF
SKIP_REASON = "LibreOffice (soffice) and poppler-utils (pdftotext) are needed to print the workbook"
if soffice_path() is None or shutil.which("pdftotext") is None:
    if os.environ.get("CI") == "true":
        pytest.fail(SKIP_REASON + " (required when CI=true)", pytrace=False)
    pytest.skip(SKIP_REASON, allow_module_level=True)

FOOTER_BAND = 45.0      # points above the page's bottom edge where the footer line prints
READABLE = 8.0          # smallest word box of any page: 8 / 13 of 10 pt is a little over 6 pt type
COMFORTABLE = 9.0       # the pages a reader hands on (Summary, Order, TaskList): about 7 pt type or larger
_WORD = re.compile(r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">([^<]*)</word>')


@dataclass(frozen=True)
class Page:
    sheet: str
    text: str
    smallest: float    # height of the smallest word box outside the footer, in points

    @property
    def words(self) -> list[str]:
        return self.text.split()


def read_pages(pdf: Path, file_name: str) -> list[Page]:
    """Every page of `pdf`: its sheet (the footer line's middle words), its text and its smallest word."""
    xml = subprocess.run(["pdftotext", "-bbox", str(pdf), "-"], check=True, capture_output=True,
                         text=True).stdout
    pages = []
    for chunk in xml.split("<page ")[1:]:
        height = float(re.search(r'height="([\d.]+)"', chunk).group(1))
        words = sorted(((float(y0), float(y1), float(x0), html.unescape(text))
                        for x0, y0, _, y1, text in _WORD.findall(chunk)),
                       key=lambda w: (w[0], w[2]))
        page_word = [w for w in words if w[3] == "Page" and w[0] > height - FOOTER_BAND]
        line = [w for w in words if page_word and abs(w[0] - page_word[-1][0]) < 1]
        sheet = " ".join(text for _, _, x, text in line if x < page_word[-1][2] and text != file_name)
        body = [(y1 - y0, text) for y0, y1, _, text in words if (y0, y1, _, text) not in line]
        pages.append(Page(sheet, " ".join(t for _, t in body), min((h for h, _ in body), default=0.0)))
    return pages


def _strip(path: Path) -> Path:
    """A 60-column sheet squeezed onto one page wide: the shrunk strip the readability test must catch."""
    wb = xlsxwriter.Workbook(str(path))
    ws = wb.add_worksheet("Strip")
    for col in range(60):
        ws.write_string(0, col, f"column {col}")
        ws.write_number(1, col, 1000 + col)
    ws.set_column(0, 59, 14)
    ws.set_landscape()
    ws.fit_to_pages(1, 0)
    ws.set_footer("&L&F&C&A&RPage &P of &N")
    wb.close()
    return path


def _clip(path: Path) -> Path:
    """A label longer than its column with a number in the next cell: the cut text the word check must catch."""
    wb = xlsxwriter.Workbook(str(path))
    ws = wb.add_worksheet("Clip")
    ws.write_string(0, 0, "alpha beta gamma delta epsilon")
    ws.write_number(0, 1, 5)
    ws.set_column(0, 0, 12)
    ws.set_footer("&L&F&C&A&RPage &P of &N")
    wb.close()
    return path


def _summary_only(path: Path, keep: tuple[str, ...] = ("Summary",)) -> Path:
    """`path` with every sheet but Summary (or `keep`) hidden (the workbook part's `state`, nothing else rewritten:
    the charts stay), so that LibreOffice prints the Summary alone (or the sheets kept)."""
    with zipfile.ZipFile(path) as z:
        parts = {name: z.read(name) for name in z.namelist()}
    book = parts["xl/workbook.xml"].decode("utf-8")
    kept = "|".join(f'{re.escape(name)}"' for name in keep)
    parts["xl/workbook.xml"] = re.sub(rf'<sheet name="(?!{kept})', '<sheet state="hidden" name="', book).encode()
    out = path.with_name(path.stem + "-" + "-".join(k.lower() for k in keep) + ".xlsx")
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in parts.items():
            z.writestr(name, data)
    return out


def _twelve_months(tmp: Path) -> Path:
    """The sample planned over twelve months (its Settings' period_months edited as a user would)."""
    wb = openpyxl.load_workbook(SAMPLE)
    settings = wb["Settings"]
    row = next(r for r in range(1, settings.max_row + 1) if settings.cell(r, 1).value == "period_months")
    settings.cell(row, 2).value = 12
    wb.save(tmp / "q12.xlsx")
    plan = plan_budget(read_inputs(tmp / "q12.xlsx", today=TODAY))
    assert len(plan.months) == 12
    return write_workbook(plan, tmp / "q12-budget.xlsx")


@pytest.fixture(scope="module")
def printed(tmp_path_factory, built, quoted):  # noqa: F811
    tmp = tmp_path_factory.mktemp("print")
    book = write_workbook(plan_budget(read_inputs(SAMPLE, today=TODAY)), tmp / "q3.xlsx")
    strip = _strip(tmp / "strip.xlsx")
    recon, providers = built[0], quoted[1]
    year = _summary_only(_twelve_months(tmp))
    clip = _clip(tmp / "clip.xlsx")
    chinese = _summary_only(write_workbook(plan_budget(read_inputs(SAMPLE, today=TODAY)), tmp / "q3-zh.xlsx",
                                           lang="zh"))
    pdfs = export_pdf([book, strip, recon, year, clip, chinese, providers], tmp / "lo")
    return book, read_pages(pdfs[book], book.name), read_pages(pdfs[strip], strip.name), \
        read_pages(pdfs[recon], recon.name), (year, read_pages(pdfs[year], year.name)), \
        (clip, read_pages(pdfs[clip], clip.name)), (chinese, pdfs[chinese]), \
        read_pages(pdfs[providers], providers.name)


def _by_sheet(pages: list[Page]) -> dict[str, list[Page]]:
    out: dict[str, list[Page]] = {}
    for page in pages:
        out.setdefault(page.sheet, []).append(page)
    return out


def test_every_sheet_prints_and_the_short_ones_on_one_page(printed):
    book, pages, *_ = printed
    sheets = _by_sheet(pages)
    assert list(sheets) == openpyxl.load_workbook(book, read_only=True).sheetnames
    counts = {sheet: len(p) for sheet, p in sheets.items()}
    assert {s: counts[s] for s in ("TaskList", "Monthly", "Tiers", "BuyVsRent", "Extras", "Checks")} == \
        dict.fromkeys(("TaskList", "Monthly", "Tiers", "BuyVsRent", "Extras", "Checks"), 1)
    # Order: the sample's one provider (the CNY plan buys in the Chinese market), its totals and sign-off: one page
    assert counts["Order"] == 1
    # About and Assumptions list every setting (Assumptions every constant too): model v3's ten settings and four
    # constants take About to a fourth page and Assumptions to a sixth; owning hardware's settings to a seventh; model
    # v4's five (scale_free_cards, scale_efficiency, kv_read_efficiency, tp_reference_params_b, tp_size_exponent)
    # to an eighth; each unit wrapped beside its meaning (`plan currency per USD` was cut short) to a ninth
    assert counts["Summary"] <= 2 and counts["About"] <= 4 and counts["Assumptions"] <= 9


def test_no_page_is_a_shrunk_strip(printed):
    _, pages, *_ = printed
    assert all(p.text for p in pages)
    assert [(p.sheet, p.smallest) for p in pages if p.smallest < READABLE] == []
    handed_on = [p for p in pages if p.sheet in ("Summary", "Order", "TaskList")]
    assert [(p.sheet, p.smallest) for p in handed_on if p.smallest < COMFORTABLE] == []


def test_the_readability_measure_sees_a_shrunk_strip(printed):
    strip = printed[2]
    assert strip[0].sheet == "Strip"
    assert 0 < strip[0].smallest < READABLE / 2


def test_sheets_printed_across_pages_repeat_their_labels(printed):
    """Tasks, Candidates and GPUs are wider than a page: every page repeats the ids next to its values."""
    _, pages, *_ = printed
    ids = [tp.task.task_id for tp in plan_budget(read_inputs(SAMPLE, today=TODAY)).tasks]
    for sheet in ("Tasks", "Candidates"):
        across = _by_sheet(pages)[sheet]
        assert len(across) > 1
        assert [i for i, page in enumerate(across) if not any(t in page.text.split() for t in ids)] == [], sheet
    tasks = _by_sheet(pages)["Tasks"]
    assert all(all(t in page.text.split() for t in ids) for page in tasks)
    gpus = _by_sheet(pages)["GPUs"]
    assert len(gpus) > 1 and all("H100" in page.text.split() for page in gpus)


def test_summary_blocks_stay_whole_and_order_prints_its_numbers(printed):
    """A block's header and its last label print on the same page; the Order's first page (cn-market's block)
    carries the RTX 4090 monthly line worked out by hand in test_order (6 card-months at the catalog's rent), its
    last page the total and the sign-off."""
    _, pages, *_ = printed
    summary = _by_sheet(pages)["Summary"]

    def page_of(words: str) -> int:
        return next(i for i, p in enumerate(summary) if words in p.text)
    assert "All checks pass" in summary[0].text
    assert page_of("by kind") == page_of("batch")
    assert page_of("by cost center") == page_of("support")
    order = _by_sheet(pages)["Order"]
    assert f"¥{6 * catalog_price('RTX 4090', 'monthly_per_card'):,.0f}" in order[0].text and "KB01" in order[0].text
    assert "prepared by" in order[-1].text and "approved by" in order[-1].text


def test_order_prints_its_providers_whole_each_line_beside_its_gpu(printed):
    """The quoted plan (test_order_providers): zeta's block (its L40S line and subtotal) and acme's (its A100 80G and
    H100 80G lines and subtotal) fit one page with the totals and the sign-off, so no break is made; the lines print
    in full beside their GPU at a size a reader hands on."""
    *_, providers = printed
    order = _by_sheet(providers)["Order"]
    assert len(order) == 1
    words = order[0].text
    assert "zeta" in words and "L40S" in words and "Subtotal zeta" in words and "$2,190" in words
    assert "acme" in words and "A100 80G" in words and "H100 80G" in words and "Subtotal acme" in words
    assert "$12,045" in words and "$14,235" in words and "prepared by" in words
    assert "tasks served" in words and "unit price" in words
    assert [p.smallest for p in order if p.smallest < COMFORTABLE] == []


def _bare(word: str) -> str:
    return word.strip(".,:;()")


def _parts(words):
    """Words as a line break may print them: LibreOffice may break a line after a `!` (GPUs!AD5 as GPUs! and AD5),
    so both sides count the parts."""
    return [_bare(p) for w in words for p in re.split(r"(?<=!)", w)]


def cut_words(book: Path, pages: list[Page], sheet: str, last_row: int | None = None) -> list[str]:
    """The words of `sheet`'s text cells (cached values, to `last_row` if given: a sheet's print area) that its
    printed pages do not show whole: a text cut at a cell's edge or the page's prints as a fragment (pdftotext reads
    only what is drawn)."""
    ws = openpyxl.load_workbook(book, data_only=True)[sheet]
    # punctuation stripped: pdftotext may place a colon drawn at a line's end apart from its word
    printed_words = Counter(_parts(w for page in _by_sheet(pages)[sheet] for w in page.words))
    wanted = Counter(_parts(w for row in ws.iter_rows(values_only=True, max_row=last_row) for v in row
                            if isinstance(v, str) for w in v.split()))
    return sorted(w for w, n in wanted.items() if w and printed_words[w] < n)


@pytest.mark.parametrize("which", ["sample", "twelve months"])
def test_summary_prints_on_two_pages_whole_with_its_chart(printed, which):
    """The Summary of the sample (3 months) and of a 12-month plan: at most two pages, every word of every text
    cell printed whole, the tier chart's title and legend printed, the text at least COMFORTABLE."""
    book, pages = (printed[0], printed[1]) if which == "sample" else printed[4]
    summary = _by_sheet(pages)["Summary"]
    assert 1 <= len(summary) <= 2
    assert cut_words(book, pages, "Summary") == []
    text = " ".join(p.text for p in summary)
    assert "Monthly GPU cost by tier" in text and "GPU: monthly" in text and "GPU: spot" in text
    assert min(p.smallest for p in summary) >= COMFORTABLE


def test_the_cut_word_finder_sees_a_clipped_text(printed):
    """A label longer than its column, a number in the next cell: LibreOffice clips it, the finder says which
    words did not print whole."""
    path, pages = printed[5]
    cut = cut_words(path, pages, "Clip")
    assert "epsilon" in cut and "alpha" not in cut


def _cjk(text: str) -> Counter:
    return Counter(ch for ch in text if "\u2e80" <= ch <= "\u9fff" or "\uff00" <= ch <= "\uffef")


def test_the_chinese_summary_prints_every_character_in_a_cjk_font(printed):
    """The Chinese workbook's Summary: every Chinese character of its text cells is in the printed text of its
    pages (the PDF prints the Summary alone), drawn in an embedded CJK font (Noto Sans CJK from fonts-noto-cjk):
    without one LibreOffice would print empty boxes."""
    book, pdf = printed[6]
    fonts = subprocess.run(["pdffonts", str(pdf)], check=True, capture_output=True, text=True).stdout.splitlines()[2:]
    assert any("CJK" in line for line in fonts), fonts
    assert all(line.split()[-5] == "yes" for line in fonts), fonts   # every font embedded
    ws = openpyxl.load_workbook(book, data_only=True)["Summary"]
    wanted = _cjk(" ".join(v for row in ws.iter_rows(values_only=True) for v in row if isinstance(v, str)))
    assert sum(wanted.values()) > 100
    printed_text = subprocess.run(["pdftotext", str(pdf), "-"], check=True, capture_output=True, text=True).stdout
    assert wanted - _cjk(printed_text) == Counter()


# ---------------------------------------------------------------- the print pack a finance user signs

@pytest.fixture(scope="module")
def pack(tmp_path_factory):
    """The 12-month USD plan made from `init` (tests/usd_plan.py), built and printed; the pack is its Summary and
    Order pages (what printing the two selected tabs prints)."""
    tmp = tmp_path_factory.mktemp("pack")
    plan = plan_budget(read_inputs(make_usd_plan(tmp / "usd.xlsx")))
    book = write_workbook(plan, tmp / "usd-budget.xlsx")
    printable = _summary_only(book, ("Summary", "Order"))
    pdfs = export_pdf([printable], tmp / "lo")   # LibreOffice prints hidden sheets too: the pack is read by sheet
    return plan, book, [p for p in read_pages(pdfs[printable], printable.name) if p.sheet in ("Summary", "Order")]


def test_the_print_pack_is_summary_and_order_selected(pack):
    _, book, _ = pack
    wb = openpyxl.load_workbook(book)
    assert [ws.title for ws in wb.worksheets if ws.sheet_view.tabSelected] == ["Summary", "Order"]
    assert wb.active.title == "Summary"


def test_the_print_pack_is_at_most_three_pages_with_nothing_cut(pack):
    """12 months, four providers: Summary on at most two pages, the Order on one (never more than a page per
    provider), every word of Summary and of the Order's printed rows whole, at a size a reader hands on."""
    plan, book, pages = pack
    sheets = _by_sheet(pages)
    assert set(sheets) == {"Summary", "Order"} and len(plan.months) == 12
    providers = len({plan.inputs.gpu(t.row["gpu"]).provider_of(t.row["tier"]) for t in plan.tasks})
    assert len(pages) <= 3 and len(sheets["Order"]) <= providers
    ws = openpyxl.load_workbook(book)["Order"]
    printed_rows = int(str(ws.print_area).rsplit("$", 1)[-1]) if ws.print_area else None
    assert printed_rows is not None and printed_rows < ws.max_row   # the working rows below do not print
    assert cut_words(book, pages, "Order", printed_rows) == []
    assert cut_words(book, pages, "Summary") == []
    assert [(p.sheet, p.smallest) for p in pages if p.smallest < COMFORTABLE] == []
    order = " ".join(p.text for p in sheets["Order"])
    assert "prepared by" in order and "Plan total" in order and f"${plan.period_total:,.0f}" in order


# ---------------------------------------------------------------- a Recon tab prints its month on one page

BUSY_RESOURCES = 70   # GPU resources billed in the month: more than recon_top_resources (50) lists on the tab


def busy_month(folder: Path) -> Path:
    """A busy July: two tasks on 70 GPU instances (some idle, some out of memory, some data-starved, two untagged,
    one billed on demand against a monthly plan), storage and a credit; built by the CLI with bill and usage."""
    tasks = [{"task_id": "CHAT", "kind": "inference", "model_params_b": 7, "method": "int4", "requests_per_day": 10000,
              "tokens_per_request": 500, "tokens_per_sec": 100, "serving_hours_per_day": 24, "gpu": "RTX 4090",
              "tier": "monthly"},
             {"task_id": "TUNE", "kind": "finetune", "model_params_b": 7, "method": "lora", "train_tokens": "180M",
              "epochs": 1.5, "gpu": "A100 80G", "tier": "on_demand"}]
    header = ["ChargePeriodStart", "BilledCost", "ResourceId", "ServiceName", "ServiceCategory", "ChargeCategory",
              "ConsumedQuantity", "ConsumedUnit", "BillingCurrency", "Tags", "ChargeDescription", "PricingCategory"]
    lines, usage = [], [["resource_id", "month", "gpu_util_pct", "mem_used_gb", "mem_total_gb", "oom_events"]]
    for i in range(BUSY_RESOURCES):
        task = "" if i < 2 else ("CHAT" if i % 2 else "TUNE")
        tags = f'{{"task_id": "{task}"}}' if task else ""
        pricing = "Standard" if task != "CHAT" or i == 3 else "Committed"
        lines.append(["2026-07-01", 100.0 + i, f"i-{i:03d}", "Amazon EC2", "Compute", "Usage", 720, "Hours", "USD",
                      tags, "g5.xlarge on-demand", pricing])
        util, mem, oom = (5, 4, 0) if i % 7 == 0 else (8, 22, 0) if i % 11 == 0 else (60, 20, 4 if i % 13 == 0 else 0)
        usage.append([f"i-{i:03d}", "2026-07", util, mem, 24, oom])
    lines += [["2026-07-31", 80.0, "vol-1", "Amazon S3", "Storage", "Usage", 500, "GB-Mo", "USD", "", "S3 standard",
               "Standard"],
              ["2026-07-31", -20.0, "", "Support", "Other", "Credit", "", "", "USD", "", "promotional credit", ""]]
    book = make_input(folder / "busy.xlsx", tasks, settings={"currency": "USD", "catalog_fx": 0.14,
                                                             "period_months": 2}, extra_sheets={"Usage": usage})
    bill = folder / "busy-bill.csv"
    with bill.open("w", newline="") as fh:
        csv.writer(fh).writerows([header, *lines])
    out = folder / "busy-budget.xlsx"
    result = CliRunner().invoke(main, ["build", str(book), "-o", str(out), "--bills", str(bill)])
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def busy(tmp_path_factory):
    """The busy month built and printed: the workbook and its pages."""
    tmp = tmp_path_factory.mktemp("busy")
    book = busy_month(tmp)
    return book, read_pages(export_pdf([book], tmp / "lo")[book], book.name)


def _print_rows(book: Path, sheet: str) -> int:
    """The last row (1-based) of `sheet`'s print area."""
    area = openpyxl.load_workbook(book)[sheet].print_area
    return int(str(area).rsplit("$", 1)[-1])


@pytest.mark.parametrize("which", ["few resources", "busy month"])
def test_a_recon_tab_prints_its_month_on_one_page_with_the_actions_whole(printed, built, busy, which):  # noqa: F811
    """Each Recon tab prints one page: the month's like for like, usage and variance, the actions per flag and the
    bill's coverage; every action sentence printed whole (pdftotext), every word of the printed rows whole; the
    per-resource rows below it do not print (no resource id on the page), nor does the Resources sheet's detail
    print with it. The busy month (70 GPU resources, every flag raised) printed 20 pages before."""
    book, pages = (built[0], printed[3]) if which == "few resources" else busy
    sheets = _by_sheet(pages)
    tabs = [s for s in sheets if s.startswith("Recon ")]
    assert tabs == (["Recon 2026-07", "Recon 2026-08"] if which == "few resources" else ["Recon 2026-07"])
    for tab in tabs:
        (page,) = sheets[tab]
        text = " ".join(page.words)
        for sentence in ACTIONS.values():
            assert f"{sentence}" in text, (tab, sentence)
        assert "like for like" in text and "actions next month" in text and "bill coverage" in text
        assert cut_words(book, pages, tab, _print_rows(book, tab)) == [], tab
        assert not re.search(r"\bi-[a-z0-9]+\b", text), tab   # no resource row printed
        assert page.smallest >= READABLE
    if which == "busy month":
        july = " ".join(sheets["Recon 2026-07"][0].words)
        # by hand: under 20 % busy are the instances 0, 7, ..., 63 (10, at 5 %) and 11, 22, ..., 66 (6, at 8 %); the
        # 8 % ones hold 22 of 24 GB: data-starved; 13, 26, 39, 52 and 65 report 4 OOM events; i-003 (CHAT, planned
        # monthly: Committed) is billed Standard at 103 USD; the untagged GPUs are i-000 and i-001, 100 + 101 = 201
        # USD of bill, all of it to attribute or stop
        assert "low_utilization 16" in july and "data_starved 6" in july and "oom 5 $695" in july
        assert "off_plan_pricing 1 $103" in july and "untagged_gpu 2 $201 $201" in july
        assert "Resources 2026-07" in july and f"{BUSY_RESOURCES - 50} more resources" in july
