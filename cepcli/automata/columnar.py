"""The columnar engine's reach (``cepcli.runtime.columnar`` runs it): the patterns it
evaluates, set-at-a-time over a bounded input or step by step. A Kleene variable's subsets
are generated one at a time by the other engines; the columnar engine takes two shapes of
them: one run per start, a SEQ ending in ``b+`` under skip-till-next-match
(``Branch.next_run``: the run's next element is the first event that could follow it),
whose conditions read ``b`` only element by element (``b[i]``, ``b[i-1]``, ``b[1]``),
with no negation but the strategy's; and a bounded closure ``B{l,m} b[]``, joined as its
lengths (``plan.closures``; the default engine leaves those to the tree: ``in_adaptive``).
Other Kleene patterns run on the other engines."""

from __future__ import annotations

from cepcli.plan.closures import closure
from cepcli.plan.pattern import Branch, Pattern
from cepcli.query import ast as a

# The default (adaptive) engine runs this engine on a bounded input (a file, a table, a Spark
# shard) of a pattern it evaluates: it joins set-at-a-time what the adaptive segments would
# evaluate event by event. The segments are for pipes, Kleene patterns and --stats-every.
IN_ADAPTIVE = True


def in_adaptive(pattern: Pattern) -> bool:
    """Does the default engine run this pattern on the columnar engine? Every pattern the
    columnar engine evaluates but a bounded closure: the lengths of ``B{l,m} b[]`` joined one
    by one lose to the tree's lazy subsets as often as they win (on the 3M flights: 16x and
    1.5x faster, and 0.66x; 5x the memory; docs/engines.md), so ``--engine columnar`` runs
    them set-at-a-time and the default leaves them to the tree."""
    if not IN_ADAPTIVE or not evaluates(pattern):
        return False
    return not any(v.kleene for v in pattern.variables) or closure(pattern) is None


def evaluates(pattern: Pattern) -> bool:
    """Does the columnar engine evaluate this pattern itself (no Kleene variable, or one
    run per start: see the module)?"""
    if not any(v.kleene for v in pattern.variables):
        return True
    if closure(pattern) is not None:
        return True
    return len(pattern.branches) == 1 and _one_run(pattern.branches[0])


def _one_run(branch: Branch) -> bool:
    run = branch.next_run
    if run is None:
        return False
    _, b, n1, n2 = run
    if any(n.made_by != "skip_till_next_match" for n in branch.negated):
        return False
    earlier = branch.before(b) | {b}
    for cond in branch.conditions:
        if b not in cond.variables:
            continue
        if cond.negated not in (None, n2) or not cond.variables - {n2} <= earlier:
            return False
        for node in a.iter_expr(cond.expr):
            if isinstance(node, a.Agg) and node.var == b:
                return False  # (the run so far as a whole: count(b[..i-1]), avg(b[]))
            if (
                isinstance(node, a.Attr)
                and node.var == b
                and node.index is a.Index.LAST
                and cond.negated != n2
            ):
                return False
    return True
