"""The one error hierarchy of cepcli, and the caret snippet that points into a query.

``CepError`` is the only exception type the library raises on purpose; the CLI
translates it to a message and an exit code in one place (``cli.main``).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Span:
    """A 1-based region of query text: where an AST node came from."""

    line: int
    col: int
    end_line: int = 0
    end_col: int = 0


NO_SPAN = Span(0, 0)


class CepError(Exception):
    """Base of every error cepcli reports to a user."""

    exit_code = 1

    def render(self) -> str:
        return str(self)


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
        return caret_snippet(self.filename, self.source, self.span, self.message)

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
        return f"{self.path}: cannot write: {self.reason}"

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
        return f"{where}: {self.message}"

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
