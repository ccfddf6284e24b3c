"""The vectorised lowering of a condition: evaluated over the Arrow columns of a whole
batch at once (pyarrow compute), in negation normal form, with the missing-value rule of
the language (a comparison that touches a missing value is false: ``fill_null(False)``).

The compiled conditions (``plan.python``) are the reference. Where the vectorised
arithmetic could differ from them, the rows are marked *unsure*, and the caller has the
reference decide them, one row at a time: an int64 overflow (the reference computes with
exact integers), an integer beyond 2^53 meeting a float or a true division (the reference
compares exactly), a true division of integers whose quotient is no integer (the
reference's is an exact fraction), a ``%`` with a non-finite operand, a number literal
inside arithmetic whose double is not the decimal it is written as, in a comparison where
the reference reads it as written, a
time that falls between two time units (the reference uses an exact fraction), and a
column of another type than those computed here exactly (decimals, uint64, a pipe's
column not decided yet). So both give the same answer on every value;
``tests/test_prefilter.py`` checks it on random values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cepcli.arrays import arrow
from cepcli.events import Kind, Schema
from cepcli.plan.python import inexact_literal, literals_exact
from cepcli.query import ast as a

_EXACT = 2**53  # integers up to this convert to float64 exactly
_CMP = {
    "=": pc.equal,
    "!=": pc.not_equal,
    "<": pc.less,
    "<=": pc.less_equal,
    ">": pc.greater,
    ">=": pc.greater_equal,
}
_ARITH = {"+": pc.add_checked, "-": pc.subtract_checked, "*": pc.multiply_checked}
_UNSURE = (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, OverflowError)
_VECTORISED = (pa.int64(), pa.float64(), pa.bool_(), pa.string())  # the types computed here exactly


class Frame:
    """What the conditions read, row by row: ``column(var, attr)`` the values of a
    variable's attribute, ``times(var)`` its events' times (int64 nanoseconds). One row is
    one event (the prefilter: every variable is the row's event) or one tuple of events (a
    partial match of the columnar engine)."""

    def __init__(
        self,
        size: int,
        schema: Schema,
        column: Callable[[str, str], pa.Array],
        times: Callable[[str], np.ndarray],
    ) -> None:
        self.size = size
        self.schema = schema
        self.column = column
        self.times = times

    @classmethod
    def of_events(cls, columns: Mapping[str, pa.Array], ts: np.ndarray, schema: Schema) -> Frame:
        """Rows that are single events (every variable reads the same row)."""
        return cls(len(ts), schema, lambda var, attr: columns[attr], lambda var: ts)

    def value(self, var: str, attr: str) -> tuple[pa.Array, np.ndarray | None]:
        """A column's values (times in time units, whole ones only: the others unsure)."""
        schema = self.schema
        if attr == schema.time_col:
            return _units(arrow(self.times(var)), schema.time_unit)
        column = self.column(var, attr)
        kind = schema.kind(attr)
        if kind.timed:
            return _units(column, schema.time_unit)
        if kind is Kind.DECIMAL or column.type not in _VECTORISED:
            # exact decimals, uint64 beyond int64, a pipe's column not decided yet: the
            # compiled condition decides every row
            return pa.nulls(self.size, pa.float64()), _all(self)
        return column, None


def _units(ns: pa.Array, unit: int) -> tuple[pa.Array, np.ndarray | None]:
    if unit == 1:
        return ns, None
    whole = pc.divide(ns, unit)  # int64 division truncates; exact where no remainder
    rest = pc.subtract(ns, pc.multiply(whole, unit))
    unsure = pc.fill_null(pc.not_equal(rest, 0), False).to_numpy(zero_copy_only=False)
    return whole, (unsure if unsure.any() else None)


def _either(x: np.ndarray | None, y: np.ndarray | None) -> np.ndarray | None:
    if x is None:
        return y
    return x if y is None else x | y


def _all(frame: Frame) -> np.ndarray:
    return np.ones(frame.size, dtype=bool)


