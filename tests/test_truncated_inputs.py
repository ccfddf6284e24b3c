"""A compressed input cut short (a download or a copy that stopped): the matches of the
whole rows before the cut, then one line naming the file, exit 1, from a file as from a
pipe. The row the cut went through is no row at all (not a bad row of its own), and no
whole row before it is lost (Python's decompressors drop what a failing read had
gathered: ``raw._Salvaged`` hands it on)."""

from __future__ import annotations

import bz2
import gzip
import io
import json
import random
import subprocess
import sys
import zlib
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

from cepcli.cli import cli
from cepcli.errors import InputError
from cepcli.sources.kinds import SAMPLE_ROWS
from cepcli.sources.raw import decompressed
from cepcli.sources.records import RecordStream

ROWS = 150_000  # the cut falls after the sample of kinds (see test_a_cut_within_the_sample)
QUERY = "PATTERN SEQ(A a, B b, C c) WHERE a.x < c.x WITHIN 3"
TRUNCATED = "the compressed input is truncated or corrupt ("


def _type(i: int) -> str:
    """A, B and C every 60 rows (a match each), D (no variable's) between them."""
    return "ABC"[i % 3] if i % 60 < 3 else "D"


def _csv(rows: int) -> bytes:
    return ("ts,type,x\n" + "".join(f"{i},{_type(i)},{i % 97}\n" for i in range(rows))).encode()


def _jsonl(rows: int) -> bytes:
    lines = (json.dumps({"ts": i, "type": _type(i), "x": i % 97}) for i in range(rows))
    return "".join(f"{line}\n" for line in lines).encode()


def _compressed(data: bytes, how: str) -> bytes:
    if how == "gz":
        return gzip.compress(data)
    if how == "bz2":
        return bz2.compress(data)
    sink = pa.BufferOutputStream()
    with pa.CompressedOutputStream(sink, {"zst": "zstd", "lz4": "lz4"}[how]) as stream:
        stream.write(data)
    return bytes(sink.getvalue().to_pybytes())


def _readable(cut: bytes, how: str) -> bytes:
    """Every byte a decompressor gives from ``cut`` before it fails."""
    if how == "gz":
        return zlib.decompressobj(wbits=31).decompress(cut)
    if how == "bz2":
        return bz2.BZ2Decompressor().decompress(cut)
    stream = pa.CompressedInputStream(pa.BufferReader(cut), {"zst": "zstd", "lz4": "lz4"}[how])
    pieces = []
    try:
        while piece := stream.read(4096):
            pieces.append(piece)
    except OSError:
        pass
    return b"".join(pieces)


