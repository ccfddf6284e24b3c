"""Run ``cepcli run`` as a real process and return its ``--stats-json`` (shared by the
benchmark scripts)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLI = Path(sys.executable).with_name("cepcli")
FLIGHTS_OPTIONS = ["--type-col", "carrier", "--time-col", "time_hour", "--sort"]


def cepcli_run(
    query: str,
    data: Path,
    options: list[str],
    timeout: float | None = None,
    fmt: str = "csv",
    env: dict[str, str] | None = None,
) -> dict[str, object] | None:
    """Stats of one run (matches written to a scratch file), with ``wall_seconds``
    added; None if it took longer than ``timeout`` seconds."""
    with tempfile.TemporaryDirectory() as tmp:
        qfile = Path(tmp) / "q.sase"
        qfile.write_text(query.rstrip() + "\n")
        stats = Path(tmp) / "stats.json"
        command = [
            str(CLI), "run", str(qfile), "--input", str(data), *options, "--format", fmt,
            "--output", str(Path(tmp) / f"matches.{fmt}"), "--stats-json", str(stats), "--quiet",
        ]  # fmt: skip
        started = time.perf_counter()
        try:
            subprocess.run(
                command,
                check=True,
                timeout=timeout,
                stderr=subprocess.DEVNULL,
                env={**os.environ, **env} if env else None,
            )
        except subprocess.TimeoutExpired:
            return None
        result: dict[str, object] = json.loads(stats.read_text())
        result["wall_seconds"] = time.perf_counter() - started
        return result
