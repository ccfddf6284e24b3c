"""Selection strategies (issue 40) against DuckDB's LEAD: whole processes, the same CSV.

Usage (from the repository root, with ../shared beside it; DuckDB is installed for the
benchmark only: ``pip install duckdb``):

    python benchmarks/strategies.py [--repeat 5] [--data PATH] [--scratch DIR] [--timeout 600]
        [--only strict2,strict3,partition3,stnm2,stnm3,stnmp3]

On ``flights-3m.parquet`` (3,000,000 US flights of 2001, sorted by ``date``; airports as types:
``--type-col origin --time-col date``, so stream order is file order, which is time order),
written once as CSV (pyarrow's writer) into the scratch directory (never the repository);
both sides read that CSV. Three queries of the issue (contiguity) and three of skip-till-next-match:

* ``strict2``: ``SEQ(ORD a, DFW b) WHERE strict_contiguity { b.delay > a.delay } WITHIN 20
  minutes``: b is the row right after a in the file;
* ``strict3``: ``SEQ(ORD a, DFW b, ATL c)``, strict contiguity, ``b.delay > a.delay AND
  c.delay > b.delay``, 20 minutes: three consecutive rows;
* ``partition3``: the same three with ``partition_contiguity { [destination] AND ... }`` at 1
  hour: three consecutive rows of one destination's rows (in file order);
* ``stnm2``: ``SEQ(ORD a, DFW b) WHERE skip_till_next_match { b.delay > a.delay } WITHIN 20
  minutes``: for each ORD row a, b is the first DFW row after it (in file order) with a larger
  delay, and a match if at most 20 minutes after a (a null delay satisfies no comparison);
* ``stnm3``: ``SEQ(ORD a, DFW b, ATL c)``, skip_till_next_match, ``b.delay > a.delay AND
  c.delay > b.delay``, 20 minutes: then c is the first ATL row after b with a larger delay
  than b's, at most 20 minutes after a;
* ``stnmp3``: the same three with ``skip_till_next_match { [destination] AND ... }`` at 1 hour:
  b and c the first such rows of a's destination (a null destination matches nothing).

cepcli: ``cepcli run q.sase -i flights-3m.csv --type-col origin --time-col date --format jsonl
-q --stats-json stats.json > matches.jsonl`` (the default engine). DuckDB: ``python
duckdb_<query>.py`` (written into the scratch directory): the rows of ``read_csv`` numbered in
file order (``row_number() OVER () - 1``, the 0-based data row, as cepcli's ``_row``), then
``lead(.., k) OVER (ORDER BY r)`` (``PARTITION BY destination ORDER BY r`` for partition3),
the types, the delay conditions and ``last.date - a.date <= INTERVAL``; it writes the row-id
tuples to a file and prints their number (8 GB memory limit). Both run with their defaults
(threads included) on this machine's cores.

The skip-till-next-match queries (``next_sql``) have no LEAD: the next variable is the first
later row of its type with the condition true, at any distance. As the file is sorted by
date, the rows at most one window after a are the rows right after a's, so the first
qualifying row within the window is the first qualifying row of the file whenever there is a
match: the SQL is a join restricted to the window followed by ``min(r)`` per partial match
(``GROUP BY ALL``; ``arg_min(delay, r)`` carries that row's delay to the next step), one join
per later variable (a-b, then (a, b)-c with c after b and within a's window). The join is an
equi-join on the window-wide ``time_bucket`` of the date: a's bucket against each later row's
bucket and the one before it (``unnest`` of the two: a row at most one window after a is in
a's bucket or the next, and in exactly one of the two keys), plus ``destination`` for
stnmp3, then ``v.r > m.r``, the delay condition and ``v.date - a.date <= INTERVAL``; rows
with a null delay are dropped before it. DuckDB's plan for the plain inequality join (``b.r >
a.r AND b.date <= a.date + INTERVAL .. AND b.delay > a.delay``, ``min(r)``) was far slower:
a piecewise merge join on one inequality inside the query's CTE (65 s for stnm2, 385 s for
stnm3, where the bucket join takes under a second), and with the rows in a table an IEJoin on
``r`` and ``delay`` rather than the date band (301 s for stnm2). ``QUALIFY row_number() OVER
(PARTITION BY a.r ORDER BY b.r) = 1`` instead of ``min`` ran in the same time on the bucket
join, a window of ``list(..) FILTER (..) OVER (ORDER BY date RANGE .. FOLLOWING)`` with
``list_filter`` (no join) in 1.2-4.5 s; all gave the same match sets (these trials: the query
alone in one Python process, DuckDB 2.0.1, load average 2-6 on 2 cores).

Every figure is a whole process (start-up, reading, evaluating, writing the matches): its wall
seconds and its peak RSS (``ru_maxrss`` of that one child, from ``os.wait4``; the harness
stays small, the CSV and the check below run in processes of their own, since a forked
child's ``ru_maxrss`` starts at its parent's size on Linux). The runs of a
query are interleaved (cepcli, DuckDB, cepcli, DuckDB, ...; this machine is shared, the load
average is printed), the table gives the median wall and the largest peak RSS. Every run's
match set is compared row by row: the set of row-id tuples of cepcli's jsonl (each variable's
``_row``) against DuckDB's. Once, untimed, the script checks that DuckDB's numbering is file
order (every numbered CSV row equal to the Parquet row of that ``file_row_number``).

For reference, the figures in the issue (before this work; their input format is not restated here):
cepcli 36.7 s / 4.7 GB (strict2), 55.6 s / 4.3 GB (strict3), 3.52 s / 962 MB (partition3);
DuckDB LEAD 0.81 s (strict2) and 1.30 s (strict3); Flink 2.3 MATCH_RECOGNIZE 19.2 s / 27.0 s /
19.2 s. Not a test: the numbers go to BENCHMARKS.md with the command and the machine.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
from arrow_input import CLI, F3M, F3M_OPTIONS, SCRATCH  # noqa: E402
from columnar_peers import _git, compile_bytecode, measure  # noqa: E402


@dataclass(frozen=True)
class Query:
    """A query: its SASE+ text, its types in order, whether contiguity (or the next match) is
    per destination, its window in minutes, the count measured before (cepcli), and whether
    its strategy is skip_till_next_match (else a contiguity: the SQL is ``lead_sql``)."""

    sase: str
    types: tuple[str, ...]
    partition: bool
    minutes: int
    expected: int
    next_match: bool = False


QUERIES: dict[str, Query] = {
    "strict2": Query(
        "PATTERN SEQ(ORD a, DFW b) WHERE strict_contiguity { b.delay > a.delay } WITHIN 20 minutes",
        ("ORD", "DFW"),
        False,
        20,
        3_977,
    ),
    "strict3": Query(
        "PATTERN SEQ(ORD a, DFW b, ATL c) WHERE strict_contiguity"
        " { b.delay > a.delay AND c.delay > b.delay } WITHIN 20 minutes",
        ("ORD", "DFW", "ATL"),
        False,
        20,
        53,
    ),
    "partition3": Query(
        "PATTERN SEQ(ORD a, DFW b, ATL c) WHERE partition_contiguity"
        " { [destination] AND b.delay > a.delay AND c.delay > b.delay } WITHIN 1 hour",
        ("ORD", "DFW", "ATL"),
        True,
        60,
        52,
    ),
    "stnm2": Query(
        "PATTERN SEQ(ORD a, DFW b) WHERE skip_till_next_match { b.delay > a.delay } WITHIN 20 minutes",
        ("ORD", "DFW"),
        False,
        20,
        147_172,
        next_match=True,
    ),
    "stnm3": Query(
        "PATTERN SEQ(ORD a, DFW b, ATL c) WHERE skip_till_next_match"
        " { b.delay > a.delay AND c.delay > b.delay } WITHIN 20 minutes",
        ("ORD", "DFW", "ATL"),
        False,
        20,
        93_597,
        next_match=True,
    ),
    "stnmp3": Query(
        "PATTERN SEQ(ORD a, DFW b, ATL c) WHERE skip_till_next_match"
        " { [destination] AND b.delay > a.delay AND c.delay > b.delay } WITHIN 1 hour",
        ("ORD", "DFW", "ATL"),
        True,
        60,
        4_202,
        next_match=True,
    ),
}

CSV_COLUMNS = (
    "{'date': 'TIMESTAMP', 'delay': 'BIGINT', 'distance': 'BIGINT', 'origin': 'VARCHAR',"
    " 'destination': 'VARCHAR'}"
)


def numbered(csv: Path | str) -> str:
    """The CSV's rows numbered in file order from 0 (cepcli's ``_row``)."""
    return (
        "SELECT row_number() OVER () - 1 AS r, date, delay, distance, origin, destination"
        f" FROM read_csv('{csv}', header = true, columns = {CSV_COLUMNS})"
    )


def lead_sql(query: Query, csv: Path) -> str:
    """The query as SQL: the k-th variable is the row k places after a's (in the file, or in
    a's destination's rows), of the k-th type, with a larger delay than the one before it, and
    the last one at most ``minutes`` after a. It selects the row ids, a's first."""
    over = "PARTITION BY destination ORDER BY r" if query.partition else "ORDER BY r"
    later = range(1, len(query.types))
    columns = ("r", "origin", "delay", "date")
    leads = ", ".join(f"lead({column}, {k}) OVER w AS {column}{k}" for k in later for column in columns)
    where = [f"origin = '{query.types[0]}'"]
    for k in later:
        before = "delay" if k == 1 else f"delay{k - 1}"
        where += [f"origin{k} = '{query.types[k]}'", f"delay{k} > {before}"]
    where.append(f"date{later[-1]} - date <= INTERVAL {query.minutes} MINUTE")
    ids = ", ".join(["r", *(f"r{k}" for k in later)])
    return (
        f"WITH f AS ({numbered(csv)}),"
        f" n AS (SELECT r, origin, delay, date, {leads} FROM f WINDOW w AS ({over}))"
        f" SELECT {ids} FROM n WHERE {' AND '.join(where)}"
    )


