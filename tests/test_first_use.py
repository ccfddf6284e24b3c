"""What a new user meets first (README "Running", "Help"): warnings instead of silent
zeros, the help in sections with the engines described, ``-V``, shell completion."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from rich.console import Console

import cepcli
from cepcli.cli import cli
from cepcli.render import progress_bar
from cepcli.runtime.stats import Stats

ROWS = "type,ts,x\nUA,1,10\nB6,2,9\nUA,3,1\nB6,4,20\n"
CLI = str(Path(sys.executable).with_name("cepcli"))


def _cli(*args: str) -> Result:
    result = CliRunner().invoke(cli, list(args))
    assert "Traceback" not in result.output and "internal error" not in result.output, result.output
    return result


@pytest.fixture()
def data(tmp_path: Path) -> Path:
    path = tmp_path / "e.csv"
    path.write_text(ROWS)
    return path


def _warnings(result: Result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("warning:")]


# --- a type the input never holds ---------------------------------------------------------


@pytest.mark.parametrize("engine", ["eager", "chain", "first-chance", "post-processing", "tree"])
def test_a_type_the_input_never_has_is_a_warning_with_a_hint(data: Path, engine: str) -> None:
    result = _cli("run", "-e", "PATTERN SEQ(ua a, B6 b) WITHIN 5", "-i", str(data), "--engine", engine)
    assert result.exit_code == 0, result.output
    assert "0 matches" in result.stdout
    assert _warnings(result) == [
        "warning: no row of the input has the type 'ua' (column 'type'); it has 'UA'"
        " (types are case-sensitive)"
    ]


def test_no_type_warning_when_every_type_occurs_or_the_run_stops_early(data: Path) -> None:
    ok = _cli("run", "-e", "PATTERN SEQ(UA a, B6 b) WITHIN 5", "-i", str(data), "-q")
    assert ok.exit_code == 0 and _warnings(ok) == [], ok.output
    missing = _cli("run", "-e", "PATTERN SEQ(UA a, B6 b, NOT(XX n)) WITHIN 5", "-i", str(data), "-q")
    assert _warnings(missing) == ["warning: no row of the input has the type 'XX' (column 'type')"]
    # Stopped by --max-matches, the input was not read to the end: "never" is not known.
    early = _cli(
        "run",
        "-e",
        "PATTERN SEQ(UA a, B6 b, NOT(XX n)) WITHIN 5",
        "-i",
        str(data),
        "-q",
        "--max-matches",
        "1",
    )
    assert not any("type 'XX'" in w for w in _warnings(early)), early.output


def test_the_python_api_has_the_type_warning_in_its_stats(data: Path) -> None:
    found = cepcli.find("PATTERN SEQ(UA a, b6 b) WITHIN 5", data)
    assert list(found) == []
    assert found.stats.warnings == [
        "no row of the input has the type 'b6' (column 'type'); it has 'B6' (types are case-sensitive)"
    ]


# --- --order given to an engine that does not use one ---------------------------------------


@pytest.mark.parametrize(("engine", "warned"), [("tree", True), ("eager", True), ("chain", False)])
def test_order_for_an_engine_that_ignores_it(data: Path, engine: str, warned: bool) -> None:
    query = "PATTERN SEQ(UA a, B6 b) WITHIN 5"
    result = _cli("run", "-e", query, "-i", str(data), "-q", "--engine", engine, "--order", "b,a")
    assert result.exit_code == 0, result.output
    expected = [
        "warning: --order is for the chain engines (chain, first-chance, post-processing);"
        f" {engine} ignores it"
    ]
    assert _warnings(result) == (expected if warned else [])


# --- text compared with < whose values are numbers ------------------------------------------


def test_text_ordering_of_numbers_is_a_warning(tmp_path: Path) -> None:
    events = tmp_path / "e.jsonl"  # JSON strings: the column is text
    events.write_text('{"type":"A","ts":1,"x":"10"}\n{"type":"B","ts":2,"x":"9"}\n')
    query = [
        "-e",
        "PATTERN SEQ(A a, B b) WHERE a.x > b.x WITHIN 5",
        "-i",
        str(events),
        "--format",
        "jsonl",
        "-q",
    ]
    text = _cli("run", *query)
    assert text.stdout == ""  # '10' > '9' is false, character by character
    assert _warnings(text) == [
        "warning: a.x > b.x compares text character by character ('10' < '9'), and 'x' holds numbers"
        " written as text: give --schema x:float to compare numbers"
    ]
    fixed = _cli("run", *query, "--schema", "x:float")
    assert [json.loads(line)["a"]["x"] for line in fixed.stdout.splitlines()] == [10.0]
    assert _warnings(fixed) == []
    chosen = _cli("run", *query, "--schema", "x:str")  # text on purpose: no warning
    assert chosen.exit_code == 0 and _warnings(chosen) == []


def test_text_ordering_of_words_is_not_warned(tmp_path: Path) -> None:
    events = tmp_path / "e.csv"
    events.write_text("type,ts,name\nA,1,bob\nB,2,alice\n")
    result = _cli(
        "run", "-e", "PATTERN SEQ(A a, B b) WHERE a.name > b.name WITHIN 5", "-i", str(events), "-q"
    )
    assert result.exit_code == 0 and _warnings(result) == [], result.output


# --- help, version, completion ----------------------------------------------------------------


def test_run_help_is_in_sections_with_the_engines_described() -> None:
    result = _cli("run", "--help")
    assert result.exit_code == 0
    sections = [line for line in result.output.splitlines() if line and not line[0].isspace()]
    assert sections[1:] == [
        "Query:",
        "Input (also in the query: FROM 'file' WITH (name = value, ...)):",
        "Engine:",
        "Output:",
        "Limits:",
        "Spark:",
        "Other:",
    ], sections
    assert "Examples:" in result.output and "cepcli run -e" in result.output


@pytest.mark.parametrize("command", ["run", "explain", "bench"])
def test_help_describes_every_engine_and_kind_there_is(command: str) -> None:
    """The help texts against the real lists (the engines' registry, the kinds' names), so
    that they cannot drift apart again."""
    from cepcli.engines import ENGINES
    from cepcli.sources.kinds import KIND_NAMES

    result = _cli(command, "--help")
    assert result.exit_code == 0
    said = " ".join(result.output.split())
    if command == "run":
        engine_help = said.split("Engine:")[1].split("Output:")[0]
        # (a name the help wraps at its hyphen, "post-" then "processing:", joined again)
        described = re.sub(r"(\w)- (\w)", r"\1-\2", engine_help).replace(" and ", ": ").replace(",", "")
        for name in ENGINES:
            assert f"{name}:" in described, name  # (each engine described, by its name)
    schema = said.split("--schema COL:KIND,...")[1].split("--")[0]
    canonical = {kind.value for kind in KIND_NAMES.values()}
    listed = schema.replace(",", " ").replace("(", " ").replace(")", " ").split()
    assert {k for k in canonical if k in listed} == canonical


@pytest.mark.parametrize("flag", ["-V", "--version"])
def test_version(flag: str) -> None:
    result = _cli(flag)
    assert result.exit_code == 0 and result.output == f"cepcli, version {cepcli.__version__}\n"


def test_shell_completion_completes_engines() -> None:
    env = {
        **os.environ,
        "_CEPCLI_COMPLETE": "bash_complete",
        "COMP_WORDS": "cepcli run --engine ",
        "COMP_CWORD": "3",
    }
    done = subprocess.run([CLI], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    assert {line.split(",")[1] for line in done.stdout.splitlines()} == {
        "tree",
        "chain",
        "first-chance",
        "post-processing",
        "eager",
        "adaptive",
        "columnar",
    }


# --- the table shows what matched -------------------------------------------------------------


def _table_lines(result: Result) -> list[str]:
    return [line for line in result.stdout.splitlines() if line.startswith("│")]


def test_the_table_shows_the_columns_the_conditions_read_unwrapped() -> None:
    result = _cli("run", "patterns/stocks_seq.sase", "-q")  # WHERE a.price > 185 AND c.volume > 1000
    assert result.exit_code == 0, result.output
    first = _table_lines(result)[0]
    cells = [c.strip() for c in first.strip("│").split("│")]
    assert cells == [
        "1",
        "row 2119  2024-03-04T10:52:47Z  price=190.91",
        "row 2203  2024-03-04T10:55:37Z",
        "row 2273  2024-03-04T10:58:19Z  volume=2571",
    ]
    assert len(first) > 80  # a table in a file or a pipe is not cut at 80 columns


def test_show_chooses_the_columns_and_names_a_wrong_one() -> None:
    result = _cli("run", "patterns/stocks_seq.sase", "-q", "--show", "price,exchange")
    cells = [c.strip() for c in _table_lines(result)[0].strip("│").split("│")]
    assert cells[1:] == [
        "row 2119  2024-03-04T10:52:47Z  price=190.91  exchange=NASDAQ",
        "row 2203  2024-03-04T10:55:37Z  price=114.0  exchange=NYSE",
        "row 2273  2024-03-04T10:58:19Z  price=847.91  exchange=ARCA",
    ]
    wrong = _cli("run", "patterns/stocks_seq.sase", "-q", "--show", "pricey")
    assert wrong.exit_code == 2
    assert "--show names no column 'pricey' (columns: ts, type, price, volume, exchange)" in wrong.output


def test_the_table_shows_equivalence_columns_and_kleene_elements() -> None:
    # SEQ(SMOKE s, TEMP+ t[]) WHERE [room] AND s.value > 300 AND t[i].value > 50 ...
    result = _cli("run", "patterns/sensors_kleene.sase", "-q")
    lines = _table_lines(result)
    assert "row 1085  954.597  room=kitchen  value=653.0" in lines[0]  # numeric times as written
    assert "row 1131  990.044  room=kitchen  value=64.0" in lines[0]


def test_the_table_shows_text_dates_as_iso(tmp_path: Path) -> None:
    data = tmp_path / "e.csv"
    data.write_text("type,ts\nA,20240304 1052\nB,20240304 1053\n")
    args = ["-e", "PATTERN SEQ(A a, B b) WITHIN 5 min", "-i", str(data), "--time-format", "%Y%m%d %H%M", "-q"]
    result = _cli("run", *args)
    cells = [c.strip() for c in _table_lines(result)[0].strip("│").split("│")]
    assert cells == ["1", "row 0  2024-03-04T10:52:00Z", "row 1  2024-03-04T10:53:00Z"]


# --- progress ---------------------------------------------------------------------------------


def _drawn(total: int | None, steps: list[tuple[int, int, int, int]]) -> str:
    """What the progress shows on a terminal after each (bytes read, rows, events, matches)."""
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=150)
    stats, matches = Stats(), [0]
    with progress_bar(console, total, stats, lambda: matches[0]) as advance:
        for done, rows, events, found in steps:
            stats.events, stats.relevant_events, matches[0] = rows, events, found
            advance(done)
            time.sleep(0.25)  # rich redraws ten times a second
    return re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", out.getvalue())


def test_progress_shows_reading_then_matching_with_live_counts() -> None:
    drawn = _drawn(2_000, [(1_000, 500, 40, 3), (2_000, 1_000, 70, 9)])
    assert "reading" in drawn and "500 rows  3 matches" in drawn
    assert "matching" in drawn and "70 events evaluated  9 matches" in drawn


def test_progress_on_a_pipe_counts_rows_and_matches() -> None:
    drawn = _drawn(None, [(10, 1_234, 99, 5)])
    assert "reading" in drawn and "1,234 rows  5 matches" in drawn


@pytest.mark.parametrize(
    "args",
    [
        ["run", "patterns/stocks_seq.sase", "--format", "jsonl", "-q"],
        ["run", "patterns/stocks_seq.sase", "--format", "csv", "-q", "--engine", "eager", "--sort"],
        ["explain", "patterns/stocks_seq.sase", "--format", "json"],
        ["bench", "patterns/stocks_seq.sase", "--repeat", "1", "--engines", "eager,tree"],
    ],
    ids=["run-jsonl", "run-csv-sorted", "explain", "bench"],
)
def test_the_program_runs_without_importing_pandas(args: list[str]) -> None:
    """pyarrow imports pandas on its first array when it can (a quarter of a second, a
    third of a small run); a local run hands pyarrow no pandas object, so the program tells
    it there is none (``cepcli.cli.main``). The output is the same as with pandas (the
    in-process run, where pandas is loaded), and pandas is never imported."""
    root = Path(__file__).resolve().parent.parent
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('pandas imported:', 'pandas' in sys.modules, file=sys.stderr))\n"
        "from cepcli.cli import main\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *args], cwd=root, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1] == "pandas imported: False", done.stderr
    here = os.getcwd()
    try:
        os.chdir(root)
        with_pandas = CliRunner().invoke(cli, args)
    finally:
        os.chdir(here)
    assert with_pandas.exit_code == 0, with_pandas.output
    if args[0] == "bench":  # its timings differ run to run; the matches and counts do not
        assert _bench_counts(done.stdout) == _bench_counts(with_pandas.stdout) != []
    else:
        assert done.stdout == with_pandas.stdout


def _bench_counts(out: str) -> list[list[str]]:
    """The bench table's engine, matches and agreement, row by row."""
    from cepcli.engines import ENGINES

    rows = [line.split() for line in out.splitlines()]
    return [
        [next(t for t in cells if t in ENGINES), cells[-2], cells[-1]]
        for cells in rows
        if any(t in ENGINES for t in cells) and cells[-1] in ("yes", "NO")
    ]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["check", "-e", "PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 5 min"], "<-e>: ok"),
        (["explain", "-e", "PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 5 min", "--engine", "tree"], "tree"),
        (["check", "-e", "FROM 'nowhere.csv' PATTERN SEQ(A a, B b) WITHIN 5 min"], None),
    ],
    ids=["check", "explain", "check-with-an-input"],
)
def test_checking_a_query_without_an_input_does_not_import_pyarrow(args: list[str], said: str | None) -> None:
    """``check`` and ``explain`` of a query alone need the parser and the builders, not the
    readers: pyarrow (and the numpy it imports) is 0.2 s of their start-up. Given an input,
    the readers are imported to check it against its columns."""
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('pyarrow imported:', 'pyarrow' in sys.modules, file=sys.stderr))\n"
        "from cepcli.cli import main\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120)
    if said is None:  # the input is opened (and missing): the readers were needed
        assert done.returncode != 0 and "nowhere.csv" in done.stderr, done.stderr
        assert done.stderr.splitlines()[-1] == "pyarrow imported: True", done.stderr
        return
    assert done.returncode == 0, done.stderr
    assert said in done.stdout
    assert done.stderr.splitlines()[-1] == "pyarrow imported: False", done.stderr


