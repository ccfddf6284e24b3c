"""A ``cepcli.find`` result used more than once (docs/python-api.md): iterated again, the
query runs again over the input, as a DuckDB relation does, and gives the same matches; an
input that cannot be read twice (standard input, a pipe) says so in one line."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pandas as pd
import pytest

import cepcli

QUERY = "PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 5"
CSV = "type,ts,x\nA,1,1\nB,2,5\nA,3,7\nB,4,9\nB,6,0\n"


def _rows(found: cepcli.Matches) -> list[tuple[int, int]]:
    return sorted((m["a"]["_row"], m["b"]["_row"]) for m in found)


@pytest.mark.parametrize("form", ["csv", "frame"])
def test_a_result_iterated_again_runs_the_query_again(tmp_path: Path, form: str) -> None:
    path = tmp_path / "in.csv"
    path.write_text(CSV)
    data = str(path) if form == "csv" else pd.read_csv(path)
    found = cepcli.find(QUERY, data)
    assert "not run yet" in repr(found)
    first = _rows(found)
    assert first == [(0, 1), (0, 3), (2, 3)]
    assert "3 matches" in repr(found)
    assert _rows(found) == first  # a second loop
    table = found.to_pandas()  # after loops
    assert sorted(zip(table["a._row"], table["b._row"], strict=True)) == first
    assert found.to_arrow().num_rows == 3
    assert found.stats.matches == 3  # the last run's counters


def test_a_loop_left_early_does_not_cut_the_next_one(tmp_path: Path) -> None:
    path = tmp_path / "in.csv"
    path.write_text(CSV)
    found = cepcli.find(QUERY, str(path))
    for _ in found:
        break
    assert len(list(found)) == 3


def test_a_pipe_is_read_once_and_says_so(tmp_path: Path) -> None:
    fifo = tmp_path / "events.fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_text(CSV))
    writer.start()
    found = cepcli.find(QUERY, str(fifo))
    assert len(list(found)) == 3
    writer.join()
    with pytest.raises(RuntimeError, match="no regular file: a pipe is read once"):
        list(found)
