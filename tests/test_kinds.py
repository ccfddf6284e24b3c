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
