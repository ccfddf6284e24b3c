"""Properties over random streams and random queries (``tests/strategies.py``):
every engine returns exactly the oracle's set, and query text round-trips through
the printer."""

from __future__ import annotations

from hypothesis import assume, given, note, settings
from hypothesis import strategies as st

from cepcli.engines import compile_pattern
from cepcli.events import Kind
from cepcli.query.parser import parse_query
from cepcli.query.printer import print_query
from tests.harness import run_engine
from tests.oracle import MatchKey, oracle
from tests.strategies import MAX_COST, Pattern, examples, oracle_cost, patterns
from tests.test_cases import ENGINES

# The streams' x and y are small ints: said so, since a stream may leave one empty, and a
# CSV column without a value has no kind to compare with numbers (tests/test_values.py).
INT_COLUMNS = (("x", Kind.INT), ("y", Kind.INT))


def _show(keys: set[MatchKey]) -> list[dict[str, tuple[int, ...]]]:
    return sorted((dict(sorted(k)) for k in keys), key=lambda d: sorted(d.items()))


def _check_engines(example: tuple[Pattern, str]) -> None:
    pattern, csv_text = example
    assume(oracle_cost(pattern, csv_text) <= MAX_COST)
    query = pattern.text
    note(f"query:\n{query}\ncsv:\n{csv_text}")
    want = oracle(query, csv_text)
    for engine in ENGINES:
        got, _ = run_engine(query, csv_text, engine, schema=INT_COLUMNS)
        assert got == want, (
            f"{engine} disagrees with the oracle\n  missing: {_show(want - got)}"
            f"\n  extra:   {_show(got - want)}"
        )


@settings(max_examples=300, deadline=None)
@given(example=examples())
def test_engines_equal_oracle(example: tuple[Pattern, str]) -> None:
    _check_engines(example)


@settings(max_examples=100, deadline=None)
@given(example=examples(constants=True))
def test_engines_equal_oracle_with_constant_conjunct(example: tuple[Pattern, str]) -> None:
    """A conjunct that mentions no variable (``2 < 1``, ``1 + 1 = 2``) is part of the
    WHERE condition like any other (SPEC section 3, rule 5)."""
    _check_engines(example)


@settings(max_examples=300, deadline=None)
@given(pattern=st.one_of(patterns(), patterns(constants=True)))
def test_generated_queries_parse_and_round_trip(pattern: Pattern) -> None:
    query = parse_query(pattern.text)
    compile_pattern(pattern.text)  # the checks and the DNF accept every generated query
    printed = print_query(query)
    assert parse_query(printed) == query, printed


@settings(max_examples=100, deadline=None)
@given(example=examples(), chunk_rows=st.sampled_from([1, 2, 3]))
def test_chunk_size_does_not_matter(example: tuple[Pattern, str], chunk_rows: int) -> None:
    pattern, csv_text = example
    assume(oracle_cost(pattern, csv_text) <= MAX_COST)
    query = pattern.text
    for engine in ENGINES:
        assert run_engine(query, csv_text, engine, chunk_rows=chunk_rows, schema=INT_COLUMNS)[0] == \
            run_engine(query, csv_text, engine, chunk_rows=1000, schema=INT_COLUMNS)[0]
