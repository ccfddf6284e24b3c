"""Test-run wiring: under pytest-xdist (``-n auto``, set in pyproject.toml), the tests that
use the Spark session (the ``spark`` fixture below: local[2], with the tests' own Python)
are dealt into two groups; each group runs on one worker, one test after another, sharing
that worker's JVM, and the workers take the rest beside them (among them the Spark tests
that run ``cepcli`` as a process of its own). One group alone took five minutes on one
worker, the longest share of the run; in two, the workers' shares are even."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.pluginmanager.hasplugin("xdist"):
        return
    spark = [item for item in items if "spark" in getattr(item, "fixturenames", ())]
    for i, item in enumerate(spark):  # two halves, so that each worker can take one
        item.add_marker(pytest.mark.xdist_group(f"spark{i % 2}"))


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
