"""Resource guards: a warning when Kleene subsets explode (generated lazily anyway)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from cepcli.cli import cli


def test_many_kleene_candidates_warn_once_and_still_match(tmp_path: Path) -> None:
    query, data, stats = tmp_path / "q.sase", tmp_path / "in.csv", tmp_path / "s.json"
    query.write_text("PATTERN SEQ(A a, B+ b[], C c) WITHIN 100\n")
    rows = ["ts,type", "0,A"] + [f"{i},B" for i in range(1, 13)] + ["13,C", "14,C"]
    data.write_text("\n".join(rows) + "\n")
    args = ["run", str(query), "-i", str(data), "--format", "csv", "-q", "--stats-json", str(stats)]
    result = CliRunner().invoke(cli, [*args, "--engine", "chain", "--max-subsets", "1000"])
    assert result.exit_code == 0, result.output
    assert result.stderr.count("warning:") == 1
    assert "12 candidates in one window: up to 4,095 subsets" in result.stderr
    # every non-empty subset of the 12 B's, for each of the two C's
    assert len(result.stdout.splitlines()) == 1 + 2 * 4095
    assert json.loads(stats.read_text())["warnings"]
    quiet = CliRunner().invoke(cli, [*args, "--engine", "chain"])
    assert "warning" not in quiet.stderr
