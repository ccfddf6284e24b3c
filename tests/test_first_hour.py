"""What a new user meets in a first hour (issue "the first hour"): the statistics panel
shows the prefilter's work, and ``--stats-json`` is written when the output's reader leaves
early (``| head -1``), with the run's exit 0."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from cepcli.cli.app import cli

ROWS = "type,ts,x\n" + "".join(f"{'AB'[i % 2]},{i},{i % 7}\n" for i in range(20_000))


def test_the_panel_shows_the_prefilter_s_evaluations(tmp_path: Path) -> None:
    """A condition on one variable is evaluated by the vectorised prefilter: the panel
    says how often (the automaton's own count can be 0)."""
    data = tmp_path / "in.csv"
    data.write_text("".join(ROWS.splitlines(keepends=True)[:30]))
    result = CliRunner().invoke(
        cli,
        ["run", "-e", "PATTERN SEQ(A a, B b) WHERE a.x > 3 WITHIN 2", "-i", str(data), "--format", "jsonl"],
    )
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if "prefilter evaluations" in x)
    assert int(line.split()[-2].replace(",", "")) > 0


def test_stats_json_is_written_when_the_reader_of_the_output_leaves(tmp_path: Path) -> None:
    data, stats = tmp_path / "in.csv", tmp_path / "stats.json"
    data.write_text(ROWS)
    proc = subprocess.Popen(
        [sys.executable, "-m", "cepcli", "run", "-e", "PATTERN SEQ(A a, B b) WITHIN 50", "-i", str(data)]
        + ["--format", "jsonl", "--stats-json", str(stats)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()  # as `| head -1`: one line, then the pipe is closed
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 0, err
    assert json.loads(first)["a"]["_row"] == 0
    said = json.loads(stats.read_text())
    assert said["output_closed"] is True and said["matches"] >= 1 and said["events"] > 0


def test_a_from_path_beside_the_query_is_named_without_its_dots(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """FROM is relative to the query file: ``queries/../data/x.csv`` is named as the file
    it is, ``data/x.csv`` (from the working folder), in messages, and read from there."""
    (tmp_path / "queries").mkdir()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "x.csv").write_text("type,ts\nA,1\nB,2\n")
    query = tmp_path / "queries" / "q.sase"
    monkeypatch.chdir(tmp_path)
    query.write_text("FROM '../data/missing.csv'\nPATTERN SEQ(A a, B b) WITHIN 5\n")
    missing = CliRunner().invoke(cli, ["run", "queries/q.sase"])
    assert missing.exit_code == 1
    assert "data/missing.csv: cannot open" in missing.output and ".." not in missing.output
    query.write_text("FROM '../data/x.csv'\nPATTERN SEQ(A a, B b) WITHIN 5\n")
    found = CliRunner().invoke(cli, ["run", "queries/q.sase", "--format", "jsonl", "-q"])
    assert found.exit_code == 0 and len(found.output.splitlines()) == 1
