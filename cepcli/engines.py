"""The engine registry: a name -> (builder, runtime) table, and the stages that
every command shares: text -> Query -> Pattern -> automaton -> matches."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from cepcli.automata import columnar
from cepcli.engine_names import DEFAULT_ENGINE, ENGINE_NAMES
from cepcli.errors import EngineError, did_you_mean
from cepcli.events import Event, Schema
from cepcli.plan.normalize import normalize
from cepcli.plan.pattern import Pattern
from cepcli.query.ast import Query
from cepcli.runtime.loop import Runtime
from cepcli.runtime.matches import Match
from cepcli.runtime.options import EvalOptions
from cepcli.runtime.stats import Stats

__all__ = [
    "DEFAULT_ENGINE",
    "ENGINE_NAMES",
    "ENGINES",
    "Engine",
    "compile_pattern",
    "engine",
    "run_pattern",
    "start",
]

Evaluate = Callable[[Any, Iterable[Event], Schema, Stats, EvalOptions], Iterator[Match]]


@dataclass(frozen=True, slots=True)
class Engine:
    """``build(pattern, order)`` makes the automaton (data); ``evaluate`` runs it.
    ``lazy`` engines need a frequency order (``--order``, or measured). Each engine's
    modules are imported when it is first built or run: a run imports its own engine's."""

    name: str
    build: Callable[[Pattern, tuple[str, ...]], Any]
    evaluate: Evaluate
    lazy: bool
    # on a bounded input, does it evaluate this pattern with the columnar engine (``Run`` then
    # hands it the input's columns, and no events)?
    columnar: Callable[[Pattern], bool] = lambda pattern: False


def _eager(pattern: Pattern, order: tuple[str, ...]) -> Any:
    from cepcli.automata.eager import build_eager

    return build_eager(pattern)


def _chain(first_chance: bool) -> Callable[[Pattern, tuple[str, ...]], Any]:
    def build(pattern: Pattern, order: tuple[str, ...]) -> Any:
        from cepcli.automata.chain import Negation, build_chain

        return build_chain(
            pattern, order, Negation.FIRST_CHANCE if first_chance else Negation.POST_PROCESSING
        )

    return build


def _tree(pattern: Pattern, order: tuple[str, ...]) -> Any:
    from cepcli.automata.tree import build_tree

    return build_tree(pattern)


def _adaptive(pattern: Pattern, order: tuple[str, ...]) -> Any:
    from cepcli.automata.adaptive import build_adaptive

    return build_adaptive(pattern)


def _columnar_plan(pattern: Pattern, order: tuple[str, ...]) -> Any:
    return pattern  # the columnar engine plans from the pattern itself, at run time


# the runtimes, each imported when it first runs
def _run_eager(
    nfa: Any, events: Iterable[Event], schema: Schema, stats: Stats, options: EvalOptions
) -> Iterator[Match]:
    from cepcli.runtime.eager import evaluate_eager

    return evaluate_eager(nfa, events, schema, stats, options)


def _run_chain(
    nfa: Any, events: Iterable[Event], schema: Schema, stats: Stats, options: EvalOptions
) -> Iterator[Match]:
    from cepcli.runtime.chain import evaluate_chain

    return evaluate_chain(nfa, events, schema, stats, options)


def _run_tree(
    nfa: Any, events: Iterable[Event], schema: Schema, stats: Stats, options: EvalOptions
) -> Iterator[Match]:
    from cepcli.runtime.tree import evaluate_tree

    return evaluate_tree(nfa, events, schema, stats, options)


def _run_adaptive(
    nfa: Any, events: Iterable[Event], schema: Schema, stats: Stats, options: EvalOptions
) -> Iterator[Match]:
    from cepcli.runtime.adaptive import evaluate_adaptive

    return evaluate_adaptive(nfa, events, schema, stats, options)


def _run_columnar(
    pattern: Any, events: Iterable[Event], schema: Schema, stats: Stats, options: EvalOptions
) -> Iterator[Match]:
    from cepcli.runtime.columnar import evaluate_events

    return evaluate_events(pattern, events, schema, stats, options)


def _adaptive_columnar(pattern: Pattern) -> bool:
    return columnar.in_adaptive(pattern)


