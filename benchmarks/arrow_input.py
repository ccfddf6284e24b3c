"""The event layer (Events as Arrow issue): input speed, end to end, the peer, latency, start-up.

Usage (from the repository root, with ../shared beside it; DuckDB is installed for the
benchmark only: ``pip install duckdb``):

    python benchmarks/arrow_input.py                  # everything
    python benchmarks/arrow_input.py --only input,e2e,flights,latency,startup --repeat 3

Parts, each measured A/B interleaved in one run (this machine is shared):

* ``input``: cepcli's input alone (read, type, prefilter; no engine) on flights-3m as CSV
  (written once by this script from the Parquet file) and as Parquet, against
  ``pyarrow.csv.open_csv`` single-threaded reading the same columns and filtering by type.
* ``e2e``: ``cepcli run`` as a whole process (start-up, reading, evaluation, writing) on a
  selective three-airport SEQ over flights-3m CSV, tree and chain (order measured), against
  the pyarrow read as a whole process.
* ``flights``: the flights queries of BENCHMARKS.md at 2 hours on flights.csv.gz, eager,
  chain and tree (whole processes), and a DuckDB self-join of the same query (whole
  process); the match counts must agree.
* ``latency``: rows written to cepcli's standard input at 10 and 10,000 rows/s; the time
  from writing the row that completes a match to reading the match on cepcli's output.
* ``startup``: ``cepcli --version`` and ``cepcli run`` on a 10-row file.

Not a test: the numbers go to BENCHMARKS.md with the command and the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"
F3M = DATA / "flights-3m.parquet"
FLIGHTS = DATA / "flights.csv.gz"
SCRATCH = Path(tempfile.gettempdir()) / "cepcli-bench"
CLI = str(Path(sys.executable).with_name("cepcli"))
SELECTIVE = "PATTERN SEQ(SYR a, DAY b, DSM c) WHERE a.delay > b.delay WITHIN 1 hour"
AIRPORTS = ("SYR", "DAY", "DSM")  # 5,940, 5,604 and 4,248 flights of 3,000,000
F3M_OPTIONS = ["--type-col", "origin", "--time-col", "date"]
FLIGHTS_OPTIONS = ["--type-col", "carrier", "--time-col", "time_hour", "--sort"]

# The flights queries of BENCHMARKS.md, and the same as SQL (rows numbered in file order;
# stream order is time, then row, as cepcli's --sort gives it). Each SQL query also states
# the time range of every variable against a's (implied by the rest) so that DuckDB plans
# range joins rather than a cross product: a fair peer.
FLIGHTS_QUERIES: dict[str, tuple[str, str]] = {
    "seq3": (
        "PATTERN SEQ(UA a, B6 b, OO c) WHERE a.origin = c.origin WITHIN 2 hours",
        "a.carrier = 'UA' AND b.carrier = 'B6' AND c.carrier = 'OO' AND a.origin = c.origin"
        " AND (a.ts, a.r) < (b.ts, b.r) AND (b.ts, b.r) < (c.ts, c.r) AND c.ts - a.ts <= INTERVAL 2 HOUR"
        " AND b.ts BETWEEN a.ts AND a.ts + INTERVAL 2 HOUR AND c.ts BETWEEN a.ts AND a.ts + INTERVAL 2 HOUR",
    ),
    "seq4": (
        "PATTERN SEQ(UA a, DL b, B6 c, HA d) WHERE a.origin = d.origin AND b.origin = d.origin"
        " WITHIN 2 hours",
        "a.carrier = 'UA' AND b.carrier = 'DL' AND c.carrier = 'B6' AND d.carrier = 'HA'"
        " AND a.origin = d.origin AND b.origin = d.origin AND (a.ts, a.r) < (b.ts, b.r)"
        " AND (b.ts, b.r) < (c.ts, c.r) AND (c.ts, c.r) < (d.ts, d.r) AND d.ts - a.ts <= INTERVAL 2 HOUR"
        " AND b.ts BETWEEN a.ts AND a.ts + INTERVAL 2 HOUR AND c.ts BETWEEN a.ts AND a.ts + INTERVAL 2 HOUR"
        " AND d.ts BETWEEN a.ts AND a.ts + INTERVAL 2 HOUR",
    ),
    "and3": (
        "PATTERN AND(UA a, B6 b, OO c) WHERE a.origin = c.origin WITHIN 2 hours",
        "a.carrier = 'UA' AND b.carrier = 'B6' AND c.carrier = 'OO' AND a.origin = c.origin"
        " AND greatest(a.ts, b.ts, c.ts) - least(a.ts, b.ts, c.ts) <= INTERVAL 2 HOUR"
        " AND b.ts BETWEEN a.ts - INTERVAL 2 HOUR AND a.ts + INTERVAL 2 HOUR"
        " AND c.ts BETWEEN a.ts - INTERVAL 2 HOUR AND a.ts + INTERVAL 2 HOUR",
    ),
}


def _wall(command: list[str], **kw: object) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)  # type: ignore[call-overload]
    return time.perf_counter() - started


def _cepcli(query: str, data: Path, options: list[str], scratch: Path) -> tuple[float, dict[str, object]]:
    """A whole ``cepcli run`` process: wall seconds, and its stats."""
    q, stats = scratch / "q.sase", scratch / "stats.json"
    q.write_text(query + "\n")
    out = scratch / "matches.jsonl"
    command = [CLI, "run", str(q), "-i", str(data), *options, "--format", "jsonl", "-o", str(out)]
    wall = _wall([*command, "--stats-json", str(stats), "-q"])
    return wall, json.loads(stats.read_text())


Run = Callable[[], tuple[float, int, float | None]]  # a whole process: wall s, matches, stats seconds


def cepcli_counted(query: str, data: Path, options: list[str], scratch: Path) -> Run:
    """A ``Run`` of ``cepcli run`` (see ``_cepcli``)."""

    def run() -> tuple[float, int, float | None]:
        wall, stats = _cepcli(query, data, options, scratch)
        return wall, int(stats["matches"]), float(stats["seconds"])  # type: ignore[call-overload, arg-type]

    return run


def interleaved(
    name: str, runs: dict[str, Run], repeat: int
) -> tuple[dict[str, float], dict[str, int], dict[str, float], dict[str, list[float]]]:
    """Every run ``repeat`` times, interleaved in each repeat (this machine is shared): the
    median walls, the match counts (which must agree), the stats seconds and every wall."""
    walls: dict[str, list[float]] = {run: [] for run in runs}
    matches: dict[str, int] = {}
    seconds: dict[str, float] = {}
    for _ in range(repeat):
        for run, call in runs.items():
            wall, count, spent = call()
            walls[run].append(wall)
            matches[run] = count
            if spent is not None:
                seconds[run] = spent
    assert len(set(matches.values())) == 1, f"{name}: the match counts differ: {matches}"
    return {k: statistics.median(v) for k, v in walls.items()}, matches, seconds, walls


def _csv_of_f3m() -> Path:
    """flights-3m as CSV (pyarrow's writer: quoted text, ISO times), written once."""
    path = SCRATCH / "flights-3m.csv"
    if not path.exists():
        import pyarrow.csv as pacsv
        import pyarrow.parquet as pq

        SCRATCH.mkdir(exist_ok=True)
        pacsv.write_csv(pq.read_table(F3M), path)
    return path


# --- input alone -------------------------------------------------------------------------


def _pyarrow_read(path: Path) -> int:
    """The baseline: open_csv single-threaded over the same columns, filtered by type."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv

    wanted = pa.array(AIRPORTS)
    reader = pacsv.open_csv(path, read_options=pacsv.ReadOptions(use_threads=False))
    return sum(pc.sum(pc.is_in(b["origin"], value_set=wanted)).as_py() or 0 for b in reader)


def _cepcli_input(path: Path) -> int:
    """cepcli's input alone: read, type, prefilter, events (no engine)."""
    from cepcli.prepare import compile_text
    from cepcli.run import Run
    from cepcli.sources.options import InputOptions

    options = InputOptions(str(path), type_col="origin", time_col="date")
    job = Run({"q": compile_text(SELECTIVE, "<q>", options.unit)}, options)
    try:
        return sum(1 for _ in job.source.events(job.prefilter, job.stats, job.typed) if _.mask)
    finally:
        job.close()


def part_input(repeat: int) -> dict[str, object]:
    csv = _csv_of_f3m()
    times: dict[str, list[float]] = {"pyarrow open_csv": [], "cepcli CSV": [], "cepcli Parquet": []}
    counts: dict[str, int] = {}
    for _ in range(repeat):  # interleaved
        for name, run in (
            ("pyarrow open_csv", lambda: _pyarrow_read(csv)),
            ("cepcli CSV", lambda: _cepcli_input(csv)),
            ("cepcli Parquet", lambda: _cepcli_input(F3M)),
        ):
            started = time.perf_counter()
            counts[name] = run()
            times[name].append(time.perf_counter() - started)
    medians = {k: statistics.median(v) for k, v in times.items()}
    print("\n## input alone (in one process, after imports), median of", repeat)
    print("| reader | seconds | relevant rows | vs pyarrow |")
    print("|---|---:|---:|---:|")
    for name, seconds in medians.items():
        ratio = seconds / medians["pyarrow open_csv"]
        print(f"| {name} | {seconds:.2f} | {counts[name]:,} | {ratio:.2f}x |")
    print(f"CSV / Parquet: {medians['cepcli CSV'] / medians['cepcli Parquet']:.2f}x")
    return {"seconds": times, "medians": medians, "counts": counts}


# --- end to end --------------------------------------------------------------------------


def part_e2e(repeat: int) -> dict[str, object]:
    csv = _csv_of_f3m()
    baseline = [
        sys.executable,
        "-c",
        f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import arrow_input as b;"
        f" print(b._pyarrow_read(__import__('pathlib').Path({str(csv)!r})))",
    ]
    rows: dict[str, list[float]] = {"pyarrow read (process)": [], "tree": [], "chain": []}
    stats: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        for _ in range(repeat):
            rows["pyarrow read (process)"].append(_wall(baseline))
            for engine in ("tree", "chain"):
                wall, stats[engine] = _cepcli(SELECTIVE, csv, [*F3M_OPTIONS, "--engine", engine], scratch)
                rows[engine].append(wall)
    medians = {k: statistics.median(v) for k, v in rows.items()}
    print("\n## cepcli run end to end (whole process) on flights-3m CSV, median of", repeat)
    print(f"query: `{SELECTIVE}`")
    print("| run | wall s | seconds (stats) | input s | matches | vs pyarrow read |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, wall in medians.items():
        s = stats.get(name, {})
        ratio = wall / medians["pyarrow read (process)"]
        print(
            f"| {name} | {wall:.2f} | {s.get('seconds', '')} | {s.get('input_seconds', '')}"
            f" | {s.get('matches', '')} | {ratio:.2f}x |"
        )
    return {"wall": rows, "medians": medians, "stats": stats}


# --- flights and DuckDB ------------------------------------------------------------------


def duckdb_script(view: str, query: str) -> str:
    """The Python program of ``duckdb_count``: ``CREATE VIEW f AS <view>``, then print the one
    number ``query`` selects (8 GB of memory at most, no progress bar, spill files in the
    scratch directory)."""
    return (
        "import duckdb\n"
        "con = duckdb.connect()\n"
        f"con.execute(\"SET memory_limit='8GB'; SET enable_progress_bar=false;"
        f" SET temp_directory='{SCRATCH / 'duckdb'}'\")\n"
        f'con.execute("CREATE VIEW f AS {view}")\n'
        f'print(con.execute("{query}").fetchone()[0])\n'
    )


def duckdb_count(view: str, query: str) -> tuple[float, int]:
    """A whole DuckDB process (``duckdb_script``): its wall seconds and the number."""
    code = duckdb_script(view, query)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return time.perf_counter() - started, int(done.stdout.strip().splitlines()[-1])


def _duckdb_process(where: str) -> tuple[float, int]:
    view = (
        "SELECT row_number() OVER () AS r, carrier, time_hour AS ts, origin"
        f" FROM read_csv('{FLIGHTS}', nullstr='NA', header=true)"
    )
    joined = f"f a, f b, f c{', f d' if 'd.' in where else ''}"
    return duckdb_count(view, f"SELECT count(*) FROM {joined} WHERE {where}")


def part_flights(repeat: int) -> dict[str, object]:
    out: dict[str, object] = {}
    print(f"\n## flights.csv.gz at 2 hours: engines and DuckDB, whole processes, median of {repeat}")
    print("| query | run | wall s | seconds (stats) | matches | eager / this |")
    print("|---|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        for name, (query, where) in FLIGHTS_QUERIES.items():
            runs = {
                engine: cepcli_counted(query, FLIGHTS, [*FLIGHTS_OPTIONS, "--engine", engine], scratch)
                for engine in ("eager", "chain", "tree")
            }
            runs["duckdb"] = lambda where=where: (*_duckdb_process(where), None)
            medians, matches, seconds, walls = interleaved(name, runs, repeat)
            for run, wall in medians.items():
                print(
                    f"| {name} | {run} | {wall:.2f} | {seconds.get(run, '')} | {matches[run]:,}"
                    f" | {medians['eager'] / wall:.1f}x |"
                )
            out[name] = {"wall": walls, "medians": medians, "matches": matches}
    return out


# --- latency -----------------------------------------------------------------------------


def _latency(rate: float, seconds: float, engine: list[str]) -> list[float]:
    """Rows A,B,A,B,... (one stream time unit apart) written at ``rate`` rows/s into
    ``cepcli run SEQ(A a, B b) WITHIN 1``: each B completes one match. Per match, the
    seconds from writing its B to reading the match. Timing starts once cepcli is up (its
    first match is out): start-up is measured apart."""
    with tempfile.TemporaryDirectory() as tmp:
        q = Path(tmp) / "q.sase"
        q.write_text("PATTERN SEQ(A a, B b) WITHIN 1\n")
        proc = subprocess.Popen(
            [CLI, "run", str(q), "-i", "-", "--format", "jsonl", "-q", *engine],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            bufsize=0,
        )
        assert proc.stdin is not None and proc.stdout is not None
        written: dict[int, float] = {}
        seen: dict[int, float] = {}

        def read() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                seen[json.loads(line)["b"]["_row"]] = time.perf_counter()

        reader = threading.Thread(target=read)
        reader.start()
        proc.stdin.write(b"type,ts\nA,-2\nB,-1\n")  # a first match: cepcli is up when it is out
        while not seen:
            time.sleep(0.01)
        seen.clear()
        rows = int(rate * seconds)
        started = time.perf_counter()
        for i in range(rows):
            due = started + i / rate
            now = time.perf_counter()
            if due > now:
                time.sleep(due - now)
            proc.stdin.write(f"{'A' if i % 2 == 0 else 'B'},{i}\n".encode())
            if i % 2:
                written[i + 2] = time.perf_counter()  # cepcli's row id: the two rows above come first
        time.sleep(1.0)  # the last matches come out before the pipe closes
        proc.stdin.close()
        reader.join()
        proc.wait()
        return [seen[i] - written[i] for i in written if i in seen and seen[i] < started + seconds + 1.0]


def part_latency() -> dict[str, object]:
    out: dict[str, object] = {}
    print("\n## latency from a row entering the pipe to its match leaving cepcli")
    print("| rows/s | engine | matches timed | median ms | max ms |")
    print("|---:|---|---:|---:|---:|")
    for rate, seconds in ((10.0, 20.0), (10_000.0, 5.0)):
        for engine in (["--engine", "tree"], ["--engine", "chain", "--order", "a,b"]):
            lat = _latency(rate, seconds, engine)
            med, top = statistics.median(lat) * 1000, max(lat) * 1000
            print(f"| {rate:,.0f} | {engine[1]} | {len(lat):,} | {med:.1f} | {top:.1f} |")
            out[f"{rate:.0f} {engine[1]}"] = {"median_ms": med, "max_ms": top, "matches": len(lat)}
    return out


# --- start-up ----------------------------------------------------------------------------


def part_startup(repeat: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        q, data = Path(tmp) / "q.sase", Path(tmp) / "ten.csv"
        q.write_text("PATTERN SEQ(A a, B b) WITHIN 10\n")
        data.write_text("type,ts\n" + "".join(f"{'AB'[i % 2]},{i}\n" for i in range(10)))
        runs = {
            "cepcli --version": [CLI, "--version"],
            "cepcli run (10 rows)": [CLI, "run", str(q), "-i", str(data), "--format", "jsonl", "-q"],
            "python -c pass": [sys.executable, "-c", "pass"],
        }
        walls = {name: [_wall(cmd) for _ in range(repeat)] for name, cmd in runs.items()}
    medians = {k: statistics.median(v) for k, v in walls.items()}
    print("\n## start-up, median of", repeat)
    print("| command | wall s |")
    print("|---|---:|")
    for name, wall in medians.items():
        print(f"| `{name}` | {wall:.3f} |")
    return {"wall": walls, "medians": medians}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--only", default="input,e2e,flights,latency,startup")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    print(f"# {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    results: dict[str, object] = {}
    parts = args.only.split(",")
    if "input" in parts:
        results["input"] = part_input(args.repeat)
    if "e2e" in parts:
        results["e2e"] = part_e2e(args.repeat)
    if "flights" in parts:
        results["flights"] = part_flights(args.repeat)
    if "latency" in parts:
        results["latency"] = part_latency()
    if "startup" in parts:
        results["startup"] = part_startup(max(args.repeat, 5))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str) + "\n")


if __name__ == "__main__":
    main()
