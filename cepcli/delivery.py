"""A run's matches delivered: the queries evaluated (locally by one ``Run``, or as a Spark
job) and every match written in its format, whole. The command line's ``run`` is this
module plus its options and messages.

What it promises: a match is written whole or not at all (a signal waits for the end of its
line: ``WholeLines``); a pipe or a terminal sees each match as soon as it is decided, a
regular file gets them in blocks; when writing fails, a regular file is cut back to the end
of its last whole match (``LastMatch``); a Parquet file is written whole at the end, also
when the run is interrupted."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, suppress
from typing import IO, TYPE_CHECKING, Any

from cepcli.errors import OutputError
from cepcli.events import Schema
from cepcli.notes import Notes
from cepcli.prepare import Prepared, RunOptions
from cepcli.runtime.stats import Stats
from cepcli.signals import WholeLines
from cepcli.sources.options import input_name
from cepcli.writers import JsonlWriter, MatchWriter, shown_columns, writer_for
from cepcli.writing import LastMatch, flush_quietly, write_error, write_lines_bytes, written_to

if TYPE_CHECKING:
    from rich.console import Console

    from cepcli.runtime.columnar import Found
    from cepcli.spark import SparkOptions

FOUND_LINES = 1 << 16  # the columnar engine's matches made into lines at once, at most


# How a run reports its progress: called with the input's size (None: unknown) and a
# function giving the matches written so far, a context manager giving the function to
# call with the bytes or rows read (a no-op where nobody watches).
Progress = Callable[[int | None, Callable[[], int]], AbstractContextManager[Callable[[int], None]]]


class Delivery:
    """The matches of ``prepared``'s queries written to ``stream`` (named ``name`` in
    messages) in ``fmt``: jsonl, csv, parquet, or a table (``console`` makes its rich
    console). ``show``: the columns each event keeps (``--show``)."""

    def __init__(
        self,
        prepared: Prepared,
        fmt: str,
        stream: IO[str],
        name: str,
        show: tuple[str, ...] | None = None,
        console: Callable[[IO[str]], Console] | None = None,
    ) -> None:
        self.prepared, self.fmt, self.stream, self.name, self.show = prepared, fmt, stream, name, show
        self.console = console
        self.writer: MatchWriter | None = None  # made when the input's schema is known
        self.lines = WholeLines()
        self.last = LastMatch(stream)  # where the output ends after its last complete match (a regular file)
        self.batched = self.last.regular and fmt in ("jsonl", "csv")
        self.only = next(iter(prepared.queries))

    @property
    def written(self) -> int:
        return self.writer.written if self.writer is not None else 0

    def start(self, schema: Schema, *_: Any) -> Callable[[Any], None]:
        """The writer of the matches, once the input's schema is known; and the function
        that takes each match: a ``(name, Match)``, a ``(name, Found)``, or from a Spark job
        a bare ``Match`` of its only query or a text of jsonl lines the executors made."""
        from cepcli.runtime.columnar import Found

        prepared, stream, last = self.prepared, self.stream, self.last
        columns = list(self.show) if self.show is not None else None
        patterns = {q: c.pattern for q, c in prepared.queries.items()}
        with written_to(self.name):  # a csv header is written at once, and kept
            if self.fmt == "table":
                from cepcli.render import TableWriter

                assert self.console is not None
                each = {
                    q: shown_columns(c.pattern, c.query, schema, columns) for q, c in prepared.queries.items()
                }
                writer: MatchWriter = TableWriter(
                    self.console(stream), schema, patterns, each, prepared.named
                )
            else:
                source = input_name(prepared.options.path)
                writer = writer_for(self.fmt, stream, schema, patterns, columns, prepared.named, source)
            self.writer = writer
            stream.flush()
            last.mark()

        def put(match: Any) -> None:  # a (name, Match); a str: a Spark job's jsonl lines
            if isinstance(match, str):
                assert isinstance(writer, JsonlWriter)
                writer.write_lines(match)
                last.mark()
            elif not self.batched:  # a pipe or a terminal sees each match at once
                writer.write(match)
                stream.flush()
                last.mark()
            elif last.wrote(writer.write(match)):  # a file gets them in blocks: a block's worth out now
                stream.flush()
                last.mark()

        def put_found(found: tuple[str, Found]) -> None:  # the columnar engine's matches, lines made at once
            lines = writer.add_found(found)  # type: ignore[attr-defined]
            if lines is None or not len(lines[1]):  # (none now: parquet's file is written at the end)
                return
            text, ends = lines
            due = last.wrote_lines(ends)  # (before the write: it may reach the file, and fail)
            write_lines_bytes(stream, text)
            if not self.batched or due:
                stream.flush()
                last.mark()

        def whole(match: Any) -> None:
            try:
                if not isinstance(match, tuple | str):
                    match = (self.only, match)  # (a Spark job's matches of its only query)
                if isinstance(match, str) or not isinstance(match[1], Found):
                    self.lines.call(put, match)  # (a signal waits for the end of the line)
                    return
                query, found = match
                if getattr(writer, "takes_found", False):
                    for piece in found.pieces(FOUND_LINES):  # (a signal: the end of a piece)
                        self.lines.call(put_found, (query, piece))
                else:
                    for one in found.matches():
                        self.lines.call(put, (query, one))
            except BrokenPipeError:
                raise
            except OSError as err:
                raise write_error(self.name, err) from None

        return whole

    def run(
        self,
        options: RunOptions,
        spark: SparkOptions | None,
        live: Stats,
        warn: Callable[[str], None],
        progress: Progress,
    ) -> Stats:
        """Evaluate and write every match; the run's statistics. Failing to write, a
        regular file is cut back to its last whole match; interrupted, a Parquet file is
        written whole with the matches so far (``interrupted``)."""
        prepared = self.prepared
        try:
            with self.lines:
                if spark is not None and prepared.named:
                    from cepcli.spark import run_spark_many

                    queries = list(prepared.queries.items())
                    stats = run_spark_many(queries, prepared.options, options, spark, self.start, warn, live)
                elif spark is not None:
                    from cepcli.spark import run_spark

                    stats = run_spark(prepared.only, prepared.options, options, spark, self.start, warn, live)
                else:
                    stats = self._local(options, live, warn, progress)
                with written_to(self.name):
                    if self.writer is not None:
                        self.writer.close()
                    self.stream.flush()
            return stats
        except KeyboardInterrupt:
            if self.fmt == "parquet" and self.writer is not None and spark is None:  # the matches so far
                with suppress(OSError):
                    self.writer.close()
            flush_quietly(self.stream)
            if self.writer is not None:  # with --spark --output DIR, the executors' files are Spark's
                live.matches = self.writer.written
            live.extra["interrupted"] = True
            raise
        except BrokenPipeError:  # the output's reader left (| head -1): the matches it was handed
            if self.writer is not None:
                live.matches = self.writer.written
            live.extra["output_closed"] = True
            raise
        except OutputError as failed:
            if failed.path == self.name:
                self.last.cut()  # a regular file ends at its last complete match (a pipe cannot be cut)
            raise

    def _local(
        self, options: RunOptions, live: Stats, warn: Callable[[str], None], progress: Progress
    ) -> Stats:
        from cepcli.run import Run

        prepared = self.prepared
        notes = Notes(live.warnings, warn)
        runner = Run(
            prepared.queries, prepared.options, options, stats=live, notes=notes, named=prepared.named
        )
        on_match = self.start(runner.schema)
        with progress(runner.source.progress()[1], lambda: self.written) as step:
            runner.source.on_chunk = lambda source: step(source.progress()[0])
            for found in runner.found():
                on_match(found)
        return runner.stats


__all__ = ["FOUND_LINES", "Delivery", "Progress"]
