"""One expression, two views: an Excel formula template compiled into the Python function that computes it.

A rule (`rules.Rule`) is written once, as the Excel text the workbook carries, over `{placeholders}` (the cells or
ranges the workbook fills in) and the workbook's defined names (a setting's name on Assumptions, a constant, or one
of the derived names below). `compile_excel` parses that text into a small expression tree and renders the tree as
Python source, which is compiled once into a function of the settings and the placeholders' values. The engine calls
that function; the workbook writes the text with the function's result as the cached value. So a quantity is written
once and both views follow from it: there is no second, hand-written Python version to drift from the formula.
A calculated column (`columns.Calc`) is compiled the same way by `compile_row`, into a function of the row, the
settings and the row's GPU: `{key}` is the row's value, `{gpu.field}` the GPU's figure, `INDEX(<a GPUs price
column>,{gpu.row})` its price; a row's cell never holds a range, so its operators compile to Python's own.

The Python view follows Excel's semantics where the engine's values differ from a sheet's cells:
- a blank is None in the engine and "" (or an empty cell) in the sheet: `x=""` is true for either, ISNUMBER is false
  for either, and a formula's `""` result is None;
- a placeholder may hold a range (a list in the engine): inside SUMPRODUCT, SUM, MAX, MIN, COUNT, AND and MATCH the
  operators work element by element, as an array formula does, and TRUE/FALSE count 1/0;
- IF evaluates only the branch it takes, as Excel does.
A Recon rule (`recon.rules.Rule`) is compiled by `compile_values`, into a function `f(v, s)` of a row's values (a
mapping: one value per placeholder, a list inside SUMPRODUCT) and the Recon limits: there unknown usage is a blank
cell, None or NaN in Python (ISNUMBER, N and the blank tests treat NaN as blank), texts compare ignoring case as
Excel's =/<> do, a text rule's `""` result is the empty text, a money rule's numbers are floats, and a subtree that
reads no cell nor setting (a flag's shown word in the engine's language) is computed once, when the rule is defined.
Unknown names, functions or syntax raise ValueError when the rule is defined (at import), never at a build.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# --------------------------------------------------------------------------------------------- the expression tree


@dataclass(frozen=True)
class Num:
    value: float | int


@dataclass(frozen=True)
class Text:
    value: str


@dataclass(frozen=True)
class Placeholder:
    name: str


@dataclass(frozen=True)
class Name:
    name: str


@dataclass(frozen=True)
class Unary:
    op: str
    arg: Node


@dataclass(frozen=True)
class Binary:
    op: str
    left: Node
    right: Node


@dataclass(frozen=True)
class Call:
    function: str
    args: tuple[Node, ...]


Node = Num | Text | Placeholder | Name | Unary | Binary | Call

_TOKEN = re.compile(r"""\s*(?:
    (?P<num>\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)
  | (?P<text>"(?:[^"]|"")*")
  | (?P<ph>\{[a-z0-9_]+(?:\.[a-z0-9_]+)?\})
  | (?P<func>[A-Z][A-Z0-9.]*(?=\())
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op><=|>=|<>|[-+*/^&=<>(),])
)""", re.VERBOSE)

# Excel's precedence, lowest first: comparison, concatenation, addition, multiplication, power (unary minus binds
# tighter than ^ in Excel: -2^2 is 4).
_LEVELS: tuple[tuple[str, ...], ...] = (("=", "<>", "<", ">", "<=", ">="), ("&",), ("+", "-"), ("*", "/"), ("^",))


def parse(text: str) -> Node:
    """The expression tree of an Excel formula template (no leading `=`)."""
    tokens: list[tuple[str, str]] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise ValueError(f"cannot read the formula at {text[pos:pos + 20]!r}: {text!r}")
        kind = m.lastgroup or ""
        tokens.append((kind, m.group(kind)))
        pos = m.end()
    at = 0

    def peek() -> tuple[str, str] | None:
        return tokens[at] if at < len(tokens) else None

    def take(value: str | None = None) -> tuple[str, str]:
        nonlocal at
        token = peek()
        if token is None or (value is not None and token[1] != value):
            raise ValueError(f"expected {value or 'more'} in {text!r}")
        at += 1
        return token

    def level(i: int) -> Node:
        if i == len(_LEVELS):
            return unary()
        node = level(i + 1)
        while (token := peek()) is not None and token[0] == "op" and token[1] in _LEVELS[i]:
            take()
            node = Binary(token[1], node, level(i + 1))
        return node

    def unary() -> Node:
        token = peek()
        if token is not None and token == ("op", "-"):
            take()
            return Unary("-", unary())
        if token is not None and token == ("op", "+"):
            take()
            return unary()
        return atom()

    def atom() -> Node:
        kind, value = take()
        if kind == "num":
            return Num(float(value) if any(c in value for c in ".eE") else int(value))
        if kind == "text":
            return Text(value[1:-1].replace('""', '"'))
        if kind == "ph":
            return Placeholder(value[1:-1])
        if kind == "name":
            if value in ("TRUE", "FALSE"):
                return Num(1 if value == "TRUE" else 0)
            return Name(value)
        if kind == "func":
            take("(")
            args: list[Node] = []
            if peek() != ("op", ")"):
                args.append(level(0))
                while peek() == ("op", ","):
                    take()
                    args.append(level(0))
            take(")")
            return Call(value, tuple(args))
        if value == "(":
            node = level(0)
            take(")")
            return node
        raise ValueError(f"unexpected {value!r} in {text!r}")

    tree = level(0)
    if at != len(tokens):
        raise ValueError(f"unexpected {tokens[at][1]!r} in {text!r}")
    return tree


def placeholders(tree: Node) -> tuple[str, ...]:
    """The placeholders of a tree, in order of first use."""
    found: dict[str, None] = {}

    def walk(node: Node) -> None:
        if isinstance(node, Placeholder):
            found[node.name] = None
        elif isinstance(node, Unary):
            walk(node.arg)
        elif isinstance(node, Binary):
            walk(node.left)
            walk(node.right)
        elif isinstance(node, Call):
            for a in node.args:
                walk(a)
    walk(tree)
    return tuple(found)


# --------------------------------------------------------------------------------------------- the Python view

def _blank(x: object) -> object:
    return "" if x is None else x


def _flat(values: Iterable[object]) -> list[object]:
    out: list[object] = []
    for v in values:
        if isinstance(v, list | tuple):
            out.extend(_flat(v))
        else:
            out.append(v)
    return out


def _numbers(values: Iterable[object]) -> list[float]:
    """The numbers among `values` (a range's texts and blanks do not count, as in SUM/MAX/MIN/COUNT)."""
    return [float(v) for v in _flat(values) if isinstance(v, int | float)]


def _elementwise(op: Callable[[object, object], object]) -> Callable[[object, object], object]:
    def apply(a: object, b: object) -> object:
        if isinstance(a, list | tuple) and isinstance(b, list | tuple):
            if len(a) != len(b):
                raise ValueError("ranges of different sizes")
            return [op(x, y) for x, y in zip(a, b, strict=True)]
        if isinstance(a, list | tuple):
            return [op(x, b) for x in a]
        if isinstance(b, list | tuple):
            return [op(a, y) for y in b]
        return op(a, b)
    return apply


def _eq(a: object, b: object) -> bool:
    return _blank(a) == _blank(b)


def _compare(op: Callable[[Any, Any], bool]) -> Callable[[object, object], bool]:
    def apply(a: object, b: object) -> bool:
        return op(0 if a is None else a, 0 if b is None else b)
    return apply


_BINARY: dict[str, Callable[[object, object], object]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv, "^": operator.pow,
    "&": lambda a, b: f"{_blank(a)}{_blank(b)}", "=": _eq, "<>": lambda a, b: not _eq(a, b),
    "<": _compare(operator.lt), ">": _compare(operator.gt), "<=": _compare(operator.le), ">=": _compare(operator.ge),
}
_ARRAY_BINARY = {op: _elementwise(f) for op, f in _BINARY.items()}


def _sumproduct(*arrays: object) -> float:
    lists = [a if isinstance(a, list | tuple) else [a] for a in arrays]
    if len({len(x) for x in lists}) != 1:
        raise ValueError("SUMPRODUCT of ranges of different sizes")
    products = [math.prod(v if isinstance(v, int | float) else 0 for v in row) for row in zip(*lists, strict=True)]
    if all(isinstance(p, int) for p in products):  # a count (TRUE/FALSE times whole numbers) stays whole
        return sum(products)
    return math.fsum(products)


def _ceiling_of(sheet_ceil: Callable[[float], int]) -> Callable[[float, float], float]:
    def ceiling(x: float, step: float) -> float:
        """Excel's CEILING(x, step) (or FLOOR, given serving.sheet_floor) for positive step, with the sheet's
        tolerance of a ratio a hair off a whole number (serving.sheet_ceil: a quotient that is whole in decimal but
        not in binary is not rounded up)."""
        return sheet_ceil(x / step) * step
    return ceiling


def _rounddown(x: float, digits: float) -> float:
    scale = 10 ** int(digits)
    return math.trunc(x * scale) / scale


def _pmt(rate: float, periods: float, present: float, future: float = 0.0) -> float:
    if rate == 0:
        return -(present + future) / periods
    growth = (1 + rate) ** periods
    return -(present * growth + future) * rate / (growth - 1)


def _match(value: object, values: object, kind: float = 1) -> object:
    """MATCH(value, range, 0): the 1-based position, None (#N/A) where absent; elementwise over a range of values."""
    if kind != 0:
        raise ValueError("only exact MATCH (0) is supported")
    positions = {v: i for i, v in reversed(list(enumerate(_flat([values]), start=1)))}
    if isinstance(value, list | tuple):
        return [positions.get(v) for v in value]
    return positions.get(value)


def _isnumber(x: object) -> object:
    if isinstance(x, list | tuple):
        return [_isnumber(v) for v in x]
    return isinstance(x, int | float)


def _blank_or_nan(x: object) -> object:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else x


def _eq_nocase(a: object, b: object) -> bool:
    """Excel's `=` of two cells: a blank (None or NaN) equals "", texts compare ignoring case."""
    if a == b:
        return True
    if type(a) is str and type(b) is str:
        return a.casefold() == b.casefold()
    return _blank_or_nan(a) == _blank_or_nan(b)


def _concat(*parts: object) -> str:
    """a&b&...: each part as text, a blank as ""."""
    try:
        return "".join(parts)   # type: ignore[arg-type]  # texts (the usual case)
    except TypeError:
        return "".join(p if type(p) is str else "" if p is None else f"{p}" for p in parts)


def _parts(node: Node) -> list[Node]:
    """The operands of a chain of `&`."""
    if isinstance(node, Binary) and node.op == "&":
        return _parts(node.left) + _parts(node.right)
    return [node]


_ARRAY_BINARY_NOCASE = {**_ARRAY_BINARY, "=": _elementwise(_eq_nocase),
                        "<>": _elementwise(lambda a, b: not _eq_nocase(a, b))}


def _fsumproduct(*arrays: object) -> float:
    """SUMPRODUCT as a float, also over no rows."""
    return float(_sumproduct(*arrays))


def _known_number(x: object) -> bool:
    """ISNUMBER of a Recon value: a number that is not NaN (NaN is unknown usage, a blank cell)."""
    return isinstance(x, (int, float)) and not math.isnan(x)  # a tuple: faster on this path


def _n(x: object) -> object:
    """N(x): a number itself, anything else (a blank, NaN, a text) 0."""
    return x if isinstance(x, int | float) and not math.isnan(x) else 0


def _searcher(find: str) -> Callable[[object], int | None]:
    """SEARCH of a fixed text (one without wildcards) in a value: the 1-based position, None where absent."""
    needle = find.casefold()

    def search(within: object) -> int | None:
        at = str(_blank(within)).casefold().find(needle)
        return at + 1 if at >= 0 else None
    return search


def _contains(find: str) -> Callable[[object], bool]:
    """ISNUMBER(SEARCH(find, value)) of a fixed text (one without wildcards): whether the value holds it, ignoring
    case."""
    needle = find.casefold()

    def contains(within: object) -> bool:
        return needle in (within if type(within) is str else str(_blank(within))).casefold()
    return contains


def _search1(find: object, within: object) -> int | None:
    """SEARCH(find, within): the 1-based position of `find` in `within` ignoring case, None (#VALUE!) where absent;
    Excel's wildcards ? and * (and ~ before one) are read as such."""
    needle, text = str(_blank(find)).casefold(), str(_blank(within)).casefold()
    if not any(c in needle for c in "?*~"):
        at = text.find(needle)
        return at + 1 if at >= 0 else None
    pattern, escaped = "", False
    for c in needle:
        if escaped or c not in "?*~":
            pattern, escaped = pattern + re.escape(c), False
        elif c == "~":
            escaped = True
        else:
            pattern += "." if c == "?" else ".*"
    found = re.search(pattern, text, re.DOTALL)
    return found.start() + 1 if found else None


def _trim1(x: object) -> str:
    """TRIM: the text without leading and trailing spaces, and single spaces between words."""
    return " ".join(part for part in str(_blank(x)).split(" ") if part)


def _round(x: float, digits: float = 0) -> float:
    """ROUND: halves away from zero; to a whole number (digits 0) it is an int, as a count stays whole."""
    scale = 10 ** int(digits)
    rounded = math.floor(abs(x) * scale + 0.5)
    if digits == 0:
        return int(math.copysign(rounded, x)) if rounded else 0
    return math.copysign(rounded / scale, x)


def _round0(x: float) -> int:
    """ROUND(x, 0): the whole number, halves away from zero."""
    rounded = math.floor(abs(x) + 0.5)
    return rounded if x >= 0 else -rounded


def _index(values: object, at: object) -> object:
    """INDEX(range, n): the n-th value; an error (#REF!) for a position outside the range or an error (None)."""
    items = _flat([values])
    if not isinstance(at, int | float) or not 1 <= at <= len(items):
        raise ValueError("INDEX outside its range")
    return items[int(at) - 1]


def _isnumber_nan(x: object) -> object:
    if isinstance(x, list | tuple):
        return [_isnumber_nan(v) for v in x]
    return _known_number(x)


# The functions of a Recon rule (compile_values); texts and lookups work element by element inside an array.
_VALUES_FUNCTIONS: dict[str, Callable[..., object]] = {
    "N": _n,
    "SEARCH": _elementwise(_search1),
    "TRIM": lambda x: [_trim1(v) for v in x] if isinstance(x, list | tuple) else _trim1(x),
    "ROUND": _round,
    "INDEX": _index,
}


# Functions whose arguments are arrays (operators inside work element by element) and their Python view.
_ARRAY_FUNCTIONS: dict[str, Callable[..., object]] = {
    "SUMPRODUCT": _sumproduct,
    "SUM": lambda *a: math.fsum(_numbers(a)),
    "MAX": lambda *a: max(_numbers(a), default=0.0),
    "MIN": lambda *a: min(_numbers(a), default=0.0),
    "COUNT": lambda *a: len(_numbers(a)),
    "AND": lambda *a: all(bool(v) for v in _flat(a)),
    "OR": lambda *a: any(bool(v) for v in _flat(a)),
    "MATCH": _match,
    "ISNUMBER": _isnumber,
}
_ALWAYS_ARRAY = ("SUMPRODUCT", "MATCH")
def _log(x: float, base: float = 10) -> float:
    """LOG(x, base): exact for powers of 2 and 10, as Excel's is (LOG(8,2) is 3, not 2.9999999999999996)."""
    if base == 2:
        return math.log2(x)
    if base == 10:
        return math.log10(x)
    return math.log(x) / math.log(base)


_SCALAR_FUNCTIONS: dict[str, Callable[..., object]] = {
    "ABS": abs,
    "INT": math.floor,
    "MOD": operator.mod,   # Python's % takes the divisor's sign, as Excel's MOD does
    "LOG": _log,
    "SQRT": math.sqrt,
    "ROUNDDOWN": _rounddown,
    "PMT": _pmt,
    "NOT": lambda a: not a,
}


@dataclass(frozen=True)
class Names:
    """How the workbook's defined names read in Python: a setting's attribute of the settings, a fixed value, or a
    value derived from the settings."""

    settings: Mapping[str, str]  # defined name -> Settings attribute
    constants: Mapping[str, object]  # a number, or a range (a tuple) such as an empty word table
    derived: Mapping[str, Callable[[Any], object]]  # a value, or a range (a sequence) such as PlanMonths


class _Renderer:
    """Python source of a tree; `array` while inside an array function's arguments."""

    def __init__(self, names: Names, env: dict[str, object], gpu_columns: Mapping[str, str] | None = None,
                 values: bool = False, text: bool = False, floats: bool = False) -> None:
        self.names = names
        self.env = env
        self.row = gpu_columns is not None  # a row formula: placeholders are the row's cells and the row's GPU
        self.gpu_columns = gpu_columns or {}
        self.values = values  # a Recon rule's: NaN is blank, texts compare ignoring case (compile_values)
        self.scalar = self.row or values  # a placeholder holds one value outside an array function
        self.text = text  # a "" is the empty text, not a blank
        self.floats = floats  # whole numbers are written as floats (a money rule's 0 is 0.0)

    def _bind(self, prefix: str, value: object) -> str:
        key = f"_{prefix}{len(self.env)}"
        self.env[key] = value
        return key

    def render(self, node: Node, array: bool = False) -> str:
        if isinstance(node, Num):
            return repr(float(node.value) if self.floats else node.value)
        if isinstance(node, Text):
            return ("''" if self.text else "None") if node.value == "" else repr(node.value)
        if isinstance(node, Placeholder):
            if not self.row:
                return f"v[{node.name!r}]"
            if node.name == "gpu.row":
                raise ValueError("{gpu.row} is read only as INDEX(<a GPUs column>,{gpu.row})")
            if node.name.startswith("gpu."):
                return f"g.{node.name.removeprefix('gpu.')}"
            return f"r[{node.name!r}]"
        if isinstance(node, Name):
            if node.name in self.names.settings:
                return f"s.{self.names.settings[node.name]}"
            if node.name in self.names.constants:
                return repr(self.names.constants[node.name])
            if node.name in self.names.derived:
                return f"{self._bind('d', self.names.derived[node.name])}(s)"
            raise ValueError(f"unknown name {node.name}")
        if isinstance(node, Unary):
            return f"(-{self.render(node.arg, array)})"
        if isinstance(node, Binary):
            if self.values and not array and node.op == "&":
                return f"{self._bind('op', _concat)}({','.join(self.render(p) for p in _parts(node))})"
            left, right = self.render(node.left, array), self.render(node.right, array)
            if array:
                table = _ARRAY_BINARY_NOCASE if self.values else _ARRAY_BINARY
                return f"{self._bind('op', table[node.op])}({left},{right})"
            if node.op in ("=", "<>") and self.scalar and (node.left == Text("") or node.right == Text("")):
                cell = node.right if node.left == Text("") else node.left
                if isinstance(cell, Placeholder | Name):   # a blank test of a cell: None or "" (or NaN: unknown)
                    value = self.render(cell)
                    if self.values:   # the cell read once
                        test = f"((_x:={value}) is None or _x=='' or _x!=_x)"
                        return test if node.op == "=" else f"(not {test})"
                    if node.op == "=":
                        return f"({value} is None or {value}=='')"
                    return f"(not ({value} is None or {value}==''))"
            if self.values and node.op in ("=", "<>") and not (
                    isinstance(node.left, Num) or isinstance(node.right, Num)):
                # texts compare ignoring case, as Excel's = and <> do
                test = f"{self._bind('op', _eq_nocase)}({left},{right})"
                return test if node.op == "=" else f"(not {test})"
            if node.op in ("=", "<>") and (_literal(node.left) or _literal(node.right)):
                # against a number or a non-empty text a blank is unequal either way: Python's own == is Excel's
                return f"({left}{'==' if node.op == '=' else '!='}{right})"
            if self.values and node.op in ("<", ">", "<=", ">=") and not (
                    isinstance(node.left, Text) or isinstance(node.right, Text)):
                # numbers (or blanks, which count 0): Python's own comparison
                def known(x: Node, source: str) -> str:
                    return f"(0 if (_x:={source}) is None or _x!=_x else _x)" if isinstance(x, Placeholder) else source
                return f"({known(node.left, left)}{node.op}{known(node.right, right)})"
            if self.row and node.op in ("<", ">", "<=", ">=") and (
                    isinstance(node.left, Num) or isinstance(node.right, Num)) and all(
                    isinstance(x, Num | Placeholder | Name) for x in (node.left, node.right)):
                # a cell against a number: a blank counts 0
                def zero(x: Node, source: str) -> str:
                    return f"({source} if {source} is not None else 0)" if isinstance(x, Placeholder) else source
                return f"({zero(node.left, left)}{node.op}{zero(node.right, right)})"
            if node.op in ("+", "-", "*", "/"):
                return f"({left}{node.op}{right})"
            if node.op == "^":
                return f"({left}**{right})"
            return f"{self._bind('op', _BINARY[node.op])}({left},{right})"
        if isinstance(node, Call):
            return self._call(node, array)
        raise TypeError(node)

    def _call(self, node: Call, array: bool) -> str:
        f, args = node.function, node.args
        if f == "IF":
            if len(args) not in (2, 3):
                raise ValueError("IF takes 2 or 3 arguments")
            otherwise = self.render(args[2], array) if len(args) == 3 else "False"
            return f"({self.render(args[1], array)} if {self.render(args[0], array)} else {otherwise})"
        if f == "IFERROR":
            return f"{self._bind('f', _iferror)}(lambda: {self.render(args[0], array)}, lambda: " \
                   f"{self.render(args[1], array)})"
        if f == "CHOOSE":   # every choice is a value (a cell), so taking them all first is safe
            return f"({','.join(self.render(a, array) for a in args[1:])},)[{self.render(args[0], array)}-1]"
        if f == "INDEX" and self.row and len(args) == 2 and isinstance(args[0], Name) \
                and args[0].name in self.gpu_columns and args[1] == Placeholder("gpu.row"):
            return f"({self.gpu_columns[args[0].name]})"   # the row's GPU's figure on the GPUs sheet
        if not array and self.row and f == "MATCH" and len(args) == 3 and args[2] == Num(0):
            return f"{self._bind('f', _match_one)}({self.render(args[0])},{self.render(args[1])})"
        if not array and f in ("AND", "OR") and len(args) > 1 and all(
                _comparison(a) or (self.values and _test(a)) for a in args):
            # scalar tests (True/False each): Python's and/or, which Excel's AND/OR of them equal
            return "(" + f" {f.lower()} ".join(self.render(a) for a in args) + ")"
        if self.values and not array and f in ("MAX", "MIN") and args and all(_numeric(a) for a in args):
            # numbers each (no blank nor text to skip): Python's own max/min
            return f"{self._bind('f', max if f == 'MAX' else min)}({','.join(self.render(a) for a in args)})"
        if not array and self.scalar and f in ("MAX", "MIN"):
            inner = ",".join(self.render(a) for a in args)
            return f"{self._bind('f', _row_max if f == 'MAX' else _row_min)}({inner})"
        if self.values and not array and f in ("AND", "OR") and args and all(_test(a) for a in args):
            # tests (True/False each): Python's and/or, which Excel's AND/OR of them equal
            return "(" + f" {f.lower()} ".join(self.render(a) for a in args) + ")"
        if self.values and not array and _fixed_search(node) and isinstance(args[0], Text):
            return f"{self._bind('f', _searcher(args[0].value))}({self.render(args[1])})"
        if self.values and not array and f == "ISNUMBER" and len(args) == 1 and _fixed_search(args[0]):
            search = args[0]
            assert isinstance(search, Call) and isinstance(search.args[0], Text)
            return f"{self._bind('f', _contains(search.args[0].value))}({self.render(search.args[1])})"
        if self.values and not array and f == "ROUND" and len(args) == 2 and args[1] == Num(0):
            return f"{self._bind('f', _round0)}({self.render(args[0])})"
        if self.values and f == "ISNUMBER" and len(args) == 1:
            return f"{self._bind('f', _isnumber_nan if array else _known_number)}({self.render(args[0], array)})"
        if self.values and f in _VALUES_FUNCTIONS:
            inner = ",".join(self.render(a, array) for a in args)
            return f"{self._bind('f', _VALUES_FUNCTIONS[f])}({inner})"
        if self.floats and f == "SUMPRODUCT":   # a money total is a float, even of no rows
            inner = ",".join(self.render(a, True) for a in args)
            return f"{self._bind('f', _fsumproduct)}({inner})"
        if f in _ARRAY_FUNCTIONS:
            # a lone argument may be a range (an array formula over it); several are values (a range among them is
            # flattened by the function), whose operators stay scalar
            inner = ",".join(self.render(a, array or len(args) == 1 or f in _ALWAYS_ARRAY) for a in args)
            return f"{self._bind('f', _ARRAY_FUNCTIONS[f])}({inner})"
        if f == "POWER" and len(args) == 2:   # x^y
            return self.render(Binary("^", args[0], args[1]), array)
        if f in ("CEILING", "FLOOR"):
            from .serving import sheet_ceil, sheet_floor  # (serving's formulas are built from the schema it serves)
            inner = ",".join(self.render(a, array) for a in args)
            return f"{self._bind('f', _ceiling_of(sheet_ceil if f == 'CEILING' else sheet_floor))}({inner})"
        if self.row and not array and f == "ISNUMBER" and len(args) == 1:
            return f"{self._bind('f', _is_number)}({self.render(args[0])})"
        if f in _SCALAR_FUNCTIONS:
            inner = ",".join(self.render(a, array) for a in args)
            return f"{self._bind('f', _SCALAR_FUNCTIONS[f])}({inner})"
        raise ValueError(f"no Python view of the function {f}")


def _literal(node: Node) -> bool:
    """A number or a non-empty text: what a blank never equals."""
    return isinstance(node, Num) or (isinstance(node, Text) and node.value != "")


def _comparison(node: Node) -> bool:
    return isinstance(node, Binary) and node.op in ("=", "<>", "<", ">", "<=", ">=")


def _numeric(node: Node) -> bool:
    """A node whose value is a number whatever the cells hold: a number, arithmetic, or ROUND or N."""
    return isinstance(node, Num) or (isinstance(node, Unary | Binary) and node.op in "+-*/^") or (
        isinstance(node, Call) and node.function in ("ROUND", "N"))


def _fixed_search(node: Node) -> bool:
    """SEARCH of a fixed text without wildcards."""
    return isinstance(node, Call) and node.function == "SEARCH" and len(node.args) == 2 and \
        isinstance(node.args[0], Text) and not any(c in node.args[0].value for c in "?*~")


def _test(node: Node) -> bool:
    """A node whose value is TRUE or FALSE: a comparison, or ISNUMBER, AND, OR, NOT of scalars."""
    return _comparison(node) or (isinstance(node, Call) and node.function in ("ISNUMBER", "AND", "OR", "NOT"))


def _match_one(value: object, values: Sequence[object]) -> int | None:
    """MATCH(value, range, 0) of one value: its 1-based position, None (#N/A) where absent."""
    return values.index(value) + 1 if value in values else None


def _row_max(*values: Any) -> Any:
    """MAX over a row's cells: the largest number, of its own type (a count stays whole); blanks and texts skipped."""
    numbers = [v for v in values if isinstance(v, int | float)]
    return max(numbers) if numbers else 0


def _row_min(*values: Any) -> Any:
    numbers = [v for v in values if isinstance(v, int | float)]
    return min(numbers) if numbers else 0


def _is_number(x: object) -> bool:
    return isinstance(x, int | float)


def _iferror(value: Callable[[], object], fallback: Callable[[], object]) -> object:
    try:
        return value()
    except (ArithmeticError, ValueError, TypeError):
        return fallback()


VIEW_DOC = "The Python view of ="  # how a compiled function's docstring starts (is_compiled)


def is_compiled(function: object) -> bool:
    """Whether `function` was compiled from a formula here (not written by hand beside it)."""
    return (getattr(function, "__doc__", None) or "").startswith(VIEW_DOC)


def compile_excel(text: str, names: Names) -> Callable[..., object]:
    """The Python function `f(settings, **placeholders)` of an Excel formula template."""
    tree = parse(text)
    env: dict[str, object] = {}
    source = _Renderer(names, env).render(tree)
    code = compile(f"lambda s, v: {source}", f"<formula {text[:60]}>", "eval")
    body = eval(code, {"__builtins__": {}, **env})   # source rendered from a parsed tree, its names bound in env
    wanted = placeholders(tree)

    def view(settings: object, values: Mapping[str, object]) -> object:
        try:
            return body(settings, values)
        except KeyError:   # which placeholders were not given, looked for only then (the engine calls it millions
            missing = [p for p in wanted if p not in values]   # of times a plan)
            if missing:
                raise KeyError(f"the formula needs {missing}") from None
            raise

    def function(settings: object, **values: object) -> object:
        return view(settings, values)
    function.__doc__ = f"{VIEW_DOC}{text}"
    function.view = view  # type: ignore[attr-defined]  # the same, its values one mapping (Rule.__call__)
    return function


def compile_row(text: str, names: Names, gpu_columns: Mapping[str, str]) -> Callable[[Any, Any, Any], object]:
    """The Python function `f(row, settings, gpu)` of a calculated column's formula: `{key}` is the row's value
    `row[key]` (`{model.field}` included), `{gpu.field}` the GPU's attribute, and INDEX(<name>,{gpu.row}) of a
    GPUs-sheet column named in `gpu_columns` its Python source over the GPU `g` (e.g. a tier's price)."""
    env: dict[str, object] = {}
    source = _Renderer(names, env, gpu_columns).render(parse(text.removeprefix("=")))
    code = compile(f"lambda r, s, g: {source}", f"<formula {text[:60]}>", "eval")
    function: Callable[[Any, Any, Any], object] = eval(code, {"__builtins__": {}, **env})  # rendered from a tree
    function.__doc__ = f"{VIEW_DOC}{text.removeprefix('=')}"
    return function


def _fold(node: Node, names: Names) -> Node:
    """The tree with each subtree that reads no placeholder, setting or derived name computed once (a number or a
    text): e.g. a flag's shown word, which in the engine's language (an empty word table) is its key."""
    def constant(x: Node) -> bool:
        if isinstance(x, Placeholder):
            return False
        if isinstance(x, Name):
            return x.name in names.constants
        if isinstance(x, Unary):
            return constant(x.arg)
        if isinstance(x, Binary):
            return constant(x.left) and constant(x.right)
        if isinstance(x, Call):
            return all(constant(a) for a in x.args)
        return True

    def fold(x: Node) -> Node:
        if isinstance(x, Num | Text | Placeholder | Name):
            return x
        if constant(x):
            env: dict[str, object] = {}
            source = _Renderer(names, env, values=True).render(x)
            try:
                value = eval(compile(f"lambda: {source}", "<constant>", "eval"), {"__builtins__": {}, **env})()
            except (ArithmeticError, ValueError, TypeError):
                value = x   # an error stays where it is: it is raised when the formula is computed, as in Excel
            if isinstance(value, str):
                return Text(value)
            if isinstance(value, int | float) and not isinstance(value, bool):
                return Num(value)
        if isinstance(x, Unary):
            return Unary(x.op, fold(x.arg))
        if isinstance(x, Binary):
            return Binary(x.op, fold(x.left), fold(x.right))
        if isinstance(x, Call):
            return Call(x.function, tuple(fold(a) for a in x.args))
        return x
    return fold(node)


def compile_values(text: str, names: Names, *, text_result: bool = False,
                   floats: bool = False) -> Callable[[Any, Any], Any]:
    """The Python function `f(v, s)` of a Recon rule's formula: `{name}` is `v[name]` (a value; a list inside an array
    function), the names read the limits `s`. Unknown usage is None or NaN (a blank cell); `text_result`: the rule's
    value is a text, whose `""` is the empty text; `floats`: a money (or other measured) rule, whose whole numbers
    are floats as in Excel."""
    env: dict[str, object] = {}
    tree = _fold(parse(text), names)
    source = _Renderer(names, env, values=True, text=text_result, floats=floats).render(tree)
    code = compile(f"lambda v, s: {source}", f"<formula {text[:60]}>", "eval")
    function: Callable[[Any, Any], Any] = eval(code, {"__builtins__": {}, **env})  # rendered from a parsed tree
    function.__doc__ = f"{VIEW_DOC}{text}"
    return function
