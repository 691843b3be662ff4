"""``wlmvk kubelet``: the process that serves one red-box's partitions as nodes (or several
red-boxes', one per cluster: ``serving`` holds each cluster's parts, ``routing`` the shared API's).

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
import signal
import socket
import sys
from collections.abc import Callable
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
from wlmvk.kube.fencing import FencedClient
from wlmvk.kube.leader import Elector
from wlmvk.kube.tenants import TenantWatch
from wlmvk.kube.version import kubelet_version
from wlmvk.kubelet import flags, standby
from wlmvk.kubelet.api import server
from wlmvk.kubelet.api.auth.gate import AuthSettings, Gate
from wlmvk.kubelet.api.exec import executing
from wlmvk.kubelet.api.stats import sampling
from wlmvk.kubelet.handlers import PodHandlers
from wlmvk.kubelet.metrics import KubeletMetrics, render_clusters
from wlmvk.kubelet.node import nodes
from wlmvk.kubelet.node.controller import NodeController
from wlmvk.kubelet.node.directory import NodeDirectory
from wlmvk.kubelet.node.reachability import Reachability
from wlmvk.kubelet.pods.controller import PodController
from wlmvk.kubelet.pods.tenants import TenantRoutes
from wlmvk.kubelet.routing import ClusterRoutes, Served
from wlmvk.kubelet.serving import ClusterServing
from wlmvk.kubelet.settings import Settings
from wlmvk.kubelet.tenantstatus import TenantStatusWriter

_log = structlog.get_logger(__name__)

# Seconds a kubelet that lost the cluster Lease gives its shutdown before it exits anyway.
LOST_LEASE_SHUTDOWN = 5.0


class Kubelet:
    """One running kubelet: its served clusters (``serving``), servers and shared clients."""

    def __init__(self, settings: Settings, *, backend: Backend | None = None) -> None:
        self.settings = settings
        # A backend given (tests, benchmarks) is the first cluster's; the others' are red-box clients.
        self.clusters = [
            ClusterServing(one, backend=backend if index == 0 else None)
            for index, one in enumerate(settings.served())
        ]
        self.port = settings.port
        self.metrics_port = settings.metrics_port
        self._tasks: list[asyncio.Task[Any]] = []
        self._runners: list[web.AppRunner] = []
        self._client: KubeClient | None = None
        self.elector: Elector | None = None
        self.lost_lease = False

    # The first (with one cluster, the only) cluster's parts, as before kubelets served several.
    @property
    def _first(self) -> ClusterServing:
        return self.clusters[0]

    @property
    def directory(self) -> NodeDirectory:
        return self._first.directory

    @property
    def reachability(self) -> Reachability:
        return self._first.reachability

    @property
    def metrics(self) -> KubeletMetrics:
        return self._first.metrics

    @property
    def pods(self) -> PodController | None:
        return self._first.pods

    @property
    def nodes(self) -> NodeController | None:
        return self._first.nodes

    @property
    def tenants(self) -> TenantRoutes | None:
        return self._first.tenants

    @property
    def tenant_status(self) -> TenantStatusWriter | None:
        return self._first.tenant_status

    @property
    def stats(self) -> sampling.StatsSource | None:
        return self._first.stats

    @property
    def handlers(self) -> PodHandlers | None:
        return self._first.handlers

    async def start(self) -> None:
        s = self.settings
        self._client = client = await KubeClient.connect(s.kubeconfig)
        writer: KubeClient = client
        elector: Elector | None = None
        if s.leader_elect:
            elector = await self._stand_by(client)
            # Renewing from now on: the start below may wait on red-box longer than the Lease lasts.
            self._tasks.append(guarded(self._hold(elector), name="cluster lease"))
            writer = FencedClient(client, check=elector.check)
        host = s.agent_host or socket.gethostname()
        watcher = TenantWatch(client=client)
        self._tasks.append(guarded(watcher.run(), name="tenants"))
        for cluster in self.clusters:
            cluster.start_pods(writer=writer, elector=elector, watcher=watcher, host=host)
        await self._serve_http()
        reported = await self._kubelet_version(client)
        for cluster in self.clusters:
            await cluster.start_nodes(writer=writer, port=self.port, reported=reported)
            self._tasks += cluster.tasks
        for cluster in self.clusters:
            assert cluster.pods is not None
            await cluster.pods.synced()
            _log.info(
                "kubelet started",
                cluster=cluster.name,
                nodes=sorted(cluster.directory.partitions),
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
        handlers = self._handlers()
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
            nodes_for=self._nodes_for(),
        )
        api = server.kubelet_app(handlers, gate=gate)
        runner = web.AppRunner(api, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, s.listen_host, s.port, ssl_context=context)
        await site.start()
        self._runners.append(runner)
        self.port = _bound_port(runner, s.port)
        if s.metrics_port >= 0:
            metrics_runner = web.AppRunner(server.metrics_app(self._render_metrics), access_log=None)
            await metrics_runner.setup()
            await web.TCPSite(metrics_runner, s.metrics_host, s.metrics_port).start()
            self._runners.append(metrics_runner)
            self.metrics_port = _bound_port(metrics_runner, s.metrics_port)

    def _handlers(self) -> server.Handlers:
        """The API's handlers: the one cluster's, or routed to each request's cluster (``routing``)."""
        first = self._first
        assert first.handlers is not None
        assert first.stats is not None
        assert first.executor is not None
        if len(self.clusters) == 1:
            pods, stats, executor = first.handlers, first.stats, first.executor
            logs, listed, summary, resource = pods.logs, pods.listed, stats.summary, stats.resource_metrics
        else:
            routes = self._routes()
            executor = executing.Executor(lookup=routes.exec_target, backend=first.backend)
            logs, listed, summary, resource = (
                routes.logs,
                routes.listed,
                routes.summary,
                routes.resource_metrics,
            )
        return server.Handlers(
            logs=logs,
            pods=listed,
            healthy=lambda: all(cluster.reachability.reachable for cluster in self.clusters),
            summary=summary,
            resource_metrics=resource,
            exec=executor.run,
            exec_check=executor.check,
        )

    def _routes(self) -> ClusterRoutes:
        served = []
        for cluster in self.clusters:
            assert cluster.handlers is not None
            assert cluster.stats is not None
            served.append(Served(handlers=cluster.handlers, stats=cluster.stats, owns=cluster.directory.owns))
        return ClusterRoutes(served)

    def _nodes_for(self) -> Callable[[str], list[str]]:
        if len(self.clusters) == 1:
            assert self._first.handlers is not None
            return self._first.handlers.nodes_for
        return self._routes().nodes_for

    def _render_metrics(self) -> str:
        if len(self.clusters) == 1:
            return self._first.metrics.render()
        return render_clusters([(cluster.name, cluster.metrics) for cluster in self.clusters])

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
        for cluster in self.clusters:
            await cluster.close()


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
