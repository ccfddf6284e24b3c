"""Match files without rich: the writers of jsonl and csv (one line per match; the caller
flushes: ``cli.run_command``, each match on a pipe or a terminal, in blocks to a file) and
the columns a table shows. ``cepcli run -q --format jsonl`` imports no rich at all;
the table and the panels are ``cepcli.render``'s."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import IO, TYPE_CHECKING, Protocol

from cepcli.errors import UsageError
from cepcli.events import Schema
from cepcli.output import CsvLines, ManyFlat, kept, match_line, variables
from cepcli.plan.pattern import Pattern
from cepcli.prepare import QUERY_KEY
from cepcli.query import ast as a
from cepcli.runtime.matches import Match
from cepcli.writing import writes_utf8

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

    from cepcli.runtime.columnar import Found


Named = tuple[str, Match]  # a match with the name of the query that found it


class MatchWriter(Protocol):
    written: int  # matches written so far

    def write(self, named: Named) -> int:
        """Write one match of the named query (not flushed); the bytes it took."""
        ...

    def close(self) -> None: ...


class JsonlWriter:
    """One JSON object per line and match; in a named run (several queries) each starts
    with the ``"query"`` key, its query's name."""

    takes_found = True  # ``add_found``

    def __init__(
        self,
        stream: IO[str],
        schema: Schema,
        patterns: Mapping[str, Pattern],
        keep: Sequence[int] | None = None,
        named: bool = False,
    ) -> None:
        self.stream, self.schema, self.keep = stream, schema, keep
        self.names = {query: variables(p) for query, p in patterns.items()}
        self.prefix = {
            query: '{"' + QUERY_KEY + '":' + json.dumps(query) + "," if named else "{" for query in patterns
        }
        self.written = 0

    def write(self, named: Named) -> int:
        query, match = named
        self.written += 1  # counted first: an interrupted write still leaves the whole line buffered
        line = self.prefix[query] + match_line(match, self.schema, self.names[query], self.keep)[1:] + "\n"
        self.stream.write(line)
        return encoded_size(line, self.stream)

    def add_found(self, named: tuple[str, Found]) -> tuple[pa.Buffer, np.ndarray] | None:
        """The columnar engine's matches (``Found``) of the named query: their lines, made
        from columns (``found_lines``: ASCII, as bytes), and where each ends (bytes from the
        first), for the caller to write (``write_lines_bytes``, after noting the ends:
        ``LastMatch.wrote_lines``)."""
        from cepcli.lines import found_lines

        query, found = named
        self.written += len(found)  # counted first, as in write
        return found_lines(found, self.schema, self.names[query], self.keep, self.prefix[query])

    def write_lines(self, lines: str) -> None:
        """Matches already made into their lines, joined by newlines (``--spark``'s executors
        make them, and send them to the driver a few at a time): written and flushed at
        once."""
        self.written += lines.count("\n") + 1  # counted first, as in write
        self.stream.write(lines + "\n")
        self.stream.flush()

    def close(self) -> None:
        self.stream.flush()


class CsvWriter:
    """One line per match: for each variable ``v``, ``v._row`` and ``v.<column>`` (in a
    named run, a ``query`` column first, and every query's variables: ``ManyFlat``). A
    Kleene variable's values are joined with ``;`` in row order; a variable that the
    match's OR branch (or query) does not bind is left empty."""

    def __init__(
        self,
        stream: IO[str],
        schema: Schema,
        patterns: Mapping[str, Pattern],
        keep: Sequence[int] | None = None,
        named: bool = False,
    ) -> None:
        self.stream = stream
        self.flat = ManyFlat(schema, dict(patterns), keep)
        self.named = named
        self.first = 0 if named else 1  # (unnamed: without the query column)
        self.written = 0
        self.lines = CsvLines()
        self.stream.write(self.lines.line(self.flat.columns[self.first :]))
        # the columnar engine's matches, their lines made from columns, where the stream
        # writes UTF-8 (``add_found``'s bytes are; where each line ends is counted in them)
        self.takes_found = writes_utf8(stream)

    def write(self, named: Named) -> int:
        self.written += 1
        row = self.lines.line(self.flat.row(*named)[self.first :])
        self.stream.write(row)
        return encoded_size(row, self.stream)

    def add_found(self, named: tuple[str, Found]) -> tuple[pa.Buffer, np.ndarray] | None:
        """The columnar engine's matches (``Found``) of the named query: their lines, made
        from columns (``found_csv``: UTF-8), and where each ends (bytes from the first), for
        the caller to write (``write_lines_bytes``), as ``JsonlWriter.add_found``."""
        from cepcli.lines import found_csv

        query, found = named
        self.written += len(found)  # counted first, as in write
        return found_csv(found, self.flat, query, self.named)

    def close(self) -> None:
        self.stream.flush()


