"""Three query-path fixes: a strategy list that constrains nothing is an error, a bound
that can only become false as a Kleene subset grows cuts its enumeration, and quoted
(and non-ASCII) attribute names."""

from __future__ import annotations

from math import comb
from pathlib import Path

import pytest

from cepcli.errors import QueryError
from cepcli.prepare import compile_text
from cepcli.query.parser import parse_query
from cepcli.query.printer import print_query
from tests.harness import run_engine
from tests.oracle import oracle

ENGINES = ("eager", "chain", "tree", "first-chance", "post-processing", "adaptive")
ALL_ENGINES = (*ENGINES, "adaptive:w4", "adaptive:pipe")


def _error(text: str) -> QueryError:
    with pytest.raises(QueryError) as info:
        compile_text(text, "q.sase", 10**9)
    return info.value


# --- 1. a strategy list that constrains no pair ------------------------------------------


@pytest.mark.parametrize(
    ("query", "where", "message"),
    [
        (
            "PATTERN SEQ(A a, B b, C c) WHERE strict_contiguity(a, c) WITHIN 10",
            "a",
            "strict_contiguity(a, c) constrains nothing: a and c are not consecutive in the pattern",
        ),
        (
            "PATTERN SEQ(A a, B b, C c) WHERE skip_till_next_match(a, c) { a.x < c.x } WITHIN 10",
            "a",
            "skip_till_next_match(a, c) constrains nothing: a and c are not consecutive in the pattern",
        ),
        (
            "PATTERN SEQ(A a, B b, C c, D d) WHERE strict_contiguity(a, b, d) WITHIN 10",
            "d",
            "strict_contiguity(a, b, d): d is consecutive to no other listed variable"
            " (it applies to a, b only)",
        ),
        (
            "PATTERN SEQ(A a, B b) WHERE strict_contiguity(a) WITHIN 10",
            "a",
            "strict_contiguity(a) constrains nothing: a is consecutive to no other listed variable",
        ),
    ],
)
def test_a_strategy_list_of_no_consecutive_pair_is_an_error(query: str, where: str, message: str) -> None:
    err = _error(query)
    assert message in err.message, err.message
    assert err.span.line == 1
    assert query[err.span.col - 1 :].startswith((where + ")", where + ","))
    assert "\n" not in err.message


@pytest.mark.parametrize(
    "query",
    [
        "PATTERN SEQ(A a, B b, C c) WHERE strict_contiguity(a, b) WITHIN 10",
        "PATTERN SEQ(A a, NOT(N n), C c) WHERE strict_contiguity(a, c) WITHIN 10",  # c follows a
        "PATTERN SEQ(A a, B+ b[], C c) WHERE strict_contiguity(b) WITHIN 10",  # the run itself
        "PATTERN OR(SEQ(A a, C c), SEQ(D d, B b, E e)) WHERE strict_contiguity(a, c) WITHIN 10",
        "PATTERN SEQ(A a, B b, C c) WHERE strict_contiguity WITHIN 10",
    ],
)
def test_a_strategy_list_with_a_consecutive_pair_is_accepted(query: str) -> None:
    compile_text(query, "q.sase", 10**9)


