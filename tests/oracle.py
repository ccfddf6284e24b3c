"""The brute-force reading of SPEC section 3: every assignment of events to the
variables of every DNF branch, kept when rules 1-6 hold. Exponential on purpose:
it is the written-down semantics the engines are compared with, not an engine.

It shares only the parser and the DNF normalisation with cepcli; it reads the CSV
with the csv module and interprets conditions by walking the AST (three-valued
logic, as SQL), independently of the compiled conditions and the prefilter.
"""

from __future__ import annotations

import csv
import io
from datetime import datetime
from itertools import combinations, product
from typing import Any

from cepcli.engines import compile_pattern
from cepcli.plan.pattern import Branch, Variable
from cepcli.query import ast as a

Row = dict[str, Any]  # column values, plus "_row" and "_ts"
MatchKey = frozenset[tuple[str, tuple[int, ...]]]


def read_rows(text: str, type_col: str = "type", time_col: str = "ts") -> list[Row]:
    records = list(csv.DictReader(io.StringIO(text)))
    columns = list(records[0]) if records else []
    numeric = {c: all(_is_number(r[c]) for r in records if r[c] != "") for c in columns}
    rows = []
    for i, record in enumerate(records):
        row: Row = {"_row": i}
        for c in columns:
            raw = record[c]
            if c == type_col:
                row[c] = raw
            elif raw == "":
                row[c] = None
            elif numeric[c]:
                row[c] = float(raw) if any(ch in raw for ch in ".eE") else int(raw)
            else:
                row[c] = raw
        stamp = record[time_col]
        row["_ts"] = float(stamp) if _is_number(stamp) else datetime.fromisoformat(stamp).timestamp()
        if row.get(time_col) is not None and numeric.get(time_col):
            row[time_col] = row["_ts"]
        rows.append(row)
    return rows


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def oracle(query_text: str, csv_text: str, type_col: str = "type", time_col: str = "ts") -> set[MatchKey]:
    """All matches of the query over the CSV, as sets of (variable, rows)."""
    _, pattern = compile_pattern(query_text)
    rows = read_rows(csv_text, type_col, time_col)
    found: set[MatchKey] = set()
    for branch in pattern.branches:
        found |= _branch_matches(branch, rows, pattern.window, type_col, time_col)
    return found


def _branch_matches(
    branch: Branch, rows: list[Row], window: float, type_col: str, time_col: str
) -> set[MatchKey]:
    choices = [_choices(v, rows, type_col) for v in branch.positives]
    out: set[MatchKey] = set()
    for picked in product(*choices):
        m = dict(zip((v.name for v in branch.positives), picked, strict=True))
        events = [e for group in picked for e in group]
        if len({e["_row"] for e in events}) != len(events):  # rule 2
            continue
        if not _ordered(branch, m):  # rule 3
            continue
        times = [e["_ts"] for e in events]
        if max(times) - min(times) > window:  # rule 4
            continue
        env = _Env(m, time_col)
        if not all(
            _holds(c.expr, c.iterates, c.from_second, env)
            for c in branch.conditions
            if not (set(c.variables) & {n.name for n in branch.negated})
        ):  # rule 5
            continue
        if branch.equiv and not _same(events, branch.equiv):
            continue
        if any(
            _violated(branch, n, m, events, rows, window, type_col, time_col) for n in branch.negated
        ):  # rule 6
            continue
        out.add(frozenset((name, tuple(e["_row"] for e in group)) for name, group in m.items()))
    return out


def _choices(v: Variable, rows: list[Row], type_col: str) -> list[tuple[Row, ...]]:
    of_type = [r for r in rows if r[type_col] == v.type]  # rule 1
    if not v.kleene:
        return [(r,) for r in of_type]
    hi = len(of_type) if v.hi is None else min(v.hi, len(of_type))
    return [c for k in range(v.lo, hi + 1) for c in combinations(of_type, k)]


def _ordered(branch: Branch, m: dict[str, tuple[Row, ...]]) -> bool:
    for x, y in branch.order:
        if x in m and y in m and max(e["_row"] for e in m[x]) >= min(e["_row"] for e in m[y]):
            return False
    return True


def _same(events: list[Row], attrs: tuple[str, ...]) -> bool:
    for attr in attrs:
        values = [e.get(attr) for e in events]
        if any(v is None for v in values) or len(set(values)) != 1:
            return False
    return True


