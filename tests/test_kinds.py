"""A text column's kind: the quick reading of whole numbers gives the rule's answer."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from cepcli.events import Kind
from cepcli.sources.kinds import _plain_ints, infer_kind, kind_by_shapes
from cepcli.sources.text import DEFAULT_NULLS

# Words near whole numbers: signs, blanks, hexadecimal, overflow, decimals, exponents.
TOKENS = st.one_of(
    st.integers(min_value=-(2**64), max_value=2**64).map(str),
    st.sampled_from(["+5", " 5", "5 ", "0x1F", "0X1f", "-0", "1.0", "1e3", "inf", "nan", "true", "x",
                     "2024-01-02", "", "NA", "１", "٣", "00012", "-", "0x"]),
    st.text(alphabet="0123456789xX+- .e", min_size=1, max_size=6),
)


@given(st.lists(TOKENS, min_size=1, max_size=12))
def test_the_quick_reading_agrees_with_the_shapes(words: list[str]) -> None:
    values = pa.array(words, pa.string())
    present = values.filter(pa.array([w not in DEFAULT_NULLS for w in words]))
    if len(present) and _plain_ints(present):
        assert kind_by_shapes(present) is Kind.INT, words


def test_hexadecimal_is_not_a_whole_number() -> None:
    """pyarrow's cast reads 0x1F as 31; the column is text, as the shapes say."""
    assert infer_kind(pa.array(["0x1F", "0x20", "0x21"]), pa.array(list(DEFAULT_NULLS))) is Kind.STR
    assert infer_kind(pa.array(["12", "-3", "NA", "007"]), pa.array(list(DEFAULT_NULLS))) is Kind.INT


def _by_rows(present: pa.Array) -> Kind:
    """The module's rule read row by row (each present value counted where it stands)."""
    import pyarrow.compute as pc

    from cepcli.sources.kinds import _unreadable_times, fits
    from cepcli.sources.text import FLOAT_SHAPE, ISO_SHAPE

    half = len(present) / 2
    numbers = present.filter(pc.match_substring_regex(present, FLOAT_SHAPE))
    if len(numbers) > half:
        return Kind.INT if fits(numbers, Kind.INT) else Kind.FLOAT
    if sum(v.lower() in ("true", "false") for v in present.to_pylist()) > half:
        return Kind.BOOL
    dates = present.filter(pc.match_substring_regex(present, ISO_SHAPE))
    if len(dates) > half and len(dates) - len(_unreadable_times(dates)) > half:
        return Kind.TIME
    return Kind.STR


# Few distinct words, so that a column repeats them: the majority is of rows, not of words.
REPEATED = st.sampled_from(
    ["7", "-2", "1.5", "1e400", "x", "TRUE", "false", "2024-01-02", "2024-01-02T03:04:05Z",
     "2024-01-02T00:00:00.0000000001", "9223372036854775808", "0x1F"]
)


@given(st.lists(REPEATED, min_size=1, max_size=40))
def test_the_kind_is_the_rule_read_row_by_row(words: list[str]) -> None:
    present = pa.array(words, pa.string())
    assert kind_by_shapes(present) is _by_rows(present), words


def test_the_majority_is_of_rows_not_of_distinct_values() -> None:
    """Ten rows of one number and three words: a column of numbers; the other way round,
    text. Five rows of a date-time finer than a nanosecond (a bad value) and four of a
    date: most rows do not read as times, so the column is text."""
    assert kind_by_shapes(pa.array(["1"] * 10 + ["a", "b", "c"])) is Kind.INT
    assert kind_by_shapes(pa.array(["a"] * 10 + ["1", "2", "3"])) is Kind.STR
    fine = "2024-01-01T00:00:00.0000000001"
    assert kind_by_shapes(pa.array([fine] * 5 + ["2024-01-02"] * 4 + ["w"])) is Kind.STR
    assert kind_by_shapes(pa.array([fine] + ["2024-01-02"] * 4)) is Kind.TIME
