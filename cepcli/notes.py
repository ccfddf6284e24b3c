"""What one run says to its user beside the matches: warnings, each said once, kept for the
report (``Stats.warnings``, ``--stats-json``) and told as they come (the command line prints
them at once)."""

from __future__ import annotations

from collections.abc import Callable


class Notes:
    """The warnings of one run: ``said`` keeps them (in order, each once), ``tell`` hears
    each when it is first said."""

    __slots__ = ("said", "tell")

    def __init__(self, said: list[str] | None = None, tell: Callable[[str], None] | None = None) -> None:
        self.said = said if said is not None else []
        self.tell = tell

    def warn(self, message: str) -> None:
        """Say something once (a second warning of the same text is dropped)."""
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
