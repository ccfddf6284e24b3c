"""What one run says to its user beside the matches: warnings, each said once, kept for the
report (``Stats.warnings``, ``--stats-json``) and told as they come (the command line prints
them at once)."""

from __future__ import annotations

from collections.abc import Callable

from cepcli.errors import said


class Notes:
    """The warnings of one run: ``said`` keeps them (in order, each once), ``tell`` hears
    each when it is first said."""

    __slots__ = ("said", "tell", "held")

    def __init__(self, said: list[str] | None = None, tell: Callable[[str], None] | None = None) -> None:
        self.said = said if said is not None else []
        self.tell = tell
        self.held: dict[str, tuple[int, str]] = {}  # ``largest``: said by ``flush``

    def largest(self, key: str, size: int, message: str) -> None:
        """A warning said once at the end of the run (``flush``), for the largest ``size``
        of those given under ``key`` (a Kleene candidate set too large: in one run, many)."""
        if key not in self.held or size > self.held[key][0]:
            self.held[key] = (size, message)

    def flush(self) -> None:
        """Say the warnings ``largest`` held."""
        for _, message in sorted(self.held.values(), key=lambda held: held[1]):
            self.warn(message)
        self.held.clear()

    def warn(self, message: str) -> None:
        """Say something once (a second warning of the same text is dropped); the options it
        names (``flag``) as the command line says them."""
        message = said(message)
        if message in self.said:
            return
        self.said.append(message)
        if self.tell is not None:
            self.tell(message)

    def bad_rows(self, count: int, first: tuple[int, str] | None) -> None:
        """The one warning about the bad rows ``--on-bad-row skip`` left out."""
        if count:
            assert first is not None
            row, why = first
            self.warn(f"skipped {count:,} bad row{'s' if count != 1 else ''} (first: row {row}: {why})")
