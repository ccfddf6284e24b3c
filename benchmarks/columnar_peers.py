"""The columnar engine (issue 27) against its peers, DuckDB and polars: whole processes.

Usage (from the repository root, with ../shared beside it; DuckDB and polars are installed
for the benchmark only: ``pip install duckdb polars``):

    python benchmarks/columnar_peers.py                       # every part, 3 repeats
    python benchmarks/columnar_peers.py --only f3m,nyc --repeat 3 [--timeout 600] [--commit HEAD]

Every figure is a whole process (start-up, reading, evaluating, writing or counting): its
wall seconds, and its peak RSS (``ru_maxrss`` of that one child, from ``os.wait4``). The runs
of one query are interleaved in each repeat (A B C A B C ...; this machine is shared), the
table gives the medians (and the largest peak RSS), and the match counts of every run of
one query must be equal: cepcli's ``matches`` (``--stats-json``), DuckDB's ``count(*)``,
the number of rows of polars' joined frame. A process that outlives ``--timeout`` is killed
and reported as a timeout (not run again in later repeats), not an error.

cepcli runs as a user runs it: ``cepcli run q.sase -i FILE <input options> --format jsonl
-o matches.jsonl --stats-json stats.json -q``, the default engine (``adaptive``, which runs
the columnar engine on a file) unless a part names one: the checkout's cepcli, or with
``--commit REV`` an unchanged copy of that commit's ``cepcli/`` (``git archive``, read-only;
first on ``PYTHONPATH``), so that edits in progress in the checkout are not measured. Before
each part the script runs ``python -m compileall -q cepcli`` (and ``benchmarks``): with
``PYTHONDONTWRITEBYTECODE=1`` (set in some environments) Python writes no ``.pyc`` on import,
so every process would compile cepcli from source, a cost an installed cepcli does not pay;
compileall writes the bytecode explicitly. DuckDB (``python -c``: a view over
``read_parquet``/``read_csv`` with rows numbered in file order, then ``SELECT count(*)``
of a self-join; 8 GB memory limit) and polars (``python -c`` importing this module, a lazy
query, ``collect``) use their own defaults, both cores; cepcli its threads reading and
evaluating ahead (both cores), and again with ``CEPCLI_THREADS=1`` (``cepcli, 1 core``).

Parts (``--only``):

* ``f3m``: ``flights-3m.parquet`` (airports as types: ``--type-col origin --time-col date``;
  sorted by time, so stream order is row order) at 20 minutes: the SEQ3, AND3 and negated
  SEQ3 (ORD, DFW, BIL) of ``benchmarks/dense_duckdb.py`` (its ``_queries``; the DuckDB view
  and join of its ``_duckdb``) and ``AND(ORD a, DFW b, SEA c) WHERE a.destination =
  c.destination AND b.destination = c.destination AND a.delay > b.delay``: cepcli, DuckDB
  and polars. polars: a hash join on the equal key and the time's bucket (``ts // window``,
  one side under its bucket and the two beside it), then the exact window, the SEQ order by
  row number and the condition; the negation an anti-join of the (a, c) pairs that have a
  violating b between them in row order.
* ``f3m10``: the same on a 30,000,000-row input written once to the scratch directory: ten
  copies of flights-3m, the k-th (k = 0..9) with every ``date`` k calendar years later (so
  still sorted; a match cannot span two copies), row groups as in the original.
* ``nyc``: ``flights.csv.gz`` (``--type-col carrier --time-col time_hour --sort``; stream
  order is time, then row): ``SEQ(UA a, B6 b, OO c) WHERE a.origin = c.origin`` at 2 hours,
  cepcli against DuckDB (the SQL of ``arrow_input.FLIGHTS_QUERIES``) and polars; and at 4
  hours, the default engine against ``--engine eager`` (target: at least 8x eager).
* ``lazy``: ``SEQ(UA a, B6 b, OO c) WHERE a.dep_delay < b.dep_delay WITHIN 2 hours`` on
  ``flights.csv.gz``, ``--engine columnar``, ``chain``, ``tree`` and ``eager``: the engine's own
  time (``seconds - input_seconds`` of ``--stats-json``) and the whole process (target: eager's
  own time at least 10x the columnar engine's).
* ``range``: a range join, ``SEQ(ORD a, DFW b) WHERE a.delay > 120 AND b.delay > a.delay``
  on flights-3m at 1, 6, 24, 72 and 168 hours: cepcli, the cepcli of ``--before REV`` (a
  commit without range joins: it expands every pair in the windows; with ``--max-instances
  1000000000``, as from 72 hours its partial matches pass the default), DuckDB (its IEJoin: the SQL
  below) and polars (``join_where`` on the three inequalities); with the pairs the windows
  held and those the range join kept (``columnar_range_joins`` of the stats).
* ``startup``: ``cepcli run`` on a 10-row CSV (one match) against ``python -c "import
  pyarrow.csv, pyarrow.compute"`` (and ``python -c pass``), median of 7 interleaved (target:
  at most 1.5x the pyarrow import).

Output: a markdown table per part, with the command shapes, the machine and the date, and
a verdict line per target, ready for BENCHMARKS.md. Not a test.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import io
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
from arrow_input import (  # noqa: E402
    CLI,
    F3M,
    F3M_OPTIONS,
    FLIGHTS,
    FLIGHTS_OPTIONS,
    FLIGHTS_QUERIES,
    ROOT,
    SCRATCH,
    duckdb_script,
)
from dense_duckdb import _queries  # noqa: E402

if TYPE_CHECKING:
    import polars as pl

F3M_MINUTES = 20
F3M10 = SCRATCH / "flights-3m-x10-years.parquet"
NYC_SEQ3 = "PATTERN SEQ(UA a, B6 b, OO c) WHERE a.origin = c.origin WITHIN {hours} hours"
LAZY = "PATTERN SEQ(UA a, B6 b, OO c) WHERE a.dep_delay < b.dep_delay WITHIN 2 hours"
PYARROW_IMPORT = 'python -c "import pyarrow.csv, pyarrow.compute"'
RANGE = "PATTERN SEQ(ORD a, DFW b) WHERE a.delay > 120 AND b.delay > a.delay WITHIN {hours} hours"
RANGE_HOURS = (1, 6, 24, 72, 168)
PARTS = ("f3m", "f3m10", "nyc", "lazy", "startup", "range")


def f3m_queries(minutes: int) -> dict[str, tuple[str, str]]:
    """name -> (SASE+, the SQL WHERE over f a, f b, f c): ``dense_duckdb._queries`` and the
    AND of ORD, DFW and SEA (no order, only the window: every pair within it, and max - min)."""
    w = f"INTERVAL {minutes} MINUTE"
    return {
        **_queries(minutes),
        "and3-sea": (
            "PATTERN AND(ORD a, DFW b, SEA c) WHERE a.destination = c.destination"
            f" AND b.destination = c.destination AND a.delay > b.delay WITHIN {minutes} minutes",
            "a.origin = 'ORD' AND b.origin = 'DFW' AND c.origin = 'SEA'"
            " AND a.destination = c.destination AND b.destination = c.destination AND a.delay > b.delay"
            f" AND greatest(a.ts, b.ts, c.ts) - least(a.ts, b.ts, c.ts) <= {w}"
            f" AND b.ts BETWEEN a.ts - {w} AND a.ts + {w} AND c.ts BETWEEN a.ts - {w} AND a.ts + {w}"
            f" AND c.ts BETWEEN b.ts - {w} AND b.ts + {w}",
        ),
    }


# --- one process ---------------------------------------------------------------------------


@dataclass
class Outcome:
    """One whole process: wall seconds, peak RSS, its match count (None: timed out)."""

    wall: float
    rss_mb: float
    matches: int | None
    stats: dict[str, Any] = field(default_factory=dict)


@dataclass
class Cepcli:
    """Which cepcli the runs start: the checkout's (``root``, the default), or an unchanged
    copy of one commit's ``cepcli/`` (``--commit``), put first on ``PYTHONPATH``."""

    root: Path = ROOT
    label: str = ""

    def env(self) -> dict[str, str] | None:
        return None if self.root == ROOT else {**os.environ, "PYTHONPATH": str(self.root)}


