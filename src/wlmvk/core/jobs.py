"""WLM-neutral job values: what a job is asked to be and what state it is in.

These are plain frozen values. red-box produces them from Slurm output, the
gRPC client converts them to and from the wire, and the kubelet and operator
turn them into Kubernetes status. Nothing here does I/O.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import NewType

JobId = NewType("JobId", int)


class JobStatus(enum.Enum):
    """Slurm's job states, named as Slurm names them."""

    PENDING = "PENDING"
    CONFIGURING = "CONFIGURING"
    RUNNING = "RUNNING"
    COMPLETING = "COMPLETING"
    SUSPENDED = "SUSPENDED"
    REQUEUED = "REQUEUED"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    TIMEOUT = "TIMEOUT"
    NODE_FAIL = "NODE_FAIL"
    OUT_OF_MEMORY = "OUT_OF_MEMORY"
    PREEMPTED = "PREEMPTED"
    BOOT_FAIL = "BOOT_FAIL"
    DEADLINE = "DEADLINE"
    UNKNOWN = "UNKNOWN"
    NOT_FOUND = "NOT_FOUND"

    @property
    def terminal(self) -> bool:
        """True once Slurm will never run the job again."""
        return self in _TERMINAL

    @property
    def succeeded(self) -> bool:
        return self is JobStatus.COMPLETED


_TERMINAL = frozenset(
    {
        JobStatus.COMPLETED,
        JobStatus.FAILED,
        JobStatus.CANCELLED,
        JobStatus.TIMEOUT,
        JobStatus.NODE_FAIL,
        JobStatus.OUT_OF_MEMORY,
        JobStatus.PREEMPTED,
        JobStatus.BOOT_FAIL,
        JobStatus.DEADLINE,
    }
)


@dataclass(frozen=True)
class JobSpec:
    """A batch job to submit. ``script`` is passed to sbatch verbatim."""

    script: str
    partition: str = ""
    idempotency_key: str = ""
    name: str = ""
    working_dir: str = ""
    std_out: str = ""
    std_err: str = ""
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ContainerOptions:
    """Apptainer/Singularity options of a container job (the original's SingularityOptions)."""

    app: str = ""
    allow_unsigned: bool = False
    binds: tuple[str, ...] = ()
    clear_env: bool = False
    fake_root: bool = False
    host_name: str = ""
    ipc: bool = False
    pid: bool = False
    no_privs: bool = False
    writable: bool = False


@dataclass(frozen=True)
class ContainerJobSpec:
    """A job that runs a container image (the original's SubmitJobContainer)."""

    image: str
    partition: str = ""
    nodes: int = 0
    cpu_per_node: int = 0
    mem_per_node: int = 0
    wall_time: int = 0
    options: ContainerOptions = field(default_factory=ContainerOptions)
    idempotency_key: str = ""
    name: str = ""
    working_dir: str = ""
    std_out: str = ""
    std_err: str = ""
    env: Mapping[str, str] = field(default_factory=dict)
    account: str = ""
    """The Slurm account charged ('' for the user's default): set by the kubelet from the tenant."""
    qos: str = ""
    """The QoS ('' for the association's default): set by the kubelet from the tenant."""


@dataclass(frozen=True)
class JobState:
    """What is known of one job at one moment."""

    job_id: JobId
    status: JobStatus
    reason: str = ""
    exit_code: int | None = None
    signal: int = 0
    submit_time: datetime | None = None
    start_time: datetime | None = None
    end_time: datetime | None = None
    std_out: str = ""
    std_err: str = ""
    working_dir: str = ""
    partition: str = ""
    node_list: str = ""
    name: str = ""
    idempotency_key: str = ""


@dataclass(frozen=True)
class Feature:
    """A partition feature: a Slurm node feature or a configured one."""

    name: str
    version: str = ""
    quantity: int = 0


@dataclass(frozen=True)
class GpuKind:
    """One Slurm GRES type of a partition's GPUs ("" untyped): the most one node has, the sum over
    its nodes, and how many of those Slurm says are in use."""

    kind: str
    per_node: int
    total: int
    used: int = 0


@dataclass(frozen=True)
class PartitionResources:
    """Resources of one partition as a node label set describes them.

    ``mem_per_node`` is in MB and ``wall_time`` in seconds; ``wall_time`` is
    None when the partition has no time limit.
    """

    name: str
    nodes: int
    cpu_per_node: int
    mem_per_node: int
    wall_time: int | None
    gpu_per_node: int = 0
    features: tuple[Feature, ...] = ()
    default: bool = False
    state: str = "UP"
    container_runtime: bool = False
    gpu_kinds: tuple[GpuKind, ...] = ()

    def settled(self) -> PartitionResources:
        """The partition without what changes as jobs come and go (GPUs in use)."""
        return replace(self, gpu_kinds=tuple(replace(k, used=0) for k in self.gpu_kinds))

    # red-box's --image-dir ("" none) and the SIF file names in it.
    image_dir: str = ""
    images: tuple[str, ...] = ()


@dataclass(frozen=True)
class WorkloadInfo:
    name: str
    version: str
    uid: int
    cluster_name: str = ""
    extensions: tuple[str, ...] = ()
