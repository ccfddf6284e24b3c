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
from cepcli.errors import CepError, InputError, QueryError, UsageError, flag, said

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
    "message,cli_said,python_said",
    [
        (
            f"give {flag('schema', 'x:float,y:str')} to compare numbers",
            "give --schema x:float,y:str to compare numbers",
            "give schema={'x': 'float', 'y': 'str'} to compare numbers",
        ),
        (
            f"give {flag('time-format', '%Y%m%d%H%M')} to read them",
            "give --time-format %Y%m%d%H%M to read them",
            "give time_format='%Y%m%d%H%M' to read them",
        ),
        (
            f"give {flag('time-format', repr('%d/%m/%Y'))}",
            "give --time-format '%d/%m/%Y'",
            "give time_format='%d/%m/%Y'",
        ),
        (
            f"(or {flag('time-unit', 's')} to keep seconds)",
            "(or --time-unit s to keep seconds)",
            "(or time_unit='s' to keep seconds)",
        ),
        (
            f"{flag('on-bad-row')} is one of fail, skip",
            "--on-bad-row is one of fail, skip",
            "on_bad_row= is one of fail, skip",
        ),
        (f"use {flag('on-bad-row', 'skip')}", "use --on-bad-row skip", "use on_bad_row='skip'"),
        (
            f"a lazy engine ({flag('engine', 'tree')}, or {flag('engine', 'columnar')})",
            "a lazy engine (--engine tree, or --engine columnar)",
            "a lazy engine (engine='tree', or engine='columnar')",
        ),
        (f"see {flag('max-row-bytes')})", "see --max-row-bytes)", "see max_row_bytes=)"),
        (f"at most {flag('max-row-bytes', 16)}", "at most --max-row-bytes 16", "at most max_row_bytes=16"),
        (
            f"{flag('no-header')} needs {flag('columns')}; or {flag('sort')}",
            "--no-header needs --columns; or --sort",
            "header=False needs columns=; or sort=True",
        ),
        (
            f"with {flag('spark')} {flag('output', 'DIR')}",
            "with --spark --output DIR",
            "with --spark --output DIR",
        ),
        (f"more {flag('partitions', 4)}", "more --partitions 4", "more partitions=4"),
        (
            "no flag here: a.x -- b.x --schema",
            "no flag here: a.x -- b.x --schema",
            "no flag here: a.x -- b.x --schema",
        ),
    ],
)
def test_an_option_in_a_message_is_said_by_each_face(message: str, cli_said: str, python_said: str) -> None:
    """An option a message names (``flag``) is the flag on the command line and the keyword
    argument from Python; text that merely looks like a flag is left alone."""
    assert said(message) == cli_said
    assert said(message, "python") == python_said
