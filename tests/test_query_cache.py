"""The query parser's tables, cached between runs (``cepcli.query.parser.parser_for``): made
once, loaded after, made again when the cache is damaged, unwritable or of another grammar."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest
from lark import Lark
from lark.exceptions import UnexpectedInput

from cepcli.query.parser import parser_for

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
