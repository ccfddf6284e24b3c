"""The Python lowering of a condition: compiled to a Python function once per process
(per condition, slots and schema), for the runtimes. Its input is a lowered condition
(``Condition.expr``: negation normal form).

A compiled condition is ``fn(m, cur, prev, pre) -> bool``: ``m`` is the partial match
indexed by slot (an ``Event``, or a tuple of events for a Kleene variable), and for a
condition that iterates over a Kleene variable, ``cur``/``prev`` are the current and
previous element and ``pre`` the elements before the current one. Missing values
follow SQL: a comparison that touches one is false (see ``plan.nnf``); division by
zero counts as missing, and so does a NaN that arithmetic makes (``inf - inf``).

This is the reference meaning of the condition language: exact integer arithmetic
(Python ints), IEEE doubles, exact comparisons between them, decimals as exact fractions,
and times and durations as exact numbers of time units (an int, or a ``Fraction`` for a
time between two units).

Exact numbers stay exact (``_div``, ``_avg``, ``_sum``): ``/`` of two exact numbers (ints,
decimals, times, durations) is their exact quotient (an int when whole, else a
``Fraction``), and ``avg`` of exact numbers their exact mean; a float on either side makes
``/`` (and a float among the values makes ``avg``) IEEE arithmetic. ``sum`` of ints is an
exact int. A number literal is the decimal it is written as (``0.1`` is one tenth) in
every comparison but one that reads a float column and no decimal, time or duration (or a
column whose kind is not decided): there it is its double, as the float column is.
``a.ts = 14.067`` is true for the event at 14.067 s, whatever the time unit.

The vectorised lowering (``plan.arrow``) is the other one of the same form, and leaves
to these functions every row where it could differ.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Any

from cepcli.clock import to_units
from cepcli.events import Kind, Schema
from cepcli.query import ast as a

CompiledCondition = Callable[..., bool]

_PY_OPS = {"=": "==", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def _values(items: Sequence[Any]) -> list[Any]:
    return [v for v in items if v is not None]


def _exact_number(value: Any) -> bool:
    return isinstance(value, int | Fraction)


def _div(x: Any, y: Any) -> Any:
    """``x / y``: exact for exact numbers (an int when whole, else a ``Fraction``), IEEE
    when a float is either (the caller has ruled out ``y == 0``)."""
    if _exact_number(x) and _exact_number(y):
        q = Fraction(x, y)
        return q.numerator if q.denominator == 1 else q
    return x / y


def _avg(items: Sequence[Any]) -> Any:
    vals = _values(items)
    if not vals:
        return None
    return _div(sum(vals), len(vals))


def _sum(items: Sequence[Any]) -> Any:
    vals = _values(items)
    return sum(vals) if vals else None


def _min(items: Sequence[Any]) -> Any:
    vals = _values(items)
    return min(vals) if vals else None


def _max(items: Sequence[Any]) -> Any:
    vals = _values(items)
    return max(vals) if vals else None


def _count(items: Sequence[Any]) -> int:
    return len(_values(items))


def _exact(value: Any) -> Any:
    """A decimal (a ``Decimal``, or its text as written) as an exact number: an int when
    whole, else a ``Fraction`` (which compares and computes exactly with ints and floats)."""
    if value is None or isinstance(value, int | float):
        return value
    number = Fraction(Decimal(value))
    return number.numerator if number.denominator == 1 else number


def literals_exact(compare: a.Expr, schema: Schema) -> bool:
    """Are number literals the decimals they are written as in this comparison: it reads a
    decimal, a time or a duration, or no float column (nor one whose kind is not decided)?"""
    kinds = [
        schema.kind(n.attr)
        for n in a.iter_expr(compare)
        if isinstance(n, a.Attr | a.Agg) and n.attr is not None
    ]
    if any(k is Kind.DECIMAL or k.timed for k in kinds):
        return True
    return all(k in (Kind.INT, Kind.BOOL, Kind.STR) for k in kinds)


def inexact_literal(value: object) -> bool:
    """A float literal whose double is not the decimal it is written as (``0.1``)."""
    return (
        isinstance(value, float)
        and value == value
        and abs(value) != float("inf")
        and Fraction(repr(value)) != value
    )


_HELPERS: dict[str, Any] = {
    "_avg": _avg,
    "_sum": _sum,
    "_min": _min,
    "_max": _max,
    "_count": _count,
    "_exact": _exact,
    "_div": _div,
}


@dataclass
class _Codegen:
    slots: dict[str, int]
    schema: Schema
    guards: list[str] = field(default_factory=list)
    temps: int = 0
    exact: bool = False  # in a comparison that reads a decimal: number literals are exact
    constants: dict[str, Any] = field(default_factory=dict)

    def timed(self, attr: str) -> bool:
        """Does the attribute hold a time or a duration (int nanoseconds, seen in time units)?"""
        return attr == self.schema.time_col or self.schema.kind(attr).timed

    def temp(self, code: str, guard: str) -> str:
        """``code`` computed once into a temporary, which ``guard`` must hold for (the
        comparison is false otherwise); ``{}`` in ``guard`` stands for its name."""
        name = f"_v{self.temps}"
        self.temps += 1
        self.guards.append(f"({name} := {code}){guard.format(name)}")
        return name

    def decimal(self, attr: str) -> bool:
        return attr != self.schema.time_col and self.schema.kind(attr) is Kind.DECIMAL

    def field(self, event: str, attr: str) -> str:
        if attr == self.schema.time_col:
            return f"_time({event}.ts)"
        raw = f"{event}.values[{self.schema.index(attr)}]"
        if self.decimal(attr):
            return f"_exact({raw})"
        return f"_time_or_none({raw})" if self.timed(attr) else raw

    def value(self, expr: a.Expr) -> str:
        match expr:
            case a.Num(v):
                if self.exact and inexact_literal(v):
                    name = f"_c{len(self.constants)}"
                    self.constants[name] = Fraction(repr(v))  # the literal as written: 0.1 is 1/10
                    return name
                return repr(v)
            case a.Str(v) | a.Bool(v):
                return repr(v)
            case a.Attr(var, attr, index):
                event = {
                    a.Index.PLAIN: f"m[{self.slots[var]}]",
                    a.Index.EACH: "cur",
                    a.Index.PREV: "prev",
                    a.Index.FIRST: f"m[{self.slots[var]}][0]",
                    a.Index.LAST: f"m[{self.slots[var]}][-1]",
                }[index]
                if attr == self.schema.time_col:
                    return f"_time({event}.ts)"  # a timestamp is never missing
                return self.temp(self.field(event, attr), " is not None")
            case a.Agg(func, var, attr, scope):
                events = f"m[{self.slots[var]}]" if scope is a.Scope.ALL else "pre"
                if attr is None:
                    return f"len({events})"
                items = f"[{self.field('e_', attr)} for e_ in {events}]"
                return self.temp(f"_{func}({items})", " is not None")
            case a.Abs(operand):
                return f"abs({self.value(operand)})"
            case a.Minus(operand):
                return f"(-{self.value(operand)})"
            case a.Arith(op, left, right):
                lhs = self.value(left)
                rhs = self.value(right)
                if op in ("/", "%"):
                    rhs = self.temp(rhs, " != 0")
                if op == "/":
                    return self.temp(f"_div({lhs}, {rhs})", " == {}")  # not NaN
                return self.temp(f"({lhs} {op} {rhs})", " == {}")  # not NaN
        raise TypeError(expr)

    def boolean(self, expr: a.Expr) -> str:
        match expr:
            case a.BoolOp(op, items):
                return "(" + f" {op} ".join(self.boolean(i) for i in items) + ")"
            case a.Bool(value):
                return repr(value)
            case a.Compare(op, left, right):
                outer = self.guards
                self.guards = []
                self.exact = literals_exact(expr, self.schema)
                code = f"{self.value(left)} {_PY_OPS[op]} {self.value(right)}"
                guards, self.guards = self.guards, outer
                return "(" + " and ".join([*guards, code]) + ")"
        raise TypeError(expr)


_COMPILED: dict[tuple[object, ...], CompiledCondition] = {}  # the functions are pure: shared
_COMPILED_KEPT = 4096


def compile_condition(expr: a.Expr, slots: dict[str, int], schema: Schema) -> CompiledCondition:
    """One Python function for one condition; ``slots`` maps variable names to ``m`` indexes.
    Compiled once per (condition, slots, schema): the adaptive engine builds a runtime per
    time segment."""
    key = (expr, tuple(sorted(slots.items())), schema)
    fn = _COMPILED.get(key)
    if fn is None:
        if len(_COMPILED) >= _COMPILED_KEPT:
            _COMPILED.clear()
        fn = _COMPILED[key] = _compile(expr, slots, schema)
    return fn


def _compile(expr: a.Expr, slots: dict[str, int], schema: Schema) -> CompiledCondition:
    unit = schema.time_unit
    gen = _Codegen(slots, schema)
    body = gen.boolean(expr)
    source = (
        "def condition(m, cur=None, prev=None, pre=()):\n"
        "    try:\n"
        f"        return {body}\n"
        "    except (TypeError, OverflowError):\n"  # text vs number; an int too big for a float
        "        return False\n"
    )
    namespace: dict[str, Any] = dict(_HELPERS)
    namespace.update(gen.constants)
    namespace["_time"] = lambda ns: to_units(ns, unit)
    namespace["_time_or_none"] = lambda ns: None if ns is None else to_units(ns, unit)
    exec(compile(source, f"<condition {expr.span.line}:{expr.span.col}>", "exec"), namespace)
    fn: CompiledCondition = namespace["condition"]
    fn.__doc__ = source
    return fn
