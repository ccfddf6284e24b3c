"""The Spark session of ``--spark``: a citizen of the cluster it runs on.

* The master is set only when ``--master`` is given; otherwise ``spark-submit`` and
  ``spark-defaults.conf`` decide (and with neither, Spark's own default, ``local[*]``).
* Spark's log is kept off standard error unless ``--verbose``: a log4j2 configuration of
  errors only goes to the JVM that pyspark starts (not one ``spark-submit`` started), whose
  standard error passes through a filter that drops the JVM's notice of Spark's incubator
  module (``jvm_stderr_filtered``). That
  JVM also compiles with C1 only (``QUICK_JIT``) and maps an archive of Spark's classes
  (``cepcli.spark.classes``); ``PYSPARK_SUBMIT_ARGS``, when set, wins.
* A ``spark://`` master that cannot be reached fails at once, with one line, instead of
  Spark's minute of retries and stack traces.
* Ctrl-C cancels the jobs from another thread (``cancel_on_ctrl_c``).
* Every Java or py4j failure becomes one line (``SparkError``, ``spark_failures``);
  ``CEPCLI_DEBUG=1`` shows the trace.
* A run's jobs (``spark_job``) drop the frames they cached when the run ends, and a new
  ``--output DIR`` that a failed or interrupted run leaves unfinished is removed
  (``new_output``).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import re
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from cepcli.errors import CepError
from cepcli.signals import interruption
from cepcli.spark.classes import class_archive

QUIET_LOG = Path(__file__).with_name("log4j2-quiet.properties")
REACH_SECONDS = 10.0
# the driver JVM compiles with C1 only: the JVM's side of a job is planning and moving Arrow
# batches, and C2 compiling on the same cores cost seconds of a run (BENCHMARKS.md, "Spark:
# local[1] and local[2]")
QUICK_JIT = "-XX:TieredStopAtLevel=1"


class SparkError(CepError):
    """Spark could not be started, or a job failed (exit code 1)."""

    exit_code = 1


def session(master: str | None, verbose: bool = False) -> tuple[Any, str]:
    """The running session, or a new one (pyspark is imported only here and below); and
    what became of the class archive (``cepcli.spark.classes``: ``used``, ``recorded``,
    ``off``, or ``none`` when this call did not start the JVM)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    try:
        from pyspark.sql import SparkSession
    except ImportError as err:  # pragma: no cover - a dependency of cepcli
        raise SparkError(f"pyspark is not installed: {err}") from None
    running = SparkSession.getActiveSession()
    if running is not None:
        return running, "none"
    archive = "none"
    if master is not None:
        reachable(master)
    if "PYSPARK_GATEWAY_PORT" not in os.environ and "PYSPARK_SUBMIT_ARGS" not in os.environ:
        # pyspark starts the JVM (not spark-submit), and the user did not say how
        classes, archive = class_archive()
        java = [QUICK_JIT, *classes, *([] if verbose else [f"-Dlog4j2.configurationFile={QUIET_LOG}"])]
        os.environ["PYSPARK_SUBMIT_ARGS"] = f'--driver-java-options "{" ".join(java)}" pyspark-shell'
    builder = SparkSession.builder.appName("cepcli")
    if master is not None:
        builder = builder.master(master)
    builder = builder.config("spark.sql.execution.arrow.pyspark.enabled", "true")
    builder = builder.config("spark.ui.showConsoleProgress", "false")
    # the rows some variable can use, and the matches, wait in Spark's cache between the
    # job's steps: compressing them there cost 13% of a warm run (flights-3m x40, BENCHMARKS.md)
    builder = builder.config("spark.sql.inMemoryColumnarStorage.compressed", "false")
    starts_jvm = "PYSPARK_GATEWAY_PORT" not in os.environ
    try:
        with jvm_stderr_filtered() if starts_jvm else contextlib.nullcontext():
            started = builder.getOrCreate()
    except Exception as err:  # noqa: BLE001 - Java and cluster failures come in many types
        where = master or "from its configuration"
        raise SparkError(reason(err, f"cannot start Spark with master {where}")) from None
    if not verbose:
        started.sparkContext.setLogLevel("ERROR")
    return started, archive


# lines the JVM writes to standard error on every run, which say nothing to a user: Spark's
# launcher adds the Vector API's incubator module, and the JVM announces it
JVM_NOTICES = (b"WARNING: Using incubator modules:",)


