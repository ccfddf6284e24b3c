"""Files the CLI writes (``--output``, ``--stats-json``, a Spark ``--output DIR``): tried
before the work, so a path that cannot be written fails at once in one line; write errors
during the run become one line naming the file (``OutputError``), and a regular file the
matches go to (``--output``, or standard output redirected to a file) is cut back to its
last complete match (``LastMatch``)."""

from __future__ import annotations

import codecs
import io
import json
import os
import stat
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from functools import lru_cache
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from cepcli.errors import OutputError

if TYPE_CHECKING:
    import numpy as np


def check_outputs(file: str | None, directory: str | None, stats_json: str | None) -> None:
    """Each output of ``run`` can be written, tried before any work (``os.access`` is not
    enough: root passes it for ``/proc/x``, which cannot be made): ``--stats-json`` as
    ``check_file`` says; ``--output`` only looked at, since it is opened (``open_output``)
    right after; a Spark output directory must not exist yet, and is made and removed."""
    if file is not None:
        _check_path(file, "--output")
    if stats_json is not None:
        check_file(stats_json, "--stats-json")
    if directory is not None and "://" not in directory:  # a Spark URI: Spark checks it
        if os.path.exists(directory):
            raise OutputError(directory, "it exists (--spark --output writes a new directory)")
        _check_parent(directory, "--output")
        with _cause(directory, "--output"):
            os.mkdir(directory)
            os.rmdir(directory)


def check_file(path: str, option: str) -> None:
    """A file written once the work is done (``--stats-json``, ``bench --json``) can be
    written: opened for appending, so that an existing file keeps its content until then,
    and removed again when this check made it. A FIFO or a device is not opened (a FIFO
    would wait for its reader)."""
    _check_path(path, option)
    with _cause(path, option):
        if os.path.exists(path):
            if stat.S_ISREG(os.stat(path).st_mode):
                os.close(os.open(path, os.O_WRONLY | os.O_APPEND))
            return
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:  # made by someone else meanwhile: theirs to keep
            return
        os.unlink(path)


def open_output(path: str) -> IO[str]:
    """``--output``, opened for writing before any work (an existing file is emptied, as
    the run rewrites it): a path that cannot be written is one line here."""
    try:
        return open(path, "w", encoding="utf-8", newline="")
    except OSError as err:
        raise OutputError(path, _reason(err, "--output")) from None


def standard_output() -> IO[str]:
    """Standard output, for the matches: ``sys.stdout``, unless Python writes it unbuffered
    (``python -u``, ``PYTHONUNBUFFERED``); then a buffered stream over the same descriptor,
    since an unbuffered text stream drops what a short write left unwritten (a full disk,
    a file size limit, a signal) and reports success: a match's line would be cut without
    an error, where a buffered one writes the rest or raises."""
    if isinstance(getattr(sys.stdout, "buffer", None), io.RawIOBase):
        return open(  # noqa: SIM115 (it outlives the call; it never closes the descriptor)
            sys.stdout.fileno(), "w", encoding=sys.stdout.encoding, errors=sys.stdout.errors, closefd=False
        )
    return sys.stdout


def _check_path(path: str, option: str) -> None:
    """The clear causes, named before trying: a directory, or no directory to hold it."""
    if os.path.isdir(path):
        raise OutputError(path, f"it is a directory ({option} takes a file)")
    if not os.path.exists(path):
        _check_parent(path, option)


def _check_parent(path: str, option: str) -> None:
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise OutputError(path, f"no directory {parent!r} ({option})")


@contextmanager
def _cause(path: str, option: str) -> Iterator[None]:
    """An ``OSError`` within is one line naming ``path``, the cause and the option."""
    try:
        yield
    except OSError as err:
        raise OutputError(path, _reason(err, option)) from None


def _reason(err: OSError, option: str) -> str:
    return f"{err.strerror or err} ({option})"


