"""Shared pytest configuration: fixture plugins, and a guard against empty runs."""

from __future__ import annotations

import pytest

pytest_plugins = [
    "tests.fixtures.slurm",
    "tests.fixtures.redbox",
    "tests.fixtures.controlplane",
    "tests.fixtures.apiserver",
    "tests.fixtures.kubelet",
    "tests.fixtures.shared_dirs",
]


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """A run that selects no test is an error, not a silent pass."""
    if not items and not config.getoption("collectonly"):
        raise pytest.UsageError("no tests were selected")
