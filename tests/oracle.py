"""The brute-force reading of docs/semantics.md section 6: every assignment of events to the
variables of every DNF branch, kept when rules 1-6 hold. Exponential on purpose:
it is the written-down semantics the engines are compared with, not an engine.

It shares only the parser and the DNF normalisation with cepcli; it reads the CSV
with the csv module and interprets conditions by walking the AST (three-valued
logic, as SQL), independently of the compiled conditions and the prefilter.

Times are exact integer nanoseconds, read here by their own rules (docs/semantics.md section 1):
numbers as decimals in ``time_unit``, ISO-8601 date-times to the nanosecond, with a
zone converted to UTC and none taken as UTC. In a condition a time is an exact number
of time units (a ``Fraction``). Null markers (docs/semantics.md section 3) are missing in columns
whose other values are numbers or booleans, and in columns with no other value (a missing
value never decides a kind: such a column has none).
"""

from __future__ import annotations

import csv
import functools
import io
import re
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from itertools import combinations, pairwise, product
from typing import Any

from cepcli.engines import compile_pattern
from cepcli.plan.pattern import Branch, Variable
from cepcli.query import ast as a
from cepcli.query.parser import parse_query

Row = dict[str, Any]  # column values, plus "_row" and "_ts"
MatchKey = frozenset[tuple[str, tuple[int, ...]]]


# The markers pandas and pyarrow read as missing (docs/semantics.md section 3: NA, N/A, NaN, null...).
NULLS = {
    "",
    "#N/A",
    "#N/A N/A",
    "#NA",
    "-1.#IND",
    "-1.#QNAN",
    "-NaN",
    "-nan",
    "1.#IND",
    "1.#QNAN",
    "<NA>",
    "N/A",
    "NA",
    "NULL",
    "NaN",
    "None",
    "n/a",
    "nan",
    "null",
}
UNITS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}


def read_rows(text: str, type_col: str = "type", time_col: str = "ts", time_unit: str = "s") -> list[Row]:
    records = list(csv.DictReader(io.StringIO(text)))
    columns = list(records[0]) if records else []
    kinds = {c: _kind([r[c] for r in records if r[c] not in NULLS]) for c in columns}
    unit = UNITS[time_unit]
    rows = []
    for i, record in enumerate(records):
        row: Row = {"_row": i}
        for c in columns:
            raw = record[c]
            if c == type_col:
                row[c] = raw
            elif raw == "" or (kinds[c] != "text" and raw in NULLS):
                row[c] = None
            elif kinds[c] == "int":
                row[c] = int(raw)
            elif kinds[c] == "float":
                row[c] = float(raw)
            elif kinds[c] == "bool":
                row[c] = raw.lower() == "true"
            else:
                row[c] = raw
        row["_ts"] = nanoseconds(record[time_col], unit)
        rows.append(row)
    return rows


def _kind(values: list[str]) -> str:
    if not values:
        return "none"
    if all(re.fullmatch(r"[+-]?\d+", v) for v in values):
        return "int"
    if all(_is_float(v) for v in values):
        return "float"
    if all(v.lower() in ("true", "false") for v in values):
        return "bool"
    return "text"


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return "_" not in text


def nanoseconds(text: str, unit: int = 10**9) -> int:
    """A timestamp as exact int nanoseconds: a decimal number of ``unit``, or ISO-8601."""
    try:
        number = Decimal(text)
    except InvalidOperation:
        return _iso_nanoseconds(text)
    ns = Fraction(number) * unit
    assert ns.denominator == 1, f"{text} is finer than a nanosecond"
    return int(ns)


def _iso_nanoseconds(text: str) -> int:
    """ISO-8601 to nanoseconds since the epoch; a time without a zone is UTC."""
    found = re.fullmatch(r"(.*?\d\d:\d\d(?::\d\d)?)(?:[.,](\d+))?((?:[Zz]|[+-]\d\d(?::?\d\d)?)?)", text)
    base, fraction, zone = found.groups() if found else (text, None, "")
    stamp = datetime.fromisoformat(base + (zone or "").replace("z", "Z"))
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    delta = stamp - epoch
    whole = (delta.days * 86400 + delta.seconds) * 10**9 + delta.microseconds * 1000
    return whole + (int((fraction or "").ljust(9, "0")[:9]) if fraction else 0)


def oracle(
    query_text: str, csv_text: str, type_col: str = "type", time_col: str = "ts", time_unit: str = "s"
) -> set[MatchKey]:
    """All matches of the query over the CSV, as sets of (variable, rows). Worked out once
    per test process for the same arguments (a test asks again for the same stream under
    each engine and each setting): a pure function of them, each caller given its own set."""
    return set(_matches(query_text, csv_text, type_col, time_col, time_unit))


