"""Stages 1 and 2 of ``--spark``, on the driver: the sample, and the splits the executors read.

1. **The sample** (``sample``): the first rows of the first file, read locally (``cepcli.run.Run``),
   decide the column kinds, how times are read, each query's frequency order and the types
   the columns travel in (``reading.Reading``), as locally.
2. **The splits** (``splits``): every file cut into parts that start where a record starts,
   each with the row id of its first row, the ids going on from file to file: from a
   parallel scan of their bytes (CSV, JSON lines: ``cepcli.spark.splits``), their rows
   (Parquet: runs of row groups, a large one cut), or a parallel count by the local reader (a
   compressed file, one split). Parquet read by the columnar engine reads only the columns
   some condition reads (``projected``).
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import cepcli.spark.splits as cut
from cepcli.engines import engine
from cepcli.errors import InputError
from cepcli.notes import Notes
from cepcli.prepare import Compiled, RunOptions
from cepcli.run import Run
from cepcli.runtime.stats import Stats
from cepcli.sources.options import InputOptions, format_of
from cepcli.sources.parquet import left_away
from cepcli.spark.reading import Reading, read_kinds, ship_types
from cepcli.spark.splits import Split

_COMPRESSED = (".gz", ".bz2", ".zst", ".zstd", ".lz4", ".br")


def files(path: str) -> list[str]:
    """The input's files: one, or a directory's (hidden ones left out) in name order."""
    if os.path.isdir(path):
        found = sorted(
            str(p) for p in Path(path).iterdir() if p.is_file() and not p.name.startswith((".", "_"))
        )
        if not found:
            raise InputError("the directory holds no file", filename=path)
        return found
    if not os.path.exists(path):
        raise InputError("cannot open: No such file or directory", filename=path)
    return [path]


def sample(
    queries: list[tuple[str, Compiled]],
    inputs: InputOptions,
    options: RunOptions,
    stats: Stats,
    notes: Notes | None = None,
) -> tuple[Reading, list[tuple[str, ...]]]:
    """Kinds, time reading, each query's frequency order and the types the columns travel
    in, from the first file's sample, read locally (several queries: as ``cepcli.run.Run``
    reads them, once)."""
    job = Run(dict(queries), inputs, options, stats=stats, notes=notes)
    try:
        schema = job.schema
        spec = job.time_reading
        orders = job.orders()
        ship, exact, pending = ship_types(job)  # (uses up the job's pieces: after the order)
    finally:
        job.close()
    first = queries[0][1].pattern
    stats.order = orders[0] or tuple(v.name for v in first.variables if not v.negated)
    given = replace(
        inputs,
        path=None,
        columns=schema.columns,
        schema=read_kinds(schema, spec),  # (the executors' kinds are the sample's)
        time_format=spec.format,
    )
    texts = tuple(c.text for _, c in queries) if len(queries) > 1 else ()
    reading = Reading(
        queries[0][1].text, given, schema, ship, exact, job.source.sample, texts, pending=pending
    )
    return reading, orders


def splits(context: Any, files: list[str], reading: Reading, least: int | None) -> list[Split]:
    """Every file's splits, with row ids going on from file to file."""
    parts = max(2 * context.defaultParallelism, 1)
    if least is not None:
        parts = 1 << 30
    fmt = format_of(files[0], reading.inputs.format)
    header_bytes = -1  # the first file's header (a file whose first record is empty has its length)
    plans: list[tuple[str, str]] = []  # (file, how): ranges, groups or whole
    ranges: list[tuple[str, int, int]] = []
    starts: dict[str, int] = {}
    for path in files:
        if fmt == "parquet":
            plans.append((path, "groups"))
        elif path.lower().endswith(_COMPRESSED) or _magic(path):
            plans.append((path, "whole"))
        else:
            start = 0
            if fmt == "csv" and reading.inputs.header:
                if header_bytes < 0:
                    header_bytes = _header_length(files[0], 0)
                start = _header_length(path, header_bytes)
            starts[path] = start
            plans.append((path, "ranges"))
            ranges += cut.plan_ranges(path, start, max(1, parts // len(files)), least or 1 << 20)
    quotes = fmt == "csv"
    scans = []
    if ranges:
        context.setJobDescription("cepcli: scan the input for record boundaries")
        scans = (
            context.parallelize(ranges, len(ranges))
            .map(lambda r: cut.scan(r[0], r[1], r[2], quotes))
            .collect()
        )
    whole = [p for p, how in plans if how == "whole"]
    counts = {}
    if whole:
        context.setJobDescription("cepcli: count the rows of compressed files")
        counts = dict(context.parallelize(whole, len(whole)).map(lambda p: (p, _count(reading, p))).collect())
    out: list[Split] = []
    first = 0
    for path, how in plans:
        if how == "groups":
            found, rows = cut.row_groups(path, first, max(1, parts // len(files)))
        elif how == "whole":
            found, rows = [Split(path, -1, -1, first, counts[path])], counts[path]
        else:
            mine = [s for s in scans if s.path == path]
            found, rows = cut.chain(mine, starts[path], os.path.getsize(path), first)
        out += found
        first += rows
    return out


def projected(
    reading: Reading, queries: list[tuple[str, Compiled]], options: RunOptions, splits: list[Split]
) -> Reading:
    """Parquet in file order, every query evaluated by the columnar engine: the splits read
    only the columns some condition (or the type and time) reads, as the local run does, and
    the shards fetch the others for their matches (``reading.Fetch``)."""
    inputs, schema = reading.inputs, reading.schema
    if not splits or format_of(splits[0].path, inputs.format) != "parquet":
        return reading
    if inputs.sort or inputs.max_delay is not None:  # (the local run reads all then, too)
        return reading
    if not all(engine(options.engine).columnar(compiled.pattern) for _, compiled in queries):
        return reading
    used = {schema.type_col, schema.time_col}.union(*(c.pattern.columns for _, c in queries))
    import pyarrow.parquet as pq

    away = tuple(left_away(pq.read_schema(splits[0].path), used))  # (the local reader's rule)
    files = {s.path: s.first_row - s.start for s in splits}
    return replace(reading, away=away, files=tuple(files.items())) if away else reading


def _magic(path: str) -> bool:
    with open(path, "rb") as f:
        head = f.read(4)
    return head.startswith((b"\x1f\x8b", b"BZh", b"\x28\xb5\x2f\xfd", b"\x04\x22\x4d\x18"))


def _header_length(path: str, first_file_header: int) -> int:
    """The bytes of a file's header record (each file of a directory has its own)."""
    from cepcli.sources.raw import RawInput
    from cepcli.sources.records import RecordStream

    raw = RawInput(path)
    try:
        return len(RecordStream(raw.stream, path, 1 << 30, False).first_record()) or first_file_header
    finally:
        raw.close()


def _count(reading: Reading, path: str) -> int:
    """The data rows of a whole (compressed) file, counted by the local reader."""
    from cepcli.sources.source import open_reader

    options = replace(
        reading.inputs, path=path, columns=None if reading.inputs.header else reading.inputs.columns
    )
    reader = open_reader(options)
    last = -1
    try:
        for batch in reader.batches():
            ids = [int(batch.rows[-1])] if len(batch.rows) else []
            last = max([last, *ids, *(u[0] for u in batch.unreadable)])
    finally:
        reader.close()
    return last + 1
