"""Run an engine over CSV text, the way the CLI does (``cepcli.run.Run``, the code under
``cepcli.find``), and return the set of matches."""

from __future__ import annotations

import io
import random
from collections.abc import Iterator
from contextlib import contextmanager

from cepcli.automata import adaptive, columnar
from cepcli.engines import ENGINES
from cepcli.plan.pattern import Pattern
from cepcli.prepare import RunOptions, compile_text
from cepcli.run import Run
from cepcli.runtime import adaptive as adaptive_runtime
from cepcli.runtime.stats import Stats
from cepcli.sources import source as source_module
from cepcli.sources.options import InputOptions
from cepcli.sources.source import Source
from tests.oracle import MatchKey


def run_engine(
    query_text: str,
    csv_text: str,
    engine: str,
    chunk_rows: int = 7,
    order: tuple[str, ...] | None = None,
    **options: object,
) -> tuple[set[MatchKey], Stats]:
    """Matches of ``engine`` as (variable, rows) sets; a small chunk size exercises
    the chunk borders of the reader.

    ``engine`` may name a frequency order after a colon: ``chain`` measures it from
    the input as the CLI does; ``chain:pattern``, ``chain:reverse`` and
    ``chain:shuffle`` (seeded by the query) use the pattern's order, its reverse, or a
    permutation; ``order`` gives one explicitly. The results must not depend on it, only
    the cost.
    """
    name, _, how = engine.partition(":")
    inputs = InputOptions("-", chunk_rows=chunk_rows, **options)  # type: ignore[arg-type]
    compiled = compile_text(query_text, "<query>", inputs.unit)
    if ENGINES[name].lazy and order is None and how in ("pattern", "reverse", "shuffle"):
        order = _order(how, compiled.pattern)
    job = Run({"q": compiled}, inputs, RunOptions(name, order), stdin=io.BytesIO(csv_text.encode()))
    found: set[MatchKey] = set()
    with _segments(how if name == "adaptive" else ""), _steps(how if name == "columnar" else ""):
        for _, match in job.matches():
            key = frozenset(match.key)
            assert key not in found, f"{engine} reported {sorted(key)} twice"
            found.add(key)
    return found, job.stats


@contextmanager
def _segments(how: str) -> Iterator[None]:
    """``adaptive:w4``: segments of four windows, and eager wherever every variable had an
    event in the segment before (where none had, the engine before); ``adaptive:half``:
    segments of half a window (an event is in up to five segments' inputs, no time is away
    from a border), the same choice; ``adaptive:mixed``: segments of half a window, eager
    at equal counts, else the chain in the counts' order where every variable was seen, else
    the tree; ``adaptive:pipe``: as ``w4``, read as from a pipe (nothing held: the first
    segment is three windows of the tree, and the events go one by one). Many segment
    borders, and switches between the engines; but for the pipe, the first segment's engine
    is chosen once every variable has been seen (the look-ahead's events held, then
    evaluated by that engine). ``half`` and ``mixed`` take the events from the stream in
    batches of 3 (not 256), so that batches end inside segments as well as at borders. (Plain
    ``adaptive`` runs the columnar engine on these bounded inputs where the pattern allows.)"""
    names = ("SEGMENT_WINDOWS", "RATIO", "LEAST", "CHAIN_RATIO", "HYSTERESIS", "FIRST_LEAST")
    saved = [getattr(adaptive, name) for name in names]
    batch = adaptive_runtime.BATCH
    if how in ("half", "mixed"):
        adaptive_runtime.BATCH = 3
    streaming = Source.streaming
    if how == "pipe":
        Source.streaming = property(lambda self: True)  # type: ignore[method-assign, assignment]
    if how:
        settings = {"w4": (4.0, float("inf")), "pipe": (4.0, float("inf")), "half": (0.5, float("inf"))}
        settings["mixed"] = (0.5, 1.0)
        adaptive.SEGMENT_WINDOWS, adaptive.RATIO = settings[how]
        adaptive.LEAST, adaptive.CHAIN_RATIO, adaptive.HYSTERESIS = 1, float("inf"), 1.0
        adaptive.FIRST_LEAST = 1
        columnar.IN_ADAPTIVE = False  # the segments, on a bounded input too
    try:
        yield
    finally:
        columnar.IN_ADAPTIVE = True
        Source.streaming = streaming  # type: ignore[method-assign]
        adaptive_runtime.BATCH = batch
        for name, value in zip(names, saved, strict=True):
            setattr(adaptive, name, value)


@contextmanager
def _steps(how: str) -> Iterator[None]:
    """``columnar:pipe``: the input read as from a pipe written slowly, so the columnar
    engine evaluates it incrementally, a step at each piece of the reader (``chunk_rows``:
    steps end inside a window and between equal times), the window's tail carried;
    ``columnar:steps``: as a file, a step whenever the new rows are as many as the tail's
    (not only past ``STEP_ROWS``)."""
    streaming, ready, least = Source.streaming, Source._ready, source_module.STEP_ROWS
    if how == "pipe":
        Source.streaming = property(lambda self: True)  # type: ignore[method-assign, assignment]
        Source._ready = lambda self: False  # type: ignore[method-assign]  # (each piece alone)
    if how == "steps":
        source_module.STEP_ROWS = 1
    try:
        yield
    finally:
        Source.streaming = streaming  # type: ignore[method-assign]
        Source._ready = ready  # type: ignore[method-assign]
        source_module.STEP_ROWS = least


def _order(how: str, pattern: Pattern) -> tuple[str, ...]:
    names = [v.name for v in pattern.variables]
    if how == "pattern":
        return tuple(names)
    if how == "reverse":
        return tuple(reversed(names))
    assert how == "shuffle", how
    random.Random(" ".join(names)).shuffle(names)
    return tuple(names)
