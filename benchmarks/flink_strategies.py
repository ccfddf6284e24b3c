"""Selection strategies against Apache Flink's MATCH_RECOGNIZE (PyFlink, streaming and batch).

Usage (from the repository root). Flink is a peer, never a dependency of cepcli: PyFlink goes
into a virtualenv of its own, outside the repository, and runs on Java 17 (``java -version``):

    python3.11 -m venv /work/flink-venv && /work/flink-venv/bin/pip install apache-flink
    python benchmarks/flink_strategies.py --flink-python /work/flink-venv/bin/python \\
        [--repeat 3] [--csv PATH] [--only strict2,strict3,partition3] [--mode stream,batch] \\
        [--scratch DIR] [--parallelism N] [--timeout 900]

The three queries of ``strategies.py`` (issue 40) on ``flights-3m.csv`` (3,000,000 US flights
of 2001 sorted by ``date``, written from ``flights-3m.parquet`` by pyarrow's CSV writer into
the scratch directory if it is not there; airports as types, ``--type-col origin --time-col
date``, so stream order is file order, which is time order):

* ``strict2``: ``SEQ(ORD a, DFW b) WHERE strict_contiguity { b.delay > a.delay } WITHIN 20
  minutes``: b is the row right after a in the file;
* ``strict3``: ``SEQ(ORD a, DFW b, ATL c)``, strict contiguity, ``b.delay > a.delay AND
  c.delay > b.delay``, 20 minutes: three consecutive rows;
* ``partition3``: the same three with ``partition_contiguity { [destination] AND ... }`` at 1
  hour: three consecutive rows of one destination's rows (in file order).

cepcli: ``python -m cepcli run q.sase -i flights-3m.csv --type-col origin --time-col date
--format jsonl -q -o /dev/null --stats-json stats.json`` (the default engine; the count is
``matches`` of the stats).

Flink: ``/work/flink-venv/bin/python flink_<query>.py stream|batch ids.txt``, a PyFlink Table
API program written into the scratch directory: a ``TableEnvironment`` in streaming or batch
mode (a local mini cluster in the JVM that PyFlink starts; Flink's defaults, so parallelism 1
unless ``--parallelism``), the table, the query, its rows collected (``collect()``: the row
ids, a few thousand rows at most), their number printed. The table is a copy of the same CSV
(``flights-3m-r.csv`` in the scratch directory, written once from it by pyarrow): Flink's
``csv`` format has no option to skip a header line, and every row gets its 0-based number in
the file, ``r`` (cepcli's ``_row``), the tie-break of rows with equal dates (the flights are
per minute: a minute has 10 to 40 rows). The exact SQL (strict3; strict2 drops C, partition3
adds ``PARTITION BY destination`` and ``INTERVAL '3600.001' SECOND(4, 3)``)::

    CREATE TABLE flights (
      r BIGINT, `date` TIMESTAMP(3), delay BIGINT, distance BIGINT, origin STRING,
      destination STRING,
      WATERMARK FOR `date` AS `date` - INTERVAL '0.001' SECOND
    ) WITH ('connector' = 'filesystem', 'path' = '.../flights-3m-r.csv', 'format' = 'csv',
      'csv.null-literal' = '')

    SELECT ra, rb, rc FROM flights MATCH_RECOGNIZE (
      ORDER BY `date`, r
      MEASURES A.r AS ra, B.r AS rb, C.r AS rc
      ONE ROW PER MATCH
      AFTER MATCH SKIP TO NEXT ROW
      PATTERN (A B C) WITHIN INTERVAL '1200.001' SECOND(4, 3)
      DEFINE A AS A.origin = 'ORD',
             B AS B.origin = 'DFW' AND B.delay > A.delay,
             C AS C.origin = 'ATL' AND C.delay > B.delay)

MATCH_RECOGNIZE's pattern ``(A B C)`` is strict contiguity: consecutive rows of the ordered
partition. Three details make it the same query as cepcli's, and the script checks it (below):

* the watermark lags 1 ms, not 0: Flink's CEP operator drops, as late, a row whose time is not
  *after* the last watermark, and with ``date - INTERVAL '0' SECOND`` the watermark is the
  largest date seen, so the rows after the first of a minute may be dropped (strict2 found 235
  matches so, of 3,977). A 1 ms lag never drops a row of a sorted input with whole-ms dates;
* ``ORDER BY `date`, r``: rows of equal dates in file order (batch mode sorts them in no fixed
  order without ``r``: strict2 found 3,961 matches so);
* the window is the duration plus 1 ms: Flink prunes a partial match when the new row's time
  minus the first's is ``>=`` the window, while cepcli's WITHIN keeps last - first ``<=`` the
  duration (the dates are whole minutes, ``TIMESTAMP(3)`` keeps them exactly).

A missing delay (an empty CSV field) is NULL in Flink by ``'csv.null-literal' = ''`` (without
it, Flink's csv format fails on the field: ``NumberFormatException: For input string: ""``),
and ``NULL > x`` is not true: no match, as in cepcli. (flights-3m has no missing delay; the
three details and the NULL were checked on a 10-row CSV made for it: 20 minutes exactly, a
missing delay, two rows of one minute.)

Every figure is a whole process, started from this harness and timed from its start until it
and every process it started have exited (the harness makes itself a child subreaper, so the
JVM that PyFlink's Python starts, orphaned when that Python exits, is reaped here): wall
seconds; peak RSS in two forms: the largest ``ru_maxrss`` of one process of the tree (from
``os.wait4`` of each, the JVM's included) and the peak of the sum of the tree's RSS, sampled
from /proc every 0.1 s (the Python driver and the JVM side by side; may miss a short peak).
The harness stays small: the CSV copies are written in processes of their own. The runs of a
query are interleaved (cepcli, Flink stream, Flink batch, cepcli, ...; this machine is shared,
the load average is printed before and after each query), the table gives the median wall and
the largest peak. Counts must be equal (the script exits 1 otherwise), and, untimed, once per
query, cepcli's matches (jsonl, each variable's ``_row``) are compared with every Flink run's
row-id tuples as sets. Flink's ``in-job`` seconds are those from ``execute_sql`` of the query
to its last row, without the JVM's start, the mini cluster's start and the planning before;
cepcli's are its ``seconds`` (stats), reading included.

Not a test: the numbers go to BENCHMARKS.md with the command and the machine.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import datetime
import json
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

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
FLINK_SCRATCH = Path(tempfile.gettempdir()) / "flink-bench"
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"
CEPCLI_OPTIONS = ["--type-col", "origin", "--time-col", "date"]
PR_SET_CHILD_SUBREAPER = 36
sys.path.insert(0, str(BENCH))
from arrow_input import F3M, SCRATCH  # noqa: E402
from columnar_peers import _git  # noqa: E402
from strategies import QUERIES as STRATEGY_QUERIES  # noqa: E402
from strategies import Query, load  # noqa: E402
from strategies import in_child as in_strategies_child  # noqa: E402

# the contiguity queries of ``strategies.py`` (MATCH_RECOGNIZE's own strategy; its next-match
# queries have no MATCH_RECOGNIZE form that gives cepcli's matches)
QUERIES = {name: query for name, query in STRATEGY_QUERIES.items() if not query.next_match}

VARIABLES = ("A", "B", "C")


def flink_ddl(csv: Path) -> str:
    """The table over the numbered, header-less copy of the CSV."""
    return (
        "CREATE TABLE flights (\n"
        "  r BIGINT, `date` TIMESTAMP(3), delay BIGINT, distance BIGINT, origin STRING,\n"
        "  destination STRING,\n"
        "  WATERMARK FOR `date` AS `date` - INTERVAL '0.001' SECOND\n"
        f") WITH ('connector' = 'filesystem', 'path' = '{csv}', 'format' = 'csv',\n"
        "  'csv.null-literal' = '')"
    )


def flink_sql(query: Query) -> str:
    """The query as MATCH_RECOGNIZE: the k-th variable is the k-th type with a larger delay
    than the one before it, the rows consecutive (in the file, or in one destination's rows),
    the last at most ``minutes`` after the first (Flink's window is exclusive: + 1 ms). It
    selects the row ids, A's first."""
    names = VARIABLES[: len(query.types)]
    defines = [f"{names[0]} AS {names[0]}.origin = '{query.types[0]}'"]
    defines += [
        f"{v} AS {v}.origin = '{t}' AND {v}.delay > {p}.delay"
        for p, v, t in zip(names, names[1:], query.types[1:], strict=False)
    ]
    ids = [f"r{v.lower()}" for v in names]
    partition = "  PARTITION BY destination\n" if query.partition else ""
    return (
        f"SELECT {', '.join(ids)} FROM flights MATCH_RECOGNIZE (\n"
        f"{partition}"
        "  ORDER BY `date`, r\n"
        f"  MEASURES {', '.join(f'{v}.r AS {i}' for v, i in zip(names, ids, strict=True))}\n"
        "  ONE ROW PER MATCH\n"
        "  AFTER MATCH SKIP TO NEXT ROW\n"
        f"  PATTERN ({' '.join(names)}) WITHIN INTERVAL '{query.minutes * 60}.001' SECOND(4, 3)\n"
        f"  DEFINE {(',' + chr(10) + '         ').join(defines)})"
    )


def flink_program(ddl: str, sql: str, parallelism: int | None) -> str:
    """A whole PyFlink process: ``python flink_q.py stream|batch ids.txt`` runs ``sql``,
    writes its rows (row-id tuples) to ids.txt, one a line, and prints, last, a json line:
    the number of rows, the seconds from its start to the query's ``execute_sql`` and from
    there to the last row."""
    setting = "" if parallelism is None else f"t.get_config().set('parallelism.default', '{parallelism}')\n"
    return (
        "import json\n"
        "import sys\n"
        "import time\n\n"
        "started = time.perf_counter()\n"
        "from pyflink.table import EnvironmentSettings, TableEnvironment\n\n"
        "mode, out = sys.argv[1], sys.argv[2]\n"
        "if mode == 'stream':\n"
        "    settings = EnvironmentSettings.in_streaming_mode()\n"
        "else:\n"
        "    settings = EnvironmentSettings.in_batch_mode()\n"
        "t = TableEnvironment.create(settings)\n"
        f"{setting}"
        f"t.execute_sql({ddl!r})\n"
        "ready = time.perf_counter()\n"
        f"with t.execute_sql({sql!r}).collect() as results:\n"
        "    rows = [tuple(row) for row in results]\n"
        "done = time.perf_counter()\n"
        "with open(out, 'w') as f:\n"
        "    f.writelines(','.join(map(str, row)) + '\\n' for row in rows)\n"
        "print(json.dumps({'count': len(rows), 'setup': ready - started, 'query': done - ready}))\n"
    )


# --- the inputs (each written once, in a process of its own) --------------------------------


def in_child(call: str) -> None:
    """``call`` (of this module) in a process of its own: the harness stays small."""
    code = f"import sys; sys.path.insert(0, {str(BENCH)!r}); import flink_strategies; flink_strategies.{call}"
    subprocess.run([sys.executable, "-c", code], check=True)


def write_numbered(csv: str, path: str) -> None:
    """``csv``'s rows at ``path`` with no header and their 0-based number first (``r``), the
    other fields as they are (read as text and integers, so written back unchanged); then
    read back, and checked equal to ``csv`` row by row."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    types = {"date": pa.string(), "delay": pa.int64(), "distance": pa.int64()}
    types |= {"origin": pa.string(), "destination": pa.string()}
    table = pacsv.read_csv(csv, convert_options=pacsv.ConvertOptions(column_types=types))
    numbered = table.add_column(0, "r", pa.array(range(table.num_rows), pa.int64()))
    partial = Path(path).with_suffix(".csv.partial")
    pacsv.write_csv(numbered, partial, write_options=pacsv.WriteOptions(include_header=False))
    names = ["r", *table.column_names]
    back = pacsv.read_csv(
        partial,
        read_options=pacsv.ReadOptions(column_names=names),
        convert_options=pacsv.ConvertOptions(column_types=types | {"r": pa.int64()}),
    )
    assert back.column("r").to_pylist() == list(range(table.num_rows)), "the row numbers"
    assert back.drop_columns(["r"]).equals(table), f"{partial} differs from {csv}"
    partial.rename(path)


def inputs(csv: Path, data: Path, scratch: Path) -> tuple[Path, Path]:
    """The CSV (written from ``data`` if missing) and Flink's numbered copy of it."""
    if not csv.exists():
        csv.parent.mkdir(parents=True, exist_ok=True)
        in_strategies_child(f"write_csv({str(data)!r}, {str(csv)!r})")
    copy = scratch / f"{csv.stem}-r.csv"
    if not copy.exists() or copy.stat().st_mtime < csv.stat().st_mtime:
        in_child(f"write_numbered({str(csv)!r}, {str(copy)!r})")
    return csv, copy


# --- measuring a process tree ---------------------------------------------------------------


def descendants(root: int) -> list[int]:
    """The pids of ``root``'s descendants now (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def tree_rss(root: int) -> int:
    """The summed RSS (bytes) of ``root``'s descendants now."""
    total, page = 0, os.sysconf("SC_PAGE_SIZE")
    for pid in descendants(root):
        with contextlib.suppress(OSError, IndexError, ValueError), open(f"/proc/{pid}/statm") as f:
            total += int(f.read().split()[1]) * page
    return total


@dataclass
class Measured:
    wall: float
    largest_mb: float  # the largest ru_maxrss of one process of the tree
    tree_mb: float  # the sampled peak of the tree's summed RSS
    stdout: str


def measure(command: list[str], scratch: Path, timeout: float, cwd: Path | None = None) -> Measured:
    """Run ``command`` and every process it starts to their end (see the docstring)."""
    out_path, err_path = scratch / "stdout.txt", scratch / "stderr.txt"
    me, peak, done, killed = os.getpid(), [0], threading.Event(), threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], tree_rss(me))
            done.wait(0.1)

    with out_path.open("w") as out, err_path.open("w") as err:
        started = time.perf_counter()
        proc = subprocess.Popen(command, stdout=out, stderr=err, start_new_session=True, cwd=cwd)
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()

        def kill() -> None:
            killed.set()
            for pid in [proc.pid, *descendants(me)]:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
            largest = usage.ru_maxrss
            while True:  # the orphans (PyFlink's JVM), reparented to this subreaper
                try:
                    _, _, orphan = os.wait4(-1, 0)
                except ChildProcessError:
                    break
                largest = max(largest, orphan.ru_maxrss)
        finally:
            timer.cancel()
            wall = time.perf_counter() - started
            done.set()
            sampler.join()
    code = os.waitstatus_to_exitcode(status)
    if killed.is_set():
        raise RuntimeError(f"timed out (> {timeout:.0f} s): {shlex.join(command)}")
    if code != 0:
        raise RuntimeError(f"exit {code}: {shlex.join(command)}\n{err_path.read_text()[-3000:]}")
    return Measured(wall, largest / 1024, peak[0] / 2**20, out_path.read_text())  # ru_maxrss: KiB


