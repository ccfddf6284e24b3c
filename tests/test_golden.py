"""Golden files for the query language (docs/query-language.md).

* ``golden/valid/NAME.sase``: a valid query whose first line is ``-- branches: N``
  (how many DNF branches it normalises to); ``NAME.expected`` holds its canonical
  ``print_query`` text.
* ``golden/invalid/NAME.sase``: a query that must fail; ``NAME.expected`` holds the
  whole rendered error (``NAME.sase:line:col: message``, the line, the caret).

``UPDATE_GOLDEN=1 pytest tests/test_golden.py`` rewrites every ``.expected`` file from
what the code produces today. Review the diff before keeping it: a golden file states
what the output *should* be, not whatever the code happens to print.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from cepcli.engines import compile_pattern
from cepcli.errors import QueryError
from cepcli.query.parser import parse_query
from cepcli.query.printer import print_query

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"
_BRANCHES = re.compile(r"\A--\s*branches:\s*(\d+)\s*$", re.MULTILINE)


def _queries(kind: str) -> list[Path]:
    return sorted((GOLDEN / kind).glob("*.sase"))


VALID = _queries("valid")
INVALID = _queries("invalid")


def _params(paths: list[Path]) -> list[object]:
    return [pytest.param(p, id=p.stem) for p in paths]


def _check_golden(query_file: Path, actual: str) -> None:
    expected_file = query_file.with_suffix(".expected")
    if UPDATE:
        expected_file.write_text(actual)
        return
    assert expected_file.exists(), (
        f"{expected_file.name} is missing: run with UPDATE_GOLDEN=1 and review it"
    )
    assert actual == expected_file.read_text()


def _declared_branches(text: str) -> int:
    found = _BRANCHES.match(text)
    assert found, "a valid golden query starts with a '-- branches: N' line"
    return int(found.group(1))


# --- valid queries -----------------------------------------------------------------


@pytest.mark.parametrize("path", _params(VALID))
def test_valid_prints_canonical_text(path: Path) -> None:
    query = parse_query(path.read_text(), path.name)
    _check_golden(path, print_query(query))


@pytest.mark.parametrize("path", _params(VALID))
def test_valid_round_trips(path: Path) -> None:
    query = parse_query(path.read_text(), path.name)
    printed = print_query(query)
    assert parse_query(printed, "printed") == query
    # The canonical text is a fixed point: printing its parse gives it back.
    assert print_query(parse_query(printed, "printed")) == printed


@pytest.mark.parametrize("path", _params(VALID))
def test_valid_compiles_to_declared_branches(path: Path) -> None:
    text = path.read_text()
    _, pattern = compile_pattern(text, path.name)
    assert len(pattern.branches) == _declared_branches(text)


# --- invalid queries ---------------------------------------------------------------


@pytest.mark.parametrize("path", _params(INVALID))
def test_invalid_reports_error(path: Path) -> None:
    with pytest.raises(QueryError) as info:
        compile_pattern(path.read_text(), path.name)
    error = info.value
    assert error.exit_code == 2
    _check_golden(path, error.render() + "\n")


# --- the golden directories themselves ---------------------------------------------


@pytest.mark.parametrize("kind", ["valid", "invalid"])
def test_every_expected_file_has_its_query(kind: str) -> None:
    orphans = [
        p.name for p in (GOLDEN / kind).glob("*.expected") if not p.with_suffix(".sase").exists()
    ]
    assert not orphans
