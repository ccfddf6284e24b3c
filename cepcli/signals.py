"""Ctrl-C and SIGTERM stop a run the same way, never in the middle of a match's line.

Within ``WholeLines``, SIGINT raises ``KeyboardInterrupt`` and SIGTERM ``Terminated`` at
once, except while a match is being written (``lines.call(write, match)``): then the signal
waits for the end of that write. The CLI exits 130 after Ctrl-C and 143 after SIGTERM.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import TypeVar

T = TypeVar("T")


class Terminated(KeyboardInterrupt):
    """SIGTERM, handled as Ctrl-C."""


def interruption(signum: int) -> KeyboardInterrupt:
    return Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def exit_code(err: BaseException) -> int:
    """128 + the signal: 143 for SIGTERM, 130 for Ctrl-C."""
    return 143 if isinstance(err, Terminated) else 130


class WholeLines:
    """Signal handlers for a run that writes matches (main thread only; elsewhere a no-op)."""

    def __init__(self) -> None:
        self._writing = False
        self._pending: int | None = None
        self._previous: dict[int, object] = {}

    def __enter__(self) -> WholeLines:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._previous[signum] = signal.signal(signum, self._handler)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)  # type: ignore[arg-type]

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        self._pending = signum
        if not self._writing:
            raise interruption(signum)

    def call(self, write: Callable[[T], object], item: T) -> None:
        """``write(item)``, a signal that arrives meanwhile waiting for its end (no context
        manager: this runs once per match)."""
        self._writing = True
        try:
            write(item)
        finally:
            self._writing = False
        if self._pending is not None:
            raise interruption(self._pending)