def next_sql(query: Query, csv: Path) -> str:
    """The skip_till_next_match query as SQL: the k-th variable is the first row after the one
    before it (in file order; of a's destination with ``[destination]``) of the k-th type with a
    larger delay than that one's, and it is at most ``minutes`` after a. As the file is sorted
    by date, the rows in a's window are the rows right after a's: the first such row in the
    window is the first such row of the file if there is a match, so an equi-join restricted to
    the window and ``min(r)`` per partial match (``arg_min(delay, r)``, its delay, for the next
    step) give it. The equi-join's key is the window-wide time bucket (``time_bucket``): a's
    bucket against each later row's bucket and the bucket before it (``unnest``), since a row at
    most one window after a is in a's bucket or the next; with the destination too for
    ``[destination]``. It selects the row ids, a's first."""
    window = f"INTERVAL {query.minutes} MINUTE"
    bucket = f"time_bucket({window}, date)"
    same = " AND v.destination = m.destination" if query.partition else ""
    ctes = [f"f AS ({numbered(csv)})"]
    for k, kind in enumerate(query.types):
        key = bucket if k == 0 else f"unnest([{bucket}, {bucket} - {window}])"
        ctes.append(
            f"v{k} AS (SELECT r, date, delay, destination, {key} AS k FROM f"
            f" WHERE origin = '{kind}' AND delay IS NOT NULL)"
        )
    ids = ["r"]
    for k in range(1, len(query.types)):
        before = f"m{k - 1}" if k > 1 else "v0"
        ctes.append(
            f"m{k} AS (SELECT {', '.join(f'm.{i}' for i in ids)}, m.date, m.k, m.destination,"
            f" min(v.r) AS r{k}, arg_min(v.delay, v.r) AS delay FROM {before} m JOIN v{k} v"
            f" ON v.k = m.k{same} AND v.r > m.{ids[-1]} AND v.delay > m.delay"
            f" AND v.date - m.date <= {window} GROUP BY ALL)"
        )
        ids.append(f"r{k}")
    return f"WITH {', '.join(ctes)} SELECT {', '.join(ids)} FROM m{len(query.types) - 1}"


