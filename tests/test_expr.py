"""budgetgen.model.expr: an Excel formula template compiled into its Python view, with Excel's semantics. Expected values are
worked by hand from Excel's rules (precedence, blanks, array formulas), not taken from the code."""

from __future__ import annotations

import ast
import math
from pathlib import Path
from types import SimpleNamespace

import pytest

from budgetgen.model import columns, expr, rules

NAMES = expr.Names(settings={"PeakFactor": "peak_factor"}, constants={"HoursPerDay": 24},
                   derived={"Twice": lambda s: 2 * s.peak_factor})
S = SimpleNamespace(peak_factor=1.5)


def value(text: str, **values):
    return expr.compile_excel(text, NAMES)(S, **values)


@pytest.mark.parametrize(("text", "expected"), [
    ("1+2*3^2", 19),          # ^ before *, * before +
    ("-2^2", 4),              # Excel: unary minus binds tighter than ^
    ("2^3^2", 64),            # ^ is left-associative in Excel: (2^3)^2
    ("10/4/5", 0.5),          # left to right
    ("(1+2)*3", 9),
    ('"a"&"b"&1', "ab1"),
    ("3>2", True), ("2<>2", False), ("2>=2", True),
])
def test_precedence_and_operators_follow_excel(text, expected):
    assert value(text) == expected


def test_names_read_settings_constants_and_derived_values():
    assert value("PeakFactor*HoursPerDay") == 36.0
    assert value("Twice+{x}", x=1) == 4.0


def test_a_blank_equals_the_empty_text_is_no_number_and_an_empty_result_is_a_blank():
    assert value('{x}=""', x=None) is True and value('{x}<>""', x=None) is False
    assert value('IF(ISNUMBER({x}),{x}*2,"")', x=None) is None
    assert value('IF(ISNUMBER({x}),{x}*2,"")', x=3) == 6


def test_if_evaluates_only_the_branch_it_takes():
    assert value("IF({d}>0,{r}/{d},0)", d=0, r=5) == 0   # no division by zero, as in Excel
    assert value("IFERROR({r}/{d},7)", d=0, r=5) == 7


def test_array_formulas_work_element_by_element_and_counts_stay_whole():
    gpus, tiers, amounts = ["A", "B", "A"], ["x", "x", "y"], [1.5, 2.0, 4.0]
    # (A,x) selects the first row only
    assert value("SUMPRODUCT(({g}={gpu})*({t}={tier})*{a})", g=gpus, gpu="A", t=tiers, tier="x", a=amounts) == 1.5
    count = value("SUMPRODUCT(({c}>{cap})*1)", c=[1, 5, 9], cap=4)
    assert count == 2 and isinstance(count, int)
    assert value("SUMPRODUCT(ISNUMBER(MATCH({g},{cat},0))*1)", g=["A", "Z", "B"], cat=["A", "B"]) == 2
    assert value("SUM({x})", x=[1, None, 2.5]) == 3.5 and value("MAX({x})", x=[3, 7, 1]) == 7
    assert value("MIN({a},{b}*2)", a=5, b=2) == 4   # several arguments: values, each one scalar
    assert value("COUNT({p})", p=[1.0, None, "no", 2]) == 2
    assert value("AND({c})", c=[True, True]) is True and value("AND({c})", c=[True, False]) is False


def test_ceiling_keeps_a_quotient_that_is_whole_in_decimal():
    assert value("CEILING({x},1)", x=1.7) == 2
    assert value("CEILING({x}/{y},1)", x=0.3, y=0.1) == 3   # 0.3/0.1 is 2.9999999999999996 in binary: not 4


def test_pmt_is_excels_level_payment():
    # 1,000 over 12 months at 1% a month: 1000 x 0.01 / (1 - 1.01^-12) = 88.85 (paid: negative)
    assert value("PMT(0.01,12,-1000)") == pytest.approx(1000 * 0.01 / (1 - 1.01 ** -12))


@pytest.mark.parametrize("text", ["Unknown+1", "NOPE(1)", "1+", "(1", "1 2"])
def test_what_has_no_python_view_is_refused_when_the_rule_is_defined(text):
    with pytest.raises(ValueError):
        expr.compile_excel(text, NAMES)