def evaluate(expr: a.Expr, frame: Frame) -> tuple[np.ndarray, np.ndarray | None]:
    """A condition in negation normal form: where it holds, and the unsure rows."""
    match expr:
        case a.BoolOp(op, items):
            result, unsure = evaluate(items[0], frame)
            for item in items[1:]:
                other, other_unsure = evaluate(item, frame)
                result = result & other if op == "and" else result | other
                unsure = _either(unsure, other_unsure)
            return result, unsure
        case a.Bool(value):
            return np.full(frame.size, value, dtype=bool), None
        case a.Compare(op, left, right):
            if _literal_in_arithmetic(expr, frame):
                return np.zeros(frame.size, dtype=bool), _all(frame)
            (lhs, lu), (rhs, ru) = _value(left, frame), _value(right, frame)
            unsure = _either(lu, ru)
            try:
                result = _CMP[op](lhs, rhs)
            except _UNSURE:
                return np.zeros(frame.size, dtype=bool), _all(frame)
            unsure = _either(unsure, _mixed(lhs, rhs, frame))
            unsure = _either(unsure, _the_double(expr, lhs, rhs, frame))
            if isinstance(result, pa.Scalar):  # constants on both sides
                return np.full(frame.size, result.as_py() is True, dtype=bool), unsure
            out = pc.fill_null(result, False)
            return np.asarray(out.to_numpy(zero_copy_only=False), dtype=bool), unsure
    raise TypeError(expr)


def _literal_in_arithmetic(compare: a.Compare, frame: Frame) -> bool:
    """A literal such as ``0.1`` inside arithmetic, where the reference computes with the
    decimal it is written as (``literals_exact``) and this lowering with its double. (As a
    side of the comparison itself, its double compares as the decimal does with every
    double but itself, and with every integer up to 2^53: the others are unsure already.)"""
    inner = [
        n for side in (compare.left, compare.right) if not isinstance(side, a.Num) for n in a.iter_expr(side)
    ]
    return any(isinstance(n, a.Num) and inexact_literal(n.value) for n in inner) and literals_exact(
        compare, frame.schema
    )


def _the_double(compare: a.Compare, lhs: object, rhs: object, frame: Frame) -> np.ndarray | None:
    """A side that is a literal such as ``0.1``, read as written by the reference, and a
    double on the other side equal to its double: only the reference says they differ."""
    for side, other in ((compare.left, rhs), (compare.right, lhs)):
        if (
            isinstance(side, a.Num)
            and inexact_literal(side.value)
            and isinstance(other, pa.Array)
            and pa.types.is_floating(other.type)
            and literals_exact(compare, frame.schema)
        ):
            same = pc.fill_null(pc.equal(other, side.value), False).to_numpy(zero_copy_only=False)
            if same.any():
                return np.asarray(same, dtype=bool)
    return None


def _value(expr: a.Expr, frame: Frame) -> tuple[pa.Array | pa.Scalar, np.ndarray | None]:
    match expr:
        case a.Num(v):
            if isinstance(v, int) and not -(2**63) <= v < 2**63:
                return pa.scalar(float(v)), _all(frame)  # beyond int64: only the reference is exact
            return pa.scalar(v), None
        case a.Str(v) | a.Bool(v):
            return pa.scalar(v), None
        case a.Attr(var, attr):
            return frame.value(var, attr)
        case a.Abs(operand) | a.Minus(operand):
            value, unsure = _value(operand, frame)
            fn = pc.abs_checked if isinstance(expr, a.Abs) else pc.negate_checked
            try:
                return fn(value), unsure
            except _UNSURE:  # an int64 overflow, or no kernel (a boolean): the reference decides
                return pa.nulls(frame.size, pa.float64()), _all(frame)
        case a.Arith(op, left, right):
            (lhs, lu), (rhs, ru) = _value(left, frame), _value(right, frame)
            unsure = _either(lu, ru)
            try:
                result, more = _arith(op, lhs, rhs, frame)
            except _UNSURE:
                return pa.nulls(frame.size, pa.float64()), _all(frame)
            return _not_nan(result), _either(unsure, more)
    raise TypeError(expr)


