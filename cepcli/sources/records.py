"""The bytes in front of pyarrow's CSV reader: whole records, and none over the limit.

pyarrow's streaming CSV reader parses whatever a read returns, so two things it cannot
do are done here, in a thin stream it reads from (everything else, quoting, fields,
invalid rows, is pyarrow's):

* **Latency.** A read returns whole records only, as soon as they are available: a row
  written to a pipe is parsed at once, not when a block fills up.
* **Rows longer than the limit** (``--max-row-bytes``). pyarrow holds a record whole
  and fails when one is longer than its block. A record longer than the limit (on one
  line, or on many: a quoted field may hold line breaks) is read past here, a block at a
  time and never held, and a two-field *marker row* (``MARKER`` and its number) takes its
  place; the reader then reports it as a row with the wrong number of fields (or, in a
  two-column file, recognises the marker), so it is a bad row with the row id of the file.

Finding where records end needs the quotes that open or close a field (not a stray
``5" screen`` inside an unquoted field, which is text). From a pipe they are scanned
(vectorised) in every read, so that no record is cut. From a file, a read is cut at its
last line break when the quotes before it are balanced (one ``bytes.count``, cheap next to
pyarrow's own parsing), and scanned only otherwise. That count is exact unless a stray quote
sits before a quoted field that is open across the cut; then only the boundary handed to
pyarrow moves (it reads a record cut between two reads whole), and a row longer than the
limit right there might be cut in the wrong place.
"""

from __future__ import annotations

import csv
import io
import select
from typing import IO

import numpy as np

from cepcli.errors import InputError, flag
from cepcli.sources.raw import descriptor, gathered

READ_BYTES = 1 << 20
MARKER = "\x00cepcli-long-row:"
_QUOTE, _LF, _CR, _COMMA = 34, 10, 13, 44
_EDGE = np.zeros(256, dtype=bool)  # next to these, a quote opens or closes a quoted field
_EDGE[[_COMMA, _QUOTE, _LF, _CR]] = True


