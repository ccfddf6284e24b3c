"""The same table in every input form gives the same matches, or the same one-line error, with
every engine (issue 25, item 7).

The table is the test's own model (``tests/forms.py``, whose docstring gives the mapping of the
model to each form): a type column, a time column (integer seconds, fractional seconds, ISO-8601,
epoch milliseconds), a whole-number column ``x`` (with -2^63 and 2^63-1), a fractional column
``y``, a text column ``g`` (with empty strings), missing values in every spelling of every form
(an empty cell, ``NA``/``NaN``/``n/a``/... markers, JSON ``null``, a marker string among JSON
numbers, a left-out JSON key, NaN, None, ``pd.NA``), and now and then one stray word among the
numbers. It is written as a CSV file, a ``.csv.gz``, JSON lines, Parquet, an Arrow table, a
pandas DataFrame (``cepcli.find``), and as CSV bytes through a real pipe into ``cepcli run -i -``.

What is required (the typing rule of issue 25: one rule for every source, kinds from the
values, decided over a sample of 65,536 rows; a missing value never decides a kind; a present
value that does not fit its column's kind is a bad row):

* **No stray word in a column the query reads**: every form and every engine gives exactly the
  oracle's matches (``tests/oracle.py``'s enumeration, on the rows of the model). The only
  difference between the forms' tables is the empty string: CSV cannot write a present empty
  string (its empty cell is missing), the typed forms can; so the csv/gz/pipe forms are held to
  the oracle on the ``text`` reading and the others to the ``typed`` one, which are equal
  unless a query reads ``g`` where it holds ``""``.
* **A stray word in a column the query reads** (its row N), in CSV, gz, JSON lines and a
  DataFrame (an object column): with ``on_bad_row="fail"`` one
  one-line error ``row N: column 'x' holds 'abc', which is not ...`` after the file-name
  prefix, the same text in every form as in the CSV file (the pipe: the same up to where the
  message says where the column's kind came from), after matches that are a subset of the
  oracle's on the rows before N, and all of them when the pattern has no negation (a match
  waiting for a negation's window may be undecided at the bad row); with ``"skip"`` the
  oracle's matches of the table without row N, and one bad row counted.
* **Parquet and an Arrow table** cannot hold a word in an int64 or float64 column; the same
  table there has a string column, whose declared type makes it text (``tests/forms.py``).
  They are held to what that means: the oracle's matches with the column as text, or the
  same query error as the CSV read with ``schema={column: "str"}`` (text compared with a
  number), and no bad row.
* **The pipe** is typed by the first present value of each column, not by a sample. It is
  compared where that rule and the sample rule must agree: the stray word, if any, is not the
  first present value of its column, and the first present value of ``g`` is not a null
  marker written as text (``NA``: a word of text in a file's text column, a missing value to
  a pipe that has not seen the column's kind yet). Pipes are slow (a process each): the pipe
  property runs ``PIPE_EXAMPLES`` examples, every engine, without shrinking.

Then the examples of the issue, as plain tests over the forms: (a) a missing first value
(empty, NA, NaN) through a pipe and from a file, and a null marker never equal to itself;
(b) ``"n/a"`` among JSON numbers is missing, a stray word is a bad row at row 3 and past row
65,536, and a pandas object column ``[2, 10, 3, 'abc']`` holds a bad row, not text (while
a Parquet or Arrow string column of the same values is text, as declared); (c) a
present empty string from JSON lines, Parquet, Arrow or a DataFrame prints as ``""``, not
null; (d) an input column named ``_row`` is refused with one line or kept visibly (never
overwritten in jsonl, never a CSV header column twice).

Runtime: about 45 s with ``pytest -n 0 tests/test_input_forms.py`` on this 2-core machine when
everything passes, about a minute while the typing rewrite is under way (shrinking the failures);
``EXAMPLES`` per form, ``PIPE_EXAMPLES`` pipes. Soak with ``CEPCLI_SOAK=N``.
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, Phase, assume, given, note, settings

import cepcli
from cepcli.cli import cli as cepcli_cli
from cepcli.engines import ENGINES
from cepcli.errors import CepError
from tests import oracle as o
from tests.forms import (
    DECLARED_FORMS,
    Case,
    Outcome,
    Table,
    cases,
    cli,
    csv_text,
    error_lines,
    keys_of_jsonl,
    oracle_on_rows,
    reading,
    run_find,
    run_pipe,
    run_pipes,
    short,
    tables,
    write,
)
from tests.oracle import MatchKey

ALL_ENGINES = list(ENGINES)
FORMS = ["csv", "gz", "jsonl", "parquet", "arrow", "frame"]
SOAK = int(os.environ.get("CEPCLI_SOAK", "0"))
EXAMPLES = SOAK or 30
PIPE_EXAMPLES = SOAK or 3


def _show(keys: set[MatchKey] | frozenset[MatchKey]) -> str:
    shown = sorted(str(dict(sorted(k))) for k in keys)
    return f"{len(shown)} matches {shown[:6]}{' ...' if len(shown) > 6 else ''}"


# --- what a run must give ---------------------------------------------------------------------------


def problems(
    case: Case, form: str, engine: str, mode: str, got: Outcome, reference: Outcome | None = None
) -> list[str]:
    """What is wrong with ``got`` (the run of ``case`` in ``form`` with ``engine`` and
    ``on_bad_row=mode``); ``reference``: the CSV file's run, whose error text every form
    must repeat (``form`` ``pipe``: up to where the message says where the kind came from)."""
    table = case.table
    rows = table.rows(reading(form))
    where = f"{form} / {engine} / on_bad_row={mode}"
    if form in DECLARED_FORMS and table.stray() is not None:
        return declared_problems(case, form, where, got, reference)
    bad = case.bad_row()
    if bad is None:
        want = oracle_on_rows(case.query, rows, table.unit)
        if got.error is not None or got.keys != want:
            return [f"{where}: got {got.show()}; want {_show(want)}, no error"]
        return []
    row, column, word = bad
    if mode == "skip":
        want = oracle_on_rows(case.query, [r for r in rows if r["_row"] != row], table.unit)
        if got.error is not None or got.keys != want or (got.bad_rows is not None and got.bad_rows != 1):
            return [f"{where}: got {got.show()}; want {_show(want)} (row {row} left out), 1 bad row"]
        return []
    out = []
    start = f"row {row}: column '{column}' holds '{word}', which is not "
    if got.error is None or not got.error.startswith(start):
        out.append(f"{where}: got {got.show()}; want an error starting {start!r}")
    elif got.raw_error is not None and "\n" in got.raw_error:
        out.append(f"{where}: the error is not one line: {got.raw_error!r}")
    if reference is not None and reference.error is not None and reference.error.startswith(start):
        same = short if form == "pipe" else (lambda e: e)
        if got.error is not None and got.error.startswith(start) and same(got.error) != same(reference.error):
            out.append(f"{where}: error {got.error!r} differs from the CSV file's {reference.error!r}")
    before = oracle_on_rows(case.query, rows[:row], table.unit)
    if not got.keys <= before or (not case.negation and got.keys != before):
        out.append(
            f"{where}: matches before the bad row: got {_show(got.keys)}; want "
            f"{'' if not case.negation else 'a subset of '}{_show(before)}"
        )
    return out


def declared_problems(
    case: Case, form: str, where: str, got: Outcome, reference: Outcome | None
) -> list[str]:
    """Parquet and Arrow, where the column with the stray word is a string column, text by its
    declared type: the oracle's matches with that column as text, or the query error of the
    CSV read with ``schema={column: "str"}`` (``reference``); never a bad row."""
    table = case.table
    stray = table.stray()
    assert stray is not None
    if (
        reference is not None
        and reference.error is not None
        and not reference.error.startswith("internal error")
    ):
        if got.error != reference.error:
            return [
                f"{where}: got {got.show()}; want the error of the CSV with schema {stray[1]}:str: "
                f"{reference.error!r}"
            ]
        return []
    want = oracle_on_rows(case.query, table.rows("typed", text_column=stray[1]), table.unit)
    if got.error is not None or got.keys != want or got.bad_rows:
        return [
            f"{where}: got {got.show()}; want {_show(want)} (column {stray[1]!r} text, as declared), no error"
        ]
    return []


def modes(case: Case) -> list[str]:
    return ["fail", "skip"] if case.bad_row() is not None else ["fail"]


# --- the model reads as the oracle reads CSV --------------------------------------------------------------


@settings(max_examples=SOAK or 100, deadline=None)
@given(table=tables(stray=False))
def test_model_is_the_oracles_reading_of_its_csv(table: Table) -> None:
    """Where the oracle can read the CSV (no stray word), its rows are the model's ``text``
    rows: the expected matches of every form below come from the oracle's own reading."""
    note(str(table))

    def without_ts(rows: list[o.Row]) -> list[o.Row]:  # conditions see a time as _ts
        return [{k: v for k, v in r.items() if k != "ts"} for r in rows]

    assert without_ts(o.read_rows(csv_text(table), time_unit=table.unit)) == without_ts(table.rows("text"))