@functools.lru_cache(maxsize=512)
def _matches(
    query_text: str, csv_text: str, type_col: str, time_col: str, time_unit: str
) -> frozenset[MatchKey]:
    unit = UNITS[time_unit]
    query = parse_query(query_text)
    # section 3's matches first (the strategy left out of the pattern: it would add its
    # negations), then the strategy's rule, read here as section 7 writes it
    _, pattern = compile_pattern(
        query_text, time_unit=unit, parsed=replace(query, strategy="skip_till_any_match", strategy_vars=())
    )
    rows = read_rows(csv_text, type_col, time_col, time_unit)
    found: set[MatchKey] = set()
    for branch in pattern.branches:
        for key in _branch_matches(branch, rows, pattern.window, type_col, time_col, unit):
            if _strategy_holds(query, branch, key, rows, type_col, time_col, unit):
                found.add(key)
    return frozenset(found)


def _strategy_holds(
    query: a.Query, branch: Branch, key: MatchKey, rows: list[Row], type_col: str, time_col: str, unit: int
) -> bool:
    """Section 7: for consecutive positive variables u, v of the SEQ (both listed, or all),
    no row strictly between their events (stream order; a Kleene variable's last and first)
    that is
    * skip_till_next_match: of v's type, and satisfies every conjunct that mentions v and
      only variables at or before u ([attr] too: equal to u's value);
    * strict_contiguity: any row;
    * partition_contiguity: a row with u's [attr] value(s).
    A listed Kleene variable's run is contiguous under the contiguities (no row, or none of
    its key, between two of its elements) and one run of next qualifying events under
    skip_till_next_match (``_one_run``)."""
    if query.strategy == "skip_till_any_match":
        return True
    by_row = {r["_row"]: r for r in rows}
    m = {name: tuple(by_row[r] for r in rs) for name, rs in key}
    seq = sorted(branch.positives, key=lambda v: sum(1 for x, y in branch.order if y == v.name))
    listed = set(query.strategy_vars) or {v.name for v in seq}
    for i in range(len(seq) - 1):
        u, v = seq[i], seq[i + 1]
        if u.name not in listed or v.name not in listed:
            continue
        e_u, e_v = m[u.name][-1], m[v.name][0]
        between = [r for r in rows if _key(e_u) < _key(r) < _key(e_v)]
        if _a_row_between(query.strategy, e_u, between, branch.equiv):
            return False
        if query.strategy == "skip_till_next_match":
            earlier = {x.name for x in seq[: i + 1]} | {v.name}
            own = [c for c in a.conjuncts(query.where) if not isinstance(c, a.Equiv)]
            mine = [c for c in own if v.name in a.variables_of(c) and a.variables_of(c) <= earlier]
            if v.kleene:  # what decides its first element: the conjuncts on v[i] and v[1]
                mine = [c for c in mine if _refs(c, v.name) <= {a.Index.EACH, a.Index.FIRST}]
            for r in between:
                if r[type_col] != v.type:
                    continue
                env = _Env({**m, v.name: (r,)}, time_col, unit)
                env.cur = r
                if all(_eval(c, env) is True for c in mine) and (
                    not branch.equiv or _same([e_u, r], branch.equiv)
                ):
                    return False
    for b in seq:  # the contiguities: a Kleene variable's run is contiguous (of its key)
        if query.strategy == "skip_till_next_match" or not b.kleene or b.name not in listed:
            continue
        run = sorted(m[b.name], key=_key)
        for e, f in pairwise(run):
            between = [r for r in rows if _key(e) < _key(r) < _key(f)]
            if _a_row_between(query.strategy, e, between, branch.equiv):
                return False
    if query.strategy == "skip_till_next_match":
        for i, b in enumerate(seq):
            if not b.kleene or b.name not in listed:
                continue
            if not _one_run(query, branch, seq, i, m, rows, type_col, time_col, unit):
                return False
    return True


def _a_row_between(strategy: str, e: Row, between: list[Row], equiv: tuple[str, ...]) -> bool:
    """Whether a contiguity forbids these rows after ``e``: any row (strict), or one with
    ``e``'s ``[attr]`` value(s) (partition)."""
    if strategy == "strict_contiguity":
        return bool(between)
    return strategy == "partition_contiguity" and any(_same([e, r], equiv) for r in between)


