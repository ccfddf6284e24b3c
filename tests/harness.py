"""Run an engine over CSV text, the way the CLI does, and return the set of matches."""

from __future__ import annotations

import io
import random

from cepcli.engines import ENGINES, compile_pattern, run_pattern
from cepcli.plan.pattern import Pattern
from cepcli.query.checks import check_schema
from cepcli.runtime.stats import Stats
from cepcli.sources.csv import CsvOptions, CsvSource
from cepcli.sources.prefilter import Prefilter
from tests.oracle import MatchKey


def run_engine(
    query_text: str, csv_text: str, engine: str, chunk_rows: int = 7, **options: object
) -> tuple[set[MatchKey], Stats]:
    """Matches of ``engine`` as (variable, rows) sets; a small chunk size exercises
    the chunk borders of the reader.

    ``engine`` may name a frequency order after a colon: ``chain`` measures it from
    the input as the CLI does; ``chain:pattern``, ``chain:reverse`` and
    ``chain:shuffle`` (seeded by the query) use the pattern's order, its reverse, or a
    permutation. The results must not depend on it, only the cost.
    """
    name, _, how = engine.partition(":")
    query, pattern = compile_pattern(query_text)
    source = CsvSource(
        CsvOptions("-", chunk_rows=chunk_rows, **options),  # type: ignore[arg-type]
        stdin=io.BytesIO(csv_text.encode()),
    )
    schema = source.schema()
    check_schema(query, schema)
    stats = Stats()
    prefilter = Prefilter.of(pattern)
    order = _order(how, pattern, source, prefilter) if ENGINES[name].lazy else ()
    found: set[MatchKey] = set()
    events = source.events(prefilter, stats)
    for match in run_pattern(pattern, name, events, schema, stats, order):
        key = frozenset(match.key)
        assert key not in found, f"{engine} reported {sorted(key)} twice"
        found.add(key)
    return found, stats


def _order(how: str, pattern: Pattern, source: CsvSource, prefilter: Prefilter) -> tuple[str, ...]:
    names = [v.name for v in pattern.variables]
    if how == "pattern":
        return tuple(names)
    if how == "reverse":
        return tuple(reversed(names))
    if how == "shuffle":
        random.Random(" ".join(names)).shuffle(names)
        return tuple(names)
    assert how == "", how
    counts, _, _ = source.count_variables(prefilter)
    return pattern.rarest_first(counts)