CEPCLI = Cepcli()


def extracted(rev: str, scratch: Path, prefix: str = "cepcli") -> tuple[Path, str]:
    """``cepcli/`` of commit ``rev``, extracted once with ``git archive`` (read-only) into
    ``scratch`` (``PREFIX-SHA/cepcli``), and the commit's short hash: the runs then measure
    that commit whatever the checkout holds meanwhile."""
    sha = subprocess.run(
        ["git", "rev-parse", "--short", rev], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    dest = scratch / f"{prefix}-{sha}"
    if not (dest / "cepcli").exists():
        partial = scratch / f"{prefix}-{sha}.partial"
        partial.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "archive", sha, "cepcli"], cwd=ROOT, capture_output=True, check=True)
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(partial, filter="data")
        partial.rename(dest)
    return dest, sha


def snapshot(rev: str) -> Cepcli:
    """``cepcli/`` of commit ``rev`` (``extracted``) as the cepcli the runs measure."""
    dest, sha = extracted(rev, SCRATCH)
    return Cepcli(dest, f"cepcli of commit {sha} (git archive, {dest})")


def measure(
    command: list[str], timeout: float, scratch: Path, env: dict[str, str] | None = None
) -> tuple[float, float, str | None]:
    """Run ``command`` to its end: wall seconds, peak RSS in MB (``ru_maxrss`` of this child
    alone, from ``os.wait4``) and its standard output, or None if it was killed after
    ``timeout`` seconds (its process group, SIGKILL)."""
    out_path, err_path = scratch / "stdout.txt", scratch / "stderr.txt"
    killed = threading.Event()
    with out_path.open("w") as out, err_path.open("w") as err:
        started = time.perf_counter()
        proc = subprocess.Popen(command, stdout=out, stderr=err, start_new_session=True, env=env)

        def kill() -> None:
            killed.set()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    rss_mb = usage.ru_maxrss / 1024  # KiB on Linux
    if killed.is_set():
        return wall, rss_mb, None
    if proc.returncode != 0:
        tail = err_path.read_text()[-2000:]
        raise RuntimeError(f"exit {proc.returncode}: {' '.join(command)[:300]}\n{tail}")
    return wall, rss_mb, out_path.read_text()


