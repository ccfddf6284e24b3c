"""The engine registry: a name -> (builder, runtime) table, and the stages that
every command shares: text -> Query -> Pattern -> automaton -> matches."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from cepcli.automata.adaptive import build_adaptive
from cepcli.automata.chain import ChainNfa, Negation, build_chain
from cepcli.automata.columnar import evaluates
from cepcli.automata.eager import EagerNfa, build_eager
from cepcli.automata.tree import build_tree
from cepcli.engine_names import DEFAULT_ENGINE, ENGINE_NAMES
from cepcli.errors import EngineError
from cepcli.events import Event, Schema
from cepcli.plan.normalize import normalize
from cepcli.plan.pattern import Pattern
from cepcli.query.ast import Query
from cepcli.query.parser import parse_query
from cepcli.runtime.adaptive import evaluate_adaptive
from cepcli.runtime.chain import evaluate_chain
from cepcli.runtime.eager import evaluate_eager
from cepcli.runtime.matches import Match
from cepcli.runtime.options import EvalOptions
from cepcli.runtime.stats import Stats
from cepcli.runtime.tree import evaluate_tree

__all__ = ["DEFAULT_ENGINE", "ENGINE_NAMES", "ENGINES", "Engine", "compile_pattern", "engine", "run_pattern"]


@dataclass(frozen=True, slots=True)
class Engine:
    """``build(pattern, order)`` makes the automaton (data); ``evaluate`` runs it.
    ``lazy`` engines need a frequency order (``--order``, or measured)."""

    name: str
    build: Callable[[Pattern, tuple[str, ...]], Any]
    evaluate: Callable[[Any, Iterable[Event], Schema, Stats, EvalOptions], Iterator[Match]]
    lazy: bool
    # on a bounded input, does it evaluate this pattern with the columnar engine (``Job`` then
    # hands it the input's columns, and no events)?
    columnar: Callable[[Pattern], bool] = lambda pattern: False


def _eager(pattern: Pattern, order: tuple[str, ...]) -> EagerNfa:
    return build_eager(pattern)


def _chain(negation: Negation) -> Callable[[Pattern, tuple[str, ...]], ChainNfa]:
    return lambda pattern, order: build_chain(pattern, order, negation)


def _columnar(
    pattern: Pattern, events: Iterable[Event], schema: Schema, stats: Stats, options: EvalOptions
) -> Iterator[Match]:
    from cepcli.runtime.columnar import evaluate_events  # (numpy and pyarrow: when it runs)

    return evaluate_events(pattern, events, schema, stats, options)


ENGINES: dict[str, Engine] = {
    "eager": Engine("eager", _eager, evaluate_eager, lazy=False),
    "chain": Engine("chain", _chain(Negation.POST_PROCESSING), evaluate_chain, lazy=True),
    "post-processing": Engine("post-processing", _chain(Negation.POST_PROCESSING), evaluate_chain, lazy=True),
    "first-chance": Engine("first-chance", _chain(Negation.FIRST_CHANCE), evaluate_chain, lazy=True),
    "tree": Engine("tree", lambda pattern, order: build_tree(pattern), evaluate_tree, lazy=False),
    "adaptive": Engine(
        "adaptive",
        lambda pattern, order: build_adaptive(pattern),
        evaluate_adaptive,
        lazy=False,
        columnar=lambda pattern: build_adaptive(pattern).columnar,
    ),
    "columnar": Engine("columnar", lambda pattern, order: pattern, _columnar, lazy=False, columnar=evaluates),
}


def engine(name: str) -> Engine:
    if name in ENGINES:
        return ENGINES[name]
    if name in ENGINE_NAMES:
        built = ", ".join(sorted(ENGINES))
        raise EngineError(f"engine {name!r} is not implemented yet (available: {built})")
    raise EngineError(f"unknown engine {name!r} (choose from {', '.join(ENGINE_NAMES)})")


def compile_pattern(
    text: str, filename: str = "<query>", time_unit: int = 10**9, parsed: Query | None = None
) -> tuple[Query, Pattern]:
    """Parse (unless ``parsed`` is ``text`` already parsed), check and normalise query text;
    errors point into ``text``. A window written as a bare number is in ``time_unit``
    nanoseconds (``--time-unit``)."""
    from cepcli.errors import QueryError

    query = parsed if parsed is not None else parse_query(text, filename)
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
