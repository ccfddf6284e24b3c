"""Ctrl-C (SIGINT) stops cleanly: complete output lines, the stats so far, exit 130."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

CEPCLI = Path(sys.executable).with_name("cepcli")
ENDLESS = (
    "import sys\n"
    "sys.stdout.write('ts,type\\n')\n"
    "for i in range(10**9):\n"
    "    sys.stdout.write(f'{i},{\"AB\"[i % 2]}\\n')\n"
)


def test_sigint_stops_with_complete_lines_the_stats_so_far_and_130(tmp_path: Path) -> None:
    query = tmp_path / "q.sase"
    query.write_text("PATTERN SEQ(A a, B b) WITHIN 5\n")
    feed = subprocess.Popen([sys.executable, "-c", ENDLESS], stdout=subprocess.PIPE)
    run = subprocess.Popen(
        [str(CEPCLI), "run", str(query), "--format", "jsonl"],
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
        run.send_signal(signal.SIGINT)
        run.wait(timeout=60)
        reader.join(timeout=10)
        assert run.stderr is not None
        err = run.stderr.read()
    finally:
        feed.kill()
        run.kill()
    assert run.returncode == 130
    assert all(json.loads(line)["a"]["type"] == "A" for line in lines)
    assert "interrupted" in err and "cepcli stats" in err and "Traceback" not in err
    matches = next(line for line in err.splitlines() if "│ matches" in line)
    assert matches.split()[-2].replace(",", "") == str(len(lines))
