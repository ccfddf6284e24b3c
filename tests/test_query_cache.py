"""The query parser's tables, cached between runs (``cepcli.query.parser.parser_for``): made
once, loaded after, made again when the cache is damaged, unwritable or of another grammar."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest
from lark import Lark
from lark.exceptions import UnexpectedInput

from cepcli.query.parser import parse_query, parser_for

GRAMMAR = resources.files("cepcli.query").joinpath("grammar.lark").read_text()
GOOD = "PATTERN SEQ(A a, B+ b[], NOT(C c), D d)\nWHERE a.x < d.x AND b[i].y > 2\nWITHIN 5 minutes"
BAD = "PATTERN SEQ(A a, B b)\nWHERE a.x <\nWITHIN 5 s"


def _error(parser: Lark) -> tuple[int, int]:
    with pytest.raises(UnexpectedInput) as caught:
        parser.parse(BAD)
    return caught.value.line, caught.value.column


def test_made_once_then_loaded_with_the_same_trees_and_error_places(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = parser_for(GRAMMAR, tmp_path)
    saved = list(tmp_path.iterdir())
    assert [p.suffix for p in saved] == [".lark"]  # nothing half-written left beside it
    made: list[object] = []
    original = Lark.__init__
    monkeypatch.setattr(Lark, "__init__", lambda self, *a, **k: made.append(a) or original(self, *a, **k))
    loaded = parser_for(GRAMMAR, tmp_path)
    assert made == []  # loaded, not built
    assert loaded.parse(GOOD) == built.parse(GOOD)
    assert [(t.meta.line, t.meta.column) for t in loaded.parse(GOOD).iter_subtrees()] == [
        (t.meta.line, t.meta.column) for t in built.parse(GOOD).iter_subtrees()
    ]
    assert _error(loaded) == _error(built) == (3, 1)  # WITHIN, where an operand was due


def test_a_damaged_cache_is_made_again(tmp_path: Path) -> None:
    parser_for(GRAMMAR, tmp_path)
    (saved,) = tmp_path.iterdir()
    saved.write_bytes(saved.read_bytes()[:100])  # cut short, as by a full disk
    assert parser_for(GRAMMAR, tmp_path).parse(GOOD)
    assert Lark.load(saved.open("rb")).parse(GOOD)  # and written whole again


def test_another_grammar_gets_its_own_file(tmp_path: Path) -> None:
    parser_for(GRAMMAR, tmp_path)
    other = GRAMMAR + "\n// a comment changes nothing but the text\n"
    parser_for(other, tmp_path)
    assert len(list(tmp_path.iterdir())) == 2


def test_an_unwritable_cache_is_passed_over(tmp_path: Path) -> None:
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")
    assert parser_for(GRAMMAR, blocked).parse(GOOD)
    assert blocked.read_text() == ""


def _run(cache: Path, query: str, data: Path) -> subprocess.CompletedProcess[str]:
    """``cepcli run -e query`` as a user runs it, with ``cache`` as its cache home; it says
    on standard error, at exit, whether lark was imported."""
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('lark imported:', 'lark' in sys.modules, file=sys.stderr))\n"
        "from cepcli.cli import main\n"
        "main()\n"
    )
    args = ["run", "-e", query, "-i", str(data), "--format", "jsonl", "-q"]
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    command = [sys.executable, "-c", code, *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)


def test_a_query_run_before_is_not_parsed_again(tmp_path: Path) -> None:
    """``cepcli.query.reuse``: the second run of a query loads its parse (lark is not even
    imported, a noticeable part of the start) and finds the same matches; a damaged entry
    is parsed again; a query that does not parse is reported each time, never kept."""
    data = tmp_path / "in.csv"
    data.write_text("type,ts,x\nA,1,5\nB,2,7\nA,3,9\nB,4,1\n")
    query = "PATTERN SEQ(A a, B b)\nWHERE a.x < b.x\nWITHIN 5"
    first = _run(tmp_path, query, data)
    assert first.returncode == 0 and first.stderr.splitlines()[-1] == "lark imported: True", first.stderr
    (entry,) = (tmp_path / "cepcli" / "queries").iterdir()
    again = _run(tmp_path, query, data)
    assert again.returncode == 0 and again.stderr.splitlines()[-1] == "lark imported: False", again.stderr
    assert again.stdout == first.stdout and len(first.stdout.splitlines()) == 1

    entry.write_bytes(entry.read_bytes()[:20])  # cut short, as by a full disk
    damaged = _run(tmp_path, query, data)
    assert damaged.stdout == first.stdout and damaged.stderr.splitlines()[-1] == "lark imported: True"
    assert pickle.loads(entry.read_bytes()) == parse_query(query)  # written whole again

    bad = "PATTERN SEQ(A a, B b)\nWHERE a.x <\nWITHIN 5"
    for _ in range(2):
        failed = _run(tmp_path, bad, data)
        assert failed.returncode == 2 and "<-e>:3:1" in failed.stderr, failed.stderr
    assert len(list((tmp_path / "cepcli" / "queries").iterdir())) == 1


def test_the_cache_of_queries_stays_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cepcli.query import reuse

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(reuse, "KEPT", 6)
    for i in range(20):
        assert reuse.parse(f"PATTERN SEQ(A a, B b) WITHIN {i + 1}").window is not None
    kept = list((tmp_path / "cepcli" / "queries").iterdir())
    assert 0 < len(kept) <= 6 and all(p.suffix == ".pickle" for p in kept)