def test_a_query_given_as_a_file_name_suggests_e(tmp_path: Path) -> None:
    """The query's text where a file name goes: one line, with the -e to write instead."""
    data = tmp_path / "in.csv"
    data.write_text("type,ts\nA,1\nB,2\n")
    result = CliRunner().invoke(cli, ["run", "PATTERN SEQ(A a, B b) WITHIN 5", "-i", str(data)])
    assert result.exit_code == 2
    assert result.stderr.strip().endswith(
        "cannot read the query file: No such file or directory; to give the query's text, use -e:"
        " cepcli run -e 'PATTERN SEQ(A a, B b) WITHIN 5'"
    ), result.stderr


def test_one_match_is_one_match(tmp_path: Path) -> None:
    data = tmp_path / "in.csv"
    data.write_text("type,ts\nA,1\nB,2\n")
    result = CliRunner().invoke(cli, ["run", "-e", "PATTERN SEQ(A a, B b) WITHIN 5", "-i", str(data), "-q"])
    assert result.exit_code == 0 and result.stdout.strip().splitlines()[-1] == "1 match"


def test_a_date_with_the_month_or_day_first_gets_the_formats_that_read_it(tmp_path: Path) -> None:
    data = tmp_path / "us.csv"
    data.write_text("type,ts\nA,03/04/2024 10:00\nB,03/04/2024 10:01\n")
    query = ["run", "-e", "PATTERN SEQ(A a, B b) WITHIN 5 min", "-i", str(data), "-q", "--format", "jsonl"]
    result = CliRunner().invoke(cli, query)
    assert result.exit_code == 1 and result.stderr.strip().endswith(
        "cannot read timestamp '03/04/2024 10:00' as an ISO-8601 date-time (month first? give"
        " --time-format '%m/%d/%Y %H:%M'; day first: --time-format '%d/%m/%Y %H:%M')"
    ), result.stderr
    read = CliRunner().invoke(cli, [*query, "--time-format", "%m/%d/%Y %H:%M"])
    assert read.exit_code == 0 and len(read.stdout.splitlines()) == 1