class RecordStream(io.RawIOBase):
    """A binary stream of whole CSV records read from ``raw`` (see the module). From a
    pipe (``streaming``), reads return what is available; from a file, full blocks."""

    def __init__(self, raw: IO[bytes], name: str, limit: int, streaming: bool, header: bool = True) -> None:
        self.raw = raw
        self.name = name
        self.limit = limit
        self._read = getattr(raw, "read1", raw.read) if streaming else raw.read
        self.streaming = streaming
        self.tail = b""  # the unfinished last record, held back (it starts a record)
        self.out = b""  # whole records not yet handed on
        self.eof = False
        self.set_apart: list[str] = []  # why each row replaced by a marker is bad, by marker number
        self.width: int | None = None  # fields a row has (known once the header is read)
        self.header_done = not header  # the first record is a header (over the limit: an error)
        self.failure: InputError | None = None  # a failed read, raised after the records before it
        # every byte handed on so far is UTF-8 (each read's records are decoded anyway, in
        # ``_replace_ragged_bytes``): the reader's columns need no check of their own
        self.utf8 = True
        self.fd = descriptor(raw) if streaming else None  # a pipe's, to wait on (None: a decompressor)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        while not self.out and not (self.eof and not self.tail):
            self.out = self._next()
        n = min(len(buffer), len(self.out))
        buffer[:n] = self.out[:n]
        self.out = self.out[n:]
        return n

    def records(self) -> bytes:
        """The next whole records (at least one), as soon as they are read; empty at the
        end of the input. From a pipe, with what arrives soon after (``raw.gathered``)."""
        while not self.out and not (self.eof and not self.tail):
            self.out = self._next()
        if self.fd is not None and self.out:
            self.out = gathered(self.out, self._next, self.fd, READ_BYTES, lambda: self.eof)
        out, self.out = self.out, b""
        return out

    def ready(self) -> bool:
        """Whether whole records can be had without waiting: read already, or readable from
        the pipe now and whole (the end of the input too: nothing to wait for). A
        decompressor's stream cannot say: False."""
        if self.fd is None:
            return False
        while not self.out:
            if self.eof:
                return True
            if not select.select([self.fd], [], [], 0)[0]:
                return False
            self.out = self._next()  # (readable: the read returns at once)
        return True

    def first_record(self) -> bytes:
        """The first record (the header), left to be read again."""
        while not self.out and not (self.eof and not self.tail):
            self.out = self._next()
        ends = record_ends(np.frombuffer(self.out, dtype=np.uint8), True)
        return self.out[: int(ends[0]) if len(ends) else len(self.out)]

    def _next(self) -> bytes:
        """The next whole records (empty when a read ended inside a record)."""
        data = self._raw_read()
        if not data:
            self.eof = True
            out, self.tail = self.tail, b""
            if self.failure is not None:  # the input was cut inside this record: no row
                return b""
            return self._checked(out, final=True)
        buf = self.tail + data if self.tail else data
        cut = last_record_end(buf, False, exact=self.streaming)
        out, self.tail = (buf[:cut], buf[cut:]) if cut > 0 else (b"", buf)
        if len(self.tail) > self.limit:  # a record already over the limit: read past it
            out = self._checked(out) + self._read_past()
            return out
        return self._checked(out)

    def _raw_read(self) -> bytes:
        """The next bytes. A read that fails (a truncated ``.gz``) ends the stream here, and
        the error waits in ``failure``: pyarrow reads a block ahead, so raising now would
        lose the records before it; the reader raises it after the last whole record. The
        record the failure cut is dropped, never parsed as a row (``raw.decompressed`` hands
        on every byte before the failure, so the records before it are all whole)."""
        if self.failure is not None:
            return b""
        try:
            data = self._read(READ_BYTES)
        except (EOFError, OSError) as err:
            why = f"the compressed input is truncated or corrupt ({err})"
            self.failure = InputError(why, filename=self.name)
            return b""
        return bytes(data)

    def _checked(self, out: bytes, final: bool = False) -> bytes:
        """``out`` (whole records; at the end of the input, the last may lack its line
        break) with those longer than the limit replaced by markers (only possible here
        when the limit is smaller than a read)."""
        if out:
            if len(out) > self.limit:
                out = self._replace_long(out, final)
            out = self._replace_ragged_bytes(out)
            self.header_done = True
        return out

    def _replace_ragged_bytes(self, out: bytes) -> bytes:
        """A row with the wrong number of fields that holds bytes that are not UTF-8 is
        replaced by a marker: pyarrow fails on it before its handler of such rows is called.
        (A row of the right width with such bytes is read, and named by the reader as an
        error of the input.)"""
        try:
            out.decode("utf-8")
            return out
        except UnicodeDecodeError:
            self.utf8 = False
        arr = np.frombuffer(out, dtype=np.uint8)
        ends = record_ends(arr, True)
        if not len(ends) or ends[-1] != len(out):
            ends = np.append(ends, len(out))
        starts = np.concatenate(([0], ends[:-1]))
        pieces, at = [], 0
        for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
            record = out[start:end]
            if start == 0 and not self.header_done:  # the header (named by the reader if bad)
                self.width = _fields(record)
                continue
            if self.width is None or _is_utf8(record):
                continue
            fields = _fields(record)
            if fields != self.width:
                pieces += [out[at:start], self._marker(f"{fields} fields where {self.width} are expected")]
                at = end
        pieces.append(out[at:])
        return b"".join(pieces)

    def _replace_long(self, out: bytes, final: bool) -> bytes:
        arr = np.frombuffer(out, dtype=np.uint8)
        ends = record_ends(arr, True)
        if final and (not len(ends) or ends[-1] != len(out)):
            if len(out) - (int(ends[-1]) if len(ends) else 0) > self.limit:
                end, _, open_quote = record_end(arr[int(ends[-1]) if len(ends) else 0 :], _COMMA, False, True)
                if open_quote and end < 0:
                    raise InputError(
                        "a quoted field is not closed (at the end of the input)", filename=self.name
                    )
            ends = np.append(ends, len(out))
        starts = np.concatenate(([0], ends[:-1]))
        long = np.flatnonzero(ends - starts > self.limit)
        if not len(long):
            return out
        pieces, at = [], 0
        for i in long:
            start, end = int(starts[i]), int(ends[i])
            pieces += [out[at:start], self._long(end - start, header=start == 0 and not self.header_done)]
            at = end
        pieces.append(out[at:])
        return b"".join(pieces)

    def _read_past(self) -> bytes:
        """The held-back record is longer than the limit: read past it, a block at a time,
        without keeping it; a marker takes its place."""
        header = not self.header_done
        self.header_done = True
        arr = np.frombuffer(self.tail, dtype=np.uint8)
        self.tail = b""
        size, before, inside = 0, _COMMA, False
        while True:
            end, judged, inside_after = record_end(arr, before, inside, self.eof)
            if end >= 0:
                size += end
                self.tail = arr[end:].tobytes()
                break
            size += judged
            if self.eof:
                if self.failure is not None:  # the input was cut inside this record: no row
                    return b""
                if inside_after:
                    raise InputError(
                        "a quoted field is not closed (at the end of the input)", filename=self.name
                    )
                break
            if judged:
                before = int(arr[judged - 1])
            inside = inside_after
            more = self._raw_read()
            if not more:
                self.eof = True
            arr = np.concatenate((arr[judged:], np.frombuffer(more, dtype=np.uint8)))
        return self._long(size, header)

    def _long(self, size: int, header: bool) -> bytes:
        if header:
            raise InputError(
                f"the header row is {size} bytes long (the limit is {self.limit} bytes,"
                f" see {flag('max-row-bytes')})",
                filename=self.name,
            )
        return self._marker(
            f"the row is {size} bytes long (the limit is {self.limit} bytes, see {flag('max-row-bytes')})"
        )

    def _marker(self, why: str) -> bytes:
        """A two-field row that stands for a row set apart as bad, for ``why``."""
        self.set_apart.append(why)
        return f"{MARKER}{len(self.set_apart) - 1},\x00\n".encode()

    def marker_message(self, text: str) -> str | None:
        """The bad-row message for a marker row's text (None: not a marker)."""
        if not text.startswith(MARKER):
            return None
        return self.set_apart[int(text[len(MARKER) :].split(",", 1)[0])]