def duckdb_program(sql: str, out: Path, scratch: Path) -> str:
    """A whole DuckDB process: run ``sql``, write its rows (row-id tuples) to ``out``, one a
    line, and print their number."""
    settings = "SET memory_limit='8GB'; SET enable_progress_bar=false;"
    settings += f" SET temp_directory='{scratch / 'duckdb'}'"
    return (
        "import duckdb\n\n"
        "con = duckdb.connect()\n"
        f"con.execute({settings!r})\n"
        f"rows = con.execute({sql!r}).fetchall()\n"
        f"with open({str(out)!r}, 'w') as out:\n"
        "    out.writelines(','.join(map(str, row)) + '\\n' for row in rows)\n"
        "print(len(rows))\n"
    )


def in_child(call: str) -> None:
    """``call`` (of this module) in a process of its own: the harness stays small, and a
    forked child's ``ru_maxrss`` starts at the harness's size on Linux."""
    code = f"import sys; sys.path.insert(0, {str(BENCH)!r}); import strategies; strategies.{call}"
    subprocess.run([sys.executable, "-c", code], check=True)


def write_csv(data: str, path: str) -> None:
    """``data`` as CSV at ``path`` (pyarrow's writer: quoted text, ISO times)."""
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    partial = Path(path).with_suffix(".csv.partial")
    pacsv.write_csv(pq.read_table(data), partial)
    partial.rename(path)


