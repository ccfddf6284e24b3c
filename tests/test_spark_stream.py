"""``cepcli.spark.find`` over a streaming DataFrame, without a Spark query: the stages of
``cepcli.spark.streams`` driven in-process, the stateful processor under PySpark's
``TwsTester`` (its state and event-time timers in memory, the watermark set as Spark sets
it after each micro-batch).

* Random queries and streams cut into random micro-batches give exactly the oracle's
  matches, each once, with the stream's end played as a watermark past every window.
* A match waits for what decides it: a trailing negation's until the watermark passes its
  window; without one, it leaves with its last event.
* A late row fails (the local message) or is counted and handed on (``skip``).
* A key that goes quiet keeps no state once the watermark is past its window.

The real Spark streams (files arriving, a checkpoint, restarts) are in
``tests/test_spark_stream_query.py``."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pcsv
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from cepcli.errors import CepError, InputError, QueryError
from cepcli.events import Kind
from cepcli.spark.arguments import Arguments
from cepcli.spark.stream_group import STATE_SCHEMA, from_ipc, ipc
from cepcli.spark.streams import StreamPlan, decoder, plan_stream, processor
from tests import oracle as o
from tests.harness import run_engine
from tests.strategies import examples, oracle_cost

pytest.importorskip("pyspark.sql.streaming.tws_tester")
from pyspark.sql.streaming.tws_tester import TwsTester  # noqa: E402

RID = "rid"  # each row's place in the CSV, carried as a column to name the oracle's rows
FAR = 1 << 62  # the event time the tester's late filter sees: none (the groups judge lateness)


def _arrow(csv_text: str, time_type: pa.DataType) -> pa.Table:
    """The CSV as a stream's Spark columns would hold it: text, the time as ``time_type``,
    and the row's place (``RID``)."""
    table = pcsv.read_csv(
        io.BytesIO(csv_text.encode()),
        convert_options=pcsv.ConvertOptions(
            column_types={"ts": pa.string(), "type": pa.string(), "x": pa.string(), "y": pa.string(),
                          "g": pa.string()},
            strings_can_be_null=True,  # an empty cell is missing, as Spark's CSV reader has it
            null_values=[""],
        ),
    )  # fmt: skip
    if time_type != pa.string():
        table = table.set_column(0, "ts", table.column("ts").cast(time_type))
    return table.append_column(RID, pa.array(range(table.num_rows), pa.int64()))


