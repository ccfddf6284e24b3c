"""What cepcli writes: checked before the work, one line on a write error with the file
ending at its last complete match, and a quiet exit 0 when the reader of a pipe goes away
(``| head``), for every command that writes to standard output."""

from __future__ import annotations

import json
import os
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


@pytest.mark.parametrize("option", ["--output", "--stats-json"])
def test_an_output_inside_a_file_fails_before_the_work(tmp_path: Path, option: str) -> None:
    query, data = _many(tmp_path)
    target = data / "x.jsonl"  # a path under a file, as /etc/passwd/x.jsonl
    result = CliRunner().invoke(
        cli, ["run", str(query), "-i", str(data), "--format", "jsonl", option, str(target)]
    )
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"cepcli: error: {target}: cannot write: no directory '{data}' ({option})"
    ]
    assert result.stdout == ""


@pytest.mark.parametrize("option", ["--output", "--stats-json"])
def test_a_path_no_user_can_make_fails_before_the_work(tmp_path: Path, option: str) -> None:
    """Nothing can be made in ``/proc``, by any user, though it passes ``os.access(W_OK)``
    for root: the check tries what the run will do, it does not assume."""
    query, data = _many(tmp_path)
    result = CliRunner().invoke(
        cli, ["run", str(query), "-i", str(data), "--format", "jsonl", option, "/proc/x.jsonl"]
    )
    assert result.exit_code == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith("cepcli: error: /proc/x.jsonl: cannot write: ") and line.endswith(f"({option})")
    assert result.stdout == ""


def test_the_stats_file_is_left_as_it_was_until_the_run_writes_it(tmp_path: Path) -> None:
    """Its check makes no file that stays, and empties none: when --output then fails to
    open (nothing can be made in /proc, by any user), an existing --stats-json keeps its
    content, and a new one is not left behind."""
    query, data = _many(tmp_path)
    kept, new = tmp_path / "kept.json", tmp_path / "new.json"
    kept.write_text("earlier\n")
    for stats in (kept, new):
        result = CliRunner().invoke(
            cli, ["run", str(query), "-i", str(data), "--stats-json", str(stats), "-o", "/proc/x.jsonl"]
        )
        assert result.exit_code == 1
        assert result.stderr.startswith("cepcli: error: /proc/x.jsonl: cannot write: ")
    assert kept.read_text() == "earlier\n"
    assert not new.exists()
    ok = CliRunner().invoke(cli, ["run", str(query), "-i", str(data), "--stats-json", str(new), "-q"])
    assert ok.exit_code == 0 and json.loads(new.read_text())["matches"] > 0


def test_bench_checks_its_files_before_the_work(tmp_path: Path) -> None:
    query, data = _many(tmp_path)
    target = data / "bench.json"
    result = CliRunner().invoke(cli, ["bench", str(query), "-i", str(data), "--json", str(target)])
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"cepcli: error: {target}: cannot write: no directory '{data}' (--json)"
    ]
    assert result.stdout == ""


def test_a_spark_output_directory_that_cannot_be_made_is_refused_before_spark_starts(tmp_path: Path) -> None:
    query, data = _many(tmp_path)
    result = CliRunner().invoke(cli, ["run", str(query), "-i", str(data), "--spark", "-o", "/proc/x"])
    assert result.exit_code == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith("cepcli: error: /proc/x: cannot write: ") and line.endswith("(--output)")


def test_a_spark_output_directory_that_exists_is_refused_before_spark_starts(tmp_path: Path) -> None:
    query, data = _many(tmp_path)
    result = CliRunner().invoke(cli, ["run", str(query), "-i", str(data), "--spark", "-o", str(tmp_path)])
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        f"cepcli: error: {tmp_path}: cannot write: it exists (--spark --output writes a new directory)"
    )


def _env(unbuffered: bool) -> dict[str, str]:
    """This environment, with Python's standard output unbuffered or not (a shell may have
    ``PYTHONUNBUFFERED`` either way)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    return {**env, "PYTHONUNBUFFERED": "1"} if unbuffered else env


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


@pytest.mark.parametrize(
    ("fmt", "mode", "unbuffered"),
    [("jsonl", "w", False), ("jsonl", "a", True), ("csv", "w", True), ("csv", "a", False)],
    ids=["jsonl-at-an-offset", "jsonl-appended-unbuffered", "csv-at-an-offset-unbuffered", "csv-appended"],
)
def test_a_write_error_on_redirected_standard_output_cuts_it_back(
    tmp_path: Path, fmt: str, mode: str, unbuffered: bool
) -> None:
    """``cepcli run ... > file`` (``mode`` w: at the offset of what the shell wrote first;
    a: ``>>``) on a full disk: as with --output, one line and exit 1, and the file ends at
    its last complete match, also for whoever writes to it next (no hole, no cut line).
    Unbuffered (``PYTHONUNBUFFERED``), Python's text stream would drop what a short write
    left out and report success."""
    query, data = _many(tmp_path)
    out = tmp_path / "m.txt"
    out.write_text("old\n")
    with open(out, mode) as stdout:
        stdout.write("before\n")
        stdout.flush()
        run = subprocess.run(
            [CEPCLI, "run", str(query), "-i", str(data), "--format", fmt, "-q"],
            stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=60, env=_env(unbuffered),
            preexec_fn=lambda: _limit_file_size(50_001),
        )  # fmt: skip
        stdout.write("after\n")
    assert run.returncode == 1
    assert run.stderr.splitlines() == ["cepcli: error: <stdout>: cannot write: File too large"]
    text = out.read_text()
    first, *matches, last = text.splitlines()
    assert (first, last) == ("old" if mode == "a" else "before", "after")
    if mode == "a":
        assert matches.pop(0) == "before"
    assert 40_000 < len(text) <= 50_001 + len("after\n") and "\0" not in text
    if fmt == "jsonl":
        assert all(json.loads(line)["a"]["type"] == "A" for line in matches)
    else:
        assert matches[0] == "a._row,a.ts,a.type,b._row,b.ts,b.type"
        assert all(len(line.split(",")) == 6 and line.split(",")[2] == "A" for line in matches[1:])


def test_a_table_that_cannot_be_written_whole_is_cut_back_to_nothing(tmp_path: Path) -> None:
    query, data = _many(tmp_path)
    out = tmp_path / "m.txt"
    with open(out, "w") as stdout:
        stdout.write("before\n")
        stdout.flush()
        run = subprocess.run(
            [CEPCLI, "run", str(query), "-i", str(data), "-q"],
            stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=60,
            preexec_fn=lambda: _limit_file_size(500),
        )  # fmt: skip
    assert run.returncode == 1
    assert run.stderr.splitlines() == ["cepcli: error: <stdout>: cannot write: File too large"]
    assert out.read_text() == "before\n"


@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "unbuffered"])
def test_a_full_standard_output_is_one_line(tmp_path: Path, unbuffered: bool) -> None:
    """A device cannot be cut back, but what is still buffered is dropped: no second
    error when the interpreter exits (``Exception ignored``, exit 120)."""
    query, data = _many(tmp_path)
    with open("/dev/full", "w") as full:
        run = subprocess.run(
            [CEPCLI, "run", str(query), "-i", str(data), "--format", "jsonl", "-q"],
            stdout=full, stderr=subprocess.PIPE, text=True, timeout=60, env=_env(unbuffered),
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
