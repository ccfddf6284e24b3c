"""The adaptive engine (issue 15), as data: the eager NFA, the lazy Tree NFA and the Chain
NFAs (one per frequency order, made when a segment first needs it) of one pattern, and how
the runtime chooses between them segment by segment (``cepcli.runtime.adaptive``).

The eager NFA is left out (``None``: always the tree) when the pattern has a Kleene
variable, whose eager instances grow with every subset of its candidates, or when the
eager NFA would be too large to build.
"""

from __future__ import annotations

from dataclasses import dataclass

from cepcli.automata import columnar
from cepcli.automata.chain import ChainNfa, Negation, build_chain
from cepcli.automata.eager import EagerNfa, build_eager
from cepcli.automata.tree import TreeNfa, build_tree
from cepcli.errors import EngineError
from cepcli.plan.pattern import Pattern

# A segment spans this many windows: where the engine changes, the runtimes of two
# neighbouring segments both see the 2W where their inputs overlap (a segment that keeps
# its engine continues the runtime before it); shorter segments follow the rates sooner.
SEGMENT_WINDOWS: float = 32
# Eager when the rarest and the most frequent variable are within this factor in the last
# segment: about the break-even of the Chain NFA against eager on the dense and the sparse
# flights (BENCHMARKS.md, the adaptive ratio sweep).
RATIO = 6.0
# The counts must say something: a choice needs the rarest variable counted at least LEAST
# times (a count of 1 or 2 against 8 is noise, not a ratio of 1:8, and 0 against 8 is a
# quiet hour as often as a skew), or the most frequent LEAST * CHAIN_RATIO times (the tree);
# with less, the counts are carried into the next segment's and the engine before goes on.
LEAST = 3
# Past RATIO, the Chain NFA in the order the counts give (rarest first) up to this factor,
# the tree beyond: on the dense flights the chain leads the tree from about 1:5 to 1:50,
# the tree leads beyond (BENCHMARKS.md, the adaptive ratio sweep).
CHAIN_RATIO = 50.0
# A change of engine needs the ratio this factor past the bound (lazy to eager below
# RATIO / HYSTERESIS, eager to lazy above RATIO * HYSTERESIS, and the same at CHAIN_RATIO):
# a ratio measured near a bound varies from segment to segment, and would otherwise flip the
# engine every few segments, where every change starts a runtime with empty buffers
# (BENCHMARKS.md, the adaptive ratio sweep).
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

    def chain(self, order: tuple[str, ...]) -> ChainNfa:
        """The Chain NFA of ``order`` (rarest first), negations by post-processing."""
        return build_chain(self.pattern, order, Negation.POST_PROCESSING)

    @property
    def order(self) -> tuple[str, ...]:
        return ()  # chosen at run time


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
        columnar.IN_ADAPTIVE and columnar.evaluates(pattern),
    )
