"""Streaming (docs/input.md): read from a pipe, each complete row is evaluated as soon as
it is read, and a match is written as soon as it is decided: before the writer closes
the pipe. Real processes, a real pipe, rows written one at a time."""

from __future__ import annotations

import gzip
import json
import os
import select
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

HEADER = b"type,ts,x\n"


def _start(tmp_path: Path, query: str, *args: str) -> subprocess.Popen[bytes]:
    q = tmp_path / "q.sase"
    q.write_text(query)
    cmd = [sys.executable, "-m", "cepcli", "run", str(q), "-i", "-", "--format", "jsonl", "-q", *args]
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _line(proc: subprocess.Popen[bytes], seconds: float) -> bytes | None:
    """The next line of output within ``seconds``, or None."""
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], seconds)
    return proc.stdout.readline() if ready else None


def _write(proc: subprocess.Popen[bytes], data: bytes) -> None:
    assert proc.stdin is not None
    proc.stdin.write(data)
    proc.stdin.flush()


def _finish(proc: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdin.close()
    out, err = proc.stdout.read(), proc.stderr.read()
    assert proc.wait(timeout=60) == 0, err
    return out, err


@pytest.mark.parametrize(
    "engine",
    [
        ["--engine", "tree"],
        ["--engine", "eager"],
        ["--engine", "chain", "--order", "b,a"],
        ["--engine", "chain"],
    ],
)
def test_a_match_is_written_before_the_pipe_closes(tmp_path: Path, engine: list[str]) -> None:
    """The writer sends two rows half a second apart and keeps the pipe open: the match of
    the first two rows comes out while it waits (a chain engine without --order measures
    the frequencies over the rows of the first read, so as not to wait)."""
    proc = _start(tmp_path, "PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 10", *engine)
    _write(proc, HEADER + b"A,1,1\n")
    time.sleep(0.5)
    _write(proc, b"B,2,5\n")
    line = _line(proc, 20)
    assert line is not None, "no match before the pipe closed"
    assert (json.loads(line)["a"]["_row"], json.loads(line)["b"]["_row"]) == (0, 1)
    _write(proc, b"B,3,0\n")
    assert _line(proc, 0.5) is None  # 1 < 0 is false: nothing
    out, _ = _finish(proc)
    assert out == b""


def test_a_trailing_negation_is_released_when_its_window_closes(tmp_path: Path) -> None:
    """``SEQ(A a, B b, NOT C n)``: the match waits until an event past the window after ``a``
    shows that no C can come; it is written then, with the pipe still open."""
    proc = _start(tmp_path, "PATTERN SEQ(A a, B b, NOT C n) WITHIN 5")
    _write(proc, HEADER + b"A,0,0\nB,1,0\n")
    assert _line(proc, 1.0) is None  # a C may still come until ts 5
    _write(proc, b"X,6,0\n")
    line = _line(proc, 20)
    assert line is not None and json.loads(line)["b"]["_row"] == 1
    _finish(proc)


def test_a_gzip_stream_is_evaluated_as_it_comes(tmp_path: Path) -> None:
    proc = _start(tmp_path, "PATTERN SEQ(A a, B b) WITHIN 10")
    packer = zlib.compressobj(wbits=31)  # a gzip stream, flushed after each row
    _write(proc, packer.compress(HEADER + b"A,1,0\nB,2,0\n") + packer.flush(zlib.Z_SYNC_FLUSH))
    line = _line(proc, 20)
    assert line is not None and json.loads(line)["a"]["_row"] == 0
    _write(proc, packer.flush())
    _finish(proc)


def test_a_quoted_field_with_a_line_break_waits_for_its_end(tmp_path: Path) -> None:
    """A row whose quoted field is still open at a line break is not cut there."""
    proc = _start(tmp_path, "PATTERN SEQ(A a, B b) WITHIN 10")
    _write(proc, b'type,ts,note\nA,1,"two\n')
    time.sleep(0.3)
    _write(proc, b'lines"\nB,2,x\n')
    line = _line(proc, 20)
    assert line is not None and json.loads(line)["a"]["note"] == "two\nlines"
    _finish(proc)


def test_kinds_on_a_pipe_come_from_the_first_row_and_widen(tmp_path: Path) -> None:
    """A pipe cannot be looked ahead: a column is typed by its first row; whole numbers
    that meet a fraction become float from there on (with a warning), instead of failing."""
    proc = _start(tmp_path, "PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 10")
    _write(proc, HEADER + b"A,1,185\nB,2,185.5\n")
    line = _line(proc, 20)
    assert line is not None and json.loads(line)["b"]["x"] == 185.5
    _, err = _finish(proc)
    assert b"column 'x' holds fractions from row 1 on: read as float" in err


def test_a_file_through_standard_input_is_read_like_a_file(tmp_path: Path) -> None:
    """Standard input redirected from a file is no pipe: its kinds come from the sample."""
    data = tmp_path / "in.csv"
    data.write_bytes(gzip.compress(HEADER + b"A,1,185\nB,2,185.5\n"))
    q = tmp_path / "q.sase"
    q.write_text("PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 10")
    with data.open("rb") as stdin:
        done = subprocess.run(
            [sys.executable, "-m", "cepcli", "run", str(q), "--format", "jsonl"],
            stdin=stdin,
            capture_output=True,
            timeout=60,
            env={**os.environ, "COLUMNS": "200"},
        )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["a"]["x"] == 185.0  # float from the start: no warning
    assert b"fractions" not in done.stderr


def test_the_default_format_on_a_pipe_streams(tmp_path: Path) -> None:
    """Without --format, a pipe gets jsonl (each match as it is found, with the pipe still
    open) and one line on standard error saying so; the table would wait for the end."""
    q = tmp_path / "q.sase"
    q.write_text("PATTERN SEQ(A a, B b) WITHIN 10")
    proc = subprocess.Popen(
        [sys.executable, "-m", "cepcli", "run", str(q), "-i", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    _write(proc, HEADER + b"A,1,1\nB,2,5\n")
    line = _line(proc, 60)
    assert line is not None and json.loads(line)["b"]["_row"] == 1
    _, err = _finish(proc)
    assert b"the input is a stream: matches are written as jsonl lines as they are found" in err


def test_follow_reads_a_file_as_another_process_appends_to_it(tmp_path: Path) -> None:
    """``--follow``: rows appended to the file after the run started are read, and their
    match written, while the run waits for more (until Ctrl-C: exit 130, lines whole)."""
    import signal

    data, query = tmp_path / "events.csv", tmp_path / "q.sase"
    data.write_bytes(HEADER + b"A,0,1\n")
    query.write_text("PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 5")
    cmd = [
        sys.executable,
        "-m",
        "cepcli",
        "run",
        str(query),
        "-i",
        str(data),
        "--follow",
        "--format",
        "jsonl",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert _line(proc, 1.0) is None  # no B yet: nothing, and the run goes on
        with data.open("ab") as out:
            out.write(b"B,1,0\nB,2,5\n")
        line = _line(proc, 30)
        assert line is not None and json.loads(line)["b"]["_row"] == 2
        assert proc.poll() is None  # still following
        proc.send_signal(signal.SIGINT)
        out_rest, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130 and out_rest == b""
    assert b"interrupted: the matches written so far are complete" in err


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["-i", "-"], "not with standard input"),
        (["-i", "{data}", "--sort"], "not with --sort"),
        (["-i", "{data}.gz"], "a plain CSV or JSON-lines file"),
    ],
)
def test_follow_is_for_a_plain_file(tmp_path: Path, args: list[str], said: str) -> None:
    data = tmp_path / "events.csv"
    data.write_bytes(HEADER + b"A,0,1\n")
    (tmp_path / "events.csv.gz").write_bytes(gzip.compress(HEADER))
    cmd = [sys.executable, "-m", "cepcli", "run", "-e", "PATTERN SEQ(A a, B b) WITHIN 5", "--follow"]
    done = subprocess.run(
        [*cmd, *(a.format(data=data) for a in args)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and said in done.stderr and done.stderr.count("\n") == 1, done.stderr


@pytest.mark.parametrize("form", ["csv", "jsonl"])
def test_a_pipe_s_pieces_reach_pyarrow_as_arrow_buffers(monkeypatch: pytest.MonkeyPatch, form: str) -> None:
    """Every piece of a pipe is handed to pyarrow in memory Arrow owns: never a Python file,
    nor a buffer over Python bytes (immutable: ``pa.py_buffer``'s). pyarrow's I/O thread lets
    go of those after a read, now and then after the read has returned; when that happened
    as the process exited, a run whose matches were all written aborted ("terminate called
    without an active exception", exit -6, seen in CI on a CSV pipe fed in 13-byte pieces:
    first with a Python file, then with a buffer over the piece's bytes)."""
    import threading

    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.json as pajson

    from cepcli.sources.csv import CsvReader
    from cepcli.sources.jsonl import JsonlReader
    from cepcli.sources.options import InputOptions

    given: list[type] = []
    buffers: list[object] = []
    real_reader = pa.BufferReader
    monkeypatch.setattr(pa, "BufferReader", lambda data: buffers.append(data) or real_reader(data))
    for module, name in ((pacsv, "open_csv"), (pajson, "read_json")):
        real = getattr(module, name)
        monkeypatch.setattr(
            module,
            name,
            lambda source, *a, _real=real, **k: given.append(type(source)) or _real(source, *a, **k),
        )
    rows = [b"type,ts\n"] + [b"A,%d\n" % i for i in range(12)]
    if form == "jsonl":
        rows = [b'{"type": "A", "ts": %d}\n' % i for i in range(12)]
    read_end, write_end = os.pipe()

    def feed() -> None:  # a piece at a time, each read on its own
        with os.fdopen(write_end, "wb") as out:
            for row in rows:
                out.write(row)
                out.flush()
                time.sleep(0.06)  # longer than the reader gathers a piece for

    feeder = threading.Thread(target=feed)
    feeder.start()
    with os.fdopen(read_end, "rb", buffering=0) as stdin:
        options = InputOptions(path="-", format=form)
        reader = JsonlReader(options, stdin) if form == "jsonl" else CsvReader(options, stdin)
        read = sum(len(batch.rows) for batch in reader.batches())
    feeder.join()
    assert read == 12
    assert len(given) >= 6, "the pipe was read in pieces"
    assert all(issubclass(t, pa.NativeFile) for t in given), sorted({t.__name__ for t in given})
    assert len(buffers) == len(given)
    assert all(isinstance(b, pa.Buffer) and b.is_mutable for b in buffers), {type(b) for b in buffers}


@pytest.mark.parametrize("form", ["csv", "jsonl"])
def test_rows_already_waiting_in_a_pipe_join_one_step(tmp_path: Path, form: str) -> None:
    """A pipe's rows that are already there when a step could be made wait for the next
    rows that are there too, so a fast writer's stream is evaluated in large steps (200
    pieces of 100 rows here, written at once) with the matches of the file; a slow
    writer's rows are evaluated as they come (the tests above)."""
    rows = [(["A", "B", "C"][i % 3], i, i % 7) for i in range(20_000)]
    if form == "csv":
        data = HEADER + b"".join(b"%s,%d,%d\n" % (t.encode(), ts, x) for t, ts, x in rows)
    else:
        data = b"".join(b'{"type": "%s", "ts": %d, "x": %d}\n' % (t.encode(), ts, x) for t, ts, x in rows)
    path = tmp_path / f"in.{form}"
    path.write_bytes(data)
    q = tmp_path / "q.sase"
    q.write_text("PATTERN SEQ(A a, B b, C c) WHERE a.x < c.x WITHIN 5")
    common = ["--format", "jsonl", "-q", "--engine", "columnar", "--chunk-rows", "100"]
    stats = tmp_path / "stats.json"
    piped = subprocess.run(
        [sys.executable, "-m", "cepcli", "run", str(q), "-i", "-", "--input-format", form, *common]
        + ["--stats-json", str(stats)],
        input=data,
        capture_output=True,
        timeout=120,
    )
    assert piped.returncode == 0, piped.stderr
    steps = json.loads(stats.read_text())["columnar_steps"]
    whole = subprocess.run(
        [sys.executable, "-m", "cepcli", "run", str(q), "-i", str(path), *common],
        capture_output=True,
        timeout=120,
    )
    assert whole.returncode == 0, whole.stderr
    assert sorted(piped.stdout.splitlines()) == sorted(whole.stdout.splitlines())
    assert len(piped.stdout.splitlines()) > 1000
    assert steps < 50, f"{steps} steps for 200 pieces written at once"
