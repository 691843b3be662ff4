"""The host node's kubelet: serve the kubelet API, register the Node, run the pods bound to it.

``run(client, config)`` is the whole agent, a client of any API server
through ``KubeClient``: it starts the kubelet HTTPS API (on
``config.kubelet_port``, 0 for a free one), registers the Node with the port
it really serves on, keeps the heartbeat (``nodes.heartbeat``), and mirrors
the pods with ``spec.nodeName`` = this node (list+watch): each new pod gets a
``pods.PodWorker``; a pod marked for deletion that never started here is
deleted at once with grace 0; a pod gone from the API server has its
processes killed. On cancellation every process is killed (the pods stay as
they are) and a directory made for the run is removed.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import structlog
from aiohttp import web

from wlmvk.core.errors import NotFound, WlmvkError
from wlmvk.core.tasks import guarded, stop
from wlmvk.kube import tls, watching
from wlmvk.kube.bodies import PODS, Body, is_deleting, name_of, namespace_of
from wlmvk.kube.client import KubeClient
from wlmvk.kube.events import EventPoster, EventQueue
from wlmvk_dev.hostnode import nodes, podstatus, server
from wlmvk_dev.hostnode.config import NodeConfig
from wlmvk_dev.hostnode.context import HostContext
from wlmvk_dev.hostnode.pods import PodWorker

_log = structlog.get_logger(__name__)


async def run(
    client: KubeClient, config: NodeConfig, *, on_registered: Callable[[int], None] | None = None
) -> None:
    """Be the kubelet of ``config.node_name`` until cancelled; its processes are killed then.

    ``on_registered(port)`` hears when the Node is registered, with the kubelet API's port.
    """
    kubelet = HostKubelet(client, config)
    try:
        await kubelet.serve(on_registered=on_registered)
    finally:
        await kubelet.shutdown()


class HostKubelet:
    def __init__(self, client: KubeClient, config: NodeConfig) -> None:
        self.client = client
        self.config = config
        self._own_root = config.root is None
        root = Path(config.root or tempfile.mkdtemp(prefix="wlmvk-hostnode-", dir="/tmp"))
        root.mkdir(parents=True, exist_ok=True)
        # Containers running as other users must reach their emptyDirs below it.
        root.chmod(0o755)
        self.events = EventQueue(EventPoster(client, component="kubelet", host=config.node_name))
        self.ctx = HostContext(
            client=client,
            node_name=config.node_name,
            host_ip=config.address,
            root=root,
            path=config.path,
            isolation=config.isolation,
            restart_backoff=config.restart_backoff,
            max_restart_backoff=config.max_restart_backoff,
            events=self.events,
            allocatable=nodes.capacity(config),
            images=config.images,
            image_paths=config.image_paths,
            service_env=config.service_env,
        )
        self.workers: dict[str, PodWorker] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._runner: web.AppRunner | None = None
        self.port = 0

    async def serve(self, *, on_registered: Callable[[int], None] | None = None) -> None:
        self.port = await self._serve_api()
        await nodes.register(self.client, self.config, port=self.port)
        _log.info("host node registered", node=self.config.node_name, port=self.port, root=str(self.ctx.root))
        if on_registered is not None:
            on_registered(self.port)
        name = self.config.node_name
        helpers = [
            guarded(
                nodes.heartbeat(self.client, self.config, port=self.port), name=f"host-node-heartbeat:{name}"
            ),
            guarded(self.events.run(), name=f"host-node-events:{name}"),
        ]
        try:
            options = watching.WatchOptions(field_selector=f"spec.nodeName={name}")
            async for event in watching.watch(self.client, PODS, options):
                if isinstance(event, watching.Listed):
                    self._relisted(event.items)
                else:
                    self._dispatch(event.type, event.object)
        finally:
            await stop(*helpers)

    async def shutdown(self) -> None:
        """Kill every container (the pods stay as they are), stop serving, remove our directory."""
        for worker in self.workers.values():
            worker.remove()
        await stop(*self._tasks.values())
        if self._runner is not None:
            await self._runner.cleanup()
        if self._own_root:
            shutil.rmtree(self.ctx.root, ignore_errors=True)

    # -- the kubelet API -------------------------------------------------------------------------

    async def _serve_api(self) -> int:
        context = tls.server_context(
            cert=self.config.tls_cert,
            key=self.config.tls_key,
            client_ca="",
            names=[self.config.node_name, "localhost"],
            addresses=[self.config.address],
        )
        self._runner = web.AppRunner(
            server.kubelet_app(self.log_file),
            access_log=None,
            shutdown_timeout=1.0,
            handler_cancellation=True,
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.config.address, self.config.kubelet_port, ssl_context=context)
        await site.start()
        sockets = getattr(site._server, "sockets", None) or []
        return int(sockets[0].getsockname()[1]) if sockets else self.config.kubelet_port

    def log_file(self, namespace: str, pod: str, container: str, previous: bool) -> server.LogFile:
        found = [w for w in self.workers.values() if (w.namespace, w.name) == (namespace, pod)]
        if not found:
            raise NotFound(f'pod "{pod}" in namespace "{namespace}" is not running on this node')
        found.sort(key=lambda w: w.removed)
        return found[0].log_file(container, previous=previous)

    # -- pods ------------------------------------------------------------------------------------

    def _relisted(self, items: list[Body]) -> None:
        present = {str(item["metadata"].get("uid", "")) for item in items}
        for uid, worker in list(self.workers.items()):
            if uid not in present:
                worker.remove()
        for item in items:
            self._dispatch("ADDED", item)

    def _dispatch(self, kind: str, pod: Body) -> None:
        uid = str(pod["metadata"].get("uid", ""))
        worker = self.workers.get(uid)
        if kind == "DELETED":
            if worker is not None:
                worker.remove()
            return
        if worker is not None:
            worker.update(pod)
            return
        if uid in self._tasks:
            return
        name, namespace = name_of(pod), namespace_of(pod)
        if is_deleting(pod):
            # Never started (or finished) here: nothing to stop, let the API server remove it.
            self._tasks[uid] = guarded(self._delete(pod), name=f"host-pod-delete:{namespace}/{name}")
            self._tasks[uid].add_done_callback(functools.partial(self._forget, uid))
            return
        if podstatus.is_finished(pod):
            return
        worker = PodWorker(self.ctx, pod)
        self.workers[uid] = worker
        task = guarded(worker.run(), name=f"host-pod:{namespace}/{name}")
        self._tasks[uid] = task
        task.add_done_callback(functools.partial(self._forget, uid))

    async def _delete(self, pod: Body) -> None:
        with contextlib.suppress(WlmvkError):
            await self.client.delete(
                PODS,
                name_of(pod),
                namespace=namespace_of(pod),
                grace_period_seconds=0,
                uid=pod["metadata"]["uid"],
            )

    def _forget(self, uid: str, _task: object = None) -> None:
        self.workers.pop(uid, None)
        self._tasks.pop(uid, None)
