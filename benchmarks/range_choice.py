"""Where a range join pays (issue 42): the engine's own time of one join with the range
join forced on and forced off, by the window's size, on flights-3m.

    python benchmarks/range_choice.py [--repeat 3]

``SEQ(ORD a, DFW b) WHERE a.delay > 120 AND b.delay > a.delay WITHIN H hours``, run
in-process (``cepcli run`` through its command line, the stats to a file): the engine's
own time is ``seconds - input_seconds``; "on" sets the thresholds of ``runtime.bands`` to
0 (every join with an order range-joins), "off" to the largest integer (none does), the
default is the engine as shipped. The runs of one window are interleaved, medians of
``--repeat``; the match counts of the three must be equal. The mean candidates per window
come from the "off" run's join sizes. Not a test: it tells where the thresholds
(``MIN_WINDOW``, ``MIN_PAIRS``) sit against the measured crossover.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parent.parent / "shared" / "data" / "flights-3m.parquet"
QUERY = "PATTERN SEQ(ORD a, DFW b) WHERE a.delay > 120 AND b.delay > a.delay WITHIN {h} hours"
HOURS = (1, 2, 4, 8, 16, 24, 48)


def engine_seconds(query: str, mode: str, scratch: Path) -> tuple[float, int, int]:
    """The engine's own seconds, the matches, and the partial matches the join expanded
    (the pairs in the windows, with the range join off)."""
    from click.testing import CliRunner

    from cepcli.cli import cli
    from cepcli.runtime import bands

    saved = bands.MIN_PAIRS, bands.MIN_WINDOW
    if mode == "on":
        bands.MIN_PAIRS, bands.MIN_WINDOW = 0, 0
    elif mode == "off":
        bands.MIN_PAIRS = bands.MIN_WINDOW = sys.maxsize
    stats = scratch / "stats.json"
    args = ["run", "-e", query, "-i", str(DATA), "--type-col", "origin", "--time-col", "date"]
    args += ["--format", "jsonl", "-o", str(scratch / "m.jsonl"), "--stats-json", str(stats), "-q"]
    args += ["--max-instances", str(10**9)]
    try:
        done = CliRunner().invoke(cli, args)
    finally:
        bands.MIN_PAIRS, bands.MIN_WINDOW = saved
    assert done.exit_code == 0, done.output
    numbers = json.loads(stats.read_text())
    joins = numbers["columnar_joins"][0]
    return (
        float(numbers["seconds"]) - float(numbers["input_seconds"]),
        int(numbers["matches"]),
        joins[0]["partial_matches"],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from cepcli.cli.app import WithoutPandas

    sys.meta_path.insert(0, WithoutPandas())  # (as ``cepcli run`` does: pyarrow without pandas)
    print(f"\nquery: `{QUERY.format(h='H')}` on {DATA.name}; engine seconds, medians of {args.repeat}\n")
    print("| window | late ORD flights | mean DFW flights per window | off s | on s | default s | off / on |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        engine_seconds(QUERY.format(h=1), "default", scratch)  # warm up: imports, the file cache
        for hours in HOURS:
            query = QUERY.format(h=hours)
            times: dict[str, list[float]] = {"off": [], "on": [], "default": []}
            counts = set()
            pairs, firsts = 0, 0
            for _ in range(args.repeat):
                for mode in times:
                    seconds, matches, first = engine_seconds(query, mode, scratch)
                    times[mode].append(seconds)
                    counts.add(matches)
                    firsts = first
            assert len(counts) == 1, f"{hours} h: the match counts differ: {counts}"
            # the pairs the windows held: the stats' range joins with the join forced on
            pairs = _window_pairs(query, scratch)
            med = {m: statistics.median(v) for m, v in times.items()}
            mean = pairs / max(firsts, 1)
            print(
                f"| {hours} h | {firsts:,} | {mean:,.0f} | {med['off']:.3f} | {med['on']:.3f}"
                f" | {med['default']:.3f} | {med['off'] / med['on']:.2f}x |"
            )


def _window_pairs(query: str, scratch: Path) -> int:
    from cepcli.runtime import bands

    saved = bands.MIN_PAIRS, bands.MIN_WINDOW
    bands.MIN_PAIRS, bands.MIN_WINDOW = 0, 0
    try:
        engine_seconds(query, "default", scratch)
    finally:
        bands.MIN_PAIRS, bands.MIN_WINDOW = saved
    numbers = json.loads((scratch / "stats.json").read_text())
    sizes = numbers.get("columnar_range_joins", {}).get("b", {})
    return int(sizes.get("window_pairs", 0))


if __name__ == "__main__":
    main()
