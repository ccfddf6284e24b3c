"""The parts of a file that Spark's executors read (``cepcli.spark.splits``), without Spark:
read part by part, a file gives exactly the rows, row ids and bad rows of the whole file,
wherever it is cut (quotes with line breaks, CR LF, blank lines, rows of a wrong width);
and the time order, checked part by part and chained (``cepcli.spark.scan._floors``), keeps
exactly the rows the local run keeps."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cepcli.errors import InputError
from cepcli.prepare import RunOptions, compile_text
from cepcli.run import Run
from cepcli.runtime.stats import Stats
from cepcli.sources.batches import RawBatch
from cepcli.sources.csv import CsvReader
from cepcli.sources.jsonl import JsonlReader
from cepcli.sources.options import InputOptions
from cepcli.sources.parquet import ParquetReader
from cepcli.spark.plan import _header_length
from cepcli.spark.plan import sample as _sample
from cepcli.spark.reading import ROW, read_split
from cepcli.spark.scan import _floors
from cepcli.spark.splits import chain, plan_ranges, row_groups, scan

Row = tuple[int, object]


def _read(reader: CsvReader | JsonlReader | ParquetReader) -> list[Row]:
    """Every row a reader reads, sorted by row id; the reader closed."""
    try:
        return _rows(list(reader.batches()))
    finally:
        reader.close()


def _rows(batches: list[RawBatch]) -> list[Row]:
    out: list[Row] = []
    for batch in batches:
        columns = [c.to_pylist() for c in batch.columns]
        out += [(int(r), tuple(c[i] for c in columns)) for i, r in enumerate(batch.rows.tolist())]
        out += [(u[0], f"bad: {u[1]}") for u in batch.unreadable]
    return sorted(out)


def _random_csv(rng: random.Random) -> str:
    lines = ["a,b"]
    for _ in range(rng.randrange(1, 60)):
        if rng.random() < 0.1:
            lines.append(rng.choice(["", "  ", "only", "x,y,z"]))
            continue
        first = rng.choice(["x", '"q,\n"', '"two\r\nlines"', "", '""""', "1", '5" tv'])
        second = rng.choice(["y", '"z"', "2", ""])
        lines.append(f"{first},{second}")
    return rng.choice(["\n", "\r\n"]).join(lines) + rng.choice(["", "\n", "\n\n", "\r\n"])


