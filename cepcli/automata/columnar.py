"""The columnar engine's reach (``cepcli.runtime.columnar`` runs it): the patterns it
evaluates, set-at-a-time over a bounded input. A Kleene variable's subsets are generated
one at a time by the other engines; such a pattern, and a pipe (whose matches must be
written as soon as they are decided), run the lazy tree instead."""

from __future__ import annotations

from cepcli.plan.pattern import Pattern


def evaluates(pattern: Pattern) -> bool:
    """Does the columnar engine evaluate this pattern itself (no Kleene variable)?"""
    return not any(v.kleene for v in pattern.variables)
