"""Queries prepared to run: their texts parsed, their input options and inputs decided.

This is the one preparation of every face: ``cepcli run``/``check``/``explain``/``bench``,
``cepcli.find`` and ``cepcli.spark.find`` each hand ``prepare`` the queries' texts (one
query is a list of one), the options they were given and which of them were given; it
returns the compiled queries and the one set of input options they share. The rules:

* An input option given (on the command line, or as a keyword) wins; else the query's
  ``FROM ... WITH (...)``; else the default.
* Each query's input is ``--input`` (or the data given), else its own ``FROM`` (relative
  to its file), else standard input. Queries over different inputs are refused in one line
  naming two of them: one run reads one input once.
* When the matches carry their query's name (``named``: several queries, a directory, a
  list or a dict), no query may have a variable named ``query``: that key is the name's.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from cepcli.engines import DEFAULT_ENGINE, compile_pattern
from cepcli.errors import QueryError, UsageError
from cepcli.plan.pattern import Pattern
from cepcli.query.ast import Query
from cepcli.runtime.options import MAX_SUBSETS
from cepcli.sources.options import InputOptions, from_text

QUERY_KEY = "query"  # the key of a match that says its query's name (jsonl, dicts, a column)


@dataclass(frozen=True, slots=True)
class RunOptions:
    engine: str = DEFAULT_ENGINE
    order: tuple[str, ...] | None = None
    max_matches: int | None = None
    stats_every: int = 0
    max_instances: int | None = None  # stop with an error past this many live instances
    max_subsets: int = MAX_SUBSETS  # warn when one Kleene candidate set allows more subsets


@dataclass(frozen=True, slots=True)
class Compiled:
    """Query text, parsed and normalised (no input opened yet). ``path`` is where the text
    came from, as messages name it (a file, ``<-e>``, ``<q1>``)."""

    path: str
    text: str
    query: Query
    pattern: Pattern


@dataclass(frozen=True, slots=True)
class QueryText:
    """One query as a face receives it: its name (the key its matches carry when named),
    its text, and where the text came from (a file's path, or ``<-e>``)."""

    name: str
    text: str
    path: str


@dataclass(frozen=True, slots=True)
class Prepared:
    """Queries ready to run over one input: by name, in the order given."""

    queries: dict[str, Compiled]
    options: InputOptions
    named: bool  # do the matches carry their query's name?

    @property
    def only(self) -> Compiled:
        """The first query (the only one, for the commands that take one)."""
        return next(iter(self.queries.values()))


def read_query(path: str) -> str:
    """The text of a query file."""
    try:
        return Path(path).read_text(encoding="utf-8-sig")  # a BOM (Windows editors) is not part of it
    except OSError as err:
        hint = ""
        if "pattern" in path.lower() and " " in path.strip():  # the query's text, given as a file
            text = path.strip() if len(path.strip()) <= 60 else path.strip()[:60] + "..."
            hint = f"; to give the query's text, use -e: cepcli run -e {text!r}"
        raise UsageError(f"{path[:80]}: cannot read the query file: {err.strerror}{hint}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: the query file is not UTF-8 text") from None


def compile_text(
    text: str, name: str = "<query>", time_unit: int = 10**9, parsed: Query | None = None
) -> Compiled:
    query, pattern = compile_pattern(text, name, time_unit, parsed)
    return Compiled(name, text, query, pattern)


def compile_file(query_path: str, time_unit: int = 10**9) -> Compiled:
    return compile_text(read_query(query_path), query_path, time_unit)


def with_query_options(
    options: InputOptions, parsed: Query, text: str, name: str = "<query>", given: Collection[str] = ()
) -> InputOptions:
    """``options`` with the input options of the query's ``FROM ... WITH (...)`` applied,
    except those named in ``given`` (set on the command line or in the call: they win).
    ``parsed`` is ``text`` parsed (errors point into ``text``); run before compiling it:
    ``time_unit`` decides what a bare WITHIN number means."""
    changes: dict[str, object] = {}
    for option in parsed.options:
        if option.name in given:
            continue
        try:
            changes[option.name] = (
                from_text(option.name, option.value) if isinstance(option.value, str) else option.value
            )
        except UsageError as err:  # a schema that is not col:kind pairs
            message = str(err).replace("--schema", "the input option schema")
            raise QueryError(message, option.span).located(text, name) from None
    return replace(options, **changes) if changes else options  # type: ignore[arg-type]


def input_path(compiled: Compiled, given: str | None) -> str:
    """``--input`` wins, then the query's FROM (relative to the query file), then stdin."""
    if given is not None:
        return given
    if compiled.query.source == "-":
        return "-"  # FROM '-': standard input (the query may still say how to read it)
    if compiled.query.source is not None:
        source = Path(compiled.query.source)
        return _tidy(str(source if source.is_absolute() else Path(compiled.path).parent / source))
    return "-"


def _tidy(path: str) -> str:
    """A path joined from the query file's folder and its FROM, without the ``..`` of the
    joining (``patterns/../data.csv`` is ``data.csv``, as messages name it): resolved as
    the system does (through links), then relative to the working folder when it lies
    under it."""
    if ".." not in Path(path).parts:
        return path
    resolved = os.path.realpath(path)
    relative = os.path.relpath(resolved)
    return resolved if relative.startswith("..") else relative


def prepare(
    texts: Sequence[QueryText],
    base: InputOptions,
    given: Collection[str],
    has_data: bool = False,
    named: bool | None = None,
) -> Prepared:
    """``texts`` parsed and compiled, each with its ``WITH`` options over ``base`` (but for
    the fields in ``given``), and the input options they agree on; unless ``has_data`` (a
    DataFrame or a table is the input), each query's input path resolved (see the module).
    ``named``: the matches carry their query's name (default: several queries)."""
    from cepcli.query.reuse import parse

    if not texts:
        raise UsageError("no query: give a QUERY file, a directory of them, or -e TEXT")
    names = [t.name for t in texts]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UsageError(f"two query files are named {twice[0]!r}: the matches say their query by name")
    named = len(texts) > 1 if named is None else named
    queries: dict[str, Compiled] = {}
    options: list[InputOptions] = []
    for one in texts:
        parsed = parse(one.text, one.path)  # once: the input options, then the pattern
        mine = with_query_options(base, parsed, one.text, one.path, given)
        mine.check()
        compiled = compile_text(one.text, one.path, mine.unit, parsed)
        if named:
            _check_query_key(compiled)
        if not has_data:
            mine = replace(mine, path=input_path(compiled, base.path))
        queries[one.name] = compiled
        options.append(mine)
    return Prepared(queries, agreed(names, options), named)


def agreed(names: Sequence[str], options: Sequence[InputOptions]) -> InputOptions:
    """The input options every query gives (each the command line's with its ``WITH``);
    where two differ, one line naming the option and the queries."""
    first = options[0]
    for name, other in zip(names[1:], options[1:], strict=True):
        if _where(first.path) != _where(other.path):
            raise UsageError(
                f"the queries read different inputs: {names[0]} reads {first.path}, {name} reads"
                f" {other.path}; one run reads one input: run them separately, or give --input for all"
            )
        for field in first.__dataclass_fields__:
            if field != "path" and getattr(first, field) != getattr(other, field):
                raise UsageError(
                    f"the queries must read the input alike: {names[0]} and {name} differ in"
                    f" {field} ({getattr(first, field)!r} and {getattr(other, field)!r}); give it on"
                    " the command line to set it for all"
                )
    return first


def _where(path: str | None) -> str | None:
    """A path as the same file whichever way it is written (``a/../b.csv``, ``./b.csv``)."""
    if path is None or path == "-" or "://" in path:
        return path
    return os.path.normcase(os.path.abspath(path))


def _check_query_key(compiled: Compiled) -> None:
    """A variable named ``query`` would clash with the name key of a named run's matches."""
    for variable in compiled.pattern.variables:
        if variable.name == QUERY_KEY:
            raise UsageError(
                f"{compiled.path}: a variable is named {QUERY_KEY!r}, the key that says each match's"
                " query when several queries run: rename the variable"
            )


def query_files(paths: Sequence[str]) -> tuple[list[str], bool]:
    """The query files of QUERY... arguments: a directory gives its ``.sase`` files in name
    order (hidden ones, such as an editor's ``.#q.sase``, left out); and whether a directory
    was among them (its matches then carry their query's name, however many it holds)."""
    files: list[str] = []
    directory = False
    for path in paths:
        if Path(path).is_dir():
            directory = True
            found = sorted(str(p) for p in Path(path).glob("*.sase") if not p.name.startswith("."))
            if not found:
                raise UsageError(f"{path}: a directory with no .sase query file")
            files += found
        else:
            files.append(path)
    return files, directory


__all__ = [
    "QUERY_KEY",
    "Compiled",
    "Prepared",
    "QueryText",
    "RunOptions",
    "agreed",
    "compile_file",
    "compile_text",
    "input_path",
    "prepare",
    "query_files",
    "read_query",
    "with_query_options",
]