@pytest.mark.parametrize("seed", range(200))
def test_csv_parts_read_as_the_whole_file(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    path = tmp_path / "in.csv"
    path.write_bytes(_random_csv(rng).encode())
    whole = _read(CsvReader(InputOptions(str(path))))
    start = _header_length(str(path), 0)
    size = os.path.getsize(path)
    ranges = plan_ranges(str(path), start, 10**6, least=rng.randrange(1, 40))
    splits, total = chain([scan(*r) for r in ranges], start, size, 0)
    assert total == len(whole)
    got: list[Row] = []
    for s in splits:
        split = (s.start, s.stop, s.first_row)
        options = InputOptions(str(path), header=False, columns=("a", "b"), split=split)
        part = _read(CsvReader(options))
        assert len(part) == s.rows, s
        got += part
    assert sorted(got) == whole


@pytest.mark.parametrize("seed", range(60))
def test_jsonl_parts_read_as_the_whole_file(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    lines = []
    for i in range(rng.randrange(1, 50)):
        if rng.random() < 0.1:
            lines.append(rng.choice(["", "   ", "not json", "[1]"]))
        else:
            x = rng.choice([1, None, 2.5, "w"])
            lines.append(json.dumps({"ts": i, "type": rng.choice("AB"), "x": x}))
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(lines) + rng.choice(["", "\n"]))
    base = JsonlReader(InputOptions(str(path)))
    whole = _rows(list(base.batches()))
    size = os.path.getsize(path)
    ranges = plan_ranges(str(path), 0, 10**6, least=rng.randrange(1, 60))
    splits, total = chain([scan(*r, quotes=False) for r in ranges], 0, size, 0)
    assert total == len(whole)
    kinds = tuple((name, kind) for name, kind in zip(base.columns, _kinds(base), strict=True))
    base.close()
    got: list[Row] = []
    for s in splits:
        split = (s.start, s.stop, s.first_row)
        options = InputOptions(str(path), columns=base.columns, schema=kinds, split=split)
        got += _read(JsonlReader(options))
    assert [r for r, _ in sorted(got)] == [r for r, _ in whole]


def _kinds(reader: JsonlReader) -> list[object]:
    from cepcli.sources.kinds import kind_of_type

    return [kind_of_type(f.type) for f in reader.schema]


@pytest.mark.parametrize(
    ("group_rows", "parts", "splits_made"),
    [(13, 3, 4), (13, 8, 8), (100, 3, 3), (100, 1, 1), (40, 4, 5), (7, 200, 100)],
    ids=[
        "small-groups-joined",
        "one-group-a-split",
        "one-group-cut",
        "whole",
        "groups-cut",
        "more-parts-than-groups",
    ],
)
@pytest.mark.parametrize("projected", [False, True], ids=["streamed", "read-ahead"])
def test_parquet_parts_are_runs_of_row_groups_and_pieces_of_large_ones(
    tmp_path: Path, group_rows: int, parts: int, splits_made: int, projected: bool
) -> None:
    """A Parquet file's splits cover its rows once, in order, each at most a share of them
    (a row group larger than a share is cut, so one large group is read by several tasks);
    each split's reader reads exactly its rows, with their ids, streamed or read ahead after
    a projection (the columnar engine's path), in batches that do not follow the cuts."""
    path = tmp_path / "in.parquet"
    text = [f"v{i % 7}" for i in range(100)]  # (text: a projection leaves it away)
    table = pa.table({"ts": list(range(100)), "type": ["A", "B"] * 50, "x": text})
    pq.write_table(table, path, row_group_size=group_rows)
    whole = _read(ParquetReader(InputOptions(str(path))))
    splits, total = row_groups(str(path), 1000, parts)
    assert total == 100 and len(splits) == splits_made
    assert [s.start for s in splits] == [0] + [s.stop for s in splits[:-1]] and splits[-1].stop == 100
    assert all(s.first_row == 1000 + s.start and s.rows == s.stop - s.start for s in splits)
    share = -(-100 // parts)
    assert all(s.rows <= max(share, group_rows) for s in splits)
    got: list[Row] = []
    for s in splits:
        reader = ParquetReader(InputOptions(str(path), split=(s.start, s.stop, s.first_row), chunk_rows=6))
        if projected:
            assert reader.project({"ts", "type"}) == ["x"]  # (text: left away; ts, a number, is read)
        rows = _read(reader)
        assert [r for r, _ in rows] == list(range(s.first_row, s.first_row + s.rows))
        got += rows
    want = [(r, (ts, kind, None if projected else x)) for r, (ts, kind, x) in whole]
    assert [(r - 1000, v) for r, v in got] == want


def test_a_parquet_split_fetches_its_rows_left_away(tmp_path: Path) -> None:
    """``fetch`` (the columns no condition reads, for the matches' events) finds a split's
    rows by their ids when the split begins inside a row group."""
    path = tmp_path / "in.parquet"
    pq.write_table(
        pa.table({"ts": list(range(50)), "x": [f"v{i}" for i in range(50)]}), path, row_group_size=50
    )
    reader = ParquetReader(InputOptions(str(path), split=(20, 35, 520)))
    reader.project({"ts"})
    assert [r for r, _ in _read(ParquetReader(InputOptions(str(path), split=(20, 35, 520))))][0] == 520
    assert [v.to_pylist() for v in reader.fetch(pa.array([534, 520, 527]).to_numpy())] == [
        ["v34", "v20", "v27"]
    ]
    reader.close()


QUERY = "PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 5"


def _local_kept(path: Path, skip: bool) -> tuple[set[int], tuple[int, str] | None]:
    """The rows the local run keeps for the variables, and its first bad row."""
    options = InputOptions(str(path), on_bad_row="skip" if skip else "fail")
    job = Run({"q": compile_text(QUERY, "<q>")}, options)
    rows: set[int] = set()
    bad = None
    try:
        for event in job.source.events(job.prefilter, job.stats, job.typed):
            if event.mask:
                rows.add(event.row)
    except InputError as err:
        bad = (int(err.row or 0), err.message)
    finally:
        job.close()
    if skip and job.stats.first_bad_row is not None:
        bad = job.stats.first_bad_row
    return rows, bad


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("skip", [False, True], ids=["fail", "skip"])
def test_the_time_order_is_chained_across_parts(tmp_path: Path, seed: int, skip: bool) -> None:
    """Times going back here and there, across the cuts: reading every part on its own,
    then again from its floor when its first kept time is earlier (as the driver does),
    keeps the rows of the local run, and finds its first bad row."""
    rng = random.Random(seed)
    ts = 0
    lines = ["ts,type,x"]
    for _ in range(rng.randrange(5, 60)):
        ts += rng.choice([0, 1, 2, 3, -4, -1]) if rng.random() < 0.2 else rng.choice([0, 1, 2])
        lines.append(f"{ts},{rng.choice('ABC')},{rng.randrange(5)}")
    path = tmp_path / "in.csv"
    path.write_text("\n".join(lines) + "\n")
    want, want_bad = _local_kept(path, skip)
    options = InputOptions(str(path), on_bad_row="skip" if skip else "fail")
    reading, _ = _sample([("", compile_text(QUERY, "<q>"))], options, RunOptions(), Stats())
    start = _header_length(str(path), 0)
    ranges = plan_ranges(str(path), start, 10**6, least=rng.randrange(5, 40))
    splits, _ = chain([scan(*r) for r in ranges], start, os.path.getsize(path), 0)
    results = [read_split(reading, s) for s in splits]
    reports = [r for _, r in results]
    floors = _floors(reports)
    tables = []
    for i, (s, (table, report)) in enumerate(zip(splits, results, strict=True)):
        floor = floors[i]
        if floor is not None and report["first"] is not None and report["first"][0] < floor[0]:
            table, reports[i] = read_split(reading, s, floor)
        tables.append(table)
    bad = [tuple(r["bad"]) for r in reports if r["bad"]]
    first_bad = min(bad) if bad else None
    got = {r for t in tables for r in t.column(ROW).to_pylist()}
    if first_bad is not None and not skip:
        got = {r for r in got if r < first_bad[0]}
    assert got == want
    assert (first_bad[0] if first_bad else None) == (want_bad[0] if want_bad else None)
    if first_bad is not None and want_bad is not None:
        assert first_bad[1] == want_bad[1]


def test_shard_bounds_are_weighted_quantiles_of_the_split_samples() -> None:
    from cepcli.spark.evaluate import quantiles

    assert quantiles([(list(range(1000)), 1000)], 4) == (249, 499, 749)
    # A split of 3 relevant rows and one of 300: the busy split's times hold the cut.
    assert quantiles([([1, 2, 3], 3), ([10, 11, 12, 13], 300)], 2) == (11,)
    assert quantiles([([], 0), ([5], 1)], 3) == (5,)  # fewer distinct times than shards
    assert quantiles([], 4) == ()


def test_a_part_adds_every_work_counter_and_its_peaks() -> None:
    """What a Spark shard (or an adaptive segment) did is added to the whole run's stats:
    deletions and buffer removals too (they are part of ``memory_operations``)."""
    from cepcli.runtime.stats import Stats, add_part, part_work

    whole = Stats(instances_created=1, peak_instances=9)
    for part in (
        Stats(
            instances_created=5, instances_deleted=4, buffer_insertions=7, buffer_removals=6, peak_instances=3
        ),
        Stats(predicate_evaluations=2, buffer_removals=1, peak_buffered_events=8),
    ):
        add_part(whole, json.loads(json.dumps(part_work(part))))  # as a shard sends it
    assert (whole.instances_created, whole.instances_deleted) == (6, 4)
    assert (whole.buffer_insertions, whole.buffer_removals, whole.predicate_evaluations) == (7, 7, 2)
    assert (whole.peak_instances, whole.peak_buffered_events) == (9, 8)
    assert whole.memory_operations == 6 + 4 + 7 + 7
