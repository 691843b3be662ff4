"""``scontrol -d -o show node`` and ``show partition`` -> what each partition offers per node (pure).

Only keys that 22.05, 24.11 and 26.05 print alike are read (NodeName, CPUTot or
CPUEfctv, RealMemory, AvailableFeatures, Gres, GresUsed, Partitions; PartitionName,
TotalNodes, MaxNodes, TotalCPUs, MaxCPUsPerNode, MaxMemPerNode, MaxTime,
Default, State); the keys releases added or renamed are left alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from wlmvk.core.errors import InvalidInput
from wlmvk.core.jobs import Feature, GpuKind
from wlmvk.redbox.slurm.cli import scontrol as records
from wlmvk.redbox.slurm.cli import values
from wlmvk.slurm import gres, memory


@dataclass(frozen=True)
class NodeRecord:
    name: str
    cpus: int
    memory_mb: int
    features: tuple[str, ...]
    gpus: int
    partitions: tuple[str, ...]
    gpu_kinds: tuple[tuple[str, int], ...] = ()
    """GPUs per GRES type ("" untyped), in the order of the node's Gres."""
    gpus_used: tuple[tuple[str, int], ...] = ()
    """GPUs per GRES type in use now (GresUsed)."""


@dataclass(frozen=True)
class PartitionRecord:
    """What Slurm says of a partition, before any configured override."""

    name: str
    nodes: int
    cpu_per_node: int
    mem_per_node: int
    wall_time: int | None
    gpu_per_node: int
    features: tuple[Feature, ...]
    default: bool
    state: str
    gpu_kinds: tuple[GpuKind, ...] = ()
    mem_limit: int | None = None
    """The partition's own MaxMemPerNode in MB; None when Slurm says UNLIMITED."""


def _int(text: str, default: int = 0) -> int:
    match = re.match(r"\d+", text.strip())
    return int(match.group()) if match else default


def gres_gpus(text: str) -> int:
    """A node's ``Gres`` (``gpu:tesla:2(S:0-1)``, ``(null)``) -> its GPUs, read by ``core.gres``."""
    try:
        return gres.gpus(text)
    except InvalidInput:
        return 0  # slurmctld checked its own configuration: not a GPU count we can read


def gres_kinds(text: str) -> tuple[tuple[str, int], ...]:
    """A node's ``Gres`` or ``GresUsed`` -> GPUs per type, read by ``core.gres`` (none when unreadable)."""
    try:
        return tuple(gres.by_type(text).items())
    except InvalidInput:
        return ()


def _kinds(members: list[NodeRecord]) -> tuple[GpuKind, ...]:
    """The partition's GPUs per type over its nodes: the most on one, the sum, the sum in use."""
    per_node: dict[str, int] = {}
    total: dict[str, int] = {}
    used: dict[str, int] = {}
    for node in members:
        for kind, count in node.gpu_kinds:
            per_node[kind] = max(per_node.get(kind, 0), count)
            total[kind] = total.get(kind, 0) + count
        for kind, count in node.gpus_used:
            used[kind] = used.get(kind, 0) + count
    return tuple(
        GpuKind(kind, per_node[kind], total[kind], min(used.get(kind, 0), total[kind])) for kind in total
    )


def _memory_mb(text: str) -> int:
    """``16000`` or ``16000M`` / ``16G`` -> MB (``core.memory``)."""
    return memory.megabytes(text) or 0


def node_records(output: str) -> list[NodeRecord]:
    """``scontrol -d -o show node`` -> nodes (``-d`` adds GresUsed)."""
    nodes = []
    for record in records.scontrol_records(output):
        if "NodeName" not in record:
            continue
        features = values.text(record.get("AvailableFeatures", ""))
        partitions = values.text(record.get("Partitions", ""))
        nodes.append(
            NodeRecord(
                name=record["NodeName"],
                cpus=_int(record.get("CPUEfctv") or record.get("CPUTot", "0")),
                memory_mb=_int(record.get("RealMemory", "0")),
                features=tuple(f for f in features.split(",") if f),
                gpus=gres_gpus(values.text(record.get("Gres", ""))),
                partitions=tuple(p for p in partitions.split(",") if p),
                gpu_kinds=gres_kinds(values.text(record.get("Gres", ""))),
                gpus_used=gres_kinds(values.text(record.get("GresUsed", ""))),
            )
        )
    return nodes


def partition_records(output: str, nodes: Iterable[NodeRecord]) -> list[PartitionRecord]:
    """``scontrol show partition -o`` plus its nodes -> per-node resources of each partition.

    Unlike the original red-box: an UNLIMITED MaxTime is ``None`` (not 0);
    memory comes from the nodes when the partition sets no MaxMemPerNode;
    CPUs are per node (not the partition's total); node features and GPUs
    (GRES) are reported. A heterogeneous partition reports its largest node.
    """
    node_list = list(nodes)
    result = []
    for record in records.scontrol_records(output):
        name = record.get("PartitionName")
        if not name:
            continue
        members = [n for n in node_list if name in n.partitions]
        total_nodes = _int(record.get("TotalNodes", "0"), len(members))
        max_nodes = record.get("MaxNodes", "UNLIMITED")
        nodes_count = total_nodes if not max_nodes.isdigit() else min(int(max_nodes), total_nodes)
        node_cpus = max((n.cpus for n in members), default=0)
        if not node_cpus and total_nodes:
            node_cpus = _int(record.get("TotalCPUs", "0")) // total_nodes
        cpu_cap = record.get("MaxCPUsPerNode", "UNLIMITED")
        cpus = min(node_cpus, int(cpu_cap)) if cpu_cap.isdigit() else node_cpus
        node_mem = max((n.memory_mb for n in members), default=0)
        mem_cap = record.get("MaxMemPerNode", "UNLIMITED")
        mem = min(node_mem, _memory_mb(mem_cap)) if mem_cap[:1].isdigit() else node_mem
        if mem_cap[:1].isdigit() and not node_mem:
            mem = _memory_mb(mem_cap)
        limit = values.duration(record.get("MaxTime", "UNLIMITED"))
        counts: dict[str, int] = {}
        for node in members:
            for feature in node.features:
                counts[feature] = counts.get(feature, 0) + 1
        result.append(
            PartitionRecord(
                name=name,
                nodes=nodes_count,
                cpu_per_node=cpus,
                mem_per_node=mem,
                wall_time=None if limit is None else int(limit.total_seconds()),
                gpu_per_node=max((n.gpus for n in members), default=0),
                features=tuple(Feature(name=f, quantity=q) for f, q in sorted(counts.items())),
                default=record.get("Default", "NO") == "YES",
                state=record.get("State", "UP"),
                mem_limit=_memory_mb(mem_cap) if mem_cap[:1].isdigit() else None,
                gpu_kinds=_kinds(members),
            )
        )
    return result


def partition_names(output: str) -> list[str]:
    """The partitions listed by ``scontrol show partition -o``, in Slurm's order."""
    return [r["PartitionName"] for r in records.scontrol_records(output) if r.get("PartitionName")]
