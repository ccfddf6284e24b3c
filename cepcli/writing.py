"""Files the CLI writes (``--output``, ``--stats-json``, a Spark ``--output DIR``): checked
before the work, so a wrong path fails at once in one line; write errors during the run
become one line naming the file (``OutputError``)."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO

from cepcli.errors import OutputError


def check_outputs(file: str | None, directory: str | None, stats_json: str | None) -> None:
    """Each output can be written: its directory exists and is writable (a file that
    exists, writable too); a Spark output directory must not exist yet."""
    for path, option in ((file, "--output"), (stats_json, "--stats-json")):
        if path is not None:
            _check_file(path, option)
    if directory is not None and "://" not in directory:  # a Spark URI: Spark checks it
        if os.path.exists(directory):
            raise OutputError(directory, "it exists (--spark --output writes a new directory)")
        _check_parent(directory, "--output")


def _check_file(path: str, option: str) -> None:
    if os.path.isdir(path):
        raise OutputError(path, f"it is a directory ({option} takes a file)")
    if os.path.exists(path):
        if not os.access(path, os.W_OK):
            raise OutputError(path, f"{os.strerror(errno.EACCES)} ({option})")
        return
    _check_parent(path, option)


def _check_parent(path: str, option: str) -> None:
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise OutputError(path, f"no directory {parent!r} ({option})")
    if not os.access(parent, os.W_OK):
        raise OutputError(path, f"{os.strerror(errno.EACCES)} in {parent!r} ({option})")


@contextmanager
def written_to(name: str) -> Iterator[None]:
    """A write error within is one line naming ``name`` and the cause (a closed pipe is
    not an error: the reader went away)."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as err:
        raise OutputError(name, err.strerror or str(err)) from None


def write_json(path: str, data: object) -> None:
    """``--stats-json``, ``bench --json``: indented JSON, a write error in one line."""
    with written_to(path):
        Path(path).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def flush_quietly(stream: IO[str]) -> None:
    """Flush what can be flushed (after an interruption or a write error)."""
    with suppress(OSError, ValueError):
        stream.flush()


def close_quietly(stream: IO[str]) -> None:
    flush_quietly(stream)
    with suppress(OSError):
        stream.close()