def csv_of(data: Path, scratch: Path) -> Path:
    """``data`` as CSV in the scratch directory, written once (``write_csv``)."""
    path = scratch / f"{data.stem}.csv"
    if not path.exists():
        in_child(f"write_csv({str(data)!r}, {str(path)!r})")
    return path


def check_numbering(csv: str, data: str) -> None:
    """DuckDB's ``numbered`` is file order: every CSV row numbered r equals the Parquet row of
    ``file_row_number`` r, and there are as many rows on both sides (untimed, once, in a
    process of its own)."""
    import duckdb

    differ = " OR ".join(
        f"c.{c} IS DISTINCT FROM p.{c}" for c in ("date", "delay", "distance", "origin", "destination")
    )
    con = duckdb.connect()
    total, wrong = con.execute(
        f"SELECT count(*), count(*) FILTER (WHERE {differ}) FROM ({numbered(csv)}) c FULL JOIN"
        f" read_parquet('{data}', file_row_number = true) p ON c.r = p.file_row_number"
    ).fetchone()  # type: ignore[misc]
    rows = con.execute(f"SELECT count(*) FROM read_parquet('{data}')").fetchone()[0]  # type: ignore[index]
    assert total == rows and wrong == 0, f"DuckDB's row numbers are not file order: {wrong} of {total} rows"
    print(f"DuckDB's numbering is file order: all {total:,} CSV rows equal the Parquet row of that number")


# --- the runs -------------------------------------------------------------------------------


@dataclass
class Side:
    """The runs of one side of one query."""

    walls: list[float] = field(default_factory=list)
    rss: list[float] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    rows: set[tuple[int, ...]] = field(default_factory=set)
    stats: dict[str, object] = field(default_factory=dict)
    command: str = ""


def cepcli_rows(jsonl: str, names: list[str]) -> list[tuple[int, ...]]:
    """Each match of cepcli's jsonl as the tuple of its variables' ``_row``."""
    return [tuple(int(json.loads(line)[v]["_row"]) for v in names) for line in jsonl.splitlines()]


def run_cepcli(query: Query, csv: Path, scratch: Path, timeout: float, side: Side) -> None:
    q, stats = scratch / "q.sase", scratch / "stats.json"
    q.write_text(query.sase + "\n")
    stats.unlink(missing_ok=True)
    command = [CLI, "run", str(q), "-i", str(csv), *F3M_OPTIONS, "--format", "jsonl", "-q"]
    command += ["--stats-json", str(stats)]
    side.command = f"{shlex.join(command)} > {shlex.quote(str(scratch / 'stdout.txt'))}"
    wall, rss, printed = measure(command, timeout, scratch)  # standard output: that file
    if printed is None:
        raise RuntimeError(f"cepcli timed out (> {timeout:.0f} s): {side.command}")
    numbers = json.loads(stats.read_text())
    rows = cepcli_rows(printed, ["a", "b", "c"][: len(query.types)])
    assert len(rows) == numbers["matches"], f"{len(rows)} lines, {numbers['matches']} matches"
    side.walls.append(wall)
    side.rss.append(rss)
    side.counts.append(len(rows))
    side.stats = numbers
    check_same(side, set(rows), len(rows))


def run_duckdb(query: Query, csv: Path, scratch: Path, timeout: float, side: Side, name: str) -> None:
    program, out = scratch / f"duckdb_{name}.py", scratch / "duckdb-matches.csv"
    sql = next_sql(query, csv) if query.next_match else lead_sql(query, csv)
    program.write_text(duckdb_program(sql, out, scratch))
    command = [sys.executable, str(program)]
    side.command = shlex.join(command)
    wall, rss, printed = measure(command, timeout, scratch)
    if printed is None:
        raise RuntimeError(f"DuckDB timed out (> {timeout:.0f} s): {side.command}")
    count = int(printed.strip().splitlines()[-1])
    with out.open() as lines:
        rows = [tuple(int(x) for x in line.split(",")) for line in lines]
    assert len(rows) == count
    side.walls.append(wall)
    side.rss.append(rss)
    side.counts.append(count)
    check_same(side, set(rows), count)


