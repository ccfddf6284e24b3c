"""Reproduce the experiments of the paper's section 8 (eager vs lazy Chain and Tree NFA).

Usage (from the repository root, with ../shared beside it):

    python benchmarks/paper.py --quick                    # smoke run: small data, two windows
    python benchmarks/paper.py                            # every experiment, into benchmarks/results/
    python benchmarks/paper.py seq3 neg-seq5 ratio        # some experiments, or groups: window ratio nasdaq
    python benchmarks/paper.py dense                      # the dense suite on flights-3m.parquet
    python benchmarks/paper.py --list                     # the experiments and their queries

Experiments (section 8.1, the window sweep, on the NYC flights of 2013 with carriers as
event types): SEQ3/SEQ4/SEQ5, AND2/AND3, negation (SEQ3, AND3 and SEQ5 with the second
event negated; post-processing vs first-chance), ITER3 (``SEQ(a, b+, c)`` on half
windows), OR2SEQ2/OR4SEQ2/OR2SEQ4; section 8.2, the rarest-to-most-frequent ratio sweep
(carrier sets from about 1:3 to 1:1000 at one window); a few of the same patterns on the
NASDAQ minute bars, with tickers as event types; and the group ``dense``: the same suite
(``f3m-`` SEQ3/4/5, AND3, NSEQ3, ITER3, OR2SEQ2, windows of 5 to 40 minutes, and a ratio sweep
over airport sets from 1:1 to 1:1,000) on flights-3m.parquet (3,000,000 US flights of Jan-Jun
2001, ~700 an hour) with origin airports as event types.

Every experiment runs in its own worker process (``--worker``) that reads and
prefilters the input once, like ``cepcli bench``, and replays it from memory, so the
engines are timed, not the CSV reader. A cell (one engine on one window) is the median
of ``--repeat`` timed runs, then one more run under ``tracemalloc`` for the peak memory
(skipped when the timed run is too slow for ``--memory-budget``). Each cell has a
deadline (``--timeout``, SIGALRM): a cell past it is recorded as ``timeout``, and the
engine's longer windows are not tried (recorded as ``skipped``). The matches are hashed
as in ``cepcli bench``; engines that disagree on a window are reported (that is an
engine bug). Output in ``--out``: ``<experiment>.json`` and ``<experiment>.png`` each,
``summary.md`` (also printed) and ``all.json``.
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import math
import os
import platform
import re
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import tracemalloc
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
FLIGHTS = SHARED / "flights.csv.gz"
NASDAQ = SHARED / "nasdaq"
F3M = SHARED / "flights-3m.parquet"
OUT = Path(__file__).resolve().parent / "results"

FLIGHTS_INPUT = {"type_col": "carrier", "time_col": "time_hour", "sort": True}
NASDAQ_INPUT = {
    "type_col": "ticker",
    "time_col": "ts",
    "time_format": "%Y%m%d%H%M",
    "header": False,
    "columns": ["ticker", "ts", "open", "high", "low", "close", "volume"],
    "sort": True,
}
# flights-3m.parquet: sorted by date (minute resolution), so no sort; airports as event types.
F3M_INPUT = {"type_col": "origin", "time_col": "date"}
ENGINES = ["eager", "chain", "tree"]
NEGATION_ENGINES = ["eager", "post-processing", "first-chance", "tree"]
WINDOWS = ["1h", "2h", "4h", "8h"]
HALF_WINDOWS = ["30min", "1h", "2h", "4h"]  # ITER3, like the paper's 2-12 min against 5-30 min
NASDAQ_WINDOWS = ["5min", "10min", "20min", "30min"]  # the paper's 5 to 30 minutes
RATIO_WINDOW = "2h"
F3M_WINDOWS = ["5min", "10min", "20min", "40min"]  # ~700 flights an hour, ORD alone ~40
F3M_HALF_WINDOWS = ["3min", "5min", "10min", "20min"]  # ITER3
F3M_RATIO_WINDOW = "20min"
F3M_QUICK_ROWS = 200_000  # --quick: the first 12 days
REPEAT_CAP_SECONDS = 8.0  # no further timed run of a cell once its runs took this long

# Carriers in flights.csv.gz (events of 2013): UA 58,665, B6 54,635, EV 54,173, DL 48,110,
# AA 32,729, MQ 26,397, US 20,536, 9E 18,460, WN 12,275, VX 5,162, FL 3,260, AS 714,
# F9 685, YV 601, HA 342, OO 32. Origins: EWR, JFK, LGA (FL, F9 and YV fly from LGA
# only, HA from JFK only, AS from EWR only).
SAME_ROUTE = "{x}.origin = {y}.origin AND {x}.dest = {y}.dest"


def _route(*pairs: str) -> str:
    """``a.origin = c.origin AND a.dest = c.dest AND ...`` for pairs like ``"a c"``."""
    return " AND ".join(SAME_ROUTE.format(x=p.split()[0], y=p.split()[1]) for p in pairs)


@dataclass(frozen=True)
class Experiment:
    name: str
    label: str  # as in the paper's figures
    group: str  # window | ratio | nasdaq
    dataset: str  # "flights" or a file name in the NASDAQ folder
    queries: list[tuple[str, str]]  # (point label, query text with {window}); several only for ratio
    windows: list[str]
    engines: list[str] = field(default_factory=lambda: list(ENGINES))
    note: str = ""
    sweep: str = "window"  # window: one query over the windows; ratio: one query per point, one window


def _flights(name: str, label: str, query: str, note: str, **kw: Any) -> Experiment:
    return Experiment(
        name, label, "window", "flights", [(label, query)], kw.pop("windows", WINDOWS), note=note, **kw
    )


# Origins in flights-3m.parquet (Jan-Jun 2001; pyarrow value_counts over `origin`) of the
# airports used below. 229 origins, ORD 166,341 flights (~38 an hour) down to ACY 1.
F3M_COUNTS = {
    "ORD": 166_341, "DFW": 157_162, "ATL": 124_711, "PHX": 93_036, "STL": 80_899, "LAS": 67_192,
    "BOS": 65_486, "IAH": 64_572, "CLT": 64_299, "PIT": 53_447, "RDU": 17_601, "DAY": 5_604,
    "BIL": 1_651, "EGE": 919, "MOT": 533, "HDN": 481, "BRO": 166,
}  # fmt: skip


def _to(rare: str, *others: str) -> str:
    """``a.destination = c.destination AND b.destination = c.destination ...``: to one place."""
    return " AND ".join(f"{x}.destination = {rare}.destination" for x in others)


def _flying(*airports: str) -> str:
    """``ORD 166,341, DFW 157,162 and BIL 1,651 flights``, for the notes."""
    named = [f"{a} {F3M_COUNTS[a]:,}" for a in airports]
    return ", ".join(named[:-1]) + f" and {named[-1]} flights"


def _one_in(*airports: str) -> str:
    """``1:9.5``: the rarest airport's flights to the most frequent one's."""
    counts = [F3M_COUNTS[a] for a in airports]
    r = max(counts) / min(counts)
    return f"1:{r:.2f}" if r < 10 else f"1:{r:,.0f}"


def _dense(name: str, label: str, query: str, note: str, **kw: Any) -> Experiment:
    windows = kw.pop("windows", F3M_WINDOWS)
    return Experiment(name, label, "dense", "flights-3m", [(label, query)], windows, note=note, **kw)


def _nasdaq(name: str, label: str, data: str, query: str, note: str, **kw: Any) -> Experiment:
    return Experiment(
        name, label, "nasdaq", data, [(label.split()[0], query)], NASDAQ_WINDOWS, note=note, **kw
    )


# The ratio sweep on the dense stream: O'Hare and DFW, then an ever rarer airport, and three
# airports of one frequency for 1:1 (no third airport is as frequent as ORD and DFW).
F3M_RATIO_AIRPORTS = [
    ("BOS", "IAH", "CLT"),  # 1:1.02
    ("ORD", "DFW", "ATL"),  # 1:1.33
    ("ORD", "DFW", "PIT"),  # 1:3.1
    ("ORD", "DFW", "RDU"),  # 1:9.5
    ("ORD", "DFW", "DAY"),  # 1:29.7
    ("ORD", "DFW", "BIL"),  # 1:101
    ("ORD", "DFW", "MOT"),  # 1:312
    ("ORD", "DFW", "BRO"),  # 1:1,002
]

# Every sweep pattern: competing flights on one route, the rarest carrier last; the frequent
# carriers are also related to each other (same airport, the first one less delayed), as in
# the paper, where every pair of events is related.
EXPERIMENTS: list[Experiment] = [
    _flights(
        "seq3",
        "SEQ3",
        "PATTERN SEQ(EV a, MQ b, YV c) WHERE a.origin = b.origin AND a.dep_delay < b.dep_delay"
        f" AND {_route('a c', 'b c')} WITHIN {{window}}",
        "ExpressJet (EV), then a more delayed Envoy (MQ), then a Mesa (YV) flight, all on one route"
        " (LaGuardia to Charlotte or Washington-Dulles)",
    ),
    _flights(
        "seq4",
        "SEQ4",
        "PATTERN SEQ(UA a, DL b, WN c, F9 d) WHERE a.origin = b.origin AND a.dep_delay < b.dep_delay"
        f" AND {_route('a d', 'b d', 'c d')} WITHIN {{window}}",
        "United, a more delayed Delta, Southwest, then Frontier (F9), LaGuardia to Denver",
    ),
    _flights(
        "seq5",
        "SEQ5",
        "PATTERN SEQ(B6 a, DL b, AA c, UA d, VX e) WHERE a.origin = b.origin AND a.dep_delay < b.dep_delay"
        f" AND {_route('a e', 'b e', 'c e', 'd e')} WITHIN {{window}}",
        "JetBlue, a more delayed Delta, American, United, then Virgin America (VX) on one route",
    ),
    _flights(
        "and2",
        "AND2",
        f"PATTERN AND(UA a, AS b) WHERE {_route('a b')} WITHIN {{window}}",
        "United and Alaska (AS) on one route (Newark to Seattle), in either order",
    ),
    _flights(
        "and3",
        "AND3",
        "PATTERN AND(UA a, DL b, F9 c) WHERE a.origin = b.origin AND a.dep_delay < b.dep_delay"
        f" AND {_route('a c', 'b c')} WITHIN {{window}}",
        "United, a more delayed Delta and Frontier on one route (LaGuardia to Denver), in any order",
    ),
    _flights(
        "neg-seq3",
        "NSEQ3",
        f"PATTERN SEQ(EV a, NOT MQ b, YV c) WHERE {_route('a c', 'b c')} WITHIN {{window}}",
        "SEQ3 with the second event negated: no Envoy flight on the route between the two",
        engines=NEGATION_ENGINES,
    ),
    _flights(
        "neg-and3",
        "NAND3",
        f"PATTERN AND(UA a, NOT DL b, F9 c) WHERE {_route('a c', 'b c')} WITHIN {{window}}",
        "AND3 with the second event negated: no Delta flight on the route within the window",
        engines=NEGATION_ENGINES,
    ),
    _flights(
        "neg-seq5",
        "NSEQ5",
        "PATTERN SEQ(B6 a, NOT DL b, AA c, UA d, VX e)"
        " WHERE a.origin = c.origin AND a.dep_delay < c.dep_delay"
        f" AND {_route('a e', 'b e', 'c e', 'd e')} WITHIN {{window}}",
        "SEQ5 with the second event negated (post-processing vs first-chance)",
        engines=NEGATION_ENGINES,
    ),
    _flights(
        "iter3",
        "ITER3",
        "PATTERN SEQ(MQ a, US+ b[], YV c) WHERE a.origin = c.origin AND b[i].origin = c.origin"
        " AND b[i].dep_delay > b[i-1].dep_delay WITHIN {window}",
        "Envoy, then US Airways flights of growing delay, then Mesa, from one airport; half windows",
        windows=HALF_WINDOWS,
    ),
    _flights(
        "or2seq2",
        "OR2SEQ2",
        f"PATTERN OR(SEQ(UA a, AS b), SEQ(DL c, F9 d)) WHERE {_route('a b')} AND {_route('c d')}"
        " WITHIN {window}",
        "United then Alaska to Seattle, or Delta then Frontier to Denver",
    ),
    _flights(
        "or4seq2",
        "OR4SEQ2",
        "PATTERN OR(SEQ(UA a, AS b), SEQ(DL c, F9 d), SEQ(EV e, YV f), SEQ(AA g, VX h))"
        f" WHERE {_route('a b')} AND {_route('c d')} AND {_route('e f')} AND {_route('g h')}"
        " WITHIN {window}",
        "four SEQ2 of a frequent and a rare carrier on one route",
    ),
    _flights(
        "or2seq4",
        "OR2SEQ4",
        "PATTERN OR(SEQ(UA a, DL b, WN c, F9 d), SEQ(EV e, US f, MQ g, YV h))"
        f" WHERE a.origin = b.origin AND a.dep_delay < b.dep_delay AND {_route('a d', 'b d', 'c d')}"
        f" AND e.origin = f.origin AND e.dep_delay < f.dep_delay AND {_route('e h', 'f h', 'g h')}"
        " WITHIN {window}",
        "SEQ4 to Denver (as above) or ExpressJet, US Airways, Envoy, Mesa to Charlotte/Dulles",
    ),
    Experiment(
        "ratio",
        "SEQ3, rarest-to-most-frequent ratio",
        "ratio",
        "flights",
        [
            (
                f"{x}:{y}:{z}",
                f"PATTERN SEQ({x} a, {y} b, {z} c) WHERE {_route('a b')} AND a.origin = c.origin"
                " AND b.dep_delay < c.dep_delay WITHIN {window}",
            )
            for x, y, z in [
                ("UA", "B6", "EV"),  # 1:1.1
                ("UA", "DL", "US"),  # 1:2.9
                ("DL", "AA", "VX"),  # 1:9.3
                ("US", "WN", "AS"),  # 1:28.8
                ("UA", "DL", "AS"),  # 1:82
                ("UA", "B6", "HA"),  # 1:172
                ("WN", "'9E'", "OO"),  # 1:384
                ("AA", "MQ", "OO"),  # 1:1,023
            ]
        ],
        [RATIO_WINDOW],
        sweep="ratio",
        note="two competing flights on one route, then a flight of a third carrier from the same airport"
        " delayed more than the second; carrier sets of growing rarest-to-most-frequent ratio, at one window",
    ),
    _nasdaq(
        "nasdaq-seq3",
        "SEQ3 (NASDAQ)",
        "NASDAQ_LONG.txt",
        "PATTERN SEQ(AAPL a, MSFT b, NVDA c) WHERE a.volume < b.volume AND b.close > b.open"
        " AND c.close > c.open WITHIN {window}",
        "Apple, then Microsoft trading more and rising, then Nvidia rising (1,514 tickers; 40, 39, 22 bars)",
    ),
    _nasdaq(
        "nasdaq-and3",
        "AND3 (NASDAQ)",
        "NASDAQ_LONG.txt",
        "PATTERN AND(AAPL a, MSFT b, NVDA c) WHERE a.volume < b.volume AND c.close > c.open WITHIN {window}",
        "the same three tickers in any order",
    ),
    _nasdaq(
        "nasdaq-neg-seq3",
        "NSEQ3 (NASDAQ)",
        "NASDAQ_LONG.txt",
        "PATTERN SEQ(AAPL a, NOT MSFT b, NVDA c) WHERE a.volume < c.volume AND b.close < b.open"
        " WITHIN {window}",
        "Apple, then Nvidia trading more, with no falling Microsoft bar in between",
        engines=NEGATION_ENGINES,
    ),
    _nasdaq(
        "nasdaq-seq4-even",
        "SEQ4 (NASDAQ, even frequencies)",
        "NASDAQ_MEDIUM.txt",
        "PATTERN SEQ(MSFT a, DRIV b, ORLY c, CBRL d) WHERE a.volume < b.volume AND c.volume < d.volume"
        " WITHIN {window}",
        "four tickers of almost the same frequency (477, 418, 400, 357 bars): little for laziness to win",
    ),
    # The dense stream: 3,000,000 US flights of Jan-Jun 2001 with airports as event types
    # (~700 flights an hour, ORD ~38, DFW ~36). The same patterns as on the NYC flights, the
    # rarest airport last: the frequent airports' flights related by delay (weakly: eager keeps
    # them), the first ones going where the rare airport's flight goes (selective, but eager can
    # check it only once that flight comes). Rare airports that fly where both hubs fly:
    # Billings (BIL: Minneapolis, Salt Lake City, Denver), Vail (EGE) and Hayden (HDN), both
    # seasonal. Probed: eager passes 60 s per cell at SEQ5 40 min only (an estimated 70 s).
    _dense(
        "f3m-seq3",
        "SEQ3 (3M)",
        f"PATTERN SEQ(ORD a, DFW b, BIL c) WHERE a.delay < b.delay AND {_to('c', 'a', 'b')}"
        " WITHIN {window}",
        "O'Hare, a more delayed Dallas/Fort Worth, then a Billings flight, all to one place"
        f" (Minneapolis, Salt Lake City or Denver); {_flying('ORD', 'DFW', 'BIL')}",
    ),
    _dense(
        "f3m-seq4",
        "SEQ4 (3M)",
        "PATTERN SEQ(ORD a, DFW b, STL c, EGE d) WHERE a.delay < b.delay AND b.delay < c.delay"
        f" AND c.delay < d.delay AND {_to('d', 'a', 'b')} WITHIN {{window}}",
        "O'Hare, DFW, St. Louis, then Vail (EGE) flights of growing delay, the first two going where the"
        f" Vail flight goes; {_flying('ORD', 'DFW', 'STL', 'EGE')}",
    ),
    _dense(
        "f3m-seq5",
        "SEQ5 (3M)",
        "PATTERN SEQ(ORD a, DFW b, ATL c, PHX d, HDN e) WHERE a.delay < b.delay AND b.delay < c.delay"
        f" AND c.delay < d.delay AND d.delay < e.delay AND {_to('e', 'a', 'b')} WITHIN {{window}}",
        "O'Hare, DFW, Atlanta, Phoenix, then Hayden/Steamboat (HDN) flights of growing delay, the first"
        f" two going where the Hayden flight goes; {_flying('ORD', 'DFW', 'ATL', 'PHX', 'HDN')}",
    ),
    _dense(
        "f3m-and3",
        "AND3 (3M)",
        f"PATTERN AND(ORD a, DFW b, BIL c) WHERE a.delay < b.delay AND {_to('c', 'a', 'b')}"
        " WITHIN {window}",
        "the SEQ3 flights in any order",
    ),
    _dense(
        "f3m-neg-seq3",
        "NSEQ3 (3M)",
        "PATTERN SEQ(ORD a, NOT DFW b, BIL c) WHERE a.delay < b.delay"
        f" AND {_to('c', 'a', 'b')} WITHIN {{window}}",
        "SEQ3 with the middle event negated: an O'Hare then a Billings flight to one place, with no more"
        " delayed DFW flight there in between (post-processing vs first-chance)",
        engines=NEGATION_ENGINES,
    ),
    _dense(
        "f3m-iter3",
        "ITER3 (3M)",
        "PATTERN SEQ(ORD a, LAS+ b[], EGE c) WHERE a.destination = c.destination"
        " AND b[i].destination = c.destination AND b[i].delay > b[i-1].delay WITHIN {window}",
        "O'Hare, then Las Vegas flights of growing delay, then Vail, all to one place; half windows"
        f" (DFW+ is too bursty for eager: it times out at 10 min); {_flying('ORD', 'LAS', 'EGE')}",
        windows=F3M_HALF_WINDOWS,
    ),
    _dense(
        "f3m-or2seq2",
        "OR2SEQ2 (3M)",
        f"PATTERN OR(SEQ(ORD a, BIL b), SEQ(DFW c, EGE d)) WHERE {_to('b', 'a')} AND {_to('d', 'c')}"
        " WITHIN {window}",
        f"O'Hare then Billings, or DFW then Vail, to one place; {_flying('ORD', 'DFW', 'BIL', 'EGE')}",
    ),
    Experiment(
        "f3m-ratio",
        "SEQ3 (3M), rarest-to-most-frequent ratio",
        "dense",
        "flights-3m",
        [
            (
                f"{x}:{y}:{z}",
                f"PATTERN SEQ({x} a, {y} b, {z} c) WHERE {_to('b', 'a')} AND a.delay < b.delay"
                " AND b.delay < c.delay WITHIN {window}",
            )
            for x, y, z in F3M_RATIO_AIRPORTS
        ],
        [F3M_RATIO_WINDOW],
        sweep="ratio",
        note="two flights to one place, the second more delayed, then a flight of a third airport delayed"
        " more still (as the NYC ratio sweep: the selective condition between the first two, which eager"
        " checks first too); airport sets of growing rarest-to-most-frequent ratio, at one window: "
        + "; ".join(f"{_flying(*t)} ({_one_in(*t)})" for t in F3M_RATIO_AIRPORTS),
    ),
]

GROUPS = {g: [e.name for e in EXPERIMENTS if e.group == g] for g in ("window", "ratio", "nasdaq", "dense")}


# ---------------------------------------------------------------------------------------
# The worker: one experiment point (one query), every engine and window, in one process.


class CellTimeout(BaseException):
    """Raised by SIGALRM inside an engine (a BaseException, so no engine catches it)."""


def _alarm(signum: int, frame: object) -> None:
    raise CellTimeout


def worker(spec: dict[str, Any]) -> None:
    """Read the input once, then run every engine on every window; one JSON line per cell."""
    limit = int(spec["memory_limit_gb"] * 1024**3)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    signal.signal(signal.SIGALRM, _alarm)
    from cepcli.bench import read_events, run_once, variable_counts, with_window
    from cepcli.prepare import compile_file
    from cepcli.sources.options import InputOptions

    def emit(record: dict[str, Any]) -> None:
        print(json.dumps(record), flush=True)

    options = dict(spec["input"])
    if options.get("columns"):
        options["columns"] = tuple(options["columns"])
    inputs = InputOptions(**options)
    with tempfile.TemporaryDirectory() as tmp:
        qfile = Path(tmp) / "q.sase"
        qfile.write_text(spec["query"].format(window=spec["windows"][0]) + "\n")
        compiled = compile_file(str(qfile), inputs.unit)
    started = time.perf_counter()
    events, schema, read_stats = read_events(compiled, inputs)
    rows = read_stats.events
    counts = variable_counts(compiled.pattern, events)
    by_name = {v.name: counts[v.bit] for v in compiled.pattern.variables}
    emit(
        {
            "kind": "input",
            "rows": rows,
            "relevant_events": len(events),
            "read_seconds": time.perf_counter() - started,
            "variable_counts": by_name,
        }
    )
    gc.collect()
    for name in spec["engines"]:
        timed_out_at = None
        for window in spec["windows"]:
            base = {"kind": "cell", "engine": name, "window": window}
            if timed_out_at is not None:
                emit({**base, "status": "skipped", "reason": f"timed out at {timed_out_at}"})
                continue
            pattern = with_window(compiled.query, window, inputs.unit)
            order = pattern.rarest_first(counts)
            record = _cell(pattern, name, events, schema, rows, order, spec, run_once)
            emit({**base, "order": list(order), **record})
            if record["status"] != "ok":
                timed_out_at = window
            gc.collect()


def _cell(
    pattern: Any,
    name: str,
    events: list[Any],
    schema: Any,
    rows: int,
    order: tuple[str, ...],
    spec: dict[str, Any],
    once: Any,
) -> dict[str, Any]:
    """Median of ``repeat`` timed runs within ``timeout`` seconds, then peak memory."""
    deadline = time.monotonic() + spec["timeout"]
    runs: list[tuple[Any, str]] = []

    def timed(limit: float) -> tuple[Any, str]:
        signal.setitimer(signal.ITIMER_REAL, max(limit, 0.001))
        try:
            return once(pattern, name, events, schema, rows, order)  # type: ignore[no-any-return]
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)

    try:
        once(pattern, name, events[:200], schema, rows, order)  # imports and first-use costs
        started = time.monotonic()
        for _ in range(spec["repeat"]):
            runs.append(timed(deadline - time.monotonic()))
            if time.monotonic() - started > REPEAT_CAP_SECONDS:
                break  # slow cells: fewer repeats (one long run averages the noise out itself)
    except CellTimeout:
        if not runs:
            return {"status": "timeout", "timeout_seconds": spec["timeout"]}
    except MemoryError:
        return {"status": "memory", "memory_limit_gb": spec["memory_limit_gb"]}
    stats = [s for s, _ in runs]
    hashes = {h for _, h in runs}
    seconds = statistics.median(s.seconds for s in stats)
    per_event = max(1, rows)
    matches = stats[0].matches
    record: dict[str, Any] = {
        "status": "ok",
        "runs": len(runs),
        "events_per_second": rows / max(seconds, 1e-9),
        "seconds": seconds,
        "peak_instances": int(statistics.median(s.peak_instances for s in stats)),
        "peak_buffered_events": int(statistics.median(s.peak_buffered_events for s in stats)),
        "predicate_evaluations": int(statistics.median(s.predicate_evaluations for s in stats)),
        "memory_operations": int(statistics.median(s.memory_operations for s in stats)),
        "matches": matches,
        "match_hash": runs[0][1],
        "stable_hash": len(hashes) == 1,
    }
    record["predicate_evaluations_per_event"] = record["predicate_evaluations"] / per_event
    record["memory_operations_per_event"] = record["memory_operations"] / per_event
    record["predicate_evaluations_per_match"] = record["predicate_evaluations"] / matches if matches else None
    record["memory_operations_per_match"] = record["memory_operations"] / matches if matches else None
    # Peak memory: one more run under tracemalloc (about 2-3x slower), if it fits.
    budget = min(spec["memory_budget"], deadline - time.monotonic() + spec["memory_budget"] / 2)
    record["peak_memory_mb"] = None
    if 3 * seconds < budget:
        gc.collect()
        tracemalloc.start()
        try:
            timed(budget)
            record["peak_memory_mb"] = round(tracemalloc.get_traced_memory()[1] / 2**20, 2)
        except (CellTimeout, MemoryError):
            pass
        finally:
            tracemalloc.stop()
    return record


# ---------------------------------------------------------------------------------------
# The driver.


def _input_for(exp: Experiment, args: argparse.Namespace) -> dict[str, Any]:
    if exp.dataset == "flights":
        return {"path": str(args.flights_data), **FLIGHTS_INPUT}
    if exp.dataset == "flights-3m":
        return {"path": str(args.f3m_data), **F3M_INPUT}
    return {"path": str(args.nasdaq / exp.dataset), **NASDAQ_INPUT}


def run_point(exp: Experiment, query: str, windows: list[str], args: argparse.Namespace) -> dict[str, Any]:
    spec = {
        "query": query,
        "input": _input_for(exp, args),
        "windows": windows,
        "engines": exp.engines,
        "timeout": args.timeout,
        "repeat": max(args.repeat, 5) if exp.group == "nasdaq" else args.repeat,  # milliseconds a run
        "memory_budget": args.memory_budget,
        "memory_limit_gb": args.memory_limit_gb,
    }
    outer = len(windows) * len(exp.engines) * (args.timeout + args.memory_budget + 5) + 120
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(spec)]
    started = time.perf_counter()
    error = None
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=outer, cwd=ROOT)
        stdout = done.stdout
        if done.returncode != 0:
            error = f"worker exited with {done.returncode}: {done.stderr.strip()[-2000:]}"
    except subprocess.TimeoutExpired as err:
        out = err.stdout or ""
        stdout = out.decode() if isinstance(out, bytes) else out
        error = f"worker killed after {outer:.0f} s"
    lines = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    info = next((r for r in lines if r["kind"] == "input"), {})
    cells = [{k: v for k, v in r.items() if k != "kind"} for r in lines if r["kind"] == "cell"]
    seen = {(c["engine"], c["window"]) for c in cells}
    for name in exp.engines:
        for window in windows:
            if (name, window) not in seen:
                cells.append({"engine": name, "window": window, "status": "missing"})
    point = {
        "query": query.format(window="<window>"),
        "input": info,
        "cells": cells,
        "wall_seconds": time.perf_counter() - started,
        "error": error,
    }
    point["disagreements"] = _disagreements(cells, windows)
    return point


def _disagreements(cells: list[dict[str, Any]], windows: list[str]) -> list[dict[str, Any]]:
    out = []
    for window in windows:
        done = [c for c in cells if c["window"] == window and c["status"] == "ok"]
        if len({(c["match_hash"], c["matches"]) for c in done}) > 1:
            out.append(
                {
                    "window": window,
                    "engines": {
                        c["engine"]: {"matches": c["matches"], "hash": c["match_hash"]} for c in done
                    },
                }
            )
    return out


def run_experiment(exp: Experiment, args: argparse.Namespace) -> dict[str, Any]:
    windows = _windows(exp, args)
    points = []
    for label, query in exp.queries:
        print(f"  {exp.name} {label} ...", file=sys.stderr, flush=True)
        point = run_point(exp, query, windows, args)
        point["label"] = label
        points.append(point)
        _progress(exp, point)
    result = {
        "experiment": exp.name,
        "label": exp.label,
        "group": exp.group,
        "dataset": exp.dataset,
        "note": exp.note,
        "sweep": exp.sweep,
        "engines": exp.engines,
        "windows": windows,
        "points": points,
        "settings": _settings(args),
    }
    if exp.sweep == "ratio":
        for point in points:
            c = point["input"].get("variable_counts", {})
            point["ratio"] = max(c.values()) / max(min(c.values()), 1) if c else None
    if exp.dataset == "flights-3m":
        # The airports' flights in the input read (pyarrow, once per file), for the report.
        counts = _origin_counts(args.f3m_data)
        for point in points:
            point["type_counts"] = {t: counts.get(t, 0) for t in _types(point["query"])}
    return result


_COUNTS: dict[str, dict[str, int]] = {}


def _origin_counts(path: Path) -> dict[str, int]:
    """Flights per origin airport of a flights-3m Parquet file."""
    if str(path) not in _COUNTS:
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        column = pq.read_table(path, columns=[F3M_INPUT["type_col"]]).column(0)
        _COUNTS[str(path)] = {r["values"]: r["counts"] for r in pc.value_counts(column).to_pylist()}
    return _COUNTS[str(path)]


def _types(query: str) -> list[str]:
    """The event types of a query's pattern, in order: ``SEQ(ORD a, NOT DFW b, BIL c)``."""
    return list(dict.fromkeys(re.findall(r"([A-Z0-9']+)\+? [a-z]+(?:\[\])?[,)]", query)))


