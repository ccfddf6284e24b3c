"""Query -> Pattern: DNF expansion (paper section 5.2) and per-branch conditions."""

from __future__ import annotations

from itertools import product

from cepcli.errors import QueryError
from cepcli.plan import strategy
from cepcli.plan.nnf import to_nnf
from cepcli.plan.pattern import Band, Branch, Condition, Join, Pattern, Role, Variable
from cepcli.query import ast as a
from cepcli.query.checks import check_query

MAX_BRANCHES = 256

# A partial branch while expanding: its variables and its order pairs.
_Partial = tuple[tuple[Variable, ...], frozenset[tuple[str, str]]]


def normalize(query: a.Query, max_branches: int = MAX_BRANCHES, time_unit: int = 10**9) -> Pattern:
    """Check the query, expand its structure to DNF and attach the conditions. A window
    written as a bare number is in ``time_unit`` nanoseconds (the input's time unit)."""
    check_query(query)
    count = count_branches(query.structure)
    if count > max_branches:
        raise QueryError(
            f"the pattern expands to {count} DNF branches, more than the limit of"
            f" {max_branches}: simplify the OR/AND nesting",
            query.structure.span,
        )
    variables = _variables(query.structure)
    conditions = [_classify(c, variables) for c in a.conjuncts(query.where)]
    equiv = tuple(c.attr for c in a.conjuncts(query.where) if isinstance(c, a.Equiv))
    branches = []
    for names, order in _expand(query.structure, variables):
        _check_branch(names, query)
        bound = {v.name for v in names}
        kept = tuple(c for c in conditions if c.variables <= bound and not _is_equiv(c))
        branches.append(Branch(names, order, kept, equiv))
    branches = strategy.lower(query, branches, variables, _classify)  # its negations join the variables
    conditions += [c for b in branches for c in b.conditions if c not in conditions]
    for cond in conditions:
        if not any(cond.variables <= {v.name for v in b.variables} for b in branches):
            raise QueryError(
                "this condition mixes variables of different OR branches, so no branch could ever check it",
                cond.expr.span,
            )
    filters = tuple(
        (v.name, tuple(c for c in conditions if c.prefilter and c.variables == {v.name}))
        for v in variables.values()
    )
    return Pattern(
        tuple(branches), tuple(variables.values()), query.window.nanoseconds(time_unit), filters, query
    )


def count_branches(node: a.Structure) -> int:
    """How many DNF branches a structure expands to, without expanding it."""
    match node:
        case a.Prim() | a.Kleene() | a.Neg():
            return 1
        case a.Disj(items):
            return sum(count_branches(i) for i in items)
        case a.Seq(items) | a.Conj(items):
            total = 1
            for item in items:
                total *= count_branches(item)
            return total
    raise TypeError(node)


def _variables(structure: a.Structure) -> dict[str, Variable]:
    out: dict[str, Variable] = {}
    for bit, leaf in enumerate(a.iter_structure(structure)):
        match leaf:
            case a.Prim(type_, name):
                out[name] = Variable(name, type_, Role.POSITIVE, bit, span=leaf.span)
            case a.Kleene(type_, name, lo, hi):
                out[name] = Variable(name, type_, Role.KLEENE, bit, lo, hi, span=leaf.span)
            case a.Neg(a.Prim(type_, name)):
                out[name] = Variable(name, type_, Role.NEGATED, bit, span=leaf.span)
    return out


def _expand(node: a.Structure, variables: dict[str, Variable]) -> list[_Partial]:
    match node:
        case a.Prim(_, name) | a.Kleene(_, name) | a.Neg(a.Prim(_, name)):
            return [((variables[name],), frozenset())]
        case a.Disj(items):
            return [p for item in items for p in _expand(item, variables)]
        case a.Seq(items) | a.Conj(items):
            choices = [_expand(item, variables) for item in items]
            ordered = isinstance(node, a.Seq)
            return [_combine(combo, ordered) for combo in product(*choices)]
    raise TypeError(node)


def _combine(parts: tuple[_Partial, ...], ordered: bool) -> _Partial:
    names: tuple[Variable, ...] = ()
    order: set[tuple[str, str]] = set()
    for i, (vars_i, order_i) in enumerate(parts):
        names += vars_i
        order |= order_i
        if ordered:
            for vars_j, _ in parts[i + 1 :]:
                order |= {(x.name, y.name) for x in vars_i for y in vars_j}
    return names, frozenset(order)


def _check_branch(names: tuple[Variable, ...], query: a.Query) -> None:
    if all(v.negated for v in names):
        only = ", ".join(v.name for v in names)
        raise QueryError(
            f"a branch of the pattern has only negated events ({only}): NOT cannot be the"
            " whole pattern, it needs a positive event to relate to",
            names[0].span if names else query.structure.span,
        )


def _is_equiv(cond: Condition) -> bool:
    return isinstance(cond.expr, a.Equiv)


def _classify(written: a.Expr, variables: dict[str, Variable]) -> Condition:
    """A conjunct lowered once (negation normal form) and classified (``Condition``)."""
    expr = to_nnf(written) if not isinstance(written, a.Equiv) else written
    nodes = a.iter_expr(expr)
    names = a.variables_of(expr)
    iterates = None
    from_second = False
    whole: set[str] = set()
    for node in nodes:
        if isinstance(node, a.Attr) and node.index in (a.Index.EACH, a.Index.PREV):
            iterates = node.var
            from_second |= node.index is a.Index.PREV
        elif isinstance(node, a.Agg) and node.scope is a.Scope.PREFIX:
            iterates = node.var
            from_second = True
        elif (
            isinstance(node, a.Attr)
            and node.index in (a.Index.FIRST, a.Index.LAST)
            or isinstance(node, a.Agg)
        ):
            whole.add(node.var)
    single = len(names) == 1 and not whole and not from_second
    (only,) = names if len(names) == 1 else (None,)
    prefilter = single and only is not None and (iterates == only or not variables[only].kleene)
    negated = next((n for n in sorted(names) if variables[n].negated), None)
    return Condition(
        expr,
        names,
        iterates,
        from_second,
        frozenset(whole),
        prefilter,
        negated,
        _join(expr),
        _band(expr),
        written if written is not expr else None,
    )


def _band(expr: a.Expr) -> Band | None:
    """``a.x < c.y`` (or ``<=``, ``>``, ``>=``): an order between plain attributes of two
    variables."""
    match expr:
        case a.Compare(
            "<" | "<=" | ">" | ">=" as op, a.Attr(v1, x1, a.Index.PLAIN), a.Attr(v2, x2, a.Index.PLAIN)
        ) if v1 != v2:
            return Band((v1, x1), op, (v2, x2))
    return None


def _join(expr: a.Expr) -> Join | None:
    """``a.x = c.y``: an equality between plain attributes of two variables."""
    match expr:
        case a.Compare("=", a.Attr(v1, x1, a.Index.PLAIN), a.Attr(v2, x2, a.Index.PLAIN)) if v1 != v2:
            return Join((v1, x1), (v2, x2))
    return None
