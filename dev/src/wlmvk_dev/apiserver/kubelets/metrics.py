"""``metrics.k8s.io/v1beta1``: a metrics-server stand-in fed by the kubelets' Summary API.

kube-apiserver serves this group only through an APIService backed by
metrics-server, which scrapes each node's kubelet. Here the API server
scrapes them itself, when asked: every kubelet endpoint (a node's InternalIP,
else ExternalIP, else Hostname, and ``kubeletEndpoint.Port``) is asked once
per request for ``/stats/summary``, with the kubelet client certificate the
log proxy presents; one wlmvk kubelet serves several nodes at one endpoint
and answers once for all of them. A PodMetrics is a pod's containers'
``usageNanoCores`` and ``workingSetBytes``; a NodeMetrics is the sum over the
pods the store places on that node (a wlmvk kubelet's summary cannot tell its
nodes apart, see ``wlmvk.kubelet.api.stats.summary``). A pod or node no kubelet reports
is absent, as with metrics-server: ``kubectl top`` says it has no metrics.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import aiohttp
import structlog
from aiohttp import web

from wlmvk.kube.times import rfc3339
from wlmvk_dev.apiserver.kubelets.logproxy import kubelet_client_context
from wlmvk_dev.apiserver.objects.errors import ApiNotFound
from wlmvk_dev.apiserver.objects.resources import GVR, NODES, PODS, ResourceInfo
from wlmvk_dev.apiserver.storage.store import Store

_log = structlog.get_logger(__name__)

GROUP = "metrics.k8s.io"
VERSION = "v1beta1"
POD_METRICS = GVR(GROUP, VERSION, "pods")
NODE_METRICS = GVR(GROUP, VERSION, "nodes")
INFOS = (
    ResourceInfo(POD_METRICS, "PodMetrics", True, "", verbs=("get", "list")),
    ResourceInfo(NODE_METRICS, "NodeMetrics", False, "", verbs=("get", "list")),
)
WINDOW = "10s"
"""Reported as each sample's window: the kubelet's default --stats-interval."""
_ADDRESS_ORDER = ("InternalIP", "ExternalIP", "Hostname")

MetricsHandler = Callable[[web.Request, Store, str], Awaitable[web.Response]]
"""``handler(request, store, kind)``: kind is ``pods`` or ``nodes``."""


def endpoint(node: dict[str, Any]) -> str | None:
    status = node.get("status") or {}
    addresses = {a.get("type"): a.get("address") for a in status.get("addresses") or []}
    host = next((addresses[t] for t in _ADDRESS_ORDER if addresses.get(t)), None)
    port = ((status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}).get("Port")
    if not host or not port:
        return None
    return f"https://[{host}]:{port}" if ":" in str(host) else f"https://{host}:{port}"


def cpu_quantity(nano_cores: int) -> str:
    return f"{nano_cores}n"


def memory_quantity(size: int) -> str:
    return f"{size // 1024}Ki" if size % 1024 == 0 else str(size)


def pod_metrics(pod: dict[str, Any], stats: dict[str, Any]) -> dict[str, Any]:
    meta = pod["metadata"]
    containers = [
        {
            "name": c.get("name", ""),
            "usage": {
                "cpu": cpu_quantity(int((c.get("cpu") or {}).get("usageNanoCores") or 0)),
                "memory": memory_quantity(int((c.get("memory") or {}).get("workingSetBytes") or 0)),
            },
        }
        for c in stats.get("containers") or []
    ]
    return {
        "kind": "PodMetrics",
        "apiVersion": f"{GROUP}/{VERSION}",
        "metadata": {
            "name": meta["name"],
            "namespace": meta["namespace"],
            "creationTimestamp": _now(),
            "labels": dict(meta.get("labels") or {}),
        },
        "timestamp": (stats.get("cpu") or {}).get("time") or _now(),
        "window": WINDOW,
        "containers": containers,
    }


def node_metrics(node: dict[str, Any], pods: Iterable[dict[str, Any]]) -> dict[str, Any]:
    cpu = sum(int((p.get("cpu") or {}).get("usageNanoCores") or 0) for p in pods)
    memory = sum(int((p.get("memory") or {}).get("workingSetBytes") or 0) for p in pods)
    meta = node["metadata"]
    return {
        "kind": "NodeMetrics",
        "apiVersion": f"{GROUP}/{VERSION}",
        "metadata": {
            "name": meta["name"],
            "creationTimestamp": _now(),
            "labels": dict(meta.get("labels") or {}),
        },
        "timestamp": _now(),
        "window": WINDOW,
        "usage": {"cpu": cpu_quantity(cpu), "memory": memory_quantity(memory)},
    }


def not_found(store: Store, kind: str, namespace: str | None, name: str) -> ApiNotFound:
    """metrics-server v0.8.0's answer for an object without metrics (pkg/api/pod.go, node.go).

    It knows pods only while they run (its informer selects status.phase=Running): any other
    pod is the lister's "pods" not found; a known one without metrics is "podmetrics" (its
    resource's internal name), named namespace/name; a node without metrics "nodemetrics".
    """
    try:
        found = store.get(PODS if kind == "pods" else NODES, name, namespace=namespace)
    except ApiNotFound:
        found = None
    if kind == "pods":
        if found is None or (found.get("status") or {}).get("phase") != "Running":
            return ApiNotFound(404, "NotFound", f'pods "{name}" not found')
        return ApiNotFound(404, "NotFound", f'podmetrics.{GROUP} "{namespace}/{name}" not found')
    if found is None:
        return ApiNotFound(404, "NotFound", f'nodes "{name}" not found')
    return ApiNotFound(404, "NotFound", f'nodemetrics.{GROUP} "{name}" not found')


def _now() -> str:
    return rfc3339()


def make_handler(*, client_cert: str | None = None, client_key: str | None = None) -> MetricsHandler:
    """The group's handler; kubelets' certificates are not verified (as the log proxy)."""
    context = kubelet_client_context(client_cert, client_key)

    async def summaries(store: Store) -> tuple[dict[str, dict[str, Any]], set[str]]:
        """Pod stats by UID from every kubelet endpoint's summary (one request each), and the
        endpoints that answered."""
        nodes = store.list(NODES, copy=False).items
        endpoints = sorted({url for node in nodes if (url := endpoint(node))})
        timeout = aiohttp.ClientTimeout(total=30)
        async with aiohttp.ClientSession(timeout=timeout) as session:

            async def one(url: str) -> list[dict[str, Any]] | None:
                try:
                    async with session.get(f"{url}/stats/summary", ssl=context) as response:
                        if response.status != 200:
                            _log.info("no summary", kubelet=url, status=response.status)
                            return None
                        body = json.loads(await response.read())
                except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
                    _log.info("no summary", kubelet=url, error=repr(exc))
                    return None
                return list(body.get("pods") or [])

            found = await asyncio.gather(*(one(url) for url in endpoints))
        stats = {str((p.get("podRef") or {}).get("uid")): p for pods in found for p in pods or []}
        return stats, {url for url, pods in zip(endpoints, found, strict=True) if pods is not None}

    async def handler(request: web.Request, store: Store, kind: str) -> web.Response:
        namespace = request.match_info.get("namespace")
        name = request.match_info.get("name")
        stats, answered = await summaries(store)
        if kind == "pods":
            pods = store.list(PODS, namespace, label_selector=request.query.get("labelSelector"), copy=False)
            items = [
                pod_metrics(pod, stats[pod["metadata"]["uid"]])
                for pod in pods.items
                if pod["metadata"].get("uid") in stats and (name is None or pod["metadata"]["name"] == name)
            ]
            list_kind = "PodMetricsList"
        else:
            by_node: dict[str, list[dict[str, Any]]] = {}
            for pod in store.list(PODS, copy=False).items:
                if pod["metadata"].get("uid") in stats:
                    node_name = str((pod.get("spec") or {}).get("nodeName") or "")
                    by_node.setdefault(node_name, []).append(stats[pod["metadata"]["uid"]])
            nodes = store.list(NODES, label_selector=request.query.get("labelSelector"), copy=False)
            items = [
                node_metrics(node, by_node.get(node["metadata"]["name"], []))
                for node in nodes.items
                # metrics-server keeps no point for a node without a working set (no running job).
                if endpoint(node) in answered
                and by_node.get(node["metadata"]["name"])
                and (name is None or node["metadata"]["name"] == name)
            ]
            list_kind = "NodeMetricsList"
        if name is not None:
            if not items:
                raise not_found(store, kind, namespace, name)
            return web.json_response(items[0])
        return web.json_response(
            {"kind": list_kind, "apiVersion": f"{GROUP}/{VERSION}", "metadata": {}, "items": items}
        )

    return handler
