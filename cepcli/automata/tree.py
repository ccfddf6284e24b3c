"""The lazy Tree NFA (paper section 7), as data: one tree per DNF branch.

A state ``q_ord`` stands for the variables taken so far, in the order ``ord``; it has
one outgoing take edge per variable not yet taken, whose ordering filters come from
``ord``, and at run time only the edge of the variable with the fewest buffered
events is followed (``p_se``), and none while some remaining variable has no buffered
event at all (``p_ne``). Kleene variables come after the others and iterate (4.5).
The tree has n! paths, so its states are not built up front: ``tree_state`` makes the
one for an ``ord`` when an instance first reaches it (lazy instantiation).

Evaluation starts at the root when an event arrives that can be the *last* event of
a match (the event of a variable that nothing in the pattern must follow): the root
takes it, and the tree takes the other variables from the input buffer, all before
it. Every match is so found exactly once, when its last event arrives, and in the
order the counters prescribe at that moment.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from cepcli.automata.chain import Action, Negation, first_chance_dependencies, group_by_attribute
from cepcli.automata.placement import Placement, at_accept, place
from cepcli.plan.pattern import Branch, Pattern


@dataclass(frozen=True, slots=True)
class TreeEdge:
    """The take (or iterate) edge of ``var`` out of a state."""

    var: str
    type: str
    action: Action
    lo: int
    hi: int | None
    prec: tuple[str, ...]  # taken variables that must precede var (the latest is used)
    succ: tuple[str, ...]  # taken variables that must follow var (the earliest is used)
    conditions: Placement
    group_by: str | None = None


@dataclass(frozen=True, slots=True)
class TreeState:
    ord: tuple[str, ...]
    edges: tuple[TreeEdge, ...]  # one per variable not in ord; Kleene ones only once the rest is taken

    def edge(self, var: str) -> TreeEdge:
        return next(e for e in self.edges if e.var == var)


@dataclass(frozen=True, slots=True)
class TreeBranch:
    branch: Branch
    positives: tuple[str, ...]  # non-Kleene positive variables, pattern order
    kleene: tuple[str, ...]
    triggers: tuple[str, ...]  # variables whose event can be the last of a match
    first_chance: tuple[tuple[str, frozenset[str]], ...]  # negation, the variables it waits for
    post: tuple[str, ...]  # negations checked after the positive part
    at_accept: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TreeNfa:
    pattern: Pattern
    negation: Negation
    branches: tuple[TreeBranch, ...]

    @property
    def order(self) -> tuple[str, ...]:
        return ()  # no fixed order: chosen at run time by the buffer counters


def build_tree(pattern: Pattern, negation: Negation = Negation.POST_PROCESSING) -> TreeNfa:
    return TreeNfa(pattern, negation, tuple(_branch(b, negation) for b in pattern.branches))


def _branch(branch: Branch, negation: Negation) -> TreeBranch:
    positives = tuple(v.name for v in branch.positives if not v.kleene)
    kleene = tuple(v.name for v in branch.positives if v.kleene)
    triggers = tuple(v.name for v in branch.positives if not branch.after(v.name))
    placed = first_chance_dependencies(branch) if negation is Negation.FIRST_CHANCE else {}
    post = tuple(v.name for v in branch.negated if v.name not in placed)
    return TreeBranch(branch, positives, kleene, triggers, tuple(placed.items()), post, at_accept(branch))


@lru_cache(maxsize=4096)
def tree_state(tree: TreeBranch, ord: tuple[str, ...]) -> TreeState:
    """The state ``q_ord``, made when an instance first reaches it; the runtime keeps
    it while instances are in it (lazy instantiation). The state is data: made once per
    tree and ``ord`` (the adaptive engine starts a tree runtime per time segment)."""
    branch = tree.branch
    taken = frozenset(ord)
    left = [v for v in tree.positives if v not in taken]
    names = left if left else [v for v in tree.kleene if v not in taken]
    by_name = {v.name: v for v in branch.positives}
    edges = []
    for name in names:
        v = by_name[name]
        edges.append(
            TreeEdge(
                var=name,
                type=v.type,
                action=Action.ITERATE if v.kleene else Action.TAKE,
                lo=v.lo,
                hi=v.hi,
                prec=tuple(sorted(taken & branch.before(name))),
                succ=tuple(sorted(taken & branch.after(name))),
                conditions=place(branch, taken, name),
                group_by=group_by_attribute(branch, v) if v.kleene else None,
            )
        )
    return TreeState(ord, tuple(edges))
