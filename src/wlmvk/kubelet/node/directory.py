"""Which nodes this kubelet owns, and the partition behind each.

Written by the node controller, read by the pod controller (to pick the
pods it runs and the partition of each) and the log server. A node stays
owned after its partition vanished, so the pods left on it are still
cancelled and cleaned up.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wlmvk.core.jobs import PartitionResources


@dataclass
class NodeDirectory:
    cluster: str
    partitions: dict[str, PartitionResources] = field(default_factory=dict)
    owned: set[str] = field(default_factory=set)

    def owns(self, node_name: str) -> bool:
        return node_name in self.owned

    def partition_of(self, node_name: str) -> PartitionResources | None:
        return self.partitions.get(node_name)

    def set(self, node_name: str, resources: PartitionResources) -> None:
        self.partitions[node_name] = resources
        self.owned.add(node_name)

    def adopt(self, node_name: str) -> None:
        """A node of this cluster found in the API server (before its partition is known)."""
        self.owned.add(node_name)

    def drop(self, node_name: str) -> None:
        self.partitions.pop(node_name, None)
