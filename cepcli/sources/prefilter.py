"""The vectorised prefilter: per chunk, which rows can each pattern variable use?

A row is kept for variable ``v`` when its type is ``v``'s type and it satisfies every
single-variable condition of ``v`` (SPEC section 3 keeps those in every branch that
binds ``v``). Conditions are evaluated with pandas over the whole chunk, with the
same NULL semantics as the runtime (negation normal form, missing -> false).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from cepcli.plan.nnf import to_nnf
from cepcli.plan.pattern import Pattern
from cepcli.query import ast as a

_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
_ARITH: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "%": operator.mod,
}


@dataclass(frozen=True, slots=True)
class VariableFilter:
    bit: int
    type: str
    conditions: tuple[a.Expr, ...]


@dataclass(frozen=True, slots=True)
class Prefilter:
    variables: tuple[VariableFilter, ...]
    columns: frozenset[str]  # columns the conditions read

    @classmethod
    def of(cls, pattern: Pattern) -> Prefilter:
        filters = tuple(
            VariableFilter(v.bit, v.type, tuple(to_nnf(c) for c in pattern.filters_of(v.name)))
            for v in pattern.variables
        )
        columns = frozenset(
            n.attr for f in filters for c in f.conditions for n in a.iter_expr(c) if isinstance(n, a.Attr)
        )
        return cls(filters, columns)

    def masks(self, types: pd.Series, frame: dict[str, pd.Series]) -> tuple[np.ndarray, int]:
        """Per row, the bit mask of variables that can use it; and the number of
        condition evaluations (rows x conditions) it took."""
        mask = np.zeros(len(types), dtype=np.int64)
        evaluations = 0
        for f in self.variables:
            hit = (types == f.type).to_numpy()
            if f.conditions and hit.any():
                rows = int(hit.sum())
                for cond in f.conditions:
                    evaluations += rows
                    hit &= _boolean(cond, frame).to_numpy()
            mask |= hit.astype(np.int64) << f.bit
        return mask, evaluations


def _boolean(expr: a.Expr, frame: dict[str, pd.Series]) -> pd.Series:
    index = next(iter(frame.values())).index
    match expr:
        case a.BoolOp("and", items):
            out = _boolean(items[0], frame)
            for item in items[1:]:
                out = out & _boolean(item, frame)
            return out
        case a.BoolOp("or", items):
            out = _boolean(items[0], frame)
            for item in items[1:]:
                out = out | _boolean(item, frame)
            return out
        case a.Bool(value):
            return pd.Series(value, index=index)
        case a.Compare(op, left, right):
            lhs, rhs = _value(left, frame), _value(right, frame)
            known = _known(lhs, index) & _known(rhs, index)
            if not known.any():
                return known
            try:
                result = _OPS[op](_filled(lhs, known), _filled(rhs, known))
            except TypeError:
                return pd.Series(False, index=index)
            return pd.Series(result, index=index).fillna(False).astype(bool) & known
    raise TypeError(expr)


def _value(expr: a.Expr, frame: dict[str, pd.Series]) -> Any:
    match expr:
        case a.Num(v) | a.Str(v) | a.Bool(v):
            return v
        case a.Attr(_, attr):
            return frame[attr]
        case a.Abs(operand):
            return abs(_value(operand, frame))
        case a.Minus(operand):
            return -_value(operand, frame)
        case a.Arith(op, left, right):
            lhs, rhs = _value(left, frame), _value(right, frame)
            if op in ("/", "%"):
                if isinstance(rhs, pd.Series):
                    rhs = rhs.where(rhs != 0)
                elif rhs == 0:
                    return np.nan
            return _ARITH[op](lhs, rhs)
    raise TypeError(expr)


def _known(value: Any, index: pd.Index) -> pd.Series:
    if isinstance(value, pd.Series):
        return value.notna()
    return pd.Series(value is not None and value == value, index=index)


def _filled(value: Any, known: pd.Series) -> Any:
    """Replace missing entries by a harmless placeholder; ``known`` masks them out."""
    if isinstance(value, pd.Series) and value.dtype == object:
        return value.where(known, "")
    return value