def _refs(expr: a.Expr, var: str) -> set[a.Index | a.Scope]:
    """How ``expr`` reads ``var``: ``b[i]``, ``b[i-1]``, ``b[1]``, ``b[last]``, ``b[]``..."""
    return {
        node.index if isinstance(node, a.Attr) else node.scope
        for node in a.iter_expr(expr)
        if isinstance(node, a.Attr | a.Agg) and node.var == var
    }


def _one_run(
    query: a.Query,
    branch: Branch,
    seq: list[Variable],
    i: int,
    m: dict[str, tuple[Row, ...]],
    rows: list[Row],
    type_col: str,
    time_col: str,
    unit: int,
) -> bool:
    """Section 7, next-match over Kleene variable ``b = seq[i]``: no row that could have been
    the run's next element (of ``b``'s type, satisfying every element-wise conjunct on ``b``
    that mentions only variables at or before ``b``, with ``b[i-1]`` the run's last so far
    and ``b[..i-1]`` the run so far; ``[attr]`` equal to the match's) lies between two of its
    elements, nor after its last one and before the next positive variable's event (within
    the window, with the match's events), unless the run has its most elements."""
    b = seq[i]
    run = tuple(sorted(m[b.name], key=_key))
    earlier = {x.name for x in seq[: i + 1]}
    own = [c for c in a.conjuncts(query.where) if not isinstance(c, a.Equiv)]
    mine = [
        c
        for c in own
        if a.variables_of(c) <= earlier and _refs(c, b.name) & {a.Index.EACH, a.Index.PREV, a.Scope.PREFIX}
    ]
    assigned = {e["_row"] for events in m.values() for e in events}
    everything = [e for events in m.values() for e in events]

    def could_be_next(r: Row, so_far: tuple[Row, ...]) -> bool:
        if r[type_col] != b.type or r["_row"] in assigned:
            return False
        if branch.equiv and not _same([run[0], r], branch.equiv):
            return False
        env = _Env({**m, b.name: so_far}, time_col, unit)
        env.cur, env.prev, env.prefix = r, so_far[-1], so_far
        return all(_eval(c, env) is True for c in mine)

    for j in range(len(run) - 1):
        if any(could_be_next(r, run[: j + 1]) for r in rows if _key(run[j]) < _key(r) < _key(run[j + 1])):
            return False
    if b.hi is not None and len(run) >= b.hi:
        return True
    later = [x.name for x in seq[i + 1 :]]
    end = min((_key(m[x][0]) for x in later), default=None)
    times = [e["_ts"] for e in everything]
    for r in rows:
        if _key(r) <= _key(run[-1]) or (end is not None and _key(r) >= end):
            continue
        if max(times + [r["_ts"]]) - min(times + [r["_ts"]]) > window_of(query, unit):
            continue
        if could_be_next(r, run):
            return False
    return True


def window_of(query: a.Query, unit: int) -> int:
    """The window in nanoseconds (a bare number in the time unit)."""
    return query.window.nanoseconds(unit)


def _branch_matches(
    branch: Branch, rows: list[Row], window: int, type_col: str, time_col: str, unit: int
) -> set[MatchKey]:
    out: set[MatchKey] = set()
    negated = {n.name for n in branch.negated}
    for m in _assignments(branch, rows, window, type_col, time_col, unit):
        events = [e for group in m.values() for e in group]
        if len({e["_row"] for e in events}) != len(events):  # rule 2
            continue
        if not _ordered(branch, m):  # rule 3
            continue
        times = [e["_ts"] for e in events]
        if max(times) - min(times) > window:  # rule 4
            continue
        env = _Env(m, time_col, unit)
        if not all(
            _holds(c.expr, c.iterates, c.from_second, env)
            for c in branch.conditions
            if not set(c.variables) & negated
        ):  # rule 5
            continue
        if branch.equiv and not _same(events, branch.equiv):
            continue
        if any(
            _violated(branch, n, m, events, rows, window, type_col, time_col, unit) for n in branch.negated
        ):  # rule 6
            continue
        out.add(frozenset((name, tuple(e["_row"] for e in group)) for name, group in m.items()))
    return out


def _assignments(
    branch: Branch, rows: list[Row], window: int, type_col: str, time_col: str, unit: int
) -> Iterator[dict[str, tuple[Row, ...]]]:
    """Every assignment of candidates to the variables (rule 1: the type; and, to keep
    the product small, each variable's own single-variable conditions and the window,
    which rules 4 and 5 would check anyway)."""
    singles = [v for v in branch.positives if not v.kleene]
    kleenes = [v for v in branch.positives if v.kleene]
    candidates = {v.name: _candidates(branch, v, rows, type_col, time_col, unit) for v in branch.positives}
    for picked in product(*(candidates[v.name] for v in singles)):
        times = [e["_ts"] for e in picked]
        if times and max(times) - min(times) > window:
            continue
        lo = max(times) - window if times else -(1 << 70)
        hi = min(times) + window if times else 1 << 70
        subsets = [
            _subsets(v, [e for e in candidates[v.name] if lo <= e["_ts"] <= hi], window) for v in kleenes
        ]
        for chosen in product(*subsets):
            m = {v.name: (e,) for v, e in zip(singles, picked, strict=True)}
            m.update({v.name: s for v, s in zip(kleenes, chosen, strict=True)})
            yield {v.name: m[v.name] for v in branch.positives}