# --- the runs -------------------------------------------------------------------------------


@dataclass
class Side:
    """The runs of one side of one query."""

    walls: list[float] = field(default_factory=list)
    largest: list[float] = field(default_factory=list)
    tree: list[float] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    inner: list[float] = field(default_factory=list)  # cepcli's `seconds`, Flink's query seconds
    setup: list[float] = field(default_factory=list)  # Flink: its start to the query
    rows: set[tuple[int, ...]] | None = None
    command: str = ""

    def add(self, measured: Measured, count: int, inner: float) -> None:
        self.walls.append(measured.wall)
        self.largest.append(measured.largest_mb)
        self.tree.append(measured.tree_mb)
        self.counts.append(count)
        self.inner.append(inner)


def cepcli_command(python: str, q: Path, csv: Path, out: str, stats: Path) -> list[str]:
    command = [python, "-m", "cepcli", "run", str(q), "-i", str(csv), *CEPCLI_OPTIONS]
    return [*command, "--format", "jsonl", "-q", "-o", out, "--stats-json", str(stats)]


def cepcli_rows(python: str, query: Query, csv: Path, scratch: Path, timeout: float) -> set[tuple[int, ...]]:
    """cepcli's matches as row-id tuples (each variable's ``_row``; untimed)."""
    q, out, stats = scratch / "q.sase", scratch / "cepcli-matches.jsonl", scratch / "stats.json"
    q.write_text(query.sase + "\n")
    measure(cepcli_command(python, q, csv, str(out), stats), scratch, timeout, ROOT)
    names = ("a", "b", "c")[: len(query.types)]
    with out.open() as lines:
        rows = [tuple(int(json.loads(line)[v]["_row"]) for v in names) for line in lines]
    assert len(set(rows)) == len(rows), "cepcli: a match twice"
    return set(rows)