def _is_ratio(result: dict[str, Any]) -> bool:
    """A ratio sweep (results written before ``sweep`` existed: the ``ratio`` group)."""
    return result.get("sweep", result["group"]) == "ratio"


def _point_label(result: dict[str, Any], point: dict[str, Any]) -> str:
    return f"{result['experiment']} {point['label']}" if _is_ratio(result) else result["label"]


def _windows(exp: Experiment, args: argparse.Namespace) -> list[str]:
    if args.windows and exp.sweep != "ratio":
        return [w.strip() for w in args.windows.split(",")]
    return exp.windows[:2] if args.quick and exp.sweep != "ratio" else exp.windows


def _progress(exp: Experiment, point: dict[str, Any]) -> None:
    for c in point["cells"]:
        if c["status"] == "ok":
            text = (
                f"{c['events_per_second']:>12,.0f} ev/s  inst {c['peak_instances']:>8,}"
                f"  evals/ev {c['predicate_evaluations_per_event']:8.3f}  matches {c['matches']:,}"
            )
        else:
            text = c["status"] + (f" ({c['reason']})" if c.get("reason") else "")
        print(f"    {point['label']:>10} {c['window']:>6} {c['engine']:>16}  {text}", file=sys.stderr)
    if point["error"]:
        print(f"    ERROR: {point['error']}", file=sys.stderr)
    for d in point["disagreements"]:
        print(f"    DISAGREEMENT at {d['window']}: {d['engines']}", file=sys.stderr)
    print(f"    ({point['wall_seconds']:.0f} s)", file=sys.stderr, flush=True)


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "repeat": args.repeat,
        "timeout_seconds": args.timeout,
        "memory_budget_seconds": args.memory_budget,
        "quick": args.quick,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
    }