def _fields(record: bytes) -> int:
    """How many fields a record has (its bytes read as UTF-8, bad ones replaced)."""
    return len(next(csv.reader(io.StringIO(record.decode("utf-8", "replace"))), []))


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def last_record_end(buf: bytes, final: bool, exact: bool = True) -> int:
    """Where the last whole record of ``buf`` (which starts a record) ends, after its line
    break; 0 when none does. Not ``exact``: balanced quotes before the last line break are
    taken to mean that no quoted field is open there (one count; see the module)."""
    # a CR ends a line unless an LF follows: one at the very end waits for the next byte
    last_cr = buf.rfind(b"\r", 0, len(buf) if final else len(buf) - 1)
    end = max(buf.rfind(b"\n"), last_cr) + 1
    if end == 0 or b'"' not in buf or (not exact and buf.count(b'"', 0, end) % 2 == 0):
        return end
    ends = record_ends(np.frombuffer(buf, dtype=np.uint8), final)
    return int(ends[-1]) if len(ends) else 0


def _toggles(arr: np.ndarray, head: np.ndarray, before: int) -> np.ndarray:
    """Positions in ``head`` (a prefix of ``arr``) of the quotes that open or close a field."""
    size = len(arr)
    quotes = np.flatnonzero(head == _QUOTE)
    if not len(quotes):
        return quotes
    prev = np.where(quotes > 0, arr[np.maximum(quotes - 1, 0)], before)
    after = np.where(quotes < size - 1, arr[np.minimum(quotes + 1, size - 1)], _COMMA)
    return quotes[_EDGE[prev] | _EDGE[after]]


def _line_breaks(arr: np.ndarray, head: np.ndarray) -> np.ndarray:
    """Positions in ``head`` of the line breaks: LF, and a CR not followed by LF."""
    size = len(arr)
    breaks = np.flatnonzero(head == _LF)
    returns = np.flatnonzero(head == _CR)
    if len(returns):
        follow = np.where(returns < size - 1, arr[np.minimum(returns + 1, size - 1)], 0)
        breaks = np.union1d(breaks, returns[follow != _LF])
    return breaks


def record_ends(arr: np.ndarray, final: bool) -> np.ndarray:
    """Where the whole records of ``arr`` (which starts a record) end, after their line
    breaks (with ``final``, the input ends with ``arr``: whether a last CR ends a line, or a
    quote closes a field, no longer depends on a byte after it; a last LF needs nothing after
    it)."""
    judged = len(arr) if final or (len(arr) and arr[-1] == _LF) else len(arr) - 1
    if judged <= 0:
        return np.zeros(0, dtype=np.int64)
    head = arr[:judged]
    toggles = _toggles(arr, head, _COMMA)
    breaks = _line_breaks(arr, head)
    ends: np.ndarray = breaks[np.searchsorted(toggles, breaks) % 2 == 0] + 1
    return ends


def record_end(arr: np.ndarray, before: int, inside: bool, final: bool) -> tuple[int, int, bool]:
    """Where a record that began before ``arr`` ends: the index after its line break,
    or -1 when it goes on. ``before`` is the byte before ``arr`` and ``inside`` whether a
    quoted field is open there. Also returns how many bytes were judged (all but the last
    unless ``final``: whether a quote there opens or closes a field, or a CR ends a line,
    depends on the byte after it; a last LF needs nothing after it) and whether a quoted
    field is open after them."""
    judged = len(arr) if final or (len(arr) and arr[-1] == _LF) else len(arr) - 1
    if judged <= 0:
        return -1, 0, inside
    head = arr[:judged]
    toggles = _toggles(arr, head, before)
    breaks = _line_breaks(arr, head)
    hits = breaks[(np.searchsorted(toggles, breaks) + int(inside)) % 2 == 0]
    end = int(hits[0]) + 1 if len(hits) else -1
    return end, judged, inside != bool(len(toggles) % 2)
