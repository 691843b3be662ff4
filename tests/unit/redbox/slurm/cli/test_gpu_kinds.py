"""A partition's GPUs per GRES type and in use, read from real ``scontrol -d -o show node`` output.

Captured on 22.05 (slurm-local), 24.11 and 26.05 (release boxes) with
``WLMVK_SLURM_GPUS=tesla:2,1g.10gb:6`` while four jobs ran (``--gres=gpu:1``, ``gpu:tesla:1``,
``gpu:1g.10gb:2``, ``gpu:1g.10gb:1``): all three said
``GresUsed=gpu:tesla:2(IDX:0-1),gpu:1g.10gb:3(IDX:2-4)``.
"""

from __future__ import annotations

import pytest

from tests.unit.redbox.slurm.cli.test_parsing import captured
from wlmvk.core.jobs import GpuKind
from wlmvk.redbox.slurm.cli import nodeinfo as partitions


@pytest.mark.parametrize("release", ["22.05", "24.11", "26.05"])
def test_a_nodes_gpus_per_type_and_in_use(release: str) -> None:
    (node,) = partitions.node_records(captured(f"releases/{release}/scontrol-node-gres-used.stdout"))
    assert node.gpu_kinds == (("tesla", 2), ("1g.10gb", 6))
    assert node.gpus_used == (("tesla", 2), ("1g.10gb", 3))
    assert node.gpus == 8


def test_each_partition_of_the_node_reports_its_gpu_kinds() -> None:
    nodes = partitions.node_records(captured("releases/22.05/scontrol-node-gres-used.stdout"))
    parts = {p.name: p for p in partitions.partition_records(captured("scontrol_partitions.txt"), nodes)}
    assert parts["gpu"].gpu_kinds == (GpuKind("tesla", 2, 2, 2), GpuKind("1g.10gb", 6, 6, 3))
    assert parts["gpu"].gpu_per_node == 8
    assert {p.gpu_kinds for p in parts.values()} == {parts["gpu"].gpu_kinds}


def test_without_gres_used_nothing_is_in_use() -> None:
    """``scontrol -o show node`` without ``-d``: no GresUsed, so nothing is said to be in use."""
    nodes = partitions.node_records(captured("scontrol_nodes.txt"))
    parts = partitions.partition_records(captured("scontrol_partitions.txt"), nodes)
    assert {p.gpu_kinds for p in parts} == {(GpuKind("", 2, 2, 0),)}
