"""One cluster a ``wlmvk kubelet`` serves: its red-box, nodes, pods, tenants' red-boxes and metrics.

A kubelet serves one cluster (``--cluster-name``, ``--red-box-socket``) or several (``--cluster
NAME=SOCKET``, repeated); ``app.Kubelet`` makes one ``ClusterServing`` per cluster and shares among
them the API server client, the cluster Lease (``--leader-elect``), the SlurmTenant watch, the
HTTPS API (``routing``) and the metrics endpoint. Each cluster keeps its own red-box client, node
directory and controllers, status tick, tenants' red-boxes and metrics.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from wlmvk.core.backend import Backend
from wlmvk.core.tasks import guarded
from wlmvk.kube.client import KubeClient
from wlmvk.kube.events import EventPoster
from wlmvk.kube.leader import Elector
from wlmvk.kube.tenants import TenantWatch
from wlmvk.kube.version import declared_features
from wlmvk.kubelet import standby
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


def red_box_backend(socket_path: str, *, timeout: float) -> Backend:
    """The red-box gRPC client."""
    return RedBoxClient(socket_path, timeout=timeout)


class ClusterServing:
    """One served cluster's clients, controllers and API handlers (``settings`` are its own)."""

    def __init__(self, settings: Settings, *, backend: Backend | None = None) -> None:
        self.settings = settings
        self.name = settings.cluster_name
        self.raw_backend = backend or red_box_backend(settings.red_box_socket, timeout=settings.wlm_timeout)
        self.reachability = Reachability()
        self.directory = NodeDirectory(settings.cluster_name)
        self.pods: PodController | None = None
        self.nodes: NodeController | None = None
        self.metrics = KubeletMetrics(lambda: self.pods.phases() if self.pods else {})
        self.backend = MeteredBackend(self.raw_backend, metrics=self.metrics, reachability=self.reachability)
        self.tenant_backends: dict[str, RedBoxClient] = {}
        self.tenants: TenantRoutes | None = None
        self.tenant_status: TenantStatusWriter | None = None
        self.stats: sampling.StatsSource | None = None
        self.handlers: PodHandlers | None = None
        self.executor: executing.Executor | None = None
        self.changer: Backend = self.backend
        """What changes jobs: the metered backend, fenced by the cluster Lease with --leader-elect."""
        self.tasks: list[asyncio.Task[Any]] = []

    def start_pods(
        self, *, writer: KubeClient, elector: Elector | None, watcher: TenantWatch, host: str
    ) -> None:
        """Make the pod side: tenants' red-boxes, tenant status, the pod controller, the API handlers."""
        s = self.settings
        raw = self.raw_backend
        changer: Backend = self.backend
        if elector is not None:
            changer = standby.FencedBackend(self.backend, check=elector.check)
            if isinstance(raw, RedBoxClient):
                raw.fence_with(standby.LeaseFence(elector))
        self.changer = changer
        events = EventPoster(writer, component="wlmvk-kubelet", host=host)
        self.tenant_backends = {user: RedBoxClient(path, timeout=s.wlm_timeout) for user, path in s.red_boxes}
        red_boxes: dict[str, Backend] = dict(self.tenant_backends)
        if elector is not None:
            red_boxes = {user: standby.FencedBackend(b, check=elector.check) for user, b in red_boxes.items()}
        # Read-only questions to the red-boxes (unfenced): the default's one look at every tenant
        # user, each tenant user's own when the look cannot tell; the status writes are fenced.
        self.tenant_status = status_writer = TenantStatusWriter(
            client=writer,
            watch=watcher,
            cluster=s.cluster_name,
            red_boxes=self.tenant_backends,
            observer=raw if self.tenant_backends and isinstance(raw, RedBoxClient) else None,
        )
        self.tasks.append(guarded(status_writer.run(), name=f"tenant status {self.name}"))
        # With tenants' red-boxes, one look at every job per tick through the default's (observing).
        looks = None
        if self.tenant_backends and isinstance(raw, RedBoxClient):
            looks = StateLooks(observer=raw, followers=self.tenant_backends)
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
        self.handlers = handlers = PodHandlers(
            pods=self.pods,
            backend=self.backend,
            directory=self.directory,
            host_ip=s.node_ip,
            tenants=self.pods.provider.tenants,
        )
        self.stats = sampling.StatsSource(
            backend=self.backend,
            pods=handlers.running,
            nodes=lambda: sorted(self.directory.owned),
            interval=s.stats_interval,
            holders=self.tenants.red_boxes,
        )
        self.executor = executing.Executor(lookup=handlers.exec_target, backend=self.backend)

    async def start_nodes(self, *, writer: KubeClient, port: int, reported: str) -> None:
        """Register the cluster's nodes, then run its node and pod controllers."""
        s = self.settings
        assert self.pods is not None
        context = nodes.NodeContext(
            kubelet_version=reported,
            declared_features=declared_features(reported, websockets=s.websockets_to_kubelet),
            cluster=s.cluster_name,
            agent_host=s.agent_host,
            node_ip=s.node_ip,
            port=port,
            max_pods=s.max_pods,
            red_box_socket=s.red_box_socket,
            red_boxes=s.red_boxes,
            gpu_names=dict(s.gpu_names),
        )
        self.nodes = NodeController(
            client=writer,
            backend=self.changer,
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
        self.tasks.append(guarded(self.nodes.run(), name=f"nodes {self.name}"))
        self.tasks.append(guarded(self.pods.run(), name=f"pods {self.name}"))

    async def close(self) -> None:
        """Close the cluster's red-box clients (its tasks are stopped by the kubelet)."""
        for backend in [self.raw_backend, *self.tenant_backends.values()]:
            close = getattr(backend, "close", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    result = close()
                    if asyncio.iscoroutine(result):
                        await result
