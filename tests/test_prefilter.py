"""The vectorised prefilter (``cepcli.sources.prefilter``: pyarrow compute, with a row-wise
fallback for the rows it is unsure of) and the compiled conditions
(``cepcli.plan.python.compile_condition``, the reference meaning) are two lowerings
of one condition AST: on every value they must give the same answer, overflow included.

The property generates single-variable conditions as SASE+ text (``PATTERN A a WHERE
<cond> WITHIN 1``, parsed and normalised by cepcli), over columns of every kind (int64,
float64, bool, text, a time attribute and the time column, in each time unit), with
``+ - * / %``, ``abs``, unary minus, int literals (also beyond int64) and float literals,
the six comparisons and AND/OR/NOT nesting; and a batch of rows full of corner values
(0, +-1, 2^53 +- 1, the int64 limits, +-inf, -0.0, 1e308, subnormals, missing values,
times between two units). The prefilter's mask for ``a`` must equal, row by row, ``type
== 'A'`` and the compiled form of every conjunct that mentions ``a`` (those are the
prefilter's conditions; a conjunct without a variable is left to the engines).

Examples per run: ``EXAMPLES`` (500, a few seconds). Soak with more through the
environment: ``CEPCLI_SOAK=20000 pytest tests/test_prefilter.py -k equals``. Soaked so
(2026-11): it found the crash of ``abs``/unary minus over a boolean column (fixed: the
prefilter leaves such rows to the compiled condition; booleans are now refused with
numbers by the query checks); 50,000 and then 20,000 more examples found no other
disagreement.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from cepcli.clock import UNITS
from cepcli.engines import compile_pattern
from cepcli.errors import QueryError
from cepcli.events import Event, Kind, Schema
from cepcli.plan.nnf import to_nnf
from cepcli.plan.python import compile_condition
from cepcli.query import ast as a
from cepcli.query.checks import check_schema
from cepcli.sources.prefilter import Prefilter

SOAK = int(os.environ.get("CEPCLI_SOAK", "0"))
EXAMPLES = SOAK or 500

# The input: the time column ``ts``, the type column, and one column of every kind
# (``t`` is a time attribute: int64 nanoseconds, seen in time units like ``ts``).
COLUMNS = ("ts", "type", "i", "j", "f", "b", "s", "t")
KINDS = (Kind.STR, Kind.STR, Kind.INT, Kind.INT, Kind.FLOAT, Kind.BOOL, Kind.STR, Kind.TIME)
ARROW = {"i": pa.int64(), "j": pa.int64(), "f": pa.float64(), "b": pa.bool_(), "s": pa.string(),
         "t": pa.int64()}

I64_MIN, I64_MAX = -(2**63), 2**63 - 1
INTS = [0, 1, -1, 2, -2, 3, -3, 7, 10, 2**31, 2**32 + 1, 2**53 - 1, 2**53, 2**53 + 1, -(2**53) - 1,
        2**62, 2**63 - 1, -(2**63) + 1, I64_MIN, 3037000499, 3037000500, -3037000500]
FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 0.1, 2.5, 1e308, -1e308, 1.7976931348623157e308,
          math.inf, -math.inf, 5e-324, -5e-324, 2.2250738585072014e-308, 1e-300, 2.0**53, 2.0**53 + 2,
          2.0**63, -(2.0**63), 9.2e18, 3.0, -7.0]
TEXTS = ["", "a", "b", "ab", "B", "A", "z", "é", "ß", "Z9", "a b"]
# nanoseconds: on and between the units, negative ones, and the int64 limits
TIMES = [0, 1, -1, 999, 1000, 1001, 10**6, 10**6 + 1, 10**9, 10**9 - 1, 1_500_000_000, -1_500_000_000,
         -(10**9), 2 * 10**9, 1_700_000_000 * 10**9, 1_700_000_000 * 10**9 + 500, 2**62, I64_MAX, I64_MIN,
         I64_MIN + 1, 9_223_372_036 * 10**9, -9_223_372_036 * 10**9]


# --- values -----------------------------------------------------------------------------


def _ints() -> st.SearchStrategy[int]:
    return st.one_of(st.sampled_from(INTS), st.integers(-20, 20), st.integers(I64_MIN, I64_MAX))


def _floats() -> st.SearchStrategy[float]:
    return st.one_of(st.sampled_from(FLOATS), st.floats(-100, 100), st.floats(allow_nan=False))


def _times() -> st.SearchStrategy[int]:
    around = st.tuples(st.integers(-5, 5), st.sampled_from(list(UNITS.values())),
                       st.sampled_from([0, 0, 1, -1, 500, 500_000]))
    return st.one_of(st.sampled_from(TIMES), around.map(lambda t: t[0] * t[1] + t[2]),
                     st.integers(I64_MIN, I64_MAX))


def _missing(values: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    return st.one_of(st.none(), values, values, values)


@st.composite
def _rows(draw: st.DrawFn) -> list[tuple[object, ...]]:
    """Rows as (ts, type, i, j, f, b, s, t); a float NaN is read as missing, so None."""
    n = draw(st.integers(1, 12))
    row = st.tuples(
        _times(),
        st.sampled_from(["A", "A", "A", "B", None]),
        _missing(_ints()),
        _missing(_ints()),
        _missing(_floats()),
        _missing(st.booleans()),
        _missing(st.sampled_from(TEXTS)),
        _missing(_times()),
    )
    return draw(st.lists(row, min_size=n, max_size=n))


# --- conditions as SASE+ text -----------------------------------------------------------


def _int_literal() -> st.SearchStrategy[str]:
    big = [2**53 - 1, 2**53, 2**53 + 1, 2**63 - 1, 2**63, 2**63 + 1, 2**64, 10**20, 10**30, 2**100]
    value = st.one_of(st.integers(0, 10), st.sampled_from(INTS + big), st.integers(0, 2**80))
    # a negative literal is "-" before a number (the parser folds it into the literal)
    return st.tuples(value, st.booleans()).map(lambda t: f"(-{abs(t[0])})" if t[1] else str(abs(t[0])))


def _float_literal() -> st.SearchStrategy[str]:
    finite = [f for f in FLOATS if math.isfinite(f)]
    value = st.one_of(st.sampled_from(finite), st.floats(0, 1e6), st.floats(0, allow_infinity=False))
    return st.tuples(value, st.booleans()).map(lambda t: f"(-{abs(t[0])!r})" if t[1] else repr(abs(t[0])))


# ``a.b`` (a boolean) meets only booleans: the query checks refuse it with numbers or text
NUMERIC_COLUMNS = ["a.i", "a.j", "a.f", "a.ts", "a.t"]


def _numeric() -> st.SearchStrategy[str]:
    leaf = st.one_of(st.sampled_from(NUMERIC_COLUMNS), _int_literal(), _float_literal())

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.tuples(inner, st.sampled_from("+-*/%"), inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
            inner.map(lambda x: f"abs({x})"),
            inner.map(lambda x: f"-{x}" if x.startswith(("a.", "(", "abs")) else f"-({x})"),
        )

    return st.recursive(leaf, extend, max_leaves=5)


COMPARISONS = ["=", "!=", "<", "<=", ">", ">=", "==", "<>"]


def _comparison() -> st.SearchStrategy[str]:
    text = st.one_of(st.sampled_from(["a.s", "a.s", "a.type"]),
                     st.sampled_from(TEXTS).map(lambda s: f"'{s}'"))
    boolean = st.sampled_from(["a.b", "true", "false"])
    pairs = st.one_of(
        st.tuples(_numeric(), _numeric()),
        st.tuples(_numeric(), _numeric()),
        st.tuples(text, text),
        st.tuples(boolean, boolean),
    )
    return st.tuples(pairs, st.sampled_from(COMPARISONS)).map(lambda t: f"{t[0][0]} {t[1]} {t[0][1]}")


def conditions() -> st.SearchStrategy[str]:
    leaf = st.one_of(_comparison(), _comparison(), _comparison(), st.sampled_from(["true", "false"]))

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.tuples(inner, st.sampled_from(["AND", "OR"]), inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
            inner.map(lambda c: f"NOT ({c})"),
        )

    return st.recursive(leaf, extend, max_leaves=4)


# --- the two lowerings -------------------------------------------------------------------


@dataclass
class Outcome:
    prefilter: list[bool]
    reference: list[bool]
    unsure: list[int]  # the positions the prefilter asked the compiled conditions about


def evaluate(condition: str, rows: list[tuple[object, ...]], unit: str) -> Outcome:
    """The prefilter's verdict for ``a`` on every row, and the compiled conditions'."""
    schema = Schema(COLUMNS, KINDS, "type", "ts", UNITS[unit])
    query, pattern = compile_pattern(f"PATTERN A a WHERE {condition} WITHIN 1", "<query>", UNITS[unit])
    check_schema(query, schema)  # the generator writes only conditions the checks accept
    prefilter = Prefilter.of(pattern, schema)
    (variable,) = prefilter.variables

    by_name = dict(zip(COLUMNS, zip(*rows, strict=True), strict=True))
    columns = {name: pa.array(by_name[name], ARROW.get(name, pa.string())) for name in COLUMNS
               if name != "ts"}
    columns["ts"] = pa.array([str(v) for v in by_name["ts"]], pa.string())  # the time as read (text)
    ts = np.array(by_name["ts"], dtype=np.int64)
    events = [Event(k, int(r[0]), r[1], r, 0) for k, r in enumerate(rows)]  # type: ignore[arg-type]
    asked: list[int] = []

    def events_at(positions: np.ndarray) -> list[Event]:
        asked.extend(int(p) for p in positions)
        return [events[int(p)] for p in positions]

    mentioned = [c for c in a.conjuncts(query.where) if a.variables_of(c) == {"a"}]
    compiled = [compile_condition(to_nnf(c), {"a": 0}, schema) for c in mentioned]  # lowered as by the plan
    want = [e.type == "A" and all(fn([e], e) for fn in compiled) for e in events]

    try:
        masks, _ = prefilter.masks(columns["type"], columns, ts, events_at)
    except Exception as err:  # a crash is a disagreement too: say what the reference says
        raise AssertionError(
            f"the prefilter raised {type(err).__name__}: {err}\n  on {condition!r} (time unit {unit}),"
            f" rows {rows};\n  the compiled conditions give {want}"
        ) from err
    got = [bool(m >> variable.bit & 1) for m in masks.tolist()]
    return Outcome(got, want, asked)


def _show(rows: list[tuple[object, ...]], outcome: Outcome) -> str:
    lines = []
    for k, row in enumerate(rows):
        if outcome.prefilter[k] != outcome.reference[k]:
            values = dict(zip(COLUMNS, row, strict=True))
            lines.append(f"  row {k}: {values} prefilter={outcome.prefilter[k]}"
                         f" compiled={outcome.reference[k]} (asked compiled: {k in outcome.unsure})")
    return "\n".join(lines)


def check(condition: str, rows: list[tuple[object, ...]], unit: str) -> None:
    outcome = evaluate(condition, rows, unit)
    assert outcome.prefilter == outcome.reference, (
        f"prefilter and compiled conditions disagree on {condition!r} (time unit {unit}):\n"
        + _show(rows, outcome)
    )


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(condition=conditions(), rows=_rows(), unit=st.sampled_from(list(UNITS)))
def test_prefilter_equals_compiled_conditions(condition: str, rows: list[tuple[object, ...]],
                                              unit: str) -> None:
    note(f"condition: {condition}\nunit: {unit}\nrows: {rows}")
    check(condition, rows, unit)


# --- fixed corners -------------------------------------------------------------------------

# One batch that holds every corner value of every column at least once.
_N = max(len(INTS), len(FLOATS), len(TEXTS), len(TIMES)) + 1
CORNERS: list[tuple[object, ...]] = [
    (
        TIMES[k % len(TIMES)],
        "A",
        (INTS + [None])[k % (len(INTS) + 1)],
        (INTS + [None])[(k * 7 + 3) % (len(INTS) + 1)],
        (FLOATS + [None])[k % (len(FLOATS) + 1)],
        [True, False, None][k % 3],
        (TEXTS + [None])[k % (len(TEXTS) + 1)],
        (TIMES + [None])[(k * 5 + 1) % (len(TIMES) + 1)],
    )
    for k in range(_N)
]

CORNER_CONDITIONS = [
    "a.i > 0", "a.i * a.j > 0", "a.i + a.j = 0", "a.i - a.j < 0", "a.i * 2 > a.i",
    "abs(a.i) >= 0", "-a.i <= 0", "a.i / a.j > 1", "a.i % a.j = 0", "a.i % 3 = 1",
    "a.i = 9007199254740993", "a.i = 9007199254740993.0", "a.i > 9223372036854775807",
    "a.i < 9223372036854775808", "a.i + 1 > 9223372036854775807", "a.i = a.f", "a.i < a.f",
    "a.i / 3 = 3074457345618258602.3333", "a.i / 2 > 4611686018427387903",
    "a.f > 0", "a.f = -0.0", "a.f * 0 = 0", "a.f - a.f = 0", "a.f / a.f = 1", "a.f % 2 = 1",
    "a.f % a.f = 0", "a.f % 0.5 >= 0", "-a.f < 0", "abs(a.f) > 1e308", "a.f + 1e308 > 1e308",
    "a.f / 0 = 1", "a.f % 0 = 0", "a.f = 1e-320 * 1e-10", "a.f * 1e308 > 1",
    "a.ts > 1", "a.ts = 1.5", "a.ts * 2 = 3", "a.ts % 1 = 0", "a.ts / 2 > 0", "a.ts - a.t > 0",
    "a.t > a.ts", "a.t % 1 != 0", "abs(a.t) > 1", "-a.t < 0", "a.ts * 1000000000 > 0",
    "a.ts + a.i > 0", "a.ts = a.f", "a.t < a.i",
    "a.s = ''", "a.s < 'b'", "a.s >= 'é'", "a.s != a.s", "a.b = true", "a.b != false", "a.b < true",
    "a.b = a.b", "NOT (a.b = true)",
    "NOT (a.i > 0 OR a.f < 0)", "(a.i > 0 AND a.f > 0) OR NOT (a.s = 'a')", "NOT (a.i / a.j > 0)",
    "a.i > 0 AND 1 / 0 = 1", "a.i > 0 OR 9223372036854775808 > 0", "1 + 1 = 2 OR a.f > 0",
    "(a.i > 0 AND 2 < 1) OR a.j < 0", "a.i % a.f = 0", "a.f % a.i > 0", "a.i * 1.5 > 0",
    "(a.i * a.j) % 7 = 1", "abs(a.i * a.j) > 0", "a.i * 9223372036854775808 > 0",
    "a.j - 9223372036854775809 < a.i", "a.ts + 1 = a.t", "a.t / a.ts > 1", "a.t * a.t > 0",
]


# A boolean is no number and no text: these are query errors, before any value is seen.
BOOLEAN_MISUSE = [
    "a.b > 0", "a.b + 1 = 2", "a.b * a.i > 0", "a.b % 2 = 1", "a.b / 2 = 0.5", "abs(a.b) = 1",
    "-a.b = -1", "a.b = 'a'", "a.b < 'a' OR a.i > 0",
]


@pytest.mark.parametrize("unit", list(UNITS))
@pytest.mark.parametrize("condition", CORNER_CONDITIONS)
def test_corner_values(condition: str, unit: str) -> None:
    check(condition, CORNERS, unit)


@pytest.mark.parametrize("condition", BOOLEAN_MISUSE)
def test_a_boolean_used_as_a_number_or_text_is_a_query_error(condition: str) -> None:
    with pytest.raises(QueryError, match="boolean"):
        check(condition, CORNERS, "s")


def test_corner_batch_is_complete() -> None:
    """The fixed batch holds every corner value of every column, and a missing one."""
    for column, values in (("i", INTS), ("f", FLOATS), ("s", TEXTS), ("ts", TIMES)):
        held = [row[COLUMNS.index(column)] for row in CORNERS]
        for v in values:
            assert any(h == v and str(h) == str(v) for h in held), (column, v)
        if column != "ts":
            assert None in held, column


@pytest.mark.parametrize("nulls", [False, True])
@pytest.mark.parametrize(
    "query",
    [
        "PATTERN SEQ(A a, B b, C c) WITHIN 1",  # no condition: one look-up per dictionary entry
        "PATTERN SEQ(A a, B b, Z z) WHERE a.i > 1 WITHIN 1",  # a condition, and a type no row has
    ],
)
def test_a_type_column_held_as_a_dictionary_gives_the_masks_of_its_text(query: str, nulls: bool) -> None:
    """A typed input (Parquet) may hold the type column as a dictionary: each row's mask,
    and the types no row had (the warning), are those of the same column as text, batch
    after batch; the dictionary may hold entries no row has (``Z``)."""
    schema = Schema(("ts", "type", "i"), (Kind.INT, Kind.STR, Kind.INT), "type", "ts", 1)
    _, pattern = compile_pattern(query, "<query>", 1)
    batches = [["A", "B", "D", "A", "C"], ["C", "C", "A", "B", "D"]]
    if nulls:
        batches[1][3] = None  # type: ignore[call-overload]
    masks = {}
    for form in ("text", "dictionary"):
        prefilter = Prefilter.of(pattern, schema)
        got = []
        for types in batches:
            column = pa.array(types, pa.string())
            if form == "dictionary":  # (its entries in another order, one of them never used)
                entries = pa.array(["D", "Z", "C", "B", "A"])
                column = pa.DictionaryArray.from_arrays(
                    pa.array(
                        [None if t is None else entries.to_pylist().index(t) for t in types], pa.int32()
                    ),
                    entries,
                )
            i = pa.array(range(len(types)), pa.int64())
            mask, _ = prefilter.masks(column, {"type": column, "i": i}, np.arange(len(types)), lambda at: [])
            got.append(mask.tolist())
        masks[form] = (got, prefilter.unseen())
    assert masks["dictionary"] == masks["text"]
    assert masks["text"][0][0][:3] == [1, 2, 0] or "a.i" in query
    assert [name for name, _ in masks["text"][1]] == (["Z"] if "Z z" in query else [])
