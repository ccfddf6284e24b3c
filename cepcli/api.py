"""The Python API (SPEC section 6): ``find(query, data, ...)``.

    >>> import cepcli
    >>> found = cepcli.find("PATTERN SEQ(A a, B b) WITHIN 5 s", "events.csv")
    >>> for match in found:          # dicts, as the jsonl output
    ...     print(match["a"]["_row"], match["b"]["_row"])
    >>> found.stats.matches

``data`` is a path (CSV, ``.gz``, Parquet, JSON lines: the format follows the name or
``input_format``), a pandas DataFrame or an Arrow table. The matches are the set
``cepcli run`` finds on the same input; the CLI, the tests and the Spark workers go
through the same ``job.Job``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from cepcli.engines import DEFAULT_ENGINE
from cepcli.events import Kind, Schema
from cepcli.job import Job, RunOptions, compile_text, with_query_options
from cepcli.output import match_object
from cepcli.plan.pattern import Pattern
from cepcli.query.parser import parse_query
from cepcli.runtime.matches import Match
from cepcli.runtime.stats import Stats
from cepcli.sources.kinds import KIND_NAMES
from cepcli.sources.options import InputOptions

if TYPE_CHECKING:
    import pandas as pd


class Matches:
    """The matches of one query over one input, found as they are iterated (once).

    Iterating yields each match as a dict (a key per positive variable; its value the
    event as a dict of its columns plus ``_row``, a list of them for a Kleene variable);
    ``raw()`` yields ``Match`` objects; ``to_pandas()`` collects them in a DataFrame, one row
    per match with columns ``v._row`` and ``v.<column>``. ``stats`` holds the counters
    (complete once the iteration ends); ``schema`` and ``pattern`` are known at once."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self.stats: Stats = job.stats
        self.schema: Schema = job.schema
        self.pattern: Pattern = job.pattern
        self._started = False

    def raw(self) -> Iterator[Match]:
        if self._started:
            raise RuntimeError("the matches can be iterated once: call find() again")
        self._started = True
        return self.job.matches()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for match in self.raw():
            yield match_object(match, self.schema, self.pattern)

    def to_pandas(self) -> pd.DataFrame:
        import pandas as pd

        from cepcli.output import flat_columns, flat_row

        names = flat_columns(self.schema, self.pattern)
        return pd.DataFrame([flat_row(m, self.schema, self.pattern) for m in self.raw()], columns=names)


def find(
    query: str,
    data: str | os.PathLike[str] | object,
    *,
    engine: str = DEFAULT_ENGINE,
    order: tuple[str, ...] | list[str] | None = None,
    type_col: str | None = None,
    time_col: str | None = None,
    time_unit: str | None = None,
    time_format: str | None = None,
    input_format: str | None = None,
    schema: Mapping[str, str] | None = None,
    null_values: tuple[str, ...] | list[str] | None = None,
    header: bool | None = None,
    columns: tuple[str, ...] | list[str] | None = None,
    sort: bool | None = None,
    on_bad_row: str | None = None,
    max_matches: int | None = None,
    max_instances: int | None = None,
    chunk_rows: int | None = None,
    stats: Stats | None = None,
) -> Matches:
    """Evaluate ``query`` (SASE+ text) over ``data``: a path, a DataFrame or an Arrow
    table. The options are those of ``cepcli run`` (``schema`` maps column names to
    ``int``, ``float``, ``bool``, ``time`` or ``str``); an input option left out (None) is
    the query's ``FROM ... WITH (...)`` one if it has it, else ``cepcli run``'s default
    (``type_col="type"``, ``time_col="ts"``, a header, no sort, ``on_bad_row="fail"``).
    The input is opened and checked against the query here (errors are
    ``cepcli.errors.CepError``s); the matches are found as the result is iterated."""
    path = os.fspath(data) if isinstance(data, str | os.PathLike) else None
    kinds: tuple[tuple[str, Kind], ...] = tuple(
        (name, KIND_NAMES[kind.lower()]) for name, kind in (schema or {}).items()
    )
    arguments: dict[str, object] = {
        "format": input_format,
        "type_col": type_col,
        "time_col": time_col,
        "time_format": time_format,
        "time_unit": time_unit,
        "header": header,
        "columns": columns,
        "sort": sort,
        "chunk_rows": chunk_rows,
        "on_bad_row": on_bad_row,
        "null_values": null_values,
        "schema": schema,
    }
    given = {k for k, v in arguments.items() if v is not None}  # the rest: the query's, else the defaults
    values = {k: arguments[k] for k in given}
    values.update(
        columns=tuple(columns) if columns else None,
        null_values=tuple(null_values) if null_values is not None else None,
        schema=kinds,
    )
    parsed = parse_query(query)
    options = with_query_options(InputOptions(path=path, **values), parsed, query, "<query>", given)  # type: ignore[arg-type]
    compiled = compile_text(query, "<query>", options.unit, parsed)
    run = RunOptions(engine, tuple(order) if order else None, max_matches, max_instances=max_instances)
    return Matches(Job(compiled, options, run, data=None if path is not None else data, stats=stats))
