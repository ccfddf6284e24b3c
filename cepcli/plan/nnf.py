"""Negation normal form for conditions, which gives SQL NULL semantics cheaply.

With NOT pushed down to the comparisons (``NOT x < y`` becomes ``x >= y``), a formula
is monotone in its comparisons, so SQL's three-valued result is true exactly when the
two-valued one is true with every comparison that touches a missing value taken as
false. Runtimes can then evaluate with plain ``and``/``or``.
"""

from __future__ import annotations

from cepcli.query import ast as a

_NEGATED_OP = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}


def to_nnf(expr: a.Expr, negate: bool = False) -> a.Expr:
    match expr:
        case a.Not(operand):
            return to_nnf(operand, not negate)
        case a.BoolOp(op, items):
            flipped = {"and": "or", "or": "and"}[op] if negate else op
            return a.BoolOp(flipped, tuple(to_nnf(i, negate) for i in items), expr.span)
        case a.Compare(op, left, right):
            return a.Compare(_NEGATED_OP[op], left, right, expr.span) if negate else expr
        case a.Bool(value):
            return a.Bool(value != negate, expr.span)
    if negate:
        raise TypeError(f"cannot negate {expr}")
    return expr
