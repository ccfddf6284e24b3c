"""Numbers exact end to end (issue 25): a column of whole numbers and fractions is read as
float, and where a whole number there is one a float cannot hold (beyond 2^53) the run says
so once, naming the column, the value and its row; ``--schema col:decimal`` reads the
column exactly instead (compared as exact fractions, printed as written)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cepcli.cli import cli
from cepcli.engines import ENGINES

BIG = 2**53  # 9007199254740992: BIG + 1 is no float
QUERY = "PATTERN SEQ(A a, B b) WHERE a.id = b.id WITHIN 10"
TEXT = f"type,ts,id\nA,1,{BIG + 1}\nB,2,{BIG}\nA,3,0.5\nB,4,0.5\n"


def _run(tmp_path: Path, text: str, *args: str) -> tuple[list[dict[str, dict[str, object]]], str, int]:
    path = tmp_path / "in.csv"
    path.write_text(text)
    result = CliRunner().invoke(cli, ["run", "-e", QUERY, "-i", str(path), "--format", "jsonl", "-q", *args])
    return [json.loads(x) for x in result.stdout.splitlines()], result.stderr, result.exit_code


def test_a_whole_number_a_float_cannot_hold_is_said_once(tmp_path: Path) -> None:
    found, err, code = _run(tmp_path, TEXT)
    assert code == 0
    rows = [(m["a"]["_row"], m["b"]["_row"]) for m in found]
    assert rows == [(0, 1), (2, 3)]  # as floats, 2^53+1 = 2^53: what a float column means
    assert err == (
        f"warning: column 'id' holds whole numbers and fractions, so it is read as float, and {BIG + 1}"
        f" (row 0) is not exactly a float: it compares and prints as {float(BIG)!r} (give --schema"
        " id:decimal to keep every value exact)\n"
    )


def test_no_word_where_every_whole_number_is_a_float(tmp_path: Path) -> None:
    _, err, code = _run(tmp_path, f"type,ts,id\nA,1,{BIG}\nB,2,{BIG}\nA,3,0.5\nB,4,1{'0' * 20}\n")
    assert code == 0 and err == ""  # 2^53 and 10^20 are floats exactly


@pytest.mark.parametrize("engine", list(ENGINES))
def test_decimal_keeps_every_value_exact(tmp_path: Path, engine: str) -> None:
    found, err, code = _run(tmp_path, TEXT, "--schema", "id:decimal", "--engine", engine)
    assert code == 0 and err == ""
    assert [(m["a"]["_row"], m["b"]["_row"]) for m in found] == [(2, 3)]  # 2^53+1 != 2^53 now
    assert found[0]["a"]["id"] == 0.5


def test_decimal_text_prints_as_written_and_a_word_is_a_bad_row(tmp_path: Path) -> None:
    text = "type,ts,p\nA,1,0.10\nB,2,0.1\nB,3,abc\n"
    path = tmp_path / "p.csv"
    path.write_text(text)
    query = "PATTERN SEQ(A a, B b) WHERE a.p = b.p WITHIN 10"
    result = CliRunner().invoke(
        cli, ["run", "-e", query, "-i", str(path), "--schema", "p:decimal", "--format", "csv", "-q"]
    )
    assert result.exit_code == 1
    assert result.stdout.splitlines()[1].split(",")[3] == "0.10"  # as written
    assert result.stderr.strip() == (
        f"cepcli: error: {path}: row 2: column 'p' holds 'abc', which is not a decimal number (the column's"
        " kind, read from the first 3 rows; to read it as text, give --schema p:str)"
    )


def test_json_and_a_dataframe_say_it_too(tmp_path: Path) -> None:
    """The same rule where the whole numbers and fractions are JSON numbers, or a DataFrame
    object column (Arrow refuses to round them into a float column: read as text)."""
    import pandas as pd

    import cepcli

    lines = [
        f'{{"type":"{t}","ts":{i + 1},"id":{v}}}'
        for i, (t, v) in enumerate(zip("ABAB", [BIG + 1, BIG, 0.5, 0.5], strict=True))
    ]
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(lines) + "\n")
    frame = pd.DataFrame(
        {"type": list("ABAB"), "ts": [1, 2, 3, 4], "id": pd.Series([BIG + 1, BIG, 0.5, 0.5], dtype=object)}
    )
    for data in (str(path), frame):
        found = cepcli.find(QUERY, data)
        assert sorted((m["a"]["_row"], m["b"]["_row"]) for m in found) == [(0, 1), (2, 3)]
        assert [w for w in found.stats.warnings if f"and {BIG + 1} (row 0) is not exactly a float" in w]
        exact = cepcli.find(QUERY, data, schema={"id": "decimal"})
        assert [(m["a"]["_row"], m["b"]["_row"]) for m in exact] == [(2, 3)]
