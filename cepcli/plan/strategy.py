"""Selection strategies (SASE+, docs/semantics.md section 7), lowered to negations so that
every engine evaluates them with the negation it already has.

A strategy other than ``skip_till_any_match`` applies to consecutive positive variables
``u, v`` of a SEQ (both listed in ``WHERE strategy(u, v, ...)``, or all): between the events
bound to them (in stream order) it forbids

* ``skip_till_next_match``: an event that could have been bound to ``v`` instead: of
  ``v``'s type, satisfying every conjunct that mentions ``v`` and only variables at or
  before ``u`` (``[attr]`` among them: its equalities with ``u`` and the variables before);
* ``strict_contiguity``: any row at all;
* ``partition_contiguity``: any row with the same ``[attr]`` value(s).

Each such pair gets a negated variable between ``u`` and ``v`` (``v'``: its type, or every
row for the contiguities, ``Variable.any_type``) with those conjuncts written for it; the
negation's own rule (section 6) does the rest: an event bound in the match is no violation,
and one between bound events is always inside the window. When ``v`` is a Kleene variable,
``v'`` is about its first element (the conjuncts on ``v[i]`` and ``v[1]``).

Under ``skip_till_next_match`` a listed Kleene variable ``b`` also gets ``b''``: no event
that could have been the run's next element (of ``b``'s type, satisfying its element-wise
conjuncts with ``b[i-1]`` the run's last so far and ``b[..i-1]`` the run so far, and only
variables at or before ``b``) between two of its elements (``Variable.gaps_of``: checked in
each gap, ``NegationCheck``) nor after its last one, before the next positive variable's
event (or within the window when ``b`` ends the pattern): one maximal run per start. Under
the contiguities ``b''`` holds in the gaps only: no row (of the same key) between two of
its elements.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import replace

from cepcli.errors import QueryError, Span
from cepcli.plan.pattern import Branch, Condition, Role, Variable
from cepcli.query import ast as a
from cepcli.query.printer import print_expr

ANY_MATCH = "skip_till_any_match"
ANY_TYPE = "*"  # how an every-row negated variable's type is shown (``explain``)

Classify = Callable[[a.Expr, dict[str, Variable]], Condition]


def lower(
    query: a.Query, branches: list[Branch], variables: dict[str, Variable], classify: Classify
) -> list[Branch]:
    """``branches`` with the strategy's negated variables (added to ``variables``, by bit
    after the query's own) and their conditions. Checks that the strategy can apply."""
    strategy = query.strategy
    if strategy == ANY_MATCH:
        return branches
    at = query.strategy_span
    positives = {v.name for v in variables.values() if not v.negated}
    for name in query.strategy_vars:
        if name not in positives:
            raise QueryError(
                f"{strategy} names {name!r}, which is no positive variable of the pattern"
                f" (they are: {', '.join(sorted(positives))})",
                at,
            )
    listed = set(query.strategy_vars) or positives
    out = []
    used: set[str] = set()  # the listed variables some pair (or run) of some branch constrains
    orders: list[list[Variable]] = []
    for k, branch in enumerate(branches):
        seq = _in_order(branch, strategy, at)
        orders.append(seq)
        if strategy == "partition_contiguity" and not branch.equiv:
            raise QueryError("partition_contiguity needs the partition: add [attr] to the WHERE clause", at)
        suffix = "" if len(branches) == 1 else str(k + 1)
        added: list[Variable] = []
        order = set(branch.order)
        conditions = list(branch.conditions)

        def negation(name: str, of: Variable, i: int, gaps: str = "") -> Variable:
            """A negated variable after ``seq[i]`` and before ``seq[i + 1]`` (if any)."""
            n = Variable(
                name,
                of.type if strategy == "skip_till_next_match" else ANY_TYPE,
                Role.NEGATED,
                len(variables),
                span=at,
                made_by=strategy,
                gaps_of=gaps,
            )
            variables[n.name] = n
            added.append(n)  # noqa: B023 - called within this iteration only
            before, after = seq[: i + 1], seq[i + 1 :]  # noqa: B023
            order.update({(x.name, n.name) for x in before} | {(n.name, y.name) for y in after})  # noqa: B023
            return n

        for i in range(len(seq) - 1):
            u, v = seq[i], seq[i + 1]
            if u.name not in listed or v.name not in listed:
                continue
            used.update((u.name, v.name))
            n = negation(f"{v.name}'{suffix}", v, i)
            if strategy == "skip_till_next_match":
                earlier = {x.name for x in seq[: i + 1]} | {v.name}
                for cond in branch.conditions:
                    if v.name in cond.variables and cond.variables <= earlier and cond.negated is None:
                        said = _of_one(cond, v, n.name, first=True, at=at)
                        if said is not None:
                            conditions.append(_negations(classify(said, variables), cond, at))
        for i, b in enumerate(seq):  # a Kleene variable's run: next-match's qualifying events, or contiguous
            if not b.kleene or b.name not in listed:
                continue
            used.add(b.name)
            n = negation(f"{b.name}''{suffix}", b, i, gaps=b.name)
            if strategy != "skip_till_next_match":
                continue  # no row (of its key) between two of its elements; the run need not be maximal
            earlier = {x.name for x in seq[: i + 1]}
            for cond in branch.conditions:
                if cond.iterates == b.name and cond.variables <= earlier and cond.negated is None:
                    said = _of_one(cond, b, n.name, first=False, at=at)
                    assert said is not None
                    mine = _negations(classify(said, variables), cond, at)
                    # (one that reads only the run so far, count(b[..i-1]) < 3, is the negation's too)
                    conditions.append(replace(mine, variables=mine.variables | {n.name}, negated=n.name))
        out.append(Branch((*branch.variables, *added), frozenset(order), tuple(conditions), branch.equiv))
    if query.strategy_vars:
        _check_list(query, used, orders)
    return out