def test_a_dataframe_indexed_by_time_is_told_to_reset_it() -> None:
    import pandas as pd

    import cepcli
    from cepcli.errors import InputError

    frame = pd.DataFrame({"type": ["A", "B"], "ts": [1, 2]}).set_index("ts")
    with pytest.raises(InputError, match=r"'ts' is the DataFrame's index: pass frame.reset_index\(\)$"):
        cepcli.find("PATTERN SEQ(A a, B b) WITHIN 5", frame)
    assert len(list(cepcli.find("PATTERN SEQ(A a, B b) WITHIN 5", frame.reset_index()))) == 1


def test_waiting_on_a_terminal_says_so() -> None:
    """``cepcli run`` with no input and a terminal for standard input: a line on standard
    error says what it waits for; the rows typed then are read (Ctrl-D ends them)."""
    import pty
    import select as select_module

    main, terminal = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "cepcli", "run", "-e", "PATTERN SEQ(A a, B b) WITHIN 5", "--format", "jsonl"],
        stdin=terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    os.close(terminal)
    try:
        assert proc.stderr is not None and proc.stdout is not None
        ready, _, _ = select_module.select([proc.stderr], [], [], 60)
        assert ready, "nothing said while waiting"
        assert "reading events from standard input, a terminal" in proc.stderr.readline().decode()
        os.write(main, b"type,ts\nA,1\nB,2\n\x04")
        out, _ = proc.communicate(timeout=60)
        assert json.loads(out.decode().splitlines()[0])["b"]["_row"] == 1
    finally:
        proc.kill()
        os.close(main)