@contextlib.contextmanager
def jvm_stderr_filtered() -> Iterator[None]:
    """Within: what starts now (pyspark's JVM) gets, as its standard error, a pipe that a
    daemon thread copies to ours, line by line, without the lines of ``JVM_NOTICES``. Our
    own standard error is restored on leaving; the JVM keeps the pipe for its life."""
    try:
        sys.stderr.flush()
        read_end, write_end = os.pipe()
        ours = os.dup(2)
    except (OSError, ValueError):  # no standard error to filter: leave things as they are
        yield
        return
    copier = threading.Thread(
        target=_copy_lines, args=(read_end, os.dup(ours)), name="cepcli-jvm-stderr", daemon=True
    )
    copier.start()
    os.dup2(write_end, 2)
    os.close(write_end)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(ours, 2)
        os.close(ours)


def _copy_lines(source: int, target: int) -> None:
    """Copy ``source`` to ``target`` until the end, whole lines, without ``JVM_NOTICES``."""
    pending = b""
    try:
        while chunk := os.read(source, 1 << 16):
            *lines, pending = (pending + chunk).split(b"\n")
            kept = b"".join(line + b"\n" for line in lines if not line.startswith(JVM_NOTICES))
            if kept:
                os.write(target, kept)
        if pending and not pending.startswith(JVM_NOTICES):
            os.write(target, pending)
    except OSError:  # our standard error was closed: nothing more to show
        pass
    finally:
        os.close(source)
        os.close(target)


def reachable(master: str) -> None:
    """A standalone master (``spark://host:port``) must answer within ``REACH_SECONDS``."""
    if not master.startswith("spark://"):
        return
    for part in master.removeprefix("spark://").split(","):
        where = urlparse(f"spark://{part}")
        host, port = where.hostname or "localhost", where.port or 7077
        try:
            with socket.create_connection((host, port), timeout=REACH_SECONDS):
                return
        except OSError as err:
            why = err.strerror or type(err).__name__
            last = f"cannot reach the Spark master {master} ({host}:{port}: {why})"
    raise SparkError(last)


def reason(err: BaseException, what: str) -> str:
    """One line for a Java, py4j or Spark failure: an executor's Python exception as its
    worker raised it (its type and the first line of its message), else the first line."""
    raised = worker_raised(err)
    if raised is not None:
        name, message = raised
        said = f"{name.rsplit('.', 1)[-1]}: {message}" if message else name.rsplit(".", 1)[-1]
        return f"{what}: in a Python worker: {said[:300]}"
    text = str(err).strip()
    java = getattr(err, "java_exception", None)
    if java is not None:
        with contextlib.suppress(Exception):  # the JVM may be gone
            text = str(java.getMessage() or text)
    first = next((line.strip() for line in text.splitlines() if line.strip()), type(err).__name__)
    if "JAVA_HOME" in first or "Java gateway" in first:
        return f"cannot start Spark: Java 17 or newer is needed ({first})"
    return f"{what}: {first[:300]}"


class WorkerError(CepError):
    """A cepcli error an executor raised, whose type the driver cannot make again from its
    message (an ``InputError`` names its file and row): its message, as the worker said it,
    and its exit code."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


_RAISED = re.compile(r"^([A-Za-z_][\w.]*)(?:: ?(.*))?$")


def worker_raised(err: BaseException) -> tuple[str, str] | None:
    """The exception an executor's Python worker raised, as its traceback's last line says
    it (``module.Type: message``): its type's name and its message's first line; None when
    the failure holds no Python traceback (Spark's own, Java's). The last traceback of the
    failure's text (pyspark's, then Java's message and causes) is the one raised."""
    texts = [str(err)]
    java = getattr(err, "java_exception", None)
    if java is not None:
        with contextlib.suppress(Exception):  # the JVM may be gone
            texts.append(str(java.toString()))
    found = None
    for text in texts:
        lines = text.splitlines()
        for i, line in enumerate(lines):
            if not line.rstrip().endswith("Traceback (most recent call last):"):
                continue
            for later in lines[i + 1 :]:  # the frames are indented; the exception's line is not
                if later.strip() and not later[0].isspace():
                    match = _RAISED.match(later.strip())
                    if match:
                        found = (match[1], (match[2] or "").strip())
                    break
    return found


def worker_error(err: BaseException) -> CepError | None:
    """A cepcli error an executor raised, for the driver to raise as the local run would
    (the same type when its message is all it holds, else a ``WorkerError`` with the
    message and exit code): None when the failure is no cepcli error of a worker's."""
    raised = worker_raised(err)
    if raised is None or not raised[0].startswith("cepcli."):
        return None
    module, _, name = raised[0].rpartition(".")
    try:
        kind = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None
    if not (isinstance(kind, type) and issubclass(kind, CepError)):
        return None
    message = raised[1] or name
    if kind.__init__ is Exception.__init__:  # (LimitError, UsageError, ...): the message is all
        return kind(message)
    return WorkerError(message, kind.exit_code)


