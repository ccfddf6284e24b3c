"""``cepcli bench``: engines side by side, their agreement checked."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from cepcli import engines as registry
from cepcli.cli import cli

QUERY = "PATTERN SEQ(A a, B b, C c) WHERE a.x < c.x WITHIN 10\n"
ROWS = "ts,type,x\n" + "".join(f"{i},{'ABBBC'[i % 5]},{i % 7}\n" for i in range(200))


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    query, data = tmp_path / "q.sase", tmp_path / "in.csv"
    query.write_text(QUERY)
    data.write_text(ROWS)
    return query, data


def _bench(files: tuple[Path, Path], *extra: str) -> object:
    query, data = files
    args = ["bench", str(query), "-i", str(data), "--engines", "eager,chain,tree", "--repeat", "1", *extra]
    return CliRunner().invoke(cli, args)


def test_table_and_json_for_every_engine_and_window(files: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    result = _bench(files, "--windows", "5,10", "--json", str(out))
    assert result.exit_code == 0, result.output
    assert "input read once" in result.stdout and "run s" in result.stdout
    data = json.loads(out.read_text())
    assert data["events"] == 200 and data["windows"] == ["5", "10"]
    cells = data["cells"]
    assert [(c["window"], c["engine"]) for c in cells] == [
        (w, e) for w in ("5", "10") for e in ("eager", "chain", "tree")
    ]
    assert all(c["agrees"] for c in cells)
    for window in ("5", "10"):
        hashes = {c["match_hash"] for c in cells if c["window"] == window}
        assert len(hashes) == 1
    assert {c["matches"] for c in cells if c["window"] == "5"} != {0}
    assert all(c["events_per_second"] > 0 and c["peak_memory_mb"] >= 0 for c in cells)


def test_a_disagreeing_engine_is_flagged_and_fails(
    files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = registry.ENGINES["tree"]

    def lossy(automaton, events, schema, stats, options):  # type: ignore[no-untyped-def]
        for i, match in enumerate(real.evaluate(automaton, events, schema, stats, options)):
            if i:  # drops the first match
                yield match

    monkeypatch.setitem(registry.ENGINES, "tree", registry.Engine("tree", real.build, lossy, real.lazy))
    result = _bench(files)
    assert result.exit_code == 1
    assert [line.split()[-1] for line in result.stdout.splitlines() if " tree " in line] == ["NO"]
    assert "the engines found different matches" in result.stderr


def test_the_table_leads_with_the_run_s_time_and_fits_80_columns(files: tuple[Path, Path]) -> None:
    every = "eager,chain,tree,adaptive,first-chance,post-processing,columnar"
    result = _bench(files, "--windows", "5,10", "--engines", every)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "…" not in result.stdout  # (no cell or header cut)
    header = next(line for line in lines if line.split()[:3] == ["window", "engine", "run"])
    assert header.split()[2:6] == ["run", "s", "ev/s", "ev/s"]  # (the run's time and rate first)
    rows = [line.split() for line in lines if line.split()[:2] in (["5", "eager"], ["10", "post-processing"])]
    assert len(rows) == 2 and all(float(r[2]) > 0 for r in rows)
    wide = _bench(files, "--windows", "5", "--wide")
    assert "vs eager" in wide.stdout and "memops/event" in wide.stdout


def test_plot_draws_a_png(files: tuple[Path, Path], tmp_path: Path) -> None:
    picture = tmp_path / "bench.png"
    result = _bench(files, "--windows", "5,10", "--plot", str(picture))
    assert result.exit_code == 0, result.output
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_without_matplotlib_says_how_to_install_it(
    files: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    picture = tmp_path / "bench.png"
    result = _bench(files, "--windows", "5,10", "--plot", str(picture))
    assert result.exit_code == 2
    assert "pip install 'cepcli[plot]'" in result.stderr
    assert not picture.exists()


def test_bench_counts_relevant_events_as_run_does(tmp_path: Path) -> None:
    """Rows no variable can use make clock ticks for the engines; neither ``run`` nor
    ``bench`` counts them as relevant events, and bench says what its events/s times."""
    data = tmp_path / "in.csv"
    data.write_text("type,ts\nA,1\nX,2\nB,3\nX,4\nA,5\nX,6\n")
    query = "PATTERN SEQ(A a, B b) WITHIN 5"
    report, stats = tmp_path / "bench.json", tmp_path / "run.json"
    bench = CliRunner().invoke(
        cli, ["bench", "-e", query, "-i", str(data), "--engines", "tree", "--json", str(report)]
    )
    assert bench.exit_code == 0, bench.output
    said = " ".join(bench.stdout.split())
    assert "ev/s: the input's rows over that; eng ev/s: over the engine's own time" in said
    run = CliRunner().invoke(cli, ["run", "-e", query, "-i", str(data), "-q", "--stats-json", str(stats)])
    assert run.exit_code == 0
    assert (
        json.loads(report.read_text())["relevant_events"]
        == json.loads(stats.read_text())["relevant_events"]
        == 3
    )


def test_every_cell_measures_its_own_peak_memory(tmp_path: Path) -> None:
    """Each cell's peak is that of a run of its own after a warm-up run: the first cell
    does not carry what a first run fills (caches, imports), and none reads 0."""
    report = tmp_path / "bench.json"
    args = [
        "bench",
        "patterns/stocks_seq.sase",
        "--engines",
        "eager,tree",
        "--windows",
        "5min,10min",
        "--repeat",
        "1",
        "--json",
        str(report),
    ]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    peaks = {(c["window"], c["engine"]): c["peak_memory_mb"] for c in json.loads(report.read_text())["cells"]}
    assert all(p > 0 for p in peaks.values()), peaks
    assert peaks[("5min", "eager")] < 5 * peaks[("10min", "eager")] + 0.05, peaks
