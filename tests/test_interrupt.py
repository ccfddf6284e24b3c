"""Ctrl-C (SIGINT) and SIGTERM stop cleanly: complete output lines, the stats so far (on
standard error and in --stats-json), exit 130 and 143."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
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

    def read() -> None:  # keep the pipe drained, as a real consumer would
        assert run.stdout is not None
        lines.extend(run.stdout)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        deadline = time.monotonic() + 30
        while len(lines) < 50 and time.monotonic() < deadline:
            time.sleep(0.05)
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
            deadline = time.monotonic() + 30
            while (
                not out.exists() or out.stat().st_size < 20_000 * (attempt + 1)
            ) and time.monotonic() < deadline:
                time.sleep(0.01)
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
        time.sleep(4.0)  # started (about 1 s here) and blocked on standard input
        run.send_signal(signum)
        out, err = run.communicate(timeout=60)
    finally:
        run.kill()
    assert run.returncode == code
    assert err == "interrupted: the matches written so far are complete\n", err
    assert out == ""
