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


def test_a_file_changed_since_the_last_zip_ships_its_new_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session that lives on (a notebook, the Python API) ships the code as it is at each
    run: the zip is made again when a file's time or size changed, not otherwise."""
    monkeypatch.setattr(ship.tempfile, "gettempdir", lambda: str(tmp_path))
    extra = tmp_path / "src" / "note.txt"
    extra.parent.mkdir()
    extra.write_text("first")
    files = ship._files

    def with_extra(packages: list[Path]) -> list[tuple[Path, str]]:
        return [*files(packages), (extra, "cepcli/note.txt")]

    zipped = []
    zip_bytes = ship._zip_bytes

    def counted(found: list[tuple[Path, str]]) -> bytes:
        zipped.append(len(found))
        return zip_bytes(found)

    monkeypatch.setattr(ship, "_files", with_extra)
    monkeypatch.setattr(ship, "_zip_bytes", counted)
    made: list[Path] = []
    for text in ("first", None, "second, longer"):
        if text is not None:
            extra.write_text(text)
        made.append(Path(ship.package_zip()))
        with zipfile.ZipFile(made[-1]) as z:
            assert z.read("cepcli/note.txt").decode() == (text or "first")
    assert made[0] == made[1] != made[2]
    assert len(zipped) == 2  # the files unchanged: the zip made before, not made again