def test_the_list_error_is_one_line_at_its_place(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from cepcli.cli import cli

    (tmp_path / "q.sase").write_text("PATTERN SEQ(A a, B b, C c)\nWHERE strict_contiguity(a, c)\nWITHIN 10\n")
    result = CliRunner().invoke(cli, ["check", str(tmp_path / "q.sase")])
    assert result.exit_code == 2
    first = result.stderr.splitlines()[0]
    assert first.startswith(f"{tmp_path / 'q.sase'}:2:25: strict_contiguity(a, c) constrains nothing"), first


# --- 2. bounds that only become false as a subset grows cut the enumeration ----------------


def _many_b(values: list[int | str]) -> str:
    rows = ["ts,type,x", "0,A,0"] + [f"{i + 1},B,{v}" for i, v in enumerate(values)]
    return "\n".join([*rows, f"{len(values) + 1},C,0"]) + "\n"


def _sizes(n: int, lo: int, hi: int) -> int:
    return sum(comb(n, k) for k in range(lo, hi + 1))


WHOLE_BOUNDS = [
    ("count(b[]) <= 2", [1] * 40, _sizes(40, 1, 2)),
    ("count(b[]) < 3", [1] * 40, _sizes(40, 1, 2)),
    ("2 >= count(b[])", [1] * 40, _sizes(40, 1, 2)),
    ("count(b[]) = 2", [1] * 40, _sizes(40, 2, 2)),
    ("count(b[].x) <= 1", [1] * 40, 40),
    # 38 of 5 and 2 of 1: the subsets with no 5, or one 5 and no 1
    ("max(b[].x) <= 1", [5] * 38 + [1, 1], 3),
    ("max(b[].x) < 5", [5] * 38 + [1, 1], 3),
    ("min(b[].x) >= 5", [1] * 38 + [5, 5], 3),
    ("min(b[].x) > 1", [1] * 38 + [5, 5], 3),
    # 38 of 1, 2 of 0: at most one 1, any zeros
    ("sum(b[].x) <= 1", [1] * 38 + [0, 0], 4 * 39 - 1),
    ("sum(b[].x) < 2", [0, 0] + [1] * 38, 4 * 39 - 1),
    ("count(b[]) <= 2 OR count(b[]) < 1", [1] * 40, _sizes(40, 1, 2)),
]


# The eager NFA cannot know whether values still to come are negative, so it cuts a sum
# only when the conditions say so (``b[i].x >= 0``: below); the lazy engines see them.
CUT_CASES = [
    pytest.param(engine, bound, values, count, id=f"{bound}-{engine}")
    for bound, values, count in WHOLE_BOUNDS
    for engine in ALL_ENGINES
    if not (engine == "eager" and "sum" in bound)
]


@pytest.mark.parametrize(("engine", "bound", "values", "count"), CUT_CASES)
def test_a_bound_that_only_breaks_as_a_subset_grows_cuts_it(
    engine: str, bound: str, values: list[int | str], count: int
) -> None:
    """40 B's: 2^40 subsets, of which the bound keeps a few hundred. Without the cut the
    engines enumerate every subset (a hang); the count is the one of the subsets the bound
    keeps (the oracle agrees on 10 B's, below)."""
    query = f"PATTERN SEQ(A a, B+ b[], C c) WHERE {bound} WITHIN 100"
    found, _ = run_engine(query, _many_b(values), engine)
    assert len(found) == count


@pytest.mark.parametrize("engine", ALL_ENGINES)
@pytest.mark.parametrize(("bound", "values", "count"), WHOLE_BOUNDS, ids=[b for b, _, _ in WHOLE_BOUNDS])
def test_the_cut_keeps_the_oracles_matches(
    engine: str, bound: str, values: list[int | str], count: int
) -> None:
    query = f"PATTERN SEQ(A a, B+ b[], C c) WHERE {bound} WITHIN 100"
    data = _many_b(values[-10:])
    assert run_engine(query, data, engine)[0] == oracle(query, data)


def test_the_eager_sum_cut_needs_the_values_to_be_non_negative() -> None:
    """A negative value later brings a sum back under its bound: no cut there, the oracle's
    matches (and with ``b[i].x >= 0`` the eager NFA may cut a sum too, over 40 B's)."""
    values: list[int | str] = [3, 3, -5, 1, 3, "", -1, 2]
    for engine in ALL_ENGINES:
        for bound in ("sum(b[].x) <= 1", "sum(b[].x) < 2 AND count(b[]) <= 3", "max(b[].x) <= 2"):
            query = f"PATTERN SEQ(A a, B+ b[], C c) WHERE {bound} WITHIN 100"
            data = _many_b(values)
            assert run_engine(query, data, engine)[0] == oracle(query, data), (engine, bound)
        query = "PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].x >= 0 AND sum(b[].x) <= 1 WITHIN 100"
        assert len(run_engine(query, _many_b([1] * 38 + [0, 0]), engine)[0]) == 4 * 39 - 1


@pytest.mark.parametrize("engine", ALL_ENGINES)
def test_a_bound_on_another_variable_cuts_once_it_is_bound(engine: str) -> None:
    """``count(b[]) <= a.x`` reads a: a cut waits until a is bound (the chain may take b
    first); with a.x = 2 over 40 B's, the subsets of one or two."""
    data = _many_b([1] * 40).replace("0,A,0", "0,A,2")
    query = "PATTERN SEQ(A a, B+ b[], C c) WHERE count(b[]) <= a.x AND max(b[].x) < c.x + 2 WITHIN 100"
    assert len(run_engine(query, data, engine)[0]) == _sizes(40, 1, 2)
    small = _many_b([1, 0, 3, 1, 1, 2]).replace("0,A,0", "0,A,2")
    assert run_engine(query, small, engine)[0] == oracle(query, small)


# --- 3. quoted and non-ASCII attribute names ----------------------------------------------

QUOTED = "ts,type,AND,within,é,x y\n0,A,1,2,3,4\n1,B,5,6,7,8\n2,B,1,1,1,1\n"


@pytest.mark.parametrize(
    "query",
    [
        'PATTERN SEQ(A a, B b) WHERE a."AND" < b."AND" WITHIN 10',
        'PATTERN SEQ(A a, B b) WHERE a."within" < b."within" WITHIN 10',
        "PATTERN SEQ(A a, B b) WHERE a.é < b.é WITHIN 10",
        'PATTERN SEQ(A a, B b) WHERE a."é" < b.é WITHIN 10',
        'PATTERN SEQ(A a, B b) WHERE a."x y" < b."x y" WITHIN 10',
        "PATTERN SEQ(A a, B b) WHERE a.'AND' < b.'AND' WITHIN 10",
    ],
)
@pytest.mark.parametrize("engine", ["eager", "chain", "tree", "adaptive"])
def test_quoted_and_unicode_attributes(query: str, engine: str) -> None:
    found = run_engine(query, QUOTED, engine)[0]
    assert found == oracle(query, QUOTED) == {frozenset({("a", (0,)), ("b", (1,))})}


@pytest.mark.parametrize(
    "query",
    [
        'PATTERN SEQ(A a, B+ b[]) WHERE a."AND" < b[i]."AND" AND sum(b[]."within") > b[1]."é"'
        ' AND b[i]."x y" > b[i-1]."x y" AND max(b[..i-1]."or") < 3 AND ["AND"] WITHIN 10',
        "PATTERN SEQ(A a, B b) WHERE a.é < b.é AND a.naïve = 'é' AND [straße] WITHIN 10",
        """PATTERN SEQ(A a, B b) WHERE a."it's" = b.'say "hi"' WITHIN 10""",
        'PATTERN SEQ(A a, B b) WHERE a."true" = true AND a."PATTERN" = a."1x" WITHIN 10',
    ],
)
def test_quoted_attributes_round_trip(query: str) -> None:
    parsed = parse_query(query)
    printed = print_query(parsed)
    assert parse_query(printed) == parsed, printed


def test_the_printer_quotes_only_what_needs_it() -> None:
    parsed = parse_query('PATTERN SEQ(A a, B b) WHERE a."AND" < b."x" AND a.é > 1 AND ["within"] WITHIN 10')
    printed = print_query(parsed)
    assert 'a."AND" < b.x AND a.é > 1 AND ["within"]' in printed, printed


@pytest.mark.parametrize(
    ("query", "col", "message"),
    [
        ("PATTERN SEQ(A a, B b) WHERE a.AND > 1 WITHIN 10", 31, "expected a name"),
        ('PATTERN SEQ(A a, B b) WHERE a."" > 1 WITHIN 10', 31, "an empty name"),
    ],
)
def test_unquoted_keywords_stay_errors(query: str, col: int, message: str) -> None:
    with pytest.raises(QueryError) as info:
        parse_query(query)
    assert message in info.value.message and info.value.span.col == col, (info.value.message, info.value.span)


def test_the_printer_knows_the_grammars_names() -> None:
    """The printer writes a column bare when it is the grammar's NAME (the same regular
    expression), so whatever it prints reads back as the column it was."""
    from importlib import resources

    from cepcli.query.printer import NAME

    grammar = resources.files("cepcli.query").joinpath("grammar.lark").read_text()
    written = next(line for line in grammar.splitlines() if line.startswith("NAME:"))
    assert written == f"NAME: /{NAME.pattern}/"


def test_a_keyword_column_says_how_to_quote_it() -> None:
    with pytest.raises(QueryError) as info:
        parse_query("PATTERN SEQ(A a, B b) WHERE a.within > 1 WITHIN 10")
    assert info.value.message == "expected a name, found 'within', a keyword: quote it, \"within\""
