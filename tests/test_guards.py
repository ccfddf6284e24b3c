"""Resource guards: a warning when Kleene subsets explode (generated lazily anyway)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
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


def _b_stream(tmp_path: Path, count: int) -> tuple[Path, Path]:
    """``SEQ(B+ d[], A w)`` over B's only, three per time unit (issue 16's case): eager keeps
    an instance per non-empty subset of the B's in the window, the lazy engines store each B."""
    query, data = tmp_path / "q.sase", tmp_path / "in.csv"
    query.write_text("PATTERN SEQ(B+ d[], A w) WITHIN 13\n")
    data.write_text("ts,type\n" + "".join(f"{i // 3},B\n" for i in range(count)))
    return query, data


def test_eager_stops_at_max_instances_with_the_cause(tmp_path: Path) -> None:
    query, data = _b_stream(tmp_path, 40)
    args = ["run", str(query), "-i", str(data), "--format", "jsonl", "-q"]
    result = CliRunner().invoke(cli, [*args, "--engine", "eager", "--max-instances", "5000"])
    assert result.exit_code == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith("cepcli: error: more than 5,000 live instances (--max-instances): the eager NFA")
    assert "a lazy engine (--engine tree, or --engine chain)" in line
    for engine in ("tree", "chain", "first-chance", "post-processing"):
        lazy = CliRunner().invoke(cli, [*args, "--engine", engine, "--max-instances", "5000"])
        assert lazy.exit_code == 0 and lazy.stdout == "", (engine, lazy.output)


def test_the_default_bound_stops_the_runaway_case(tmp_path: Path) -> None:
    """Without the bound eager takes 1.4 GB and 90 s here; with the default (1,000,000) it
    stops in seconds."""
    query, data = _b_stream(tmp_path, 66)
    result = CliRunner().invoke(cli, ["run", str(query), "-i", str(data), "--engine", "eager", "-q"])
    assert result.exit_code == 1
    assert "more than 1,000,000 live instances" in result.stderr


def test_matches_before_the_bound_are_written_and_the_api_raises(tmp_path: Path) -> None:
    import cepcli
    from cepcli.errors import LimitError

    query = "PATTERN SEQ(A a, B+ b[], C c) WITHIN 100"
    rows = ["ts,type", "0,A", "1,B", "2,C"] + [f"{i},B" for i in range(3, 40)]
    data = tmp_path / "in.csv"
    data.write_text("\n".join(rows) + "\n")
    found = cepcli.find(query, data, engine="eager", max_instances=10_000)
    got = []
    with pytest.raises(LimitError, match="more than 10,000 live instances"):
        for match in found:
            got.append(match)
    assert len(got) == 1  # [A, B, C] was decided before the B's piled up
    assert len(list(cepcli.find(query, data, engine="tree", max_instances=10_000))) == 1


def test_many_windows_of_many_candidates_warn_once_with_the_largest(tmp_path: Path) -> None:
    """Windows of 11 to 14 candidates, each past --max-subsets: one warning, at the end,
    naming the largest set (a run used to print one per set size, 32-72 lines)."""
    query, data = tmp_path / "q.sase", tmp_path / "in.csv"
    query.write_text("PATTERN SEQ(A a, B+ b[], C c) WITHIN 20\n")
    rows, t = ["ts,type"], 0
    for n in (11, 14, 12, 13):
        rows += [f"{t},A"] + [f"{t + 1 + i},B" for i in range(n)] + [f"{t + 1 + n},C"]
        t += 100
    data.write_text("\n".join(rows) + "\n")
    for engine in ("chain", "tree", "adaptive"):
        args = ["run", str(query), "-i", str(data), "--format", "csv", "-q", "--engine", engine]
        result = CliRunner().invoke(cli, [*args, "--max-subsets", "1000"])
        assert result.exit_code == 0, result.output
        (line,) = [w for w in result.stderr.splitlines() if w.startswith("warning:")]
        assert "up to 14 candidates in one window: up to 16,383 subsets" in line, (engine, line)
        assert len(result.stdout.splitlines()) == 1 + sum(2**n - 1 for n in (11, 14, 12, 13))
