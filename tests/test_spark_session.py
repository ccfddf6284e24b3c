"""The standard error of the JVM that ``--spark`` starts (``cepcli.spark.session``): no
JVM here, a child process stands in for it."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest


def test_the_jvms_stderr_filter_drops_only_its_notice(capfd: pytest.CaptureFixture[str]) -> None:
    """What starts inside ``jvm_stderr_filtered`` writes through the filter: every line but
    the incubator notice reaches standard error, whole, also the last one without a newline
    and after our own standard error is restored (the JVM keeps writing for its life)."""
    from cepcli.spark.session import jvm_stderr_filtered

    script = (
        "import sys, time\n"
        "sys.stderr.write('WARNING: Using incubator modules: jdk.incubator.vector\\nfirst\\n')\n"
        "sys.stderr.flush(); time.sleep(0.3)\n"
        "sys.stderr.write('second\\nWARNING: Using incubator modules: x\\nlast, no newline')\n"
    )
    with jvm_stderr_filtered():
        child = subprocess.Popen([sys.executable, "-c", script])
    child.wait(timeout=30)
    deadline = time.monotonic() + 10
    err = ""
    while "last" not in err and time.monotonic() < deadline:
        time.sleep(0.05)
        err += capfd.readouterr().err
    assert err == "first\nsecond\nlast, no newline", err
