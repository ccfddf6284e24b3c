"""The engine registry: a name -> (builder, runtime) table, and the stages that
every command shares: text -> Query -> Pattern -> automaton -> matches."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from cepcli.automata.eager import build_eager
from cepcli.errors import EngineError
from cepcli.events import Event, Schema
from cepcli.plan.normalize import normalize
from cepcli.plan.pattern import Pattern
from cepcli.query.ast import Query
from cepcli.query.parser import parse_query
from cepcli.runtime.eager import evaluate_eager
from cepcli.runtime.matches import Match
from cepcli.runtime.stats import Stats

ENGINE_NAMES = ("tree", "chain", "first-chance", "post-processing", "eager")
DEFAULT_ENGINE = "eager"  # becomes "tree" once the Tree NFA lands


@dataclass(frozen=True, slots=True)
class Engine:
    name: str
    build: Callable[[Pattern], Any]
    evaluate: Callable[[Any, Iterable[Event], Schema, Stats], Iterator[Match]]


ENGINES: dict[str, Engine] = {
    "eager": Engine("eager", build_eager, evaluate_eager),
}


def engine(name: str) -> Engine:
    if name in ENGINES:
        return ENGINES[name]
    if name in ENGINE_NAMES:
        built = ", ".join(sorted(ENGINES))
        raise EngineError(f"engine {name!r} is not implemented yet (available: {built})")
    raise EngineError(f"unknown engine {name!r} (choose from {', '.join(ENGINE_NAMES)})")


def compile_pattern(text: str, filename: str = "<query>") -> tuple[Query, Pattern]:
    """Parse, check and normalise query text; errors point into ``text``."""
    from cepcli.errors import QueryError

    query = parse_query(text, filename)
    try:
        return query, normalize(query)
    except QueryError as err:
        raise err.located(text, filename) from None


def run_pattern(
    pattern: Pattern, name: str, events: Iterable[Event], schema: Schema, stats: Stats
) -> Iterator[Match]:
    """Build the automaton of engine ``name`` and run it over ``events``."""
    chosen = engine(name)
    stats.engine = name
    automaton = chosen.build(pattern)
    return chosen.evaluate(automaton, events, schema, stats)
