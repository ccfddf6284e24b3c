"""Transitional names for ``cepcli.run.Run`` over one query (the Spark modules' until they
move to ``Run``)."""

from __future__ import annotations

from typing import IO

from cepcli.notes import Notes
from cepcli.prepare import Compiled, RunOptions, compile_file, compile_text, input_path, with_query_options
from cepcli.run import Run, explain_query, peak_rss_mb
from cepcli.runtime.stats import Stats
from cepcli.sources.options import InputOptions


class Job(Run):
    def __init__(
        self,
        compiled: Compiled,
        options: InputOptions,
        run: RunOptions | None = None,
        data: object = None,
        stdin: IO[bytes] | None = None,
        stats: Stats | None = None,
        notes: Notes | None = None,
    ) -> None:
        super().__init__({compiled.path: compiled}, options, run, data, stdin, stats, notes)


__all__ = [
    "Compiled",
    "Job",
    "RunOptions",
    "compile_file",
    "compile_text",
    "explain_query",
    "input_path",
    "peak_rss_mb",
    "with_query_options",
]
