"""The bytes of one input: a file or standard input, decompressed when its name or first
bytes say so (gzip, bz2, zstd, lz4, brotli), with its size and how far it has been read.
Shared by the text readers (CSV, JSON lines)."""

from __future__ import annotations

import bz2
import gzip
import io
import os
import select
import stat
import sys
import time
import zlib
from collections.abc import Callable
from typing import IO

import pyarrow as pa

from cepcli.errors import InputError
from cepcli.sources.options import COMPRESSIONS, input_name

_MAGIC = {b"\x1f\x8b": "gzip", b"BZh": "bz2", b"\x28\xb5\x2f\xfd": "zstd", b"\x04\x22\x4d\x18": "lz4"}


GATHER_SECONDS = 0.05  # a pipe's rows gathered into one piece for at most this long
_PIECE = 1 << 16  # the most one read of a pyarrow decompressor asks for (see _Salvaged)
_MOST = 1 << 20  # the most one read of Python's asks for (it gives what one step makes)


class _Read1(io.RawIOBase):
    """``read`` returns what is available (a pipe's ``read1``), for the decompressors."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw = raw
        self._read = getattr(raw, "read1", raw.read)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = self._read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


class _Salvaged(io.RawIOBase):
    """A decompressed stream that hands on every byte decompressed before a failure (a
    truncated or corrupt input): a read that fails after some bytes returns them, and the
    next read raises the failure (corrupt deflate data as ``gzip.BadGzipFile``, an
    ``OSError`` as the other failures are, where ``zlib.error`` is none). Python's
    ``GzipFile.read`` and ``BZ2File.read`` drop what a failing read had gathered (up to a
    whole read), so reads are gathered here from their ``read1``; pyarrow's decompressors
    (``piece``) are read a piece at a time, as a failing read loses what it would have
    returned."""

    def __init__(self, stream: IO[bytes], piece: int | None) -> None:
        self.stream = stream
        self.piece = piece
        self._read1 = getattr(stream, "read1", stream.read)
        self.failure: Exception | None = None

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        """``size`` bytes (all with -1), fewer only at the end of the input or before a
        failure."""
        left = sys.maxsize if size is None or size < 0 else size
        pieces: list[bytes] = []
        while left > 0:
            piece = self._call(min(left, self.piece or _MOST), gathered=bool(pieces))
            if not piece:
                break
            pieces.append(piece)
            left -= len(piece)
        return b"".join(pieces)

    def read1(self, size: int = -1) -> bytes:
        """What one read of the decompressor gives (a pipe: what has arrived)."""
        if self.piece is not None:  # pyarrow's reads wait for ``size`` bytes anyway
            return self.read(size)
        return self._call(size if size >= 0 else io.DEFAULT_BUFFER_SIZE, gathered=False)

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def _call(self, size: int, gathered: bool) -> bytes:
        """One read of the decompressor; a failure after bytes ``gathered`` waits for the
        next read."""
        if self.failure is not None:
            held, self.failure = self.failure, None
            raise held
        try:
            return bytes(self._read1(size))
        except zlib.error as err:
            failure: Exception = gzip.BadGzipFile(str(err))
        except (EOFError, OSError) as err:
            failure = err
        if not gathered:
            raise failure
        self.failure = failure
        return b""


def open_input(
    path: str, name: str, stdin: IO[bytes] | None, follow: bool = False
) -> tuple[IO[bytes], int | None, bool]:
    """The raw bytes of an input, its size when known, and whether it is a stream (a pipe,
    FIFO or terminal, or a file followed as it grows: rows are evaluated as they arrive)."""
    try:
        raw: IO[bytes] = (stdin or sys.stdin.buffer) if path == "-" else open(path, "rb")  # noqa: SIM115
    except OSError as err:
        raise InputError(f"cannot open: {err.strerror}", filename=name) from None
    if follow:
        return _Followed(raw), None, True  # type: ignore[return-value]
    try:
        mode = os.fstat(raw.fileno()).st_mode
    except (OSError, AttributeError, io.UnsupportedOperation):
        return raw, None, False  # in memory (tests): read like a file
    if stat.S_ISREG(mode):
        return raw, os.fstat(raw.fileno()).st_size, False
    return raw, None, True


def decompressed(raw: IO[bytes], path: str, streaming: bool) -> IO[bytes]:
    """The input decompressed when its name or its first bytes say it is compressed."""
    how = next((v for k, v in COMPRESSIONS.items() if path.lower().endswith(k)), None)
    peek = getattr(raw, "peek", None)
    head = bytes(peek(4)[:4]) if peek is not None else b""
    if not head and peek is None and raw.seekable():
        head = raw.read(4)
        raw.seek(0)
    how = next((v for k, v in _MAGIC.items() if head.startswith(k)), how)
    source: IO[bytes] = _Read1(raw) if streaming else raw  # type: ignore[assignment]
    if how == "gzip":
        return _Salvaged(gzip.GzipFile(fileobj=source), None)  # type: ignore[arg-type, return-value]
    if how == "bz2":
        return _Salvaged(bz2.BZ2File(source), None)  # type: ignore[return-value]
    if how is not None:
        stream: IO[bytes] = pa.CompressedInputStream(pa.PythonFile(source, mode="r"), how)
        return _Salvaged(stream, _PIECE)  # type: ignore[return-value]
    return raw


class _Part(io.RawIOBase):
    """Bytes ``start:stop`` of a file."""

    def __init__(self, raw: IO[bytes], start: int, stop: int) -> None:
        raw.seek(start)
        self.raw = raw
        self.left = stop - start

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = self.raw.read(min(len(buffer), self.left))
        self.left -= len(data)
        buffer[: len(data)] = data
        return len(data)


FOLLOW_SECONDS = 0.05  # a followed file at its end is looked at again after this long


class _Followed(io.RawIOBase):
    """A file another process appends to, read as it grows (``tail -f``): at its end a
    read waits for more, looking again every ``FOLLOW_SECONDS``, until the run is stopped
    (Ctrl-C). Without a descriptor to wait on: a regular file is always "ready"."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw = raw

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        while True:
            data = self.raw.read(len(buffer))
            if data:
                buffer[: len(data)] = data
                return len(data)
            time.sleep(FOLLOW_SECONDS)

    def read1(self, size: int = -1) -> bytes:
        return self.read(size if size >= 0 else io.DEFAULT_BUFFER_SIZE)

    def tell(self) -> int:
        return self.raw.tell()

    def close(self) -> None:
        self.raw.close()
        super().close()


