"""``wlmvk kubelet``: the process that serves one red-box's partitions as nodes.

``serve()`` follows the uvicorn shape: startup (connect to the API server
and red-box, start the HTTPS and metrics servers, register nodes, take in
the first pod listing), the main loop (controllers run as guarded tasks
until SIGTERM/SIGINT), shutdown (cancel, close servers and clients).

With ``--leader-elect`` startup first waits, as a standby, until this process
holds the cluster's Lease (``standby``); its writes are then fenced by that
Lease, and losing it ends the process (exit 1) so that it comes back standing by.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import sys
from typing import Any

import structlog
from aiohttp import web

from wlmvk import __version__
from wlmvk.core import logging as wlmvk_logging
from wlmvk.core import loop as event_loop
from wlmvk.core.backend import Backend
from wlmvk.core.errors import WlmvkError
from wlmvk.core.tasks import guarded, stop
from wlmvk.kube import tls
from wlmvk.kube.client import KubeClient
from wlmvk.kube.events import EventPoster
from wlmvk.kube.fencing import FencedClient
from wlmvk.kube.leader import Elector
from wlmvk.kube.tenants import TenantWatch
from wlmvk.kube.version import declared_features, kubelet_version
from wlmvk.kubelet import flags, standby
from wlmvk.kubelet.api import server
from wlmvk.kubelet.api.auth.gate import AuthSettings, Gate
from wlmvk.kubelet.api.exec import executing
from wlmvk.kubelet.api.stats import sampling
from wlmvk.kubelet.handlers import PodHandlers
from wlmvk.kubelet.metered import MeteredBackend
from wlmvk.kubelet.metrics import KubeletMetrics
from wlmvk.kubelet.node import nodes
from wlmvk.kubelet.node.controller import NodeController, NodeTimings
from wlmvk.kubelet.node.directory import NodeDirectory
from wlmvk.kubelet.node.reachability import Reachability
from wlmvk.kubelet.pods.controller import PodController, PodSettings
from wlmvk.kubelet.pods.observing import StateLooks
from wlmvk.kubelet.pods.tenants import TenantRoutes
from wlmvk.kubelet.settings import Settings
from wlmvk.kubelet.tenantstatus import TenantStatusWriter
from wlmvk.redboxclient.client import RedBoxClient

_log = structlog.get_logger(__name__)

# Seconds a kubelet that lost the cluster Lease gives its shutdown before it exits anyway.
LOST_LEASE_SHUTDOWN = 5.0


def red_box_backend(socket_path: str, *, timeout: float) -> Backend:
    """The red-box gRPC client."""
    return RedBoxClient(socket_path, timeout=timeout)


class Kubelet:
    """One running kubelet: its controllers, servers and clients."""

    def __init__(self, settings: Settings, *, backend: Backend | None = None) -> None:
        self.settings = settings
        self._raw_backend = backend
        self.reachability = Reachability()
        self.directory = NodeDirectory(settings.cluster_name)
        self.pods: PodController | None = None
        self.nodes: NodeController | None = None
        self.metrics = KubeletMetrics(lambda: self.pods.phases() if self.pods else {})
        self.port = settings.port
        self.metrics_port = settings.metrics_port
        self._tasks: list[asyncio.Task[Any]] = []
        self._runners: list[web.AppRunner] = []
        self._client: KubeClient | None = None
        self._backend: MeteredBackend | None = None
        self._tenant_backends: dict[str, RedBoxClient] = {}
        self.tenants: TenantRoutes | None = None
        self.tenant_status: TenantStatusWriter | None = None
        self.stats: sampling.StatsSource | None = None
        self.handlers: PodHandlers | None = None
        self.elector: Elector | None = None
        self.lost_lease = False

    async def start(self) -> None:
        s = self.settings
        raw = self._raw_backend or red_box_backend(s.red_box_socket, timeout=s.wlm_timeout)
        self._raw_backend = raw
        backend = MeteredBackend(raw, metrics=self.metrics, reachability=self.reachability)
        self._backend = backend
        self._client = client = await KubeClient.connect(s.kubeconfig)
        writer: KubeClient = client
        changer: Backend = backend
        if s.leader_elect:
            elector = await self._stand_by(client)
            # Renewing from now on: the start below may wait on red-box longer than the Lease lasts.
            self._tasks.append(guarded(self._hold(elector), name="cluster lease"))
            writer = FencedClient(client, check=elector.check)
            changer = standby.FencedBackend(backend, check=elector.check)
            if isinstance(raw, RedBoxClient):
                raw.fence_with(standby.LeaseFence(elector))
        host = s.agent_host or socket.gethostname()
        events = EventPoster(writer, component="wlmvk-kubelet", host=host)
        self._tenant_backends = {
            user: RedBoxClient(path, timeout=s.wlm_timeout) for user, path in s.red_boxes
        }
        red_boxes: dict[str, Backend] = dict(self._tenant_backends)
        if s.leader_elect:
            red_boxes = {user: standby.FencedBackend(b, check=elector.check) for user, b in red_boxes.items()}
        watcher = TenantWatch(client=client)
        self._tasks.append(guarded(watcher.run(), name="tenants"))
        # Read-only questions to the red-boxes (unfenced): the default's one look at every tenant
        # user, each tenant user's own when the look cannot tell; the status writes are fenced.
        self.tenant_status = status_writer = TenantStatusWriter(
            client=writer,
            watch=watcher,
            cluster=s.cluster_name,
            red_boxes=self._tenant_backends,
            observer=raw if self._tenant_backends and isinstance(raw, RedBoxClient) else None,
        )
        self._tasks.append(guarded(status_writer.run(), name="tenant status"))
        # With tenants' red-boxes, one look at every job per tick through the default's (observing).
        looks = None
        if self._tenant_backends and isinstance(raw, RedBoxClient):
            looks = StateLooks(observer=raw, followers=self._tenant_backends)
        self.tenants = TenantRoutes(
            default=changer, cluster=s.cluster_name, red_boxes=red_boxes, watch=watcher, looks=looks
        )
        self.pods = PodController(
            client=writer,
            backend=changer,
            events=events,
            directory=self.directory,
            metrics=self.metrics,
            settings=PodSettings(
                host_ip=s.node_ip,
                jobs_root=s.jobs_root,
                status_interval=s.status_interval,
                workers=s.workers,
                submissions=s.submissions,
                gpu_names=dict(s.gpu_names),
                sif_gpu_flags=s.sif_gpu_flags,
            ),
            tenants=self.tenants,
        )
        await self._serve_http()
        reported = await self._kubelet_version(client)
        context = nodes.NodeContext(
            kubelet_version=reported,
            declared_features=declared_features(reported, websockets=s.websockets_to_kubelet),
            cluster=s.cluster_name,
            agent_host=s.agent_host,
            node_ip=s.node_ip,
            port=self.port,
            max_pods=s.max_pods,
            red_box_socket=s.red_box_socket,
            red_boxes=s.red_boxes,
            gpu_names=dict(s.gpu_names),
        )
        self.nodes = NodeController(
            client=writer,
            backend=changer,
            directory=self.directory,
            context=context,
            reachability=self.reachability,
            held=self.pods.gpus_held,
            metrics=self.metrics,
            timings=NodeTimings(
                discovery_interval=s.discovery_interval,
                status_interval=s.node_status_interval,
                lease_duration=s.lease_duration,
                lease_renew_interval=s.lease_renew_interval,
            ),
        )
        await self.nodes.start()
        self._tasks.append(guarded(self.nodes.run(), name="nodes"))
        self._tasks.append(guarded(self.pods.run(), name="pods"))
        await self.pods.synced()
        _log.info(
            "kubelet started",
            cluster=s.cluster_name,
            nodes=sorted(self.directory.partitions),
            port=self.port,
            metrics_port=self.metrics_port,
        )

    async def _kubelet_version(self, client: KubeClient) -> str:
        """The version the nodes report: the API server's, asked once at start (wlmvk.kube.version)."""
        try:
            answer = await client.version()
        except WlmvkError as exc:
            _log.warning("API server version unknown: nodes report wlmvk's", error=exc.message)
            return nodes.KUBELET_VERSION
        reported = kubelet_version(answer, __version__)
        _log.info("nodes report", kubelet_version=reported, server=answer.get("gitVersion"))
        return reported

    async def _stand_by(self, client: KubeClient) -> Elector:
        """Wait, as a standby, until this process holds the cluster's Lease."""
        s = self.settings
        config = standby.election(
            s.cluster_name,
            standby.identity(s.agent_host),
            duration=s.leader_lease_duration,
            renew_interval=s.leader_renew_interval,
            retry_interval=s.leader_retry_interval,
        )
        self.elector = elector = Elector(client, config)
        _log.info(
            "standing by for the cluster Lease",
            lease=config.name,
            identity=config.identity,
            takeover_within=standby.takeover_bound(config),
        )
        await elector.acquire()
        _log.info("holding the cluster Lease: serving its nodes", lease=config.name, identity=config.identity)
        return elector

    async def _hold(self, elector: Elector) -> None:
        """Renew the cluster Lease; its loss ends the process (its writes are fenced already)."""
        await elector.hold()
        self.lost_lease = True
        _log.error("cluster Lease lost: stopping (fenced, nothing more is written)")

    async def _serve_http(self) -> None:
        s = self.settings
        assert self.pods is not None
        assert self._backend is not None
        self.handlers = pods = PodHandlers(
            pods=self.pods,
            backend=self._backend,
            directory=self.directory,
            host_ip=s.node_ip,
            tenants=self.pods.provider.tenants,
        )
        self.stats = sampling.StatsSource(
            backend=self._backend,
            pods=pods.running,
            nodes=lambda: sorted(self.directory.owned),
            interval=s.stats_interval,
            holders=self.tenants.red_boxes if self.tenants is not None else None,
        )
        executor = executing.Executor(lookup=pods.exec_target, backend=self._backend)
        handlers = server.Handlers(
            logs=pods.logs,
            pods=pods.listed,
            healthy=lambda: self.reachability.reachable,
            summary=self.stats.summary,
            resource_metrics=self.stats.resource_metrics,
            exec=executor.run,
            exec_check=executor.check,
        )
        context = tls.server_context(
            cert=s.tls_cert,
            key=s.tls_key,
            client_ca=s.client_ca,
            names=["localhost", socket.gethostname()],
            addresses=sorted({s.node_ip, "127.0.0.1"}),
        )
        assert self._client is not None
        gate = Gate(
            AuthSettings(
                anonymous=s.anonymous_auth,
                token_webhook=s.authentication_token_webhook,
                authorization_mode=s.authorization_mode,
            ),
            create=self._client.create,
            nodes_for=pods.nodes_for,
        )
        api = server.kubelet_app(handlers, gate=gate)
        runner = web.AppRunner(api, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, s.listen_host, s.port, ssl_context=context)
        await site.start()
        self._runners.append(runner)
        self.port = _bound_port(runner, s.port)
        if s.metrics_port >= 0:
            metrics_runner = web.AppRunner(server.metrics_app(self.metrics.render), access_log=None)
            await metrics_runner.setup()
            await web.TCPSite(metrics_runner, s.metrics_host, s.metrics_port).start()
            self._runners.append(metrics_runner)
            self.metrics_port = _bound_port(metrics_runner, s.metrics_port)

    async def serve_forever(self) -> None:
        stopping = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stopping.set)
        stop_waiter = asyncio.ensure_future(stopping.wait())
        try:
            await asyncio.wait([stop_waiter, *self._tasks], return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop_waiter.cancel()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)

    async def close(self) -> None:
        _log.info("stopping", lost_lease=self.lost_lease)
        await stop(*self._tasks)
        if self.elector is not None and not self.lost_lease:
            # Nothing of ours writes any more: the standby may take over without waiting for expiry.
            await self.elector.release()
        for runner in self._runners:
            await runner.cleanup()
        if self._client is not None:
            await self._client.close()
        for backend in [self._raw_backend, *self._tenant_backends.values()]:
            close = getattr(backend, "close", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    result = close()
                    if asyncio.iscoroutine(result):
                        await result


def _bound_port(runner: web.AppRunner, wanted: int) -> int:
    for address in runner.addresses:
        if isinstance(address, tuple) and len(address) >= 2:
            return int(address[1])
    return wanted


async def serve(settings: Settings) -> int:
    kubelet = Kubelet(settings)
    try:
        await kubelet.start()
        await kubelet.serve_forever()
    finally:
        if kubelet.lost_lease:
            # Fenced already: the shutdown is only tidiness, and must not keep a lost holder alive
            # (connections to wait for, calls stopped mid-way by SIGSTOP).
            try:
                await asyncio.wait_for(kubelet.close(), LOST_LEASE_SHUTDOWN)
            except TimeoutError:
                _log.warning("shutdown cut short: the cluster Lease was lost", seconds=LOST_LEASE_SHUTDOWN)
        else:
            await kubelet.close()
    return 1 if kubelet.lost_lease else 0


def main(argv: list[str]) -> int:
    settings = flags.parse(argv)
    wlmvk_logging.configure(settings.log_level, cache=True)
    try:
        return event_loop.run(serve(settings))
    except WlmvkError as exc:
        print(f"wlmvk kubelet: {exc.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
