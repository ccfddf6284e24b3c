"""Memory follows the window, not the stream: pipe a long generated stream into
``cepcli run`` on standard input and record its resident memory (VmRSS) when 10%, 50%
and 100% of the stream have been written.

    python benchmarks/memory_stream.py [--events 10000000] [--engine tree] [--window "5 s"]

Events of types A, B, C, D (A, B and C the pattern's, D noise), ten per second; query
``SEQ(A a, B b, C c) WHERE a.x = b.x AND b.x = c.x WITHIN <window>`` (x in 0..999, so matches
are rare and the output does not dominate). Linux only (reads /proc).
"""

from __future__ import annotations

import argparse
import platform
import random
import subprocess
import sys
import tempfile
from pathlib import Path

CLI = Path(sys.executable).with_name("cepcli")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--engine", default="tree")
    parser.add_argument("--window", default="5 s")
    parser.add_argument("--seed", type=int, default=8)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    marks = {args.events // 10: "10%", args.events // 2: "50%"}
    with tempfile.TemporaryDirectory() as tmp:
        query = Path(tmp) / "q.sase"
        query.write_text(f"PATTERN SEQ(A a, B b, C c) WHERE a.x = b.x AND b.x = c.x WITHIN {args.window}\n")
        run = subprocess.Popen(
            [
                str(CLI),
                "run",
                str(query),
                "--engine",
                args.engine,
                "--format",
                "csv",
                "--output",
                "/dev/null",
                "--quiet",
                "--stats-json",
                str(Path(tmp) / "stats.json"),
            ],
            stdin=subprocess.PIPE,
            text=True,
        )
        assert run.stdin is not None
        seen: dict[str, float] = {}
        run.stdin.write("ts,type,x\n")
        batch = []
        for i in range(args.events):
            batch.append(f"{i / 10:.1f},{'ABCD'[rng.randrange(4)]},{rng.randrange(1000)}\n")
            if len(batch) == 10_000:
                run.stdin.write("".join(batch))
                batch = []
            if i + 1 in marks:
                run.stdin.flush()
                seen[marks[i + 1]] = rss_mb(run.pid)
        run.stdin.write("".join(batch))
        run.stdin.flush()
        seen["100%"] = rss_mb(run.pid)
        run.stdin.close()
        run.wait()
        stats = (Path(tmp) / "stats.json").read_text()
    print(
        f"# {platform.machine()}, Python {platform.python_version()}, {args.events:,} events,"
        f" engine {args.engine}, window {args.window}"
    )
    print("| written | RSS (MB) |")
    print("|---|---:|")
    for label in ("10%", "50%", "100%"):
        print(f"| {label} | {seen[label]:.1f} |")
    low, high = min(seen.values()), max(seen.values())
    print(f"\nspread: {100 * (high - low) / low:.1f}% of the lowest")
    print(stats)


if __name__ == "__main__":
    main()
