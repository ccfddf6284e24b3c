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
and one between bound events is always inside the window.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from cepcli.errors import QueryError, Span
from cepcli.plan.pattern import Branch, Condition, Role, Variable
from cepcli.query import ast as a

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
    for k, branch in enumerate(branches):
        seq = _in_order(branch, strategy, at)
        kleene = [v.name for v in seq if v.kleene and v.name in listed]
        if kleene:
            raise QueryError(
                f"{strategy} over a Kleene variable ({kleene[0]}) is not supported yet: name the"
                f" variables it applies to, without {kleene[0]} (WHERE {strategy}(...)), or use"
                " skip_till_any_match",
                at,
            )
        if strategy == "partition_contiguity" and not branch.equiv:
            raise QueryError("partition_contiguity needs the partition: add [attr] to the WHERE clause", at)
        suffix = "" if len(branches) == 1 else str(k + 1)
        added: list[Variable] = []
        order = set(branch.order)
        conditions = list(branch.conditions)
        for i in range(len(seq) - 1):
            u, v = seq[i], seq[i + 1]
            if u.name not in listed or v.name not in listed:
                continue
            n = Variable(
                f"{v.name}'{suffix}",
                v.type if strategy == "skip_till_next_match" else ANY_TYPE,
                Role.NEGATED,
                len(variables),
                span=at,
                made_by=strategy,
            )
            variables[n.name] = n
            added.append(n)
            order |= {(x.name, n.name) for x in seq[: i + 1]} | {(n.name, y.name) for y in seq[i + 1 :]}
            if strategy == "skip_till_next_match":
                earlier = {x.name for x in seq[: i + 1]} | {v.name}
                for cond in branch.conditions:
                    if v.name in cond.variables and cond.variables <= earlier and cond.negated is None:
                        conditions.append(classify(a.renamed(cond.text, {v.name: n.name}), variables))
        out.append(Branch((*branch.variables, *added), frozenset(order), tuple(conditions), branch.equiv))
    return out


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
