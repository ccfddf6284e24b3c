"""Where a condition is checked: on the take edge where its last variable is bound.

Shared by every builder, so that all engines evaluate the same conditions (only at
different moments). A condition is *placed* on the take of ``v`` when ``v`` is among
its variables and the others are already bound; a condition that iterates over a
Kleene variable is checked element by element; conditions that need whole Kleene
subsets, or mention no variable, wait for acceptance; those on negated variables
belong to the negation checks; prefilter conditions were applied to the events
already.
"""

from __future__ import annotations

from dataclasses import dataclass

from cepcli.plan.pattern import Branch, Condition


@dataclass(frozen=True, slots=True)
class Placement:
    """Condition indexes (into ``branch.conditions``) checked on one take edge.

    ``check``: fully bound now. ``each_new``: element-wise conditions of the Kleene
    variable taken here, for the new element. ``each_all``: element-wise conditions of
    an already started Kleene variable whose last other variable is bound here, over
    all its elements so far.
    """

    check: tuple[int, ...] = ()
    each_new: tuple[int, ...] = ()
    each_all: tuple[int, ...] = ()


def negated_in(branch: Branch, cond: Condition) -> bool:
    return cond.negated is not None


def place(branch: Branch, bound_before: frozenset[str] | set[str], var: str) -> Placement:
    """The conditions to check when ``var`` is taken after ``bound_before``."""
    bound_after = set(bound_before) | {var}
    check: list[int] = []
    each_new: list[int] = []
    each_all: list[int] = []
    for i, cond in enumerate(branch.conditions):
        if cond.prefilter or cond.whole or negated_in(branch, cond):
            continue
        if var not in cond.variables and cond.iterates != var:
            continue
        others = cond.variables - {cond.iterates} if cond.iterates else cond.variables
        if not others <= bound_after:
            continue
        if cond.iterates is None:
            if var not in bound_before:
                check.append(i)
        elif cond.iterates == var:
            each_new.append(i)
        elif var not in bound_before and cond.iterates in bound_before:
            each_all.append(i)
    return Placement(tuple(check), tuple(each_new), tuple(each_all))


def at_accept(branch: Branch) -> tuple[int, ...]:
    """Conditions left for acceptance: whole Kleene subsets, or no variable at all."""
    return tuple(
        i
        for i, c in enumerate(branch.conditions)
        if not c.prefilter and (c.whole or not c.variables) and not negated_in(branch, c)
    )
