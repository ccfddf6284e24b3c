"""A columnar run over Parquet reads only the columns the query uses; the other columns of
the matched rows are read afterwards, row group by row group (``ParquetReader.fetch``). A
user sees the same matches, with the same values in every column, as a run that reads
every column (``--engine tree``, which streams events), whatever the row groups, the
columns' types, missing values and the rows the sample read before the projection."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from cepcli.cli import cli
from cepcli.sources.options import InputOptions
from cepcli.sources.parquet import ParquetReader

ROWS = 400


def _table(seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    ts = np.cumsum(rng.integers(0, 3, ROWS))
    kinds = rng.choice(["A", "B", "C", "D"], ROWS)
    notes = [None if i % 7 == 0 else f"note {i} é" for i in range(ROWS)]
    return pa.table(
        {
            "type": pa.array(kinds.tolist()).dictionary_encode(),
            "ts": pa.array(ts, pa.int64()),
            "x": pa.array(rng.integers(0, 5, ROWS), pa.int64()),
            "note": pa.array(notes, pa.large_string()),
            "code": pa.array([f"c{i % 5}" for i in range(ROWS)]).dictionary_encode(),
            "price": pa.array(
                [Decimal(i) / 100 if i % 11 else None for i in range(ROWS)], pa.decimal128(9, 2)
            ),
            "when": pa.array(
                [dt.datetime(2024, 1, 1) + dt.timedelta(minutes=int(i)) for i in range(ROWS)],
                pa.timestamp("ms"),
            ),
            "big": pa.array([(-(2**63) if i % 2 else 2**63 - 1) for i in range(ROWS)], pa.int64()),
            "tags": pa.array([[i, i + 1] if i % 3 else None for i in range(ROWS)], pa.list_(pa.int64())),
        }
    )


def _run(path: Path, query: str, *extra: str) -> list[dict[str, object]]:
    result = CliRunner().invoke(
        cli,
        ["run", "-e", query, "-i", str(path), "--type-col", "type", "--time-col", "ts", "--time-unit", "s"]
        + ["--format", "jsonl", "-q", *extra],
    )
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


@pytest.mark.parametrize("group_rows", [1, 37, 1000])
@pytest.mark.parametrize(
    "query",
    [
        "PATTERN SEQ(A a, B b, C c) WITHIN 4",
        "PATTERN SEQ(A a, NOT D d, C c) WHERE a.x < c.x WITHIN 6",
        "PATTERN AND(A a, B b) WHERE a.x = b.x WITHIN 3",
    ],
)
def test_matched_rows_show_every_column_as_a_full_read(tmp_path: Path, group_rows: int, query: str) -> None:
    path = tmp_path / "t.parquet"
    pq.write_table(_table(7), path, row_group_size=group_rows)
    columnar = _run(path, query, "--engine", "columnar", "--chunk-rows", "50")
    streamed = _run(path, query, "--engine", "tree")
    assert columnar, "the case has matches"
    assert sorted(map(json.dumps, columnar)) == sorted(map(json.dumps, streamed))
    some = next(iter(columnar[0].values()))
    assert isinstance(some, dict) and {"note", "code", "price", "when", "big", "tags"} <= some.keys()


def test_fetch_reads_the_left_away_columns_of_any_rows(tmp_path: Path) -> None:
    """The reader's own contract: after ``project``, the batches hold nulls where the columns
    were left away (text and nested ones: those of a fixed width are read with the rest,
    cheap to decode and dear to read again), and ``fetch`` gives their values for row ids in
    any order, across row groups, with the row ids of a split that starts later in the file."""
    table = _table(3)
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, row_group_size=64)
    reader = ParquetReader(InputOptions(path=str(path), chunk_rows=10))
    batches = reader.batches()
    first = next(batches)  # read before the projection: every column
    assert first.columns[3].null_count < len(first)
    away = reader.project({"type", "ts", "x"})
    assert away == ["note", "code", "tags"]
    rest = list(batches)
    assert all(b.columns[3].null_count == len(b) for b in rest[7:])  # the next row groups
    rows = np.array([399, 0, 65, 64, 63, 200, 65], dtype=np.int64)
    fetched = reader.fetch(rows)
    for name, values in zip(away, fetched, strict=True):
        expected = table.column(name).take(pa.array(rows)).to_pylist()
        assert values.to_pylist() == expected, name
    reader.close()

    split = ParquetReader(InputOptions(path=str(path), split=(128, 320, 1000)))  # rows 128:320, ids from 1000
    list(split.batches())
    assert split.project({"type", "ts"}) == ["note", "code", "tags"]  # (x, an integer, is read)
    got = split.fetch(np.array([1000 + 63, 1000, 1000 + 150], dtype=np.int64))
    expected = table.column("note").take(pa.array([128 + 63, 128, 128 + 150])).to_pylist()
    assert got[0].to_pylist() == expected
    split.close()


def test_the_row_groups_read_ahead_come_in_order_and_stop_with_the_run(tmp_path: Path) -> None:
    """After ``project`` a thread reads the next row groups: the batches hold the file's
    rows in order, whole, their type column a dictionary of its text (looked up once per
    distinct type); a run that stops early (``--max-matches``) leaves no thread behind."""
    import threading

    table = _table(5)
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, row_group_size=16)
    reader = ParquetReader(InputOptions(path=str(path), chunk_rows=7))
    batches = reader.batches()
    read = [next(batches)]
    reader.project({"type", "ts", "x"})
    read += list(batches)
    assert np.concatenate([b.rows for b in read]).tolist() == list(range(ROWS))
    names = table.column_names
    types = pa.chunked_array([b.columns[names.index("type")] for b in read])
    assert pa.types.is_dictionary(types.type)
    assert types.cast(pa.string()).to_pylist() == table.column("type").to_pylist()
    xs = pa.chunked_array([b.columns[names.index("x")] for b in read]).to_pylist()
    assert xs == table.column("x").to_pylist()
    reader.close()

    early = ParquetReader(InputOptions(path=str(path), chunk_rows=7))
    batches = early.batches()
    next(batches)
    early.project({"type", "ts"})
    for _ in range(5):  # into the groups the thread reads
        next(batches)
    assert any(t.name == "cepcli-parquet" for t in threading.enumerate())
    batches.close()
    assert not any(t.name == "cepcli-parquet" for t in threading.enumerate())
    early.close()