def run_cepcli(python: str, query: Query, csv: Path, scratch: Path, timeout: float, side: Side) -> None:
    q, stats = scratch / "q.sase", scratch / "stats.json"
    q.write_text(query.sase + "\n")
    stats.unlink(missing_ok=True)
    command = cepcli_command(python, q, csv, "/dev/null", stats)
    side.command = shlex.join(command)
    measured = measure(command, scratch, timeout, ROOT)
    numbers = json.loads(stats.read_text())
    side.add(measured, int(numbers["matches"]), float(numbers["seconds"]))


def run_flink(python: str, program: Path, mode: str, scratch: Path, timeout: float, side: Side) -> None:
    out = scratch / f"flink-{mode}-ids.txt"
    out.unlink(missing_ok=True)
    command = [python, str(program), mode, str(out)]
    side.command = shlex.join(command)
    measured = measure(command, scratch, timeout, scratch)
    printed = json.loads(measured.stdout.strip().splitlines()[-1])
    with out.open() as lines:
        rows = [tuple(int(x) for x in line.split(",")) for line in lines]
    assert len(rows) == printed["count"] == len(set(rows)), f"Flink {mode}: rows {len(rows)}, {printed}"
    assert side.rows is None or side.rows == set(rows), f"two Flink {mode} runs differ"
    side.rows = set(rows)
    side.add(measured, printed["count"], printed["query"])
    side.setup.append(printed["setup"])


