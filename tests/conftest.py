"""Test-run wiring: under pytest-xdist (``-n auto``, set in pyproject.toml), the tests that
use the Spark session (the ``spark`` fixture below: local[2], with the tests' own Python)
run on one worker, one after another, sharing one JVM, while the other workers take the rest (among them the
Spark tests that run ``cepcli`` as a process of its own). Two sessions side by side on
two cores would only slow each other down."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("spark"))


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("cepcli-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
