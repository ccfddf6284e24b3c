"""Queries parsed before, kept: the parse of a query text is saved in the cache
(``cache_home()/queries``) and loaded the next time the same text is run by the same query
code, so that lark and the parser are not even imported then (a noticeable part of every
command's start). Only a query that parses is kept, under a name that holds the hash of
its text and of this package's code (an edited grammar or AST makes new names); a damaged
or unreadable entry is passed over and the text parsed again. Every entry is a cache:
deleting it costs only a parse."""

from __future__ import annotations

import contextlib
import os
import pickle
import sys
from functools import cache
from pathlib import Path

try:  # CPython's own BLAKE2, without OpenSSL's hashlib (which every start would pay for)
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - a Python built without it
    from hashlib import blake2b

from cepcli.cache import cache_home
from cepcli.query import ast as a

KEPT = 1_000  # entries at most: past it, the older half is removed when one is added


def parse(text: str, filename: str = "<query>") -> a.Query:
    """``parser.parse_query(text, filename)``, loaded from the cache when this text was
    parsed before (errors are never kept: a text that does not parse is parsed, and
    reported, each time)."""
    path = _entry(text)
    with contextlib.suppress(Exception):  # none there, damaged, or of another Python
        kept = pickle.loads(path.read_bytes())
        if isinstance(kept, a.Query):
            return kept
    from cepcli.query.parser import parse_query

    query = parse_query(text, filename)
    _keep(path, query)
    return query


@cache
def _code() -> str:
    """The hash of what a parse depends on: this package's files (the grammar, the parser,
    the AST, the checks) and Python's version."""
    digest = blake2b(f"{sys.version_info[:3]}\n{pickle.HIGHEST_PROTOCOL}".encode())
    here = Path(__file__).parent
    for name in sorted(p.name for p in here.iterdir() if p.suffix in (".py", ".lark")):
        digest.update(name.encode() + b"\0" + (here / name).read_bytes())
    return digest.hexdigest()


def _entry(text: str) -> Path:
    key = blake2b(f"{_code()}\n{text}".encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return cache_home() / "queries" / f"{key}.pickle"


def _keep(path: Path, query: a.Query) -> None:
    """``query`` saved at ``path``, written whole before it takes that name; nothing if the
    cache cannot be written (a read-only home) or the query cannot be pickled."""
    with contextlib.suppress(OSError, pickle.PicklingError, RecursionError, TypeError, AttributeError):
        path.parent.mkdir(parents=True, exist_ok=True)
        _prune(path.parent)
        part = path.with_name(f"{path.name}.{os.getpid()}.part")
        try:
            part.write_bytes(pickle.dumps(query, protocol=pickle.HIGHEST_PROTOCOL))
            os.replace(part, path)
        finally:
            part.unlink(missing_ok=True)


def _prune(directory: Path) -> None:
    """At most ``KEPT`` entries: past it, the older half goes (by the time each was used)."""
    entries = list(directory.glob("*.pickle"))
    if len(entries) < KEPT:
        return
    entries.sort(key=lambda p: p.stat().st_mtime)
    for old in entries[: len(entries) // 2]:
        old.unlink(missing_ok=True)
