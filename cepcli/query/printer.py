"""AST -> SASE+ text. ``parse_query(print_query(q)) == q`` for every query."""

from __future__ import annotations

import re

from cepcli.query import ast as a

_PRECEDENCE = {"or": 1, "and": 2, "not": 3, "cmp": 4, "+": 5, "-": 5, "*": 6, "/": 6, "%": 6}


def print_query(query: a.Query) -> str:
    lines = []
    if query.source is not None:
        lines.append(f"FROM {_quote(query.source)}{_with(query.options)}")
    lines.append(f"PATTERN {print_structure(query.structure)}")
    strategy = query.strategy if query.strategy != "skip_till_any_match" or query.strategy_vars else ""
    if strategy and query.strategy_vars:
        strategy += f"({', '.join(query.strategy_vars)})"
    if query.where is not None:
        lines.append(
            f"WHERE {strategy} {{ {print_expr(query.where)} }}"
            if strategy
            else f"WHERE {print_expr(query.where)}"
        )
    elif strategy:
        lines.append(f"WHERE {strategy}")
    lines.append(f"WITHIN {print_duration(query.window)}")
    return "\n".join(lines) + "\n"


def _with(options: tuple[a.InputOption, ...]) -> str:
    def value(v: str | int | bool) -> str:
        return str(v).lower() if isinstance(v, bool) else str(v) if isinstance(v, int) else _quote(v)

    return f" WITH ({', '.join(f'{o.name} = {value(o.value)}' for o in options)})" if options else ""


def print_structure(node: a.Structure) -> str:
    match node:
        case a.Prim(type_, var):
            return f"{_type_name(type_)} {var}"
        case a.Kleene(type_, var, 1, None):
            return f"{_type_name(type_)}+ {var}[]"
        case a.Kleene(type_, var, lo, hi):
            bounds = f"{lo}" if lo == hi else f"{lo},{'' if hi is None else hi}"
            return f"{_type_name(type_)}{{{bounds}}} {var}[]"
        case a.Neg(item):
            return f"NOT({print_structure(item)})"
        case a.Seq(items) | a.Conj(items) | a.Disj(items):
            name = {a.Seq: "SEQ", a.Conj: "AND", a.Disj: "OR"}[type(node)]
            return f"{name}({', '.join(print_structure(i) for i in items)})"
    raise TypeError(node)


def print_duration(window: a.Duration) -> str:
    value = _number(window.value)
    return f"{value} {window.unit}" if window.unit else value


def print_expr(expr: a.Expr, parent: int = 0) -> str:
    match expr:
        case a.Num(value):
            text = _number(value)
            return f"({text})" if value < 0 and parent >= _PRECEDENCE["+"] else text
        case a.Str(value):
            return _quote(value)
        case a.Bool(value):
            return "true" if value else "false"
        case a.Attr(var, attr, index):
            column = column_name(attr)
            return f"{var}.{column}" if index is a.Index.PLAIN else f"{var}[{index.value}].{column}"
        case a.Agg(func, var, attr, scope):
            inner = f"{var}[]" if scope is a.Scope.ALL else f"{var}[..i-1]"
            return f"{func}({inner}{'' if attr is None else '.' + column_name(attr)})"
        case a.Equiv(attr):
            return f"[{column_name(attr)}]"
        case a.Abs(operand):
            return f"abs({print_expr(operand)})"
        case a.Minus(operand):
            inner = print_expr(operand, 9)
            return f"-({inner})" if inner.startswith("-") else f"-{inner}"
        case a.Not(operand):
            return _wrap(f"NOT {print_expr(operand, _PRECEDENCE['not'])}", "not", parent)
        case a.Compare(op, left, right):
            level = _PRECEDENCE["cmp"]
            text = f"{print_expr(left, level + 1)} {op} {print_expr(right, level + 1)}"
            return _wrap(text, "cmp", parent)
        case a.Arith(op, left, right):
            level = _PRECEDENCE[op]
            text = f"{print_expr(left, level)} {op} {print_expr(right, level + 1)}"
            return _wrap(text, op, parent)
        case a.BoolOp(op, items):
            level = _PRECEDENCE[op]
            text = f" {op.upper()} ".join(print_expr(i, level + 1) for i in items)
            return _wrap(text, op, parent)
    raise TypeError(expr)


def _wrap(text: str, op: str, parent: int) -> str:
    return f"({text})" if _PRECEDENCE[op] < parent else text


def _number(value: float) -> str:
    if isinstance(value, int):
        return str(value)
    if value.is_integer() and abs(value) < 1e15:
        return f"{value:.1f}"
    return repr(value)


def _type_name(name: str) -> str:
    reserved = {"pattern", "from", "where", "within", "seq", "and", "or", "not", "true", "false"}
    if name.isascii() and name.isidentifier() and name.lower() not in reserved:
        return name
    return _quote(name)


# The grammar's NAME (grammar.lark): a column that is one is written bare, any other quoted.
NAME = re.compile(r"(?!(?i:pattern|from|where|within|seq|and|or|not)\b)[^\W\d]\w*")


def column_name(name: str) -> str:
    """A column as a condition writes it: bare when it is a name, else quoted as SQL quotes
    an identifier (``a."AND"``, ``a."x y"``; ``'...'`` when it holds a ``"``)."""
    if NAME.fullmatch(name):
        return name
    return f"'{name}'" if '"' in name else f'"{name}"'


def _quote(text: str) -> str:
    return f'"{text}"' if "'" in text else f"'{text}'"
