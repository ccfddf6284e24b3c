"""Mutation fuzzing of the query front end (the reliability issue).

Every valid query we ship (``tests/golden/valid`` and ``patterns/*.sase``) is cut
into tokens, and hypothesis mutates the token list: delete, duplicate, repeat, swap,
replace (with any token of the corpus, one of the same kind, or one of the same query),
insert, truncate, and nest a stretch hundreds of levels deep. Whatever comes out, the whole
front end - parse, the query-only checks, the checks against an input schema (with
columns of known kinds, and with none), DNF normalisation, and every engine's
automaton - must either succeed or raise cepcli's own ``CepError``; never a
``KeyError``, a lark exception, a ``RecursionError``, an ``AssertionError``, ...
A ``QueryError`` must also point at a place: ``file:line:col: message``.

CI runs a fixed, derandomised few hundred examples. A longer local soak:
``CEPCLI_FUZZ_EXAMPLES=20000 pytest tests/test_fuzz_queries.py``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cepcli.engines import ENGINES, compile_pattern
from cepcli.errors import SNIPPET, CepError, QueryError
from cepcli.events import Kind, Schema
from cepcli.query.checks import check_schema
from cepcli.query.parser import MAX_DEPTH, MAX_REPETITION
from cepcli.query.printer import print_query

ROOT = Path(__file__).parent.parent
CORPUS_FILES = sorted((ROOT / "tests" / "golden" / "valid").glob("*.sase")) + sorted(
    (ROOT / "patterns").glob("*.sase")
)
EXAMPLES = int(os.environ.get("CEPCLI_FUZZ_EXAMPLES", "400"))
FILENAME = "fuzz.sase"

# Comments, quoted strings, numbers, names, the two-character operators, then any
# other single non-blank character. Whitespace is kept as its own token so that
# joining the tokens gives the text back (and line numbers survive).
_TOKEN = re.compile(
    r"""(?P<space>\s+)
      | (?:--|\#)[^\n]*
      | '[^'\n]*' | "[^"\n]*"
      | [0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)? | \.[0-9]+
      | [A-Za-z_][A-Za-z0-9_]*
      | \.\. | == | != | <> | <= | >=
      | \S""",
    re.VERBOSE,
)


def tokenize(text: str) -> list[str]:
    tokens = [m.group(0) for m in _TOKEN.finditer(text)]
    assert "".join(tokens) == text
    return tokens


def _comment(token: str) -> bool:
    return token.startswith(("--", "#"))


def _words(tokens: list[str]) -> list[int]:
    """Positions of the tokens worth mutating: not whitespace, not comments."""
    return [i for i, t in enumerate(tokens) if not t.isspace() and not _comment(t)]


def _kind(token: str) -> str:
    """A coarse token class, for replacements that often keep the query parseable."""
    if token[0] in "'\"":
        return "string"
    if token[0].isdigit() or (token[0] == "." and token[1:2].isdigit()):
        return "number"
    if token[0].isalpha() or token[0] == "_":
        return "word"
    return "symbol"


CORPUS: list[list[str]] = [tokenize(p.read_text(encoding="utf-8")) for p in CORPUS_FILES]
# Beyond the corpus: line ends and blanks the parser and the caret must agree on, a
# character outside the grammar, and literals at the edges of what a number can hold.
EXTRA = ("\n", "\t", "\r\n", "\r", "\f", "\u2028", "\x85", "\u00e9", "1e999", "0", "00", "99999999999")
VOCABULARY: list[str] = sorted({t for tokens in CORPUS for t in tokens if not t.isspace()} | set(EXTRA))
BY_KIND: dict[str, list[str]] = {
    kind: [t for t in VOCABULARY if not _comment(t) and not t.isspace() and _kind(t) == kind]
    for kind in ("string", "number", "word", "symbol")
}

# Column kinds a schema may give: numbers, text and not-yet-known, so the kind checks
# meet every combination. Columns cover every attribute the corpus mentions.
_COLUMNS = ("type", "ts", "x", "y", "price", "volume", "sym", "name", "value", "room", "exchange")
SCHEMAS = (
    Schema(
        _COLUMNS,
        (Kind.STR, Kind.FLOAT, Kind.INT, Kind.FLOAT, Kind.FLOAT, Kind.INT)
        + (Kind.STR,) * 2
        + (Kind.FLOAT, Kind.STR, Kind.STR),
    ),
    Schema(_COLUMNS, (Kind.STR, Kind.STR) + (Kind.UNKNOWN,) * 9),
    Schema(_COLUMNS, (Kind.STR, Kind.FLOAT) + (Kind.STR,) * 9),
    Schema(("type", "ts", "x"), (Kind.STR, Kind.INT, Kind.INT)),
)

_LOCATED = re.compile(rf"\A{re.escape(FILENAME)}:(\d+):(\d+): \S")


def front_end(text: str) -> None:
    """Everything between query text and a running automaton, as ``cepcli run``,
    ``check`` and ``explain`` do it (``cepcli.prepare``): compile, check against
    inputs, build every engine in two orders."""
    query, pattern = compile_pattern(text, FILENAME)
    print_query(query)
    for schema in SCHEMAS:
        try:
            check_schema(query, schema)
        except QueryError as err:
            _assert_located(err.located(text, FILENAME))
    names = tuple(v.name for v in pattern.variables)
    counts = {v.bit: (7 * v.bit + 3) % 5 for v in pattern.variables}
    for engine in ENGINES.values():
        engine.build(pattern, ())
        if engine.lazy:
            engine.build(pattern, names[::-1])
            engine.build(pattern, pattern.rarest_first(counts))


def _assert_located(err: QueryError) -> None:
    rendered = err.render()
    found = _LOCATED.match(rendered)
    assert found, f"a query error without a line:col location:\n{rendered}"
    line, col = int(found.group(1)), int(found.group(2))
    lines = err.source.split("\n")  # the parser ends a line at "\n" only
    assert 1 <= line <= len(lines), rendered
    assert 1 <= col <= len(lines[line - 1]) + 1, rendered
    shown = rendered.split("\n")
    assert len(shown) == 3 and shown[2].strip() and set(shown[2].strip()) == {"^"}, rendered
    at = len(shown[2]) - len(shown[2].lstrip()) - 4  # the caret's column in the line shown
    text = lines[line - 1].removesuffix("\r").expandtabs(1)
    if len(text) <= SNIPPET:  # the whole line, the caret under col
        assert at == col - 1, rendered
    else:  # a long line: the part around the spot, the caret under the same character
        assert len(shown[1]) <= 4 + 3 + SNIPPET + 3, rendered
        want = text[col - 1 :][:1]
        assert shown[1][4 + at :][:1] == (" " if want and not want.isprintable() else want), rendered


def run_front_end(text: str) -> None:
    """``front_end``, where the only acceptable failure is a located ``CepError``."""
    try:
        front_end(text)
    except QueryError as err:
        _assert_located(err)
    except CepError:
        pass


# --- mutations ----------------------------------------------------------------------


MUTATIONS = (
    "delete",
    "duplicate",
    "repeat",
    "nest",
    "nest",
    "swap",
    "replace",
    "replace-alike",
    "replace-alike",
    "replace-local",
    "replace-local",
    "insert",
    "truncate",
)


DEPTHS = (2, 3, 20, 120, 1_000)
WRAPPERS = (("(", ")"), ("SEQ(", ")"), ("OR(", ")"), ("abs(", ")"), ("NOT ", " "), ("- ", " "), ("~", " "))


@st.composite
def mutated(draw: st.DrawFn) -> str:
    tokens = list(draw(st.sampled_from(CORPUS)))
    for _ in range(draw(st.integers(1, 3))):
        words = _words(tokens)
        if not words:
            break
        i = draw(st.sampled_from(words))
        op = draw(st.sampled_from(MUTATIONS))
        if op == "delete":
            del tokens[i]
        elif op == "duplicate":
            tokens[i:i] = [tokens[i], " "]
        elif op == "repeat":
            tokens[i:i] = [tokens[i], " "] * draw(st.sampled_from(DEPTHS))
        elif op == "nest":  # deep nesting: SEQ(SEQ(..., NOT NOT ..., ((...)), abs(abs(...
            j = draw(st.sampled_from([w for w in words if w >= i]))
            before, after = draw(st.sampled_from(WRAPPERS))
            times = draw(st.sampled_from(DEPTHS))
            tokens[j + 1 : j + 1] = [after] * times
            tokens[i:i] = [before] * times
        elif op == "swap":
            j = draw(st.sampled_from(words))
            tokens[i], tokens[j] = tokens[j], tokens[i]
        elif op == "replace":
            tokens[i] = draw(st.sampled_from(VOCABULARY))
        elif op == "replace-alike":
            tokens[i] = draw(st.sampled_from(BY_KIND[_kind(tokens[i])]))
        elif op == "replace-local":  # a name of this query: duplicates, wrong kinds of reference
            tokens[i] = tokens[draw(st.sampled_from(words))]
        elif op == "insert":
            tokens[i:i] = [draw(st.sampled_from(VOCABULARY)), " "]
        else:
            tokens = tokens[:i]
    return "".join(tokens)


def test_corpus_is_valid_and_compiles() -> None:
    assert len(CORPUS) >= 40
    for path in CORPUS_FILES:
        front_end(path.read_text(encoding="utf-8"))


@settings(
    max_examples=EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(mutated())
def test_mutated_queries_fail_only_with_located_errors(text: str) -> None:
    run_front_end(text)


# --- what the fuzzer found ------------------------------------------------------------
# Each of these crashed (RecursionError, ValueError inside lark's VisitError, a NameError
# in the generated condition code at run time) or put the caret on the wrong line or
# column. The goldens nesting_too_deep, repetition_bound_too_large, number_too_large,
# window_too_large and negative_window_spaced show the messages.

DEEP = {
    "seq": lambda n: "PATTERN " + "SEQ(" * n + "A a, B b" + ")" * n + " WHERE a.x < b.x WITHIN 10 s",
    "neg": lambda n: "PATTERN SEQ(A a, " + "SEQ(" * n + "NOT C c, B b" + ")" * n + ") WITHIN 10 s",
    "sum": lambda n: "PATTERN SEQ(A a, B b) WHERE a.x" + " + 1" * n + " < b.x + 100 WITHIN 10 s",
    "div": lambda n: "PATTERN SEQ(A a, B b) WHERE a.x" + " / 1" * n + " < b.x WITHIN 10 s",
    "not": lambda n: "PATTERN SEQ(A a, B b) WHERE " + "NOT " * n + "a.x < b.x WITHIN 10 s",
    "minus": lambda n: "PATTERN SEQ(A a, B b) WHERE " + "- " * n + "a.x < b.x + 5 WITHIN 10 s",
    "abs": lambda n: "PATTERN SEQ(A a, B b) WHERE " + "abs(" * n + "a.x" + ")" * n + " < b.x WITHIN 10 s",
    "or": lambda n: (
        "PATTERN SEQ(A a, B b) WHERE " + "(a.x < b.x OR " * n + "a.x < b.x" + ")" * n + " WITHIN 10 s"
    ),
}


@pytest.mark.parametrize("n", [101, 1_000, 5_000])
@pytest.mark.parametrize("shape", sorted(DEEP))
def test_deep_nesting_is_a_located_error(shape: str, n: int) -> None:
    with pytest.raises(QueryError, match="nests too deeply") as info:
        front_end(DEEP[shape](n))
    _assert_located(info.value)


@pytest.mark.parametrize("shape", sorted(DEEP))
def test_nesting_just_under_the_limit_runs(shape: str, tmp_path: Path) -> None:
    """As deep as the limit allows: compiles, builds, and the generated condition code
    runs (Python refuses some 200 nested parentheses)."""
    from click.testing import CliRunner

    from cepcli.cli import cli

    text = DEEP[shape](MAX_DEPTH - 10)
    front_end(text)
    (tmp_path / "q.sase").write_text(text)
    (tmp_path / "e.csv").write_text("ts,type,x\n0,A,1\n1,B,2\n2,C,3\n3,B,4\n")
    for name in ENGINES:
        args = ["run", str(tmp_path / "q.sase"), "-i", str(tmp_path / "e.csv"), "--engine", name, "-q"]
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 0, (name, result.output)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "PATTERN SEQ(A a, B{" + "9" * 5000 + "} b[]) WITHIN 1 s",
            "repetition bound 999999999999... is too large",
        ),
        (
            "PATTERN SEQ(A a, B{1," + "9" * 5000 + "} b[]) WITHIN 1 s",
            "repetition bound 999999999999... is too large",
        ),
        ("PATTERN SEQ(A a, B{1000001,} b[]) WITHIN 1 s", "repetition bound 1000001 is too large"),
        ("PATTERN SEQ(A a, B b) WHERE a.x < -1e999 WITHIN 1 s", "the number 1e999 is too large"),
        (
            "PATTERN SEQ(A a, B b) WHERE a.x < " + "9" * 400 + " WITHIN 1 s",
            "the number 999999999999... is too",
        ),
        ("PATTERN SEQ(A a, B b) WITHIN 1e999", "the window is too large"),
        ("PATTERN SEQ(A a, B b) WITHIN 1e305 h", "the window is too large"),
    ],
)
def test_literals_too_large_are_located_errors(text: str, message: str) -> None:
    with pytest.raises(QueryError, match=re.escape(message)) as info:
        front_end(text)
    _assert_located(info.value)


def test_largest_repetition_bound_is_accepted() -> None:
    _, pattern = compile_pattern(f"PATTERN SEQ(A a, B{{00{MAX_REPETITION}}} b[]) WITHIN 1 s")
    assert pattern.variable("b").lo == pattern.variable("b").hi == MAX_REPETITION


@pytest.mark.parametrize("blank", ["\r", "\f", "\v", "\u2028", "\x85", "\x1c"])
def test_caret_lines_are_the_parsers_lines(blank: str) -> None:
    """Only "\\n" ends a line for the parser; other line-breaking characters (in a
    comment, a quoted name, or blanks) must not shift the line the caret snippet shows."""
    text = f"-- a{blank}comment\nPATTERN SEQ(A a, 'B{blank}' b)\nWHERE c.x > 1 WITHIN 1 s\n"
    with pytest.raises(QueryError) as info:
        front_end(text)
    assert info.value.render() == (
        "fuzz.sase:3:7: unknown variable 'c' (the pattern declares a, b)\n"
        "    WHERE c.x > 1 WITHIN 1 s\n"
        "          ^^^"
    )
    text = f"PATTERN SEQ(A a, 'B{blank}' b) WHERE c.x > 1 WITHIN 1 s\r\n"
    with pytest.raises(QueryError) as info:
        front_end(text)
    assert info.value.render().split("\n")[1:] == [
        "    PATTERN SEQ(A a, 'B ' b) WHERE c.x > 1 WITHIN 1 s",
        "                                   ^^^",
    ]


@pytest.mark.parametrize("blank", ["\r", "\f"])
def test_caret_after_blanks_that_are_not_newlines(blank: str) -> None:
    text = f"PATTERN SEQ(A a,{blank}B b){blank}WHERE c.x > 1 WITHIN 1 s"
    with pytest.raises(QueryError) as info:
        front_end(text)
    assert info.value.render().split("\n") == [
        "fuzz.sase:1:29: unknown variable 'c' (the pattern declares a, b)",
        "    PATTERN SEQ(A a, B b) WHERE c.x > 1 WITHIN 1 s",
        "                                ^^^",
    ]
