"""The README's Python example runs as written and finds what ``cepcli run`` finds."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from cepcli.cli import cli

ROOT = Path(__file__).resolve().parent.parent


def _example() -> str:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## From Python") :]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found, "the README's From Python section has no example"
    return found.group(1)


def test_the_readme_python_example_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(_example(), "README.md", "exec"), {})
    lines = out.getvalue().splitlines()
    cli_run = CliRunner().invoke(cli, ["run", "patterns/stocks_seq.sase", "--format", "jsonl", "-q"])
    matches = [json.loads(line) for line in cli_run.stdout.splitlines()]
    assert len(matches) == 2
    for match, line in zip(matches, lines, strict=False):  # the loop prints a row per match
        assert line.split()[0] == str(match["a"]["_row"])
    assert lines[len(matches)].split() == [str(len(matches)), "20443"]  # stats.matches, stats.events
    assert "a._row" in out.getvalue() and str(matches[0]["c"]["_row"]) in out.getvalue()


def test_the_readme_many_queries_example_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The second example (a dict of queries) prints, for each query, the matches that
    query finds alone, and each query finds some."""
    import cepcli

    monkeypatch.chdir(ROOT)
    section = (ROOT / "README.md").read_text().split("## From Python", 1)[1]
    second = re.findall(r"```python\n(.*?)```", section, re.S)[1]
    out, names = io.StringIO(), {}  # type: ignore[var-annotated]
    with contextlib.redirect_stdout(out):
        exec(compile("import cepcli\n" + second, "README.md", "exec"), names)
    printed = [tuple(line.split()) for line in out.getvalue().splitlines()]
    alone = [
        (name, str(m["a"]["_row"]), str(m["b"]["_row"]))
        for name, text in names["rules"].items()
        for m in cepcli.find(text, "sample_data/stocks.csv")
    ]
    assert sorted(printed) == sorted(alone) and {p[0] for p in printed} == set(names["rules"])
