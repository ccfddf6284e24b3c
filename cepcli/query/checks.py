"""Semantic checks of a parsed query: variables, references, and the input's columns."""

from __future__ import annotations

from cepcli.errors import QueryError, Span, did_you_mean, flag
from cepcli.events import Kind, Schema
from cepcli.query import ast as a
from cepcli.query.limits import ordinal
from cepcli.query.printer import print_expr

ITERATING = (a.Index.EACH, a.Index.PREV)

# Events carry the variables that can use them as a bit mask in an int64 (one bit per
# variable, in query order; the sign bit is one of them): a 65th variable has no bit.
MAX_VARIABLES = 64


def check_query(query: a.Query) -> None:
    """Checks that need only the query text. Raises ``QueryError`` with a span."""
    elements = _declared(query)
    if query.where is not None:
        check_condition_shape(query.where)
    for conjunct in a.conjuncts(query.where):
        _check_conjunct(conjunct, elements)


def _declared(query: a.Query) -> dict[str, a.Prim | a.Kleene | a.Neg]:
    seen: dict[str, a.Prim | a.Kleene | a.Neg] = {}
    for leaf in a.iter_structure(query.structure):
        var = leaf.item.var if isinstance(leaf, a.Neg) else leaf.var
        if var in seen:
            raise QueryError(f"variable {var!r} is declared twice", leaf.span)
        if len(seen) == MAX_VARIABLES:
            raise QueryError(
                f"too many variables: a pattern has at most {MAX_VARIABLES}"
                f" (this is the {ordinal(MAX_VARIABLES + 1)})",
                leaf.span,
            )
        seen[var] = leaf
    return seen


def _check_conjunct(conjunct: a.Expr, elements: dict[str, a.Prim | a.Kleene | a.Neg]) -> None:
    nodes = a.iter_expr(conjunct)
    for node in nodes:
        if isinstance(node, a.Equiv) and node is not conjunct:
            raise QueryError(f"[{node.attr}] must stand alone as a top-level AND condition", node.span)
        if isinstance(node, a.Attr | a.Agg):
            _check_reference(node, elements)
    iterated = {n.var for n in nodes if isinstance(n, a.Attr | a.Agg) and _iterates(n)}
    if len(iterated) > 1:
        raise QueryError(
            "a condition can iterate over one Kleene variable only"
            f" (it uses {', '.join(sorted(iterated))} element by element)",
            _span_of(conjunct),
        )
    negated = sorted(v for v in a.variables_of(conjunct) if isinstance(elements[v], a.Neg))
    if len(negated) > 1:
        raise QueryError(
            f"a condition can mention one negated variable only (it mentions {', '.join(negated)})",
            _span_of(conjunct),
        )
    if negated and iterated:
        raise QueryError(
            f"a condition on the negated variable {negated[0]} cannot iterate over"
            f" {iterated.pop()}[i]: use [1], [last] or an aggregate over []",
            _span_of(conjunct),
        )


def _iterates(node: a.Expr) -> bool:
    return (isinstance(node, a.Attr) and node.index in ITERATING) or (
        isinstance(node, a.Agg) and node.scope is a.Scope.PREFIX
    )


def _check_reference(node: a.Attr | a.Agg, elements: dict[str, a.Prim | a.Kleene | a.Neg]) -> None:
    element = elements.get(node.var)
    if element is None:
        known = ", ".join(elements)
        hint = did_you_mean(node.var, elements)
        raise QueryError(f"unknown variable {node.var!r} ({hint}the pattern declares {known})", node.span)
    kleene = isinstance(element, a.Kleene)
    if isinstance(node, a.Agg):
        if not kleene:
            raise QueryError(
                f"{node.func}() aggregates a Kleene variable, and {node.var} is a single event",
                node.span,
            )
    elif node.index is a.Index.PLAIN and kleene:
        raise QueryError(
            f"{node.var} is a Kleene variable: write {node.var}[i].{node.attr},"
            f" {node.var}[1].{node.attr}, {node.var}[last].{node.attr} or an aggregate",
            node.span,
        )
    elif node.index is not a.Index.PLAIN and not kleene:
        raise QueryError(
            f"{node.var}[{node.index.value}] indexes a single event: {node.var} is not a"
            f" Kleene variable (write {node.var}.{node.attr})",
            node.span,
        )


def _span_of(expr: a.Expr) -> Span:
    return expr.span


def check_schema(query: a.Query, schema: Schema) -> None:
    """Checks against the input's columns: attributes exist, literals match column kinds."""
    nodes = a.iter_expr(query.where) if query.where is not None else []
    for node in nodes:
        for column, span in _columns_of(node):
            if column not in schema.columns:
                raise QueryError(
                    f"the input has no column {column!r}"
                    f" ({did_you_mean(column, schema.columns)}columns: {', '.join(schema.columns)})",
                    span,
                )
            if schema.kind(column) is Kind.OTHER:
                raise QueryError(
                    f"the input's column {column!r} holds nested values (lists, structs or maps), which"
                    " conditions cannot compare; its values are printed with each match",
                    span,
                )
    for node in nodes:
        if isinstance(node, a.Compare):
            _check_kinds(node, schema)
        if isinstance(node, a.Agg) and node.func != "count" and _text_column(node.attr, schema):
            raise QueryError(f"{node.func}() needs a numeric column, and {node.attr!r} holds text", node.span)
        if isinstance(node, a.Agg) and node.func != "count":
            _check_known(node, schema, _NUMBER)


