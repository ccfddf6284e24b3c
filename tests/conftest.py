"""Test-run wiring: under pytest-xdist (``-n auto``, set in pyproject.toml), the tests that
use the Spark session (``tests/test_spark.py``'s ``spark`` fixture) run on one worker, one
after another, sharing one JVM, while the other workers take the rest (among them the
Spark tests that run ``cepcli`` as a process of its own). Two sessions side by side on
two cores would only slow each other down."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("spark"))
