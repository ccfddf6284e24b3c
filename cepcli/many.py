"""Transitional names for ``cepcli.run.Run`` over several queries (the Spark modules' until
they move to ``Run``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import IO

from cepcli.notes import Notes
from cepcli.prepare import Compiled, RunOptions, agreed
from cepcli.run import MAX_BITS, Run, rebit
from cepcli.runtime.stats import Stats
from cepcli.sources.options import InputOptions


class Many(Run):
    def __init__(
        self,
        queries: Sequence[tuple[str, Compiled]],
        options: InputOptions,
        run: RunOptions | None = None,
        data: object = None,
        stdin: IO[bytes] | None = None,
        stats: Stats | None = None,
        notes: Notes | None = None,
    ) -> None:
        super().__init__(dict(queries), options, run, data, stdin, stats, notes, named=True)
        self._orders = self.orders


__all__ = ["MAX_BITS", "Many", "agreed", "rebit"]
