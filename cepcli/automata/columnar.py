"""The columnar engine's reach (``cepcli.runtime.columnar`` runs it): the patterns it
evaluates, set-at-a-time over a bounded input. A Kleene variable's subsets are generated
one at a time by the other engines; such a pattern, and a pipe (whose matches must be
written as soon as they are decided), run the lazy tree instead."""

from __future__ import annotations

from cepcli.plan.pattern import Pattern

# The default (adaptive) engine runs this engine on a bounded input (a file, a table, a Spark
# shard) of a pattern it evaluates: it joins set-at-a-time what the adaptive segments would
# evaluate event by event. The segments are for pipes, Kleene patterns and --stats-every.
IN_ADAPTIVE = True


def evaluates(pattern: Pattern) -> bool:
    """Does the columnar engine evaluate this pattern itself (no Kleene variable)?"""
    return not any(v.kleene for v in pattern.variables)
