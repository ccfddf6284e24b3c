"""The adaptive engine's ratio sweep on the dense flights, every engine interleaved.

The query and airport sets of ``paper.py f3m-ratio`` (SEQ3 at 20 minutes on
``flights-3m.parquet``, from three airports of one frequency, 1:1.02, to O'Hare, DFW and an
airport a thousand times rarer), measured two ways, each with the engines interleaved in
every repeat (this machine is shared: a ratio is only as good as its two sides are close
in time), medians of the repeats:

* **automata**: the input read once and replayed from memory, each engine run over it in
  this process (``cepcli.bench.run_once``), seconds of the engine alone;
* **whole process**: ``cepcli run`` as a real process per engine (start-up, reading the
  Parquet file, the engine, writing the matches).

Every engine must find the same matches (hashes in-process, counts for the processes).
A last table says what the adaptive engine ran at each ratio (from its stats: segments by
engine, runtimes started, the measured ratios where it changed); ``--what-ran`` prints only
that table (one in-process run of adaptive per ratio, a minute); ``--segments`` has adaptive
run its segments in-process, as on a pipe (on a file it runs the columnar engine).

    python benchmarks/adaptive_ratio.py [--repeat 5] [--engines eager,chain,tree,adaptive] [--what-ran]
        [--only BOS:IAH:CLT,ORD:DFW:BRO] [--segments]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from arrow_input import F3M, SCRATCH, cepcli_counted, interleaved  # noqa: E402
from paper import F3M_RATIO_AIRPORTS, F3M_RATIO_WINDOW, _one_in, _to  # noqa: E402

OPTIONS = ["--type-col", "origin", "--time-col", "date"]


def query(x: str, y: str, z: str) -> str:
    window = F3M_RATIO_WINDOW.replace("min", " minutes")
    return (
        f"PATTERN SEQ({x} a, {y} b, {z} c) WHERE {_to('b', 'a')} AND a.delay < b.delay"
        f" AND b.delay < c.delay WITHIN {window}"
    )


def automata(
    text: str, engines: list[str], repeat: int, ran: dict[str, object] | None = None
) -> dict[str, float]:
    """Median seconds of each engine over the events in memory, interleaved (and in
    ``ran``, the stats' ``adaptive_*`` entries of adaptive's last run)."""
    from cepcli.bench import read_events, run_once, variable_counts
    from cepcli.prepare import compile_text
    from cepcli.sources.options import InputOptions

    inputs = InputOptions(str(F3M), type_col="origin", time_col="date")
    compiled = compile_text(text, "<query>", inputs.unit)
    events, schema, read = read_events(compiled, inputs)
    order = compiled.pattern.rarest_first(variable_counts(compiled.pattern, events))
    seconds: dict[str, list[float]] = {e: [] for e in engines}
    hashes: dict[str, str] = {}
    for round_ in range(repeat + 1):  # the first round warms up and is not counted
        for name in engines:
            stats, digest = run_once(compiled.pattern, name, events, schema, read.events, order)
            hashes[name] = digest
            if name == "adaptive" and ran is not None:
                ran.update({k: v for k, v in stats.extra.items() if k.startswith("adaptive_")})
            if round_:
                seconds[name].append(stats.seconds)
    assert len(set(hashes.values())) == 1, f"the engines disagree: {hashes}"
    return {e: statistics.median(v) if v else float("nan") for e, v in seconds.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--engines", default="eager,chain,tree,adaptive")
    parser.add_argument("--what-ran", action="store_true", help="only the table of what adaptive ran")
    parser.add_argument("--only", default=None, help="these airport sets only: BOS:IAH:CLT,ORD:DFW:BRO")
    parser.add_argument(
        "--segments",
        action="store_true",
        help="in-process, adaptive runs its segments (as on a pipe) instead of the columnar engine",
    )
    args = parser.parse_args()
    engines = args.engines.split(",")
    if args.segments:
        from cepcli.automata import columnar

        columnar.IN_ADAPTIVE = False
    if args.what_ran:
        _what_ran([(airports, _ran(query(*airports))) for airports in F3M_RATIO_AIRPORTS])
        return
    lazy = [e for e in engines if e in ("chain", "tree")]
    SCRATCH.mkdir(parents=True, exist_ok=True)
    rows = []
    ran: list[tuple[tuple[str, ...], dict[str, object]]] = []
    chosen = [a for a in F3M_RATIO_AIRPORTS if args.only is None or ":".join(a) in args.only.split(",")]
    for airports in chosen:
        text = query(*airports)
        ran.append((airports, {}))
        alone = automata(text, engines, args.repeat, ran[-1][1])
        with tempfile.TemporaryDirectory(dir=SCRATCH) as tmp:
            runs = {e: cepcli_counted(text, F3M, [*OPTIONS, "--engine", e], Path(tmp)) for e in engines}
            walls, matches, _, _ = interleaved(":".join(airports), runs, args.repeat)
        rows.append((airports, alone, walls, matches[engines[0]]))
        shown = {e: (round(alone[e], 3), round(walls[e], 2)) for e in engines}
        print(":".join(airports), "engine s, wall s:", shown, flush=True)
    print()
    print(f"# {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"median of {args.repeat} interleaved runs")  # fmt: skip
    for title, part in (("automata (seconds of the engine alone)", 1), ("whole process (wall seconds)", 2)):
        print(f"\n{title}\n")
        print(
            "| airports (ratio) | "
            + " | ".join(engines)
            + " | adaptive vs eager | adaptive vs best lazy | matches |"
        )
        print("|---|" + "---:|" * (len(engines) + 3))
        for airports, *cells, count in rows:
            cell = cells[part - 1]
            best = min(cell[e] for e in lazy) if lazy else float("nan")
            print(
                f"| {':'.join(airports)} ({_one_in(*airports)}) | "
                + " | ".join(f"{cell[e]:.3f}" if part == 1 else f"{cell[e]:.2f}" for e in engines)
                + f" | {cell['eager'] / cell['adaptive']:.2f}x | {best / cell['adaptive']:.2f}x | {count:,} |"
            )
    if "adaptive" in engines:
        _what_ran(ran)


def _ran(text: str) -> dict[str, object]:
    ran: dict[str, object] = {}
    automata(text, ["adaptive"], 0, ran)
    return ran


def _what_ran(ran: list[tuple[tuple[str, ...], dict[str, object]]]) -> None:
    print("\nwhat adaptive ran (its stats)\n")
    print(
        "| airports (ratio) | segments eager / chain / tree | runtimes | changes (engine at measured ratio) |"
    )
    print("|---|---|---:|---|")
    for airports, stats in ran:
        if stats.get("adaptive_ran") == "columnar":  # a bounded input: no segments
            print(f"| {':'.join(airports)} ({_one_in(*airports)}) | columnar | | |")
            continue
        segments = stats["adaptive_segments"]
        assert isinstance(segments, dict)
        changes = stats["adaptive_changes"]
        assert isinstance(changes, list)
        keyed = f" ({stats['adaptive_keyed_segments']} keyed)" if stats.get("adaptive_keyed_segments") else ""
        shown = ", ".join(
            f"{c['engine']}{' ' + ''.join(c['order']) if 'order' in c else ''} at 1:{c['ratio']}"
            if c["ratio"] is not None
            else f"{c['engine']} (first)"
            for c in changes[:6]
        ) + (f", ... ({len(changes)} in all)" if len(changes) > 6 else "")
        print(
            f"| {':'.join(airports)} ({_one_in(*airports)}) | {segments['eager']} / {segments['chain']} / "
            f"{segments['tree']}{keyed} | {stats['adaptive_runtimes']} | {shown} |"
        )


if __name__ == "__main__":
    main()
