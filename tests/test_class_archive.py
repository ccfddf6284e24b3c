"""The archive of Spark's classes (``cepcli.spark.classes``): who records, who uses, and
what a failed build leaves. No JVM here (tests/test_spark.py builds and uses a real one)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cepcli.spark import classes


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("CEPCLI_SPARK_CLASS_CACHE", raising=False)
    later: list[object] = []
    monkeypatch.setattr(classes.atexit, "register", lambda *a: later.append(a))  # no build at exit
    return tmp_path / "cepcli"


def _final(cache: Path) -> Path:
    return cache / f"spark-classes-{classes._key()}.jsa"


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_the_first_run_records_and_holds_the_lock(cache: Path) -> None:
    options, state = classes.class_archive()
    assert state == "recorded"
    assert options == [f"-XX:DumpLoadedClassList={_final(cache).with_suffix('.classes')}"]
    assert _final(cache).with_suffix(".lock").read_text() == str(os.getpid())


def test_an_archive_is_used_quietly(cache: Path) -> None:
    cache.mkdir()
    _final(cache).write_bytes(b"archive")
    assert classes.class_archive() == ([f"-XX:SharedArchiveFile={_final(cache)}", "-Xlog:cds*=off"], "used")


def test_a_live_recorder_keeps_the_others_off(cache: Path) -> None:
    cache.mkdir()
    _final(cache).with_suffix(".lock").write_text(str(os.getppid()))
    assert classes.class_archive() == ([], "off")


def test_a_dead_recorders_lock_is_taken_over(cache: Path) -> None:
    cache.mkdir()
    lock = _final(cache).with_suffix(".lock")
    lock.write_text(str(_dead_pid()))
    assert classes.class_archive()[1] == "recorded"
    assert lock.read_text() == str(os.getpid())


def test_turned_off_or_failed_before_is_off(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CEPCLI_SPARK_CLASS_CACHE", "0")
    assert classes.class_archive() == ([], "off")
    assert not cache.exists()
    monkeypatch.delenv("CEPCLI_SPARK_CLASS_CACHE")
    cache.mkdir()
    _final(cache).with_suffix(".failed").write_text("why")
    assert classes.class_archive() == ([], "off")


def test_a_failed_build_leaves_its_reason_and_nothing_else(cache: Path) -> None:
    cache.mkdir()
    final = _final(cache)
    for suffix in (".lock", ".classes"):
        final.with_suffix(suffix).write_text("x")
    plan = {
        "listed": str(final.with_suffix(".classes")),
        "final": str(final),
        "pid": _dead_pid(),
        "java": sys.executable,  # not a java: the build fails
        "class_path": "",
        "modules": [],
    }
    assert classes.build(plan) is False
    assert sorted(p.suffix for p in cache.iterdir()) == [".failed"]
    assert classes.class_archive() == ([], "off")  # no second try on every run
