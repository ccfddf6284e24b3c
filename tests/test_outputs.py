"""What cepcli writes: checked before the work, one line on a write error with the file
ending at its last complete match, and a quiet exit 0 when the reader of a pipe goes away
(``| head``), for every command that writes to standard output."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from cepcli.cli import cli

CEPCLI = str(Path(sys.executable).with_name("cepcli"))
ROOT = Path(__file__).resolve().parent.parent
SEQ = str(ROOT / "patterns" / "stocks_seq.sase")


def _many(tmp_path: Path) -> tuple[Path, Path]:
    """A query with thousands of matches (about 200 bytes each as jsonl)."""
    query, data = tmp_path / "q.sase", tmp_path / "in.csv"
    query.write_text("PATTERN SEQ(A a, B b) WITHIN 100\n")
    data.write_text("ts,type\n" + "".join(f"{i},{'AB'[i % 2]}\n" for i in range(400)))
    return query, data


@pytest.mark.parametrize("option", ["--output", "--stats-json"])
def test_an_output_in_a_missing_directory_fails_before_the_work(tmp_path: Path, option: str) -> None:
    query, data = _many(tmp_path)
    target = tmp_path / "no" / "such" / "file.json"
    result = CliRunner().invoke(
        cli, ["run", str(query), "-i", str(data), "--format", "jsonl", option, str(target)]
    )
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"cepcli: error: {target}: cannot write: no directory '{target.parent}' ({option})"
    ]
    assert result.stdout == ""  # nothing was evaluated


def test_an_output_that_is_a_directory_is_refused(tmp_path: Path) -> None:
    query, data = _many(tmp_path)
    result = CliRunner().invoke(cli, ["run", str(query), "-i", str(data), "-o", str(tmp_path)])
    assert result.exit_code == 1
    assert "cannot write: it is a directory (--output takes a file)" in result.stderr


def test_a_spark_output_directory_that_exists_is_refused_before_spark_starts(tmp_path: Path) -> None:
    query, data = _many(tmp_path)
    result = CliRunner().invoke(cli, ["run", str(query), "-i", str(data), "--spark", "-o", str(tmp_path)])
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        f"cepcli: error: {tmp_path}: cannot write: it exists (--spark --output writes a new directory)"
    )


def _limit_file_size(size: int) -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))


def test_a_write_error_leaves_complete_lines_and_names_the_file(tmp_path: Path) -> None:
    """The file system refuses more bytes (here a file size limit, as a full disk would):
    one line naming the file and the cause, exit 1, the file cut at its last whole match."""
    query, data = _many(tmp_path)
    out = tmp_path / "m.jsonl"
    run = subprocess.run(
        [CEPCLI, "run", str(query), "-i", str(data), "--format", "jsonl", "-o", str(out), "-q"],
        capture_output=True, text=True, timeout=60, preexec_fn=lambda: _limit_file_size(50_001),
    )  # fmt: skip
    assert run.returncode == 1
    assert run.stderr.splitlines() == [f"cepcli: error: {out}: cannot write: File too large"]
    text = out.read_text()
    assert 40_000 < len(text) <= 50_001 and text.endswith("\n")
    assert all(json.loads(line)["a"]["type"] == "A" for line in text.splitlines())


def test_a_full_standard_output_is_one_line(tmp_path: Path) -> None:
    query, data = _many(tmp_path)
    with open("/dev/full", "w") as full:
        run = subprocess.run(
            [CEPCLI, "run", str(query), "-i", str(data), "--format", "jsonl", "-q"],
            stdout=full, stderr=subprocess.PIPE, text=True, timeout=60,
        )  # fmt: skip
    assert run.returncode == 1
    assert run.stderr.splitlines() == ["cepcli: error: <stdout>: cannot write: No space left on device"]


@pytest.mark.parametrize(
    "command",
    [
        ["run", SEQ],
        ["run", SEQ, "--format", "jsonl"],
        ["run", SEQ, "--format", "csv"],
        ["explain", SEQ],
        ["bench", SEQ, "--engines", "tree,chain"],
    ],
    ids=["run-table", "run-jsonl", "run-csv", "explain", "bench"],
)
def test_a_reader_that_goes_away_is_a_quiet_exit_0(command: list[str]) -> None:
    """``cepcli ... | head -1``: the reader closes the pipe after one line."""
    for _ in range(3):
        run = subprocess.Popen([CEPCLI, *command], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
        assert run.stdout is not None and run.stderr is not None
        run.stdout.readline()
        run.stdout.close()
        err = run.stderr.read().decode()
        assert run.wait(timeout=60) == 0, err
        assert "Error" not in err and "Traceback" not in err
