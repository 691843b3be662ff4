"""Names shared with Kubernetes: label keys, annotations, taints, resource names.

The ``wlm.sylabs.io/`` label keys and the taint are the original
WLM-operator's, so that its SlurmJob examples schedule unchanged.
"""

from __future__ import annotations

import enum

GROUP = "wlm.sylabs.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"

# Node labels (the original's keys).
LABEL_PARTITION = f"{GROUP}/partition"
LABEL_NODES = f"{GROUP}/nodes"
LABEL_WALL_TIME = f"{GROUP}/wall-time"
LABEL_CPU_PER_NODE = f"{GROUP}/cpu-per-node"
LABEL_MEM_PER_NODE = f"{GROUP}/mem-per-node"
LABEL_GPU_PER_NODE = f"{GROUP}/gpu-per-node"
LABEL_CLUSTER = f"{GROUP}/cluster"
# The Kubernetes node that runs the kubelet of this virtual node (the agent host):
# staging pods are pinned there because the red-box socket is there.
LABEL_AGENT_HOST = f"{GROUP}/agent-host"
LABEL_TYPE = "type"
TYPE_VIRTUAL_KUBELET = "virtual-kubelet"
LABEL_ROLE = "kubernetes.io/role"
ROLE_AGENT = "agent"
LABEL_HOSTNAME = "kubernetes.io/hostname"

TAINT_KEY = "virtual-kubelet.io/provider"
TAINT_VALUE = "wlm"
TAINT_EFFECT = "NoSchedule"

GPU_RESOURCE = "nvidia.com/gpu"

# Pod annotations.
ANNOTATION_BATCH = f"{GROUP}/batch"
ANNOTATION_JOB_ID = f"{GROUP}/job-id"
ANNOTATION_WORKING_DIR = f"{GROUP}/working-dir"
ANNOTATION_CONTAINER_JOB = f"{GROUP}/container-job"

# Node annotation: the host path of the red-box socket on the agent host, so
# staging pods mount the socket of the cluster their job runs on (several
# clusters can share one agent host).
ANNOTATION_RED_BOX_SOCKET = f"{GROUP}/red-box-socket"
# On a virtual node: the socket of each tenant user's red-box (the kubelet's --red-box USER=SOCKET),
# a JSON object; a tenant's staging pods mount its user's (docs/tenancy.md).
ANNOTATION_RED_BOX_SOCKETS = f"{GROUP}/red-box-sockets"
# On a virtual node whose red-box serves only the original API, which ignores a job's working dir.
ANNOTATION_WORKING_DIR_IGNORED = f"{GROUP}/working-dir-ignored"
DEFAULT_RED_BOX_SOCKET = "/var/run/syslurm/red-box.sock"

NODE_LEASE_NAMESPACE = "kube-node-lease"


class EventType(enum.StrEnum):
    """An Event's ``type``: the only two Kubernetes knows."""

    NORMAL = "Normal"
    WARNING = "Warning"


class EndReason(enum.StrEnum):
    """Why a job pod's container ended: the kubelet writes it (``terminated.reason``), the operator
    reads it. Typed, so that the two sides agree on the exact word (the operator once looked for
    "cancel" anywhere in the reason)."""

    JOB_FINISHED = "Job finished"  # the original's reason for a completed job, kept for kubectl
    ERROR = "Error"
    CANCELLED = "Cancelled"
    TIMEOUT = "Timeout"
    OUT_OF_MEMORY = "OutOfMemory"
    NODE_FAIL = "NodeFail"
    PREEMPTED = "Preempted"
    BOOT_FAIL = "BootFail"
    DEADLINE_EXCEEDED = "DeadlineExceeded"
    JOB_LOST = "JobLost"


def feature_label(name: str, version: str = "") -> str:
    """The node label key of a partition feature, as the original wrote it."""
    return f"{GROUP}/{name}_{version}" if version else f"{GROUP}/{name}"


def node_name(cluster: str, partition: str) -> str:
    """The virtual node of a partition: ``slurm-<cluster>-<partition>``, lowercased."""
    return f"slurm-{cluster}-{partition}".lower().replace("_", "-")