@dataclass
class Stream:
    """A streaming query played in-process: micro-batches in, the groups under the tester."""

    plan: StreamPlan
    tester: TwsTester = field(init=False)
    matches: list[pa.Table] = field(default_factory=list)
    late: list[pa.Table] = field(default_factory=list)
    latest_ms: int | None = None
    watermark_ms: int = 0

    def __post_init__(self) -> None:
        self.tester = TwsTester(
            processor(self.plan.job), timeMode="EventTime", eventTimeExtractor=lambda _: FAR
        )

    def batch(self, rows: pa.Table) -> None:
        """One micro-batch: the reading stage, each group's call, then the watermark Spark
        would set after it (its timers fire)."""
        carried = pa.Table.from_batches(list(self.plan.reader(iter(rows.to_batches()))), self.plan.carried)
        groups: dict[Any, list[bytes]] = {}
        key_names = self.plan.carried.names[: max(1, len(self.plan.keys))]
        for row in carried.to_pylist():
            if row["__cepcli_kind"] not in ("rows", "tick"):
                continue
            wm = row["__cepcli_wm"]  # (Spark's watermark follows it, for every row read)
            ms = int(wm.timestamp() * 1000)
            self.latest_ms = ms if self.latest_ms is None else max(self.latest_ms, ms)
            if row["__cepcli_kind"] == "rows":
                key = tuple(row[k] for k in key_names)
                groups.setdefault(key[0] if len(key) == 1 else key, []).append(row["__cepcli_rows"])
        for key, values in groups.items():
            frame = pd.DataFrame({key_names[0]: [key] * len(values), "__cepcli_rows": values})
            self._out(self.tester.testInPandas(key, frame))
        if self.latest_ms is not None:
            self.advance(self.latest_ms - self.plan.job.delay // 1_000_000)

    def advance(self, watermark_ms: int) -> None:
        if watermark_ms > self.watermark_ms:
            self.watermark_ms = watermark_ms
            self._out(self.tester.setWatermark(watermark_ms))

    def _out(self, frame: pd.DataFrame) -> None:
        if frame is None or not len(frame):
            return
        batch = pa.RecordBatch.from_pandas(frame, preserve_index=False)
        for row in frame.itertuples(index=False):
            if row.kind == "late":
                self.late.append(from_ipc(row.payload))
        matches = batch.filter(pa.compute.equal(batch.column(0), "match"))
        decoded = decoder(self.plan.job)(iter([matches]))
        self.matches.extend(pa.Table.from_batches([b]) for b in decoded if b.num_rows)

    def keys(self) -> list[o.MatchKey]:
        """Each match reported, as the oracle names it (variable, the rows' places)."""
        out = []
        for table in self.matches:
            for row in table.to_pylist():
                key = []
                for name, value in row.items():
                    if value is None:
                        continue  # (a variable another OR branch binds)
                    events = value if isinstance(value, list) else [value]
                    key.append((name, tuple(e[RID] for e in events)))
                out.append(frozenset(key))
        return out


def _plan(query: str, table: pa.Table, delay: str | None = None, **given: Any) -> StreamPlan:
    given.setdefault("schema", {"x": "int", "y": "int"})  # (Spark's CSV columns are text)
    return plan_stream(Arguments(query, None, **given), delay, table.schema)


def _played(query: str, table: pa.Table, cuts: list[int], delay: str | None = None, **given: Any) -> Stream:
    stream = Stream(_plan(query, table, delay, **given))
    edges = [0, *sorted(set(cuts)), table.num_rows]
    for start, stop in zip(edges, edges[1:], strict=False):
        if stop > start:
            stream.batch(table.slice(start, stop - start))
    return stream


def _ended(stream: Stream, window_ms: int) -> Stream:
    """The stream's end: the watermark past every window (a match left is decided)."""
    if stream.latest_ms is not None:  # (None: no row any variable can use)
        stream.advance(stream.latest_ms + 4 * window_ms + 1000)
    return stream


# --- every match, once, as the oracle ------------------------------------------------------------


TIME_TYPES = {"int": pa.int64(), "epoch_ms": pa.int64(), "decimal": pa.string(), "iso": pa.string()}
TICK = {"int": "s", "epoch_ms": "300 ms", "decimal": "300 ms", "iso": "300 ms"}


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    example=st.sampled_from([None, "neg", "strategy"]).flatmap(
        lambda focus: examples(focus=focus, time_forms=tuple(TIME_TYPES))
    ),
    cuts=st.lists(st.integers(0, 10), max_size=4),
    delay=st.sampled_from([0, 0, 1, 2]),
    data=st.data(),
)
def test_a_stream_cut_into_micro_batches_gives_the_oracle_s_matches_once(
    example: Any, cuts: list[int], delay: int, data: st.DataObject
) -> None:
    """Rows come in micro-batches (and, with a delay of ``delay`` ticks, out of time order
    by up to it: equal times keep their order), and each match leaves once."""
    assume(oracle_cost(example.pattern, example.csv) <= 4000)
    from cepcli.automata.columnar import evaluates
    from cepcli.prepare import compile_text

    unit = o.UNITS[example.time_unit]
    try:
        compiled = compile_text(example.query, "<query>", unit)
    except QueryError:  # (a strategy's list the generator drew that constrains nothing)
        assume(False)
    assume(evaluates(compiled.pattern))
    table = _arrow(example.csv, TIME_TYPES[example.time_form])
    given: dict[str, Any] = {"time_unit": example.time_unit}
    if example.time_form == "iso":
        given = {}
    elif example.time_form == "decimal":
        given["schema"] = {"x": "int", "y": "int", "ts": "decimal"}
    late = None
    if delay:
        times = o.read_rows(example.csv, time_unit=example.time_unit)
        ticks = sorted({r["_ts"] for r in times})
        step = 10**9 if TICK[example.time_form] == "s" else 300 * 10**6  # (a tick, in ns)
        jitter = {t: data.draw(st.integers(0, delay)) * step for t in ticks}
        arrival = sorted(range(table.num_rows), key=lambda i: times[i]["_ts"] + jitter[times[i]["_ts"]])
        table = table.take(arrival)
        late = f"{delay} s" if TICK[example.time_form] == "s" else f"{delay * 300} ms"
    stream = _played(example.query, table, cuts, late, **given)
    _ended(stream, compiled.pattern.window // 1_000_000)
    found = stream.keys()
    assert len(found) == len(set(found)), "a match reported twice"
    assert set(found) == o.oracle(example.query, example.csv, time_unit=example.time_unit)
    assert not stream.late


CSV = """ts,type,x,y,g
1,A,1,,p
2,B,2,,p
3,A,3,,q
4,B,4,,q
5,C,5,,p
9,A,6,,p
10,B,7,,p
"""


def test_a_match_leaves_with_its_last_event() -> None:
    table = _arrow(CSV, pa.int64())
    query = "PATTERN SEQ(A a, B b) WHERE [g] WITHIN 3 seconds"
    stream = Stream(_plan(query, table))
    stream.batch(table.slice(0, 2))  # A@1 B@2, key p: decided at once
    assert sorted(stream.keys()) == [frozenset({("a", (0,)), ("b", (1,))})]
    stream.batch(table.slice(2, 2))
    assert len(stream.keys()) == 2


def test_a_trailing_negation_s_match_waits_for_the_watermark_past_its_window() -> None:
    table = _arrow(CSV, pa.int64())
    query = "PATTERN SEQ(A a, B b, !C c) WHERE [g] WITHIN 3 seconds"
    stream = Stream(_plan(query, table))
    stream.batch(table.slice(0, 2))  # A@1 B@2 (p): a C until 4 s would undo it
    assert stream.keys() == []
    stream.batch(table.slice(2, 2))  # A@3 B@4 (q): time reaches 4 s, not past 4 s
    assert stream.keys() == []
    stream.batch(table.slice(4, 1))  # C@5 (p): the watermark is 5 s: p's match at 1..2 closed at 4 s
    assert stream.keys() == [frozenset({("a", (0,)), ("b", (1,))})]
    stream.advance(7_001)  # q went quiet: its match (3..4, closes at 6 s) leaves by the timer
    assert sorted(map(sorted, stream.keys())) == [[("a", (0,)), ("b", (1,))], [("a", (2,)), ("b", (3,))]]


def test_a_quiet_key_keeps_no_state_once_the_watermark_is_past_its_window() -> None:
    table = _arrow(CSV, pa.int64())
    query = "PATTERN SEQ(A a, B b) WHERE [g] WITHIN 3 seconds"
    stream = Stream(_plan(query, table))
    stream.batch(table.slice(0, 5))
    assert stream.tester.peekValueState("cepcli", "q") is not None  # q's rows at 3, 4 s
    stream.batch(table.slice(5, 2))  # only p's rows; the watermark moves to 10 s
    assert stream.tester.peekValueState("cepcli", "q") is None  # 4 s + 3 s < 10 s: dropped
    held = stream.tester.peekValueState("cepcli", "p")
    assert held is not None and held[4] >= 10 * 10**9 - 3 * 10**9  # (earliest: within the window)
    assert STATE_SCHEMA.split(", ")[4] == "earliest long"


# --- late rows -----------------------------------------------------------------------------------

LATE = """ts,type,x,y,g
1,A,1,,p
5,B,2,,p
3,B,3,,p
6,B,4,,p
"""


def test_a_late_row_fails_the_query_with_the_local_message() -> None:
    table = _arrow(LATE, pa.int64())
    stream = Stream(_plan("PATTERN SEQ(A a, B b) WITHIN 10 seconds", table))
    stream.batch(table.slice(0, 2))
    with pytest.raises(InputError, match=r"a row at 1970-01-01T00:00:03Z came after the watermark"):
        stream.batch(table.slice(2, 2))


def test_a_late_row_is_skipped_counted_and_handed_on() -> None:
    table = _arrow(LATE, pa.int64())
    stream = Stream(_plan("PATTERN SEQ(A a, B b) WITHIN 10 seconds", table, on_bad_row="skip"))
    stream.batch(table.slice(0, 2))
    stream.batch(table.slice(2, 2))
    assert [t.column(RID).to_pylist() for t in stream.late] == [[2]]  # the row at 3 s, after 5 s
    assert sorted(map(sorted, stream.keys())) == [[("a", (0,)), ("b", (1,))], [("a", (0,)), ("b", (3,))]]


def test_late_rows_come_out_beside_the_matches_when_asked() -> None:
    table = _arrow(LATE, pa.int64())
    stream = Stream(_plan("PATTERN SEQ(A a, B b) WITHIN 10 seconds", table, on_bad_row="skip"))
    stream.batch(table.slice(0, 2))
    stream.batch(table.slice(2, 2))
    carried = pa.RecordBatch.from_pylist(  # (what the groups give: a late row, a match)
        [
            {"kind": "late", "n": 1, "payload": ipc(stream.late[0])},
            {"kind": "match", "n": 1, "payload": ipc(stream.matches[0])},
        ]
    )
    out = pa.Table.from_batches(list(decoder(stream.plan.job, late_rows=True)(iter([carried]))))
    rows = out.to_pylist()
    assert rows[0]["a"] is None and rows[0]["b"] is None
    assert json.loads(rows[0]["late_row"]) == {
        "_row": 2,
        "ts": 3,
        "type": "B",
        "x": 3,
        "y": None,
        "g": "p",
        "rid": 2,
    }
    assert rows[1]["late_row"] is None and rows[1]["a"]["rid"] == 0


def test_rows_within_the_delay_are_taken_in_time_order() -> None:
    table = _arrow(LATE, pa.int64())
    query = "PATTERN SEQ(A a, B b, B c) WITHIN 10 seconds"
    stream = _played(query, table, [2], delay="2 s")
    _ended(stream, 10_000)
    assert not stream.late
    expected = o.oracle(query, LATE)  # (the oracle reads rows in time order)
    assert set(stream.keys()) == expected and len(stream.keys()) == len(expected)


def test_explain_says_how_a_stream_groups_the_pattern() -> None:
    from click.testing import CliRunner

    from cepcli.cli import cli

    keyed = CliRunner().invoke(cli, ["explain", "-e", "PATTERN SEQ(A a, B b) WHERE [g] WITHIN 5 s"])
    assert "in a Spark stream (--stream): a group per [g] key" in keyed.output
    alone = CliRunner().invoke(cli, ["explain", "-e", "PATTERN SEQ(A a, B b) WITHIN 5 s"])
    assert "in a Spark stream (--stream): one group" in alone.output
    contiguous = "PATTERN SEQ(A a, B b) WHERE strict_contiguity { [g] } WITHIN 5 s"
    assert "one group" in CliRunner().invoke(cli, ["explain", "-e", contiguous]).output


@pytest.mark.parametrize(
    "query",
    [
        "PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 4 seconds",
        "PATTERN SEQ(A a, B b) WHERE a.x = b.x AND a.y <= b.y WITHIN 4 seconds",
        "PATTERN SEQ(A a, NOT C n, B b) WHERE n.x > a.x WITHIN 4 seconds",
    ],
)
@pytest.mark.parametrize("on_bad_row", ["skip", "fail"])
def test_int64_edges_markers_and_a_stray_word_are_read_as_a_local_run_reads_them(
    query: str, on_bad_row: str
) -> None:
    """Values at int64's edges stay exact in a stream (2**63 - 1 and 2**63 - 2 differ, as a
    float would not have them), a null marker is missing (it equals nothing), and a stray
    word where a number goes is the local run's bad row: left out under ``skip``, and under
    ``fail`` the stream stops with the local reason, placed in its micro-batch (a stream has
    no row number across it). The stream's matches, cut into micro-batches, are those of
    the local run over the same text."""
    top, bottom = 2**63 - 1, -(2**63)
    rows = [
        (1, "A", top - 1, 0), (2, "B", top, 0), (2, "A", bottom, top), (3, "C", top, 0),
        (4, "B", bottom + 1, top), (5, "A", "NA", 1), (6, "B", 1, 1), (7, "A", top, bottom),
        (7, "B", "oops", 2), (8, "B", top, bottom), (9, "A", bottom, 5), (10, "B", bottom, 5),
    ]  # fmt: skip
    text = "ts,type,x,y,g\n" + "".join(f"{t},{k},{x},{y},p\n" for t, k, x, y in rows)
    schema = (("x", Kind.INT), ("y", Kind.INT))
    if on_bad_row == "fail":  # the local run's reason; the place as a stream has it
        with pytest.raises(InputError) as local_error:
            run_engine(query, text, "columnar", on_bad_row=on_bad_row, schema=schema)
        with pytest.raises(CepError) as stream_error:
            _played(query, _arrow(text, pa.int64()), [3, 7], on_bad_row=on_bad_row)
        reason = "column 'x' holds 'oops', which is not an integer (int64)"
        assert f"row 8: {reason}" in local_error.value.render()
        said = stream_error.value.render()  # (no row number across a stream: its micro-batch's)
        assert reason in said and said.endswith("partition 0, row 1)"), said
        return
    local, _ = run_engine(query, text, "columnar", on_bad_row=on_bad_row, schema=schema)
    stream = _ended(_played(query, _arrow(text, pa.int64()), [3, 7], on_bad_row=on_bad_row), 4000)
    found = stream.keys()
    assert len(found) == len(set(found)) and set(found) == local and local
