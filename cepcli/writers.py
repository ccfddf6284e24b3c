"""Match files without rich: the writers of jsonl and csv (one line per match; the caller
flushes: ``cli.run_command``, each match on a pipe or a terminal, in blocks to a file) and
the columns a table shows. ``cepcli run -q --format jsonl`` imports no rich at all;
the table and the panels are ``cepcli.render``'s."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from typing import IO, TYPE_CHECKING, Protocol

from cepcli.errors import UsageError
from cepcli.events import Schema
from cepcli.output import ManyFlat, flat_columns, flat_row, kept, match_line, variables
from cepcli.plan.pattern import Pattern
from cepcli.query import ast as a
from cepcli.runtime.matches import Match

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

    from cepcli.runtime.columnar import Found


class MatchWriter(Protocol):
    written: int  # matches written so far

    def write(self, match: Match) -> int:
        """Write one match (not flushed); the bytes it took."""
        ...

    def close(self) -> None: ...


class JsonlWriter:
    """One JSON object per line and match."""

    takes_found = True  # ``found_text``

    def __init__(
        self, stream: IO[str], schema: Schema, pattern: Pattern, keep: Sequence[int] | None = None
    ) -> None:
        self.stream, self.schema, self.names, self.keep = stream, schema, variables(pattern), keep
        self.written = 0

    def write(self, match: Match) -> int:
        self.written += 1  # counted first: an interrupted write still leaves the whole line buffered
        line = match_line(match, self.schema, self.names, self.keep) + "\n"
        self.stream.write(line)
        return encoded_size(line, self.stream)

    def found_text(self, found: Found) -> tuple[pa.Buffer, np.ndarray]:
        """The lines of the columnar engine's matches (``Found``), made from columns
        (``found_lines``: ASCII, as bytes), and where each ends (bytes from the first), for
        the caller to write (``write_ascii``, after noting the ends: ``LastMatch.wrote_lines``)."""
        from cepcli.lines import found_lines

        self.written += len(found)  # counted first, as in write
        return found_lines(found, self.schema, self.names, self.keep)

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
    """One line per match: for each variable ``v``, ``v._row`` and ``v.<column>``.
    A Kleene variable's values are joined with ``;`` in row order; a variable that
    the match's OR branch does not bind is left empty."""

    def __init__(
        self, stream: IO[str], schema: Schema, pattern: Pattern, keep: Sequence[int] | None = None
    ) -> None:
        self.stream, self.schema, self.pattern, self.keep = stream, schema, pattern, keep
        self.written = 0
        self.lines = _CsvLines()
        self.stream.write(self.lines.line(flat_columns(schema, pattern, keep)))

    def write(self, match: Match) -> int:
        self.written += 1
        row = self.lines.line(flat_row(match, self.schema, self.pattern, self.keep))
        self.stream.write(row)
        return encoded_size(row, self.stream)

    def close(self) -> None:
        self.stream.flush()


class _CsvLines:
    """CSV rows as text, each made whole before it is written (a row cut by a full disk or a
    signal is never half in the output)."""

    def __init__(self) -> None:
        self.text = io.StringIO()
        self.writer = csv.writer(self.text, lineterminator="\n")

    def line(self, cells: Sequence[object]) -> str:
        self.writer.writerow(cells)
        row = self.text.getvalue()
        self.text.seek(0)
        self.text.truncate()
        return row


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
    fmt: str, stream: IO[str], schema: Schema, pattern: Pattern, show: Sequence[str] | None = None
) -> MatchWriter:
    """The writer of ``--format jsonl``, ``csv`` or ``parquet``, each event with the columns
    ``show`` names (``--show``; all by default) and its row."""
    if fmt == "jsonl":
        return JsonlWriter(stream, schema, pattern, kept(schema, show))
    if fmt == "csv":
        return CsvWriter(stream, schema, pattern, kept(schema, show))
    if fmt == "parquet":
        return ParquetWriter(stream, schema, {None: pattern}, show)
    raise UsageError(f"no match writer for --format {fmt}")


class ParquetWriter:
    """The matches as one Parquet file in the result schema (``cepcli.results``), written
    when the run ends (or is interrupted): a file of Parquet is whole or absent, never cut
    after a match. The matches wait as typed Arrow columns meanwhile (each event once)."""

    def __init__(
        self,
        stream: IO[str],
        schema: Schema,
        patterns: Mapping[str | None, Pattern],
        show: Sequence[str] | None = None,
    ) -> None:
        from cepcli.results import Results

        if stream.isatty():
            raise UsageError("--format parquet does not go to a terminal: give --output FILE")
        self.stream = stream
        self.results = Results(schema, patterns, show)
        self.written = 0
        self.closed = False

    def write(self, match: Match | tuple[str, Match]) -> int:
        self.written += 1
        if isinstance(match, tuple):
            self.results.add(match[1], match[0])
        else:
            self.results.add(match)
        return 0

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        import pyarrow.parquet as pq

        self.stream.flush()
        pq.write_table(self.results.table(), self.stream.buffer)  # type: ignore[attr-defined]
        self.stream.buffer.flush()  # type: ignore[attr-defined]


class ManyWriter:
    """The matches of several queries (``cepcli.many``) in one jsonl or csv output, each
    saying which query found it: jsonl's ``"query"`` key first; csv's ``ManyFlat`` rows."""

    def __init__(
        self,
        fmt: str,
        stream: IO[str],
        schema: Schema,
        patterns: dict[str, Pattern],
        show: Sequence[str] | None = None,
    ) -> None:
        self.fmt, self.stream, self.schema = fmt, stream, schema
        self.written = 0
        self.keep = kept(schema, show)
        self.flat = ManyFlat(schema, patterns, self.keep)
        self.prefix = {query: '{"query":' + json.dumps(query) + "," for query in patterns}
        self.lines = _CsvLines()
        if fmt == "csv":
            self.stream.write(self.lines.line(self.flat.columns))

    @property
    def takes_found(self) -> bool:
        return self.fmt == "jsonl"

    def found_text(self, named: tuple[str, Found]) -> tuple[pa.Buffer, np.ndarray]:
        """``JsonlWriter.found_text``, each line saying its query."""
        from cepcli.lines import found_lines

        query, found = named
        self.written += len(found)
        return found_lines(found, self.schema, self.flat.names[query], self.keep, self.prefix[query])

    def write(self, named: tuple[str, Match]) -> int:
        query, match = named
        self.written += 1
        if self.fmt == "jsonl":
            line = (
                self.prefix[query]
                + match_line(match, self.schema, self.flat.names[query], self.keep)[1:]
                + "\n"
            )
        else:
            line = self.lines.line(self.flat.row(query, match))
        self.stream.write(line)
        return encoded_size(line, self.stream)

    def close(self) -> None:
        self.stream.flush()
