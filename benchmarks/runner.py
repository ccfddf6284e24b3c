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


def spark_class_archive(query: str, data: Path, options: list[str]) -> None:
    """Make sure the archive of Spark's classes exists (``cepcli.spark.classes``), so that
    every measured ``--spark`` run maps it, as a user's runs after the first do: one run
    records the classes unless it exists, then wait for the detached build."""
    first = cepcli_run(query, data, [*options, "--spark"], fmt="jsonl", env={"CEPCLI_SPARK_CLASS_CACHE": "1"})
    assert first is not None
    if first["spark_class_archive"] in ("used", "none"):
        return
    home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cepcli"
    deadline = time.monotonic() + 600
    while not list(home.glob("spark-classes-*.jsa")):
        failed = list(home.glob("spark-classes-*.failed"))
        assert not failed and time.monotonic() < deadline, failed
        time.sleep(2)
