"""The deploy tests' fixture plugin and marker: ``real_node``, ``registry`` (``tests.fixtures.realnode``)."""

from __future__ import annotations

import pytest

from tests.fixtures.realnode import real_node, registry

__all__ = ["real_node", "registry"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "real_node: needs a real node (dev/scripts/kube-node: a kubelet and containerd) on a control plane"
        " of its own; CI runs it in a step of its own",
    )