def _cut(data: bytes, how: str) -> tuple[bytes, bytes]:
    """``data`` compressed and cut three fifths in, inside a row; and its whole rows before
    the cut, uncompressed."""
    packed = _compressed(data, how)
    cut = packed[: len(packed) * 3 // 5]
    while _readable(cut, how).endswith(b"\n"):
        cut = cut[:-1]
    readable = _readable(cut, how)
    return cut, readable[: readable.rfind(b"\n") + 1]


def _pipe(args: list[str], stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    command = [sys.executable, "-m", "cepcli", "run", "-e", QUERY, "-i", "-", *args]
    return subprocess.run(command, input=stdin, capture_output=True, timeout=120)


@pytest.mark.parametrize(
    ("how", "fmt"), [("gz", "csv"), ("bz2", "csv"), ("zst", "csv"), ("lz4", "csv"), ("gz", "jsonl")]
)
def test_the_rows_before_the_cut_are_evaluated_from_a_file_and_a_pipe(
    tmp_path: Path, how: str, fmt: str
) -> None:
    cut, whole = _cut(_csv(ROWS) if fmt == "csv" else _jsonl(ROWS), how)
    assert whole.count(b"\n") > SAMPLE_ROWS + 1  # the cut is after the sample
    prefix, path = tmp_path / f"prefix.{fmt}", tmp_path / f"cut.{fmt}.{how}"
    prefix.write_bytes(whole)
    path.write_bytes(cut)
    args = ["--format", "jsonl", "-q"]
    expected = CliRunner().invoke(cli, ["run", "-e", QUERY, "-i", str(prefix), *args])
    assert expected.exit_code == 0, expected.stderr
    assert expected.stdout.count("\n") > 1_000

    from_file = CliRunner().invoke(cli, ["run", "-e", QUERY, "-i", str(path), *args])
    assert from_file.exit_code == 1
    assert from_file.stderr.startswith(f"cepcli: error: {path}: {TRUNCATED}")
    assert len(from_file.stderr.splitlines()) == 1
    assert from_file.stdout == expected.stdout

    from_pipe = _pipe([*args, "--input-format", fmt], cut)
    assert from_pipe.returncode == 1
    assert from_pipe.stderr.decode().startswith(f"cepcli: error: <stdin>: {TRUNCATED}")
    assert len(from_pipe.stderr.decode().splitlines()) == 1
    assert from_pipe.stdout.decode() == expected.stdout


def _corrupt(data: bytes) -> bytes:
    """``data`` gzipped, with two bytes in its second half changed so that zlib refuses it
    (``zlib.error``, not an ``OSError``): the first such place from a fixed seed."""
    packed = gzip.compress(data, mtime=0)
    places = random.Random(5)
    while True:
        bad = bytearray(packed)
        at = places.randrange(len(bad) // 2, len(bad) - 100)
        bad[at] ^= 0xFF
        bad[at + 1] ^= 0x55
        try:
            gzip.decompress(bytes(bad))
        except zlib.error:
            return bytes(bad)
        except (OSError, EOFError):
            pass


def test_corrupt_gzip_data_is_one_line_too(tmp_path: Path) -> None:
    """Not an internal error: the same line as a cut, after the matches of the rows that
    were read (how many depends on where zlib notices, so they are not compared)."""
    bad = _corrupt(_csv(ROWS))
    path = tmp_path / "bad.csv.gz"
    path.write_bytes(bad)
    from_file = CliRunner().invoke(cli, ["run", "-e", QUERY, "-i", str(path), "--format", "jsonl", "-q"])
    from_pipe = _pipe(["--format", "jsonl", "-q"], bad)
    for code, err, name in (
        (from_file.exit_code, from_file.stderr, path),
        (from_pipe.returncode, from_pipe.stderr.decode(), "<stdin>"),
    ):
        assert code == 1
        assert err.startswith(f"cepcli: error: {name}: {TRUNCATED}Error -3 while decompressing data")
        assert len(err.splitlines()) == 1


@pytest.mark.parametrize("streaming", [False, True], ids=["file", "pipe"])
@pytest.mark.parametrize("how", ["gz", "bz2", "zst", "lz4"])
def test_the_record_stream_hands_on_every_whole_record_then_fails(how: str, streaming: bool) -> None:
    """At the depth of the fix: the records handed to pyarrow are exactly the whole rows
    before the cut (the header too), and the failure waits in ``failure``."""
    cut, whole = _cut(_csv(ROWS), how)
    assert whole.count(b"\n") > 10_000
    records = RecordStream(decompressed(io.BytesIO(cut), f"x.csv.{how}", streaming), "x", 1 << 24, streaming)
    read = b"".join(iter(records.records, b""))
    assert read == whole
    assert isinstance(records.failure, InputError)


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
@pytest.mark.parametrize("case", ["within-the-sample", "sort"])
def test_a_cut_within_the_sample_or_with_sort(tmp_path: Path, case: str, fmt: str) -> None:
    """The sample of kinds is read first: a cut inside it still gives the matches of the
    whole rows before it; with ``--sort``, those rows sorted, then the error."""
    rows = 3_000 if case == "within-the-sample" else ROWS
    cut, whole = _cut(_csv(rows) if fmt == "csv" else _jsonl(rows), "gz")
    prefix, path = tmp_path / f"prefix.{fmt}", tmp_path / f"cut.{fmt}.gz"
    prefix.write_bytes(whole)
    path.write_bytes(cut)
    args = ["--format", "jsonl", "-q", *(["--sort"] if case == "sort" else [])]
    expected = CliRunner().invoke(cli, ["run", "-e", QUERY, "-i", str(prefix), *args])
    from_file = CliRunner().invoke(cli, ["run", "-e", QUERY, "-i", str(path), *args])
    assert from_file.exit_code == 1 and TRUNCATED in from_file.stderr
    assert expected.stdout and from_file.stdout == expected.stdout
