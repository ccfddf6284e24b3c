"""``cepcli.find`` raises only ``CepError``s (issue 25), and their messages name its keyword
arguments, not the command line's flags: a Python caller is told ``schema={'y': 'str'}``,
``type_col=``, ``sort=True``, never ``--schema y:str``. Errors raised while the result is
iterated (a bad row) are translated too."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

import cepcli
from cepcli.api import for_python
from cepcli.errors import CepError, InputError, QueryError, UsageError

QUERY = "PATTERN SEQ(A a, B b) WHERE a.y > b.y WITHIN 5"


def _frame(y: list[object]) -> pd.DataFrame:
    return pd.DataFrame(
        {"type": ["A", "B"] * (len(y) // 2), "ts": range(len(y)), "y": pd.Series(y, dtype=object)}
    )


CALLS = [
    # (what, data, keyword arguments, error type, the message's end)
    (
        "an unknown kind",
        _frame([1, 2]),
        {"schema": {"y": "money"}},
        UsageError,
        "kinds are int, float, decimal",
    ),
    ("schema not a mapping", _frame([1, 2]), {"schema": ["y"]}, UsageError, "schema= maps column names"),
    ("no such type column", _frame([1, 2]), {"type_col": "kind"}, InputError, "choose one with type_col=)"),
    ("a bad order", _frame([1, 2]), {"engine": "chain", "order": ["z"]}, UsageError, "unknown: z"),
    ("a bad engine", _frame([1, 2]), {"engine": "fast"}, CepError, "unknown engine 'fast'"),
    ("not data at all", 5, {}, InputError, "give a path, a pandas DataFrame or an Arrow table"),
    ("a missing file", "/no/such/file.csv", {}, InputError, "cannot open: No such file or directory"),
    (
        "a column of structs",
        pa.table({"type": ["A"], "ts": [1], "y": [{"q": 1}]}),
        {},
        QueryError,
        "cannot compare",
    ),
]


@pytest.mark.parametrize("what,data,kwargs,kind,says", CALLS, ids=[c[0] for c in CALLS])
def test_every_error_is_a_cep_error_naming_the_keyword_arguments(
    what: str, data: object, kwargs: dict[str, object], kind: type[CepError], says: str
) -> None:
    with pytest.raises(kind) as caught:
        list(cepcli.find(QUERY, data, **kwargs))  # type: ignore[arg-type]
    assert says in str(caught.value)
    assert "--" not in str(caught.value).split("\n")[0]  # no flag of the command line


def test_a_bad_row_met_while_iterating_names_the_keyword_argument() -> None:
    found = cepcli.find(QUERY, _frame([2, 10, 3, "abc"]))
    with pytest.raises(InputError) as caught:
        list(found)
    assert str(caught.value) == (
        "<data>: row 3: column 'y' holds 'abc', which is not an integer (int64) (the column's kind,"
        " read from the first 4 rows; to read it as text, give schema={'y': 'str'})"
    )


def test_a_time_going_back_says_sort_true(tmp_path: Path) -> None:
    data = tmp_path / "back.csv"
    data.write_text("type,ts,y\nA,2,1\nB,1,0\n")
    with pytest.raises(
        InputError,
        match=r"pass sort=True to sort it, or max_delay='5min' to take rows up to 5 minutes late\)$",
    ):
        list(cepcli.find(QUERY, str(data)))


@pytest.mark.parametrize(
    "message,said",
    [
        (
            "give --schema x:float,y:str to compare numbers",
            "give schema={'x': 'float', 'y': 'str'} to compare numbers",
        ),
        ("give --time-format %Y%m%d%H%M to read them", "give time_format='%Y%m%d%H%M' to read them"),
        ("(or --time-unit s to keep seconds)", "(or time_unit='s' to keep seconds)"),
        ("--on-bad-row is one of fail, skip", "on_bad_row= is one of fail, skip"),
        ("use --on-bad-row skip", "use on_bad_row='skip'"),
        (
            "a lazy engine (--engine tree, or --engine chain)",
            "a lazy engine (engine='tree', or engine='chain')",
        ),
        ("see --max-row-bytes)", "see max_row_bytes=)"),
        ("--no-header needs --columns", "header=False needs columns="),
        ("no flag here: a.x -- b.x", "no flag here: a.x -- b.x"),
    ],
)
def test_flags_are_said_as_keyword_arguments(message: str, said: str) -> None:
    assert for_python(message) == said
