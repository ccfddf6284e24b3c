"""Query text -> ``Query`` AST. The lark tree never leaves this module."""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import re
import sys
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import lark
from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import (
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
    VisitError,
)
from lark.tree import Meta

from cepcli.cache import cache_home
from cepcli.errors import NO_SPAN, QueryError, Span
from cepcli.query import ast as a
from cepcli.query.limits import check_conditions
from cepcli.query.options import INPUT_OPTIONS

_TOKEN_NAMES = {
    "_PATTERN": "PATTERN",
    "_WITHIN": "WITHIN",
    "_WHERE": "WHERE",
    "_FROM": "FROM",
    "_WITH": "WITH",
    "_SEQ": "SEQ",
    "_AND": "AND",
    "_OR": "OR",
    "_NOT": "NOT",
    "_NEGATE": "NOT",
    "NAME": "a name",
    "STRING": "a quoted string",
    "NUMBER": "a number",
    "INT": "an integer",
    "COMMA": "','",
    "LPAR": "'('",
    "RPAR": "')'",
    "LSQB": "'['",
    "RSQB": "']'",
    "LBRACE": "'{'",
    "RBRACE": "'}'",
    "PLUS": "'+'",
    "MINUS": "'-'",
    "ADD_OP": "'+' or '-'",
    "MUL_OP": "'*', '/' or '%'",
    "DOTDOT": "'..'",
    "_TRUE": "true",
    "_FALSE": "false",
    "EQUAL": "'='",
    "DOT": "'.'",
    "COMP_OP": "a comparison",
    "STRATEGY": "a selection strategy",
    "$END": "end of query",
}


# Deeper queries are refused before anything recurses over them (the transformer, the
# checks, the printer, the generated Python of a condition). Real queries nest < 10.
MAX_DEPTH = 100
# A repetition bound above this is refused (so that int() never meets thousands of digits).
MAX_REPETITION = 1_000_000


@cache
def _parser() -> Lark:
    grammar = resources.files("cepcli.query").joinpath("grammar.lark").read_text()
    return parser_for(grammar, cache_home())


def parser_for(grammar: str, directory: Path) -> Lark:
    """The LALR parser of ``grammar``: loaded from ``directory`` (quick) if a run made it
    before, else built (a noticeable part of every command's start otherwise) and saved
    there, under a name that holds the grammar's and lark's hash, written whole before it
    takes that name. A cache that cannot be read or written is passed over."""
    key = hashlib.sha256(f"{grammar}\n{lark.__version__}\n{sys.version_info[:2]}".encode()).hexdigest()[:16]
    path = directory / f"query-parser-{key}.lark"
    with contextlib.suppress(Exception), path.open("rb") as f:  # none there, or damaged: built again
        return Lark.load(f)
    parser = Lark(grammar, parser="lalr", propagate_positions=True, maybe_placeholders=False)
    with contextlib.suppress(OSError):  # a read-only home: no cache
        directory.mkdir(parents=True, exist_ok=True)
        part = path.with_name(f"{path.name}.{os.getpid()}.part")
        try:
            with part.open("wb") as f:
                parser.save(f)
            os.replace(part, path)
        finally:
            part.unlink(missing_ok=True)
    return parser


def parse_query(text: str, filename: str = "<query>") -> a.Query:
    """Parse SASE+ text. Raises ``QueryError`` (with the caret snippet) on any error."""
    try:
        check_conditions(text)  # before the parser, whose time and memory it bounds
        tree = _parser().parse(text)
        _check_depth(tree)
        query: a.Query = _ToAst().transform(tree)
    except UnexpectedInput as err:
        raise _syntax_error(err, text).located(text, filename) from None
    except QueryError as err:
        raise err.located(text, filename) from None
    except VisitError as err:
        if isinstance(err.orig_exc, QueryError):
            raise err.orig_exc.located(text, filename) from None
        raise
    return query


