"""The eager NFA of paper section 2.2, as data: one automaton per DNF branch.

A state records how many events each bound variable has taken (0/1 for a positive
variable, a capped count for a Kleene one). From a state, a ``take`` edge for variable
``v`` exists when ``v`` can still take an event, every variable that must precede
``v`` is complete, and no variable that must follow ``v`` has started. The ``ignore``
edge of every state is implicit: under skip-till-any-match an instance always stays
where it is as well. For a SEQ this is the paper's chain; for an AND of n variables
it is the lattice of the 2^n subsets (paper Figure 5), built up to ``MAX_STATES``.
"""

from __future__ import annotations

from dataclasses import dataclass

from cepcli.automata.placement import at_accept, place
from cepcli.errors import EngineError
from cepcli.plan.pattern import Branch, Pattern, Variable

MAX_STATES = 20_000

State = tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TakeEdge:
    """``take`` from ``source`` to ``target`` for variable ``var`` (slot ``slot``).

    ``check`` are conditions that become fully bound on this edge (conditions that need
    whole Kleene subsets, or mention no variable at all, are checked on acceptance); ``each_new`` are
    element-wise conditions of a Kleene ``var`` to check on the new element;
    ``each_all`` are element-wise conditions of some Kleene variable whose last other
    variable is bound here, so they run over all its elements taken so far.
    """

    source: int
    target: int
    var: str
    type: str
    slot: int
    bit: int
    kleene: bool
    check: tuple[int, ...]
    each_new: tuple[int, ...]
    each_all: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class EagerBranch:
    branch: Branch
    states: tuple[State, ...]  # q0 (nothing taken) first, then build order
    edges: tuple[TakeEdge, ...]
    accepting: frozenset[int]
    at_accept: tuple[int, ...]  # conditions that need whole Kleene subsets

    def edges_from(self, state: int) -> tuple[TakeEdge, ...]:
        return tuple(e for e in self.edges if e.source == state)


@dataclass(frozen=True, slots=True)
class EagerNfa:
    pattern: Pattern
    branches: tuple[EagerBranch, ...]


def build_eager(pattern: Pattern) -> EagerNfa:
    return EagerNfa(pattern, tuple(_build_branch(b) for b in pattern.branches))


def _cap(v: Variable) -> int:
    if not v.kleene:
        return 1
    return v.hi if v.hi is not None else v.lo


def _complete(v: Variable, count: int) -> bool:
    return count >= (v.lo if v.kleene else 1)


def _build_branch(branch: Branch) -> EagerBranch:
    positives = branch.positives
    slot = {v.name: i for i, v in enumerate(branch.variables)}
    pos_index = {v.name: i for i, v in enumerate(positives)}
    start: State = tuple(0 for _ in positives)
    index: dict[State, int] = {start: 0}
    states: list[State] = [start]
    edges: list[TakeEdge] = []
    todo = [start]
    while todo:
        state = todo.pop(0)
        for i, v in enumerate(positives):
            if not _enabled(branch, positives, pos_index, state, i):
                continue
            target = state[:i] + (min(state[i] + 1, _cap(v)),) + state[i + 1 :]
            if target not in index:
                if len(states) >= MAX_STATES:
                    raise EngineError(
                        f"the eager NFA of this pattern needs more than {MAX_STATES} states"
                        " (an AND of many events has 2^n): use a lazy engine"
                    )
                index[target] = len(states)
                states.append(target)
                todo.append(target)
            edges.append(_edge(branch, positives, slot, state, index[state], index[target], v))
    accepting = frozenset(
        index[s] for s in states if all(_complete(v, c) for v, c in zip(positives, s, strict=True))
    )
    return EagerBranch(branch, tuple(states), tuple(edges), accepting, at_accept(branch))


def _enabled(
    branch: Branch,
    positives: tuple[Variable, ...],
    pos_index: dict[str, int],
    state: State,
    i: int,
) -> bool:
    v = positives[i]
    if state[i] >= _cap(v) and not (v.kleene and v.hi is None):
        return False
    if any(not _complete(positives[pos_index[p]], state[pos_index[p]]) for p in branch.before(v.name)):
        return False
    return all(state[pos_index[s]] == 0 for s in branch.after(v.name))


def _edge(
    branch: Branch,
    positives: tuple[Variable, ...],
    slot: dict[str, int],
    state: State,
    source: int,
    target: int,
    v: Variable,
) -> TakeEdge:
    bound_before = frozenset(p.name for p, c in zip(positives, state, strict=True) if c > 0)
    placed = place(branch, bound_before, v.name)
    return TakeEdge(
        source,
        target,
        v.name,
        v.type,
        slot[v.name],
        v.bit,
        v.kleene,
        placed.check,
        placed.each_new,
        placed.each_all,
    )
