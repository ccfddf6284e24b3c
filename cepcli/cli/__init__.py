"""The command line: thin click commands, one module each, over the library
(``cepcli.prepare``, ``cepcli.delivery``, ``cepcli.run``); errors become messages and exit
codes in exactly one place, ``app.CepGroup.invoke``.

Only click and the option constants are imported at the start: a command imports what
it runs (the engines, pyarrow, rich), so ``cepcli --version`` and ``--help`` start quickly.
"""

from __future__ import annotations

from cepcli.cli.app import cli, main

__all__ = ["cli", "main"]
