"""Checks against the input's columns (``check_schema``) and the DNF branch cap."""

from __future__ import annotations

import pytest

from cepcli.engines import compile_pattern
from cepcli.errors import QueryError
from cepcli.events import Kind, Schema
from cepcli.plan.normalize import MAX_BRANCHES, normalize
from cepcli.query.checks import check_schema
from cepcli.query.parser import parse_query

# ts is stored as text (ISO dates), but conditions see it in seconds.
SCHEMA = Schema(
    columns=("type", "ts", "sym", "price", "volume", "note"),
    kinds=(Kind.STR, Kind.STR, Kind.STR, Kind.FLOAT, Kind.INT, Kind.UNKNOWN),
)
COLUMNS = "type, ts, sym, price, volume, note"


def _check(where: str, pattern: str = "SEQ(A a, B+ b[], C c)") -> None:
    text = f"PATTERN {pattern}\nWHERE {where}\nWITHIN 1 h\n"
    query = parse_query(text, "q.sase")
    try:
        check_schema(query, SCHEMA)
    except QueryError as err:
        raise err.located(text, "q.sase") from None


def _error(where: str, pattern: str = "SEQ(A a, B+ b[], C c)") -> QueryError:
    with pytest.raises(QueryError) as info:
        _check(where, pattern)
    assert info.value.exit_code == 2
    return info.value


# --- valid ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "where",
    [
        "a.price > 10 AND a.sym = 'IBM'",
        "'IBM' = a.sym AND 10 < a.price",
        "a.volume >= 100 AND a.price * 2 > c.price",
        "a.sym = c.sym AND a.sym < c.sym",
        "b[i].price > b[i-1].price AND b[1].volume < b[last].volume",
        "avg(b[].price) > a.price AND sum(b[..i-1].volume) < 1000",
        "count(b[]) > 2 AND count(b[].sym) < 5",
        "[sym] AND [type]",
        "c.ts - a.ts < 60",  # the time column is numeric to conditions
        "a.note = 'x' AND a.note != 'y'",  # a column of unknown kind is read as text
        "abs(a.price - c.price) < 1 AND NOT (a.sym = 'X' OR c.sym = 'Y')",
    ],
)
def test_valid_conditions_pass(where: str) -> None:
    _check(where)


@pytest.mark.parametrize(
    "where", ["a.note > 3", "3 = a.note", "a.note * 2 < a.price", "abs(a.note) > 1", "avg(b[].note) > 1"]
)
def test_a_column_of_unknown_kind_cannot_be_a_number(where: str) -> None:
    """No value in the sample: used as a number, it is an error saying how to give its
    kind (read as text, it would silently match nothing)."""
    said = str(_error(where))  # (as the command line says it)
    assert "the input's column 'note' has no value in its first rows, so its kind is unknown" in said
    assert "give --schema note:int (or :float, see --schema)" in said


def test_query_without_where_passes() -> None:
    check_schema(parse_query("PATTERN SEQ(A a, B b) WITHIN 1 h"), SCHEMA)


# --- unknown columns -----------------------------------------------------------------


def test_unknown_attribute_names_the_column_and_lists_the_columns() -> None:
    err = _error("a.price > 10 AND c.prise < a.price")
    assert err.render() == (
        f"q.sase:2:24: the input has no column 'prise' (did you mean 'price'? columns: {COLUMNS})\n"
        "    WHERE a.price > 10 AND c.prise < a.price\n"
        "                           ^^^^^^^"
    )


@pytest.mark.parametrize(
    ("where", "column"),
    [
        ("b[i].size > 1", "size"),
        ("b[last].size > 1", "size"),
        ("avg(b[].size) > 1", "size"),
        ("max(b[..i-1].size) < b[i].price", "size"),
    ],
)
def test_unknown_attribute_in_kleene_references(where: str, column: str) -> None:
    err = _error(where)
    assert f"no column {column!r}" in err.message
    assert COLUMNS in err.message


