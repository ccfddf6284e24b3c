"""An archive of the classes Spark's JVM loads (Java's class data sharing, AppCDS), so that
a ``--spark`` run after the first starts its session and its first jobs faster
(BENCHMARKS.md, "Spark: local[1] and local[2]", has the figures).

Only for the JVM that pyspark starts itself (not one ``spark-submit`` started, nor when
``PYSPARK_SUBMIT_ARGS`` is set). The first run records the classes its JVM loads
(``-XX:DumpLoadedClassList``: no cost worth measuring); when it ends, a detached process
waits for that JVM to exit and builds the archive from the list with the same java, class
path and modules (``-Xshare:dump``, some seconds of one core, in the background), and gives
it its final name only once complete; one run at a time records, the others run without.
Later runs map it (``-XX:SharedArchiveFile``). Its name holds the versions of pyspark and
Java, so an upgrade builds a new one; a JVM that cannot use it (another build, another
class path) runs without it, silently. It lives in ``$XDG_CACHE_HOME/cepcli``
(``~/.cache/cepcli``), some hundreds of MB; ``CEPCLI_SPARK_CLASS_CACHE=0`` turns it off.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from cepcli.cache import cache_home

QUIET = "-Xlog:cds*=off"  # the JVM lists every class it cannot archive (signed jars): not for users


def class_archive() -> tuple[list[str], str]:
    """The JVM options for the archive, and what they do: ``used``, ``recorded`` (this run
    records the classes; the archive is built when it ends) or ``off`` (turned off, being
    built by another run, or its build failed before)."""
    if os.environ.get("CEPCLI_SPARK_CLASS_CACHE") == "0":
        return [], "off"
    final = cache_home() / f"spark-classes-{_key()}.jsa"
    if final.is_file():
        return [f"-XX:SharedArchiveFile={final}", QUIET], "used"
    if final.with_suffix(".failed").exists() or not _claim(final.with_suffix(".lock")):
        return [], "off"
    listed = final.with_suffix(".classes")
    atexit.register(_build_later, listed, final)
    return [f"-XX:DumpLoadedClassList={listed}"], "recorded"


def _key() -> str:
    """pyspark's version and place, and the java that runs it."""
    import pyspark

    java_home = os.environ.get("JAVA_HOME")
    java = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java") or ""
    seen = os.path.realpath(java) if java else ""
    stamp = os.stat(seen).st_mtime_ns if seen and os.path.exists(seen) else 0
    parts = [pyspark.__version__, str(Path(pyspark.__file__).parent), seen, str(stamp)]
    return hashlib.sha1("\n".join(parts).encode()).hexdigest()[:16]


def _claim(lock: Path) -> bool:
    """This process records the classes, unless a live one already does (the lock holds
    the pid of the process at work: this one, then the builder)."""
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            if _alive(lock):
                return False
            with contextlib.suppress(OSError):
                lock.unlink()  # its holder is gone
            continue
        except OSError:
            return False
        with os.fdopen(fd, "w") as f:
            f.write(str(os.getpid()))
        return True
    return False


def _alive(lock: Path) -> bool:
    try:
        return process_alive(int(lock.read_text() or "0"))
    except (OSError, ValueError):
        return False


def _build_later(listed: Path, final: Path) -> None:
    """At exit: hand the build to a detached process (the JVM writes its list until it
    exits, after this process)."""
    lock = final.with_suffix(".lock")
    how = _jvm()
    if how is None:
        _drop(listed, lock)
        return
    plan = {"listed": str(listed), "final": str(final), **how}
    try:
        builder = subprocess.Popen(
            [sys.executable, "-m", "cepcli.spark.classes", json.dumps(plan)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError:
        _drop(listed, lock)
        return
    with contextlib.suppress(OSError):
        lock.write_text(str(builder.pid))


def _jvm() -> dict[str, Any] | None:
    """How pyspark's JVM runs: its pid, java, class path and module options (None if
    this process started none)."""
    try:
        from pyspark import SparkContext

        gateway = SparkContext._gateway
        proc = getattr(gateway, "proc", None)
        if proc is None or gateway is None:
            return None
        system = gateway.jvm.System
        arguments = gateway.jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()
        kept = ("--add-modules", "-XX:+IgnoreUnrecognized")
        modules = [str(a) for a in arguments if str(a).startswith(kept)]
        return {
            "pid": proc.pid,
            "java": str(Path(str(system.getProperty("java.home"))) / "bin" / "java"),
            "class_path": str(system.getProperty("java.class.path")),
            "modules": modules,
        }
    except Exception:  # noqa: BLE001 - the JVM may be gone: then no archive this time
        return None


def build(plan: dict[str, Any], wait_seconds: float = 600.0) -> bool:
    """Wait for the recording JVM to exit, build the archive from its list, name it."""
    listed, final = Path(plan["listed"]), Path(plan["final"])
    lock = final.with_suffix(".lock")
    part = final.with_suffix(".jsa.part")
    try:
        deadline = time.monotonic() + wait_seconds
        while process_alive(int(plan["pid"])):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.2)
        command = [
            plan["java"],
            "-Xshare:dump",
            f"-XX:SharedClassListFile={listed}",
            f"-XX:SharedArchiveFile={part}",
            "-cp",
            plan["class_path"],
            *plan["modules"],
            QUIET,
        ]
        done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, check=False)
        if done.returncode == 0 and part.is_file() and part.stat().st_size:
            os.replace(part, final)
            return True
        final.with_suffix(".failed").write_bytes(done.stdout[-4000:] + done.stderr[-4000:])
        return False
    finally:
        _drop(part, listed, lock)


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs (one of another user's counts; a zombie, which no init
    reaped, has exited). Also the executors' zips' sweep (``cepcli.spark.ship``)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError, IndexError):
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    return True


def _drop(*paths: Path) -> None:
    for path in paths:
        with contextlib.suppress(OSError):
            path.unlink()


if __name__ == "__main__":  # the detached builder (``_build_later``)
    build(json.loads(sys.argv[1]))