def _arith(op: str, lhs: object, rhs: object, frame: Frame) -> tuple[pa.Array, np.ndarray | None]:
    if op in _ARITH:
        return _ARITH[op](lhs, rhs), None
    zero = pc.fill_null(pc.equal(rhs, 0), False)
    divisor = pc.if_else(zero, pa.scalar(None, _type(rhs)), rhs)  # by zero: missing
    if op == "/":
        unsure = _either(_big(lhs, frame), _big(rhs, frame))
        if pa.types.is_integer(_type(lhs)) and pa.types.is_integer(_type(divisor)):
            unsure = _either(unsure, _inexact(lhs, divisor, frame))
        return pc.divide(pc.cast(lhs, pa.float64()), pc.cast(divisor, pa.float64())), unsure
    x, y = _numpy(lhs, frame), _numpy(divisor, frame)
    with np.errstate(all="ignore"):
        out = np.remainder(x[0], y[0])
    unsure = None
    if x[0].dtype.kind == "f" or y[0].dtype.kind == "f":
        unsure = ~(np.isfinite(x[0]) & np.isfinite(y[0])) & ~(x[1] | y[1])
    return pa.array(out, mask=x[1] | y[1]), unsure


def _inexact(lhs: object, divisor: object, frame: Frame) -> np.ndarray | None:
    """Integers whose quotient is no integer: the reference's is an exact fraction, which
    a double need not be (the whole quotients of integers up to 2^53 are doubles exactly)."""
    x, y = _numpy(lhs, frame), _numpy(divisor, frame)
    present = ~(x[1] | y[1])
    with np.errstate(all="ignore"):
        rest = np.remainder(x[0], np.where(present & (y[0] != 0), y[0], 1))
    found = present & (rest != 0)
    return found if found.any() else None


def _type(value: object) -> pa.DataType:
    return value.type  # type: ignore[attr-defined]


def _numpy(value: object, frame: Frame) -> tuple[np.ndarray, np.ndarray]:
    """Values and missing mask as numpy (0 where missing)."""
    if isinstance(value, pa.Scalar):
        raw = value.as_py()
        return np.full(frame.size, 0 if raw is None else raw), np.full(frame.size, raw is None)
    assert isinstance(value, pa.Array)
    missing = value.is_null().to_numpy(zero_copy_only=False)
    filled = value.fill_null(0 if not pa.types.is_floating(value.type) else 0.0)
    return filled.to_numpy(zero_copy_only=False), np.asarray(missing, dtype=bool)


def _big(value: object, frame: Frame) -> np.ndarray | None:
    """Integers beyond 2^53 (they do not convert to float64 exactly)."""
    if not pa.types.is_integer(_type(value)):
        return None
    if isinstance(value, pa.Scalar):
        big = abs(value.as_py() or 0) > _EXACT
        return _all(frame) if big else None
    over = pc.fill_null(pc.greater(pc.abs_checked(pc.cast(value, pa.float64())), float(_EXACT)), False)
    found = over.to_numpy(zero_copy_only=False)
    return found if found.any() else None


def _mixed(lhs: object, rhs: object, frame: Frame) -> np.ndarray | None:
    """An integer compared with a float converts to float64: unsure beyond 2^53."""
    lt, rt = _type(lhs), _type(rhs)
    if pa.types.is_integer(lt) and pa.types.is_floating(rt):
        return _big(lhs, frame)
    if pa.types.is_floating(lt) and pa.types.is_integer(rt):
        return _big(rhs, frame)
    return None


def _not_nan(values: pa.Array) -> pa.Array:
    """A NaN that arithmetic makes (``inf - inf``) is missing, as in the reference."""
    if not pa.types.is_floating(values.type):
        return values
    nan = pc.fill_null(pc.is_nan(values), False)
    return pc.if_else(nan, pa.scalar(None, values.type), values)
