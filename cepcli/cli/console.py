"""What the commands print beside their output: the stderr console, warnings, errors,
the progress bar, and a quiet stop when the reader of standard output goes away."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from rich.console import Console

    from cepcli.runtime.stats import Stats


class Stderr:
    """Standard error's rich console, made when first printed to: a quiet run that writes
    jsonl or csv imports no rich."""

    def __init__(self) -> None:
        self._console: Console | None = None

    @property
    def console(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(stderr=True)
        return self._console

    def panel(self, stats: Stats) -> None:
        from cepcli.render import stats_panel

        self.console.print(stats_panel(stats))


def progress(
    err: Stderr, total: int | None, wanted: bool, stats: Stats, matches: Callable[[], int]
) -> AbstractContextManager[Callable[[int], None]]:
    """The progress bar on a terminal's standard error when wanted, else a no-op updater."""
    if not wanted or not err.console.is_terminal:
        return nullcontext(lambda done: None)
    from cepcli.render import progress_bar

    return progress_bar(err.console, total, stats, matches)


def warn_line(console: Console, message: str) -> None:
    """One warning line on standard error (data in it is not markup; never wrapped)."""
    from rich.markup import escape

    console.print(f"[yellow]warning:[/] {escape(message)}", markup=True, soft_wrap=True)


def error_line(message: str) -> None:
    first, *rest = message.splitlines() or [""]
    click.echo(f"cepcli: error: {first}" if not rest else f"{first}", err=True)
    for line in rest:
        click.echo(line, err=True)


def out(**kw: Any) -> Console:
    """A rich console for standard output (or ``file``) that stops quietly, exit 0, when
    the reader goes away (rich's own choice is exit 1)."""
    from rich.console import Console

    console = Console(**kw)
    console.on_broken_pipe = quiet_broken_pipe  # type: ignore[method-assign]
    return console


def quiet_broken_pipe() -> None:
    """The reader went away (``cepcli run ... | head``): stop quietly."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(0)