# ---------------------------------------------------------------------------------------
# Pictures.

METRICS = [
    ("events_per_second", "throughput (events/s)"),
    ("peak_instances", "peak instances"),
    ("peak_memory_mb", "peak memory (MB)"),
    ("predicate_evaluations_per_event", "predicate evaluations / event"),
    ("memory_operations_per_event", "memory operations / event"),
    ("predicate_evaluations_per_match", "predicate evaluations / match"),
]


def plot_experiment(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ratio = _is_ratio(result)
    fig, grid = plt.subplots(2, 3, figsize=(13, 7.5))
    axes = list(grid.flat)
    for name in result["engines"]:
        xs, labels, series = _series(result, name, ratio)
        for ax, (key, _) in zip(axes, METRICS, strict=True):
            ys = [s.get(key) if s.get("status") == "ok" else None for s in series]
            pts = [(x, max(y, 1e-3)) for x, y in zip(xs, ys, strict=True) if y is not None]
            line = ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)[0]
            cut = [x for x, s in zip(xs, series, strict=True) if s.get("status") in ("timeout", "memory")]
            if cut and pts:
                ax.plot(cut, [pts[-1][1]] * len(cut), marker="x", ls="", ms=9, color=line.get_color())
        if not ratio:
            for ax in axes:
                ax.set_xticks(xs, labels)
    for ax, (_, title) in zip(axes, METRICS, strict=True):
        ax.set_title(title, fontsize=10)
        if any(len(line.get_ydata()) for line in ax.get_lines()):
            ax.set_yscale("log")
        if ratio:
            ax.set_xscale("log")
            ax.set_xlabel("most-frequent / rarest (log)")
        else:
            ax.set_xlabel("window")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8)
    what = f"SEQ3 at {result['windows'][0]}" if ratio else result["points"][0]["query"]
    cut_note = "\n(x: timed out, drawn at the last finished value)" if _any_cut(result) else ""
    fig.suptitle(textwrap.fill(f"{result['label']}: {what}", 160) + cut_note, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _series(result: dict[str, Any], engine: str, ratio: bool) -> tuple[list[float], list[str], list[dict]]:
    if ratio:
        points = sorted(result["points"], key=lambda p: p["ratio"] or 0)
        cells = [next(c for c in p["cells"] if c["engine"] == engine) for p in points]
        return [p["ratio"] for p in points], [p["label"] for p in points], cells
    point = result["points"][0]
    cells = [
        next(c for c in point["cells"] if c["engine"] == engine and c["window"] == w)
        for w in result["windows"]
    ]
    return list(range(len(result["windows"]))), result["windows"], cells


def _any_cut(result: dict[str, Any]) -> bool:
    return any(c["status"] in ("timeout", "memory") for p in result["points"] for c in p["cells"])


def plot_overview(results: list[dict[str, Any]], key: str, title: str, path: Path) -> None:
    """The paper's figure layout: one small panel per pattern, ``key`` against the window."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sweeps = [r for r in results if not _is_ratio(r)]
    if not sweeps:
        return
    cols = 4
    rows = math.ceil(len(sweeps) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3.2 * rows), squeeze=False)
    for ax, result in zip(axes.flat, sweeps, strict=False):
        for name in result["engines"]:
            xs, labels, series = _series(result, name, False)
            pts = [(x, s[key]) for x, s in zip(xs, series, strict=True) if s.get("status") == "ok"]
            pts = [(x, max(y, 1e-3)) for x, y in pts if y is not None]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, label=name)
        ax.set_xticks(range(len(result["windows"])), result["windows"])
        if any(len(line.get_ydata()) for line in ax.get_lines()):
            ax.set_yscale("log")
        ax.set_title(result["label"], fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6)
    for ax in list(axes.flat)[len(sweeps) :]:
        ax.set_visible(False)
    fig.suptitle(f"{title} against the window (log scale)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


# ---------------------------------------------------------------------------------------
# Summary.


def _ratio(lazy: dict[str, Any], eager: dict[str, Any], key: str, higher_better: bool) -> str:
    if lazy.get("status") != "ok":
        return lazy.get("status", "?")
    if eager.get("status") == "ok":
        e, v = eager[key], lazy[key]
        if not e or not v:
            return f"{e or 0:,.3g} vs {v or 0:,.3g}"
        r = v / e if higher_better else e / v
        return f"{r:,.1f}x" if r < 100 else f"{r:,.0f}x"
    if eager.get("status") in ("timeout", "skipped") and key == "events_per_second":
        # eager did not finish in the timeout: it was slower than rows/timeout
        bound = lazy["events_per_second"] / (lazy["rows"] / lazy["timeout"])
        return f">{bound:,.0f}x"
    return "-"


def summarize(results: list[dict[str, Any]]) -> str:
    lines = ["# Paper section 8 on cepcli: lazy engines as ratios to eager", ""]
    if results:
        s = results[0]["settings"]
        lines.append(
            f"Machine: {s['machine']}. Each cell: median of {s['repeat']} timed run(s) of the engine over the"
            f" input replayed from memory; timeout {s['timeout_seconds']:.0f} s per cell"
            + (" (QUICK run: small data, two windows)." if s["quick"] else ".")
        )
        lines.append(
            "Columns: throughput = lazy events/s / eager events/s (higher is better for lazy); instances and"
            " evals = eager / lazy (peak instances, predicate evaluations per event; higher = lazy does"
            " fewer). One value per window, in the window order. `>Nx`: eager timed out; `timeout`,"
            " `skipped` (a smaller window timed out)."
        )
        lines.append("")
    lines += [
        "| experiment | engine | windows | throughput vs eager | fewer peak instances | fewer predicate evals"
        " | matches | agree |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for result in results:
        for point in result["points"]:
            timeout = result["settings"]["timeout_seconds"]
            rows = point["input"].get("rows", 0)
            for c in point["cells"]:
                c.setdefault("rows", rows)
                c.setdefault("timeout", timeout)
            label = _point_label(result, point)
            if _is_ratio(result) and point.get("ratio"):
                r = point["ratio"]
                label += f" (1:{r:.1f})" if r < 10 else f" (1:{r:,.0f})"
            windows = result["windows"]
            for engine in result["engines"][1:]:
                speed, inst, evals = [], [], []
                for w in windows:
                    cell = _cell_of(point, engine, w)
                    eager = _cell_of(point, "eager", w)
                    speed.append(_ratio(cell, eager, "events_per_second", True))
                    inst.append(_ratio(cell, eager, "peak_instances", False))
                    evals.append(_ratio(cell, eager, "predicate_evaluations_per_event", False))
                matches = [str(_cell_of(point, engine, w).get("matches", "-")) for w in windows]
                bad = {d["window"] for d in point["disagreements"]}
                agree = "NO: " + ", ".join(sorted(bad)) if bad else "yes"
                lines.append(
                    f"| {label} | {engine} | {', '.join(windows)} | {' / '.join(speed)} | {' / '.join(inst)}"
                    f" | {' / '.join(evals)} | {' / '.join(matches)} | {agree} |"
                )
    lines += ["", "## Absolute numbers", ""]
    lines += [
        "| experiment | window | engine | events/s | peak instances | peak buffered | evals/event"
        " | memops/event | peak MB | matches |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for result in results:
        for point in result["points"]:
            label = _point_label(result, point)
            for w in result["windows"]:
                for engine in result["engines"]:
                    c = _cell_of(point, engine, w)
                    if c.get("status") != "ok":
                        status = c.get("status", "?")
                        if status == "timeout":
                            status = f"timeout > {c.get('timeout_seconds', 0):.0f} s"
                        lines.append(f"| {label} | {w} | {engine} | {status} | | | | | | |")
                        continue
                    mb = f"{c['peak_memory_mb']:,.1f}" if c.get("peak_memory_mb") is not None else "-"
                    lines.append(
                        f"| {label} | {w} | {engine} | {c['events_per_second']:,.0f}"
                        f" | {c['peak_instances']:,} | {c['peak_buffered_events']:,}"
                        f" | {c['predicate_evaluations_per_event']:.3f}"
                        f" | {c['memory_operations_per_event']:.3f} | {mb} | {c['matches']:,} |"
                    )
    counted = [(r, p) for r in results for p in r["points"] if p.get("type_counts") and _is_ratio(r)]
    if counted:
        lines += ["", "## Ratio points: flights per airport in the input read", ""]
        lines += ["| experiment | airports | flights | rarest : most frequent | matches (eager) |"]
        lines += ["|---|---|---|---|---:|"]
        for r, p in counted:
            n = list(p["type_counts"].values())
            ratio = f"1:{max(n) / max(min(n), 1):,.2f}" if n else "-"
            flights = ", ".join(f"{t} {c:,}" for t, c in p["type_counts"].items())
            matches = _cell_of(p, "eager", r["windows"][0]).get("matches")
            shown = f"{matches:,}" if matches is not None else "-"
            lines.append(f"| {r['experiment']} | {p['label']} | {flights} | {ratio} | {shown} |")
    problems = [(r["label"], p["label"], d) for r in results for p in r["points"] for d in p["disagreements"]]
    lines += ["", "## Disagreements", ""]
    lines += [f"* {e} {q} at {d['window']}: {d['engines']}" for e, q, d in problems] or ["None."]
    lines.append("")
    return "\n".join(lines)


def _cell_of(point: dict[str, Any], engine: str, window: str) -> dict[str, Any]:
    return next((c for c in point["cells"] if c["engine"] == engine and c["window"] == window), {})


# ---------------------------------------------------------------------------------------


def _quick_parquet(path: Path, rows: int) -> Path:
    """The first ``rows`` rows of a Parquet file (flights-3m: the first 12 days for 200,000)."""
    target = Path(tempfile.gettempdir()) / f"cepcli-paper-{path.stem}-head{rows}.parquet"
    if not target.exists():
        import pyarrow as pa
        import pyarrow.parquet as pq

        batches, read = [], 0
        for batch in pq.ParquetFile(path).iter_batches(batch_size=65_536):
            batches.append(batch)
            read += batch.num_rows
            if read >= rows:
                break
        part = target.with_suffix(f".{os.getpid()}.part")
        pq.write_table(pa.Table.from_batches(batches).slice(0, rows), part)
        part.replace(target)
    return target


def _quick_flights(path: Path, rows: int) -> Path:
    """The first ``rows`` flights (January and February 2013), for a smoke run."""
    target = Path(tempfile.gettempdir()) / f"cepcli-paper-{path.name.split('.')[0]}-head{rows}.csv.gz"
    if not target.exists():
        with gzip.open(path, "rt") as src, gzip.open(target, "wt") as dst:
            for i, line in enumerate(src):
                if i > rows:
                    break
                dst.write(line)
    return target


def main() -> None:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "experiments",
        nargs="*",
        help="experiment names or groups (window, ratio, nasdaq, dense); default: all",
    )
    parser.add_argument("--flights", type=Path, default=FLIGHTS, help="flights.csv.gz")
    parser.add_argument("--nasdaq", type=Path, default=NASDAQ, help="folder of the NASDAQ_*.txt files")
    parser.add_argument("--flights-3m", type=Path, default=F3M, help="flights-3m.parquet (the dense group)")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="folder for the JSON, PNG and summary.md (default results/, quick results/quick/)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=None,
        help=f"timed runs per cell, median (default 3, quick 1; fewer past {REPEAT_CAP_SECONDS:.0f} s)",
    )
    parser.add_argument("--timeout", type=float, default=None, help="seconds per cell (default 60, quick 15)")
    parser.add_argument("--memory-budget", type=float, default=None, help="seconds for the peak memory run")
    parser.add_argument("--memory-limit-gb", type=float, default=6.0, help="address space of a worker")
    parser.add_argument("--windows", default=None, help="windows for every sweep instead of its own: 1h,2h")
    parser.add_argument("--engines", default=None, help="engines to add to every experiment: adaptive,...")
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"smoke run: 40,000 NYC flights, {F3M_QUICK_ROWS:,} of flights-3m, two windows",
    )
    parser.add_argument("--list", action="store_true", help="list the experiments and exit")
    parser.add_argument(
        "--summary",
        action="store_true",
        help="only redraw the pictures and summary.md from the JSON in --out",
    )
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(json.loads(args.worker))
        return
    if args.list:
        for exp in EXPERIMENTS:
            print(
                f"{exp.name} [{exp.group}] {exp.label}: {', '.join(exp.engines)} on {', '.join(exp.windows)}"
            )
            for label, query in exp.queries:
                print(f"    {label}: {query.format(window='<window>')}")
            print(textwrap.fill(exp.note, 110, initial_indent="    (", subsequent_indent="     ") + ")")
        return
    args.timeout = args.timeout or (15.0 if args.quick else 60.0)
    args.repeat = args.repeat or (1 if args.quick else 3)
    args.out = args.out or (OUT / "quick" if args.quick else OUT)
    args.memory_budget = args.memory_budget or (5.0 if args.quick else 10.0)
    names = args.experiments or [e.name for e in EXPERIMENTS]
    chosen = []
    for name in names:
        for n in GROUPS.get(name, [name]):
            if n not in {e.name for e in EXPERIMENTS}:
                parser.error(f"unknown experiment {n!r} (see --list)")
            chosen += [e for e in EXPERIMENTS if e.name == n and e not in chosen]
    if args.engines:  # every chosen experiment with these engines added (e.g. adaptive)
        extra = [e.strip() for e in args.engines.split(",") if e.strip()]
        chosen = [replace(e, engines=[*e.engines, *(x for x in extra if x not in e.engines)]) for e in chosen]
    args.out.mkdir(parents=True, exist_ok=True)
    args.flights_data = _quick_flights(args.flights, 40_000) if args.quick else args.flights
    args.f3m_data = args.flights_3m
    if args.quick and any(e.dataset == "flights-3m" for e in chosen) and not args.summary:
        args.f3m_data = _quick_parquet(args.flights_3m, F3M_QUICK_ROWS)
    started = time.perf_counter()
    results = []
    for exp in [] if args.summary else chosen:
        print(f"{exp.name}: {exp.label}", file=sys.stderr, flush=True)
        result = run_experiment(exp, args)
        results.append(result)
        (args.out / f"{exp.name}.json").write_text(json.dumps(result, indent=2) + "\n")
        _plot(plot_experiment, result, args.out / f"{exp.name}.png")
    # Keep the results of experiments not run this time in the summary.
    merged = {r["experiment"]: r for r in _previous(args.out)}
    merged.update({r["experiment"]: r for r in results})
    for name in merged if args.summary else []:
        _plot(plot_experiment, merged[name], args.out / f"{name}.png")
    ordered = [merged[e.name] for e in EXPERIMENTS if e.name in merged]
    for key, title in METRICS:
        _plot(plot_overview, ordered, key, title, args.out / f"overview_{key}.png")
    summary = summarize(ordered)
    (args.out / "summary.md").write_text(summary)
    (args.out / "all.json").write_text(json.dumps(ordered, indent=2) + "\n")
    print(summary)
    print(f"wall time {time.perf_counter() - started:.0f} s; results in {args.out}", file=sys.stderr)


def _plot(draw: Any, *args: Any) -> None:
    """Draw, or say why not (a picture never stops the run)."""
    try:
        draw(*args)
    except Exception as err:  # noqa: BLE001
        print(f"  no picture {args[-1]}: {type(err).__name__}: {err}", file=sys.stderr)


def _previous(out: Path) -> list[dict[str, Any]]:
    found = []
    for exp in EXPERIMENTS:
        path = out / f"{exp.name}.json"
        if path.exists():
            try:
                found.append(json.loads(path.read_text()))
            except json.JSONDecodeError:
                continue
    return found


if __name__ == "__main__":
    main()
