"""Reading ahead: the items of an iterator made by a thread of their own while the run
works on the ones before (decompressing a file, reading Parquet row groups). The GIL is
let go in both (zlib, pyarrow), so on two cores the reading hides behind the work.

One rule for every reader: at most ``depth`` items wait; an exception of the iterator is
raised in the reader's thread after the items before it; closing the generator early (an
error, ``--max-matches``, Ctrl-C) stops the thread and waits for it, so none is left
(the evaluation's thread: for a moment, see ``read_ahead``).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Generator, Iterator
from typing import TypeVar

T = TypeVar("T")

_DONE = object()


def read_ahead(
    make: Callable[[], Iterator[T]], depth: int, name: str, wait: float | None = None
) -> Generator[T, None, None]:
    """The items of ``make()``, made by a thread named ``name`` at most ``depth`` ahead.
    Closed early, it waits ``wait`` seconds at most for the thread to stop (None: until it
    does; an item that takes long to make, as a slice's joins, would hold up Ctrl-C: the
    thread, a daemon, then ends with the process, its next item never handed on)."""
    waiting: queue.Queue[tuple[object, BaseException | None]] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item: object, failure: BaseException | None = None) -> bool:
        while not stop.is_set():
            try:
                waiting.put((item, failure), timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def work() -> None:
        try:
            for item in make():
                if not put(item):
                    return
        except BaseException as err:  # raised again in the reader's thread, in its place
            put(None, err)
            return
        put(_DONE)

    thread = threading.Thread(target=work, name=name, daemon=True)
    thread.start()
    try:
        while True:
            item, failure = waiting.get()
            if failure is not None:
                raise failure
            if item is _DONE:
                return
            yield item  # type: ignore[misc]
    finally:
        stop.set()
        thread.join(wait)
