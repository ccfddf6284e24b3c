"""The lazy Chain NFA (paper sections 3-5), as data: one chain per DNF branch.

A chain has one state per positive variable, in ascending frequency order, with the
Kleene variables last (4.5); each state *takes* (or, for a Kleene variable,
*iterates*) its variable, searching the input buffer within the ordering filters
``prec``/``succ`` (4.1-4.3) and, when nothing taken so far must follow it, waiting
for it on the stream. Negated variables are checked either in a negative sub-chain
after the positive one, in descending frequency (post-processing, 4.4.1), or at the
earliest state where their dependencies are taken (first-chance, 4.4.2). The chains
of an OR or composite pattern share their start, accepting and rejecting states: the
Multi-Chain NFA of section 5.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from cepcli.automata.placement import Placement, at_accept, place
from cepcli.plan.pattern import Branch, Pattern, Variable
from cepcli.query import ast as a


class Action(enum.Enum):
    TAKE = "take"
    ITERATE = "iterate"


class Negation(enum.Enum):
    POST_PROCESSING = "post-processing"
    FIRST_CHANCE = "first-chance"


@dataclass(frozen=True, slots=True)
class ChainState:
    """State ``q_{index+1}`` of a chain: it detects ``var``.

    ``prec``/``succ`` are the variables taken before this state that must precede /
    follow ``var``; at run time the latest of ``prec`` and the earliest of ``succ``
    bound the buffer search. With ``succ`` empty the variable may still arrive, so
    instances wait here for the stream. ``stores`` and ``ignores`` are the variables
    whose events this state's store and ignore edges handle (paper notation; the
    runtime shares one buffer per variable). ``rejects`` are the first-chance
    negations checked as soon as this state's variable is taken.
    """

    index: int
    var: str
    type: str
    action: Action
    lo: int
    hi: int | None
    prec: tuple[str, ...]
    succ: tuple[str, ...]
    conditions: Placement
    stores: tuple[str, ...]
    ignores: tuple[str, ...]
    rejects: tuple[str, ...] = ()
    group_by: str | None = None

    @property
    def from_stream(self) -> bool:
        return not self.succ


@dataclass(frozen=True, slots=True)
class NegativeState:
    """A state of the post-processing sub-chain: no event of ``var`` may be found.
    ``timeout``: the variable may follow every positive one, so the check passes only
    when the window closes; otherwise a failed buffer search passes it."""

    var: str
    type: str
    prec: tuple[str, ...]
    succ: tuple[str, ...]
    timeout: bool


@dataclass(frozen=True, slots=True)
class Chain:
    branch: Branch
    states: tuple[ChainState, ...]
    negative: tuple[NegativeState, ...]
    at_accept: tuple[int, ...]

    @property
    def order(self) -> tuple[str, ...]:
        return tuple(s.var for s in self.states)


@dataclass(frozen=True, slots=True)
class ChainNfa:
    """A Multi-Chain NFA: the chains of all branches, built from one frequency order."""

    pattern: Pattern
    negation: Negation
    order: tuple[str, ...]  # every variable, rarest first
    chains: tuple[Chain, ...]


def build_chain(pattern: Pattern, order: tuple[str, ...], negation: Negation) -> ChainNfa:
    """``order``: variable names, rarest first; missing ones follow in pattern order."""
    full = complete_order(pattern, order)
    rank = {name: i for i, name in enumerate(full)}
    chains = tuple(_build_branch(b, rank, negation) for b in pattern.branches)
    return ChainNfa(pattern, negation, full, chains)


def complete_order(pattern: Pattern, order: tuple[str, ...]) -> tuple[str, ...]:
    rest = tuple(v.name for v in pattern.variables if v.name not in order)
    return tuple(order) + rest


def _build_branch(branch: Branch, rank: dict[str, int], negation: Negation) -> Chain:
    positives = sorted(branch.positives, key=lambda v: (v.kleene, rank[v.name]))
    negated = sorted(branch.negated, key=lambda v: -rank[v.name])  # descending frequency
    placed_at = _first_chance(branch, positives) if negation is Negation.FIRST_CHANCE else {}
    states = []
    for i, v in enumerate(positives):
        taken = frozenset(p.name for p in positives[:i])
        states.append(
            ChainState(
                index=i,
                var=v.name,
                type=v.type,
                action=Action.ITERATE if v.kleene else Action.TAKE,
                lo=v.lo,
                hi=v.hi,
                prec=tuple(sorted(taken & branch.before(v.name))),
                succ=tuple(sorted(taken & branch.after(v.name))),
                conditions=place(branch, taken, v.name),
                stores=tuple(p.name for p in positives[i + 1 :]) + tuple(n.name for n in negated),
                ignores=tuple(sorted(taken)),
                rejects=tuple(n for n, at in placed_at.items() if at == i),
                group_by=group_by_attribute(branch, v) if v.kleene else None,
            )
        )
    negative = tuple(
        NegativeState(
            n.name,
            n.type,
            tuple(sorted(branch.before(n.name))),
            tuple(sorted(branch.after(n.name))),
            timeout=not branch.after(n.name),
        )
        for n in negated
        if n.name not in placed_at
    )
    return Chain(branch, tuple(states), negative, at_accept(branch))


def first_chance_dependencies(branch: Branch) -> dict[str, frozenset[str]]:
    """The negated variables that can be checked early, each with the positive
    variables it waits for (DEP). A negation must lie between bound events on both
    sides, so that every event in range is already in the buffer and inside the window
    of any completion; it waits for its condition partners and for every positive
    variable of its own type too (an event taken by one of those is not a violation).
    One that would wait for a Kleene variable is post-processed, like the others."""
    kleene = {v.name for v in branch.positives if v.kleene}
    out: dict[str, frozenset[str]] = {}
    for n in branch.negated:
        before, after = branch.before(n.name), branch.after(n.name)
        if not before or not after:
            continue
        deps = set(maximal(branch, before)) | set(minimal(branch, after))
        for cond in branch.conditions_on(n.name):
            deps |= cond.variables - {n.name}
        deps |= {v.name for v in branch.positives if v.of_type(n)}
        if not deps & kleene:
            out[n.name] = frozenset(deps)
    return out


def _first_chance(branch: Branch, positives: list[Variable]) -> dict[str, int]:
    """For each negation checked early, the state after whose take (q_DEP) it runs."""
    index = {v.name: i for i, v in enumerate(positives)}
    return {n: max(index[d] for d in deps) for n, deps in first_chance_dependencies(branch).items()}


def maximal(branch: Branch, names: frozenset[str]) -> list[str]:
    return [x for x in names if not any((x, y) in branch.order for y in names)]


def minimal(branch: Branch, names: frozenset[str]) -> list[str]:
    return [y for y in names if not any((x, y) in branch.order for x in names)]


def group_by_attribute(branch: Branch, v: Variable) -> str | None:
    """The group-by-attribute optimisation (4.5.3): ``b[i].x = b[i-1].x`` or ``[x]``."""
    for cond in branch.conditions:
        match cond.expr:
            case a.Compare("=", a.Attr(v1, x1, i1), a.Attr(v2, x2, i2)) if (
                v1 == v2 == v.name and x1 == x2 and {i1, i2} == {a.Index.EACH, a.Index.PREV}
            ):
                return x1
    return branch.equiv[0] if branch.equiv else None
