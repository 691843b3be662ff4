"""The host kubelet: an ordinary node whose pods run as processes on this machine.

A stand-in for the kubelet of the agent host, so that pods bound to a real
(non-virtual) node, such as the operator's staging pods, really run. It
registers its Node (named after the machine unless told otherwise, with the
usual ``kubernetes.io/hostname|os|arch`` labels, capacity from this machine,
Ready, the InternalIP and kubelet port), keeps its Lease in
``kube-node-lease`` renewed, re-posts Ready when the node lifecycle
controller marked it Unknown, and runs every pod bound to it with a
:class:`hostpods.PodWorker`.

The image of a container is recorded, not pulled: its ``command`` (and
``args``) run on the host, with ``PATH`` = ``HostKubeletConfig.path`` (the
project's virtualenv first, standing in for the image's PATH). Volumes are
bind-mounted at their mountPaths in a private mount namespace (see
``hostlaunch.py``; symbolic links where no namespace can be had), and the
process runs as the pod's ``runAsUser``/``runAsGroup``.

Run it with the API server: ``ApiServer(controllers=[controller(node_name=...)])``.
Its pods' logs are served by ``logproxy`` straight from the files it writes
(:func:`serving` finds the kubelet of a node).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import os
import platform
import shutil
import socket
import sys
import tempfile
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import structlog

from wlmvk.core.tasks import guarded, stop
from wlmvk.testing.apiserver import nodehealth, podenv, podresources, timestamps
from wlmvk.testing.apiserver.controllers import Controller
from wlmvk.testing.apiserver.errors import ApiError
from wlmvk.testing.apiserver.eventrecorder import EventRecorder
from wlmvk.testing.apiserver.hostpods import HostContext, PodWorker
from wlmvk.testing.apiserver.resources import LEASES, NODES, PODS, Obj
from wlmvk.testing.apiserver.store import Store

_log = structlog.get_logger(__name__)

KUBELET_VERSION = "v1.32.0"
ANNOTATION = "wlmvk.testing/host-kubelet"


def default_node_name() -> str:
    return socket.gethostname().split(".")[0].lower()


def default_path() -> str:
    """The project's virtualenv first (so ``wlmvk`` is found, as in the project's image), then the usual."""
    return f"{Path(sys.executable).parent}:{podenv.DEFAULT_PATH}"


@dataclass(frozen=True)
class HostKubeletConfig:
    node_name: str = field(default_factory=default_node_name)
    """Node name (default: this machine's short host name, lowercased)."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """Extra node labels (e.g. to mark the agent host)."""
    annotations: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Mapping[str, Any], ...] = ()
    address: str = "127.0.0.1"
    """The node's InternalIP, also the pods' hostIP and podIP (host networking)."""
    kubelet_port: int = 10250
    """Advertised in ``daemonEndpoints``; this kubelet serves logs through the API server only."""
    root: str | None = None
    """Pod directories and logs (default: a fresh directory under /tmp, removed on stop)."""
    path: str = field(default_factory=default_path)
    isolation: str = "auto"
    """Volumes: ``auto`` (mount namespace, else symlinks), ``namespace`` or ``symlink``."""
    max_pods: int = 110
    lease_duration_seconds: int = 40
    renew_interval: float = 10.0
    status_interval: float = 60.0
    """Seconds between node status heartbeats (the Lease is the frequent one)."""
    restart_backoff: float = 10.0
    max_restart_backoff: float = 300.0


_SERVING: weakref.WeakKeyDictionary[Store, dict[str, HostKubelet]] = weakref.WeakKeyDictionary()


def serving(store: Store, node_name: str) -> HostKubelet | None:
    """The host kubelet running for ``node_name`` on ``store``, if any."""
    return _SERVING.get(store, {}).get(node_name)


