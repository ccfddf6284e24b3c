"""The incremental columnar engine on streams (issue 39): a pipe against a file, the step
size, memory over 3M and 30M rows, throughput on a 10M-row pipe, and the engine's time per
relevant event step by step against the whole input. Whole processes.

Usage (from the repository root, with ../shared beside it):

    python benchmarks/streams.py [--repeat 5] [--repeat-large 3] [--only pipe,memory,stream,paced]
        [--data ../shared/data/flights-3m.parquet] [--scratch /tmp/cepcli-bench]
        [--stream-rows 10000000] [--commit HEAD]

Inputs (written once into ``--scratch``, never into the repository, and reused): the first
1,000,000 rows of ``flights-3m.parquet`` as CSV (pyarrow's writer); flights-3m as Parquet,
and ten copies of it, the k-th with every ``date`` k * 365 days later (30,000,000 rows, still
sorted, a match never spans two copies), both in flights-3m's row groups (272,727 rows);
the first ``--stream-rows`` rows of those copies as CSV. Airports are the types:
``--type-col origin --time-col date``.

Query A is ``SEQ(ORD a, DFW b, ATL c) WHERE a.delay < b.delay AND a.destination =
c.destination WITHIN 20 minutes``; query B is ``SEQ(ORD a, DFW b) WHERE a.delay < b.delay
WITHIN 20 minutes``. Every run is ``cepcli run Q -i INPUT --type-col origin --time-col date
[options] --format jsonl -q --stats-json S`` with the matches on standard output, thrown
away (``> /dev/null``); a pipe is ``cat INPUT | cepcli run Q -i - ...`` (the two processes
started here, no shell), timed from cat's start until both have ended.

Parts (``--only``):

* ``pipe``: the 1M-row CSV, query A: the file (``-i f.csv``); the pipe; the pipe with
  ``--chunk-rows 1000`` and ``1000000`` (the plain pipe is ``65536``, the default); the file
  with ``--sort`` (the whole input at once). Targets: the pipe within 1.25x of the file;
  every step size within 1.5x of ``--chunk-rows 1000000``.
* ``memory``: query A over flights-3m (3M rows) and its ten copies (30M rows), Parquet.
  Targets: the 30M run's peak RSS within 1.3x of the 3M run's and at most 400 MB; its time
  at most 12x the 3M run's.
* ``stream``: query B over the ``--stream-rows`` CSV through a pipe, and the same file with
  ``--sort``. Target: at least 1,000,000 rows/s end to end (rows / wall seconds). Yardstick:
  WSO2 Stream Processor 4.0 (Siddhi) documents 500K events/s for "temporal event sequence
  patterns" (docs.wso2.com/display/SP400/Performance+Analysis+Results: 8 vCPUs, events over
  TCP from another node).
* Engine time per relevant event, ``(seconds - input_seconds) / relevant_events`` of
  ``--stats-json``, step by step (the pipe) against the whole input (``--sort`` on the
  file), from the runs of ``pipe`` and ``stream``: reported, no target. (Step by step, the
  evaluation's thread runs while the input is read, so part of its work is hidden in
  ``input_seconds``; with the whole input, reading ends before evaluating starts.)

* ``paced``: steps forced small: the first 100,000 rows of the CSV written by a writer that
  sends 1,000 rows a write, 60 ms apart (longer than a pipe gathers: each write is a step
  of its own), query A, against the same rows as a file. The wall time is the writer's
  (about 6 s); the figure is the cepcli process's CPU seconds (user + system, from
  ``os.wait4``), and their excess over the file's per step: what a step costs.

On a pipe a step is made when the next rows would wait for the writer (or a quarter second
after the last step); ``--chunk-rows`` is the size of the pieces read and prefiltered, so
``--chunk-rows 1000`` measures 1,000-row pieces of a fast writer's stream, whose steps are
large; steps of 1,000 rows are part ``paced``. The ``steps`` column says how many there
were.

Every figure is a whole process: its wall seconds and its peak RSS (``ru_maxrss`` of the
cepcli process alone, from ``os.wait4``; cat's is not included). The runs of one part are
interleaved (A B C A B C ...; the machine is shared: the load average is printed before and
after each part), the table gives the median wall and the largest peak, and within one part
the match counts must agree (the 30M run's must be ten times the 3M run's; the script exits
1 otherwise). The children run without ``PYTHONDONTWRITEBYTECODE`` and with
``PYTHONPYCACHEPREFIX`` in the scratch directory, so that after a first warm-up run they
load cepcli's bytecode, as an installed cepcli does, and nothing is written into the
checkout. ``--commit REV`` measures that commit's ``cepcli/`` (``git archive`` into the
scratch directory, first on ``PYTHONPATH``) instead of the checkout, whose edits in progress
then do not count. The inputs are written by a child process, so that this one stays small
(on Linux a child's peak RSS starts from its parent's at the fork). Before each part every
input is read once (the page cache). Not a test: the numbers go to BENCHMARKS.md with the
command and the machine.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import multiprocessing
import os
import platform
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from columnar_peers import extracted  # noqa: E402  (the other benchmarks' helper)

ROOT = Path(__file__).resolve().parent.parent
CLI = str(Path(sys.executable).with_name("cepcli"))
F3M = ROOT.parent / "shared" / "data" / "flights-3m.parquet"
OPTIONS = ["--type-col", "origin", "--time-col", "date"]
QUERY_A = (
    "PATTERN SEQ(ORD a, DFW b, ATL c) WHERE a.delay < b.delay AND a.destination = c.destination"
    " WITHIN 20 minutes"
)
QUERY_B = "PATTERN SEQ(ORD a, DFW b) WHERE a.delay < b.delay WITHIN 20 minutes"
CSV_ROWS = 1_000_000
COPIES = 10
PARTS = ("pipe", "memory", "stream", "paced")
PACED_ROWS = 100_000  # the paced writer's rows: 1,000 a write, PACED_GAP seconds apart
PACED_GAP = 0.06  # longer than a pipe's gathering (50 ms): each write is a step of its own
SIDDHI_SEQUENCE = 500_000  # events/s, WSO2 SP 4.0's "temporal event sequence patterns"


# --- inputs --------------------------------------------------------------------------------


def _written(path: Path, write: Any) -> Path:
    """``path``, written by ``write(partial)`` unless it exists (renamed when whole)."""
    if not path.exists():
        started = time.perf_counter()
        partial = path.with_name(path.name + ".partial")
        write(partial)
        partial.rename(path)
        print(f"(wrote {path} in {time.perf_counter() - started:.1f} s)", flush=True)
    return path


def _copies(data: Path) -> Any:
    """The k-th copy of flights-3m (k = 0, 1, ...), every ``date`` k * 365 days later."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    table = pq.read_table(data)
    index = table.schema.get_field_index("date")
    unit = table.schema.field("date").type.unit
    k = 0
    while True:
        shift = pa.scalar(datetime.timedelta(days=365 * k), pa.duration(unit))
        yield table.set_column(index, "date", pc.add(table["date"], shift))
        k += 1


