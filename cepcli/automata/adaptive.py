"""The adaptive engine (issue 15), as data: the eager NFA, the lazy Tree NFA and the Chain
NFAs (one per frequency order, made when a segment first needs it) of one pattern, and how
the runtime chooses between them segment by segment (``cepcli.runtime.adaptive``).

The eager NFA is left out (``None``: always the tree) when the pattern has a Kleene
variable, whose eager instances grow with every subset of its candidates, or when the
eager NFA would be too large to build.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass

from cepcli.automata import columnar
from cepcli.automata.chain import ChainNfa, Negation, build_chain
from cepcli.automata.eager import EagerNfa, build_eager
from cepcli.automata.tree import TreeNfa, build_tree
from cepcli.errors import EngineError
from cepcli.plan.pattern import Join, Pattern

# A segment spans this many windows: where the engine changes, the runtimes of two
# neighbouring segments both see the 2W where their inputs overlap (a segment that keeps
# its engine continues the runtime before it); shorter segments follow the rates sooner.
SEGMENT_WINDOWS: float = 32
# Eager when the rarest and the most frequent variable are within this factor in the last
# segment: about the break-even of the Chain NFA against eager on the dense and the sparse
# flights (BENCHMARKS.md, "The ratio sweep").
RATIO = 6.0
# The counts must say something: a choice needs the rarest variable counted at least LEAST
# times (a count of 1 or 2 against 8 is noise, not a ratio of 1:8, and 0 against 8 is a
# quiet hour as often as a skew), or the most frequent LEAST * CHAIN_RATIO times (the tree);
# with less, the counts are carried into the next segment's and the engine before goes on.
LEAST = 3
# Past RATIO, the Chain NFA in the order the counts give (rarest first) up to this factor,
# the tree beyond: on the dense flights the chain leads the tree from about 1:5 to 1:50,
# the tree leads beyond (BENCHMARKS.md, "The ratio sweep").
CHAIN_RATIO = 50.0
# A change of engine needs the ratio this factor past the bound (lazy to eager below
# RATIO / HYSTERESIS, eager to lazy above RATIO * HYSTERESIS, and the same at CHAIN_RATIO):
# a ratio measured near a bound varies from segment to segment, and would otherwise flip the
# engine every few segments, where every change starts a runtime with empty buffers
# (BENCHMARKS.md, "The ratio sweep").
HYSTERESIS = 1.5
# The first segment's engine is chosen from the stream's first events, held until the rarest
# variable is counted FIRST_LEAST times (or the most frequent FIRST_LEAST * CHAIN_RATIO
# times), the first segment's time has passed, or HELD events are held: on a stream shorter
# than a few segments (a day of minute bars at a 30-minute window is one segment) the first
# segment is most of the run, and the tree there is far behind eager at equal rates. On a pipe
# nothing is held (its matches are written as soon as they are decided): the first segment
# spans FIRST_WINDOWS + 1 windows, of the tree, and the next one is chosen from the counts
# of its first FIRST_WINDOWS.
FIRST_LEAST = 10
FIRST_WINDOWS = 2
HELD = 1 << 16
# Rates alone do not see the conditions: where the rates say eager, a pattern with equality
# joins between its variables runs the Chain NFA instead when the partial matches eager's
# states hold outnumber those of the best chain by more than KEYED (``Keys``: estimated
# from the rates and the distinct values of the joined attributes). Eager holds a partial
# match for every set of variables closed under the stream order (every subset in an AND);
# a chain only its order's prefixes, and can put a join in its first pair
# (``AND(ORD a, DFW b, SEA c) WHERE a.dest = c.dest AND b.dest = c.dest``: eager pairs
# every a with every b, a chain from c pairs only those of the same destination). Without
# joins, the two estimates are the empirical bands' business: an AND's eager holds a few times a
# chain's at equal rates, a SEQ's the same, so KEYED stays above both.
KEYED = 6.0
# ... and by KEYED_GAIN times more than the same estimates without the joins: a chain from
# the rarest variable holds fewer partial matches than eager at any ratio, and where the
# rates say eager, eager is faster all the same (the empirical bands above); only what
# the joins change is theirs to overrule.
KEYED_GAIN = 2.0
KEY_SAMPLE = 4096  # the stream's first events, whose values estimate each join's distinct keys
KEYED_MOST = 6  # variables: past it, the rates alone (the estimate enumerates their sets)


@dataclass(frozen=True, slots=True)
class AdaptiveNfa:
    pattern: Pattern
    eager: EagerNfa | None  # None: the tree everywhere
    tree: TreeNfa
    segment: int  # nanoseconds (from the first event)
    ratio: float
    least: int  # the counts a choice needs (``LEAST``)
    chain_ratio: float  # the chain up to this ratio, the tree beyond (``CHAIN_RATIO``)
    hysteresis: float  # a change needs the ratio this factor past the bound (``HYSTERESIS``)
    first_least: int  # the first choice's evidence (``FIRST_LEAST``)
    first_span: int  # nanoseconds: on a pipe, what the first choice is made from (``FIRST_WINDOWS``)
    columnar: bool  # a bounded input runs the columnar engine (``columnar.IN_ADAPTIVE``, and it allows)
    keys: Keys | None = None  # the pattern's equality joins, when they may overrule eager

    def chain(self, order: tuple[str, ...]) -> ChainNfa:
        """The Chain NFA of ``order`` (rarest first), negations by post-processing."""
        return build_chain(self.pattern, order, Negation.POST_PROCESSING)

    @property
    def order(self) -> tuple[str, ...]:
        return ()  # chosen at run time


@dataclass(frozen=True, slots=True)
class Keys:
    """A one-branch pattern's equality joins between its positive variables, and what the
    estimate of partial matches needs: eager's sets of variables, and the fraction of each
    set's combinations the stream order allows (``SEQ(a, b)``: half of the pairs)."""

    joins: tuple[Join, ...]
    names: tuple[str, ...]  # the positive variables
    eager_sets: tuple[frozenset[str], ...]  # closed under the order; neither empty nor whole
    in_order: dict[frozenset[str], float]  # every set of ``names``: the share in stream order

    def partial_matches(
        self, sets: Iterable[frozenset[str]], rates: dict[str, float], keys: dict[Join, int]
    ) -> float:
        """The partial matches ``sets`` hold at a time: for each set the product of its
        variables' events per window, the share in stream order, and one over the distinct
        keys of each join that connects two of its parts (a join implied by two others is no
        condition the engines check, and divides nothing)."""
        total = 0.0
        for bound in sets:
            n = math.prod(rates[v] for v in bound) * self.in_order[bound]
            part = {v: v for v in bound}  # the parts the joins connect so far
            for join in self.joins:
                u, w = join.left[0], join.right[0]
                if u in bound and w in bound and _root(part, u) != _root(part, w):
                    part[_root(part, u)] = _root(part, w)
                    n /= keys[join]
            total += n
        return total

    def eager(self, rates: dict[str, float], keys: dict[Join, int]) -> float:
        return self.partial_matches(self.eager_sets, rates, keys)

    def chain(self, rates: dict[str, float], keys: dict[Join, int]) -> tuple[tuple[str, ...], float]:
        """The chain order the estimate prefers, built greedily (each next variable the one
        whose prefix holds the fewest partial matches; the rarest first), and its estimate."""
        order: list[str] = []
        total = 0.0
        while len(order) < len(self.names) - 1:
            best = min(
                (self.partial_matches([frozenset((*order, v))], rates, keys), rates[v], i, v)
                for i, v in enumerate(self.names)
                if v not in order
            )
            order.append(best[3])
            total += best[0]
        order += [v for v in self.names if v not in order]
        return tuple(order), total


