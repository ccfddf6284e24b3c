"""Many queries over one reading of the input (``cepcli.run``): each query's matches are
those it finds alone (the oracle's), whatever engine, on a file or a pipe; each match says
its query; the input options must agree."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cepcli
from cepcli.cli import cli
from cepcli.events import Kind
from cepcli.prepare import RunOptions, compile_text
from cepcli.run import Run
from cepcli.sources.options import InputOptions
from tests.oracle import MatchKey, oracle
from tests.strategies import examples, patterns

ENGINES = ("adaptive", "eager", "chain", "tree", "columnar")
SCHEMA = (("x", Kind.INT), ("y", Kind.INT), ("g", Kind.STR))  # a column may have no value in a stream


def _keys(many: Run) -> dict[str, set[MatchKey]]:
    found: dict[str, set[MatchKey]] = {name: set() for name in many.names}
    for name, match in many.matches():
        found[name].add(
            frozenset(
                (v, tuple(e.row for e in (b if isinstance(b, tuple) else (b,)))) for v, b in match.bindings
            )
        )
    return found


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    example=examples(),
    more=st.lists(patterns(time_form="int"), min_size=1, max_size=2),
    engine=st.sampled_from(ENGINES),
)
def test_each_query_finds_what_it_finds_alone(example, more, engine: str) -> None:  # type: ignore[no-untyped-def]
    texts = [example.query, *(p.text for p in more)]
    want = {f"q{i}": oracle(text, example.csv) for i, text in enumerate(texts, 1)}
    for live in (False, True):  # a file (the columnar engine where it applies), and a pipe
        queries = [(f"q{i}", compile_text(text)) for i, text in enumerate(texts, 1)]
        many = Run(
            dict(queries),
            InputOptions("-", chunk_rows=5, schema=SCHEMA),  # (the kinds given, as in test_properties)
            RunOptions(engine),
            stdin=io.BytesIO(example.csv.encode()),
        )
        if live:
            many.source.reader.streaming = True  # type: ignore[attr-defined]
        assert _keys(many) == want


def _write(tmp_path: Path) -> tuple[Path, Path]:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "up.sase").write_text("PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 10\n")
    (rules / "bc.sase").write_text("PATTERN SEQ(B b, C c) WITHIN 3\n")
    data = tmp_path / "in.csv"
    data.write_text("ts,type,x\n1,A,1\n2,B,5\n3,C,0\n4,B,7\n5,B,2\n")
    return rules, data


def test_a_directory_of_queries_says_each_match_s_query(tmp_path: Path) -> None:
    rules, data = _write(tmp_path)
    stats = tmp_path / "stats.json"
    result = CliRunner().invoke(
        cli, ["run", str(rules), "-i", str(data), "--format", "jsonl", "-q", "--stats-json", str(stats)]
    )
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert sorted((m["query"], m[next(k for k in m if k != "query")]["_row"]) for m in lines) == [
        ("bc", 1),
        ("up", 0),
        ("up", 0),
        ("up", 0),
    ]
    alone = CliRunner().invoke(
        cli, ["run", str(rules / "up.sase"), "-i", str(data), "--format", "jsonl", "-q"]
    )
    assert [json.loads(x) for x in alone.stdout.splitlines()] == [
        {k: v for k, v in m.items() if k != "query"} for m in lines if m["query"] == "up"
    ]
    report = json.loads(stats.read_text())
    assert report["matches"] == 4 and {q: s["matches"] for q, s in report["queries"].items()} == {
        "bc": 1,
        "up": 3,
    }
    csv = CliRunner().invoke(
        cli, ["run", str(rules / "bc.sase"), str(rules / "up.sase"), "-i", str(data), "--format", "csv", "-q"]
    )
    header, *rows = csv.stdout.splitlines()
    assert header.startswith("query,b._row,b.ts,b.type,b.x,c._row,") and header.endswith(",a.x")
    assert rows[0].startswith("bc,1,2,B,5,2,3,C,0,,,,") and all(r.startswith("up,") for r in rows[1:])


def test_inline_queries_are_e1_e2(tmp_path: Path) -> None:
    _, data = _write(tmp_path)
    result = CliRunner().invoke(
        cli,
        [
            "run",
            "-e",
            "PATTERN SEQ(A a, B b) WITHIN 1",
            "-e",
            "PATTERN SEQ(B a, B b) WITHIN 2",
            "-i",
            str(data),
            "--format",
            "jsonl",
            "-q",
        ],
    )
    assert result.exit_code == 0, result.output
    assert [json.loads(x)["query"] for x in result.stdout.splitlines()] == ["e1", "e2", "e2"]


def test_stats_every_records_each_query_s_counters(tmp_path: Path) -> None:
    """``--stats-every N`` with several queries: each query's counters every N of its own
    relevant events (``queries.NAME.series``), and the same matches as without it."""
    rules, data = _write(tmp_path)
    stats = tmp_path / "stats.json"
    base = ["run", str(rules), "-i", str(data), "--format", "jsonl", "-q"]
    plain = CliRunner().invoke(cli, base)
    every = CliRunner().invoke(cli, [*base, "--stats-every", "1", "--stats-json", str(stats)])
    assert plain.exit_code == every.exit_code == 0, every.output
    assert sorted(every.stdout.splitlines()) == sorted(plain.stdout.splitlines())
    queries = json.loads(stats.read_text())["queries"]
    for name, part in queries.items():
        series = part["series"]
        assert [s["relevant_events"] for s in series] == list(range(1, part["relevant_events"] + 1)), name
        assert series[-1]["matches"] == part["matches"], name
    assert queries["up"]["relevant_events"] == 4 and queries["bc"]["relevant_events"] == 4  # A/B, B/C rows


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "the queries must read the input alike: one and two differ in time_col"),
        (["--order", "a,b"], "--order names the variables of one query: not with several queries"),
    ],
)
def test_what_several_queries_refuse(tmp_path: Path, extra: list[str], message: str) -> None:
    _, data = _write(tmp_path)
    (tmp_path / "one.sase").write_text("PATTERN SEQ(A a, B b) WITHIN 1\n")
    (tmp_path / "two.sase").write_text(
        f"FROM '{data}' WITH (time_col = 'x') PATTERN SEQ(A a, B b) WITHIN 1\n"
    )
    second = "two.sase" if not extra else "one.sase"
    if extra:
        (tmp_path / "other").mkdir()
        (tmp_path / "other" / "two.sase").write_text("PATTERN SEQ(B a, C b) WITHIN 1\n")
        second = "other/two.sase"
    result = CliRunner().invoke(
        cli, ["run", str(tmp_path / "one.sase"), str(tmp_path / second), "-i", str(data), "-q", *extra]
    )
    assert result.exit_code == 2 and message in result.stderr, result.output


def test_two_files_of_one_name_are_refused(tmp_path: Path) -> None:
    _, data = _write(tmp_path)
    for d in ("x", "y"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "q.sase").write_text("PATTERN SEQ(A a, B b) WITHIN 1\n")
    result = CliRunner().invoke(
        cli, ["run", str(tmp_path / "x" / "q.sase"), str(tmp_path / "y" / "q.sase"), "-i", str(data), "-q"]
    )
    assert result.exit_code == 2 and "two query files are named 'q'" in result.stderr


def test_find_takes_a_list_or_a_dict(tmp_path: Path) -> None:
    _, data = _write(tmp_path)
    texts = {"up": "PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 10", "bc": "PATTERN SEQ(B b, C c) WITHIN 3"}
    by_dict = sorted((m["query"], json.dumps(m, sort_keys=True)) for m in cepcli.find(texts, data))
    by_list = sorted(
        (m["query"], json.dumps(m, sort_keys=True)) for m in cepcli.find(list(texts.values()), data)
    )
    assert [q for q, _ in by_dict] == ["bc", "up", "up", "up"] and [q for q, _ in by_list] == [
        "q1",
        "q1",
        "q1",
        "q2",
    ]
    frame = cepcli.find(texts, data).to_pandas()
    assert sorted(frame["query"]) == ["bc", "up", "up", "up"]
    assert {"query", "a._row", "b._row", "c._row"} <= set(frame.columns)


@pytest.mark.slow
@pytest.mark.spark
def test_several_queries_under_spark_print_what_a_local_run_prints(spark: object, tmp_path: Path) -> None:
    """``--spark`` reads the input once for every query, and evaluates each query's shards;
    the driver writes their matches as the local one-pass run does (each with its query;
    csv's header first, the lines in any order), or the executors write them to
    ``DIR/query=NAME/``. (In-process, on the tests' session: the CLI's own process and JVM
    are ``test_spark.py``'s.)"""
    rules, data = _write(tmp_path)
    for fmt in ("jsonl", "csv"):
        args = ["run", str(rules), "-i", str(data), "--format", fmt, "-q"]
        local = CliRunner().invoke(cli, args)
        remote = CliRunner().invoke(cli, [*args, "--spark", "--master", "local[2]"])
        assert local.exit_code == 0 and remote.exit_code == 0, remote.output
        want, got = local.stdout.splitlines(), remote.stdout.splitlines()
        assert got[:1] == want[:1] if fmt == "csv" else True
        assert sorted(got) == sorted(want) and len(want) >= 4, fmt
        if fmt == "jsonl":  # the executors write each query's lines to DIR/query=NAME/, read once
            out, stats = tmp_path / "out", tmp_path / "stats.json"
            written = CliRunner().invoke(
                cli, [*args, "--spark", "--master", "local[2]", "-o", str(out), "--stats-json", str(stats)]
            )
            assert written.exit_code == 0, written.output
            parts = sorted(p for p in out.glob("query=*/part-*"))
            lines = [line for p in parts for line in p.read_text().splitlines()]
            assert sorted(lines) == sorted(want)
            for part in parts:  # each directory holds its own query's matches
                query = part.parent.name.removeprefix("query=")
                assert all(json.loads(line)["query"] == query for line in part.read_text().splitlines())
            counters = json.loads(stats.read_text())
            assert counters["spark_reads"] == 1 and counters["matches"] == len(want)
            assert sum(q["matches"] for q in counters["queries"].values()) == len(want)