def versions(flink_python: str) -> str:
    flink = subprocess.run(
        [flink_python, "-c", "from importlib import metadata; print(metadata.version('apache-flink'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=True).stderr
    return f"PyFlink {flink}, Java {java.splitlines()[0].split()[2].strip(chr(34))}"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--flink-python", default="/work/flink-venv/bin/python", help="PyFlink's venv")
    cepcli_python = VENV_PYTHON if VENV_PYTHON.exists() else Path(sys.executable)
    parser.add_argument("--cepcli-python", default=str(cepcli_python), help="cepcli's")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--csv", type=Path, default=SCRATCH / "flights-3m.csv")
    parser.add_argument("--data", type=Path, default=F3M, help="the Parquet the CSV is written from")
    parser.add_argument("--scratch", type=Path, default=FLINK_SCRATCH, help="Flink's copy, the programs")
    parser.add_argument("--only", default=",".join(QUERIES), help="queries, comma-separated")
    parser.add_argument("--mode", default="stream,batch", help="Flink's modes, comma-separated")
    parser.add_argument("--parallelism", type=int, default=None, help="Flink's (default: its own)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds for one process")
    args = parser.parse_args()
    modes = args.mode.split(",")
    assert set(modes) <= {"stream", "batch"}, modes
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0, "prctl(PR_SET_CHILD_SUBREAPER)"
    scratch = args.scratch.resolve()
    scratch.mkdir(parents=True, exist_ok=True)
    csv, copy = inputs(args.csv.resolve(), args.data.resolve(), scratch)
    now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    print(
        f"# {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()},"
        f" {platform.system()}; {versions(args.flink_python)}; {now}; {_git()};"
        f" median of {args.repeat}, interleaved"
    )
    print(f"input: {csv}; Flink's copy (numbered, no header): {copy}")
    table = [
        "| query | side | matches | same rows as cepcli | median wall s | walls s | in-job s (median)"
        " | peak MB, largest process | peak MB, tree (sampled) | wall / cepcli |",
        "|---|---|---:|---|---:|---|---:|---:|---:|---:|",
    ]
    notes, problems = [], []
    for name in args.only.split(","):
        query = QUERIES[name]
        names = VARIABLES[: len(query.types)]
        sql = flink_sql(query)
        program = scratch / f"flink_{name}.py"
        program.write_text(flink_program(flink_ddl(copy), sql, args.parallelism))
        expected = cepcli_rows(args.cepcli_python, query, csv, scratch, args.timeout)
        sides = {"cepcli": Side(), **{f"Flink {m}": Side() for m in modes}}
        before = load()
        for _ in range(args.repeat):
            run_cepcli(args.cepcli_python, query, csv, scratch, args.timeout, sides["cepcli"])
            for mode in modes:
                run_flink(args.flink_python, program, mode, scratch, args.timeout, sides[f"Flink {mode}"])
        after = load()
        c = sides["cepcli"]
        c.rows = expected
        if set(c.counts) != {len(expected)}:
            problems.append(f"{name}: cepcli's counts {c.counts}, {len(expected):,} matches in its jsonl")
        if len(expected) != query.expected:
            problems.append(f"{name}: cepcli found {len(expected):,}, {query.expected:,} before")
        for label, side in sides.items():
            same = side.rows == expected
            if set(side.counts) != {len(expected)}:
                problems.append(f"{name}: {label} counted {side.counts}, cepcli {len(expected):,}")
            if not same and side.rows is not None:
                only_c, only_f = sorted(expected - side.rows), sorted(side.rows - expected)
                problems.append(
                    f"{name}: {label}'s rows differ: {len(only_c)} only in cepcli (e.g. {only_c[:3]}),"
                    f" {len(only_f)} only in Flink (e.g. {only_f[:3]})"
                )
            wall = statistics.median(side.walls)
            ratio = wall / statistics.median(c.walls)
            table.append(
                f"| {name} | {label} | {side.counts[0]:,} | {'yes' if same else 'NO'} | {wall:.2f}"
                f" | {' '.join(f'{w:.2f}' for w in side.walls)} | {statistics.median(side.inner):.2f}"
                f" | {max(side.largest):.0f} | {max(side.tree):.0f} | {ratio:.1f}x |"
            )
        notes.append(f"* {name}: `{query.sase}`; load {before} -> {after}")
        for label, side in sides.items():
            setup = f" (start to query: {' '.join(f'{s:.1f}' for s in side.setup)} s)" if side.setup else ""
            notes.append(f"  {label}: `{side.command}`{setup}")
        notes.append(f"  Flink SQL ({program.name}):\n\n```sql\n{sql}\n```")
        print(f"{name} done (load {after}); vars {', '.join(names)}", file=sys.stderr)
    print()
    print("\n".join(table))
    print()
    print("\n".join(notes))
    print(f"\nFlink's table:\n\n```sql\n{flink_ddl(copy)}\n```")
    for problem in problems:
        print(f"\n**{problem}**")
    if problems:
        sys.exit(1)


if __name__ == "__main__":
    main()