def _violated(
    branch: Branch,
    n: Variable,
    m: dict[str, tuple[Row, ...]],
    events: list[Row],
    rows: list[Row],
    window: float,
    type_col: str,
    time_col: str,
) -> bool:
    assigned = {e["_row"] for e in events}
    for e in rows:
        if e[type_col] != n.type or e["_row"] in assigned:
            continue
        if any(x in m and max(r["_row"] for r in m[x]) >= e["_row"] for x, y in branch.order if y == n.name):
            continue
        if any(y in m and min(r["_row"] for r in m[y]) <= e["_row"] for x, y in branch.order if x == n.name):
            continue
        times = [r["_ts"] for r in events] + [e["_ts"]]
        if max(times) - min(times) > window:
            continue
        env = _Env({**m, n.name: (e,)}, time_col)
        if not all(
            _holds(c.expr, c.iterates, c.from_second, env) for c in branch.conditions if n.name in c.variables
        ):
            continue
        if branch.equiv and not _same(events + [e], branch.equiv):
            continue
        return True
    return False


class _Env:
    """What a condition sees: the match, and for iteration the current element."""

    def __init__(self, m: dict[str, tuple[Row, ...]], time_col: str) -> None:
        self.m = m
        self.time_col = time_col
        self.cur: Row | None = None
        self.prev: Row | None = None
        self.prefix: tuple[Row, ...] = ()

    def value(self, row: Row, attr: str) -> Any:
        return row["_ts"] if attr == self.time_col else row.get(attr)


def _holds(expr: a.Expr, iterates: str | None, from_second: bool, env: _Env) -> bool:
    if iterates is None:
        return _eval(expr, env) is True
    elements = env.m[iterates]
    for j, element in enumerate(elements):
        if from_second and j == 0:
            continue
        env.cur, env.prev, env.prefix = element, elements[j - 1] if j else None, elements[:j]
        if _eval(expr, env) is not True:
            return False
    return True


def _eval(expr: a.Expr, env: _Env) -> Any:
    """Three-valued: None is SQL's unknown/missing."""
    match expr:
        case a.Num(v) | a.Str(v) | a.Bool(v):
            return v
        case a.Attr(var, attr, a.Index.PLAIN):
            return env.value(env.m[var][0], attr)
        case a.Attr(var, attr, a.Index.EACH):
            assert env.cur is not None
            return env.value(env.cur, attr)
        case a.Attr(var, attr, a.Index.PREV):
            return None if env.prev is None else env.value(env.prev, attr)
        case a.Attr(var, attr, a.Index.FIRST):
            return env.value(env.m[var][0], attr)
        case a.Attr(var, attr, a.Index.LAST):
            return env.value(env.m[var][-1], attr)
        case a.Agg(func, var, attr, scope):
            events = env.m[var] if scope is a.Scope.ALL else env.prefix
            if attr is None:
                return len(events)
            values = [v for v in (env.value(e, attr) for e in events) if v is not None]
            if func == "count":
                return len(values)
            if not values:
                return None
            return {
                "avg": lambda: sum(values) / len(values),
                "sum": lambda: sum(values),
                "min": lambda: min(values),
                "max": lambda: max(values),
            }[func]()
        case a.Abs(operand):
            v = _eval(operand, env)
            return None if v is None else abs(v)
        case a.Minus(operand):
            v = _eval(operand, env)
            return None if v is None else -v
        case a.Arith(op, left, right):
            x, y = _eval(left, env), _eval(right, env)
            if x is None or y is None or (op in "/%" and y == 0):
                return None
            return (
                {"+": x + y, "-": x - y, "*": x * y}.get(op)
                if op in "+-*"
                else (x / y if op == "/" else x % y)
            )
        case a.Compare(op, left, right):
            x, y = _eval(left, env), _eval(right, env)
            if x is None or y is None:
                return None
            try:
                return {"=": x == y, "!=": x != y, "<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}[op]
            except TypeError:
                return None
        case a.Not(operand):
            v = _eval(operand, env)
            return None if v is None else not v
        case a.BoolOp("and", items):
            values = [_eval(i, env) for i in items]
            return False if False in values else (None if None in values else True)
        case a.BoolOp("or", items):
            values = [_eval(i, env) for i in items]
            return True if True in values else (None if None in values else False)
    raise TypeError(expr)