Run = Callable[[], Outcome]


def cepcli_run(
    query: str,
    data: Path,
    options: list[str],
    scratch: Path,
    timeout: float,
    env: dict[str, str] | None = None,
) -> Run:
    """``cepcli run`` as a whole process; its count is ``matches`` of ``--stats-json``;
    ``env``: more of the environment (``CEPCLI_THREADS=1``: on one core)."""

    def run() -> Outcome:
        q, stats, out = scratch / "q.sase", scratch / "stats.json", scratch / "matches.jsonl"
        q.write_text(query + "\n")
        stats.unlink(missing_ok=True)
        command = [CLI, "run", str(q), "-i", str(data), *options, "--format", "jsonl", "-o", str(out)]
        command += ["--stats-json", str(stats), "-q"]
        environment = CEPCLI.env()
        if env:
            environment = {**(environment or os.environ), **env}
        wall, rss, printed = measure(command, timeout, scratch, environment)
        if printed is None:
            return Outcome(wall, rss, None)
        numbers = json.loads(stats.read_text())
        return Outcome(wall, rss, int(numbers["matches"]), numbers)

    return run


def counting_run(code: str, scratch: Path, timeout: float) -> Run:
    """``python -c code`` as a whole process; its count is the last line it prints."""

    def run() -> Outcome:
        wall, rss, printed = measure([sys.executable, "-c", code], timeout, scratch)
        count = None if printed is None else int(printed.strip().splitlines()[-1])
        return Outcome(wall, rss, count)

    return run


def duckdb_run(view: str, where: str, scratch: Path, timeout: float) -> Run:
    """DuckDB: ``SELECT count(*)`` of the self-join of ``f`` (``arrow_input.duckdb_script``);
    ``f a, f c`` where the negated ``b`` is a ``NOT EXISTS``, as in ``dense_duckdb._duckdb``."""
    joined = "f a, f c" if "NOT EXISTS" in where else "f a, f b, f c"
    return counting_run(duckdb_script(view, f"SELECT count(*) FROM {joined} WHERE {where}"), scratch, timeout)


def polars_run(kind: str, name: str, data: Path, window: int, scratch: Path, timeout: float) -> Run:
    """polars: ``polars_count`` (below) in a process of its own."""
    code = (
        f"import sys; sys.path.insert(0, {str(BENCH)!r}); import columnar_peers as m;"
        f" print(m.polars_count({kind!r}, {name!r}, {str(data)!r}, {window}))"
    )
    return counting_run(code, scratch, timeout)


def f3m_view(data: Path) -> str:
    """The view of ``dense_duckdb._duckdb``, over ``data``."""
    return (
        "SELECT row_number() OVER () AS r, date AS ts, origin, destination, delay"
        f" FROM read_parquet('{data}')"
    )


NYC_VIEW = (  # the view of arrow_input._duckdb_process
    "SELECT row_number() OVER () AS r, carrier, time_hour AS ts, origin"
    f" FROM read_csv('{FLIGHTS}', nullstr='NA', header=true)"
)


# --- polars --------------------------------------------------------------------------------