def csv_head(data: Path, scratch: Path, rows: int) -> Path:
    """The first ``rows`` rows of the copies of flights-3m as CSV (pyarrow's writer)."""

    def write(partial: Path) -> None:
        import pyarrow.csv as pacsv

        left = rows
        with pacsv.CSVWriter(partial, next(_copies(data)).schema) as writer:
            for copy in _copies(data):
                part = copy.slice(0, left)
                writer.write_table(part)
                left -= part.num_rows
                if not left:
                    break

    return _written(scratch / f"streams-flights-{rows // 1000}k.csv", write)


def parquet_copies(data: Path, scratch: Path, copies: int) -> Path:
    """``copies`` copies of flights-3m as Parquet, in row groups of the size flights-3m's
    have (272,727 rows): the same layout, so the same memory per row group."""

    def write(partial: Path) -> None:
        import pyarrow.parquet as pq

        group = pq.ParquetFile(data).metadata.row_group(0).num_rows
        writer = None
        for k, copy in enumerate(_copies(data)):
            if k == copies:
                break
            writer = writer or pq.ParquetWriter(partial, copy.schema)
            writer.write_table(copy, row_group_size=group)
        assert writer is not None
        writer.close()

    return _written(scratch / f"streams-flights-3m-x{copies}-groups.parquet", write)


def make_inputs(parts: list[str], data: Path, scratch: Path, stream_rows: int) -> dict[str, tuple[Path, int]]:
    """The inputs of ``parts`` (name -> path, rows), written where missing. Run in a process
    of its own (``inputs``)."""
    import pyarrow.parquet as pq

    made = {"csv": (csv_head(data, scratch, CSV_ROWS), CSV_ROWS)}
    if "memory" in parts:
        for name, copies in (("3m", 1), ("30m", COPIES)):
            path = parquet_copies(data, scratch, copies)
            made[name] = (path, int(pq.ParquetFile(path).metadata.num_rows))
    if "stream" in parts:
        made["stream"] = (csv_head(data, scratch, stream_rows), stream_rows)
    if "paced" in parts:
        made["paced"] = (csv_head(data, scratch, PACED_ROWS), PACED_ROWS)
    return made


