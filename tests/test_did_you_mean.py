"""A misspelled name gets "did you mean" with the closest right one (docs/errors-and-limits.md):
a column, a variable, an engine or a format, on the command line and in ``cepcli.find``;
a name close to nothing gets the list alone."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

import cepcli
from cepcli.cli.app import cli
from cepcli.errors import CepError

CSV = "type,ts,price,kind\nA,1,1,x\nB,2,5,y\n"


@pytest.fixture
def data(tmp_path: Path) -> str:
    path = tmp_path / "in.csv"
    path.write_text(CSV)
    return str(path)


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["run", *args])
    return result.exit_code, result.output


@pytest.mark.parametrize(
    "query,said",
    [
        (
            "PATTERN SEQ(A a, B b) WHERE a.prise > 1 WITHIN 5",
            "no column 'prise' (did you mean 'price'? columns:",
        ),
        ("PATTERN SEQ(A a, B bb) WHERE b.price > 1 WITHIN 5", "unknown variable 'b' (did you mean 'bb'?"),
        (
            "PATTERN SEQ(A a, B b) WHERE a.zzz > 1 WITHIN 5",
            "no column 'zzz' (columns: type, ts, price, kind)",
        ),
    ],
)
def test_a_misspelled_name_in_a_query(data: str, query: str, said: str) -> None:
    code, output = _run("-e", query, "-i", data)
    assert code == 2 and said in output
    with pytest.raises(CepError, match=re.escape(said)):
        cepcli.find(query, data)


@pytest.mark.parametrize(
    "option,value,said",
    [("--engine", "colum", "did you mean 'columnar'?"), ("--format", "jsnl", "did you mean 'jsonl'?")],
)
def test_a_misspelled_choice_on_the_command_line(data: str, option: str, value: str, said: str) -> None:
    code, output = _run("-e", "PATTERN SEQ(A a, B b) WITHIN 5", "-i", data, option, value)
    assert code == 2 and said in output


def test_a_misspelled_engine_in_find(data: str) -> None:
    with pytest.raises(CepError, match="unknown engine 'tre' \\(did you mean 'tree'\\?"):
        cepcli.find("PATTERN SEQ(A a, B b) WITHIN 5", data, engine="tre")