def _near(
    left: pl.LazyFrame,
    right: pl.LazyFrame,
    left_ts: str,
    right_ts: str,
    window: int,
    on: tuple[tuple[str, str], ...] = (),
) -> pl.LazyFrame:
    """The pairs of rows of ``left`` and ``right`` whose times (int ns) are at most ``window``
    apart and whose keys ``on`` ((left column, right column), ...) are equal: a hash join on
    the keys and the time's bucket (``ts // window``; each right row under its own bucket and
    the two beside it, so that every pair within the window meets exactly once), then the
    exact test."""
    import polars as pl

    left = left.with_columns(_bucket=pl.col(left_ts) // window)
    buckets = [pl.col(right_ts) // window + d for d in (-1, 0, 1)]
    right = right.with_columns(_bucket=pl.concat_list(buckets)).explode("_bucket")
    joined = left.join(
        right,
        left_on=[*(k for k, _ in on), "_bucket"],
        right_on=[*(k for _, k in on), "_bucket"],
        how="inner",
    )
    return joined.drop("_bucket").filter((pl.col(left_ts) - pl.col(right_ts)).abs() <= window)


def _sides(frame: pl.LazyFrame, type_col: str, types: dict[str, str]) -> dict[str, pl.LazyFrame]:
    """Per variable, the rows of its type, every column named ``<variable>_<column>``."""
    import polars as pl

    return {
        var: frame.filter(pl.col(type_col) == kind).drop(type_col).rename(lambda c, var=var: f"{var}_{c}")
        for var, kind in types.items()
    }


def _polars_f3m(name: str, data: str, minutes: int) -> pl.LazyFrame:
    """The four flights-3m queries (stream order is row order: the file is sorted by time)."""
    import polars as pl

    w = minutes * 60 * 10**9
    col = pl.col
    frame = (
        pl.scan_parquet(data)
        .with_row_index("r")
        .select("r", "origin", "destination", "delay", ts=col("date").dt.epoch("ns"))
    )
    last = "SEA" if name == "and3-sea" else "BIL"
    s = _sides(frame, "origin", {"a": "ORD", "b": "DFW", "c": last})
    ca = _near(s["c"], s["a"], "c_ts", "a_ts", w, (("c_destination", "a_destination"),))
    to_place = (("c_destination", "b_destination"),)
    if name == "seq3":
        ca = ca.filter(col("a_r") < col("c_r"))
        cab = _near(ca, s["b"], "c_ts", "b_ts", w, to_place)
        between = (col("a_r") < col("b_r")) & (col("b_r") < col("c_r"))
        return cab.filter(between & (col("a_delay") < col("b_delay")))
    if name == "neg-seq3":
        pairs = ca.filter(col("a_r") < col("c_r"))
        violated = (
            _near(pairs, s["b"], "c_ts", "b_ts", w, to_place)
            .filter((col("a_r") < col("b_r")) & (col("b_r") < col("c_r")) & (col("a_delay") < col("b_delay")))
            .select("a_r", "c_r")
            .unique()
        )
        return pairs.join(violated, on=["a_r", "c_r"], how="anti")
    cab = _near(ca, s["b"], "c_ts", "b_ts", w, to_place).filter((col("a_ts") - col("b_ts")).abs() <= w)
    if name == "and3":
        return cab.filter(col("a_delay") < col("b_delay"))
    if name == "and3-sea":
        return cab.filter(col("a_delay") > col("b_delay"))
    raise ValueError(name)


def _polars_nyc(data: str, hours: int) -> pl.LazyFrame:
    """SEQ(UA a, B6 b, OO c) WHERE a.origin = c.origin on the NYC flights (stream order: time,
    then row, as ``--sort`` gives it)."""
    import polars as pl

    w = hours * 3600 * 10**9
    col = pl.col
    frame = (
        pl.scan_csv(data, null_values="NA")
        .with_row_index("r")
        .select("r", "carrier", "origin", ts=col("time_hour").str.to_datetime(time_zone="UTC").dt.epoch("ns"))
    )
    s = _sides(frame, "carrier", {"a": "UA", "b": "B6", "c": "OO"})

    def before(x: str, y: str) -> pl.Expr:
        return (col(f"{x}_ts") < col(f"{y}_ts")) | (
            (col(f"{x}_ts") == col(f"{y}_ts")) & (col(f"{x}_r") < col(f"{y}_r"))
        )

    ca = _near(s["c"], s["a"], "c_ts", "a_ts", w, (("c_origin", "a_origin"),)).filter(before("a", "c"))
    return _near(ca, s["b"], "c_ts", "b_ts", w).filter(before("a", "b") & before("b", "c"))


def _polars_range(data: str, hours: int) -> pl.LazyFrame:
    """``RANGE``: ``join_where`` on the order, the window and the delays."""
    import polars as pl

    w = hours * 3600 * 10**9
    col = pl.col
    frame = (
        pl.scan_parquet(data)
        .with_row_index("r")
        .select("r", "origin", "delay", ts=col("date").dt.epoch("ns"))
    )
    s = _sides(frame, "origin", {"a": "ORD", "b": "DFW"})
    late = s["a"].filter(col("a_delay") > 120)
    return late.join_where(
        s["b"], col("b_delay") > col("a_delay"), col("b_r") > col("a_r"), col("b_ts") <= col("a_ts") + w
    )


def range_where(hours: int) -> str:
    """``RANGE`` in SQL, over ``f a, f b`` (the f3m view)."""
    return (
        "a.origin = 'ORD' AND b.origin = 'DFW' AND a.delay > 120 AND b.delay > a.delay"
        f" AND a.r < b.r AND b.ts <= a.ts + INTERVAL {hours} HOUR"
    )


def polars_count(kind: str, name: str, data: str, window: int) -> int:
    """The number of rows of the joined frame of query ``name`` (``kind`` f3m: window in
    minutes; nyc and range: in hours)."""
    import polars as pl

    if kind == "range":
        frame = _polars_range(data, window)
    else:
        frame = _polars_f3m(name, data, window) if kind == "f3m" else _polars_nyc(data, window)
    return int(frame.select(pl.len()).collect().item())


# --- interleaving and tables ----------------------------------------------------------------


@dataclass
class Summary:
    outcomes: list[Outcome]

    @property
    def done(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.matches is not None]

    @property
    def timed_out(self) -> bool:
        return len(self.done) < len(self.outcomes)

    @property
    def wall(self) -> float | None:
        return statistics.median(o.wall for o in self.done) if self.done else None

    @property
    def rss(self) -> float:
        return max(o.rss_mb for o in self.done) if self.done else float("nan")

    @property
    def matches(self) -> int | None:
        return self.done[-1].matches if self.done else None

    def stat(self, key: str) -> float | None:
        values = [float(o.stats[key]) for o in self.done if key in o.stats]
        return statistics.median(values) if values else None

    def engine_seconds(self) -> float | None:
        values = [float(o.stats["seconds"]) - float(o.stats["input_seconds"]) for o in self.done if o.stats]
        return statistics.median(values) if values else None


def interleaved(runs: dict[str, Run], repeat: int) -> dict[str, Summary]:
    """Every run ``repeat`` times, interleaved in each repeat; a run that timed out is not run
    again."""
    results: dict[str, Summary] = {run: Summary([]) for run in runs}
    for _ in range(repeat):
        for run, call in runs.items():
            if results[run].timed_out:
                continue
            results[run].outcomes.append(call())
    return results


def agree(name: str, results: dict[str, Summary]) -> str | None:
    """None if every finished run of every side counted the same matches, else what differs."""
    counts = {run: [o.matches for o in s.done] for run, s in results.items()}
    if len({c for cs in counts.values() for c in cs}) <= 1:
        return None
    return f"{name}: the match counts differ: {counts}"


def _cell(value: float | None, fmt: str = "{:.2f}") -> str:
    return "" if value is None else fmt.format(value)


def _ratio(a: float | None, b: float | None) -> str:
    return "" if a is None or b is None or b == 0 else f"{a / b:.2f}x"


def _wall_cell(s: Summary, timeout: float) -> str:
    if s.wall is None:
        return f"timeout > {timeout:.0f} s"
    shown = f"{s.wall:.2f}"
    return f"{shown} (timeout > {timeout:.0f} s once)" if s.timed_out else shown


def _row(label: str, run: str, s: Summary, timeout: float, ratios: list[str]) -> str:
    """A table row: the label, the run, its median wall, peak RSS, `seconds`, matches, ratios."""
    cells = [label, run, _wall_cell(s, timeout), f"{s.rss:.0f}", _cell(s.stat("seconds"))]
    return "| " + " | ".join([*cells, _cell(s.matches, "{:,}"), *ratios]) + " |"


def _git() -> str:
    """The commit, and whether cepcli/ differs from it (read-only git commands)."""
    if CEPCLI.label:
        return CEPCLI.label
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "--no-optional-locks", "status", "--porcelain", "--", "cepcli"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):
        return "commit unknown"
    changed = [line for line in dirty if line.strip()]
    return f"commit {head}" + (f", {len(changed)} files of cepcli/ changed since" if changed else "")


def machine_line(repeat: int) -> str:
    versions = ", ".join(f"{p} {metadata.version(p)}" for p in ("pyarrow", "duckdb", "polars"))
    now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    load = os.getloadavg()[0]
    return (
        f"# {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()},"
        f" {platform.system()}; {versions}; {now}, load {load:.1f}; {_git()}; median of {repeat}"
    )


def compile_bytecode() -> None:
    """Write cepcli's (and these scripts') .pyc, which PYTHONDONTWRITEBYTECODE=1 stops imports
    from writing: every timed process then loads bytecode, as an installed cepcli does."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", "benchmarks"], cwd=ROOT, check=True)
    subprocess.run([sys.executable, "-m", "compileall", "-q", "cepcli"], cwd=CEPCLI.root, check=True)


CEPCLI_SHAPE = (
    "`cepcli run q.sase -i {data} {options} --format jsonl -o matches.jsonl --stats-json stats.json -q`"
)


# --- parts --------------------------------------------------------------------------------


def _peers(title: str, data: Path, view: str, repeat: int, timeout: float, scratch: Path) -> list[str]:
    """f3m and f3m10: the four queries, cepcli (default engine), DuckDB and polars."""
    print(f"\n## {title}: cepcli (default engine), DuckDB and polars, whole processes, at {F3M_MINUTES} min")
    print(machine_line(repeat))
    print(f"cepcli: {CEPCLI_SHAPE.format(data=data.name, options=' '.join(F3M_OPTIONS))}")
    shown = view.replace(str(data), data.name)
    print(f"DuckDB: `python -c`: `CREATE VIEW f AS {shown}`; `SELECT count(*) FROM f a, f b, f c WHERE ...`")
    print(
        "polars: `python -c`: `columnar_peers.polars_count(...)`: `scan_parquet`, bucketed hash joins,"
        " `select(pl.len()).collect()`"
    )
    print("\n| query | run | wall s | peak RSS MB | `seconds` | matches | DuckDB / this | polars / this |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    problems = []
    for name, (query, where) in f3m_queries(F3M_MINUTES).items():
        runs = {
            "cepcli": cepcli_run(query, data, F3M_OPTIONS, scratch, timeout),
            "cepcli, 1 core": cepcli_run(query, data, F3M_OPTIONS, scratch, timeout, {"CEPCLI_THREADS": "1"}),
            "DuckDB": duckdb_run(view, where, scratch, timeout),
            "polars": polars_run("f3m", name, data, F3M_MINUTES, scratch, timeout),
        }
        results = interleaved(runs, repeat)
        for run, s in results.items():
            ratios = [_ratio(results["DuckDB"].wall, s.wall), _ratio(results["polars"].wall, s.wall)]
            print(_row(name, run, s, timeout, ratios))
        if (problem := agree(name, results)) is not None:
            problems.append(problem)
    print(
        "\nQueries (20 minutes): seq3 `" + f3m_queries(F3M_MINUTES)["seq3"][0] + "`; and3 the same as AND;"
        " neg-seq3 `SEQ(ORD a, NOT DFW b, BIL c)` with the same conditions; and3-sea `"
        + f3m_queries(F3M_MINUTES)["and3-sea"][0]
        + "`."
    )
    return problems


def part_f3m(repeat: int, timeout: float, scratch: Path) -> list[str]:
    return _peers("flights-3m", F3M, f3m_view(F3M), repeat, timeout, scratch)


def f3m10() -> Path:
    """flights-3m ten times (written once): the k-th copy's dates k calendar years later
    (Jan-Jun 2001 + k, so the whole stays sorted), row groups as in the original."""
    if F3M10.exists():
        return F3M10
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = pq.ParquetFile(F3M)
    table = source.read()
    when = table["date"].to_numpy()  # datetime64[us]
    days = when.astype("datetime64[D]")
    unique = np.unique(days)
    where = np.searchsorted(unique, days)
    sizes = [source.metadata.row_group(i).num_rows for i in range(source.metadata.num_row_groups)]
    SCRATCH.mkdir(exist_ok=True)
    partial = F3M10.with_suffix(".partial")
    with pq.ParquetWriter(partial, table.schema, compression="zstd") as writer:
        last = None
        for k in range(10):
            shift = np.array(
                [np.datetime64(d.item().replace(year=d.item().year + k)) - d for d in unique],
                dtype="timedelta64[D]",
            )
            shifted = when + shift[where].astype("timedelta64[us]")
            assert last is None or shifted[0] >= last
            last = shifted[-1]
            copy = table.set_column(0, "date", pa.array(shifted, type=table.schema.field("date").type))
            start = 0
            for size in sizes:
                writer.write_table(copy.slice(start, size), row_group_size=size)
                start += size
    partial.rename(F3M10)
    return F3M10


def part_f3m10(repeat: int, timeout: float, scratch: Path) -> list[str]:
    started = time.perf_counter()
    data = f3m10()
    print(f"\n(flights-3m x10 at {data}, {time.perf_counter() - started:.0f} s to make or find)")
    return _peers("flights-3m x10 (30,000,000 rows)", data, f3m_view(data), repeat, timeout, scratch)


def part_nyc(repeat: int, timeout: float, scratch: Path) -> list[str]:
    problems = []
    print("\n## NYC flights, SEQ(UA a, B6 b, OO c) WHERE a.origin = c.origin: cepcli, DuckDB and polars")
    print(machine_line(repeat))
    shape = CEPCLI_SHAPE.format(data=FLIGHTS.name, options=" ".join(FLIGHTS_OPTIONS))
    print(f"cepcli: {shape} [--engine eager]")
    print(
        "DuckDB: `python -c`: the SQL of `arrow_input.FLIGHTS_QUERIES['seq3']` over"
        " `read_csv(..., nullstr='NA')`; polars: `scan_csv(null_values='NA')`, bucketed hash joins,"
        " `(ts, row)` order"
    )
    print(
        "\n| window | run | wall s | peak RSS MB | `seconds` | matches"
        " | this / DuckDB | this / polars | eager / this |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    query2 = NYC_SEQ3.format(hours=2)
    runs = {
        "cepcli": cepcli_run(query2, FLIGHTS, FLIGHTS_OPTIONS, scratch, timeout),
        "DuckDB": duckdb_run(NYC_VIEW, FLIGHTS_QUERIES["seq3"][1], scratch, timeout),
        "polars": polars_run("nyc", "seq3", FLIGHTS, 2, scratch, timeout),
    }
    two = interleaved(runs, repeat)
    for run, s in two.items():
        print(
            _row(
                "2 hours", run, s, timeout, [_ratio(s.wall, two[p].wall) for p in ("DuckDB", "polars")] + [""]
            )
        )
    if (problem := agree("nyc 2 hours", two)) is not None:
        problems.append(problem)
    query4 = NYC_SEQ3.format(hours=4)
    runs = {
        "cepcli": cepcli_run(query4, FLIGHTS, FLIGHTS_OPTIONS, scratch, timeout),
        "cepcli --engine eager": cepcli_run(
            query4, FLIGHTS, [*FLIGHTS_OPTIONS, "--engine", "eager"], scratch, timeout
        ),
    }
    four = interleaved(runs, repeat)
    eager = four["cepcli --engine eager"].wall
    for run, s in four.items():
        print(_row("4 hours", run, s, timeout, ["", "", _ratio(eager, s.wall)]))
    if (problem := agree("nyc 4 hours", four)) is not None:
        problems.append(problem)
    default = four["cepcli"].wall
    if eager is not None and default is not None:
        met = "met" if eager / default >= 8 else "not met"
        print(
            f"\nTarget: the default engine at least 8x eager at 4 hours, whole process: **{met}**"
            f" (eager {eager:.2f} s / default {default:.2f} s = {eager / default:.2f}x)."
        )
    return problems


def part_lazy(repeat: int, timeout: float, scratch: Path) -> list[str]:
    print(f"\n## The engines on `{LAZY}` (flights.csv.gz): their own time and the whole process")
    print(machine_line(repeat))
    print(
        f"{CEPCLI_SHAPE.format(data=FLIGHTS.name, options=' '.join(FLIGHTS_OPTIONS))} --engine E;"
        " engine s = `seconds - input_seconds` of the stats"
    )
    print(
        "\n| engine | wall s | peak RSS MB | `seconds` | `input_seconds` | engine s | matches"
        " | eager / this (engine) | eager / this (wall) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    runs = {
        engine: cepcli_run(LAZY, FLIGHTS, [*FLIGHTS_OPTIONS, "--engine", engine], scratch, timeout)
        for engine in ("columnar", "chain", "tree", "eager")
    }
    results = interleaved(runs, repeat)
    eager_engine, eager_wall = results["eager"].engine_seconds(), results["eager"].wall
    for run, s in results.items():
        print(
            f"| {run} | {_wall_cell(s, timeout)} | {s.rss:.0f} | {_cell(s.stat('seconds'))}"
            f" | {_cell(s.stat('input_seconds'))} | {_cell(s.engine_seconds(), '{:.3f}')}"
            f" | {_cell(s.matches, '{:,}')} | {_ratio(eager_engine, s.engine_seconds())}"
            f" | {_ratio(eager_wall, s.wall)} |"
        )
    columnar = results["columnar"].engine_seconds()
    if eager_engine is not None and columnar:
        met = "met" if eager_engine / columnar >= 10 else "not met"
        print(
            f"\nTarget: eager's own time at least 10x the columnar engine's: **{met}**"
            f" (eager {eager_engine:.3f} s / columnar {columnar:.3f} s = {eager_engine / columnar:.2f}x;"
            f" whole process {_ratio(eager_wall, results['columnar'].wall)})."
        )
    problem = agree("lazy", results)
    return [] if problem is None else [problem]


BEFORE = Cepcli()  # ``--before``: the cepcli the range part compares with


def part_range(repeat: int, timeout: float, scratch: Path) -> list[str]:
    problems = []
    print(f"\n## A range join: `{RANGE.format(hours='H')}` on flights-3m")
    print(machine_line(repeat))
    print(
        f"cepcli: {CEPCLI_SHAPE.format(data=F3M.name, options=' '.join(F3M_OPTIONS))}; before: {BEFORE.label}"
    )
    print(f"DuckDB: `SELECT count(*) FROM f a, f b WHERE {range_where(0).replace('0 HOUR', 'H HOUR')}`")
    print("polars: `a.join_where(b, b_delay > a_delay, b_r > a_r, b_ts <= a_ts + H)`")
    print(
        "\n| window | run | wall s | peak RSS MB | `seconds` | matches | pairs in windows | pairs made"
        " | before / this | DuckDB / this | polars / this |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for hours in RANGE_HOURS:
        query = RANGE.format(hours=hours)
        # (before, a window of 72 hours or more passes the default --max-instances: raised)
        before = cepcli_run(query, F3M, [*F3M_OPTIONS, "--max-instances", str(10**9)], scratch, timeout)
        runs = {
            "cepcli": cepcli_run(query, F3M, F3M_OPTIONS, scratch, timeout),
            "cepcli before": lambda before=before: _with(BEFORE, before),
            "DuckDB": counting_run(
                duckdb_script(f3m_view(F3M), f"SELECT count(*) FROM f a, f b WHERE {range_where(hours)}"),
                scratch,
                timeout,
            ),
            "polars": polars_run("range", "range", F3M, hours, scratch, timeout),
        }
        results = interleaved(runs, repeat)
        for run, s in results.items():
            sizes = (
                next(iter((s.done[-1].stats.get("columnar_range_joins") or {}).values()), {})
                if s.done
                else {}
            )
            ratios = [_ratio(results[p].wall, s.wall) for p in ("cepcli before", "DuckDB", "polars")]
            print(
                f"| {hours} h | {run} | {_wall_cell(s, timeout)} | {s.rss:.0f} | {_cell(s.stat('seconds'))}"
                f" | {_cell(s.matches, '{:,}')} | {_cell(sizes.get('window_pairs'), '{:,}')}"
                f" | {_cell(sizes.get('pairs'), '{:,}')} | {' | '.join(ratios)} |"
            )
        if (problem := agree(f"range {hours} h", results)) is not None:
            problems.append(problem)
    return problems


def _with(which: Cepcli, run: Run) -> Outcome:
    """``run`` with ``which`` cepcli."""
    global CEPCLI
    saved, CEPCLI = CEPCLI, which
    try:
        return run()
    finally:
        CEPCLI = saved


def part_startup(repeat: int, timeout: float, scratch: Path) -> list[str]:
    q, data, stats = scratch / "one.sase", scratch / "ten.csv", scratch / "one-stats.json"
    q.write_text("PATTERN SEQ(A a, B b) WITHIN 10\n")
    data.write_text("type,ts\n" + "".join(f"{t},{i}\n" for i, t in enumerate("CCACBCCCCC")))
    cepcli = [CLI, "run", str(q), "-i", str(data), "--format", "jsonl", "-o", str(scratch / "one.jsonl")]
    commands = {
        "cepcli run (10 rows, 1 match)": [*cepcli, "--stats-json", str(stats), "-q"],
        PYARROW_IMPORT: [sys.executable, "-c", "import pyarrow.csv, pyarrow.compute"],
        "python -c pass": [sys.executable, "-c", "pass"],
    }
    for name, command in commands.items():  # warm up: the file cache, cepcli's parser tables
        measure(command, timeout, scratch, CEPCLI.env() if name.startswith("cepcli") else None)
    walls: dict[str, list[float]] = {name: [] for name in commands}
    rss: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, command in commands.items():
            stats.unlink(missing_ok=True)
            env = CEPCLI.env() if name.startswith("cepcli") else None
            wall, peak, printed = measure(command, timeout, scratch, env)
            assert printed is not None, f"{name} timed out"
            walls[name].append(wall)
            rss[name].append(peak)
            if name.startswith("cepcli"):
                matches = json.loads(stats.read_text())["matches"]
                assert matches == 1, f"the start-up query found {matches} matches, not 1"
    medians = {name: statistics.median(v) for name, v in walls.items()}
    print(f"\n## Start-up: `cepcli run` on a 10-row CSV against importing pyarrow, median of {repeat}")
    print(machine_line(repeat))
    print(
        "cepcli: `cepcli run one.sase -i ten.csv --format jsonl -o one.jsonl --stats-json stats.json -q`"
        " (`PATTERN SEQ(A a, B b) WITHIN 10`, 1 match)"
    )
    print("\n| command | wall s | peak RSS MB | vs pyarrow import |")
    print("|---|---:|---:|---:|")
    base = medians[PYARROW_IMPORT]
    for name, wall in medians.items():
        print(f"| `{name}` | {wall:.3f} | {max(rss[name]):.0f} | {wall / base:.2f}x |")
    ratio = medians["cepcli run (10 rows, 1 match)"] / base
    met = "met" if ratio <= 1.5 else "not met"
    print(
        f"\nTarget: `cepcli run` at most 1.5x the pyarrow import: **{met}**"
        f" ({medians['cepcli run (10 rows, 1 match)']:.3f} s / {base:.3f} s = {ratio:.2f}x)."
    )
    return []


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--only", default=",".join(PARTS), help="parts: " + ",".join(PARTS))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per process")
    parser.add_argument("--commit", default=None, help="measure this commit's cepcli/ (git archive)")
    parser.add_argument("--before", default=None, help="range: compare with this commit's cepcli/")
    args = parser.parse_args()
    parts = [p for p in args.only.split(",") if p]
    unknown = set(parts) - set(PARTS)
    if unknown:
        parser.error(f"unknown parts: {', '.join(sorted(unknown))}")
    functions = {
        "f3m": part_f3m,
        "f3m10": part_f3m10,
        "nyc": part_nyc,
        "lazy": part_lazy,
        "startup": part_startup,
        "range": part_range,
    }
    SCRATCH.mkdir(exist_ok=True)
    global CEPCLI, BEFORE
    if args.commit:
        CEPCLI = snapshot(args.commit)
    if args.before:
        BEFORE = snapshot(args.before)
    elif "range" in parts:
        parser.error("the range part needs --before REV (a commit to compare with)")
    problems: list[str] = []
    with tempfile.TemporaryDirectory(dir=SCRATCH) as tmp:
        for part in parts:
            compile_bytecode()
            started = time.perf_counter()
            repeat = max(args.repeat, 7) if part == "startup" else args.repeat
            problems += functions[part](repeat, args.timeout, Path(tmp))
            print(f"\n(part {part}: {time.perf_counter() - started:.0f} s)", flush=True)
    if problems:
        print("\n**The match counts disagree:**\n" + "\n".join(f"* {p}" for p in problems))
        sys.exit(1)


if __name__ == "__main__":
    main()