def text_orderings(query: a.Query, schema: Schema) -> list[tuple[a.Compare, list[str]]]:
    """The comparisons ``<``, ``<=``, ``>``, ``>=`` of text with text (character by
    character: ``'10' < '9'``), each with the text columns it reads."""
    out = []
    for node in a.iter_expr(query.where) if query.where is not None else []:
        if (
            isinstance(node, a.Compare)
            and node.op in ("<", "<=", ">", ">=")
            and _kind_of(node.left, schema) == _TEXT
            and _kind_of(node.right, schema) == _TEXT
        ):
            columns = [n.attr for n in (node.left, node.right) if isinstance(n, a.Attr)]
            out.append((node, list(dict.fromkeys(columns))))
    return out


def _text_column(column: str | None, schema: Schema) -> bool:
    return column is not None and schema.kind(column) is Kind.STR


def _columns_of(node: a.Expr) -> list[tuple[str, Span]]:
    match node:
        case a.Attr(_, attr):
            return [(attr, node.span)]
        case a.Agg(_, _, str(attr)):
            return [(attr, node.span)]
        case a.Equiv(attr):
            return [(attr, node.span)]
    return []


_NUMBER, _TEXT, _BOOL = "number", "text", "boolean"


def _check_kinds(node: a.Compare, schema: Schema) -> None:
    """Both sides of a comparison must be of one kind: numbers, text or booleans."""
    left, right = _kind_of(node.left, schema), _kind_of(node.right, schema)
    for side, other in ((node.left, right), (node.right, left)):
        if other in (_NUMBER, _BOOL):
            _check_known(side, schema, other)
    if left and right and left != right:
        raise QueryError(
            f"{print_expr(node.left)} is {_article(left)} and {print_expr(node.right)}"
            f" is {_article(right)}: they cannot be compared",
            node.span,
        )


def _article(kind: str) -> str:
    return {"number": "a number", "text": "text", "boolean": "a boolean"}[kind]


def _kind_of(expr: a.Expr, schema: Schema) -> str | None:
    """The kind of a value expression, or None when the input does not tell yet."""
    match expr:
        case a.Num():
            return _NUMBER
        case a.Str():
            return _TEXT
        case a.Bool():
            return _BOOL
        case a.Attr(_, attr):
            kind = schema.kind(attr)
            if kind.numeric:
                return _NUMBER
            return {Kind.STR: _TEXT, Kind.BOOL: _BOOL}.get(kind)
        case a.Agg():
            return _NUMBER
        case a.Abs(operand) | a.Minus(operand):
            _numeric_operand(operand, schema)
            return _NUMBER
        case a.Arith(_, left, right):
            _numeric_operand(left, schema)
            _numeric_operand(right, schema)
            return _NUMBER
    return None


def _check_known(expr: a.Expr, schema: Schema, needed: str) -> None:
    """A column with no value in the sample has no kind: it cannot be used as a number or
    a boolean until one is given (read as text, it would silently match nothing)."""
    if isinstance(expr, a.Attr | a.Agg) and expr.attr is not None and schema.kind(expr.attr) is Kind.UNKNOWN:
        kind = "int (or float)" if needed == _NUMBER else "bool"
        raise QueryError(
            f"the input's column {expr.attr!r} has no value in its first rows, so its kind is unknown:"
            f" to use it as {_article(needed)}, give {flag('schema', f'{expr.attr}:{kind.split()[0]}')}"
            f" ({'or :float, ' if needed == _NUMBER else ''}see {flag('schema')})",
            expr.span,
        )


def _numeric_operand(expr: a.Expr, schema: Schema) -> None:
    _check_known(expr, schema, _NUMBER)
    kind = _kind_of(expr, schema)
    if kind is not None and kind != _NUMBER:
        raise QueryError(f"arithmetic needs numbers, and {print_expr(expr)} is {_article(kind)}", expr.span)


def check_condition_shape(expr: a.Expr) -> None:
    """Boolean structure on top, comparisons at the leaves, values inside comparisons."""
    match expr:
        case a.BoolOp(_, items):
            for item in items:
                check_condition_shape(item)
        case a.Not(operand):
            check_condition_shape(operand)
        case a.Compare(_, left, right):
            for side in (left, right):
                _check_value(side)
        case a.Bool() | a.Equiv():
            pass
        case _:
            raise QueryError("expected a condition such as a.x > 3 here", expr.span)


def _check_value(expr: a.Expr) -> None:
    match expr:
        case a.Abs(operand) | a.Minus(operand):
            _check_value(operand)
        case a.Arith(_, left, right):
            _check_value(left)
            _check_value(right)
        case a.Num() | a.Str() | a.Bool() | a.Attr() | a.Agg():
            pass
        case _:
            raise QueryError("a comparison compares values, not conditions", expr.span)
