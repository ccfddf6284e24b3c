"""The paper's section 8.3 experiment: a stream whose rarest type changes.

Events of types A, B and C; in each segment of ``--switch`` events one type is rare
(``--rare`` of the events) and the other two share the rest; the rare type moves
A -> B -> C -> A ... from segment to segment. Seeded: the same arguments give the same
file.

    python benchmarks/changing_frequencies.py generate --events 1000000 > stream.csv
    python benchmarks/changing_frequencies.py run            # tree and every fixed chain

``run`` generates the stream into a temporary file, runs ``SEQ(A a, B b, C c)`` with
conditions on ``x`` under ``tree`` and under ``chain`` with each of the six fixed
orders (``--stats-every``), and prints predicate evaluations per 10,000 events for
each segment, the totals and the throughput. Not a test: numbers go to BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import random
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from runner import cepcli_run

TYPES = ("A", "B", "C")
QUERY = """PATTERN SEQ(A a, B b, C c)
WHERE a.x < b.x AND b.x < c.x AND c.x - a.x < 100
WITHIN {window}
"""


def stream(events: int, switch: int, rare: float, seed: int) -> Iterator[tuple[int, str, int]]:
    """(ts, type, x): one event per second; the rare type changes every ``switch``."""
    rng = random.Random(seed)
    for i in range(events):
        scarce = TYPES[(i // switch) % len(TYPES)]
        common = [t for t in TYPES if t != scarce]
        kind = scarce if rng.random() < rare else rng.choice(common)
        yield i, kind, rng.randrange(1000)


def write(out: TextIO, events: int, switch: int, rare: float, seed: int) -> None:
    out.write("ts,type,x\n")
    for ts, kind, x in stream(events, switch, rare, seed):
        out.write(f"{ts},{kind},{x}\n")


def run_engine(data: Path, engine: str, order: str | None, window: str, every: int) -> dict[str, object]:
    options = ["--engine", engine, "--stats-every", str(every)] + (["--order", order] if order else [])
    result = cepcli_run(QUERY.format(window=window), data, options)
    assert result is not None
    return result


def per_segment(series: list[dict[str, int]], every: int, switch: int) -> list[float]:
    """Predicate evaluations per 10,000 events in each segment."""
    out = []
    per = switch // every
    cumulative = [0] + [s["predicate_evaluations"] for s in series]
    for start in range(0, len(series) - per + 1, per):
        work = cumulative[start + per] - cumulative[start]
        out.append(work / switch * 10_000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("command", choices=["generate", "run"])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--switch", type=int, default=100_000)
    parser.add_argument("--rare", type=float, default=0.02)
    parser.add_argument("--seed", type=int, default=83)
    parser.add_argument("--window", default="50 s")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if args.command == "generate":
        write(sys.stdout, args.events, args.switch, args.rare, args.seed)
        return
    every = 10_000
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "stream.csv"
        with data.open("w") as out:
            write(out, args.events, args.switch, args.rare, args.seed)
        runs = {"tree": run_engine(data, "tree", None, args.window, every)}
        for order in itertools.permutations("abc"):
            runs["chain " + ",".join(order)] = run_engine(data, "chain", ",".join(order), args.window, every)
    print(
        f"# {platform.machine()}, Python {platform.python_version()}; {args.events:,} events, rare type"
        f" switching every {args.switch:,}, window {args.window}"
    )
    segments = {name: per_segment(r["series"], every, args.switch) for name, r in runs.items()}  # type: ignore[arg-type]
    names = list(runs)
    print("| segment (rare type) | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    for s in range(len(segments["tree"])):
        cells = " | ".join(f"{segments[n][s]:,.0f}" for n in names)
        print(f"| {s + 1} ({TYPES[s % len(TYPES)]}) | {cells} |")
    print(
        "| total predicate evaluations | "
        + " | ".join(f"{runs[n]['predicate_evaluations']:,}" for n in names)
        + " |"
    )
    print("| events/s | " + " | ".join(f"{runs[n]['events_per_second']:,.0f}" for n in names) + " |")
    print("| matches | " + " | ".join(f"{runs[n]['matches']:,}" for n in names) + " |")
    if args.json:
        args.json.write_text(json.dumps({"segments": segments, "runs": runs}, indent=2) + "\n")


if __name__ == "__main__":
    main()
