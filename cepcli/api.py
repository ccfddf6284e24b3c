"""The Python API (docs/python-api.md): ``find(query, data, ...)``.

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
from cepcli.errors import UsageError
from cepcli.events import Schema
from cepcli.job import Compiled, Job, RunOptions, compile_text, with_query_options
from cepcli.keywords import as_python, for_python
from cepcli.many import Many, agreed
from cepcli.output import kept, match_object
from cepcli.plan.pattern import Pattern
from cepcli.query.parser import parse_query
from cepcli.runtime.matches import Match
from cepcli.runtime.stats import Stats
from cepcli.sources.kinds import given_kinds
from cepcli.sources.options import InputOptions

__all__ = ["ManyMatches", "Matches", "find", "for_python"]

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa


class Matches:
    """The matches of one query over one input, found as they are iterated (once).

    Iterating yields each match as a dict (a key per positive variable; its value the
    event as a dict of its columns plus ``_row``, a list of them for a Kleene variable);
    ``raw()`` yields ``Match`` objects; ``to_arrow()`` collects them in an Arrow table of the
    result schema (``cepcli.results``: a struct column per variable, typed as the input's
    kinds); ``to_pandas()`` is that table flattened, one row per match with columns
    ``v._row`` and ``v.<column>`` in real dtypes. ``show`` keeps those columns of each event
    (and ``_row``) in every form. ``stats`` holds the counters (complete once the iteration
    ends); ``schema`` and ``pattern`` are known at once."""

    def __init__(self, job: Job, show: tuple[str, ...] | None = None) -> None:
        self.job = job
        self.stats: Stats = job.stats
        self.schema: Schema = job.schema
        self.pattern: Pattern = job.pattern
        self.show = show
        self._keep = kept(self.schema, show)
        self._started = False

    def raw(self) -> Iterator[Match]:
        if self._started:
            raise RuntimeError("the matches can be iterated once: call find() again")
        self._started = True
        return self._translated()

    def _translated(self) -> Iterator[Match]:
        with as_python():
            yield from self.job.matches()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for match in self.raw():
            yield match_object(match, self.schema, self.pattern, self._keep)

    def to_arrow(self) -> pa.Table:
        from cepcli.results import Results

        results = Results(self.schema, {None: self.pattern}, self.show)
        for match in self.raw():
            results.add(match)
        return results.table()

    def to_pandas(self) -> pd.DataFrame:
        from cepcli.results import flat_pandas

        return flat_pandas(self.to_arrow())


class ManyMatches:
    """The matches of several queries over one reading of the input (``find`` given a list
    or a dict of queries): each match as a dict whose ``"query"`` is its query's name (its key
    in the dict; ``q1``, ``q2``, ... in a list), then its variables as ``Matches`` gives
    them; ``raw()`` yields ``(name, Match)``; ``to_arrow()`` and ``to_pandas()`` a ``query``
    column, then each variable's columns (a variable name two queries share, shared).
    ``stats`` holds the run's counters, each query's in ``stats.extra["queries"]``."""

    def __init__(self, many: Many, show: tuple[str, ...] | None = None) -> None:
        self.many = many
        self.stats: Stats = many.stats
        self.schema: Schema = many.schema
        self.patterns: dict[str, Pattern] = dict(zip(many.names, many.patterns, strict=True))
        self.show = show
        self._keep = kept(self.schema, show)
        self._started = False

    def raw(self) -> Iterator[tuple[str, Match]]:
        if self._started:
            raise RuntimeError("the matches can be iterated once: call find() again")
        self._started = True
        return self._translated()

    def _translated(self) -> Iterator[tuple[str, Match]]:
        with as_python():
            yield from self.many.matches()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for name, match in self.raw():
            yield {"query": name, **match_object(match, self.schema, self.patterns[name], self._keep)}

    def to_arrow(self) -> pa.Table:
        from cepcli.results import Results

        patterns: dict[str | None, Pattern] = {k: v for k, v in self.patterns.items()}
        results = Results(self.schema, patterns, self.show)
        for name, match in self.raw():
            results.add(match, name)
        return results.table()

    def to_pandas(self) -> pd.DataFrame:
        from cepcli.results import flat_pandas

        return flat_pandas(self.to_arrow())


def find(
    query: str | list[str] | tuple[str, ...] | Mapping[str, str],
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
    max_delay: str | None = None,
    on_bad_row: str | None = None,
    max_matches: int | None = None,
    max_instances: int | None = None,
    chunk_rows: int | None = None,
    max_row_bytes: int | None = None,
    stats: Stats | None = None,
    show: tuple[str, ...] | list[str] | None = None,
) -> Matches | ManyMatches:
    """Evaluate ``query`` (SASE+ text) over ``data``: a path, a DataFrame or an Arrow
    table. The options are those of ``cepcli run`` (``schema`` maps column names to
    ``int``, ``float``, ``decimal``, ``bool``, ``time`` or ``str``); an input option left out (None) is
    the query's ``FROM ... WITH (...)`` one if it has it, else ``cepcli run``'s default
    (``type_col="type"``, ``time_col="ts"``, a header, no sort, ``on_bad_row="fail"``).
    The input is opened and checked against the query here (errors are
    ``cepcli.errors.CepError``s, whose messages name these keyword arguments); the matches
    are found as the result is iterated. ``show`` keeps those columns of each event (with
    its ``_row``) in every form of the result."""
    arguments: dict[str, object] = {
        "format": input_format,
        "type_col": type_col,
        "time_col": time_col,
        "time_format": time_format,
        "time_unit": time_unit,
        "header": header,
        "columns": columns,
        "sort": sort,
        "max_delay": max_delay,
        "chunk_rows": chunk_rows,
        "on_bad_row": on_bad_row,
        "max_row_bytes": max_row_bytes,
        "null_values": null_values,
        "schema": schema,
    }
    with as_python():
        found = _find(query, data, engine, order, max_matches, max_instances, stats, arguments)
        if show is not None:
            if isinstance(show, str) or not all(isinstance(c, str) for c in show):
                raise UsageError("show= is a list of column names, e.g. show=['price']")
            found.show, found._keep = tuple(show), kept(found.schema, tuple(show))
        return found


def _find(
    query: str | list[str] | tuple[str, ...] | Mapping[str, str],
    data: object,
    engine: str,
    order: tuple[str, ...] | list[str] | None,
    max_matches: int | None,
    max_instances: int | None,
    stats: Stats | None,
    arguments: dict[str, object],
) -> Matches | ManyMatches:
    path = os.fspath(data) if isinstance(data, str | os.PathLike) else None
    kinds = given_kinds(arguments["schema"])
    given = {k for k, v in arguments.items() if v is not None}  # the rest: the query's, else the defaults
    values = {k: arguments[k] for k in given}
    columns, null_values = arguments["columns"], arguments["null_values"]
    assert columns is None or isinstance(columns, tuple | list)
    assert null_values is None or isinstance(null_values, tuple | list)
    values.update(
        columns=tuple(columns) if columns else None,
        null_values=tuple(null_values) if null_values is not None else None,
        schema=kinds,
    )
    run = RunOptions(engine, tuple(order) if order else None, max_matches, max_instances=max_instances)
    base = InputOptions(path=path, **values)  # type: ignore[arg-type]
    if isinstance(query, str):
        compiled, options = _compiled(query, "<query>", base, given)
        return Matches(Job(compiled, options, run, data=None if path is not None else data, stats=stats))
    named = (
        list(query.items()) if isinstance(query, Mapping) else [(f"q{i}", q) for i, q in enumerate(query, 1)]
    )
    if not named or not all(isinstance(text, str) for _, text in named):
        raise UsageError("query= is a query's text, or a list or a dict (name -> text) of them")
    prepared = [_compiled(text, f"<{name}>", base, given) for name, text in named]
    options = agreed([name for name, _ in named], [o for _, o in prepared])
    queries = [(str(name), c) for (name, _), (c, _) in zip(named, prepared, strict=True)]
    return ManyMatches(Many(queries, options, run, data=None if path is not None else data, stats=stats))


def _compiled(text: str, name: str, base: InputOptions, given: set[str]) -> tuple[Compiled, InputOptions]:
    parsed = parse_query(text)
    options = with_query_options(base, parsed, text, name, given)
    return compile_text(text, name, options.unit, parsed), options