ENGINES: dict[str, Engine] = {
    "eager": Engine("eager", _eager, _run_eager, lazy=False),
    "chain": Engine("chain", _chain(False), _run_chain, lazy=True),
    "post-processing": Engine("post-processing", _chain(False), _run_chain, lazy=True),
    "first-chance": Engine("first-chance", _chain(True), _run_chain, lazy=True),
    "tree": Engine("tree", _tree, _run_tree, lazy=False),
    "adaptive": Engine("adaptive", _adaptive, _run_adaptive, lazy=False, columnar=_adaptive_columnar),
    "columnar": Engine("columnar", _columnar_plan, _run_columnar, lazy=False, columnar=columnar.evaluates),
}


def engine(name: str) -> Engine:
    if name in ENGINES:
        return ENGINES[name]
    if name in ENGINE_NAMES:
        built = ", ".join(sorted(ENGINES))
        raise EngineError(f"engine {name!r} is not implemented yet (available: {built})")
    hint = did_you_mean(name, ENGINE_NAMES)
    raise EngineError(f"unknown engine {name!r} ({hint}choose from {', '.join(ENGINE_NAMES)})")


def compile_pattern(
    text: str, filename: str = "<query>", time_unit: int = 10**9, parsed: Query | None = None
) -> tuple[Query, Pattern]:
    """Parse (unless ``parsed`` is ``text`` already parsed), check and normalise query text;
    errors point into ``text``. A window written as a bare number is in ``time_unit``
    nanoseconds (``--time-unit``)."""
    from cepcli.errors import QueryError

    if parsed is None:
        from cepcli.query.parser import parse_query  # (not with this module: see query.reuse)

        parsed = parse_query(text, filename)
    query = parsed
    try:
        return query, normalize(query, time_unit=time_unit)
    except QueryError as err:
        raise err.located(text, filename) from None


def run_pattern(
    pattern: Pattern,
    name: str,
    events: Iterable[Event],
    schema: Schema,
    stats: Stats,
    order: tuple[str, ...] = (),
    options: EvalOptions | None = None,
) -> Iterator[Match]:
    """Build the automaton of engine ``name`` (lazy engines: for ``order``, rarest
    first; variables it leaves out follow in pattern order) and run it over ``events``
    (``options``: how the evaluation goes; by default a file's, with no limit)."""
    chosen = engine(name)
    stats.engine = name
    automaton = chosen.build(pattern, order)
    if chosen.lazy:
        stats.order = automaton.order
    return chosen.evaluate(automaton, events, schema, stats, options or EvalOptions())


def start(
    pattern: Pattern,
    name: str,
    schema: Schema,
    stats: Stats,
    order: tuple[str, ...] = (),
    options: EvalOptions | None = None,
) -> Runtime:
    """The runtime of engine ``name`` over ``pattern``, fed one event at a time (``process``,
    then ``finish`` and ``report``), as ``run_pattern`` feeds it: several queries over one
    stream (``cepcli.run``) each have one. The columnar engine collects its events and
    evaluates them at the end (``evaluate_events``)."""
    chosen = engine(name)
    stats.engine = name
    automaton = chosen.build(pattern, order)
    if chosen.lazy:
        stats.order = automaton.order
    options = options or EvalOptions()
    if name == "eager":
        from cepcli.runtime.eager import EagerRuntime

        return EagerRuntime(automaton, schema, stats, options)
    if chosen.lazy:
        from cepcli.runtime.chain import ChainRuntime

        return ChainRuntime(automaton, schema, stats, options)
    if name == "tree":
        from cepcli.runtime.tree import TreeRuntime

        return TreeRuntime(automaton, schema, stats, options)
    if name == "adaptive":
        from cepcli.runtime.adaptive import AdaptiveRuntime

        return AdaptiveRuntime(automaton, schema, stats, options)
    return _Collected(pattern, schema, stats, options)


class _Collected:
    """The columnar engine fed one event at a time: it keeps them and evaluates at the end."""

    def __init__(self, pattern: Pattern, schema: Schema, stats: Stats, options: EvalOptions) -> None:
        self.pattern, self.schema, self.stats, self.options = pattern, schema, stats, options
        self.events: list[Event] = []

    def process(self, event: Event) -> Iterable[Match]:
        self.events.append(event)
        return ()

    def finish(self) -> Iterable[Match]:
        return _run_columnar(self.pattern, self.events, self.schema, self.stats, self.options)

    def report(self) -> None:
        pass