@contextmanager
def written_to(name: str) -> Iterator[None]:
    """A write error within is one line naming ``name`` and the cause (a closed pipe is
    not an error: the reader went away)."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as err:
        raise write_error(name, err) from None


def write_error(name: str, err: OSError) -> OutputError:
    """A write error (not a closed pipe) as one line naming ``name`` and the cause."""
    return OutputError(name, err.strerror or str(err))


def write_json(path: str, data: object) -> None:
    """``--stats-json``, ``bench --json``: indented JSON, a write error in one line."""
    with written_to(path):
        Path(path).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


BLOCK_BYTES = 1 << 20  # matches written to a file are flushed in blocks of this size
BLOCK_SECONDS = 1.0  # or this old


class LastMatch:
    """Where the file the matches go to ends after its last complete match, so that a
    write error (a full disk) leaves no cut line: the file is cut back there. Only a
    regular file can be cut back (``--output``, or standard output redirected to a file),
    not a pipe or a device. The offsets are the file's own, as seen after each match:
    standard output may have been opened at an offset, or for appending (``>>``)."""

    def __init__(self, stream: IO[str]) -> None:
        self.fd = _descriptor(stream)
        self.regular = self.fd is not None and stat.S_ISREG(os.fstat(self.fd).st_mode)
        self.end = _offset(self.fd) if self.fd is not None and self.regular else 0
        # matches written to the stream's buffer since the last mark: where each ends
        self.ends: list[int] = []
        self.buffered = 0  # their bytes
        self.since = time.monotonic()  # the last mark

    def mark(self) -> None:
        """What was written is flushed, the last line a complete match's: the file may end
        here."""
        if self.fd is not None and self.regular:
            self.end = os.lseek(self.fd, 0, os.SEEK_CUR)
        self.ends.clear()
        self.buffered = 0
        self.since = time.monotonic()

    def wrote(self, size: int) -> bool:
        """A complete match of ``size`` bytes was written to the stream's buffer (not yet
        flushed): the file may end after it once its bytes are out. True: flush now (and
        mark), a block's worth is buffered (``BLOCK_BYTES``, or ``BLOCK_SECONDS`` since the
        last mark: a file being followed, ``tail -f``, still moves)."""
        self.buffered += size
        self.ends.append(self.end + self.buffered)
        return self.buffered >= BLOCK_BYTES or time.monotonic() - self.since >= BLOCK_SECONDS

    def wrote_lines(self, ends: np.ndarray) -> bool:
        """``wrote`` for complete matches written at once, ``ends`` where each ends (bytes
        from the first one's start)."""
        if not len(ends):
            return False
        start = self.end + self.buffered
        self.ends.extend((ends + start).tolist())
        self.buffered += int(ends[-1])
        return self.buffered >= BLOCK_BYTES or time.monotonic() - self.since >= BLOCK_SECONDS

    def cut(self) -> None:
        """After a write error: a regular file ends at its last complete match (also for a
        process that shares the descriptor and writes after this one); and whatever the
        descriptor, what is still buffered goes nowhere (it now writes to ``os.devnull``),
        so that neither closing the stream nor the interpreter's exit writes a cut line
        again, or fails a second time (``Exception ignored``, exit 120)."""
        if self.fd is None:
            return
        if self.regular:
            with suppress(OSError):
                reached = _offset(self.fd)  # a flush may have written part of the buffer
                self.end = max([self.end, *(e for e in self.ends if e <= reached)])
                os.ftruncate(self.fd, self.end)
                os.lseek(self.fd, self.end, os.SEEK_SET)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, self.fd)
        os.close(devnull)


def _descriptor(stream: IO[str]) -> int | None:
    """The descriptor ``stream`` writes to (None: none, as in tests)."""
    try:
        fd = stream.fileno()
        os.fstat(fd)
    except (OSError, ValueError):  # io.UnsupportedOperation is both
        return None
    return fd


def _offset(fd: int) -> int:
    """Where the next write to ``fd`` lands: the end of the file when it appends (its
    offset is only moved there by the first write)."""
    import fcntl  # (POSIX only, as the cut itself)

    if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_APPEND:
        return os.fstat(fd).st_size
    return os.lseek(fd, 0, os.SEEK_CUR)


def write_lines_bytes(stream: IO[str], data: bytes | memoryview | Any) -> None:
    """Lines made as bytes (``cepcli.lines``: jsonl's ASCII, or csv's UTF-8 for a stream
    that ``writes_utf8``) written to a text stream: straight to its binary buffer when it
    has one and its encoding writes ASCII as ASCII (what the text layer holds is flushed
    first), else decoded and written as text."""
    binary = getattr(stream, "buffer", None)
    if isinstance(binary, io.BufferedIOBase) and _ascii_as_is(getattr(stream, "encoding", None) or "utf-8"):
        stream.flush()
        binary.write(data)
    else:
        stream.write(bytes(data).decode("utf-8"))


def writes_utf8(stream: IO[str]) -> bool:
    """Whether ``stream`` encodes its text as UTF-8 (a stream without an encoding, as a
    ``StringIO``, takes text: UTF-8 is then what it is given)."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        return codecs.lookup(encoding).name == "utf-8"
    except LookupError:
        return False


@lru_cache(maxsize=8)
def _ascii_as_is(encoding: str) -> bool:
    try:
        return _ASCII.encode(encoding) == _ASCII.encode("ascii")
    except (LookupError, UnicodeError):
        return False


_ASCII = "".join(map(chr, range(128)))


def flush_quietly(stream: IO[str]) -> None:
    """Flush what can be flushed (after an interruption or a write error)."""
    with suppress(OSError, ValueError):
        stream.flush()


def close_quietly(stream: IO[str]) -> None:
    flush_quietly(stream)
    with suppress(OSError):
        stream.close()