def _check_list(query: a.Query, used: set[str], orders: list[list[Variable]]) -> None:
    """A listed strategy applies to two listed variables next to each other in a branch's
    sequence (and to a listed Kleene variable's own run): a listed variable in no such pair
    would constrain nothing, silently. An error at the first such variable."""
    names = list(dict.fromkeys(query.strategy_vars))
    idle = [n for n in names if n not in used]
    if not idle:
        return
    spans = dict(zip(query.strategy_vars, query.strategy_var_spans, strict=False))
    written = f"{query.strategy}({', '.join(query.strategy_vars)})"
    rule = "it applies between listed variables next to each other in the SEQ, and within a listed Kleene run"
    if len(idle) < len(names):
        applies = ", ".join(n for n in names if n in used)
        message = (
            f"{written}: {_and(idle)} {'is' if len(idle) == 1 else 'are'} consecutive to no other"
            f" listed variable (it applies to {applies} only): {rule}"
        )
    elif len(names) == 1:
        message = (
            f"{written} constrains nothing: {names[0]} is consecutive to no other listed variable: {rule}"
        )
    else:
        between = _between(names, orders) if len(names) == 2 else ""
        pairs = f"{_and(names)} are not" if len(names) == 2 else f"no two of {', '.join(names)} are"
        message = f"{written} constrains nothing: {pairs} consecutive in the pattern{between}: {rule}"
    raise QueryError(message, spans.get(idle[0], query.strategy_span))


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _between(names: list[str], orders: list[list[Variable]]) -> str:
    """`` (b comes between them)``: what separates two listed variables in the first
    branch's sequence that binds both."""
    for seq in orders:
        where = [i for i, v in enumerate(seq) if v.name in names]
        if len(where) == 2:
            inner = [v.name for v in seq[where[0] + 1 : where[1]]]
            return f" ({_and(inner)} {'comes' if len(inner) == 1 else 'come'} between them)"
    return ""


def _negations(cond: Condition, written: Condition, at: Span) -> Condition:
    """A negation's conjunct; one that still reads a Kleene run element by element (``v``
    after ``b`` under ``b[i].x < v.x``) is no negation's: an error at the strategy."""
    if cond.iterates is not None:
        raise QueryError(
            f"skip_till_next_match: the condition {print_expr(written.text)} reads {cond.iterates}[i] and a"
            " later variable, which cannot say what that variable's next event is: not supported yet",
            at,
        )
    return cond


def _of_one(cond: Condition, v: Variable, n: str, first: bool, at: Span) -> a.Expr | None:
    """``cond`` said of one event ``n`` that could have been ``v``'s: ``v`` itself (a plain
    variable), a Kleene ``v``'s first element (``first``: ``v[i]`` and ``v[1]`` are ``n``; a
    conjunct of later elements, ``v[i-1]``, does not decide it and is None), or its next
    element after the run so far (``v[i]`` is ``n``, ``v[i-1]`` the run's last, ``v[..i-1]``
    the run). A conjunct that reads the whole run (``v[last]``, ``v[]``) with its elements
    cannot say which event comes next: an error at the strategy."""
    if not v.kleene:
        return a.renamed(cond.text, {v.name: n})
    refs = {
        node.index if isinstance(node, a.Attr) else node.scope
        for node in a.iter_expr(cond.text)
        if isinstance(node, a.Attr | a.Agg) and node.var == v.name
    }
    if first and (a.Index.PREV in refs or a.Scope.PREFIX in refs):
        return None  # of the second element on
    element = refs & {a.Index.EACH, a.Index.PREV, a.Scope.PREFIX} or (first and refs == {a.Index.FIRST})
    if not element:
        return None  # about the whole run (count(b[]) >= 3): not about which event comes next
    if refs & {a.Index.LAST, a.Scope.ALL}:
        raise QueryError(
            f"skip_till_next_match over {v.name}: a condition that reads {v.name}[i] and the whole run"
            f" ({v.name}[last] or {v.name}[]) cannot say which event is the run's next: not supported yet",
            at,
        )
    return _element(cond.text, v.name, n, first)


def _element(expr: a.Expr, b: str, n: str, first: bool) -> a.Expr:
    """``expr`` with ``b``'s element as ``n`` (see ``_of_one``)."""

    def leaf(node: a.Attr | a.Agg) -> a.Expr | None:
        match node:
            case a.Attr(var, attr, index, span) if var == b:
                if index is a.Index.EACH or (first and index is a.Index.FIRST):
                    return a.Attr(n, attr, a.Index.PLAIN, span)
                if index is a.Index.PREV:
                    return a.Attr(b, attr, a.Index.LAST, span)
            case a.Agg(func, var, attr, a.Scope.PREFIX, span) if var == b:
                return a.Agg(func, b, attr, a.Scope.ALL, span)
        return None

    return a.transformed(expr, leaf)


def _in_order(branch: Branch, strategy: str, at: Span) -> list[Variable]:
    """The branch's positive variables in SEQ order; an error if some are unordered."""
    positives = list(branch.positives)
    seq = sorted(positives, key=lambda v: len(branch.before(v.name)))
    for x, y in itertools.pairwise(seq):
        if (x.name, y.name) not in branch.order:
            raise QueryError(
                f"{strategy} needs the events in a sequence, and {x.name} and {y.name} are not"
                " ordered (AND, or OR inside AND): write the pattern as a SEQ, or use skip_till_any_match",
                at,
            )
    return seq