def test_every_rule_has_one_expression_and_the_few_with_their_own_python_say_why():
    """Every rule's Python view is compiled from its formula, except the ones whose Python is not the formula read
    literally (the rules module's docstring names the reasons): a text the sheet formats, and a lookup the engine
    already holds the answer of."""
    own = {r.key for r in rules.RULES + (rules.GPU_SAVING, rules.BEST_SAVING, rules.BEST_GPU, rules.TASK_BEST,
                                         rules.CHEAPER_TASKS) if not r.compiled}
    assert own == {"whole", "task_best"}


def test_a_compiled_rule_computes_what_its_formula_says():
    """The buffer of a month, worked by hand: (1,000 GPU - 200 commitments) x 25% = 200."""
    assert rules.BUFFER(None, gpu=1000, commitments=-200, rate=0.25) == 200
    # the commitment proposal over a 12-month term at a 50% break-even: 800 card-hours a month of demand for a
    # 730-hour month keep one card busy all month (and a second 70 hours): one card, since 70 x 12 < 0.5 x 12 x 730
    s = SimpleNamespace(hours_per_month=730, period_months=12)
    hours = [800.0] * 12
    assert rules.COMMIT_CANDIDATE(s, hours=hours, months=list(range(1, 13)), term=12, break_even=0.5,
                                  demand=800.0) == 1
    assert math.isclose(rules.RESERVED_HOURS(s, cards=2, term=36), 2 * 730 * 12)


# --------------------------------------------------------------------------------------------- a row's formula

ROW_NAMES = expr.Names(settings={"SetupHours": "setup_hours"}, constants={"HoursPerDay": 24},
                       derived={"PlanMonths": lambda s: s.plan_months, "TierList": lambda s: ("a", "b")})
ROW_S = SimpleNamespace(setup_hours=0.5, plan_months=("2027-01", "2027-02", "2027-03"))
GPU = SimpleNamespace(scaling=0.9, vram_gb=80, prices={"a": 2.0, "b": None})


def row_value(text: str, **row):
    return expr.compile_row(text, ROW_NAMES, {"GpuA": "g.prices.get('a')", "GpuB": "g.prices.get('b')"})(
        row, ROW_S, GPU)


def test_a_row_formula_reads_the_rows_cells_its_gpu_and_its_models_figures():
    # 1 + (4 - 1) x 0.9 = 3.7 (the speedup of four cards)
    assert row_value("1+({cards}-1)*{gpu.scaling}", cards=4) == pytest.approx(3.7)
    assert row_value('IF({model.hidden}<>"",{model.hidden}*2,SetupHours)', **{"model.hidden": 4096}) == 8192
    assert row_value('IF({model.hidden}<>"",{model.hidden}*2,SetupHours)', **{"model.hidden": None}) == 0.5


def test_a_row_formula_looks_up_its_gpus_price_and_a_named_list():
    # 10 hours at 2.0 = 20; the second tier has no price: blank
    assert row_value('IF(ISNUMBER(INDEX(GpuA,{gpu.row})),{h}*INDEX(GpuA,{gpu.row}),"")', h=10) == 20.0
    assert row_value('IF(ISNUMBER(INDEX(GpuB,{gpu.row})),{h}*INDEX(GpuB,{gpu.row}),"")', h=10) is None
    assert row_value("MATCH({m},PlanMonths,0)", m="2027-02") == 2
    assert row_value("CHOOSE(MATCH({t},TierList,0),{x},{y})", t="b", x=1, y=7) == 7
    with pytest.raises(ValueError):   # the GPU's row is read only through a GPUs column
        row_value("{gpu.row}+1")


def test_a_row_formulas_blanks_comparisons_and_max_follow_excel():
    assert row_value('IF({c}="",{n},{c})', c=None, n=3) == 3 and row_value('IF({c}="",{n},{c})', c=2, n=3) == 2
    assert row_value("IF({x}>0,1,2)", x=None) == 2          # a blank counts 0
    assert row_value("IF(OR({a}=1,{b}=1),1,0)", a=0, b=1) == 1
    # MAX skips a blank and keeps a count whole: MAX(3, CEILING(1,000/730, 1)) = MAX(3, 2) = 3
    cards = row_value("MAX({held},CEILING({h}/730,1))", held=3, h=1000)
    assert cards == 3 and isinstance(cards, int)
    assert row_value("MIN({a},{b})", a=None, b=5) == 5


