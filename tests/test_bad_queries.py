"""The bad queries of the reliability issue, end to end through the real CLI.

Each row is a query with one mistake from the issue's list. ``cepcli run`` and
``cepcli check`` (both with an input CSV, so the checks against its columns run too)
must exit with code 2 and print exactly the caret snippet: ``file:line:col: message``
naming the spot, the query line, and a caret under that column; never a traceback.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cepcli.cli import cli

# price and vol are numeric columns, sym holds text.
EVENTS = """\
ts,type,price,vol,sym
0,A,10,5,IBM
1,B,12,6,ORCL
2,C,11,7,IBM
"""


@dataclass(frozen=True)
class Bad:
    name: str
    query: str
    line: int
    col: int
    message: str  # a regular expression the message must contain
    at: str  # the query text the caret starts under


BAD_QUERIES = [
    Bad(
        "unbalanced-close-paren",
        "PATTERN SEQ(A a, B b))\nWITHIN 10 s\n",
        1,
        22,
        r"unbalanced parentheses: this '\)' has no matching '\('",
        ")",
    ),
    Bad(
        "unbalanced-open-paren",
        "PATTERN SEQ(A a,\n  AND(B b, C c)\nWITHIN 10 s\n",
        3,
        1,
        r"expected ',' or '\)' in the pattern, found 'WITHIN'",
        "WITHIN",
    ),
    Bad(
        "unbalanced-paren-in-condition",
        "PATTERN SEQ(A a, B b)\nWHERE (a.price > 1 AND (b.price < 2)\nWITHIN 10 s\n",
        3,
        1,
        r"unexpected 'WITHIN'; expected '\)'",
        "WITHIN",
    ),
    Bad(
        "missing-within",
        "PATTERN SEQ(A a, B b)\nWHERE a.price < b.price\n",
        2,
        24,
        r"missing WITHIN clause",
        "",
    ),
    Bad(
        "unknown-variable",
        "PATTERN SEQ(A a, B b)\nWHERE a.price > 1 AND z.price < a.price\nWITHIN 10 s\n",
        2,
        23,
        r"unknown variable 'z' \(the pattern declares a, b\)",
        "z.price",
    ),
    Bad(
        "duplicate-variable",
        "PATTERN SEQ(A a,\n  OR(B b, C a))\nWITHIN 10 s\n",
        2,
        11,
        r"variable 'a' is declared twice",
        "C a",
    ),
    Bad(
        "attribute-the-input-lacks",
        "PATTERN SEQ(A a, B b)\nWHERE a.price < b.prise\nWITHIN 10 s\n",
        2,
        17,
        r"the input has no column 'prise' \(did you mean 'price'\? columns: ts, type, price, vol, sym\)",
        "b.prise",
    ),
    Bad(
        "index-on-a-single-event",
        "PATTERN SEQ(A a, B b)\nWHERE b[i].price > a.price\nWITHIN 10 s\n",
        2,
        7,
        r"b\[i\] indexes a single event: b is not a Kleene variable",
        "b[i].price",
    ),
    Bad(
        "not-of-a-whole-pattern",
        "PATTERN SEQ(A a, NOT(SEQ(B b, C c)))\nWITHIN 10 s\n",
        1,
        18,
        r"NOT applies to a single event 'Type var', not to a whole pattern",
        "NOT(SEQ(",
    ),
    Bad(
        "kleene-inside-not",
        "PATTERN SEQ(A a, NOT B+ b[], C c)\nWITHIN 10 s\n",
        1,
        22,
        r"Kleene closure inside NOT is not supported",
        "B+ b[]",
    ),
    Bad(
        "bounded-kleene-inside-not",
        "PATTERN SEQ(A a, ~B{2,3} b[], C c)\nWITHIN 10 s\n",
        1,
        19,
        r"Kleene closure inside NOT is not supported",
        "B{2,3} b[]",
    ),
    Bad(
        "negative-window", "PATTERN SEQ(A a, B b)\nWITHIN -5 s\n", 2, 8, r"the window must be positive", "-5"
    ),
    Bad(
        "negative-window-spaced",
        "PATTERN SEQ(A a, B b)\nWITHIN\n  - 5 minutes\n",
        3,
        3,
        r"the window must be positive",
        "- 5",
    ),
    Bad("zero-window", "PATTERN SEQ(A a, B b)\nWITHIN 0 s\n", 2, 8, r"the window must be positive", "0"),
    Bad(
        "zero-window-decimal",
        "PATTERN SEQ(A a, B b)\nWITHIN 0.0 min\n",
        2,
        8,
        r"the window must be positive",
        "0.0",
    ),
    Bad(
        "strategy-on-an-and",
        "PATTERN AND(A a, B b)\nWHERE skip_till_next_match { a.price < b.price }\nWITHIN 10 s\n",
        2,
        7,
        r"skip_till_next_match needs the events in a sequence, and a and b are not ordered",
        "skip_till_next_match",
    ),
    Bad(
        "strategy-next-match-over-a-run-read-whole",
        "PATTERN SEQ(A a, B+ b[])\nWHERE skip_till_next_match { b[i].price > avg(b[].price) }\nWITHIN 10 s\n",
        2,
        7,
        r"skip_till_next_match over b: a condition that reads b\[i\] and the whole run \(b\[last\] or b\[\]\)"
        r" cannot say which event is the run's next: not supported yet",
        "skip_till_next_match",
    ),
    Bad(
        "strategy-next-match-run-and-a-later-variable",
        "PATTERN SEQ(B+ b[], C c)\nWHERE skip_till_next_match { b[i].price < c.price }\nWITHIN 10 s\n",
        2,
        7,
        r"skip_till_next_match: the condition b\[i\].price < c.price reads b\[i\] and a later variable",
        "skip_till_next_match",
    ),
    Bad(
        "strategy-partition-without-attr",
        "PATTERN SEQ(A a, B b)\nWHERE partition_contiguity\nWITHIN 10 s\n",
        2,
        7,
        r"partition_contiguity needs the partition: add \[attr\]",
        "partition_contiguity",
    ),
    Bad(
        "strategy-names-no-variable",
        "PATTERN SEQ(A a, B b)\nWHERE skip_till_next_match(a, c) { a.price < b.price }\nWITHIN 10 s\n",
        2,
        7,
        r"skip_till_next_match names 'c', which is no positive variable of the pattern",
        "skip_till_next_match",
    ),
    Bad(
        "string-compared-with-a-numeric-column",
        "PATTERN SEQ(A a, B b)\nWHERE a.sym = 'IBM' AND b.price = 'IBM'\nWITHIN 10 s\n",
        2,
        25,
        r"b\.price is a number and 'IBM' is text: they cannot be compared",
        "b.price = 'IBM'",
    ),
    Bad(
        "numeric-column-compared-with-a-string",
        "PATTERN SEQ(A a, B b)\nWHERE 'ten' < a.vol\nWITHIN 10 s\n",
        2,
        7,
        r"'ten' is text and a\.vol is a number: they cannot be compared",
        "'ten' < a.vol",
    ),
]


def _invoke(args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, query: str) -> Result:
    (tmp_path / "bad.sase").write_text(query, encoding="utf-8")
    (tmp_path / "events.csv").write_text(EVENTS, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return CliRunner().invoke(cli, args)


def _describe(result: Result) -> str:
    return f"exit {result.exit_code}\n--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}"


@pytest.mark.parametrize("command", ["run", "check"])
@pytest.mark.parametrize("bad", [pytest.param(b, id=b.name) for b in BAD_QUERIES])
def test_bad_query_is_reported_at_its_place(
    bad: Bad, command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = _invoke([command, "bad.sase", "--input", "events.csv"], tmp_path, monkeypatch, bad.query)
    shown = _describe(result)
    assert result.exit_code == 2, shown
    assert result.exception is None or isinstance(result.exception, SystemExit), shown
    assert "Traceback" not in result.output and "internal error" not in result.output, shown
    assert result.stdout == "", shown

    lines = result.stderr.rstrip("\n").split("\n")
    assert len(lines) == 3, f"expected file:line:col: message, the line, a caret\n{shown}"
    head = re.fullmatch(r"bad\.sase:(\d+):(\d+): (.+)", lines[0])
    assert head, shown
    assert (int(head.group(1)), int(head.group(2))) == (bad.line, bad.col), shown
    assert re.search(bad.message, head.group(3)), shown

    source, caret = lines[1], lines[2]
    query_line = bad.query.split("\n")[bad.line - 1]
    assert source == "    " + query_line, shown
    assert re.fullmatch(r" *\^+", caret), shown
    assert caret.index("^") == 4 + bad.col - 1, shown
    assert query_line[bad.col - 1 :].startswith(bad.at), shown


def test_every_issue_item_is_covered() -> None:
    """The issue's list, one or more rows each."""
    names = " ".join(b.name for b in BAD_QUERIES)
    for item in [
        "unbalanced",
        "missing-within",
        "unknown-variable",
        "duplicate-variable",
        "attribute-the-input-lacks",
        "index-on-a-single-event",
        "not-of-a-whole-pattern",
        "kleene-inside-not",
        "negative-window",
        "zero-window",
        "strategy-",
        "string-compared-with-a-numeric-column",
    ]:
        assert item in names, item
