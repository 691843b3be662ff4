"""The host node's Node object and heartbeat: registration, Lease renewal, Ready status.

``node_body`` describes this machine as a Node (the usual
``kubernetes.io/hostname|os|arch`` labels, capacity from this machine, the
InternalIP and the kubelet port it really serves on, Ready). ``register``
creates it or brings an existing one up to date; ``heartbeat`` renews the
Lease in ``kube-node-lease`` every ``renew_interval`` and posts the conditions
every ``status_interval``, or at once when someone (the node lifecycle
controller) marked the node not Ready.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import platform
import shutil
from pathlib import Path
from typing import Any

import structlog

from wlmvk.core.errors import NotFound, WlmvkError
from wlmvk.kube import leases
from wlmvk.kube.bodies import NODES, Body, OwnerReference
from wlmvk.kube.client import KubeClient
from wlmvk.kube.errors import AlreadyExists
from wlmvk.kube.times import rfc3339
from wlmvk.kube.version import KUBERNETES_VERSION
from wlmvk_dev.hostnode.config import NodeConfig

_log = structlog.get_logger(__name__)

KUBELET_VERSION = KUBERNETES_VERSION
ANNOTATION = "wlmvk.testing/host-kubelet"
LEASE_NAMESPACE = "kube-node-lease"

_HEALTHY = (
    ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
)


def arch() -> str:
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())


def capacity(config: NodeConfig) -> dict[str, str]:
    return {
        "cpu": str(os.cpu_count() or 1),
        "memory": f"{_mem_total_kib()}Ki",
        "pods": str(config.max_pods),
        "ephemeral-storage": f"{shutil.disk_usage('/').total // 1024}Ki",
    }


def node_body(config: NodeConfig, *, port: int, now: str) -> Body:
    """This machine as the Node ``config.node_name`` whose kubelet serves on ``port``."""
    machine = arch()
    labels = {
        "kubernetes.io/hostname": config.node_name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": machine,
        "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": machine,
        **config.labels,
    }
    resources = capacity(config)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": config.node_name,
            "labels": labels,
            "annotations": {ANNOTATION: "true", **config.annotations},
        },
        "spec": {"taints": [dict(t) for t in config.taints]} if config.taints else {},
        "status": {
            "capacity": resources,
            "allocatable": dict(resources),
            "conditions": conditions([], now=now),
            "addresses": [
                {"type": "InternalIP", "address": config.address},
                {"type": "Hostname", "address": config.node_name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": port}},
            "nodeInfo": {
                "machineID": _read("/etc/machine-id"),
                "systemUUID": _read("/sys/class/dmi/id/product_uuid"),
                "bootID": _read("/proc/sys/kernel/random/boot_id"),
                "kernelVersion": platform.release(),
                "osImage": _os_image(),
                "containerRuntimeVersion": "wlmvk-host://0.1.0",
                "kubeletVersion": KUBELET_VERSION,
                "kubeProxyVersion": "",
                "operatingSystem": "linux",
                "architecture": machine,
            },
        },
    }


def conditions(previous: list[dict[str, Any]], *, now: str) -> list[dict[str, Any]]:
    """The healthy conditions; lastTransitionTime kept from ``previous`` while a status stays."""
    old = {c.get("type"): c for c in previous}
    out = []
    for kind, status, reason, message in _HEALTHY:
        before = old.get(kind)
        since = before.get("lastTransitionTime") if before and before.get("status") == status else None
        out.append(
            {
                "type": kind,
                "status": status,
                "reason": reason,
                "message": message,
                "lastHeartbeatTime": now,
                "lastTransitionTime": since or now,
            }
        )
    return out


def is_ready(node: Body) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (node.get("status") or {}).get("conditions") or []
    )


async def register(client: KubeClient, config: NodeConfig, *, port: int) -> Body:
    """Create our Node, or bring an existing one up to date (labels, capacity, Ready)."""
    body = node_body(config, port=port, now=rfc3339())
    try:
        node = await client.create(NODES, body)
    except AlreadyExists:
        # Taints only at creation, as the kubelet's --register-with-taints: NodeRestriction
        # forbids a node to change its own taints.
        meta = body["metadata"]
        patch: Body = {"metadata": {"labels": meta["labels"], "annotations": meta["annotations"]}}
        node = await client.patch(NODES, config.node_name, patch)
    status = dict(body["status"])
    status["conditions"] = conditions((node.get("status") or {}).get("conditions") or [], now=rfc3339())
    return await client.patch_status(NODES, config.node_name, {"status": status})


async def heartbeat(client: KubeClient, config: NodeConfig, *, port: int) -> None:
    """Renew the Lease and post Ready until cancelled (re-registering a Node deleted meanwhile)."""
    loop = asyncio.get_running_loop()
    last_status = loop.time()
    owner: OwnerReference | None = None
    while True:
        try:
            node = await client.get(NODES, config.node_name)
            uid = str(node["metadata"]["uid"])
            owner = {"apiVersion": "v1", "kind": "Node", "name": config.node_name, "uid": uid}
            await _renew(client, config, owner)
            if loop.time() - last_status >= config.status_interval or not is_ready(node):
                previous = (node.get("status") or {}).get("conditions") or []
                patch = {"status": {"conditions": conditions(previous, now=rfc3339())}}
                await client.patch_status(NODES, config.node_name, patch)
                last_status = loop.time()
        except NotFound:
            _log.warning("host node is gone, registering it again", node=config.node_name)
            with contextlib.suppress(WlmvkError):
                await register(client, config, port=port)
        except WlmvkError as exc:
            _log.warning("host node heartbeat failed", node=config.node_name, error=exc.message)
        await asyncio.sleep(config.renew_interval)


async def _renew(client: KubeClient, config: NodeConfig, owner: OwnerReference) -> None:
    name, duration = config.node_name, config.lease_duration_seconds
    try:
        await leases.renew(client, name, LEASE_NAMESPACE, holder=name, duration=duration)
    except NotFound:
        await leases.ensure(client, name, LEASE_NAMESPACE, holder=name, duration=duration, owner=owner)


def _mem_total_kib() -> int:
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1])
    return 1024 * 1024


def _read(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""


def _os_image() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip('"')
    return "Linux"
