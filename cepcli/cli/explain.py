"""``cepcli explain``: the automaton an engine builds for one query."""

from __future__ import annotations

from typing import Any

import click

from cepcli.cli.console import out
from cepcli.cli.options import (
    Choice,
    Command,
    engine_options,
    input_options,
    one_query,
    order_of,
    prepared_queries,
    query_argument,
)


@click.command("explain", cls=Command)
@query_argument
@input_options
@engine_options
@click.option(
    "--format",
    "fmt",
    type=Choice(["text", "dot", "json"]),
    default="text",
    show_default=True,
    help="text to read, dot for Graphviz, json as data.",
)
def explain_command(
    query: tuple[str, ...], expression: tuple[str, ...], engine: str, order: str | None, fmt: str, **kw: Any
) -> None:
    """Show the automaton ENGINE builds for QUERY, without running it.

    \b
    Examples:
      cepcli explain patterns/stocks_seq.sase --engine chain --order c,b,a
      cepcli explain q.sase --format dot | dot -Tpng > nfa.png
    """

    from cepcli.explain import to_dot, to_json, to_text
    from cepcli.run import explain_query

    prepared = prepared_queries(query, expression, kw)
    compiled, options = one_query(prepared, "explain"), prepared.options
    has_input = kw["input_path"] is not None or compiled.query.source is not None
    explanation = explain_query(compiled, options if has_input else None, engine, order_of(order))
    if fmt == "json":
        click.echo(to_json(explanation), nl=False)
    elif fmt == "dot":
        click.echo(to_dot(explanation), nl=False)
    else:
        console = out(highlight=False, soft_wrap=True)
        for text, style in to_text(explanation):
            console.print(text, style=style or None, markup=False)