def controller(config: HostKubeletConfig | None = None, **overrides: Any) -> Controller:
    """A controller for ``ApiServer(controllers=[...])`` running a host kubelet."""
    return functools.partial(run, config=replace(config or HostKubeletConfig(), **overrides))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command-line options of ``wlmvk dev apiserver`` that start host kubelets."""
    parser.add_argument(
        "--host-node",
        action="append",
        default=[],
        metavar="NAME",
        help="register node NAME and run the pods bound to it as local processes (repeatable)",
    )
    parser.add_argument(
        "--host-node-label",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra label of the host nodes (repeatable)",
    )
    parser.add_argument(
        "--host-node-address", default="127.0.0.1", help="InternalIP of the host nodes (default 127.0.0.1)"
    )


def controllers_from(args: argparse.Namespace) -> list[Controller]:
    """Host kubelet controllers for the options of :func:`add_arguments`."""
    labels = dict(item.partition("=")[::2] for item in args.host_node_label)
    return [
        controller(node_name=name, labels=labels, address=args.host_node_address) for name in args.host_node
    ]


async def run(store: Store, *, config: HostKubeletConfig | None = None) -> None:
    """Be the kubelet of one node until cancelled; its processes are killed then."""
    kubelet = HostKubelet(store, config or HostKubeletConfig())
    _SERVING.setdefault(store, {})[kubelet.config.node_name] = kubelet
    try:
        await kubelet.serve()
    finally:
        _SERVING.get(store, {}).pop(kubelet.config.node_name, None)
        await kubelet.shutdown()


class HostKubelet:
    def __init__(self, store: Store, config: HostKubeletConfig) -> None:
        self.store = store
        self.config = config
        self._own_root = config.root is None
        root = Path(config.root or tempfile.mkdtemp(prefix="wlmvk-hostkubelet-", dir="/tmp"))
        root.mkdir(parents=True, exist_ok=True)
        # Containers running as other users must reach their emptyDirs below it.
        root.chmod(0o755)
        self.ctx = HostContext(
            store=store,
            node_name=config.node_name,
            host_ip=config.address,
            root=root,
            path=config.path,
            isolation=config.isolation,
            restart_backoff=config.restart_backoff,
            max_restart_backoff=config.max_restart_backoff,
            events=EventRecorder(store, component="kubelet", host=config.node_name),
        )
        self.workers: dict[str, PodWorker] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}

    def worker_for(self, pod: Obj) -> PodWorker | None:
        return self.workers.get(pod["metadata"].get("uid", ""))

    async def serve(self) -> None:
        node = self.register()
        _log.info("host kubelet registered", node=node["metadata"]["name"], root=str(self.ctx.root))
        heart = guarded(self._heartbeat(), name=f"host-kubelet-heartbeat:{self.config.node_name}")
        try:
            with self.store.watch(PODS, field_selector=f"spec.nodeName={self.config.node_name}") as pods:
                async for event in pods:
                    self._dispatch(event.type, event.object)
        finally:
            await stop(heart)

    async def shutdown(self) -> None:
        """Kill every container (the pods stay as they are) and remove our directory."""
        for worker in self.workers.values():
            worker.remove()
        await stop(*self._tasks.values())
        if self._own_root:
            shutil.rmtree(self.ctx.root, ignore_errors=True)

    # -- pods ----------------------------------------------------------------------------------

    def _dispatch(self, kind: str, pod: Obj) -> None:
        uid = pod["metadata"].get("uid", "")
        name, namespace = pod["metadata"]["name"], pod["metadata"]["namespace"]
        worker = self.workers.get(uid)
        if kind == "DELETED":
            if worker is not None:
                worker.remove()
            return
        if worker is not None:
            worker.update(pod)
            return
        if podresources.is_terminated(pod):
            return
        if pod["metadata"].get("deletionTimestamp"):
            # Never started here: nothing to stop, let the API server remove it.
            with contextlib.suppress(ApiError):
                self.store.delete(PODS, name, namespace, grace_period_seconds=0)
            return
        worker = PodWorker(self.ctx, pod)
        self.workers[uid] = worker
        task = guarded(worker.run(), name=f"host-pod:{namespace}/{name}")
        self._tasks[uid] = task
        task.add_done_callback(functools.partial(self._forget, uid))

    def _forget(self, uid: str, _task: object = None) -> None:
        self.workers.pop(uid, None)
        self._tasks.pop(uid, None)

    # -- the node --------------------------------------------------------------------------------

    def register(self) -> Obj:
        """Create our Node, or bring an existing one up to date (labels, capacity, Ready)."""
        body = node_body(self.config, self.store)
        try:
            node = self.store.get(NODES, self.config.node_name)
        except ApiError:
            node = self.store.create(NODES, body)
        else:
            node["metadata"].setdefault("labels", {}).update(body["metadata"]["labels"])
            node["metadata"].setdefault("annotations", {}).update(body["metadata"]["annotations"])
            node = self.store.update(NODES, node)
        node["status"] = body["status"]
        return self.store.update(NODES, node, subresource="status")

    async def _heartbeat(self) -> None:
        loop = asyncio.get_running_loop()
        last_status = loop.time()
        while True:
            try:
                self._renew_lease()
                if loop.time() - last_status >= self.config.status_interval or not self._ready():
                    self._post_ready()
                    last_status = loop.time()
            except ApiError as exc:
                _log.warning("host kubelet heartbeat failed", node=self.config.node_name, error=exc.message)
            await asyncio.sleep(self.config.renew_interval)

    def _renew_lease(self) -> None:
        name = self.config.node_name
        now = timestamps.format_micro(self.store.now())
        try:
            lease = self.store.get(LEASES, name, nodehealth.LEASE_NAMESPACE)
        except ApiError:
            node = self.store.get(NODES, name)
            owner = {"apiVersion": "v1", "kind": "Node", "name": name, "uid": node["metadata"]["uid"]}
            body = {
                "metadata": {
                    "name": name,
                    "namespace": nodehealth.LEASE_NAMESPACE,
                    "ownerReferences": [owner],
                },
                "spec": {
                    "holderIdentity": name,
                    "leaseDurationSeconds": self.config.lease_duration_seconds,
                    "renewTime": now,
                },
            }
            self.store.create(LEASES, body)
            return
        lease.setdefault("spec", {})["renewTime"] = now
        lease["spec"]["holderIdentity"] = name
        self.store.update(LEASES, lease)

    def _ready(self) -> bool:
        node = self.store.get(NODES, self.config.node_name)
        return any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in (node.get("status") or {}).get("conditions") or []
        )

    def _post_ready(self) -> None:
        node = self.store.get(NODES, self.config.node_name)
        node.setdefault("status", {})["conditions"] = _conditions(self.store, node)
        self.store.update(NODES, node, subresource="status")


def node_body(config: HostKubeletConfig, store: Store) -> Obj:
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    labels = {
        "kubernetes.io/hostname": config.node_name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": arch,
        "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": arch,
        **config.labels,
    }
    capacity = {
        "cpu": str(os.cpu_count() or 1),
        "memory": f"{_mem_total_kib()}Ki",
        "pods": str(config.max_pods),
        "ephemeral-storage": f"{shutil.disk_usage('/').total // 1024}Ki",
    }
    return {
        "metadata": {
            "name": config.node_name,
            "labels": labels,
            "annotations": {ANNOTATION: "true", **config.annotations},
        },
        "spec": {"taints": [dict(t) for t in config.taints]} if config.taints else {},
        "status": {
            "capacity": capacity,
            "allocatable": dict(capacity),
            "conditions": _conditions(store, None),
            "addresses": [
                {"type": "InternalIP", "address": config.address},
                {"type": "Hostname", "address": config.node_name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": config.kubelet_port}},
            "nodeInfo": {
                "machineID": _read("/etc/machine-id"),
                "systemUUID": "",
                "bootID": _read("/proc/sys/kernel/random/boot_id"),
                "kernelVersion": platform.release(),
                "osImage": _os_image(),
                "containerRuntimeVersion": "wlmvk-host://0.1.0",
                "kubeletVersion": KUBELET_VERSION,
                "kubeProxyVersion": "",
                "operatingSystem": "linux",
                "architecture": arch,
            },
        },
    }


_HEALTHY = (
    ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
)


def _conditions(store: Store, node: Obj | None) -> list[dict[str, Any]]:
    now = timestamps.format_time(store.now())
    old = {c.get("type"): c for c in ((node or {}).get("status") or {}).get("conditions") or []}
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
