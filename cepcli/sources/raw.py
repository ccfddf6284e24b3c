"""The bytes of one input: a file or standard input, decompressed when its name or first
bytes say so (gzip, bz2, zstd, lz4, brotli), with its size and how far it has been read.
Shared by the text readers (CSV, JSON lines)."""

from __future__ import annotations

import bz2
import gzip
import io
import os
import stat
import sys
from typing import IO

import pyarrow as pa

from cepcli.errors import InputError

_MAGIC = {b"\x1f\x8b": "gzip", b"BZh": "bz2", b"\x28\xb5\x2f\xfd": "zstd", b"\x04\x22\x4d\x18": "lz4"}
_SUFFIX = {".gz": "gzip", ".bz2": "bz2", ".zst": "zstd", ".zstd": "zstd", ".lz4": "lz4", ".br": "brotli"}


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


def open_input(path: str, name: str, stdin: IO[bytes] | None) -> tuple[IO[bytes], int | None, bool]:
    """The raw bytes of an input, its size when known, and whether it is a stream (a pipe,
    FIFO or terminal: rows are evaluated as they arrive)."""
    try:
        raw: IO[bytes] = (stdin or sys.stdin.buffer) if path == "-" else open(path, "rb")  # noqa: SIM115
    except OSError as err:
        raise InputError(f"cannot open: {err.strerror}", filename=name) from None
    try:
        mode = os.fstat(raw.fileno()).st_mode
    except (OSError, AttributeError, io.UnsupportedOperation):
        return raw, None, False  # in memory (tests): read like a file
    if stat.S_ISREG(mode):
        return raw, os.fstat(raw.fileno()).st_size, False
    return raw, None, True


def decompressed(raw: IO[bytes], path: str, streaming: bool) -> IO[bytes]:
    """The input decompressed when its name or its first bytes say it is compressed."""
    how = next((v for k, v in _SUFFIX.items() if path.lower().endswith(k)), None)
    peek = getattr(raw, "peek", None)
    head = bytes(peek(4)[:4]) if peek is not None else b""
    if not head and peek is None and raw.seekable():
        head = raw.read(4)
        raw.seek(0)
    how = next((v for k, v in _MAGIC.items() if head.startswith(k)), how)
    source: IO[bytes] = _Read1(raw) if streaming else raw  # type: ignore[assignment]
    if how == "gzip":
        return gzip.GzipFile(fileobj=source)  # type: ignore[return-value]
    if how == "bz2":
        return bz2.BZ2File(source)
    if how is not None:
        stream: IO[bytes] = pa.CompressedInputStream(pa.PythonFile(source, mode="r"), how)
        return stream
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


class RawInput:
    """``path`` (``-``: standard input, or ``stdin`` when given) opened for reading:
    ``stream`` its decompressed bytes (with ``part``, only bytes ``start:stop`` of a plain
    file); ``streaming`` whether rows arrive as they are written (a pipe, FIFO or terminal)."""

    def __init__(
        self, path: str, stdin: IO[bytes] | None = None, part: tuple[int, int] | None = None
    ) -> None:
        self.path = path
        self.name = "<stdin>" if path == "-" else path
        self.raw, self.total_bytes, self.streaming = open_input(path, self.name, stdin)
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