def inputs(parts: list[str], data: Path, scratch: Path, stream_rows: int) -> dict[str, tuple[Path, int]]:
    """``make_inputs`` in a child process: this process stays small, as every cepcli it
    starts reports at least the memory of this one at the fork (Linux keeps the peak
    across ``exec``)."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(make_inputs, (parts, data, scratch, stream_rows))


# --- one process ---------------------------------------------------------------------------


@dataclass
class Job:
    """One ``cepcli run``: its query, its input (through ``cat`` and a pipe if ``piped``) and
    its options beyond the common ones."""

    label: str
    query: str
    data: Path
    rows: int
    piped: bool = False
    options: list[str] = field(default_factory=list)
    paced: bool = False  # piped by a writer of 1,000 rows a write, PACED_GAP seconds apart

    def argv(self, query_file: Path, stats: Path) -> list[str]:
        source = "-" if self.piped else str(self.data)
        tail = ["--format", "jsonl", "-q", "--stats-json", str(stats)]
        return [CLI, "run", str(query_file), "-i", source, *OPTIONS, *self.options, *tail]

    def shown(self) -> str:
        """The command as a shell would run it (``q.sase`` holding the query)."""
        command = "cepcli " + shlex.join(self.argv(Path("q.sase"), Path("stats.json"))[1:])
        head = f"cat {self.data} | " if self.piped else ""
        if self.paced:
            head = f"(1,000 rows of {self.data} a write, {PACED_GAP * 1000:.0f} ms apart) | "
        return f"{head}{command} > /dev/null"


@dataclass
class Outcome:
    """One whole process: wall seconds, the cepcli process's peak RSS, its ``--stats-json``."""

    wall: float
    rss_mb: float
    stats: dict[str, Any]
    cpu: float = 0.0  # the cepcli process's user + system seconds


def child_env(scratch: Path, code: Path | None) -> dict[str, str]:
    """The children's environment: bytecode cached in the scratch directory; with ``code``
    (``columnar_peers.extracted``), that cepcli first on ``PYTHONPATH``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(scratch / "streams-pycache")
    if code is not None:
        env["PYTHONPATH"] = str(code)
    return env


def run_once(job: Job, work: Path, env: dict[str, str], timeout: float) -> Outcome:
    """``job`` to its end (killed after ``timeout`` seconds: an error)."""
    query, stats, err = work / "q.sase", work / "stats.json", work / "stderr.txt"
    query.write_text(job.query + "\n")
    stats.unlink(missing_ok=True)
    killed = threading.Event()
    with err.open("w") as errors:
        started = time.perf_counter()
        feed = ["cat", str(job.data)]
        if job.paced:
            feed = [sys.executable, "-c", PACED_WRITER, str(job.data), str(PACED_GAP)]
        feeder = subprocess.Popen(feed, stdout=subprocess.PIPE) if job.piped else None
        stdin = feeder.stdout if feeder is not None else subprocess.DEVNULL
        proc = subprocess.Popen(
            job.argv(query, stats),
            stdin=stdin,
            stdout=subprocess.DEVNULL,
            stderr=errors,
            env=env,
            start_new_session=True,
        )
        if feeder is not None and feeder.stdout is not None:
            feeder.stdout.close()  # cepcli's alone: cat gets SIGPIPE if cepcli ends first

        def kill() -> None:
            killed.set()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
            if feeder is not None:
                feeder.wait()
        finally:
            timer.cancel()
        wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if killed.is_set() or proc.returncode != 0:
        why = f"killed after {timeout:.0f} s" if killed.is_set() else f"exit {proc.returncode}"
        raise RuntimeError(f"{job.label}: {why}\n{err.read_text()[-2000:]}")
    cpu = usage.ru_utime + usage.ru_stime
    return Outcome(wall, usage.ru_maxrss / 1024, json.loads(stats.read_text()), cpu)  # KiB on Linux


PACED_WRITER = """
import sys, time
out = sys.stdout.buffer
with open(sys.argv[1], "rb") as f:
    lines = f.readlines()
