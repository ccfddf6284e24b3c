"""The Python API (docs/python-api.md): ``find(query, data, ...)``.

    >>> import cepcli
    >>> found = cepcli.find("PATTERN SEQ(A a, B b) WITHIN 5 s", "events.csv")
    >>> for match in found:          # dicts, as the jsonl output
    ...     print(match["a"]["_row"], match["b"]["_row"])
    >>> found.stats.matches

``data`` is a path (CSV, ``.gz``, Parquet, JSON lines: the format follows the name or
``input_format``), a pandas DataFrame or an Arrow table. The matches are the set
``cepcli run`` finds on the same input; the CLI, the tests and the Spark workers go
through the same ``run.Run``.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, cast

from cepcli.engines import DEFAULT_ENGINE
from cepcli.errors import UsageError, as_python, no_such_keyword
from cepcli.events import Schema
from cepcli.output import kept, match_object
from cepcli.plan.pattern import Pattern
from cepcli.prepare import QUERY_KEY, QueryText, RunOptions, prepare
from cepcli.run import Run
from cepcli.runtime.matches import Match
from cepcli.runtime.stats import Stats
from cepcli.sources.kinds import given_kinds
from cepcli.sources.options import InputOptions

__all__ = ["ManyMatches", "Matches", "find"]

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from cepcli.runtime.columnar import Found


class Matches:
    """The matches of one query, or of several (a list or a dict of them), over one input,
    found as they are iterated. Iterated again (a second loop, ``to_pandas()`` after a loop,
    a loop left early), the query runs again over the input, as a DuckDB relation does: a
    file is read again, a DataFrame or a table scanned again; standard input, a pipe or a
    followed file cannot be read twice, and say so.

    Iterating yields each match as a dict (a key per positive variable; its value the
    event as a dict of its columns plus ``_row``, a list of them for a Kleene variable;
    with several queries, first ``"query"``: its query's name); ``raw()`` yields ``Match``
    objects (with several queries, ``(name, Match)`` pairs); ``to_arrow()`` collects them
    in an Arrow table of the result schema (``cepcli.results``: a struct column per
    variable, typed as the input's kinds; with several queries a ``query`` column first);
    ``to_pandas()`` is that table flattened, one row per match with columns ``v._row`` and
    ``v.<column>`` in real dtypes. ``show`` keeps those columns of each event (and ``_row``)
    in every form. ``stats`` holds the counters of the last run (complete once its
    iteration ends; each query's in ``stats.extra["queries"]`` when there are several);
    ``schema`` and ``pattern`` are known at once."""

    def __init__(
        self, run: Run, show: tuple[str, ...] | None = None, again: Callable[[], Run] | str | None = None
    ) -> None:
        self.run = run
        self._again = again  # a fresh run of the same query over the same input, or why there is none
        self.stats: Stats = run.stats
        self.schema: Schema = run.schema
        self.pattern: Pattern = run.pattern
        self.patterns: dict[str, Pattern] = run.by_name
        self.named = run.named
        self.show = show
        self._keep = kept(self.schema, show)
        self._started = False

    def __repr__(self) -> str:
        queries = ", ".join(self.run.names) if self.named else self.run.compiled.path
        state = (
            f"{self.stats.matches:,} matches"
            if self._started and self.stats.seconds
            else ("being iterated" if self._started else "not run yet")
        )
        return f"<cepcli.Matches of {queries} over {self.run.source.name}: {state}>"

    def _named(self) -> Iterator[tuple[str, Match]]:
        return cast(Iterator[tuple[str, Match]], self._each(batches=False))

    def _each(self, batches: bool) -> Iterator[tuple[str, Match | Found]]:
        """The matches with their queries' names (``batches``: the columnar engine's as
        ``Found``, a slice's at a time, ``Run.found``); a second call runs the query again
        where it can."""
        if self._started:
            if not callable(self._again):
                raise RuntimeError(
                    f"the matches can be iterated once here ({self._again}): call find() again"
                )
            with as_python():
                self.run = self._again()
            self.stats = self.run.stats
        self._started = True
        with as_python():
            yield from self.run.found() if batches else self.run.matches()

    def raw(self) -> Iterator[Any]:
        """The engine's ``Match`` objects (with several queries, ``(name, Match)``)."""
        if self.named:
            return self._named()
        return (match for _, match in self._named())

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for name, match in self._named():
            found = match_object(match, self.schema, self.patterns[name], self._keep)
            yield {QUERY_KEY: name, **found} if self.named else found

    def to_arrow(self) -> pa.Table:
        from cepcli.results import Results

        patterns: dict[str | None, Pattern] = (
            {k: v for k, v in self.patterns.items()} if self.named else {None: self.pattern}
        )
        results = Results(self.schema, patterns, self.show, self.run.source.name)
        for name, item in self._each(batches=True):  # (the columnar engine's: not made one by one)
            query = name if self.named else None
            if isinstance(item, Match):
                results.add(item, query)
            else:
                results.add_found(item, query)
        return results.table()

    def to_pandas(self) -> pd.DataFrame:
        from cepcli.results import flat_pandas

        return flat_pandas(self.to_arrow())


ManyMatches = Matches  # (the name of several queries' result before they were one type)


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
    follow: bool | None = None,
    on_bad_row: str | None = None,
    max_matches: int | None = None,
    max_instances: int | None = None,
    chunk_rows: int | None = None,
    max_row_bytes: int | None = None,
    stats: Stats | None = None,
    show: tuple[str, ...] | list[str] | None = None,
    **unknown: object,
) -> Matches:
    """Evaluate ``query`` (SASE+ text; or a list, or a dict of name to text, of several
    queries over one reading of the input) over ``data``: a path, a DataFrame or an Arrow
    table. The options are those of ``cepcli run`` (``schema`` maps column names to
    ``int``, ``float``, ``decimal``, ``bool``, ``time`` or ``str``); an input option left out (None) is
    the query's ``FROM ... WITH (...)`` one if it has it, else ``cepcli run``'s default
    (``type_col="type"``, ``time_col="ts"``, a header, no sort, ``on_bad_row="fail"``).
    The input is opened and checked against the query here (errors are
    ``cepcli.errors.CepError``s, whose messages name these keyword arguments); the matches
    are found as the result is iterated. ``show`` keeps those columns of each event (with
    its ``_row``) in every form of the result."""
    if unknown:
        raise no_such_keyword(find, unknown)
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
        "follow": follow,
        "chunk_rows": chunk_rows,
        "on_bad_row": on_bad_row,
        "max_row_bytes": max_row_bytes,
        "null_values": null_values,
        "schema": schema,
    }
    lists = {"order": order, "null_values": null_values, "columns": columns, "show": show}
    for keyword, value in lists.items():
        if value is not None and (isinstance(value, str) or not all(isinstance(c, str) for c in value)):
            raise UsageError(f"{keyword}= is a list of names, e.g. {keyword}=['x', 'y']")
    for keyword, number in (("max_matches", max_matches), ("max_instances", max_instances)):
        if number is not None and (isinstance(number, bool) or not isinstance(number, int) or number < 1):
            raise UsageError(f"{keyword}= is a whole number, 1 or more (None: no limit)")
    with as_python():
        return _find(query, data, engine, order, max_matches, max_instances, stats, arguments, show)


def _find(
    query: str | list[str] | tuple[str, ...] | Mapping[str, str],
    data: object,
    engine: str,
    order: tuple[str, ...] | list[str] | None,
    max_matches: int | None,
    max_instances: int | None,
    stats: Stats | None,
    arguments: dict[str, object],
    show: tuple[str, ...] | list[str] | None,
) -> Matches:
    path = os.fspath(data) if isinstance(data, str | os.PathLike) else None
    if data is None:
        raise UsageError("data= is a path, a pandas DataFrame or an Arrow table (None given)")
    kinds = given_kinds(arguments["schema"])
    given = {k for k, v in arguments.items() if v is not None}  # the rest: the query's, else the defaults
    values = {k: arguments[k] for k in given}
    columns, null_values = arguments["columns"], arguments["null_values"]
    assert columns is None or isinstance(columns, tuple | list)  # (checked by find)
    assert null_values is None or isinstance(null_values, tuple | list)
    values.update(
        columns=tuple(columns) if columns else None,
        null_values=tuple(null_values) if null_values is not None else None,
        schema=kinds,
    )
    run = RunOptions(engine, tuple(order) if order else None, max_matches, max_instances=max_instances)
    base = InputOptions(path=path, **values)  # type: ignore[arg-type]
    if isinstance(query, str):
        texts = [QueryText("<query>", query, "<query>")]
    elif isinstance(query, Mapping | list | tuple) and query:
        named = (
            list(query.items())
            if isinstance(query, Mapping)
            else [(f"q{i}", q) for i, q in enumerate(query, 1)]
        )
        if not all(isinstance(text, str) for _, text in named):
            raise UsageError("query= is a query's text, or a list or a dict (name -> text) of them")
        texts = [QueryText(str(name), text, f"<{name}>") for name, text in named]
    else:
        raise UsageError("query= is a query's text, or a list or a dict (name -> text) of them")
    prepared = prepare(texts, base, given, has_data=path is None, named=not isinstance(query, str))
    source = None if path is not None else data

    def again(stats: Stats | None = None) -> Run:  # (a second run: counters of its own)
        return Run(prepared.queries, prepared.options, run, data=source, stats=stats, named=prepared.named)

    return Matches(again(stats), tuple(show) if show is not None else None, _rerun(prepared.options, again))


def _rerun(options: InputOptions, again: Callable[[], Run]) -> Callable[[], Run] | str:
    """``again``, where the input can be read a second time (a regular file, a DataFrame or
    a table); else why not."""
    if options.path is None:
        return again
    if options.path == "-":
        return "standard input is read once"
    if options.follow:
        return "a followed file is read until stopped"
    try:
        regular = stat.S_ISREG(os.stat(options.path).st_mode)
    except OSError:
        regular = False
    return again if regular else f"{options.path} is no regular file: a pipe is read once"