def test_every_calc_has_one_expression_and_the_few_with_their_own_python_say_why():
    """A calculated column's Python view is compiled from its formula, except where the Python is not the formula
    read literally. Adding a column with a hand-written py fails here until it is named with its reason."""
    own = {
        "period_cost": "the formula sums the Monthly sheet's months; the Python is the flat estimate a candidate is "
                       "ranked by, which the engine replaces with the chosen GPU's months",
    }
    assert {c.key for c in columns.CALCS if not c.compiled} == set(own)


def test_a_compiled_calc_computes_what_its_formula_says():
    """Worked by hand: a batch task of 10 replica-hours on 2 replicas of 4 cards with 0.5 h setup holds
    (10 + 0.5 x 2) x 4 = 44 GPU-hours a run; its wall clock is 10 / 2 + 0.5 = 5.5 h."""
    calc = {c.key: c for c in columns.CALCS}
    s = SimpleNamespace(setup_hours=0.5, run_overhead=0.1, debug_overhead=0.2)
    row = {"training": 0, "kind": "batch", "replica_hours": 10.0, "replicas": 2, "cards_per_run": 4}
    assert calc["gpu_hours_per_run"].py(row, s, None) == 44.0
    assert calc["wall_hours_per_run"].py(row, s, None) == 5.5
    assert calc["gpu_hours_per_run"].compiled and calc["wall_hours_per_run"].compiled


# --------------------------------------------------------------------------------------------- a Recon rule's formula

RECON_NAMES = expr.Names(settings={"Limit": "limit"}, constants={"PercentScale": 100, "WordKey": (), "WordShown": ()},
                         derived={"ActionX": lambda s: "act now"})
RECON_S = SimpleNamespace(limit=0.2)


def recon_value(text: str, text_result: bool = False, floats: bool = False, **values):
    return expr.compile_values(text, RECON_NAMES, text_result=text_result, floats=floats)(values, RECON_S)


def test_a_recon_formula_reads_nan_as_unknown_usage():
    """Unknown usage is a blank cell: None or NaN. 10 % busy is below a 20 % limit; a blank is no number."""
    rule = "AND(ISNUMBER({util}),{util}/PercentScale<Limit)"
    assert recon_value(rule, util=10.0) is True and recon_value(rule, util=30.0) is False
    assert recon_value(rule, util=None) is False and recon_value(rule, util=math.nan) is False
    assert recon_value('{x}=""', x=math.nan) is True and recon_value('{x}<>""', x=math.nan) is False
    assert recon_value("N({x})+1", x=math.nan) == 1 and recon_value("N({x})+1", x=None) == 1
    assert recon_value("N({x})+1", x=2.5) == 3.5
    assert recon_value("{x}>0", x=None) is False and recon_value("{x}>=0", x=math.nan) is True   # a blank counts 0


def test_a_recon_formula_compares_texts_ignoring_case():
    assert recon_value("{a}<>{b}", a="Committed", b="committed") is False
    assert recon_value('{a}="over plan"', a="Over Plan") is True
    assert recon_value('SUMPRODUCT(({s}="x")*1)', s=["X", "y", None, "x"]) == 2


def test_a_recon_text_is_text_and_money_is_a_float():
    assert recon_value('IF({p},"partial","")', p=False, text_result=True) == ""
    assert recon_value('IF({p},"partial","")', p=False) is None
    zero = recon_value("IF({c}>0,{b}/{c},0)", c=0, b=5.0, floats=True)
    assert zero == 0.0 and isinstance(zero, float)
    total = recon_value('SUMPRODUCT(({t}<>"")*{b})', t=[], b=[], floats=True)
    assert total == 0.0 and isinstance(total, float)
    count = recon_value('SUMPRODUCT(({t}<>"")*1)', t=["T1", "", None])
    assert count == 1 and isinstance(count, int)


