"""``cepcli explain``: golden outputs for the paper's examples, in every format."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from cepcli.cli import cli

GOLDEN = Path(__file__).parent / "golden" / "explain"
CASES = [line.split(maxsplit=1) for line in (GOLDEN / "cases.txt").read_text().splitlines() if line.strip()]
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"


def _explain(args: list[str]) -> str:
    result = CliRunner().invoke(cli, ["explain", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def _check(name: str, text: str) -> None:
    golden = GOLDEN / name
    if UPDATE:
        golden.write_text(text)
    assert text == golden.read_text()


@pytest.mark.parametrize(("name", "args"), CASES, ids=[c[0] for c in CASES])
def test_text(name: str, args: str) -> None:
    words = shlex.split(args)
    _check(f"{name}.txt", _explain([str(GOLDEN / words[0]), *words[1:]]))


@pytest.mark.parametrize("fmt", ["dot", "json"])
def test_other_formats(fmt: str) -> None:
    args = [str(GOLDEN / "example_1_1.sase"), "--engine", "chain", "--order", "c,b,a", "--format", fmt]
    _check(f"example_1_1_chain_cba.{fmt}", _explain(args))


def test_json_is_the_structure_as_data() -> None:
    args = [
        str(GOLDEN / "pattern_4.sase"),
        "--engine",
        "first-chance",
        "--order",
        "c,a,d,b",
        "--format",
        "json",
    ]
    data = json.loads(_explain(args))
    assert data["engine"] == "first-chance"
    assert data["order"] == ["c", "a", "d", "b"] and data["order_source"] == "--order"
    (chain,) = data["automata"]
    assert [s["id"] for s in chain["states"]] == ["q1", "q2", "q3", "F", "R"]
    rejects = [e for e in chain["edges"] if e["target"] == "R" and e["action"] == "take"]
    assert rejects == [
        {
            "source": "q3",
            "target": "R",
            "action": "take",
            "events": ["B b"],
            "condition": "b.x < c.y",
            "prec": ["a"],
            "succ": ["c", "d"],
        }
    ]


def test_order_measured_from_the_input_says_so(tmp_path: Path) -> None:
    query = tmp_path / "q.sase"
    query.write_text("PATTERN SEQ(A a, B b, C c) WITHIN 10")
    data = tmp_path / "in.csv"
    data.write_text("ts,type\n0,A\n1,A\n2,A\n3,B\n4,B\n5,C\n")
    text = _explain([str(query), "--engine", "chain", "--input", str(data)])
    assert "order: c, b, a (measured over all 6 rows)" in text
    assert "chain order c, b, a" in text


def test_tree_with_many_variables_lists_the_root_choices_and_a_count(tmp_path: Path) -> None:
    query = tmp_path / "q.sase"
    query.write_text("PATTERN AND(A a, B b, C c, D d, E e) WITHIN 10")
    text = _explain([str(query), "--engine", "tree"])
    assert "5 variables: only the root's choices are listed" in text
    assert text.count("lazily instantiated") == 5


def test_the_documented_example_is_what_explain_prints() -> None:
    page = (Path(__file__).parent.parent / "docs" / "engines.md").read_text()
    command = "$ cepcli explain tests/golden/explain/pattern_4.sase --engine first-chance --order c,a,d,b\n"
    shown = page.split(command, 1)[1].split("```", 1)[0]
    args = [str(GOLDEN / "pattern_4.sase"), "--engine", "first-chance", "--order", "c,a,d,b"]
    assert shown == _explain(args)


NEGATED = "PATTERN SEQ(A a, NOT(B b), C c, NOT(D d)) WHERE b.x < c.x AND a.k = c.k AND d.k = a.k WITHIN 10"


@pytest.mark.parametrize(
    ("engine", "how"),
    [
        ("eager", "checked when a match is complete (on acceptance)"),
        ("tree", "checked after the positive part is matched (post-processing)"),
        ("columnar", "an anti-join after the joins of the positive variables"),
        (
            "adaptive",
            "an anti-join after the joins of the positive variables; in the segments, checked when a"
            " match is complete (on acceptance) under eager, checked after the positive part is"
            " matched (post-processing) under the chain and the tree",
        ),
    ],
)
def test_each_engine_says_where_a_negation_is_checked(engine: str, how: str) -> None:
    """As the chain engines' automata show their negative states: each negated variable,
    where the engine checks it, and which of its events drop a match (between which bound
    variables, and its conditions)."""
    notes = [
        line for line in _explain(["-e", NEGATED, "--engine", engine]).splitlines() if line.startswith("NOT")
    ]
    assert notes == [
        f"NOT B b: {how}; an event of b after a and before c within the window with b.x < c.x"
        " drops the match",
        f"NOT D d: {how}; an event of d after a, c within the window with d.k = a.k drops the match",
    ]


def test_the_default_engine_shows_the_joins_it_runs_then_the_segments_tree() -> None:
    text = _explain(["-e", NEGATED])
    assert text.index("columnar branch 1") < text.index("tree 1")
    assert "  columnar    a file or a pipe (step by step, the window's tail carried)" in text
    kleene = _explain(["-e", "PATTERN SEQ(A a, B+ b[], NOT(C c), D d) WITHIN 10"])
    assert "columnar branch" not in kleene and "tree 1" in kleene
    assert "NOT C c: checked after the positive part is matched (post-processing)" in kleene
