"""``cepcli check``: each query parsed and checked; with an input, against its columns."""

from __future__ import annotations

from typing import Any

import click

from cepcli.cli.options import Command, input_options, prepared_queries, query_argument


@click.command("check", cls=Command)
@query_argument
@input_options
def check_command(query: tuple[str, ...], expression: tuple[str, ...], **kw: Any) -> None:
    """Parse and validate QUERY (several, or a directory: each); with an input, also
    against its columns.

    \b
    Examples:
      cepcli check patterns/stocks_seq.sase
      cepcli check q.sase --input ticks.csv
      cepcli check -e "PATTERN SEQ(A a, B b) WITHIN 5 min"
    """
    from cepcli.query.printer import print_duration
    from cepcli.run import Run

    prepared = prepared_queries(query, expression, kw)
    against = ""
    if kw["input_path"] is not None or any(c.query.source is not None for c in prepared.queries.values()):
        run = Run(prepared.queries, prepared.options)
        run.close()
        against = f", checked against {run.source.name}"
    for compiled in prepared.queries.values():
        pattern = compiled.pattern
        names = ", ".join(v.name for v in pattern.variables)
        branches = len(pattern.branches)
        click.echo(
            f"{compiled.path}: ok ({branches} branch{'es' if branches != 1 else ''};"
            f" variables {names}; window {print_duration(compiled.query.window)}{against})"
        )
