"""``cepcli.spark.find``: a PySpark DataFrame in, a DataFrame of matches out, with the local
result: the case table for every engine (against ``cepcli.find`` with ``sort=True`` on the
same rows), the typed result schema in Spark's types, DataFrames Spark read from Parquet and
JSON-lines files, row ids across partitions and by ``order_col``, a lazy result, ``show``,
and bad rows under ``fail`` and ``skip``.

One Spark session (``local[2]``) serves the module."""

from __future__ import annotations

import datetime as dt
import io
import json
import random
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

import cepcli
from cepcli.engines import DEFAULT_ENGINE, ENGINES
from cepcli.errors import CepError, InputError, UsageError
from tests.cases import CASES

pytestmark = [pytest.mark.slow, pytest.mark.spark]


def _families(most: int = 3) -> list[str]:
    """Cases for the default engine: of each family of the table (the first word of their
    names: seq, or, neg, kleene, next, strict, ...), its first, middle and last case, then
    every third of those (the whole table takes six times as long, a Spark job of about a
    second a case; the Spark side of a case does not depend on which operator it tests, and
    ``tests/test_spark.py`` holds the shards ``find`` shares to the local run on its own
    cases)."""
    families: dict[str, list[str]] = {}
    for case in CASES:
        families.setdefault(case.name.split("_")[0], []).append(case.name)
    picked = []
    for names in families.values():
        picked += names if len(names) <= most else [names[0], names[len(names) // 2], names[-1]]
    return picked[::3]


# every engine but the default on a few cases: a Kleene variable, a negation with a
# condition, an OR
ENGINE_CASES = [
    "kleene_plus_all_seven_subsets",
    "neg_with_condition",
    "or_two_branches_same_match_reported_once",
]
OTHER_ENGINES = [name for name in ENGINES if name != DEFAULT_ENGINE]


def _table(text: str, type_col: str = "type") -> pa.Table:
    """A case's CSV as a typed Arrow table (an empty cell missing, as in a CSV)."""
    options = pcsv.ConvertOptions(column_types={type_col: pa.string()}, strings_can_be_null=True)
    return pcsv.read_csv(io.BytesIO(text.encode()), convert_options=options)


def _frame(spark: Any, table: pa.Table, parts: int = 3) -> Any:
    """The rows as a Spark DataFrame of several partitions, in the table's order (the union
    of consecutive slices, each one or more partitions), so that row ids cross partitions."""
    n = table.num_rows
    cuts = sorted({0, n, *(n * k // parts for k in range(1, parts))})
    frames = [spark.createDataFrame(table.slice(a, b - a)) for a, b in zip(cuts, cuts[1:], strict=False)]
    frame = frames[0]
    for other in frames[1:]:
        frame = frame.union(other)
    return frame


def _keys(table: pa.Table) -> set[frozenset[tuple[str, tuple[int, ...]]]]:
    """Each match as its variables' rows (a Kleene variable's in order; unbound left out)."""
    out = set()
    for row in table.to_pylist():
        out.add(
            frozenset(
                (v, tuple(e["_row"] for e in value) if isinstance(value, list) else (value["_row"],))
                for v, value in row.items()
                if value is not None
            )
        )
    return out


def _typed_rows(table: pa.Table) -> list[str]:
    return sorted(json.dumps(r, default=str, sort_keys=True) for r in table.to_pylist())


def _same_typed(got: pa.Table, local: pa.Table) -> None:
    """The same matches with the same typed values: the local table in Spark's types (times
    in microseconds, decimals of 38 digits) is the Spark result, row for row."""
    assert got.column_names == local.column_names
    assert _keys(got) == _keys(local)
    assert _typed_rows(got) == _typed_rows(local.cast(got.schema))


def _plain(value: Any) -> Any:
    """A result value in a form both sides share whatever their field order and units."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).isoformat()
    if isinstance(value, dt.timedelta):
        return value // dt.timedelta(microseconds=1)
    if isinstance(value, Decimal):
        return str(value.normalize())
    if isinstance(value, float):
        return repr(value)
    return value


def _plain_rows(table: pa.Table) -> list[str]:
    return sorted(json.dumps(_plain(r), sort_keys=True) for r in table.to_pylist())


# --- 1. the case table ----------------------------------------------------------------------


def _check_case(spark: Any, name: str, engine: str) -> None:
    from cepcli.spark import find

    case = next(c for c in CASES if c.name == name)
    table = _table(case.csv, case.type_col)
    local = cepcli.find(case.query, table, type_col=case.type_col, engine=engine, sort=True).to_arrow()
    assert _keys(local) == case.expected  # (the table means what the case's CSV means)
    got = find(case.query, _frame(spark, table), type_col=case.type_col, engine=engine).toArrow()
    _same_typed(got, local)


@pytest.mark.parametrize("name", _families())
def test_the_case_table_with_the_default_engine(spark: Any, name: str) -> None:
    _check_case(spark, name, DEFAULT_ENGINE)


@pytest.mark.parametrize("engine", OTHER_ENGINES)
@pytest.mark.parametrize("name", ENGINE_CASES)
def test_every_engine(spark: Any, name: str, engine: str) -> None:
    _check_case(spark, name, engine)


# --- 2. the typed result schema ------------------------------------------------------------

SECOND = 1_000_000  # microseconds
DECIMALS = ("0.1000", "1234567890123456.1234", "", "2.0000", "-7.5000")


def _typed_table() -> pa.Table:
    us = pa.timestamp("us", tz="UTC")
    return pa.table(
        {
            "ts": pa.array([0, SECOND, 2 * SECOND, 3 * SECOND, 4 * SECOND], us),
            "type": ["A", "B", "B", "C", "D"],
            "x": pa.array([-(2**63), 2, None, 2**63 - 1, 5], pa.int64()),
            "f": pa.array([0.1, 1.25, None, -3.0, 2.5], pa.float64()),
            "p": pa.array([Decimal(v) if v else None for v in DECIMALS], pa.decimal128(20, 4)),
            "note": ["n1", "n2", None, "", "n5"],
            "when": pa.array([0, None, 86_400 * SECOND + 1, 2 * 86_400 * SECOND, 5], us),
            "wait": pa.array([1, None, SECOND, 60 * SECOND, 0], pa.duration("us")),
        }
    )


def test_the_typed_result_schema_in_sparks_types(spark: Any) -> None:
    """int64 extremes, floats, exact decimals (a native DecimalType column, at its scale),
    text, times as UTC instants, durations, a Kleene variable as an array of structs, and
    the variable an OR branch does not bind null."""
    from pyspark.sql import types as T

    from cepcli.spark import find

    table = _typed_table()
    query = "PATTERN SEQ(A a, B+ b[], OR(C c, D d)) WITHIN 10 s"
    result = find(query, _frame(spark, table))
    event = T.StructType(
        [
            T.StructField("_row", T.LongType()),
            T.StructField("ts", T.TimestampType()),
            T.StructField("type", T.StringType()),
            T.StructField("x", T.LongType()),
            T.StructField("f", T.DoubleType()),
            T.StructField("p", T.DecimalType(38, 4)),
            T.StructField("note", T.StringType()),
            T.StructField("when", T.TimestampType()),
            T.StructField("wait", T.DayTimeIntervalType(0, 3)),
        ]
    )

    def shape(data_type: Any) -> Any:  # the types, nullability left aside
        if isinstance(data_type, T.ArrayType):
            return ("array", shape(data_type.elementType))
        if isinstance(data_type, T.StructType):
            return [(f.name, shape(f.dataType)) for f in data_type.fields]
        return data_type

    assert shape(result.schema) == [
        ("a", shape(event)),
        ("b", ("array", shape(event))),
        ("c", shape(event)),
        ("d", shape(event)),
    ]
    got = result.toArrow()
    local = cepcli.find(query, table, sort=True).to_arrow()
    _same_typed(got, local)
    rows = got.to_pylist()
    assert len(rows) == 6  # a, one of the three subsets of the Bs, then c or d
    assert sum(r["c"] is None for r in rows) == sum(r["d"] is None for r in rows) == 3
    a = rows[0]["a"]
    assert (a["x"], a["p"], a["f"]) == (-(2**63), Decimal("0.1000"), 0.1)
    c = next(r["c"] for r in rows if r["c"] is not None)
    assert (c["x"], c["note"], c["wait"]) == (2**63 - 1, "", dt.timedelta(minutes=1))
    assert c["when"] == dt.datetime(1970, 1, 3, tzinfo=dt.UTC)
    biggest = next(e for r in rows for e in r["b"] if e["_row"] == 1)
    assert biggest["p"] == Decimal("1234567890123456.1234")


# --- 3. DataFrames Spark read from files ---------------------------------------------------


def _events(rows: int = 90, seed: int = 7) -> list[dict[str, Any]]:
    """Rows out of time order, with equal times, missing values and three kinds of values."""
    pick = random.Random(seed)
    out = []
    for i in range(rows):
        second = pick.randrange(60)
        out.append(
            {
                "ts": f"2024-05-01T10:{second // 60:02d}:{second % 60:02d}Z",
                "type": pick.choice("ABCN"),
                "x": pick.choice([None, pick.randrange(-5, 20)]),
                "price": round(pick.uniform(0, 10), 2),
                "name": pick.choice(["p", "q", None]),
                "row_hint": i,
            }
        )
    return out


FILE_QUERIES = [
    "PATTERN SEQ(A a, NOT N n, B b) WHERE a.x < b.x AND [name] WITHIN 5 s",
    "PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].price > b[i-1].price WITHIN 4 s",
]


@pytest.fixture
def small_splits(spark: Any) -> Iterator[None]:
    """Spark cuts a small file into several partitions (each a few hundred bytes)."""
    key = "spark.sql.files.maxPartitionBytes"
    before = spark.conf.get(key)
    spark.conf.set(key, "600")
    yield
    spark.conf.set(key, before)


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_a_dataframe_spark_read_from_a_file(spark: Any, tmp_path: Path, fmt: str, small_splits: None) -> None:
    """Spark's reader in, the local run on the same file (sorted) out: the same matches and
    values, row ids following the file's order across Spark's partitions."""
    from cepcli.spark import find

    rows = _events()
    if fmt == "parquet":
        path = tmp_path / "in.parquet"
        pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=10)
        frame = spark.read.parquet(str(path))
    else:
        path = tmp_path / "in.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        frame = spark.read.json(str(path))
    assert frame.rdd.getNumPartitions() > 1
    for query in FILE_QUERIES:
        local = cepcli.find(query, path, sort=True).to_arrow()
        assert local.num_rows > 0, query
        got = find(query, frame).toArrow()
        assert _keys(got) == _keys(local), query
        assert _plain_rows(got) == _plain_rows(local), query
        # the row ids are the file's: each event's row_hint is its row
        for match in got.to_pylist():
            for value in match.values():
                for e in value if isinstance(value, list) else [value] if value else []:
                    assert e["row_hint"] == e["_row"]


def test_order_col_numbers_the_rows_in_its_order(spark: Any) -> None:
    """Rows whose DataFrame order is shuffled, numbered by ``order_col``: the local run of
    the rows in that order."""
    from cepcli.spark import find

    rows = _events()
    ordered = pa.Table.from_pylist(rows)
    shuffled = ordered.take(random.Random(1).sample(range(len(rows)), len(rows)))
    query = FILE_QUERIES[0]
    local = cepcli.find(query, ordered, sort=True).to_arrow()
    got = find(query, _frame(spark, shuffled), order_col="row_hint").toArrow()
    assert local.num_rows > 0
    assert _plain_rows(got) == _plain_rows(local)


# --- 4. a lazy result ---------------------------------------------------------------------


def test_the_result_is_lazy(spark: Any) -> None:
    """``find`` runs small jobs of one stage each (the sample, the first reading); the
    evaluation (a shuffle into time shards) runs when the result is used, as often as it is
    used; ``show`` keeps ``_row`` and the columns it names."""
    from pyspark.sql import DataFrame

    from cepcli.spark import find

    case = next(c for c in CASES if c.name == "kleene_plus_all_seven_subsets")
    table = _table(case.csv)
    frame = _frame(spark, table)
    context = spark.sparkContext
    tracker = context.statusTracker()

    def stages(group: str) -> list[int]:
        return [len(tracker.getJobInfo(j).stageIds) for j in tracker.getJobIdsForGroup(group)]

    context.setJobGroup("cepcli-find", "find")
    result = find(case.query, frame, show=["ts"])
    context.setJobGroup("cepcli-count", "count")
    count = result.count()
    again = result.count()
    context.setJobGroup("cepcli-show", "show")
    shown = result.toArrow()
    context.setJobGroup("", "")
    assert isinstance(result, DataFrame)
    assert stages("cepcli-find") and all(n == 1 for n in stages("cepcli-find"))
    assert any(n > 1 for n in stages("cepcli-count"))
    assert count == again == len(case.expected)
    for field in result.schema.fields:
        element = field.dataType.elementType if field.name == "b" else field.dataType
        assert element.fieldNames() == ["_row", "ts"]
    assert _keys(shown) == case.expected


# --- 5. bad rows -------------------------------------------------------------------------------

BAD = "ts,type,x\n0,A,1\n1,B,2\n2,A,oops\n3,B,5\n4,A,0\n,B,9\n6,B,7\n7,A,3\n8,B,8\n9,A,x9\n10,B,12\n"


@pytest.mark.parametrize("on_bad_row", ["fail", "skip"])
def test_bad_rows_fail_or_are_skipped_as_locally(spark: Any, on_bad_row: str) -> None:
    """A value that contradicts its column's kind and a missing time: ``fail`` raises the
    local error naming the first of them when ``find`` is called, ``skip`` gives the local
    skip run's matches."""
    from cepcli.spark import find

    table = _table(BAD)
    assert table.schema.field("x").type == pa.string()
    query = "PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 3"
    options: dict[str, Any] = {"schema": {"x": "int"}, "on_bad_row": on_bad_row}
    frame = _frame(spark, table, parts=4)
    if on_bad_row == "fail":
        with pytest.raises(InputError) as local:
            cepcli.find(query, table, sort=True, **options).to_arrow()
        with pytest.raises(InputError) as raised:
            find(query, frame, **options)
        assert raised.value.row == local.value.row == 2  # (the first row of a later partition)
        assert str(raised.value) == str(local.value)  # its advice said as find's keywords, as locally
        assert "\n" not in str(raised.value)
        return
    local_table = cepcli.find(query, table, sort=True, **options).to_arrow()
    got = find(query, frame, **options).toArrow()
    assert local_table.num_rows > 0
    _same_typed(got, local_table)


def test_arguments_are_checked_before_any_job(spark: Any) -> None:
    from cepcli.spark import find

    frame = _frame(spark, _table("ts,type\n0,A\n1,B\n"))
    with pytest.raises(UsageError, match="PySpark DataFrame"):
        find("PATTERN SEQ(A a, B b) WITHIN 5", _table("ts,type\n0,A\n"))
    with pytest.raises(CepError, match="unknown engine"):
        find("PATTERN SEQ(A a, B b) WITHIN 5", frame, engine="nope")
    with pytest.raises(UsageError, match="on_bad_row"):
        find("PATTERN SEQ(A a, B b) WITHIN 5", frame, on_bad_row="ignore")
    with pytest.raises(UsageError, match="order_col"):
        find("PATTERN SEQ(A a, B b) WITHIN 5", frame, order_col="nowhere")
    with pytest.raises(UsageError, match="partitions"):
        find("PATTERN SEQ(A a, B b) WITHIN 5", frame, partitions=0)


# --- the command line: a table, or a path Spark reads -----------------------------------------


def test_cli_spark_reads_a_table_or_a_uri_through_find(spark: Any, tmp_path: Path) -> None:
    """``cepcli run --spark --table NAME`` and ``-i file:///...`` (any path Spark reads) go
    through ``cepcli.spark.find``: the executors write the result schema to ``--output DIR``,
    the local run's matches and values (sorted by time); without ``--output`` the driver
    writes them as a local run does (``test_cli_spark_over_a_table_writes_on_the_driver``)."""
    from click.testing import CliRunner

    from cepcli.cli import cli

    rows = _events()
    path = tmp_path / "in.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=10)
    query = FILE_QUERIES[0]
    local = cepcli.find(query, path, sort=True).to_arrow()
    assert local.num_rows > 0
    spark.read.parquet(str(path)).createOrReplaceTempView("cepcli_events")
    base = ["run", "-e", query, "--spark", "--format", "parquet", "-q"]
    for i, where in enumerate(
        [["--table", "cepcli_events"], ["-i", path.as_uri()], ["-i", str(tmp_path / "*.parquet")]]
    ):
        out = tmp_path / f"out{i}"
        stats = tmp_path / f"stats{i}.json"
        result = CliRunner().invoke(cli, [*base, *where, "--output", str(out), "--stats-json", str(stats)])
        assert result.exit_code == 0, result.output
        got = pq.read_table(out)
        assert _keys(got) == _keys(local), where
        assert _plain_rows(got) == _plain_rows(local), where
        assert json.loads(stats.read_text())["matches"] == local.num_rows
    refused = CliRunner().invoke(cli, [*base, "--table", "cepcli_events", "--format", "csv", "-o", "x"])
    assert refused.exit_code == 2
    assert "writes --format parquet or jsonl" in refused.stderr


def test_cli_spark_over_a_table_writes_on_the_driver(spark: Any, tmp_path: Path) -> None:
    """Without ``--output DIR``, ``--spark`` over a path Spark reads (here a CSV, which
    Spark reads as text and cepcli types by the local rule: its numbers are numbers) or a
    table streams the matches to the driver, which writes what the local run (``--sort``)
    writes: its jsonl lines, its csv and its table (the order of matches aside), the stats'
    counts, and ``--max-matches`` stops it."""
    from click.testing import CliRunner

    from cepcli.cli import cli

    path = tmp_path / "in.csv"
    rows = _events(200, seed=11)
    names = list(rows[0])
    path.write_text(
        ",".join(names)
        + "\n"
        + "".join(",".join("" if r[c] is None else str(r[c]) for c in names) + "\n" for r in rows)
    )
    typed = tmp_path / "in.parquet"
    pq.write_table(pa.Table.from_pylist(rows), typed, row_group_size=50)
    spark.read.parquet(str(typed)).createOrReplaceTempView("cepcli_driver")
    for query in FILE_QUERIES:
        for fmt in ("jsonl", "csv", "table"):
            for local_input, where in ((path, ["-i", path.as_uri()]), (typed, ["--table", "cepcli_driver"])):
                args = ["run", "-e", query, "--format", fmt, "-q"]
                local = CliRunner().invoke(cli, [*args, "-i", str(local_input), "--sort"])
                assert local.exit_code == 0, local.output
                stats = tmp_path / "stats.json"
                on_spark = CliRunner().invoke(cli, [*args, "--spark", *where, "--stats-json", str(stats)])
                assert on_spark.exit_code == 0, on_spark.output
                expected, got = local.stdout.splitlines(), on_spark.stdout.splitlines()
                assert len(expected) > 3, (query, fmt)
                if fmt == "csv":
                    assert got[0] == expected[0]
                if fmt == "table":  # its rows are numbered in the order they came: the frame
                    assert got[0] == expected[0]  # the count of matches
                    assert [len(line) for line in got] == [len(line) for line in expected]
                else:
                    assert sorted(got) == sorted(expected), (query, fmt, where)
                said = json.loads(stats.read_text())
                assert said["events"] == len(rows)
                assert said["matches"] == _local_matches(local_input, query)
    cut = CliRunner().invoke(
        cli, ["run", "-e", FILE_QUERIES[0], "--spark", "--table", "cepcli_driver", "--format", "jsonl",
              "--max-matches", "2", "-q"],
    )  # fmt: skip
    assert cut.exit_code == 0, cut.output
    assert len(cut.stdout.splitlines()) == 2


def _local_matches(path: Path, query: str) -> int:
    """The local run's count of matches (``--sort``)."""
    return len(cepcli.find(query, path, sort=True).to_arrow())


def test_cli_spark_over_a_path_skips_bad_rows_with_the_local_warning(
    spark: Any, tmp_path: Path, small_splits: None
) -> None:
    """``--on-bad-row skip`` over a CSV Spark reads in several partitions, to the driver:
    the local run's matches, and its warning, whose first bad row is counted in the whole
    input (not in its partition)."""
    from click.testing import CliRunner

    from cepcli.cli import cli

    rows = _events(200, seed=5)
    names = list(rows[0])
    lines = [",".join("" if r[c] is None else str(r[c]) for c in names) for r in rows]
    assert names[2] == "x"
    for bad in (150, 170):  # in two of Spark's later partitions
        lines[bad] = ",".join(["oops" if i == 2 else v for i, v in enumerate(lines[bad].split(","))])
    path = tmp_path / "in.csv"
    path.write_text(",".join(names) + "\n" + "\n".join(lines) + "\n")
    args = ["run", "-e", FILE_QUERIES[0], "--format", "jsonl", "--schema", "x:int", "--on-bad-row", "skip"]
    local = CliRunner().invoke(cli, [*args, "-i", str(path), "--sort"])
    on_spark = CliRunner().invoke(cli, [*args, "-i", path.as_uri(), "--spark"])
    assert local.exit_code == 0 and on_spark.exit_code == 0, on_spark.output
    assert len(local.stdout.splitlines()) > 3
    assert sorted(on_spark.stdout.splitlines()) == sorted(local.stdout.splitlines())
    warning = next(line for line in local.stderr.splitlines() if "skipped" in line)
    assert "skipped 2 bad rows (first: row 150:" in warning, warning
    assert warning in on_spark.stderr.splitlines(), on_spark.stderr


def test_cli_spark_runs_several_queries_over_a_table_once(spark: Any, tmp_path: Path) -> None:
    """``cepcli run rules/ --spark --table NAME`` (or a path Spark reads): every query's
    matches, each line with its query's name, as the local run of the folder (``--sort``)
    writes them, in jsonl, csv and the table; the stats per query; and with ``--output
    DIR`` each query's result schema in ``DIR/query=NAME/``, its rows the local run's."""
    from click.testing import CliRunner

    from cepcli.cli import cli

    rows = _events(200, seed=13)
    typed = tmp_path / "in.parquet"
    pq.write_table(pa.Table.from_pylist(rows), typed, row_group_size=50)
    spark.read.parquet(str(typed)).createOrReplaceTempView("cepcli_rules")
    rules = tmp_path / "rules"
    rules.mkdir()
    for name, query in zip(("negation", "kleene"), FILE_QUERIES, strict=True):
        (rules / f"{name}.sase").write_text(query + "\n")
    for fmt in ("jsonl", "csv", "table"):
        args = ["run", str(rules), "--format", fmt, "-q"]
        local = CliRunner().invoke(cli, [*args, "-i", str(typed), "--sort"])
        assert local.exit_code == 0, local.output
        for where in (["--table", "cepcli_rules"], ["-i", typed.as_uri()])[: 2 if fmt == "jsonl" else 1]:
            stats = tmp_path / "stats.json"
            on_spark = CliRunner().invoke(cli, [*args, "--spark", *where, "--stats-json", str(stats)])
            assert on_spark.exit_code == 0, on_spark.output
            expected, got = local.stdout.splitlines(), on_spark.stdout.splitlines()
            if fmt == "table":  # (its rows are numbered in the order they came)
                assert sorted(map(len, got)) == sorted(map(len, expected)) and len(got) > 6
            else:
                assert sorted(got) == sorted(expected) and len(expected) > 6, (fmt, where)
            said = json.loads(stats.read_text())
            assert said["events"] == len(rows) and said["spark_reads"] == 1
            for name, query in zip(("negation", "kleene"), FILE_QUERIES, strict=True):
                assert said["queries"][name]["matches"] == _local_matches(typed, query) > 0
    out = tmp_path / "out"
    written = CliRunner().invoke(
        cli,
        ["run", str(rules), "--spark", "--table", "cepcli_rules", "--format", "parquet", "-o", str(out)],
    )
    assert written.exit_code == 0, written.output
    for name, query in zip(("negation", "kleene"), FILE_QUERIES, strict=True):
        got = pq.read_table(out / f"query={name}")
        local_rows = cepcli.find(query, typed, sort=True).to_arrow()
        assert _keys(got) == _keys(local_rows) and local_rows.num_rows > 0, name
        assert _plain_rows(got) == _plain_rows(local_rows), name
