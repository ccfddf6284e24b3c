"""``CEPCLI_THREADS=1``: a run on one core (no thread of its own reads or evaluates ahead,
pyarrow's pools at one thread), with the same matches as on every core; the benchmarks
measure what the second core gives with it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import cepcli
from cepcli.sources import ahead

QUERY = "PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 2 seconds"


@pytest.fixture
def parquet(tmp_path: Path) -> Path:
    n = 3000
    table = pa.table(
        {
            "ts": pa.array([i // 3 for i in range(n)], pa.int64()),
            "type": pa.array(["ABC"[i * 7 % 3] for i in range(n)]),
            "x": pa.array([i * 13 % 17 for i in range(n)], pa.int64()),
        }
    )
    path = tmp_path / "events.parquet"
    pq.write_table(table, path, row_group_size=500)  # (several row groups: read ahead)
    return path


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    names: list[str] = []
    start = threading.Thread.start

    def recorded(self: threading.Thread) -> None:
        names.append(self.name)
        start(self)

    monkeypatch.setattr(threading.Thread, "start", recorded)
    yield names
    ahead.threads.cache_clear()


def _rows(path: Path) -> list[tuple[int, int]]:
    return [(m["a"]["_row"], m["b"]["_row"]) for m in cepcli.find(QUERY, str(path))]


def test_one_thread_starts_none_of_its_own_and_finds_the_same(
    parquet: Path, started: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ahead.threads.cache_clear()
    every_core = _rows(parquet)
    assert any(n.startswith("cepcli-") for n in started)  # (reading and evaluating ahead)
    started.clear()
    monkeypatch.setenv("CEPCLI_THREADS", "1")
    ahead.threads.cache_clear()
    one_core = _rows(parquet)
    assert not [n for n in started if n.startswith("cepcli-")]
    assert one_core == every_core and len(one_core) > 100
    assert pa.cpu_count() == 1
    pa.set_cpu_count(2)
    pa.set_io_thread_count(8)


def test_a_large_samples_kinds_are_read_side_by_side_and_come_out_as_one_by_one(
    tmp_path: Path, started: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CSV sample of many rows has its columns' kinds read on the run's threads (a
    thread of its own starts), each column the kind it has alone; on one core, none."""
    n = 5000
    lines = ["type,ts,i,f,b,t,s"] + [
        f"{'AB'[k % 2]},{k},{k},{k / 4},{'true' if k % 3 else 'false'},2024-01-01T00:00:{k % 60:02d},w{k % 9}"
        for k in range(n)
    ]
    data = tmp_path / "wide.csv"
    data.write_text("\n".join(lines) + "\n")
    query = "PATTERN SEQ(A a, B b) WHERE a.i < b.i WITHIN 1"

    def kinds() -> dict[str, pa.DataType]:
        found = cepcli.find(query, str(data), type_col="type", time_col="ts").to_arrow()
        event = found.schema.field("a").type
        return {event.field(k).name: event.field(k).type for k in range(event.num_fields)}

    ahead.threads.cache_clear()
    every_core = kinds()
    assert "cepcli-spread" in started
    started.clear()
    monkeypatch.setenv("CEPCLI_THREADS", "1")
    ahead.threads.cache_clear()
    assert kinds() == every_core and "cepcli-spread" not in started
    assert [every_core[c] for c in "ifbs"] == [pa.int64(), pa.float64(), pa.bool_(), pa.string()]
    assert pa.types.is_timestamp(every_core["t"])
    pa.set_cpu_count(2)
    pa.set_io_thread_count(8)


def test_spread_keeps_the_order_and_raises_the_first_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CEPCLI_THREADS", "2")
    ahead.threads.cache_clear()
    assert ahead.spread(lambda i: i * i, list(range(50))) == [i * i for i in range(50)]

    def fails(i: int) -> int:
        if i == 7:
            raise ValueError("seven")
        return i

    with pytest.raises(ValueError, match="seven"):
        ahead.spread(fails, list(range(20)))
    ahead.threads.cache_clear()
