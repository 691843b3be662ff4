"""Partition -> Node: the pure pieces of a virtual node's object.

Labels keep the original's ``wlm.sylabs.io/`` keys (so the original's
SlurmJob examples and node affinities schedule unchanged) plus the ones a
virtual kubelet carries; the taint keeps ordinary pods off; capacity comes
from the partition's nodes times its per-node resources, GPUs per type (``core.gpus``) with
allocatable from what Slurm says is in use. Conditions carry
red-box reachability: a node whose red-box cannot be reached is not Ready.
"""

from __future__ import annotations

import json
import platform
from collections.abc import Mapping
from dataclasses import dataclass, field

from wlmvk import __version__
from wlmvk.core import names
from wlmvk.core.jobs import PartitionResources
from wlmvk.kube.bodies import Body
from wlmvk.kube.version import KUBERNETES_VERSION
from wlmvk.kubelet.api.stats import resource_metrics
from wlmvk.slurm import gpus
from wlmvk.slurm.durations import UNLIMITED_WALL_TIME
from wlmvk.slurm.memory import UNLIMITED_MEMORY_MB

KUBELET_VERSION = f"{KUBERNETES_VERSION}+wlmvk-{__version__}"
"""The version reported when the API server's is not known: the release wlmvk implements, wlmvk's own
as build metadata. The kubelet reports the server's (wlmvk.kube.version.kubelet_version)."""
READY = "Ready"
REACHABLE = "WLMReachable"


@dataclass(frozen=True)
class NodeContext:
    """What every node of one kubelet shares."""

    cluster: str
    agent_host: str = ""
    node_ip: str = "127.0.0.1"
    port: int = 10250
    max_pods: int = 1000
    red_box_socket: str = ""
    red_boxes: tuple[tuple[str, str], ...] = ()
    """(user, socket): each tenant user's red-box, published for the operator's staging pods."""
    wlm_version: str = ""
    # red-box serves only the original API (no extensions): it runs jobs where it stands, not in
    # the working dir asked for; the node says so, and the operator reports no working dir.
    original_api: bool = False
    # The site's GPU resource names -> Slurm GRES types (core.gpus).
    gpu_names: Mapping[str, str] = field(default_factory=dict)
    # The API server's version, at most the one wlmvk implements (wlmvk.kube.version).
    kubelet_version: str = KUBELET_VERSION
    # status.declaredFeatures (wlmvk.kube.version.declared_features): None leaves the field alone.
    declared_features: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Health:
    """red-box reachability as the node conditions report it."""

    reachable: bool
    message: str = ""
    since: str = ""


def _label_value(value: object) -> str:
    text = str(value)
    return text[:63]


def labels(res: PartitionResources, ctx: NodeContext) -> dict[str, str]:
    """Every label the kubelet owns on the node of ``res``."""
    node = names.node_name(ctx.cluster, res.name)
    out = {
        names.LABEL_TYPE: names.TYPE_VIRTUAL_KUBELET,
        names.LABEL_ROLE: names.ROLE_AGENT,
        names.LABEL_HOSTNAME: node,
        "kubernetes.io/os": "linux",
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": _arch(),
        "alpha.service-controller.kubernetes.io/exclude-balancer": "true",
        names.LABEL_CLUSTER: _label_value(ctx.cluster),
        names.LABEL_PARTITION: _label_value(res.name),
        names.LABEL_NODES: str(res.nodes),
        names.LABEL_CPU_PER_NODE: str(res.cpu_per_node),
        names.LABEL_WALL_TIME: str(UNLIMITED_WALL_TIME if res.wall_time is None else res.wall_time),
    }
    out[names.LABEL_MEM_PER_NODE] = str(_memory(res))
    if res.gpu_per_node:
        out[names.LABEL_GPU_PER_NODE] = str(res.gpu_per_node)
    if ctx.agent_host:
        out[names.LABEL_AGENT_HOST] = _label_value(ctx.agent_host)
    for feature in res.features:
        out[names.feature_label(feature.name, feature.version)] = (
            str(feature.quantity) if feature.quantity else "true"
        )
    return out


def _memory(res: PartitionResources) -> int:
    """MB per node; no known limit (negative, an original red-box's -1) fits any request."""
    return UNLIMITED_MEMORY_MB if res.mem_per_node < 0 else res.mem_per_node


def taints() -> list[Body]:
    return [{"key": names.TAINT_KEY, "value": names.TAINT_VALUE, "effect": names.TAINT_EFFECT}]


def capacity(res: PartitionResources, ctx: NodeContext) -> dict[str, str]:
    nodes = max(res.nodes, 0)
    out = {
        "cpu": str(nodes * max(res.cpu_per_node, 0)),
        "memory": f"{nodes * _memory(res)}Mi",
        "pods": str(ctx.max_pods),
        "ephemeral-storage": "0",
    }
    if res.gpu_kinds:
        out.update({name: str(count) for name, count in _gpus(res, ctx).items()})
    elif res.gpu_per_node:
        out[names.GPU_RESOURCE] = str(nodes * res.gpu_per_node)
    return out


