"""Bounds that only break as a Kleene subset grows: ``count(b[]) <= 2``, ``max(b[].x) < 5``,
``min(b[].x) >= 1``, ``sum(b[].x) <= 10`` over non-negative values. Once one fails for a
subset (with its aggregate present, so that a missing value never decides it), it fails
for every subset that contains it, so the subsets are never grown past it
(``Iteration``, the eager NFA's take), as a failed ``b[1]`` condition cuts them at their
first element. The bound itself is still checked on acceptance: a cut only saves work.

A conjunct (``Condition.expr``, in negation normal form) is *dead* for a subset when its
comparisons say so: ``agg op k`` (or ``k op agg``, ``k`` not reading ``b``) with an
aggregate that can only grow as elements are added (``count``, ``max``; ``sum`` when no
element still to be added is negative) is dead once ``agg > k`` (``agg >= k`` for ``<``),
one that can only shrink (``min``; ``sum`` of values none of which is positive) once
``agg < k``; an AND is dead when one of its parts is, an OR when all are. A sum is cut
only over exact numbers (integers, decimals, times), whose sums grow with every
non-negative value (a float sum's rounding need not). Whether the values still to be added
are of the right sign is known from the conditions (``b[i].x >= 0``: every element of a
match), or, where the candidates are known (``Iteration``), from them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cepcli.events import Event, Kind, Schema
from cepcli.plan.pattern import Branch, Condition
from cepcli.plan.python import CompiledCondition, compile_condition
from cepcli.query import ast as a

_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "!=": "!="}
_UP = {"<=": ">", "=": ">", "<": ">="}  # an aggregate that grows: its bound's dead form
_DOWN = {">=": "<", "=": "<", ">": "<="}  # one that shrinks
_EXACT = (Kind.INT, Kind.DECIMAL, Kind.TIME, Kind.DURATION)


@dataclass(frozen=True, slots=True)
class Sign:
    """A sum's condition on the values still to be added: none negative (``up``), or none
    positive. ``known``: the query's conditions already say so for every element."""

    attr: str
    up: bool
    breaks: CompiledCondition  # ``b[i].attr < 0`` (or ``> 0``): an element that breaks it
    column: int | None  # its column (None: the time column), for a float that breaks it too
    known: bool


@dataclass(frozen=True, slots=True)
class _Atom:
    dead: CompiledCondition  # fn(m) with the subset in ``m``
    sign: Sign | None


@dataclass(frozen=True, slots=True)
class _Node:
    any: bool  # AND: dead when one part is; OR (False): when all are
    parts: tuple[_Atom | _Node, ...]


class Cuts:
    """The conjuncts of a branch that cut Kleene variable ``var``'s subsets, each with the
    slots of the other variables it reads (checked only once they are bound)."""

    __slots__ = ("slot", "bounds", "signs")

    def __init__(self, slot: int, bounds: Sequence[tuple[_Atom | _Node, tuple[int, ...]]]) -> None:
        self.slot = slot
        self.bounds = tuple(bounds)
        signs: dict[tuple[str, bool], Sign] = {}
        for node, _ in self.bounds:
            for sign in _signs(node):
                signs.setdefault((sign.attr, sign.up), sign)
        self.signs = tuple(s for s in signs.values() if not s.known)  # those the candidates decide

    def broken(self, m: list[object], events: Sequence[Event]) -> frozenset[Sign]:
        """The signs that some of ``events`` (values still to be added) breaks."""
        out = set()
        for sign in self.signs:
            for e in events:
                if sign.column is not None and isinstance(e.values[sign.column], float):
                    out.add(sign)  # (an int column of a pipe that met a fraction: not exact)
                    break
                if sign.breaks(m, e):
                    out.add(sign)
                    break
        return frozenset(out)

    def dead(self, m: list[object], subset: tuple[Event, ...], broken: frozenset[Sign] | None) -> bool:
        """Is some bound false for ``subset`` and every subset that contains it? ``broken``:
        the signs the values still to be added break (None: not known, only the ones the
        conditions give hold)."""
        for node, others in self.bounds:
            if any(m[k] is None for k in others):
                continue
            bound = list(m)
            bound[self.slot] = subset
            if _dead(node, bound, broken):
                return True
        return False


