"""Where cepcli keeps what it can make again: ``$XDG_CACHE_HOME/cepcli``, else
``~/.cache/cepcli`` (the query parser's tables, the archive of Spark's classes). Every file
there is a cache: deleting it costs only the time to make it again."""

from __future__ import annotations

import os
from pathlib import Path


def cache_home() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cepcli"