def _candidates(
    branch: Branch, v: Variable, rows: list[Row], type_col: str, time_col: str, unit: int
) -> list[Row]:
    own = [c for c in branch.conditions if c.variables == {v.name} and not c.whole and not c.from_second]
    out = []
    for row in rows:
        if row[type_col] != v.type:  # rule 1
            continue
        env = _Env({v.name: (row,)}, time_col, unit)
        if all(_holds(c.expr, c.iterates, False, env) for c in own):
            out.append(row)
    return out


def _subsets(v: Variable, candidates: list[Row], window: int) -> list[tuple[Row, ...]]:
    """Subsets of the candidates, in stream order, of a size within the bounds and
    spanning at most the window (each found once, from its first element)."""
    ordered = sorted(candidates, key=_key)
    out: list[tuple[Row, ...]] = []
    for i, first in enumerate(ordered):
        rest = [e for e in ordered[i + 1 :] if e["_ts"] - first["_ts"] <= window]
        hi = len(rest) + 1 if v.hi is None else min(v.hi, len(rest) + 1)
        for k in range(max(v.lo, 1), hi + 1):
            out.extend((first, *more) for more in combinations(rest, k - 1))
    return out


def _key(row: Row) -> tuple[int, int]:
    """Stream order: by time, then by row (the input's own order when it is sorted)."""
    return (row["_ts"], row["_row"])


def _ordered(branch: Branch, m: dict[str, tuple[Row, ...]]) -> bool:
    for x, y in branch.order:
        if x in m and y in m and max(map(_key, m[x])) >= min(map(_key, m[y])):
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
    window: int,
    type_col: str,
    time_col: str,
    unit: int,
) -> bool:
    assigned = {e["_row"] for e in events}
    for e in rows:
        if e[type_col] != n.type or e["_row"] in assigned:
            continue
        if any(x in m and max(map(_key, m[x])) >= _key(e) for x, y in branch.order if y == n.name):
            continue
        if any(y in m and min(map(_key, m[y])) <= _key(e) for x, y in branch.order if x == n.name):
            continue
        times = [r["_ts"] for r in events] + [e["_ts"]]
        if max(times) - min(times) > window:
            continue
        env = _Env({**m, n.name: (e,)}, time_col, unit)
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

    def __init__(self, m: dict[str, tuple[Row, ...]], time_col: str, unit: int) -> None:
        self.m = m
        self.time_col = time_col
        self.unit = unit
        self.cur: Row | None = None
        self.prev: Row | None = None
        self.prefix: tuple[Row, ...] = ()

    def value(self, row: Row, attr: str) -> Any:
        if attr != self.time_col:
            return row.get(attr)
        seconds = Fraction(row["_ts"], self.unit)  # a time in time units, exactly
        return seconds.numerator if seconds.denominator == 1 else seconds


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


def _is_exact(v: object) -> bool:
    """An exact number: an int, a decimal or a fraction (a time between two units)."""
    return isinstance(v, int | Decimal | Fraction) and not isinstance(v, bool)


def _as_exact(v: Any) -> Any:
    return Fraction(v) if isinstance(v, Decimal) else v


def _quotient(x: Any, y: Any) -> Any:
    """``x / y`` (semantics.md, section 4): exact for two exact numbers, an int when whole;
    IEEE double division when either is a float."""
    if _is_exact(x) and _is_exact(y):
        q = Fraction(_as_exact(x)) / Fraction(_as_exact(y))
        return q.numerator if q.denominator == 1 else q
    return x / y


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
                "avg": lambda: (
                    _quotient(sum(_as_exact(v) for v in values), len(values))
                    if all(_is_exact(v) for v in values)
                    else sum(values) / len(values)
                ),
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
            try:
                out = {
                    "+": lambda: x + y,
                    "-": lambda: x - y,
                    "*": lambda: x * y,
                    "/": lambda: _quotient(x, y),
                    "%": lambda: x % y,
                }[op]()
            except OverflowError:  # an int too large for a float: no value
                return None
            return None if out != out else out  # a NaN (inf - inf) is no value either
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
