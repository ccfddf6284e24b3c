"""The one error hierarchy of cepcli, and the caret snippet that points into a query.

``CepError`` is the only exception type the library raises on purpose; the CLI
translates it to a message and an exit code in one place (``cli.main``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

# An option a message names, as ``flag`` marks it: each face says it its own way (``said``).
_OPEN, _CLOSE = "\u27e8", "\u27e9"
_FLAG = re.compile(_OPEN + r"--([a-z][a-z-]*)(?: ([^" + _CLOSE + r"]*))?" + _CLOSE)
# The options of ``cepcli run`` that no ``find`` takes as a keyword (said as flags to a
# Python caller too); every other flag is the keyword of its name with ``_`` for ``-``, but
# the switches below. (``partitions`` is ``cepcli.spark.find``'s keyword.)
_FLAGS_ONLY = ("input", "output", "format", "spark", "master", "table", "verbose", "quiet")
_SWITCHES = {"sort": "sort=True", "no-header": "header=False"}


def flag(name: str, value: object = None) -> str:
    """An option named in a message (``flag("max-delay", "5min")``): ``--max-delay 5min`` on
    the command line, ``max_delay='5min'`` to a Python caller (``said``). ``value`` is as the
    command line writes it (a ``--schema``'s ``x:float,y:str``)."""
    return f"{_OPEN}--{name}{'' if value is None else ' ' + str(value)}{_CLOSE}"


def said(message: str, face: str = "cli") -> str:
    """``message`` with each option ``flag`` marked said as ``face`` says it: ``cli`` (the
    flag, and its value), or ``python`` (the keyword argument of ``find``, its value in
    Python: ``schema={'x': 'float'}``, ``time_unit='s'``, ``sort=True``; an option that is no
    keyword stays the flag)."""
    if face == "cli":
        return _FLAG.sub(lambda found: found.group(0)[1:-1], message)
    return _FLAG.sub(_keyword, message)


def _keyword(found: re.Match[str]) -> str:
    name, value = found.group(1), found.group(2)
    if name in _FLAGS_ONLY:
        return found.group(0)[1:-1]
    if value is None:
        return _SWITCHES.get(name, name.replace("-", "_") + "=")
    value = value.strip("'")
    if name == "schema" and ":" in value:
        pairs = (pair.rpartition(":") for pair in value.rstrip(",.").split(","))
        return "schema={" + ", ".join(f"{column!r}: {kind!r}" for column, _, kind in pairs) + "}"
    return f"{name.replace('-', '_')}={int(value) if value.isdigit() else value!r}"


@dataclass(frozen=True, slots=True)
class Span:
    """A 1-based region of query text: where an AST node came from."""

    line: int
    col: int
    end_line: int = 0
    end_col: int = 0


NO_SPAN = Span(0, 0)


class CepError(Exception):
    """Base of every error cepcli reports to a user. Its message names options with
    ``flag``: ``str`` and ``render`` say them as the command line does (``as_python``
    re-raises it said as ``find``'s keywords)."""

    exit_code = 1

    def render(self) -> str:
        return str(self)

    def __str__(self) -> str:
        return said(super().__str__())


@dataclass
class QueryError(CepError):
    """A syntax or semantic error in a query: rendered as ``file:line:col: message``."""

    message: str
    span: Span = field(default_factory=lambda: NO_SPAN)
    source: str = ""
    filename: str = "<query>"

    exit_code = 2

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def located(self, source: str, filename: str) -> QueryError:
        """The same error, attached to the query text it points into."""
        return QueryError(self.message, self.span, source, filename)

    def render(self) -> str:
        return caret_snippet(self.filename, self.source, self.span, said(self.message))

    def __str__(self) -> str:
        return self.render()


class LimitError(CepError):
    """A run went past one of its limits (``--max-instances``): memory would grow unbounded."""

    exit_code = 1


@dataclass
class OutputError(CepError):
    """A file cepcli writes cannot be written (checked before the work, or failing during it)."""

    path: str
    reason: str

    exit_code = 1

    def __post_init__(self) -> None:
        super().__init__(self.reason)

    def render(self) -> str:
        return f"{self.path}: cannot write: {said(self.reason)}"

    def __str__(self) -> str:
        return self.render()


@dataclass
class InputError(CepError):
    """Bad input data: names the row (0-based data row id) or the file."""

    message: str
    row: int | None = None
    filename: str = ""

    exit_code = 1

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def render(self) -> str:
        where = self.filename or "<input>"
        if self.row is not None:
            where += f": row {self.row}"
        return f"{where}: {said(self.message)}"

    def __str__(self) -> str:
        return self.render()


class UsageError(CepError):
    """A bad combination of command-line options (exit code 2)."""

    exit_code = 2


class EngineError(CepError):
    """An engine cannot run this query (not built yet, or a limit was hit)."""

    exit_code = 2


def caret_snippet(filename: str, source: str, span: Span, message: str) -> str:
    """``file:line:col: message``, then the offending line with a caret under the spot."""
    if span.line <= 0:
        return f"{filename}: {message}"
    head = f"{filename}:{span.line}:{span.col}: {message}"
    # Lines as the parser counts them: only "\n" ends one (not "\r", "\f", U+2028, ...).
    lines = source.split("\n")
    if not 0 < span.line <= len(lines):
        return head
    line = lines[span.line - 1].removesuffix("\r").expandtabs(1)
    # One column per character: anything unprintable shows as a space.
    text = "".join(c if c.isprintable() else " " for c in line)
    width = 1
    if span.end_line == span.line and span.end_col > span.col:
        width = span.end_col - span.col
    at = span.col - 1
    if len(text) > SNIPPET:  # a long line (a generated query): the part around the spot
        start = max(0, min(at - SNIPPET // 3, len(text) - SNIPPET))
        before, after = ("..." if start else ""), ("..." if start + SNIPPET < len(text) else "")
        text = before + text[start : start + SNIPPET] + after
        at = at - start + len(before)
        width = max(1, min(width, len(text) - len(after) - at))
    return f"{head}\n    {text}\n    {' ' * at}{'^' * width}"


SNIPPET = 160  # characters of a query line shown under an error, at most


class EngineDisagreement(CepError):
    """Engines returned different matches for the same query and input (exit code 1)."""

    exit_code = 1


@contextmanager
def as_python() -> Iterator[None]:
    """Errors raised within name options as ``find``'s keyword arguments (``said(...,
    "python")``) instead of the command line's flags."""
    try:
        yield
    except QueryError as err:
        raise replace(err, message=said(err.message, "python")) from None
    except InputError as err:
        raise replace(err, message=said(err.message, "python")) from None
    except OutputError as err:
        raise replace(err, reason=said(err.reason, "python")) from None
    except CepError as err:
        again = type(err).__new__(type(err))
        again.__dict__.update(err.__dict__)
        again.args = (said(Exception.__str__(err), "python"),)
        raise again from None


def closest(name: str, choices: Iterable[str]) -> str | None:
    """The one of ``choices`` a misspelled ``name`` is closest to (difflib's ratio), if one
    is close: what a "did you mean" names."""
    import difflib

    close = difflib.get_close_matches(name, list(choices), n=1)
    return close[0] if close else None


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """``"did you mean 'price'? "`` for the closest of ``choices``, or nothing."""
    near = closest(name, choices)
    return f"did you mean {near!r}? " if near is not None else ""


def no_such_keyword(function: object, unknown: dict[str, object]) -> UsageError:
    """The error of a call that gave ``function`` keyword arguments it does not take: the
    first, and the closest one it takes ("did you mean type_col=?")."""
    import inspect

    taken = [
        name
        for name, parameter in inspect.signature(function).parameters.items()  # type: ignore[arg-type]
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY
    ]
    name = next(iter(unknown))
    near = closest(name, taken)
    hint = f"; did you mean {near}=?" if near is not None else f"; it takes {', '.join(taken)}"
    called = getattr(function, "__module__", "cepcli").replace(".api", "").replace(".frames", "")
    return UsageError(
        f"{called}.{getattr(function, '__name__', 'find')}() has no keyword argument {name!r}{hint}"
    )