out.write(lines[0])
for at in range(1, len(lines), 1000):
    out.write(b"".join(lines[at : at + 1000]))
    out.flush()
    time.sleep(float(sys.argv[2]))
"""


# --- a part: its jobs, interleaved ---------------------------------------------------------


@dataclass
class Result:
    """The runs of one job: its median wall, largest peak and the medians of its stats."""

    job: Job
    outcomes: list[Outcome]

    @property
    def wall(self) -> float:
        return statistics.median(o.wall for o in self.outcomes)

    @property
    def rss_mb(self) -> float:
        return max(o.rss_mb for o in self.outcomes)

    def stat(self, key: str) -> float:
        return statistics.median(float(o.stats.get(key) or 0) for o in self.outcomes)

    def only(self, key: str) -> int:
        """A count every run agrees on (matches, relevant events)."""
        values = {int(o.stats.get(key) or 0) for o in self.outcomes}
        if len(values) != 1:
            sys.exit(f"{self.job.label}: {key} differs between runs: {sorted(values)}")
        return values.pop()

    def steps(self) -> str:
        """``columnar_steps``: on a pipe, where the pieces fall depends on timing, so a range
        when the runs differ ("-": not stepped, the whole input at once)."""
        values = sorted(
            {int(o.stats["columnar_steps"]) for o in self.outcomes if "columnar_steps" in o.stats}
        )
        return "-" if not values else f"{values[0]:,}" + (f"-{values[-1]:,}" if len(values) > 1 else "")

    @property
    def cpu(self) -> float:
        return statistics.median(o.cpu for o in self.outcomes)

    @property
    def engine_seconds(self) -> float:
        return statistics.median(
            float(o.stats["seconds"]) - float(o.stats["input_seconds"]) for o in self.outcomes
        )

    @property
    def engine_us_per_event(self) -> float:
        return 1e6 * self.engine_seconds / max(self.only("relevant_events"), 1)


def interleaved(
    part: str, jobs: list[Job], repeat: int, scratch: Path, env: dict[str, str], timeout: float
) -> list[Result]:
    """Each job ``repeat`` times, A B C A B C ..., after reading every input once."""
    for data in {job.data for job in jobs}:
        with data.open("rb") as f:
            while f.read(1 << 24):
                pass
    print(f"\n## {part}: {len(jobs)} runs x {repeat}, interleaved; load {_load()}", flush=True)
    results = [Result(job, []) for job in jobs]
    with tempfile.TemporaryDirectory(dir=scratch, prefix="streams-run-") as tmp:
        for i in range(repeat):
            for result in results:
                outcome = run_once(result.job, Path(tmp), env, timeout)
                result.outcomes.append(outcome)
                print(
                    f"  {i + 1}/{repeat} {result.job.label}: {outcome.wall:.2f} s,"
                    f" {outcome.rss_mb:.0f} MB, {outcome.stats['matches']:,} matches,"
                    f" {outcome.stats.get('columnar_steps', '-')} steps",
                    flush=True,
                )
    print(f"  (load after: {_load()})", flush=True)
    return results


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


# --- the report ----------------------------------------------------------------------------


@dataclass
class Report:
    """Every job's row and every target's verdict, printed at the end."""

    rows: list[tuple[str, Result]] = field(default_factory=list)
    targets: list[tuple[str, str, str, bool | None]] = field(default_factory=list)

    def target(self, name: str, measured: str, bound: str, met: bool | None) -> None:
        """A target's line; ``met`` None: a figure reported, no bound."""
        self.targets.append((name, measured, bound, met))

    def show(self) -> None:
        print("\n## Runs (medians; peak RSS the largest of the runs)\n")
        print(
            "| part | run | rows | wall s | peak RSS MB | seconds | input s | engine s"
            " | engine us / relevant event | steps | relevant events | matches | rows/s |"
        )
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for part, r in self.rows:
            steps = r.steps()
            print(
                f"| {part} | {r.job.label} | {r.job.rows:,} | {r.wall:.2f} | {r.rss_mb:.0f}"
                f" | {r.stat('seconds'):.2f} | {r.stat('input_seconds'):.2f} | {r.engine_seconds:.2f}"
                f" | {r.engine_us_per_event:.2f} | {steps} | {r.only('relevant_events'):,}"
                f" | {r.only('matches'):,} | {r.job.rows / r.wall:,.0f} |"
            )
        print("\n## Targets\n")
        print("| target | measured | bound | verdict |")
        print("|---|---:|---|---|")
        for name, measured, bound, met in self.targets:
            verdict = "reported" if met is None else "met" if met else "**not met**"
            print(f"| {name} | {measured} | {bound} | {verdict} |")