def _gpus(res: PartitionResources, ctx: NodeContext) -> dict[str, int]:
    return gpus.capacity({k.kind: k.total for k in res.gpu_kinds}, ctx.gpu_names)


def allocatable(
    res: PartitionResources, ctx: NodeContext, held: Mapping[str, int] | None = None
) -> dict[str, str]:
    """Capacity, GPUs less those Slurm says are in use other than by this node's running pods
    (``held``: the scheduler counts those against allocatable already)."""
    out = capacity(res, ctx)
    if res.gpu_kinds:
        used = gpus.capacity({k.kind: k.used for k in res.gpu_kinds}, ctx.gpu_names)
        free = gpus.allocatable(_gpus(res, ctx), used, held or {})
        out.update({name: str(count) for name, count in free.items()})
    return out


def conditions(res: PartitionResources, health: Health, *, heartbeat: str, ready_since: str) -> list[Body]:
    """Ready and WLMReachable; ``*_since`` are the last transition times the caller keeps."""
    up = res.state.upper() in ("UP", "")
    if not health.reachable:
        ready = ("False", "WLMUnreachable", f"red-box is unreachable: {health.message}".strip())
    elif not up:
        ready = ("False", "PartitionNotUp", f"Slurm partition {res.name} is {res.state}")
    else:
        ready = ("True", "KubeletReady", "kubelet is ready; Slurm partition is up")
    reachable = (
        ("True", "RedBoxReachable", "red-box answers")
        if health.reachable
        else ("False", "RedBoxUnreachable", health.message or "red-box does not answer")
    )
    return [
        _condition(READY, *ready, heartbeat=heartbeat, since=ready_since),
        _condition(REACHABLE, *reachable, heartbeat=heartbeat, since=health.since or ready_since),
    ]


def status(
    res: PartitionResources,
    ctx: NodeContext,
    health: Health,
    *,
    heartbeat: str,
    ready_since: str,
    held: Mapping[str, int] | None = None,
) -> Body:
    """The node's full ``status`` (``held``: GPUs this node's running pods hold, per resource)."""
    body: Body = {
        "capacity": capacity(res, ctx),
        "allocatable": allocatable(res, ctx, held),
        "conditions": conditions(res, health, heartbeat=heartbeat, ready_since=ready_since),
        "addresses": [
            {"type": "InternalIP", "address": ctx.node_ip},
            {"type": "Hostname", "address": names.node_name(ctx.cluster, res.name)},
        ],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": ctx.port}},
        "nodeInfo": {
            "machineID": "",
            "systemUUID": "",
            "bootID": "",
            "kernelVersion": platform.release(),
            "osImage": f"Slurm {ctx.wlm_version}".strip(),
            "containerRuntimeVersion": f"slurm://{ctx.wlm_version or 'unknown'}",
            "kubeletVersion": ctx.kubelet_version,
            "kubeProxyVersion": "",
            "operatingSystem": "linux",
            "architecture": _arch(),
        },
    }
    if ctx.declared_features is not None:
        body["declaredFeatures"] = list(ctx.declared_features)
    return body


def node_object(
    res: PartitionResources, ctx: NodeContext, health: Health, *, heartbeat: str, ready_since: str
) -> Body:
    """The Node to create for a partition."""
    name = names.node_name(ctx.cluster, res.name)
    # Several virtual nodes share one kubelet address: metrics-server follows
    # this annotation to a path that reports only this node.
    annotations = {
        "node.alpha.kubernetes.io/ttl": "0",
        resource_metrics.PATH_ANNOTATION: resource_metrics.node_path(name),
    }
    if ctx.red_box_socket:
        annotations[names.ANNOTATION_RED_BOX_SOCKET] = ctx.red_box_socket
    if ctx.red_boxes:
        annotations[names.ANNOTATION_RED_BOX_SOCKETS] = json.dumps(dict(ctx.red_boxes), sort_keys=True)
    if ctx.original_api:
        annotations[names.ANNOTATION_WORKING_DIR_IGNORED] = "true"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": labels(res, ctx),
            "annotations": annotations,
        },
        "spec": {"taints": taints()},
        "status": status(res, ctx, health, heartbeat=heartbeat, ready_since=ready_since),
    }


def visible(status_body: Body) -> Body:
    """The part of a node status that matters for "changed?" (heartbeat times removed)."""
    out = dict(status_body)
    out["conditions"] = [
        {k: v for k, v in condition.items() if k != "lastHeartbeatTime"}
        for condition in status_body.get("conditions", [])
    ]
    return out


def _condition(kind: str, value: str, reason: str, message: str, *, heartbeat: str, since: str) -> Body:
    return {
        "type": kind,
        "status": value,
        "reason": reason,
        "message": message,
        "lastHeartbeatTime": heartbeat,
        "lastTransitionTime": since,
    }


def _arch() -> str:
    machine = platform.machine().lower()
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine or "amd64")
