"""The zip cepcli ships to Spark's executors (``cepcli.spark.ship``): named by process and
content, and the zips of processes that are gone are removed (no pyspark needed)."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ship = importlib.import_module("cepcli.spark.ship")  # the package's ``ship`` is the function


def test_the_zip_holds_cepcli_and_lark_and_sweeps_the_dead_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ship.tempfile, "gettempdir", lambda: str(tmp_path))
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    dead = tmp_path / f"cepcli-executors-{gone.pid}-0123456789abcdef.zip"
    alive = tmp_path / f"cepcli-executors-{os.getppid()}-0123456789abcdef.zip"
    other = tmp_path / "cepcli-executors-notapid-0123456789abcdef.zip"
    for path in (dead, alive, other):
        path.write_bytes(b"zip")
    made = Path(ship.package_zip())
    assert made.parent == tmp_path and made.name.startswith(f"cepcli-executors-{os.getpid()}-")
    with zipfile.ZipFile(made) as z:
        names = z.namelist()
    assert "cepcli/engines.py" in names and "lark/__init__.py" in names
    assert not any(n.endswith(".pyc") for n in names)
    assert not dead.exists() and alive.exists() and other.exists()
    assert Path(ship.package_zip()) == made  # the same content: the same zip