def check_same(side: Side, rows: set[tuple[int, ...]], count: int) -> None:
    """Every run of one side gives the same set (and no tuple twice)."""
    assert len(rows) == count, f"{count - len(rows)} matches twice"
    assert not side.rows or side.rows == rows, "two runs of one side differ"
    side.rows = rows


def compare(name: str, cepcli: set[tuple[int, ...]], duckdb: set[tuple[int, ...]]) -> str | None:
    """None if the two sets are equal, else what differs (a few tuples of each side)."""
    if cepcli == duckdb:
        return None
    only_c, only_d = sorted(cepcli - duckdb), sorted(duckdb - cepcli)
    return (
        f"{name}: the match sets differ: {len(only_c)} only in cepcli (e.g. {only_c[:5]}),"
        f" {len(only_d)} only in DuckDB (e.g. {only_d[:5]})"
    )


def machine_line(repeat: int) -> str:
    versions = ", ".join(f"{p} {metadata.version(p)}" for p in ("pyarrow", "duckdb"))
    now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    return (
        f"# {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()},"
        f" {platform.system()}; {versions}; {now}; {_git()}; median of {repeat}, interleaved"
    )


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--data", type=Path, default=F3M)
    parser.add_argument("--scratch", type=Path, default=SCRATCH)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds for one process")
    parser.add_argument("--only", default=",".join(QUERIES), help="queries, comma-separated")
    args = parser.parse_args()
    scratch = args.scratch.resolve() / "strategies"
    scratch.mkdir(parents=True, exist_ok=True)
    compile_bytecode()
    csv = csv_of(args.data.resolve(), args.scratch.resolve())
    print(machine_line(args.repeat))
    in_child(f"check_numbering({str(csv)!r}, {str(args.data.resolve())!r})")
    print(f"input: {csv} (written from {args.data.name})")
    table = [
        "| query | matches cepcli | matches DuckDB | same rows | cepcli wall s | cepcli peak MB"
        " | DuckDB wall s | DuckDB peak MB | cepcli / DuckDB |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    notes, problems = [], []
    for name in args.only.split(","):
        query = QUERIES[name]
        sides = {"cepcli": Side(), "DuckDB": Side()}
        before = load()
        for _ in range(args.repeat):
            run_cepcli(query, csv, scratch, args.timeout, sides["cepcli"])
            run_duckdb(query, csv, scratch, args.timeout, sides["DuckDB"], name)
        c, d = sides["cepcli"], sides["DuckDB"]
        problem = compare(name, c.rows, d.rows)
        if c.counts[0] != query.expected:
            problems.append(f"{name}: cepcli found {c.counts[0]:,}, {query.expected:,} before")
        if problem:
            problems.append(problem)
        cw, dw = statistics.median(c.walls), statistics.median(d.walls)
        table.append(
            f"| {name} | {c.counts[0]:,} | {d.counts[0]:,} | {'yes' if problem is None else 'NO'}"
            f" | {cw:.2f} | {max(c.rss):.0f} | {dw:.2f} | {max(d.rss):.0f} | {cw / dw:.2f}x |"
        )
        walls = {k: " ".join(f"{w:.2f}" for w in s.walls) for k, s in sides.items()}
        notes.append(
            f"* {name}: `{query.sase}`; walls cepcli {walls['cepcli']}, DuckDB {walls['DuckDB']};"
            f" cepcli `seconds` {c.stats.get('seconds')}, input {c.stats.get('input_seconds')},"
            f" ran {c.stats.get('adaptive_ran', c.stats.get('engine'))}; load {before} -> {load()}"
        )
        notes.append(f"  cepcli: `{c.command}`; DuckDB: `{d.command}`")
    print()
    print("\n".join(table))
    print()
    print("\n".join(notes))
    for problem in problems:
        print(f"\n**{problem}**")
    if problems:
        sys.exit(1)


if __name__ == "__main__":
    main()