def _dead(node: _Atom | _Node, m: list[object], broken: frozenset[Sign] | None) -> bool:
    if isinstance(node, _Node):
        if node.any:
            return any(_dead(part, m, broken) for part in node.parts)
        return all(_dead(part, m, broken) for part in node.parts)
    sign = node.sign
    if sign is not None and not sign.known and (broken is None or sign in broken):
        return False
    return node.dead(m)


def _signs(node: _Atom | _Node) -> list[Sign]:
    if isinstance(node, _Node):
        return [s for part in node.parts for s in _signs(part)]
    return [node.sign] if node.sign is not None else []


def cuts_of(branch: Branch, var: str, slots: dict[str, int], schema: Schema) -> Cuts | None:
    """The conjuncts of ``branch`` that cut Kleene variable ``var``'s subsets (None: none)."""
    known = _known_signs(branch, var)
    bounds = []
    for cond in branch.conditions:
        if cond.negated is not None or cond.iterates is not None or var not in cond.whole:
            continue
        node = _node(cond.expr, var, slots, schema, known)
        if node is not None:
            others = tuple(sorted(slots[v] for v in cond.variables if v != var))
            bounds.append((node, others))
    return Cuts(slots[var], bounds) if bounds else None


def _node(
    expr: a.Expr, var: str, slots: dict[str, int], schema: Schema, known: set[tuple[str, bool]]
) -> _Atom | _Node | None:
    match expr:
        case a.BoolOp(op, items):
            parts = [_node(item, var, slots, schema, known) for item in items]
            if op == "and":
                kept = tuple(p for p in parts if p is not None)
                return _Node(True, kept) if kept else None
            if any(p is None for p in parts):
                return None
            return _Node(False, tuple(p for p in parts if p is not None))
        case a.Compare(op, left, right):
            return _atom(op, left, right, var, slots, schema, known)
    return None


def _atom(
    op: str,
    left: a.Expr,
    right: a.Expr,
    var: str,
    slots: dict[str, int],
    schema: Schema,
    known: set[tuple[str, bool]],
) -> _Atom | None:
    if _reads(right, var) and not _reads(left, var):
        left, right, op = right, left, _FLIPPED[op]
    if not (isinstance(left, a.Agg) and left.var == var and left.scope is a.Scope.ALL) or _reads(right, var):
        return None
    func, attr = left.func, left.attr
    sign: Sign | None = None
    if func in ("count", "max") or (func == "sum" and op in _UP):
        up = True
    elif func == "min" or (func == "sum" and op in _DOWN):
        up = False
    else:
        return None
    dead_op = (_UP if up else _DOWN).get(op)
    if dead_op is None:
        return None
    if func == "sum":
        assert attr is not None
        timed = attr == schema.time_col
        if not timed and schema.kind(attr) not in _EXACT:
            return None
        element = a.Attr(var, attr, a.Index.EACH, left.span)
        breaks = a.Compare("<" if up else ">", element, a.Num(0, left.span), left.span)
        column = None if timed else schema.index(attr)
        sign = Sign(attr, up, compile_condition(breaks, slots, schema), column, (attr, up) in known)
    dead = a.Compare(dead_op, left, right, left.span)
    return _Atom(compile_condition(dead, slots, schema), sign)


def _reads(expr: a.Expr, var: str) -> bool:
    return any(isinstance(n, a.Attr | a.Agg) and n.var == var for n in a.iter_expr(expr))


def _known_signs(branch: Branch, var: str) -> set[tuple[str, bool]]:
    """The attributes whose every element is non-negative (``(attr, True)``) or
    non-positive (``(attr, False)``) by an element-wise condition of ``var`` alone
    (``b[i].x >= 0``, ``b[i].x > 0``, ``0 >= b[i].x``)."""
    out = set()
    for cond in branch.conditions:
        if not _alone(cond, var):
            continue
        match cond.expr:
            case a.Compare(op, a.Attr(v, attr, a.Index.EACH), a.Num(c)) if v == var:
                pass
            case a.Compare(op, a.Num(c), a.Attr(v, attr, a.Index.EACH)) if v == var:
                op = _FLIPPED[op]
            case _:
                continue
        if op in (">=", ">", "=") and c >= 0:
            out.add((attr, True))
        if op in ("<=", "<", "=") and c <= 0:
            out.add((attr, False))
    return out


def _alone(cond: Condition, var: str) -> bool:
    return cond.iterates == var and not cond.from_second and cond.negated is None and cond.variables == {var}