def shown_columns(
    pattern: Pattern, query: a.Query, schema: Schema, show: Sequence[str] | None
) -> dict[str, list[str]]:
    """The columns the table shows for each variable: ``show`` (``--show``) for every one;
    by default those the WHERE clause reads of it, and the ``[attr]`` columns."""
    names = variables(pattern)
    if show is not None:
        kept(schema, show)  # (checked)
        return {name: list(dict.fromkeys(show)) for name in names}
    out: dict[str, list[str]] = {name: [] for name in names}
    hidden = {schema.type_col, schema.time_col}
    for node in a.iter_expr(query.where) if query.where is not None else []:
        match node:
            case a.Attr(var, attr) | a.Agg(_, var, str(attr)) if var in out and attr not in hidden:
                out[var].append(attr)
            case a.Equiv(attr) if attr not in hidden:
                for columns in out.values():
                    columns.append(attr)
    return {name: list(dict.fromkeys(columns)) for name, columns in out.items()}


def encoded_size(text: str, stream: IO[str]) -> int:
    """The bytes ``text`` takes in ``stream``'s encoding."""
    if text.isascii():
        return len(text)
    return len(
        text.encode(getattr(stream, "encoding", None) or "utf-8", getattr(stream, "errors", None) or "strict")
    )


def writer_for(
    fmt: str,
    stream: IO[str],
    schema: Schema,
    patterns: Mapping[str, Pattern],
    show: Sequence[str] | None = None,
    named: bool = False,
    source: str = "",
) -> MatchWriter:
    """The writer of ``--format jsonl``, ``csv`` or ``parquet`` for the queries'
    ``patterns`` (by name), each event with the columns ``show`` names (``--show``; all by
    default) and its row; ``named``: each match says its query's name; ``source``: the
    input's name, for the errors of its values."""
    if fmt == "jsonl":
        return JsonlWriter(stream, schema, patterns, kept(schema, show), named)
    if fmt == "csv":
        return CsvWriter(stream, schema, patterns, kept(schema, show), named)
    if fmt == "parquet":
        return ParquetWriter(stream, schema, patterns, show, named, source)
    raise UsageError(f"no match writer for --format {fmt}")


class ParquetWriter:
    """The matches as one Parquet file in the result schema (``cepcli.results``), written
    when the run ends (or is interrupted): a file of Parquet is whole or absent, never cut
    after a match. The matches wait as typed Arrow columns meanwhile (each event once)."""

    def __init__(
        self,
        stream: IO[str],
        schema: Schema,
        patterns: Mapping[str, Pattern],
        show: Sequence[str] | None = None,
        named: bool = False,
        source: str = "",
    ) -> None:
        from cepcli.results import Results

        if stream.isatty():
            raise UsageError("--format parquet does not go to a terminal: give --output FILE")
        self.stream = stream
        self.named = named
        keyed: dict[str | None, Pattern] = {None: next(iter(patterns.values()))}
        if named:
            keyed = {name: pattern for name, pattern in patterns.items()}
        self.results = Results(schema, keyed, show, source)
        self.written = 0
        self.closed = False

    takes_found = True  # ``add_found``

    def write(self, named: Named) -> int:
        self.written += 1
        self.results.add(named[1], named[0] if self.named else None)
        return 0

    def add_found(self, named: tuple[str, Found]) -> None:
        """The columnar engine's matches (``Found``) kept as typed data without being made
        (``Results.add_found``): nothing to write now (None; the file is written whole at
        the end)."""
        query, found = named
        self.written += len(found)  # counted first, as in write
        self.results.add_found(found, query if self.named else None)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        import pyarrow.parquet as pq

        self.stream.flush()
        pq.write_table(self.results.table(), self.stream.buffer)  # type: ignore[attr-defined]
        self.stream.buffer.flush()  # type: ignore[attr-defined]