def test_equivalence_on_a_missing_column() -> None:
    err = _error("a.price > 1 AND [sector]")
    assert err.render() == (
        f"q.sase:2:23: the input has no column 'sector' (columns: {COLUMNS})\n"
        "    WHERE a.price > 1 AND [sector]\n"
        "                          ^^^^^^^^"
    )


# --- literal kinds -------------------------------------------------------------------


@pytest.mark.parametrize(
    "where", ["a.price = 'IBM'", "'IBM' != a.price", "a.volume < '100'", "b[1].price = 'x'"]
)
def test_string_literal_against_numeric_column(where: str) -> None:
    err = _error(where)
    assert "they cannot be compared" in err.message
    assert "is a number" in err.message and "is text" in err.message
    assert err.span.line == 2


def test_string_literal_against_numeric_column_message() -> None:
    err = _error("a.sym = 'IBM' AND a.price = 'IBM'")
    assert err.render() == (
        "q.sase:2:25: a.price is a number and 'IBM' is text: they cannot be compared\n"
        "    WHERE a.sym = 'IBM' AND a.price = 'IBM'\n"
        "                            ^^^^^^^^^^^^^^^"
    )


@pytest.mark.parametrize("where", ["a.sym < 3", "3 >= a.sym", "c.sym > 2.5", "a.sym != 3"])
def test_number_ordered_against_text_column(where: str) -> None:
    err = _error(where)
    assert "is text and" in err.message or "is a number and" in err.message
    assert "they cannot be compared" in err.message


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("avg(b[].price) = 'x'", "avg(b[].price) is a number and 'x' is text"),
        ("a.price + 1 = 'x'", "a.price + 1 is a number and 'x' is text"),
        ("a.price = true", "a.price is a number and true is a boolean"),
        ("a.price = c.sym", "a.price is a number and c.sym is text"),
        ("a.sym + 1 > 2", "arithmetic needs numbers, and a.sym is text"),
        ("abs(a.sym) > 2", "arithmetic needs numbers, and a.sym is text"),
        ("b[i].sym < 3", "b[i].sym is text and 3 is a number"),
    ],
)
def test_kinds_of_expressions(where: str, message: str) -> None:
    assert message in _error(where).message


def test_number_ordered_against_text_column_message() -> None:
    err = _error("a.sym < 3")
    assert err.render() == (
        "q.sase:2:7: a.sym is text and 3 is a number: they cannot be compared\n"
        "    WHERE a.sym < 3\n"
        "          ^^^^^^^^^"
    )


def test_aggregate_over_text_column() -> None:
    err = _error("avg(b[].sym) > 1")
    assert "avg() needs a numeric column, and 'sym' holds text" in err.message


# --- the DNF cap ---------------------------------------------------------------------


def _and_of_ors(n: int) -> str:
    ors = ", ".join(f"OR(A a{i}, B b{i})" for i in range(n))
    return f"PATTERN AND({ors})\nWITHIN 10 s\n"


def test_dnf_at_the_cap_is_accepted() -> None:
    assert MAX_BRANCHES == 2**8  # the next test relies on it
    pattern = normalize(parse_query(_and_of_ors(8)))
    assert len(pattern.branches) == MAX_BRANCHES


def test_dnf_past_the_cap_fails_with_the_branch_count() -> None:
    with pytest.raises(QueryError) as info:
        compile_pattern(_and_of_ors(9), "q.sase")
    assert "512 DNF branches" in info.value.message
    assert f"limit of {MAX_BRANCHES}" in info.value.message
    assert info.value.render().startswith("q.sase:1:9: the pattern expands to 512")


def test_dnf_far_past_the_cap_fails_without_expanding() -> None:
    # 2**32 branches from 64 variables (the most a pattern may have): this returns at once
    # only if the count is computed, not expanded.
    with pytest.raises(QueryError) as info:
        compile_pattern(_and_of_ors(32), "q.sase")
    assert f"{2**32} DNF branches" in info.value.message


def test_dnf_cap_is_a_parameter() -> None:
    with pytest.raises(QueryError, match="expands to 4 DNF branches, more than the limit of 3"):
        normalize(parse_query(_and_of_ors(2)), max_branches=3)
