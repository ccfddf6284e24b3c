"""Every example in patterns/ runs from the command line, and its matches are exactly
the oracle's on the bundled sample it reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cepcli.cli import cli
from cepcli.engines import ENGINES, compile_pattern
from tests.oracle import oracle

ROOT = Path(__file__).resolve().parent.parent
PATTERNS = sorted((ROOT / "patterns").glob("*.sase"))


def test_there_is_a_pattern_per_operator_family() -> None:
    text = " ".join(p.read_text().upper() for p in PATTERNS)
    for construct in ("SEQ(", "AND(", "OR(", "NOT ", "+ ", "{2,3}", "[ROOM]", "AVG("):
        assert construct in text, construct


@pytest.mark.parametrize("engine", sorted(ENGINES))
@pytest.mark.parametrize("path", PATTERNS, ids=[p.stem for p in PATTERNS])
def test_pattern_runs_and_equals_the_oracle(path: Path, engine: str) -> None:
    result = CliRunner().invoke(cli, ["run", str(path), "--engine", engine, "--format", "jsonl", "-q"])
    assert result.exit_code == 0, result.output
    found = set()
    for line in result.stdout.splitlines():
        match = json.loads(line)
        found.add(
            frozenset(
                (name, tuple(e["_row"] for e in value) if isinstance(value, list) else (value["_row"],))
                for name, value in match.items()
            )
        )
    query, _ = compile_pattern(path.read_text())
    assert query.source is not None
    data = (path.parent / query.source).read_text()
    expected = oracle(path.read_text(), data)
    assert found == expected
    assert expected, "each example should show at least one match on its sample"
