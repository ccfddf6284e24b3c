"""Write docs/cli.md, the command-line reference, from the ``--help`` of every command.

The text is click's own help of ``cepcli`` and of each of its subcommands, formatted at a
fixed width (100 columns) so that it does not depend on the terminal it is made in.

Usage::

    python scripts/cli_reference.py           # rewrites docs/cli.md
    python scripts/cli_reference.py --check   # exit 1, with one line, if docs/cli.md is stale
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import click

from cepcli.cli import cli

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "docs" / "cli.md"
WIDTH = 100

HEADER = """\
# Command-line reference

This page is generated from the `--help` of every command by `python scripts/cli_reference.py`;
do not edit it by hand. `python scripts/cli_reference.py --check` says whether it is up to date
(a test runs it). What the options mean in depth: [input](input.md), [engines](engines.md),
[Spark](spark.md), [errors and limits](errors-and-limits.md).
"""


def _commands(
    command: click.Command, ctx: click.Context, path: tuple[str, ...]
) -> list[tuple[tuple[str, ...], str]]:
    """``(path, help text)`` for ``command`` and, if it is a group, every command under it,
    in the order ``list_commands`` gives (sorted by name)."""
    found = [(path, ctx.get_help())]
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is None or sub.hidden:
                continue
            sub_ctx = click.Context(sub, info_name=name, parent=ctx, **sub.context_settings)
            found.extend(_commands(sub, sub_ctx, (*path, name)))
    return found


def render() -> str:
    """The whole text of docs/cli.md."""
    settings = {**cli.context_settings, "terminal_width": WIDTH, "max_content_width": WIDTH}
    root = click.Context(cli, info_name="cepcli", **settings)
    parts = [HEADER]
    for path, text in _commands(cli, root, ("cepcli",)):
        body = "\n".join(line.rstrip() for line in text.splitlines())
        parts.append(f"## `{' '.join(path)}`\n\n```text\n{body}\n```\n")
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write docs/cli.md from the commands' --help.")
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/cli.md is not up to date")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else None
        if current != text:
            print("docs/cli.md is out of date: run python scripts/cli_reference.py")
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
