"""Reading ahead: the items of an iterator made by a thread of their own while the run
works on the ones before (decompressing a file, reading Parquet row groups). The GIL is
let go in both (zlib, pyarrow), so on two cores the reading hides behind the work.

One rule for every reader: at most ``depth`` items wait; an exception of the iterator is
raised in the reader's thread after the items before it; closing the generator early (an
error, ``--max-matches``, Ctrl-C) stops the thread and waits for it, so none is left
(the evaluation's thread: for a moment, see ``read_ahead``).

``CEPCLI_THREADS=1`` (the environment) runs a run on one core: no thread of its own
reads or evaluates ahead (the items are made as they are asked for) and pyarrow's pools
have one thread; what two cores give is then measured on the same run (BENCHMARKS.md).
"""

from __future__ import annotations

import functools
import os
import queue
import threading
from collections.abc import Callable, Generator, Iterator
from typing import TypeVar

T = TypeVar("T")

_DONE = object()


@functools.cache
def threads() -> int:
    """The threads a run keeps busy: ``CEPCLI_THREADS``, else the machine's cores. At 1,
    pyarrow's CPU and I/O pools are set to one thread too (once, for the process)."""
    given = os.environ.get("CEPCLI_THREADS", "").strip()
    if not given:
        return os.cpu_count() or 1
    try:
        count = max(1, int(given))
    except ValueError:
        return os.cpu_count() or 1
    if count == 1:
        import pyarrow as pa

        pa.set_cpu_count(1)
        pa.set_io_thread_count(1)
    return count


def read_ahead(
    make: Callable[[], Iterator[T]], depth: int, name: str, wait: float | None = None
) -> Generator[T, None, None]:
    """The items of ``make()``, made by a thread named ``name`` at most ``depth`` ahead.
    Closed early, it waits ``wait`` seconds at most for the thread to stop (None: until it
    does; an item that takes long to make, as a slice's joins, would hold up Ctrl-C: the
    thread, a daemon, then ends with the process, its next item never handed on)."""
    if threads() == 1:  # one core: each item made when it is asked for
        yield from make()
        return
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


U = TypeVar("U")


def spread(work: Callable[[U], T], items: list[U]) -> list[T]:
    """``work`` of each item, in their order, on the run's threads at once (pyarrow's
    kernels let the GIL go: a sample's columns typed side by side); on one core, or for
    one item, one after another. The first failure is raised, once every thread ended."""
    if threads() == 1 or len(items) < 2:
        return [work(item) for item in items]
    done: list[T | None] = [None] * len(items)
    failures: list[BaseException] = []
    left = iter(range(len(items)))
    taking = threading.Lock()

    def worker() -> None:
        while not failures:
            with taking:
                i = next(left, None)
            if i is None:
                return
            try:
                done[i] = work(items[i])
            except BaseException as err:  # raised in the caller's thread, below
                failures.append(err)

    count = min(threads(), len(items)) - 1
    helpers = [threading.Thread(target=worker, name="cepcli-spread", daemon=True) for _ in range(count)]
    for helper in helpers:
        helper.start()
    worker()  # (this thread is one of them)
    for helper in helpers:
        helper.join()
    if failures:
        raise failures[0]
    return done  # type: ignore[return-value]
