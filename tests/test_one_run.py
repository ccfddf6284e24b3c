"""One Run behind every face: the cases where one path used to disagree with another
(issue 38), each as a user meets it: several queries' inputs, the query-name key, a
directory of one query, the commands that take one query, and ``cepcli.find``'s keywords."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import cepcli
from cepcli.errors import CepError, UsageError
from tests import forms

DATA = "ts,type,x\n1,A,1\n2,B,2\n3,A,3\n4,B,4\n"
OTHER = "ts,type,x\n1,A,1\n2,C,2\n"


class _Done:
    def __init__(self, args: list[str], stdin: str | None) -> None:
        done = forms.cli(args, stdin.encode() if stdin is not None else None)
        self.returncode = done.returncode
        self.stdout = done.stdout.decode()
        self.stderr = done.stderr.decode()


def cli(args: list[str], stdin: str | None = None) -> _Done:
    """``cepcli ARGS`` as a process of its own, its output as text."""
    return _Done(args, stdin)


def _query(where: Path, name: str, text: str) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    path = where / f"{name}.sase"
    path.write_text(text + "\n")
    return path


def test_queries_over_different_inputs_are_refused_not_read_from_the_first(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text(DATA)
    (tmp_path / "b.csv").write_text(OTHER)
    first = _query(tmp_path, "first", "FROM 'a.csv' PATTERN SEQ(A a, B b) WITHIN 5")
    second = _query(tmp_path, "second", "FROM 'b.csv' PATTERN SEQ(A a, C c) WITHIN 5")
    done = cli(["run", str(first), str(second), "--format", "jsonl", "-q"])
    assert done.returncode == 2, done.stdout
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert "different inputs" in line and "first" in line and "second" in line and "b.csv" in line
    # alone, each finds its own matches (the refusal is not a failure to read them)
    assert len(cli(["run", str(second), "--format", "jsonl", "-q"]).stdout.splitlines()) == 1
    # --input names one input for all: then both run over it
    both = cli(["run", str(first), str(second), "-i", str(tmp_path / "a.csv"), "--format", "jsonl", "-q"])
    assert both.returncode == 0, both.stderr
    assert sorted(json.loads(line)["query"] for line in both.stdout.splitlines()) == ["first"] * 3


def test_a_query_without_from_beside_one_with_from_does_not_read_standard_input(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text(DATA)
    bare = _query(tmp_path, "bare", "PATTERN SEQ(A a, B b) WITHIN 5")
    named = _query(tmp_path, "named", "FROM 'a.csv' PATTERN SEQ(A a, B b) WITHIN 5")
    done = cli(["run", str(bare), str(named), "--format", "jsonl", "-q"], stdin=DATA)
    assert done.returncode == 2 and "different inputs" in done.stderr, done.stderr


def test_one_input_named_two_ways_is_one_input(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.csv").write_text(DATA)
    one = _query(tmp_path / "q1", "one", "FROM '../data/a.csv' PATTERN SEQ(A a, B b) WITHIN 5")
    two = _query(tmp_path / "q2" / "deeper", "two", "FROM '../../data/a.csv' PATTERN SEQ(A a, B b) WITHIN 1")
    done = cli(["run", str(one), str(two), "--format", "jsonl", "-q"])
    assert done.returncode == 0, done.stderr
    names = [json.loads(line)["query"] for line in done.stdout.splitlines()]
    assert names.count("one") == 3 and names.count("two") == 2


def test_a_variable_named_query_is_refused_where_the_matches_carry_the_query_name(tmp_path: Path) -> None:
    data = tmp_path / "a.csv"
    data.write_text(DATA)
    clash = "PATTERN SEQ(A query, B b) WITHIN 5"
    alone = cli(["run", "-e", clash, "-i", str(data), "--format", "jsonl", "-q"])
    assert alone.returncode == 0 and len(alone.stdout.splitlines()) == 3  # one query: no name key
    for fmt in ("jsonl", "parquet"):
        out = tmp_path / f"out.{fmt}"
        many = cli(["run", "-e", clash, "-e", "PATTERN SEQ(A a, B b) WITHIN 5", "-i", str(data)]
                   + ["--format", fmt, "-o", str(out), "-q"])  # fmt: skip
        assert many.returncode == 2 and "'query'" in many.stderr and "rename" in many.stderr
        assert not out.exists() or out.stat().st_size == 0
    with pytest.raises(UsageError, match="rename the variable"):
        cepcli.find([clash], str(data))


def test_a_directory_of_one_query_names_its_matches(tmp_path: Path) -> None:
    data = tmp_path / "a.csv"
    data.write_text(DATA)
    rules = tmp_path / "rules"
    _query(rules, "pairs", "PATTERN SEQ(A a, B b) WITHIN 5")
    (rules / ".#pairs.sase").write_text("this is an editor's lock file, not a query")  # left out
    done = cli(["run", str(rules), "-i", str(data), "--format", "jsonl", "-q"])
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(lines) == 3 and all(list(line)[0] == "query" and line["query"] == "pairs" for line in lines)
    out = tmp_path / "m.parquet"
    assert (
        cli(["run", str(rules), "-i", str(data), "--format", "parquet", "-o", str(out), "-q"]).returncode == 0
    )
    assert pq.read_table(out).column("query").to_pylist() == ["pairs"] * 3
    csv = cli(["run", str(rules), "-i", str(data), "--format", "csv", "-q"]).stdout.splitlines()
    assert csv[0].startswith("query,") and all(row.startswith("pairs,") for row in csv[1:])
    # cepcli.find: a list of one names its matches too; a string does not
    assert [m["query"] for m in cepcli.find(["PATTERN SEQ(A a, B b) WITHIN 5"], str(data))] == ["q1"] * 3
    assert all("query" not in m for m in cepcli.find("PATTERN SEQ(A a, B b) WITHIN 5", str(data)))


def test_commands_of_one_query_refuse_several(tmp_path: Path) -> None:
    data = tmp_path / "a.csv"
    data.write_text(DATA)
    two = ["-e", "PATTERN SEQ(A a, B b) WITHIN 5", "-e", "PATTERN SEQ(B b, A a) WITHIN 1"]
    for command in ("explain", "bench"):
        done = cli([command, *two, "-i", str(data)])
        assert done.returncode == 2 and f"{command} takes one query (2 given)" in done.stderr, done.stderr
    checked = cli(["check", *two, "-i", str(data)])
    assert checked.returncode == 0, checked.stderr
    lines = checked.stdout.splitlines()
    assert (
        len(lines) == 2
        and lines[0].startswith("<e1>: ok")
        and "window 5," in lines[0]
        and lines[1].startswith("<e2>: ok")
        and "window 1," in lines[1]
    )


@pytest.mark.parametrize(
    ("keywords", "says"),
    [
        ({"max_matches": 0}, "max_matches= is a whole number, 1 or more"),
        ({"max_instances": -1}, "max_instances= is a whole number"),
        ({"columns": "x"}, "columns= is a list of names"),
        ({"null_values": "NA"}, "null_values= is a list of names"),
        ({"order": "a,b"}, "order= is a list of names"),
        ({"type_column": "kind"}, "did you mean type_col=?"),
        ({"engin": "chain"}, "did you mean engine=?"),
    ],
)
def test_find_refuses_a_bad_keyword_in_one_line(
    tmp_path: Path, keywords: dict[str, object], says: str
) -> None:
    data = tmp_path / "a.csv"
    data.write_text(DATA)
    with pytest.raises(CepError) as raised:
        list(cepcli.find("PATTERN SEQ(A a, B b) WITHIN 5", str(data), **keywords))  # type: ignore[arg-type]
    assert says in str(raised.value) and "\n" not in str(raised.value)


@pytest.mark.parametrize("query", [None, 5, [], {}, ["PATTERN SEQ(A a, B b) WITHIN 5", None]])
def test_find_refuses_what_is_no_query(tmp_path: Path, query: object) -> None:
    data = tmp_path / "a.csv"
    data.write_text(DATA)
    with pytest.raises(UsageError, match="query= is a query's text, or a list or a dict"):
        cepcli.find(query, str(data))  # type: ignore[arg-type]


def test_find_refuses_no_data() -> None:
    with pytest.raises(UsageError, match="data= is a path"):
        cepcli.find("PATTERN SEQ(A a, B b) WITHIN 5", None)


def test_the_result_says_what_it_is(tmp_path: Path) -> None:
    data = tmp_path / "a.csv"
    data.write_text(DATA)
    found = cepcli.find("PATTERN SEQ(A a, B b) WITHIN 5", str(data))
    assert "<query>" in repr(found) and "a.csv" in repr(found) and "not run yet" in repr(found)
    assert len(list(found)) == 3
    assert "3 matches" in repr(found)
    many = cepcli.find(
        {"pairs": "PATTERN SEQ(A a, B b) WITHIN 5", "late": "PATTERN SEQ(B b, A a) WITHIN 1"}, str(data)
    )
    assert "pairs, late" in repr(many)


def test_a_decimal_no_result_type_holds_is_one_line_and_leaves_no_parquet_file(tmp_path: Path) -> None:
    data = tmp_path / "wide.csv"
    data.write_text("ts,type,x\n1,A," + "1" * 79 + "\n2,B,1\n")
    out = tmp_path / "m.parquet"
    query = "PATTERN SEQ(A a, B b) WITHIN 5"
    done = cli(
        ["run", "-e", query, "-i", str(data), "--schema", "x:decimal", "--format", "parquet", "-o", str(out)]
    )
    assert done.returncode == 1 and not out.exists()
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"cepcli: error: {data}: row 0: column 'x' holds a decimal of 79 digits")
    with pytest.raises(CepError, match="wide.csv: row 0: column 'x' holds a decimal of 79 digits"):
        cepcli.find(query, str(data), schema={"x": "decimal"}).to_arrow()
    # the same matches as jsonl: the value exactly
    lines = cli(["run", "-e", query, "-i", str(data), "--schema", "x:decimal", "--format", "jsonl", "-q"])
    assert lines.returncode == 0 and '"x":' + "1" * 79 in lines.stdout


def test_a_misspelled_keyword_of_either_find_is_one_line_naming_the_closest() -> None:
    import cepcli.spark  # (the spark extra: the keywords are checked before PySpark is needed)

    with pytest.raises(
        UsageError,
        match=r"cepcli\.spark\.find\(\) has no keyword argument 'timecol'; did you mean time_col=\?",
    ):
        cepcli.spark.find("PATTERN SEQ(A a, B b) WITHIN 5", object(), timecol="t")  # type: ignore[call-arg]
    with pytest.raises(
        UsageError, match=r"cepcli\.find\(\) has no keyword argument 'sorted'; did you mean sort=\?"
    ):
        cepcli.find("PATTERN SEQ(A a, B b) WITHIN 5", "x.csv", sorted=True)  # type: ignore[call-arg]