def test_a_recon_formula_searches_trims_and_rounds_as_excel():
    # SEARCH ignores case and gives the 1-based position; absent it is an error, which ISNUMBER reads as FALSE
    # " low_utilization OOM ": a space, 15 letters, then " OOM " from position 17
    assert recon_value('SEARCH(" oom "," "&{f}&" ")', f="low_utilization OOM") == 17
    assert recon_value('ISNUMBER(SEARCH(" oom "," "&{f}&" "))', f="room") is False
    assert recon_value('SEARCH("a?c",{f})', f="xxABC") == 3 and recon_value('SEARCH("~?",{f})', f="ab?") == 3
    assert recon_value("TRIM({f})", f="  a   b  ", text_result=True) == "a b"
    # ROUND halves away from zero (Python's round goes to even): 2.5 -> 3, -2.5 -> -3, 0.125 to 2 digits -> 0.13
    assert recon_value("ROUND({x},0)", x=2.5) == 3 and recon_value("ROUND({x},0)", x=-2.5) == -3
    assert recon_value("ROUND({x},2)", x=0.125) == 0.13
    assert recon_value('TRIM(IF({a},ActionX&". ",""))', a=True, text_result=True) == "act now."


def test_a_recon_formulas_constant_part_is_computed_once():
    """A flag's shown word reads the About sheet's word table, which the engine holds empty: the key itself. The
    IFERROR is then no call at all: the compiled text names the key."""
    shown = 'IFERROR(INDEX(WordShown,MATCH("over plan",WordKey,0)),"over plan")'
    assert expr._fold(expr.parse(shown), RECON_NAMES) == expr.Text("over plan")
    assert recon_value(f"{{s}}={shown}", s="over plan") is True


def test_every_recon_rule_has_one_expression_and_the_few_with_their_own_python_say_why():
    """A Recon rule's Python view is compiled from its formula, except where the Python is not the formula read
    literally. Adding a Recon rule with a hand-written py fails here until it is named with its reason."""
    from budgetgen.recon import rules as recon_rules
    own = {
        "partial": "the sheet's dates are serial numbers, the engine's date objects: the days between two charge days "
                   "and the month's length are date arithmetic in Python (DATE, DAY, YEAR, MONTH)",
        "trailing_median": "a task's first day has no previous days: the sheet writes no formula there (MEDIAN of no "
                           "cells is #NUM!), the engine's median is blank",
    }
    assert {r.key for r in recon_rules.RULES if not r.compiled} == set(own)


# --------------------------------------------------------------------------------------------- no Python twins

# What serving.py may define beside its formula texts: builders that write a text for a card shape or an
# expression, and the spreadsheet rounding the compiled FLOOR and CEILING use. A quantity's Python is compiled from
# its text (columns.Calc), never written again here.
SERVING_FUNCTIONS = {"fits_excel", "training_shape_excel", "cards_at_scale_excel", "_peak_excel", "sheet_ceil",
                     "sheet_floor"}


def _defined(source: str) -> set[str]:
    """Every function and class a module's source defines, at any depth (methods, nested functions and lambdas too,
    a lambda as "<lambda>")."""
    nodes = list(ast.walk(ast.parse(source)))
    return {n.name for n in nodes if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)} | \
        {"<lambda>" for n in nodes if isinstance(n, ast.Lambda)}


def _serving_source() -> str:
    from budgetgen.model import serving

    return Path(serving.__file__).read_text(encoding="utf-8")


def test_serving_defines_no_function_beside_its_formula_texts_but_the_builders_and_rounding():
    """A function that computed a quantity beside its formula (params_used, batch_size, estimate_replica, ...) is a
    second expression of it: the engine would not call it and the two could drift apart unnoticed."""
    from budgetgen.model import serving

    assert _defined(_serving_source()) == SERVING_FUNCTIONS
    texts = [k for k in vars(serving) if k.endswith("_EXCEL")]
    assert len(texts) >= 40 and all(isinstance(getattr(serving, k), str) for k in texts)


def test_the_check_catches_a_function_grown_beside_the_texts():
    planted = _serving_source() + "\n\ndef batch_size(concurrency, batch_mem):\n    return min(concurrency, batch_mem)\n"
    assert _defined(planted) - SERVING_FUNCTIONS == {"batch_size"}


def test_a_formula_called_without_one_of_its_placeholders_names_it():
    """The view looks for the missing placeholders only when the formula fails: {b} missing is named; a KeyError
    the formula raises for another reason is not hidden behind that message."""
    with pytest.raises(KeyError, match=r"the formula needs \['b'\]"):
        value("{a}+{b}", a=1)
    assert value("{a}+{b}", a=1, b=2) == 3
    rule = rules.Rule("t", "a test", "{a}*{b}")
    with pytest.raises(KeyError, match=r"the formula needs \['a'\]"):
        rule(S, b=2)
    assert rule(S, a=3, b=2) == 6
