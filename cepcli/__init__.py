"""cepcli: complex event processing with lazy chain automata, on the command line.

From Python: ``cepcli.find(query_text, data, ...)`` evaluates a query over a path, a
pandas DataFrame or an Arrow table (see ``cepcli.api``). Imported on first use, so that
``cepcli --version`` stays quick.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0.dev0"
__all__ = ["Matches", "find"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from cepcli import api

        return getattr(api, name)
    raise AttributeError(f"module 'cepcli' has no attribute {name!r}")
