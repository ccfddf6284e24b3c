"""A bounded Kleene closure as its fixed lengths, for set-at-a-time evaluation.

Under skip-till-any-match, ``B{l,m} b[]`` binds any ``k`` of ``B``'s events (``l <= k <= m``)
in stream order, each subset a match of its own. For the columnar engine, which joins plain
variables, the branch is written once per length ``k``: ``b`` becomes ``b#1, ..., b#k`` (its
type and bit, each after the one before, each where ``b`` stands in the order), and each
condition that reads ``b`` is written for those: ``b[i]`` for every element, ``b[i-1]`` with
``b[i]`` for every two consecutive ones, ``b[1]`` and ``b[last]`` as the first and the last,
``count(b[])`` as ``k``. The matches of the lengths are the closure's (a subset has one
length), and ``b#1..b#k`` are folded back into ``b``'s run (``runtime.columnar``).

Not written so (None: the other engines take them): an unbounded closure, a pattern with an
OR, another Kleene variable or a selection strategy, an aggregate other than ``count(b[])``
or over ``b[..i-1]``, a negation whose conditions read ``b``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from cepcli.plan.pattern import Branch, Condition, Pattern, Role, Variable
from cepcli.query import ast as a

MOST = 8  # the longest closure written out (each length is a branch of its own)


@dataclass(frozen=True, slots=True)
class Closure:
    """A pattern's bounded Kleene variable ``name`` written as fixed lengths: ``pattern``
    has one branch per length, ``elements`` the names of ``b#1, b#2, ...`` (the longest)."""

    name: str
    pattern: Pattern
    elements: tuple[str, ...]


class _Unsupported(Exception):
    pass


def element(name: str, j: int) -> str:
    """The name of the ``j``-th element of Kleene variable ``name`` (from 1)."""
    return f"{name}#{j}"


def closure(pattern: Pattern) -> Closure | None:
    """``pattern`` with its bounded Kleene variable written as fixed lengths (see the
    module), or None where it is not written so."""
    if len(pattern.branches) != 1:
        return None
    branch = pattern.branches[0]
    kleene = [v for v in branch.positives if v.kleene]
    if len(kleene) != 1 or any(v.made_by for v in branch.negated):
        return None
    b = kleene[0]
    if b.hi is None or b.lo < 1 or b.hi > MOST:
        return None
    try:
        branches = tuple(_length(branch, b, k) for k in range(b.lo, b.hi + 1))
    except _Unsupported:
        return None
    elements = tuple(element(b.name, j) for j in range(1, b.hi + 1))
    plain = [Variable(n, b.type, Role.POSITIVE, b.bit, span=b.span) for n in elements]
    variables = tuple(v for v in pattern.variables if v.name != b.name) + tuple(plain)
    return Closure(b.name, replace(pattern, branches=branches, variables=variables), elements)


def _length(branch: Branch, b: Variable, k: int) -> Branch:
    """``branch`` with ``b`` as ``k`` plain variables."""
    names = [element(b.name, j) for j in range(1, k + 1)]
    order: set[tuple[str, str]] = set()
    for x, y in branch.order:
        left = names if x == b.name else [x]
        right = names if y == b.name else [y]
        order |= {(p, q) for p in left for q in right}
    order |= {(names[i], names[j]) for i in range(k) for j in range(i + 1, k)}
    conditions: list[Condition] = []
    for cond in branch.conditions:
        if b.name not in cond.variables and cond.iterates != b.name:
            conditions.append(cond)
            continue
        if cond.negated is not None:
            raise _Unsupported
        first = 2 if cond.from_second else 1
        each = cond.iterates == b.name
        for j in range(first, k + 1) if each else [k]:
            expr = _written(cond.expr, b.name, j, k)
            read = a.variables_of(expr)
            conditions.append(Condition(expr, read, prefilter=cond.prefilter and each, join=None))
    plain = [Variable(n, b.type, Role.POSITIVE, b.bit, span=b.span) for n in names]
    variables: list[Variable] = []
    for v in branch.variables:
        variables += plain if v.name == b.name else [v]
    return Branch(tuple(variables), frozenset(order), tuple(conditions), branch.equiv)


def _written(expr: a.Expr, b: str, j: int, k: int) -> a.Expr:
    """``expr`` of element ``j`` of ``k`` (``b[i]`` is ``b#j``, ``b[i-1]`` is ``b#(j-1)``)."""

    def leaf(node: a.Attr | a.Agg) -> a.Expr | None:
        match node:
            case a.Attr(var, attr, index, span) if var == b:
                at = {a.Index.EACH: j, a.Index.PREV: j - 1, a.Index.FIRST: 1, a.Index.LAST: k}[index]
                return a.Attr(element(b, at), attr, a.Index.PLAIN, span)
            case a.Agg(func, var, None, a.Scope.ALL, span) if var == b and func == "count":
                return a.Num(k, span)
            case a.Agg(_, var) if var == b:
                raise _Unsupported
        return None

    return a.transformed(expr, leaf)