# --- every form, every engine ---------------------------------------------------------------------------


def wrong_in(case: Case, form: str, engines: list[str] = ALL_ENGINES) -> list[str]:
    """Every way the runs of ``case`` in ``form`` (every mode, every engine) are wrong."""
    table = case.table
    wrong: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        data = write(table, form, Path(tmp))
        csv_path = write(table, "csv", Path(tmp) / "reference")
        stray = table.stray()
        declared = {stray[1]: "str"} if form in DECLARED_FORMS and stray is not None else None
        for mode in modes(case):
            for engine in engines:
                got = run_find(case.query, data, engine, table.unit, mode, case.chunk_rows)
                reference = None
                if declared:  # the same table: the CSV with that column declared text
                    unit, chunk = table.unit, case.chunk_rows
                    reference = run_find(case.query, csv_path, engine, unit, mode, chunk, schema=declared)
                elif got.error is not None and mode == "fail" and form != "csv":
                    reference = run_find(case.query, csv_path, engine, table.unit, mode, case.chunk_rows)
                wrong += problems(case, form, engine, mode, got, reference)
    return wrong


@pytest.mark.parametrize("form", FORMS)
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(case=cases())
def test_random_table_same_outcome_in_every_form(form: str, case: Case) -> None:
    note(str(case))
    wrong = wrong_in(case, form)
    assert not wrong, f"{len(wrong)} wrong:\n" + "\n".join(wrong[:12])