def key_joins(pattern: Pattern) -> Keys | None:
    """The ``Keys`` of a pattern of one branch, with equality joins (``a.x = c.y``, and
    ``[attr]`` between every two positive variables), no Kleene variable and at most
    ``KEYED_MOST`` positive ones; else None (the rates alone choose)."""
    if len(pattern.branches) != 1:
        return None
    branch = pattern.branches[0]
    names = tuple(v.name for v in branch.positives)
    if any(v.kleene for v in branch.positives) or not 2 <= len(names) <= KEYED_MOST:
        return None
    joins = [
        c.join
        for c in branch.conditions
        if c.join is not None
        and {c.join.left[0], c.join.right[0]} <= set(names)
        and c.join.left[0] != c.join.right[0]
    ]
    joins += [
        Join((u, attr), (w, attr)) for attr in branch.equiv for u, w in itertools.combinations(names, 2)
    ]
    if not joins:
        return None
    before = {(x, y) for x, y in branch.order if x in names and y in names}
    subsets = [frozenset(c) for k in range(1, len(names) + 1) for c in itertools.combinations(names, k)]
    in_order = {s: _in_order(s, before) for s in subsets}
    closed = tuple(s for s in subsets if len(s) < len(names) and all(x in s for x, y in before if y in s))
    return Keys(tuple(dict.fromkeys(joins)), names, closed, in_order)


def _root(part: dict[str, str], v: str) -> str:
    while part[v] != v:
        v = part[v]
    return v


def _in_order(bound: frozenset[str], before: set[tuple[str, str]]) -> float:
    """The share of the orders of ``bound``'s events that the stream order allows."""
    inside = [(x, y) for x, y in before if x in bound and y in bound]
    if not inside:
        return 1.0
    orders = list(itertools.permutations(sorted(bound)))
    allowed = sum(1 for o in orders if all(o.index(x) < o.index(y) for x, y in inside))
    return allowed / len(orders)


def build_adaptive(
    pattern: Pattern, segment_windows: float | None = None, ratio: float | None = None
) -> AdaptiveNfa:
    """The engine's automata; ``segment_windows`` and ``ratio`` default to the module's
    ``SEGMENT_WINDOWS`` and ``RATIO`` as they are when it is built (the tests vary them,
    and ``LEAST`` and ``CHAIN_RATIO``)."""
    segment_windows = SEGMENT_WINDOWS if segment_windows is None else segment_windows
    ratio = RATIO if ratio is None else ratio
    eager = None
    if not any(v.kleene for v in pattern.variables):
        try:
            eager = build_eager(pattern)
        except EngineError:
            eager = None  # too many states for eager: the tree only
    segment = max(1, int(pattern.window * segment_windows))
    return AdaptiveNfa(
        pattern,
        eager,
        build_tree(pattern),
        segment,
        ratio,
        LEAST,
        CHAIN_RATIO,
        HYSTERESIS,
        FIRST_LEAST,
        max(1, int(pattern.window * FIRST_WINDOWS)),
        columnar.in_adaptive(pattern),
        key_joins(pattern) if eager is not None else None,
    )