class RawInput:
    """``path`` (``-``: standard input, or ``stdin`` when given) opened for reading:
    ``stream`` its decompressed bytes (with ``part``, only bytes ``start:stop`` of a plain
    file); ``streaming`` whether rows arrive as they are written (a pipe, FIFO or terminal;
    ``follow``: a file read as it grows)."""

    def __init__(
        self,
        path: str,
        stdin: IO[bytes] | None = None,
        part: tuple[int, int] | None = None,
        follow: bool = False,
    ) -> None:
        self.path = path
        self.name = input_name(path)
        self.raw, self.total_bytes, self.streaming = open_input(path, self.name, stdin, follow)
        if part is not None:
            self.stream: IO[bytes] = _Part(self.raw, *part)  # type: ignore[assignment]
            self.total_bytes = part[1] - part[0]
            return
        self.stream = decompressed(self.raw, path, self.streaming)

    def progress(self) -> tuple[int, int | None]:
        """Bytes read so far and the total, for a progress bar."""
        try:
            return self.raw.tell(), self.total_bytes
        except (OSError, ValueError):
            return 0, self.total_bytes

    def close(self) -> None:
        if self.path != "-":
            self.raw.close()


def arrow_owned(data: bytes) -> pa.Buffer:
    """``data`` copied into memory Arrow owns, for pyarrow's readers: a buffer over a Python
    ``bytes`` keeps that object, and pyarrow's I/O thread, letting go of it after a read,
    takes the GIL; if the process is exiting then, the thread is ended inside Arrow's C++
    and the process aborts ("terminate called without an active exception"). Arrow's own
    memory is freed without Python."""
    sink = pa.BufferOutputStream()
    sink.write(data)
    return sink.getvalue()


def descriptor(raw: IO[bytes]) -> int | None:
    """The descriptor to wait on for more of ``raw`` (a pipe), if it has one (not a
    decompressor's stream)."""
    try:
        return raw.fileno()
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return None


def gathered(first: bytes, more: Callable[[], bytes], fd: int, most: int, ended: Callable[[], bool]) -> bytes:
    """``first`` (whole records read from a pipe) and the records that arrive on ``fd``
    within ``GATHER_SECONDS`` after it (``more()`` reads them), up to ``most`` bytes or the
    end of the input (``ended()``): a fast writer's rows are parsed in large pieces, a slow
    one's still at once."""
    pieces, size = [first], len(first)
    deadline = time.monotonic() + GATHER_SECONDS
    while size < most and not ended():
        wait = deadline - time.monotonic()
        if wait <= 0 or not select.select([fd], [], [], wait)[0]:
            break
        piece = more()
        pieces.append(piece)
        size += len(piece)
    return b"".join(pieces) if len(pieces) > 1 else first