@contextlib.contextmanager
def cancel_on_ctrl_c(context: Any) -> Iterator[Interrupted]:
    """Within: Ctrl-C (or SIGTERM) sets the event and cancels the Spark jobs from another thread; the
    driver's call that waited on them then fails, and the caller reports the interruption.
    (PySpark's own handler calls the JVM from inside the interrupted call, and py4j then
    prints tracebacks.) A second Ctrl-C interrupts at once."""
    interrupted = Interrupted()
    if threading.current_thread() is not threading.main_thread():
        yield interrupted
        return

    def handler(signum: int, frame: Any) -> None:
        if interrupted.is_set():
            raise interruption(signum)
        interrupted.signum = signum
        interrupted.set()
        threading.Thread(target=context.cancelAllJobs, name="cepcli-cancel", daemon=True).start()

    previous = {signum: signal.signal(signum, handler) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield interrupted
    finally:
        for signum, before in previous.items():
            signal.signal(signum, before)


class Interrupted(threading.Event):
    """Set by Ctrl-C or SIGTERM (``signum`` says which)."""

    signum: int = signal.SIGINT


@contextlib.contextmanager
def spark_job(context: Any) -> Iterator[tuple[Interrupted, list[Any]]]:
    """The Spark jobs of one run: Ctrl-C cancels them (``interrupted``, set, and the run
    ends with the interruption's exit), a Spark, Java or py4j failure becomes one line
    (``SparkError``; ``CEPCLI_DEBUG=1`` shows it whole), and the frames the run cached
    (``held``, which its steps append to) are dropped when it ends: a session that lives on
    (a second run in one process, the tests) would keep them, and answer the same query on
    the same path from the cache though the file changed."""
    held: list[Any] = []
    with cancel_on_ctrl_c(context) as interrupted:
        with spark_failures(held, interrupted):
            yield interrupted, held
        if interrupted.is_set():
            raise interruption(interrupted.signum)


@contextlib.contextmanager
def new_output(spark_session: Any, directory: str | None) -> Iterator[None]:
    """Within: the run writes its matches into ``directory`` (``--output DIR``, which Spark's
    writers make), if not None. When the run fails or is interrupted, and the directory was
    not there before, it is removed, once the cancelled tasks have stopped writing: no
    ``_temporary/``, no part files of some shards (a directory that was there is left to
    Spark's writer, which refuses it)."""
    if directory is None:
        yield
        return
    where = None
    with contextlib.suppress(Exception):  # (a path Hadoop cannot name: Spark's writer says so)
        jvm = spark_session.sparkContext._jvm
        path = jvm.org.apache.hadoop.fs.Path(directory)
        where = (path.getFileSystem(spark_session.sparkContext._jsc.hadoopConfiguration()), path)
    existed = where is None or bool(where[0].exists(where[1]))
    try:
        yield
    except BaseException:
        if not existed and where is not None:
            with contextlib.suppress(Exception):  # the JVM may be gone
                _settled(spark_session.sparkContext)
            with contextlib.suppress(Exception):
                where[0].delete(where[1], True)
        raise


def _settled(context: Any, seconds: float = 10.0) -> None:
    """Waits (``seconds`` at most) until no Spark job runs, nor any task: the tasks of a
    failed or cancelled job stop after it has ended, and may still write."""
    tracker = context._jsc.sc().statusTracker()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        running = sum(int(e.numRunningTasks()) for e in tracker.getExecutorInfos())
        if not running and not len(tracker.getActiveJobIds()) and not len(tracker.getActiveStageIds()):
            return
        time.sleep(0.05)


@contextlib.contextmanager
def spark_failures(held: list[Any], interrupted: Interrupted | None = None) -> Iterator[None]:
    """A Spark, Java or py4j failure as one line (``SparkError``; ``CEPCLI_DEBUG=1`` shows
    it whole; cepcli's own errors pass as they are, those an executor raised too: the
    worker's message, ``session.worker_error``; after Ctrl-C, ``interrupted``, the
    interruption), and the frames in ``held`` unpersisted at the end."""
    try:
        yield
    except CepError:
        raise
    except Exception as err:  # noqa: BLE001 - Spark, Java and py4j failures come in many types
        if interrupted is not None and interrupted.is_set():
            raise interruption(interrupted.signum) from None  # the jobs were cancelled
        if os.environ.get("CEPCLI_DEBUG") == "1":
            raise
        carried = worker_error(err)  # a cepcli error an executor raised: its own message
        if carried is not None:
            raise carried from None
        raise SparkError(reason(err, "the Spark job failed")) from None
    finally:
        for frame in held:
            with contextlib.suppress(Exception):  # the JVM may be gone
                frame.unpersist()
