"""Ctrl-C (SIGINT) and SIGTERM stop cleanly: complete output lines, the stats so far (on
standard error and in --stats-json), exit 130 and 143."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

CEPCLI = Path(sys.executable).with_name("cepcli")
ENDLESS = (
    "import sys\n"
    "sys.stdout.write('ts,type\\n')\n"
    "for i in range(10**9):\n"
    "    sys.stdout.write(f'{i},{\"AB\"[i % 2]}\\n')\n"
)


@pytest.mark.parametrize(
    ("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["INT", "TERM"]
)
def test_a_signal_stops_with_complete_lines_the_stats_so_far_and_its_code(
    tmp_path: Path, signum: int, code: int
) -> None:
    query, stats = tmp_path / "q.sase", tmp_path / "stats.json"
    query.write_text("PATTERN SEQ(A a, B b) WITHIN 5\n")
    feed = subprocess.Popen([sys.executable, "-c", ENDLESS], stdout=subprocess.PIPE)
    run = subprocess.Popen(
        [str(CEPCLI), "run", str(query), "--format", "jsonl", "--stats-json", str(stats)],
        stdin=feed.stdout,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    running = threading.Event()  # 50 matches out: the run is well under way

    def read() -> None:  # keep the pipe drained, as a real consumer would
        assert run.stdout is not None
        for line in run.stdout:
            lines.append(line)
            if len(lines) == 50:
                running.set()

    reader = threading.Thread(target=read)
    reader.start()
    try:
        assert running.wait(timeout=120), "no match within 2 minutes"
        run.send_signal(signum)
        run.wait(timeout=60)
        reader.join(timeout=10)
        assert run.stderr is not None
        err = run.stderr.read()
    finally:
        feed.kill()
        run.kill()
    assert run.returncode == code
    assert all(json.loads(line)["a"]["type"] == "A" for line in lines)
    assert "interrupted" in err and "cepcli stats" in err and "Traceback" not in err
    matches = next(line for line in err.splitlines() if "│ matches" in line)
    assert matches.split()[-2].replace(",", "") == str(len(lines))
    written = json.loads(stats.read_text())
    assert written["interrupted"] is True and written["matches"] == len(lines)


def test_sigterm_never_cuts_the_last_line_of_the_output_file(tmp_path: Path) -> None:
    """Signals at random moments of a run that writes many matches to a file: every run
    leaves a file of complete JSON lines (before, one run in two ended in a cut line)."""
    query = tmp_path / "q.sase"
    query.write_text("PATTERN SEQ(A a, B b) WITHIN 50\n")
    for attempt in range(6):
        out = tmp_path / f"m{attempt}.jsonl"
        feed = subprocess.Popen([sys.executable, "-c", ENDLESS], stdout=subprocess.PIPE)
        run = subprocess.Popen(
            [str(CEPCLI), "run", str(query), "--format", "jsonl", "-o", str(out), "-q"],
            stdin=feed.stdout,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            size = 20_000 * (attempt + 1)
            wait_until(lambda: out.exists() and out.stat().st_size >= size, run)  # noqa: B023
            run.send_signal(signal.SIGTERM)
            run.wait(timeout=60)
        finally:
            feed.kill()
            run.kill()
        assert run.returncode == 143
        text = out.read_text()
        assert text.endswith("\n") and len(text) > 20_000
        assert all(json.loads(line)["b"]["type"] == "B" for line in text.splitlines())


@pytest.mark.parametrize(
    ("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["INT", "TERM"]
)
def test_a_signal_before_the_first_row_still_says_so(tmp_path: Path, signum: int, code: int) -> None:
    """A pipe with no row yet (cepcli waits for the header): the same message and code."""
    query = tmp_path / "q.sase"
    query.write_text("PATTERN SEQ(A a, B b) WITHIN 5\n")
    run = subprocess.Popen(
        [str(CEPCLI), "run", str(query), "-q"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(lambda: reading_standard_input(run.pid), run)
        run.send_signal(signum)
        out, err = run.communicate(timeout=60)
    finally:
        run.kill()
    assert run.returncode == code
    assert err == "interrupted: the matches written so far are complete\n", err
    assert out == ""


def wait_until(ready: Callable[[], bool], run: subprocess.Popen[str]) -> None:
    """Until ``ready()`` (checked every 10 ms, so a loaded machine only makes it later),
    failing if the run ends first or two minutes pass."""
    deadline = time.monotonic() + 120
    while not ready():
        assert run.poll() is None, "the run ended before the signal"
        assert time.monotonic() < deadline, "not ready within 2 minutes"
        time.sleep(0.01)


def reading_standard_input(pid: int) -> bool:
    """The process's main thread waits in read(0, ...) (Linux x86-64: /proc/PID/syscall
    begins with the read system call, 0, on file descriptor 0). Elsewhere: after 4 s."""
    syscall = Path(f"/proc/{pid}/syscall")
    if platform.system() != "Linux" or platform.machine() != "x86_64" or not syscall.exists():
        time.sleep(4.0)
        return True
    try:
        return syscall.read_text().startswith("0 0x0 ")
    except OSError:
        return False


def test_ctrl_c_while_a_csv_pipe_is_read_is_never_lost() -> None:
    """Each of 300 signals sent at random moments while a CSV pipe is read reaches the
    program's handler (pyarrow's ``read_csv`` swallowed about one in thirty: a run went on
    after Ctrl-C)."""
    from cepcli.sources.csv import CsvReader
    from cepcli.sources.options import InputOptions

    read_end, write_end = os.pipe()
    stop = threading.Event()

    def feed() -> None:
        with (
            contextlib.suppress(BrokenPipeError),
            os.fdopen(write_end, "wb") as out,
        ):  # (the reader may stop first)
            out.write(b"ts,type\n")
            i = 0
            while not stop.is_set():
                out.write(b"".join(b"%d,A\n" % n for n in range(i, i + 200)))
                out.flush()
                i += 200

    handled: list[int] = []
    sent, lost = 0, 0

    def shoot() -> None:
        nonlocal sent, lost
        for _ in range(300):
            time.sleep(random.random() * 0.003)
            sent += 1
            os.kill(os.getpid(), signal.SIGINT)
            deadline = time.monotonic() + 5  # the reading runs Python at least every chunk
            while len(handled) < sent and time.monotonic() < deadline:
                time.sleep(0.001)
            if len(handled) < sent:
                lost += 1
                handled.append(0)
        stop.set()

    previous = signal.signal(signal.SIGINT, lambda signum, frame: handled.append(signum))
    feeder, shooter = threading.Thread(target=feed), threading.Thread(target=shoot)
    try:
        with os.fdopen(read_end, "rb", buffering=0) as stdin:
            feeder.start()
            reader = CsvReader(InputOptions(path="-"), stdin)
            shooter.start()
            for _ in reader.batches():
                if stop.is_set():
                    break
    finally:
        stop.set()
        if shooter.is_alive():
            shooter.join()
        signal.signal(signal.SIGINT, previous)
        feeder.join(timeout=10)
    assert sent == 300 and lost == 0