def test_a_time_column_that_is_no_clock_is_questioned(tmp_path: Path) -> None:
    """``--time-col delay``: a column that goes back at a fifth of its first rows is not a
    clock that jitters; a warning asks whether it is the time before the error's advice to
    sort (which would sort by delay). A time column that goes back now and then does not."""
    data = tmp_path / "in.csv"
    delays = [5, 3, 9, 1, 7, 2, 8, 4, 6, 0, 9, 2]
    data.write_text("type,ts,delay\n" + "".join(f"{'AB'[i % 2]},{i},{d}\n" for i, d in enumerate(delays)))
    query = ["run", "-e", "PATTERN SEQ(A a, B b) WITHIN 5", "-i", str(data), "-q", "--format", "jsonl"]
    result = CliRunner().invoke(cli, [*query, "--time-col", "delay"])
    assert result.exit_code == 1 and result.stderr.splitlines()[0] == (
        "warning: the time column 'delay' goes back at 6 of its first 12 rows: is it the time?"
        " (choose the column with --time-col; --sort would sort by it)"
    ), result.stderr
    rows = "".join(f"{'AB'[i % 2]},{i if i != 10 else 3},0\n" for i in range(12))
    data.write_text("type,ts,delay\n" + rows)
    jitter = CliRunner().invoke(cli, query)
    assert jitter.exit_code == 1 and "pass --sort to sort it" in jitter.stderr
    assert "is it the time?" not in jitter.stderr


def test_spark_without_pyspark_says_how_to_get_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """PySpark is an extra (``pip install 'cepcli[spark]'``): ``--spark`` without it is one
    line, before any work."""
    data = tmp_path / "in.csv"
    data.write_text("type,ts\nA,1\nB,2\n")
    monkeypatch.setitem(sys.modules, "pyspark", None)  # import pyspark raises ImportError
    query = "PATTERN SEQ(A a, B b) WITHIN 5"
    result = CliRunner().invoke(cli, ["run", "-e", query, "-i", str(data), "--spark"])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "cepcli: error: --spark needs PySpark, which the base install leaves out:"
        " pip install 'cepcli[spark]' (and Java 17)"
    ), result.stderr