def agree(part: str, results: list[Result]) -> None:
    counts = {r.job.label: r.only("matches") for r in results}
    if len(set(counts.values())) != 1:
        sys.exit(f"{part}: the match counts differ: {counts}")


def part_pipe(
    args: argparse.Namespace, made: dict[str, tuple[Path, int]], env: dict[str, str], report: Report
) -> None:
    csv = made["csv"][0]
    file, pipe = Job("file", QUERY_A, csv, CSV_ROWS), Job("pipe", QUERY_A, csv, CSV_ROWS, piped=True)
    small = Job("pipe --chunk-rows 1000", QUERY_A, csv, CSV_ROWS, True, ["--chunk-rows", "1000"])
    whole = Job("pipe --chunk-rows 1000000", QUERY_A, csv, CSV_ROWS, True, ["--chunk-rows", "1000000"])
    sort = Job("file --sort", QUERY_A, csv, CSV_ROWS, options=["--sort"])
    results = interleaved(
        "pipe", [file, pipe, small, whole, sort], args.repeat, args.scratch, env, args.timeout
    )
    agree("pipe", results)
    by = {r.job.label: r for r in results}
    report.rows += [("1M CSV, A", r) for r in results]
    ratio = by["pipe"].wall / by["file"].wall
    report.target("1. pipe / file, wall", f"{ratio:.2f}x", "at most 1.25x", ratio <= 1.25)
    for label, shown in (("pipe --chunk-rows 1000", "1000"), ("pipe", "65536 (default)")):
        ratio = by[label].wall / by["pipe --chunk-rows 1000000"].wall
        report.target(
            f"2. --chunk-rows {shown} / 1000000, wall", f"{ratio:.2f}x", "at most 1.5x", ratio <= 1.5
        )
    ratio = by["pipe"].engine_us_per_event / by["file --sort"].engine_us_per_event
    report.target("5. engine s per relevant event, pipe / --sort (1M CSV, A)", f"{ratio:.2f}x", "none", None)


def part_memory(
    args: argparse.Namespace, made: dict[str, tuple[Path, int]], env: dict[str, str], report: Report
) -> None:
    small, big = Job("3M Parquet", QUERY_A, *made["3m"]), Job("30M Parquet", QUERY_A, *made["30m"])
    results = interleaved("memory", [small, big], args.repeat_large, args.scratch, env, args.timeout)
    found_3m, found_30m = (r.only("matches") for r in results)
    if found_30m != COPIES * found_3m:
        sys.exit(
            f"memory: the 30M run's matches ({found_30m:,}) are not {COPIES} x the 3M run's ({found_3m:,})"
        )
    report.rows += [("flights-3m / x10, A", r) for r in results]
    r3, r30 = results
    ratio = r30.rss_mb / r3.rss_mb
    report.target("3. peak RSS, 30M / 3M", f"{ratio:.2f}x", "at most 1.3x", ratio <= 1.3)
    report.target("3. peak RSS, 30M", f"{r30.rss_mb:.0f} MB", "at most 400 MB", r30.rss_mb <= 400)
    ratio = r30.wall / r3.wall
    report.target("3. wall, 30M / 3M", f"{ratio:.2f}x", "at most 12x", ratio <= 12)


def part_stream(
    args: argparse.Namespace, made: dict[str, tuple[Path, int]], env: dict[str, str], report: Report
) -> None:
    csv, rows = made["stream"]
    pipe = Job("pipe", QUERY_B, csv, rows, piped=True)
    sort = Job("file --sort", QUERY_B, csv, rows, options=["--sort"])
    results = interleaved("stream", [pipe, sort], args.repeat_large, args.scratch, env, args.timeout)
    agree("stream", results)
    report.rows += [(f"{rows / 1e6:g}M CSV, B", r) for r in results]
    rate = rows / results[0].wall
    report.target(
        f"4. pipe rows/s, {rows:,} rows (Siddhi's sequences: {SIDDHI_SEQUENCE:,}/s)",
        f"{rate:,.0f}/s ({rate / SIDDHI_SEQUENCE:.2f}x Siddhi)",
        "at least 1,000,000/s",
        rate >= 1_000_000,
    )
    ratio = results[0].engine_us_per_event / results[1].engine_us_per_event
    report.target(
        f"5. engine s per relevant event, pipe / --sort ({rows / 1e6:g}M CSV, B)",
        f"{ratio:.2f}x",
        "none",
        None,
    )