def pipe_comparable(case: Case) -> bool:
    """Where typing by the first present values and typing by a sample must agree (module)."""
    table = case.table
    stray = table.stray()
    if (
        stray is not None
        and table.first_present(stray[1]) is not None
        and table.first_present(stray[1]).stray
    ):
        return False
    first_g = table.first_present("g")
    return first_g is None or first_g.value not in o.NULLS


@settings(
    max_examples=PIPE_EXAMPLES,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(case=cases())
def test_random_table_through_a_pipe(case: Case) -> None:
    """A real pipe into ``cepcli run -i -``, every engine: the oracle's matches (text reading),
    or the CSV file's bad row."""
    note(str(case))
    assume(pipe_comparable(case))
    table = case.table
    wrong: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        data = write(table, "pipe", Path(tmp))
        csv_path = write(table, "csv", Path(tmp))
        for mode in modes(case):
            outcomes = run_pipes(case.query, data, ALL_ENGINES, table.unit, mode, Path(tmp))  # type: ignore[arg-type]
            for engine, got in outcomes.items():
                reference = run_find(case.query, csv_path, engine, table.unit, mode) if got.error else None
                wrong += problems(case, "pipe", engine, mode, got, reference)
    assert not wrong, f"{len(wrong)} wrong:\n" + "\n".join(wrong[:12])


# --- hand-written tables in every form --------------------------------------------------------------------


@dataclass(frozen=True)
class M:
    """A missing value, as the text forms spell it (``""``: an empty cell)."""

    marker: str = ""


@dataclass(frozen=True)
class S:
    """A stray word among numbers."""

    word: str


SIMPLE_FORMS = ["csv", "gz", "pipe", "jsonl", "parquet", "arrow", "frame"]
NANS = ("NaN", "nan")


def _cell_text(v: object) -> str:
    if isinstance(v, M):
        return v.marker
    if isinstance(v, S):
        return v.word
    if v is None:
        return ""
    return repr(v) if isinstance(v, float) else str(v)


def simple_csv(columns: dict[str, list[Any]]) -> str:
    names = list(columns)
    n = len(columns[names[0]])
    lines = [",".join(names)] + [",".join(_cell_text(columns[c][i]) for c in names) for i in range(n)]
    return "\n".join(lines) + "\n"


def _arrow_column(values: list[Any], kind: str) -> pa.Array:
    if any(isinstance(v, S) for v in values):  # a string column, as pyarrow's CSV reader makes it
        return pa.array([None if v is None or v == M("") else _cell_text(v) for v in values], pa.string())
    if kind == "float":
        return pa.array(
            [
                float("nan") if isinstance(v, M) and v.marker in NANS else None if isinstance(v, M) else v
                for v in values
            ],
            pa.float64(),
            from_pandas=False,
        )
    plain = [None if isinstance(v, M) else v for v in values]
    return pa.array(plain, {"int": pa.int64(), "str": pa.string()}[kind])


def _frame_column(values: list[Any], kind: str) -> pd.Series:
    texts = any(isinstance(v, S) or (isinstance(v, M) and v.marker not in ("", *NANS)) for v in values)
    if texts:  # an object column: numbers, the word, a marker text, None for an empty cell
        return pd.Series(
            [v.word if isinstance(v, S) else (v.marker or None) if isinstance(v, M) else v for v in values],
            dtype=object,
        )
    if kind == "float" or any(isinstance(v, M) and v.marker in NANS for v in values):
        return pd.Series([float("nan") if isinstance(v, M) else v for v in values], dtype="float64")
    if kind == "int":
        return pd.Series(pd.array([None if isinstance(v, M) else v for v in values], dtype="Int64"))
    return pd.Series([None if isinstance(v, M) else v for v in values], dtype=object)


def simple_form(columns: dict[str, list[Any]], kinds: dict[str, str], form: str, where: Path) -> object:
    """A hand-written table (values: int, float, str, ``M`` missing, ``S`` stray word;
    ``kinds``: each column's declared type in the typed forms, int, float or str) in ``form``."""
    where.mkdir(parents=True, exist_ok=True)
    if form in ("csv", "gz", "pipe"):
        text = simple_csv(columns)
        if form == "pipe":
            return text.encode()
        path = where / ("events.csv" if form == "csv" else "events.csv.gz")
        path.write_bytes(text.encode() if form == "csv" else gzip.compress(text.encode()))
        return str(path)
    names = list(columns)
    n = len(columns[names[0]])
    if form == "jsonl":
        lines = []
        for i in range(n):
            record = {}
            for c in names:
                v = columns[c][i]
                record[c] = (
                    (None if v.marker == "" else v.marker)
                    if isinstance(v, M)
                    else (v.word if isinstance(v, S) else v)
                )
            lines.append(json.dumps(record))
        path = where / "events.jsonl"
        path.write_text("\n".join(lines) + "\n")
        return str(path)
    if form in ("parquet", "arrow"):
        table = pa.table({c: _arrow_column(columns[c], kinds[c]) for c in names})
        if form == "arrow":
            return table
        path = where / "events.parquet"
        pq.write_table(table, path)
        return str(path)
    assert form == "frame", form
    return pd.DataFrame({c: _frame_column(columns[c], kinds[c]) for c in names})


def outcome(
    query: str,
    columns: dict[str, list[Any]],
    kinds: dict[str, str],
    form: str,
    engine: str,
    where: Path,
    on_bad_row: str = "fail",
) -> Outcome:
    data = simple_form(columns, kinds, form, where)
    if form == "pipe":
        return run_pipe(query, data, engine, on_bad_row=on_bad_row, where=where)  # type: ignore[arg-type]
    return run_find(query, data, engine, on_bad_row=on_bad_row, chunk_rows=2)


# The hand-written tables through a pipe (a process each): the default engine, and the markers
# NaN, n/a and the empty cell (the other markers go through the same code in every form).
PIPE_ENGINES = ["adaptive"]
PIPE_MARKERS = ("NaN", "n/a", "")


def engines_for(form: str) -> list[str]:
    return PIPE_ENGINES if form == "pipe" else ALL_ENGINES


def _keys(*pairs: tuple[int, int]) -> frozenset[MatchKey]:
    return frozenset(frozenset({("a", (a,)), ("b", (b,))}) for a, b in pairs)


# (a) a missing value in the first row --------------------------------------------------------------------

FIRST_ROW_QUERY = "PATTERN SEQ(A a, B b) WHERE a.y > b.y WITHIN 5"


def test_first_row_missing_through_a_real_pipe_bytes_of_the_issue(tmp_path: Path) -> None:
    """``printf 'type,ts,y\\nC,0,\\nA,1,10\\nB,2,9\\n' | cepcli run -e "..." -i -``: 1 match, as from
    a file of the same bytes."""
    data = b"type,ts,y\nC,0,\nA,1,10\nB,2,9\n"
    piped = cli(["run", "-e", FIRST_ROW_QUERY, "-i", "-", "--format", "jsonl", "--quiet"], data)
    (tmp_path / "e.csv").write_bytes(data)
    filed = cli(["run", "-e", FIRST_ROW_QUERY, "-i", str(tmp_path / "e.csv"), "--format", "jsonl", "--quiet"])
    assert filed.returncode == 0 and len(filed.stdout.splitlines()) == 1, filed
    assert piped.returncode == 0, piped.stderr
    assert (
        keys_of_jsonl(piped.stdout.decode())
        == keys_of_jsonl(filed.stdout.decode())
        == {frozenset({("a", (1,)), ("b", (2,))})}
    )


@pytest.mark.parametrize("form", SIMPLE_FORMS)
@pytest.mark.parametrize("marker", ["", "NA", "NaN"])
def test_first_row_missing(marker: str, form: str, tmp_path: Path) -> None:
    columns = {"type": ["C", "A", "B"], "ts": [0, 1, 2], "y": [M(marker), 10, 9]}
    for engine in engines_for(form):
        got = outcome(
            FIRST_ROW_QUERY, columns, {"type": "str", "ts": "int", "y": "int"}, form, engine, tmp_path
        )
        assert got.error is None and got.keys == _keys((1, 2)), f"{engine}: {got.show()}"


@pytest.mark.parametrize(
    ("marker", "form"),
    [
        (m, f)
        for m in ["NaN", "nan", "NA", "null", "n/a", "None", ""]
        for f in SIMPLE_FORMS
        if f != "pipe" or m in PIPE_MARKERS
    ],
)
def test_null_marker_never_equals_itself(marker: str, form: str, tmp_path: Path) -> None:
    """A column of nothing but missing values: ``a.y = b.y``, ``a.y != b.y`` and ``NOT a.y = b.y``
    are all false (so is their OR)."""
    columns = {"type": ["A", "B", "C"], "ts": [0, 1, 2], "y": [M(marker), M(marker), M(marker)]}
    kinds = {"type": "str", "ts": "int", "y": "float"}
    query = "PATTERN SEQ(A a, B b) WHERE a.y = b.y OR a.y != b.y OR NOT a.y = b.y WITHIN 5"
    for engine in engines_for(form):
        got = outcome(query, columns, kinds, form, engine, tmp_path)
        assert got.error is None and got.keys == frozenset(), f"{engine}: {got.show()}"


# (b) strings among numbers --------------------------------------------------------------------------------

NUMBERS_QUERY = "PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 10"


@pytest.mark.parametrize(
    ("marker", "form"),
    [
        (m, f)
        for m in ["n/a", "NA", "null", "NaN", ""]
        for f in SIMPLE_FORMS
        if f != "pipe" or m in PIPE_MARKERS
    ],
)
def test_marker_among_numbers_is_missing(marker: str, form: str, tmp_path: Path) -> None:
    """``{"x": "n/a"}`` among JSON numbers (and the same in every form) is a missing value: the
    column stays numeric (as text, '2' < '10' is false and 'n/a' < '3' too)."""
    columns = {"type": ["A", "B", "A", "B"], "ts": [0, 1, 2, 3], "x": [2, 10, M(marker), 3]}
    for engine in engines_for(form):
        got = outcome(
            NUMBERS_QUERY, columns, {"type": "str", "ts": "int", "x": "int"}, form, engine, tmp_path
        )
        assert got.error is None and got.keys == _keys((0, 1), (0, 3)), f"{engine}: {got.show()}"


def test_frame_object_column_with_pd_na_and_a_marker_text() -> None:
    """Found by the random tables: an object column holding a marker text and ``pd.NA`` (and
    None, NaN) among numbers is numbers with missing values, not a crash and not text."""
    frame = pd.DataFrame(
        {
            "type": ["A", "B", "A", "B", "B"],
            "ts": [0, 1, 2, 3, 4],
            "x": pd.Series([2, "#NA", pd.NA, None, 10], dtype=object),
            "y": pd.Series([float("nan"), 1.5, "n/a", pd.NA, 0.5], dtype=object),
        }
    )
    for engine in ALL_ENGINES:
        got = run_find("PATTERN SEQ(A a, B b) WHERE a.x < b.x OR b.y < 1 WITHIN 10", frame, engine)
        assert got.error is None and got.keys == _keys((0, 4), (2, 4)), f"{engine}: {got.show()}"


def _stray_table(at: int) -> dict[str, list[Any]]:
    """x = 2, 10, 3, 3, ... with the word 'abc' at row ``at`` (an A), then a B with x 20.
    As numbers: a=0, b=1 (2 < 10); as text no match ('2' < '10' is false)."""
    n = at + 2
    types = ["A", "B"] + ["C"] * (at - 2) + ["A", "B"]
    x: list[Any] = [2, 10] + [3] * (at - 2) + [S("abc"), 20]
    return {"type": types, "ts": list(range(n)), "x": x}


STRAY_FORMS = [f for f in SIMPLE_FORMS if f not in DECLARED_FORMS]  # Parquet, Arrow: a string column


@pytest.mark.parametrize("mode", ["fail", "skip"])
@pytest.mark.parametrize("form", STRAY_FORMS)
def test_stray_word_at_row_3_is_a_bad_row(form: str, mode: str, tmp_path: Path) -> None:
    """The frame form is the issue's pandas object column ``[2, 10, 3, 'abc']`` (then a fifth row):
    'abc' is a bad row, not a reason to compare the column as text."""
    columns = _stray_table(3)
    assert columns["x"][:4] == [2, 10, 3, S("abc")]
    for engine in engines_for(form):
        got = outcome(
            NUMBERS_QUERY, columns, {"type": "str", "ts": "int", "x": "int"}, form, engine, tmp_path, mode
        )
        # fail: the match before row 3; skip: and a=0 with the B after it (2 < 20)
        assert got.keys == (_keys((0, 1)) if mode == "fail" else _keys((0, 1), (0, 4))), (
            f"{engine}: {got.show()}"
        )
        if mode == "fail":
            assert got.error is not None and got.error.startswith(
                "row 3: column 'x' holds 'abc', which is not an integer"
            ), f"{engine}: {got.show()}"
            assert got.raw_error is not None and "\n" not in got.raw_error
        else:
            assert got.error is None and got.bad_rows == 1, f"{engine}: {got.show()}"


BIG = 70_000  # past the sample of 65,536 rows


@pytest.fixture(scope="module")
def big_inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    where = tmp_path_factory.mktemp("big")
    columns = _stray_table(BIG)
    kinds = {"type": "str", "ts": "int", "x": "int"}
    return {form: simple_form(columns, kinds, form, where / form) for form in STRAY_FORMS}


@pytest.mark.parametrize("mode", ["fail", "skip"])
@pytest.mark.parametrize(
    ("form", "engine"), [(f, e) for f in STRAY_FORMS for e in ("adaptive", "eager") if e in engines_for(f)]
)
def test_stray_word_past_the_sample_is_a_bad_row(
    form: str, engine: str, mode: str, big_inputs: dict[str, object], tmp_path: Path
) -> None:
    """The same rule wherever the word sits: at row 70,000, after a sample of numbers only."""
    data = big_inputs[form]
    if form == "pipe":
        got = run_pipe(NUMBERS_QUERY, data, engine, on_bad_row=mode, where=tmp_path)  # type: ignore[arg-type]
    else:
        got = run_find(NUMBERS_QUERY, data, engine, on_bad_row=mode)
    assert got.keys == _keys((0, 1)), got.show()
    if mode == "fail":
        assert got.error is not None and got.error.startswith(
            f"row {BIG}: column 'x' holds 'abc', which is not an integer"
        ), got.show()
    else:
        assert got.error is None and got.bad_rows == 1, got.show()


@pytest.mark.parametrize("form", DECLARED_FORMS)
@pytest.mark.parametrize("query", [NUMBERS_QUERY, "PATTERN SEQ(A a, B b) WHERE a.x < 5 WITHIN 10"])
def test_declared_string_column_of_numbers_is_text(query: str, form: str, tmp_path: Path) -> None:
    """The same values in a Parquet or Arrow string column: text, as declared, never a bad row:
    the outcome of the CSV read with ``schema={"x": "str"}`` ('2' < '10' is false; text compared
    with a number, the same query error)."""
    columns = _stray_table(3)
    kinds = {"type": "str", "ts": "int", "x": "int"}
    data = simple_form(columns, kinds, form, tmp_path)
    csv_path = simple_form(columns, kinds, "csv", tmp_path / "csv")
    for engine in ALL_ENGINES:
        for mode in ("fail", "skip"):
            got = run_find(query, data, engine, on_bad_row=mode)
            want = run_find(query, csv_path, engine, on_bad_row=mode, schema={"x": "str"})
            assert (got.keys, got.error) == (want.keys, want.error), (
                f"{engine} {mode}: {got.show()} / {want.show()}"
            )
            assert not got.bad_rows, got.show()
    if query == NUMBERS_QUERY:  # as text '2' < '10' is false, '2' < '20' true
        assert want.error is None and want.keys == _keys((0, 4)), want.show()


# (c) a present empty string prints as "" ------------------------------------------------------------------

EMPTY_QUERIES = {  # query -> whether it matches when a.g is a present empty string
    "PATTERN SEQ(A a, B b) WITHIN 5": True,  # g not read by the query
    "PATTERN SEQ(A a, B b) WHERE a.g != b.g WITHIN 5": True,
    "PATTERN SEQ(A a, B b) WHERE a.g = '' WITHIN 5": True,
}
EMPTY_COLUMNS = {"type": ["A", "B"], "ts": [0, 1], "g": ["", "p"], "x": [1, 2]}
EMPTY_KINDS = {"type": "str", "ts": "int", "g": "str", "x": "int"}


@pytest.mark.parametrize("form", ["jsonl", "parquet", "arrow", "frame", "csv"])
@pytest.mark.parametrize("query", list(EMPTY_QUERIES))
def test_empty_string_prints_as_empty_string(query: str, form: str, tmp_path: Path) -> None:
    """In ``cepcli.find``'s dicts. (CSV: the empty cell is missing: null, and no match where the
    condition reads it.)"""
    data = simple_form(EMPTY_COLUMNS, EMPTY_KINDS, form, tmp_path)
    for engine in ("eager", "adaptive"):
        matches = list(cepcli.find(query, data, engine=engine))
        if form == "csv":
            want = [] if "a.g" in query else [None]
            assert [m["a"]["g"] for m in matches] == want, engine
            continue
        assert [m["a"]["g"] for m in matches] == [""], f"{engine}: {matches}"
        assert [m["b"]["g"] for m in matches] == ["p"], engine


def test_empty_string_in_a_json_block_read_line_by_line(tmp_path: Path) -> None:
    """Found by the random tables: a marker string among numbers (``"x": "n/a"``) makes pyarrow
    refuse the block, which is then read line by line; its ``""`` is still the empty string."""
    path = tmp_path / "e.jsonl"
    path.write_text('{"type":"A","ts":0,"x":"n/a","g":""}\n{"type":"B","ts":1,"x":2,"g":"p"}\n')
    for engine in ALL_ENGINES:
        matches = list(cepcli.find("PATTERN SEQ(A a, B b) WHERE a.g = '' WITHIN 5", str(path), engine=engine))
        assert [(m["a"]["g"], m["a"]["x"]) for m in matches] == [("", None)], f"{engine}: {matches}"


@pytest.mark.parametrize("form", ["jsonl", "parquet"])
@pytest.mark.parametrize("query", list(EMPTY_QUERIES))
def test_empty_string_prints_as_empty_string_in_jsonl_output(query: str, form: str, tmp_path: Path) -> None:
    path = simple_form(EMPTY_COLUMNS, EMPTY_KINDS, form, tmp_path)
    result = _invoke(["run", "-e", query, "-i", str(path), "--format", "jsonl", "--quiet"])
    assert result.exit_code == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [m["a"]["g"] for m in lines] == [""], result.stdout
    assert '"g":""' in result.stdout.replace(" ", "")


# (d) an input column named _row ---------------------------------------------------------------------------

ROW_QUERY = "PATTERN SEQ(A a, B b) WITHIN 5"
ROW_COLUMNS = {"_row": [1000, 1001, 1002], "type": ["A", "B", "B"], "ts": [10, 11, 12], "x": [5, 6, 7]}
ROW_KINDS = {"_row": "int", "type": "str", "ts": "int", "x": "int"}


def _invoke(args: list[str]) -> Result:
    result = CliRunner().invoke(cepcli_cli, args)
    assert "Traceback" not in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


def _no_key_twice(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    assert len(set(keys)) == len(keys), f"a key twice in a jsonl object: {keys}"
    return dict(pairs)


def _check_row_refusal(message: str) -> None:
    assert "\n" not in message.strip(), f"not one line: {message!r}"
    assert "_row" in message, message


def _check_user_row_kept(events: list[dict[str, Any]]) -> None:
    """Each event shows both its row id (0-2) and the user's ``_row`` value (1000 + the id),
    under whatever names."""
    for event in events:
        values = list(event.values())
        ids = [v for v in values if v in (0, 1, 2)]
        users = [v for v in values if v in (1000, 1001, 1002, "1000", "1001", "1002")]
        assert len(ids) == 1 and len(users) == 1 and int(users[0]) == 1000 + ids[0], (
            f"the row id and the user's _row must both show: {event}"
        )


@pytest.mark.parametrize("form", ["csv", "pipe", "jsonl", "parquet"])
@pytest.mark.parametrize("output", ["jsonl", "csv"])
def test_input_column_named_row_cli(form: str, output: str, tmp_path: Path) -> None:
    data = simple_form(ROW_COLUMNS, ROW_KINDS, form, tmp_path)
    args = ["run", "-e", ROW_QUERY, "--format", output, "--quiet"]
    if form == "pipe":
        done = cli([*args, "-i", "-"], data)  # type: ignore[arg-type]
        code, stdout, stderr = done.returncode, done.stdout.decode(), done.stderr.decode()
    else:
        result = _invoke([*args, "-i", str(data)])
        code, stdout, stderr = result.exit_code, result.stdout, result.stderr
    if code != 0:
        errors = error_lines(stderr)
        assert len(errors) == 1 and not stdout.strip(), stderr
        _check_row_refusal(errors[0])
        return
    if output == "jsonl":
        lines = [json.loads(line, object_pairs_hook=_no_key_twice) for line in stdout.splitlines()]
        assert len(lines) == 2, stdout
        _check_user_row_kept([m[v] for m in lines for v in ("a", "b")])
    else:
        header = stdout.splitlines()[0].split(",")
        assert len(set(header)) == len(header), f"a column twice in the csv header: {header}"


@pytest.mark.parametrize("form", ["frame", "arrow"])
def test_input_column_named_row_find(form: str, tmp_path: Path) -> None:
    data = simple_form(ROW_COLUMNS, ROW_KINDS, form, tmp_path)
    try:
        matches = list(cepcli.find(ROW_QUERY, data))
        frame = cepcli.find(ROW_QUERY, data).to_pandas()
    except CepError as err:
        _check_row_refusal(str(err))
        return
    assert len(matches) == 2
    _check_user_row_kept([m[v] for m in matches for v in ("a", "b")])
    assert len(set(frame.columns)) == len(frame.columns), f"a column twice: {list(frame.columns)}"