def _check_depth(tree: Tree[Token]) -> None:
    """Refuse a parse tree deeper than ``MAX_DEPTH``, at its first node that is too deep
    (iteratively: a recursive walk would itself overflow on such a query)."""
    stack: list[tuple[Tree[Token], int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            meta = node.meta
            span = Span(0, 0) if getattr(meta, "empty", True) else Span(meta.line, meta.column)
            raise QueryError(
                f"the query nests too deeply here: more than {MAX_DEPTH} levels of nested patterns,"
                " NOTs, operators or function calls",
                Span(span.line, span.col, span.line, span.col + 1),
            )
        stack.extend((child, depth + 1) for child in reversed(node.children) if isinstance(child, Tree))


def _syntax_error(err: UnexpectedInput, text: str) -> QueryError:
    """Turn lark's token-level complaint into a message about the query."""
    if isinstance(err, UnexpectedCharacters):
        span = Span(err.line, err.column, err.line, err.column + 1)
        if err.char in "'\"":
            return QueryError("unterminated string", span)
        return QueryError(f"unexpected character {err.char!r}", span)
    assert isinstance(err, UnexpectedToken | UnexpectedEOF)
    expected = set(err.expected)
    token = err.token
    if token.type == "$END":
        span = _end_span(text)
        if "_WITHIN" in expected:
            return QueryError("missing WITHIN clause (found end of query)", span)
        return QueryError(f"the query ends too early; expected {_listed(expected)}", span)
    line, col = token.line or 0, token.column or 0
    span = Span(line, col, line, col + 1)
    found = repr(str(token))
    if token.type == "RPAR" and "RPAR" not in expected and _depth(text, token) <= 0:
        return QueryError("unbalanced parentheses: this ')' has no matching '('", span)
    if token.type == "COMP_OP" and "_AND" in expected:
        return QueryError("comparisons cannot be chained: join them with AND", span)
    if token.type == "_WHERE" and "_WHERE" not in expected and "_WITHIN" not in expected:
        return QueryError("WHERE must come before WITHIN", span)
    if {"COMMA", "RPAR"} <= expected:
        return QueryError(f"expected ',' or ')' in the pattern, found {found}", span)
    if {"_AND", "_OR", "_WITHIN"} <= expected:
        closing = "')'" if _depth(text, token) > 0 else "WITHIN"
        return QueryError(f"unexpected {found}; expected AND, OR or {closing}", span)
    before = _word_before(text, token)
    if before in ("AND", "OR", "NOT", "WHERE") and "NAME" in expected:
        return QueryError(f"unexpected {found}; expected a condition after {before}", span)
    if expected <= {"MINUS", "NUMBER"}:
        return QueryError(f"unexpected {found}; expected a number", span)
    if expected <= {"DOT", "$END"}:
        return QueryError(f"unexpected {found} after the end of the query", span)
    if "_PATTERN" in expected:
        return QueryError(f"a query starts with PATTERN (or FROM 'file'), found {found}", span)
    if expected in ({"NAME"}, {"NAME", "STRING"}):
        if "STRING" in expected and _KEYWORD.fullmatch(str(token)):
            start = token.start_pos if token.start_pos is not None else 0
            column = text[:start].rstrip().endswith((".", "["))  # a column, or a type
            quoted = f'"{token}"' if column else f"'{token}'"
            return QueryError(f"expected a name, found {found}, a keyword: quote it, {quoted}", span)
        return QueryError(f"expected a name, found {found}", span)
    return QueryError(f"unexpected {found}; expected {_listed(expected)}", span)


_KEYWORD = re.compile(r"(?i:pattern|from|where|within|seq|and|or|not|true|false)")


def _listed(expected: set[str]) -> str:
    names = sorted({_TOKEN_NAMES.get(t, t.lower()) for t in expected if t != "$END"})
    return ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")


def _depth(text: str, token: Token) -> int:
    """Open parentheses before a token (strings and comments left out)."""
    start = token.start_pos if token.start_pos is not None else 0
    code = re.sub(r"'[^'\n]*'|\"[^\"\n]*\"|(--|#)[^\n]*", " ", text[:start])
    return code.count("(") - code.count(")")


def _word_before(text: str, token: Token) -> str:
    """The word just before a token, upper-cased (for 'expected a condition after AND')."""
    start = token.start_pos if token.start_pos is not None else 0
    words = re.sub(r"(--|#)[^\n]*", " ", text[:start]).split()
    return words[-1].upper() if words else ""


def _end_span(text: str) -> Span:
    """Just past the last token of the query, for 'found end of query' errors."""
    try:
        tokens = list(_parser().lex(text))
    except UnexpectedInput:
        tokens = []
    if not tokens:
        return Span(1, 1, 1, 2)
    last = tokens[-1]
    line, col = last.end_line or 1, last.end_column or 1
    return Span(line, col, line, col + 1)


def _span(meta: Meta) -> Span:
    if getattr(meta, "empty", True):
        return Span(0, 0)
    return Span(meta.line, meta.column, meta.end_line, meta.end_column)


def _tok_span(tok: Token) -> Span:
    return Span(tok.line or 0, tok.column or 0, tok.end_line or 0, tok.end_column or 0)


def _unquote(tok: Token) -> str:
    return str(tok)[1:-1]


def _bound(tok: Token) -> int:
    """A repetition bound, refused above ``MAX_REPETITION`` (and before ``int()`` meets
    thousands of digits)."""
    digits = str(tok).lstrip("0") or "0"
    if len(digits) > len(str(MAX_REPETITION)) or int(digits) > MAX_REPETITION:
        raise QueryError(
            f"the repetition bound {_shown(tok)} is too large (at most {MAX_REPETITION:,};"
            " write {l,} for no upper bound)",
            _tok_span(tok),
        )
    return int(digits)


def _shown(tok: Token) -> str:
    """A literal for a message, cut short if it is very long."""
    text = str(tok)
    return text if len(text) <= 20 else text[:12] + "..."


def _option_value(name: str, value: Token | bool, span: Span) -> str | int | bool:
    """The value of input option ``name``, checked against the kind it takes."""
    kind = INPUT_OPTIONS[name]
    if isinstance(value, bool):
        if kind is bool:
            return value
    elif value.type == "NUMBER":
        if kind is int and str(value).isdigit() and len(str(value)) <= 18 and int(str(value)) >= 1:
            return int(str(value))
    else:
        text = _unquote(value) if value.type == "STRING" else str(value)
        if kind is str or (isinstance(kind, tuple) and text in kind):
            return text
    takes = {str: "text ('...')", int: "a whole number >= 1", bool: "true or false"}
    wanted = takes[kind] if isinstance(kind, type) else "one of " + ", ".join(kind)
    raise QueryError(f"the input option {name} takes {wanted}", span)


def _number(text: str) -> int | float:
    value = float(text)
    if value.is_integer() and not any(c in text for c in ".eE"):
        return int(text)
    return value


@v_args(meta=True, inline=True)
class _ToAst(Transformer[Token, Any]):
    """One method per grammar rule, each returning an AST dataclass."""

    def start(self, meta: Meta, *parts: Any) -> a.Query:
        source, options = None, ()
        where: tuple[str, a.Expr | None, tuple[Token, ...], Span] = ("skip_till_any_match", None, (), NO_SPAN)
        structure: a.Structure | None = None
        window: a.Duration | None = None
        for part in parts:
            match part:
                case ("from", str(path), tuple(given)):
                    source, options = path, given
                case ("where", strategy, cond, names, at):
                    where = (strategy, cond, names, at)
                case a.Duration():
                    window = part
                case _:
                    structure = part
        assert structure is not None and window is not None
        return a.Query(
            structure,
            window,
            _value(where[1]) if where[1] is not None else None,
            where[0],
            source,
            _span(meta),
            options,
            tuple(str(n) for n in where[2]),
            where[3],
            tuple(_tok_span(n) for n in where[2]),
        )

    def from_clause(
        self, meta: Meta, path: Token, *options: a.InputOption
    ) -> tuple[str, str, tuple[a.InputOption, ...]]:
        seen: set[str] = set()
        for option in options:
            if option.name in seen:
                raise QueryError(f"the input option {option.name} is given twice", option.span)
            seen.add(option.name)
        return ("from", _unquote(path), options)

    def input_option(self, meta: Meta, key: Token, value: Token | bool) -> a.InputOption:
        name = (_unquote(key) if key.type == "STRING" else str(key)).lower().replace("-", "_")
        span = _span(meta)
        if name not in INPUT_OPTIONS:
            known = ", ".join(INPUT_OPTIONS)
            raise QueryError(f"unknown input option {str(key)!r} (known: {known})", _tok_span(key))
        return a.InputOption(name, _option_value(name, value, span), span)

    def option_true(self, meta: Meta) -> bool:
        return True

    def option_false(self, meta: Meta) -> bool:
        return False

    def seq(self, meta: Meta, *items: a.Structure) -> a.Seq:
        return a.Seq(tuple(items), _span(meta))

    def conj(self, meta: Meta, *items: a.Structure) -> a.Conj:
        return a.Conj(tuple(items), _span(meta))

    def disj(self, meta: Meta, *items: a.Structure) -> a.Disj:
        return a.Disj(tuple(items), _span(meta))

    def type_name(self, meta: Meta, tok: Token) -> str:
        return _unquote(tok) if tok.type == "STRING" else str(tok)

    def prim(self, meta: Meta, type_: str, var: Token) -> a.Prim:
        return a.Prim(type_, str(var), _span(meta))

    def kleene_plus(self, meta: Meta, type_: str, var: Token) -> a.Kleene:
        return a.Kleene(type_, str(var), 1, None, _span(meta))

    def kleene_bounded(self, meta: Meta, type_: str, bounds: tuple[int, int | None], var: Token) -> a.Kleene:
        lo, hi = bounds
        if hi is not None and hi < lo:
            raise QueryError(
                f"repetition bounds {{{lo},{hi}}}: the upper bound is below the lower", _span(meta)
            )
        if lo < 1 or hi == 0:
            raise QueryError("a repetition needs at least one event (use NOT for none)", _span(meta))
        return a.Kleene(type_, str(var), lo, hi, _span(meta))

    def bounds_exact(self, meta: Meta, n: Token) -> tuple[int, int | None]:
        return _bound(n), _bound(n)

    def bounds_range(self, meta: Meta, lo: Token, hi: Token | None = None) -> tuple[int, int | None]:
        return _bound(lo), (_bound(hi) if hi is not None else None)

    def neg_paren(self, meta: Meta, item: a.Structure) -> a.Neg:
        return self._negate(meta, item)

    def neg_plain(self, meta: Meta, item: a.Structure) -> a.Neg:
        return self._negate(meta, item)

    def _negate(self, meta: Meta, item: a.Structure) -> a.Neg:
        match item:
            case a.Prim():
                return a.Neg(item, _span(meta))
            case a.Kleene():
                raise QueryError("Kleene closure inside NOT is not supported", item.span)
            case a.Neg():
                raise QueryError("double negation: NOT of a NOT", item.span)
        raise QueryError("NOT applies to a single event 'Type var', not to a whole pattern", _span(meta))

    def where_braced(
        self, meta: Meta, *parts: Any
    ) -> tuple[str, str, a.Expr | None, tuple[Token, ...], Span]:
        return self._where(parts)

    def where_plain(self, meta: Meta, *parts: Any) -> tuple[str, str, a.Expr | None, tuple[Token, ...], Span]:
        return self._where(parts)

    def where_strategy_only(
        self, meta: Meta, *parts: Any
    ) -> tuple[str, str, a.Expr | None, tuple[Token, ...], Span]:
        return self._where(parts)

    def _where(self, parts: tuple[Any, ...]) -> tuple[str, str, a.Expr | None, tuple[Token, ...], Span]:
        """The strategy (the default: skip_till_any_match), its variables (all: none
        named), the condition, and where the strategy is written."""
        strategy, at = "skip_till_any_match", NO_SPAN
        names: tuple[Token, ...] = ()
        cond = None
        for part in parts:
            if isinstance(part, Token) and part.type == "STRATEGY":
                strategy, at = str(part).lower(), _tok_span(part)
            elif isinstance(part, tuple):
                names = part
            else:
                cond = part
        return ("where", strategy, cond, names, at)

    def strategy_vars(self, meta: Meta, *names: Token) -> tuple[Token, ...]:
        return names  # (their spans go with them)

    def window_sign(self, meta: Meta) -> Span:
        return _span(meta)  # where the '-' is, whatever blanks or comments precede it

    def within_clause(self, meta: Meta, *parts: Any) -> a.Duration:
        sign: Span | None = parts[0] if isinstance(parts[0], Span) else None
        number: Token
        unit: Token | None
        number, unit = (*parts[1 if sign else 0 :], None)[:2]
        if sign is not None:
            raise QueryError(
                "the window must be positive",
                Span(sign.line, sign.col, number.end_line or 0, number.end_column or 0),
            )
        value = _number(str(number))
        canonical = ""
        if unit is not None:
            key = str(unit).lower()
            if key not in a.UNIT_ALIASES:
                known = "ns, us, ms, s, min, h or d"
                raise QueryError(f"unknown time unit {str(unit)!r} (use {known})", _tok_span(unit))
            canonical = a.UNIT_ALIASES[key]
        if value <= 0:
            raise QueryError("the window must be positive", _tok_span(number))
        duration = a.Duration(value, canonical)
        if not math.isfinite(duration.seconds):
            raise QueryError("the window is too large", _tok_span(number))
        return duration

    # --- conditions -----------------------------------------------------------

    def or_expr(self, meta: Meta, *items: Any) -> a.BoolOp:
        return a.BoolOp("or", tuple(_value(i) for i in items), _span(meta))

    def and_expr(self, meta: Meta, *items: Any) -> a.BoolOp:
        return a.BoolOp("and", tuple(_value(i) for i in items), _span(meta))

    def not_(self, meta: Meta, operand: Any) -> a.Not:
        return a.Not(_value(operand), _span(meta))

    def compare(self, meta: Meta, left: Any, op: Token, right: Any) -> a.Compare:
        canonical = {"==": "=", "<>": "!="}.get(str(op), str(op))
        return a.Compare(canonical, _value(left), _value(right), _span(meta))

    def arith(self, meta: Meta, left: Any, op: Token, right: Any) -> a.Arith:
        return a.Arith(str(op), _value(left), _value(right), _span(meta))

    def minus(self, meta: Meta, operand: Any) -> a.Expr:
        operand = _value(operand)
        if isinstance(operand, a.Num):
            return a.Num(-operand.value, _span(meta))
        return a.Minus(operand, _span(meta))

    def number(self, meta: Meta, tok: Token) -> a.Num:
        value = _number(str(tok))
        if not math.isfinite(value):
            raise QueryError(f"the number {_shown(tok)} is too large", _tok_span(tok))
        return a.Num(value, _tok_span(tok))

    def string(self, meta: Meta, tok: Token) -> a.Str:
        return a.Str(_unquote(tok), _tok_span(tok))

    def true(self, meta: Meta) -> a.Bool:
        return a.Bool(True, _span(meta))

    def false(self, meta: Meta) -> a.Bool:
        return a.Bool(False, _span(meta))

    def equiv(self, meta: Meta, name: Token) -> a.Equiv:
        return a.Equiv(str(name), _span(meta))

    def call(self, meta: Meta, name: Token, arg: Any) -> a.Expr:
        func = str(name).lower()
        if func == "abs":
            return a.Abs(_value(arg), _span(meta))
        if func in a.AGGREGATES:
            if not isinstance(arg, _Collection):
                raise QueryError(
                    f"{func}() aggregates a Kleene variable: write {func}(b[].x) or {func}(b[..i-1].x)",
                    _span(meta),
                )
            if arg.attr is None and func != "count":
                raise QueryError(f"{func}() needs an attribute: {func}({arg.text}.x)", arg.span)
            return a.Agg(func, arg.var, arg.attr, arg.scope, _span(meta))
        raise QueryError(
            f"unknown function {str(name)!r} (known: abs, {', '.join(a.AGGREGATES)})", _tok_span(name)
        )

    def ref_plain(self, meta: Meta, var: Token, attr: Token) -> a.Attr:
        return a.Attr(str(var), str(attr), a.Index.PLAIN, _span(meta))

    def ref_indexed(self, meta: Meta, var: Token, index: a.Index, attr: Token) -> a.Attr:
        return a.Attr(str(var), str(attr), index, _span(meta))

    def ref_all(self, meta: Meta, var: Token, attr: Token | None = None) -> _Collection:
        text = f"{var}[]"
        return _Collection(str(var), None if attr is None else str(attr), a.Scope.ALL, text, _span(meta))

    def ref_prefix(
        self, meta: Meta, var: Token, dots: Token, i: Token, one: Token, attr: Token | None = None
    ) -> _Collection:
        if str(i) != "i" or str(one) != "1":
            raise QueryError(f"expected {var}[..i-1]", _span(meta))
        text = f"{var}[..i-1]"
        return _Collection(str(var), None if attr is None else str(attr), a.Scope.PREFIX, text, _span(meta))

    def attr_name(self, meta: Meta, tok: Token) -> str:
        """A column: a name, or quoted (``a."AND"``, ``a.'x y'``)."""
        if tok.type != "STRING":
            return str(tok)
        if len(tok) == 2:
            raise QueryError('a quoted column needs a name: "" is an empty name', _tok_span(tok))
        return _unquote(tok)

    def index_name(self, meta: Meta, name: Token) -> a.Index:
        key = str(name).lower()
        if key == "i":
            return a.Index.EACH
        if key == "last":
            return a.Index.LAST
        raise QueryError(f"unknown index {str(name)!r}: use i, i-1, 1 or last", _tok_span(name))

    def index_prev(self, meta: Meta, name: Token, one: Token) -> a.Index:
        if str(name).lower() != "i" or str(one) != "1":
            raise QueryError(f"unknown index '{name}-{one}': use i, i-1, 1 or last", _span(meta))
        return a.Index.PREV

    def index_number(self, meta: Meta, n: Token) -> a.Index:
        if str(n) != "1":
            raise QueryError(f"index [{n}] is not supported: use i, i-1, 1 or last", _tok_span(n))
        return a.Index.FIRST


def _value(item: Any) -> a.Expr:
    """A condition operand; a bare ``b[]`` or ``b[..i-1]`` is only allowed inside an aggregate."""
    if isinstance(item, _Collection):
        raise QueryError(
            f"{item.text} is a set of events: aggregate it, e.g. avg({item.var}[].x),"
            f" or pick one with {item.var}[i], {item.var}[1] or {item.var}[last]",
            item.span,
        )
    return item  # type: ignore[no-any-return]


class _Collection:
    """``b[]`` or ``b[..i-1]`` (with an optional attribute) before it meets its aggregate."""

    __slots__ = ("var", "attr", "scope", "text", "span")

    def __init__(self, var: str, attr: str | None, scope: a.Scope, text: str, span: Span) -> None:
        self.var, self.attr, self.scope, self.text, self.span = var, attr, scope, text, span