def part_paced(
    args: argparse.Namespace, made: dict[str, tuple[Path, int]], env: dict[str, str], report: Report
) -> None:
    """Steps forced small: a writer that sends 1,000 rows and waits longer than a pipe
    gathers, so each write is a step of its own. Its wall time is the writer's; the cost
    of the steps is the cepcli process's CPU seconds against the same rows as a file."""
    csv, rows = made["paced"]
    paced = Job("paced pipe, 1,000 rows a write", QUERY_A, csv, rows, piped=True, paced=True)
    file = Job("the same rows as a file", QUERY_A, csv, rows)
    results = interleaved("paced", [paced, file], args.repeat_large, args.scratch, env, args.timeout)
    agree("paced", results)
    report.rows += [(f"{rows // 1000}k CSV, A", r) for r in results]
    steps = statistics.median(float(o.stats.get("columnar_steps") or 0) for o in results[0].outcomes)
    extra = (results[0].cpu - results[1].cpu) / max(steps, 1)
    report.target(
        "1. steps of 1,000 rows: CPU, paced / file",
        f"{results[0].cpu / results[1].cpu:.2f}x ({results[0].cpu:.2f} / {results[1].cpu:.2f} s;"
        f" {1000 * extra:.1f} ms a step over {steps:.0f} steps)",
        "none (the wall time is the writer's)",
        None,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs of each job on the 1M-row CSV")
    parser.add_argument("--repeat-large", type=int, default=3, help="runs of each job on 3M rows and more")
    parser.add_argument("--only", default=",".join(PARTS), help=f"parts: {','.join(PARTS)}")
    parser.add_argument("--data", type=Path, default=F3M, help="flights-3m.parquet")
    parser.add_argument("--scratch", type=Path, default=Path(tempfile.gettempdir()) / "cepcli-bench")
    parser.add_argument("--stream-rows", type=int, default=10_000_000)
    parser.add_argument("--timeout", type=float, default=300, help="seconds, one run")
    parser.add_argument("--commit", help="measure this commit's cepcli/ (git archive), not the checkout's")
    args = parser.parse_args()
    parts = args.only.split(",")
    unknown = set(parts) - set(PARTS)
    if unknown:
        parser.error(f"unknown parts: {', '.join(sorted(unknown))}")
    args.scratch.mkdir(parents=True, exist_ok=True)
    code, commit = extracted(args.commit, args.scratch, "streams-cepcli") if args.commit else (None, "")
    if code is None:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "cepcli"], cwd=ROOT, capture_output=True, text=True
        )
        commit = head.stdout.strip() + (" with edits in cepcli/" if dirty.stdout.strip() else "")
    env = child_env(args.scratch, code)
    loads = [sys.executable, "-c", "import cepcli; print(cepcli.__file__)"]
    found = subprocess.run(loads, env=env, cwd=args.scratch, capture_output=True, text=True, check=True)
    where = found.stdout.strip()
    if code is not None and not where.startswith(str(code)):
        sys.exit(f"the children load {where}, not the snapshot in {code}")
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(
        f"# {now}, commit {commit}, {platform.machine()}, {os.cpu_count()} cores,"
        f" Python {platform.python_version()}; load {_load()}; `python benchmarks/streams.py"
        f" {' '.join(sys.argv[1:])}`".rstrip()
    )
    print(f"# inputs in {args.scratch}; the children's cepcli: {where}", flush=True)
    report = Report()
    started = time.perf_counter()
    # one run first: cepcli's bytecode into the scratch directory's cache (not measured)
    made = inputs(parts, args.data, args.scratch, args.stream_rows)
    warm = Job("warm-up", QUERY_A, *made["csv"])
    with tempfile.TemporaryDirectory(dir=args.scratch, prefix="streams-run-") as tmp:
        run_once(warm, Path(tmp), env, args.timeout)
    for part, measure in (
        ("pipe", part_pipe),
        ("memory", part_memory),
        ("stream", part_stream),
        ("paced", part_paced),
    ):
        if part in parts:
            measure(args, made, env, report)
    print("\n## Commands\n")
    for _, r in report.rows:
        print(f"* {r.job.label}: `{r.job.shown()}`")
    report.show()
    print(f"\n({time.perf_counter() - started:.0f} s in all; load at the end {_load()})")


if __name__ == "__main__":
    main()
