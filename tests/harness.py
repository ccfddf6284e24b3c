"""Run an engine over CSV text, the way the CLI does, and return the set of matches."""

from __future__ import annotations

import io

from cepcli.engines import compile_pattern, run_pattern
from cepcli.query.checks import check_schema
from cepcli.runtime.stats import Stats
from cepcli.sources.csv import CsvOptions, CsvSource
from cepcli.sources.prefilter import Prefilter
from tests.oracle import MatchKey


def run_engine(
    query_text: str, csv_text: str, engine: str, chunk_rows: int = 7, **options: object
) -> tuple[set[MatchKey], Stats]:
    """Matches of ``engine`` as (variable, rows) sets; a small chunk size exercises
    the chunk borders of the reader."""
    query, pattern = compile_pattern(query_text)
    source = CsvSource(
        CsvOptions("-", chunk_rows=chunk_rows, **options),  # type: ignore[arg-type]
        stdin=io.BytesIO(csv_text.encode()),
    )
    schema = source.schema()
    check_schema(query, schema)
    stats = Stats()
    found: set[MatchKey] = set()
    for match in run_pattern(pattern, engine, source.events(Prefilter.of(pattern), stats), schema, stats):
        key = frozenset(match.key)
        assert key not in found, f"{engine} reported {sorted(key)} twice"
        found.add(key)
    return found, stats
