"""The typed AST of a SASE+ query: frozen dataclasses, each with its source span.

Spans do not take part in equality, so ``parse(print(q)) == q`` holds.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from fractions import Fraction

from cepcli.errors import NO_SPAN, Span


def _span() -> Span:
    return field(default=NO_SPAN, compare=False, repr=False)


# --- pattern structure ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Prim:
    """``Type var``: one event of a type."""

    type: str
    var: str
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Kleene:
    """``Type+ var[]`` (lo=1, hi=None) or a bounded repetition ``Type{lo,hi} var[]``."""

    type: str
    var: str
    lo: int = 1
    hi: int | None = None
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Neg:
    """``NOT(Type var)``: no such event at this place."""

    item: Prim
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Seq:
    items: tuple[Structure, ...]
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Conj:
    """``AND(...)``: all items, in any order."""

    items: tuple[Structure, ...]
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Disj:
    """``OR(...)``: any one item."""

    items: tuple[Structure, ...]
    span: Span = _span()


Structure = Prim | Kleene | Neg | Seq | Conj | Disj


# --- conditions -------------------------------------------------------------------


class Index(enum.Enum):
    """How a reference picks events of its variable."""

    PLAIN = "plain"  # a.x           (positive or negated variable)
    EACH = "i"  # b[i].x        (every element of a Kleene subset)
    PREV = "i-1"  # b[i-1].x      (the previous element)
    FIRST = "1"  # b[1].x
    LAST = "last"  # b[last].x


class Scope(enum.Enum):
    """What an aggregate runs over."""

    ALL = "[]"  # b[].x     the whole subset
    PREFIX = "[..i-1]"  # b[..i-1].x the elements before the current one


@dataclass(frozen=True, slots=True)
class Num:
    value: int | float
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Str:
    value: str
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Bool:
    value: bool
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Attr:
    """``a.x``, ``b[i].x``, ``b[i-1].x``, ``b[1].x`` or ``b[last].x``."""

    var: str
    attr: str
    index: Index = Index.PLAIN
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Agg:
    """``avg(b[].x)``, ``count(b[])``, ``max(b[..i-1].x)`` ..."""

    func: str
    var: str
    attr: str | None
    scope: Scope = Scope.ALL
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Abs:
    operand: Expr
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Minus:
    """Unary minus."""

    operand: Expr
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Arith:
    op: str  # + - * / %
    left: Expr
    right: Expr
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Compare:
    op: str  # = != < <= > >=   (== and <> are normalised to = and !=)
    left: Expr
    right: Expr
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class BoolOp:
    op: str  # "and" | "or"
    items: tuple[Expr, ...]
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Not:
    operand: Expr
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Equiv:
    """``[attr]``: every event of the match, negated ones included, has the same attr."""

    attr: str
    span: Span = _span()


Expr = Num | Str | Bool | Attr | Agg | Abs | Minus | Arith | Compare | BoolOp | Not | Equiv

AGGREGATES = ("avg", "sum", "min", "max", "count")


@dataclass(frozen=True, slots=True)
class Duration:
    """A window length as written (``2 hours``) and in seconds."""

    value: float
    unit: str  # canonical unit: "" (timestamp units), ns, us, ms, s, min, h, d

    @property
    def seconds(self) -> float:
        return self.value * UNIT_SECONDS[self.unit]

    def nanoseconds(self, time_unit: int = 10**9) -> int:
        """The window in int64 nanoseconds, exactly (a bare number is in ``time_unit``
        nanoseconds). Rounded down: ``max - min <= W`` holds for int timestamps exactly when
        it holds for the floor of W. A window past the int64 range covers every pair."""
        per_unit = UNIT_NANOSECONDS.get(self.unit) or time_unit
        value = Fraction(repr(self.value)) if isinstance(self.value, float) else Fraction(self.value)
        return min(math.floor(value * per_unit), MAX_WINDOW)


UNIT_SECONDS: dict[str, float] = {
    "": 1.0,
    "ns": 1e-9,
    "us": 1e-6,
    "ms": 0.001,
    "s": 1.0,
    "min": 60.0,
    "h": 3600.0,
    "d": 86400.0,
}
UNIT_NANOSECONDS: dict[str, int] = {
    "ns": 1,
    "us": 10**3,
    "ms": 10**6,
    "s": 10**9,
    "min": 60 * 10**9,
    "h": 3600 * 10**9,
    "d": 86400 * 10**9,
}
MAX_WINDOW = (1 << 64) - 1  # beyond any difference of two int64 timestamps

UNIT_ALIASES: dict[str, str] = {
    "ns": "ns",
    "nanosecond": "ns",
    "nanoseconds": "ns",
    "us": "us",
    "microsecond": "us",
    "microseconds": "us",
    "ms": "ms",
    "millisecond": "ms",
    "milliseconds": "ms",
    "s": "s",
    "sec": "s",
    "secs": "s",
    "second": "s",
    "seconds": "s",
    "m": "min",
    "min": "min",
    "mins": "min",
    "minute": "min",
    "minutes": "min",
    "h": "h",
    "hr": "h",
    "hrs": "h",
    "hour": "h",
    "hours": "h",
    "d": "d",
    "day": "d",
    "days": "d",
}


@dataclass(frozen=True, slots=True)
class InputOption:
    """``name = value`` in ``FROM 'path' WITH (...)``: how to read the input (a command-line
    flag of the same name overrides it). ``name`` is in snake case (``type_col``)."""

    name: str
    value: str | int | bool
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Query:
    structure: Structure
    window: Duration
    where: Expr | None = None
    strategy: str = "skip_till_any_match"
    source: str | None = None  # FROM 'path', as written
    span: Span = _span()
    options: tuple[InputOption, ...] = ()  # FROM ... WITH (name = value, ...)
    strategy_vars: tuple[
        str, ...
    ] = ()  # WHERE strategy(v1, v2, ...): the variables it applies to (all: empty)
    strategy_span: Span = _span()  # where the strategy is written (its errors)
    # where each of ``strategy_vars`` is written (its errors); not part of equality
    strategy_var_spans: tuple[Span, ...] = field(default=(), compare=False, repr=False)


def iter_structure(node: Structure) -> list[Prim | Kleene | Neg]:
    """The elements of a structure, left to right."""
    match node:
        case Prim() | Kleene() | Neg():
            return [node]
        case Seq(items) | Conj(items) | Disj(items):
            return [leaf for item in items for leaf in iter_structure(item)]
    raise TypeError(node)


def iter_expr(expr: Expr) -> list[Expr]:
    """Every node of a condition, parents before children."""
    out: list[Expr] = [expr]
    match expr:
        case Abs(operand) | Minus(operand) | Not(operand):
            out += iter_expr(operand)
        case Arith(_, left, right) | Compare(_, left, right):
            out += iter_expr(left) + iter_expr(right)
        case BoolOp(_, items):
            for item in items:
                out += iter_expr(item)
    return out


def conjuncts(expr: Expr | None) -> tuple[Expr, ...]:
    """The top-level AND conjuncts of a condition."""
    if expr is None:
        return ()
    if isinstance(expr, BoolOp) and expr.op == "and":
        return tuple(c for item in expr.items for c in conjuncts(item))
    return (expr,)


def variables_of(expr: Expr) -> frozenset[str]:
    """The variables a condition mentions (``[attr]`` mentions none by itself)."""
    return frozenset(node.var for node in iter_expr(expr) if isinstance(node, Attr | Agg))


def renamed(expr: Expr, names: dict[str, str]) -> Expr:
    """``expr`` with the variables in ``names`` renamed (spans kept)."""
    changes: dict[str, object] = {}
    for f in fields(expr):
        value = getattr(expr, f.name)
        if f.name == "var" and value in names:
            changes["var"] = names[value]
        elif isinstance(value, _EXPRS):
            changes[f.name] = renamed(value, names)
        elif isinstance(value, tuple) and value and isinstance(value[0], _EXPRS):
            changes[f.name] = tuple(renamed(item, names) for item in value)
    return replace(expr, **changes) if changes else expr  # type: ignore[arg-type]


def transformed(expr: Expr, leaf: Callable[[Attr | Agg], Expr | None]) -> Expr:
    """``expr`` with each reference (``Attr``, ``Agg``) for which ``leaf`` gives a node
    replaced by that node; the other references, and every span, kept."""
    if isinstance(expr, Attr | Agg):
        new = leaf(expr)
        return expr if new is None else new
    changes: dict[str, object] = {}
    for f in fields(expr):
        value = getattr(expr, f.name)
        if isinstance(value, _EXPRS):
            changes[f.name] = transformed(value, leaf)
        elif isinstance(value, tuple) and value and isinstance(value[0], _EXPRS):
            changes[f.name] = tuple(transformed(item, leaf) for item in value)
    return replace(expr, **changes) if changes else expr  # type: ignore[arg-type]


_EXPRS = (Num, Str, Bool, Attr, Agg, Abs, Minus, Arith, Compare, BoolOp, Not, Equiv)
