"""The kubelet API of a kubelet serving several clusters: each request routed to its pod's cluster.

Every served cluster answers for its own pods (``handlers.PodHandlers``) and its own nodes'
usage (``sampling.StatsSource``); ``ClusterRoutes`` gives ``api.server`` the one set of handler
functions it takes: logs and exec go to the cluster whose pod controller holds the pod (none:
the first's answer, not found), ``/pods`` lists every cluster's pods, ``/stats/summary`` and
``/metrics/resource`` add up the clusters', a node's resource metrics are its cluster's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from wlmvk.core.errors import NotFound
from wlmvk.kubelet.api.auth import rules
from wlmvk.kubelet.api.exec import executing
from wlmvk.kubelet.api.logs import LogOptions
from wlmvk.kubelet.api.stats import sampling
from wlmvk.kubelet.handlers import PodHandlers


@dataclass(frozen=True)
class Served:
    """One cluster's answers."""

    handlers: PodHandlers
    stats: sampling.StatsSource
    owns: Callable[[str], bool]


_SCRAPE_ERROR = "resource_scrape_error"


class ClusterRoutes:
    """The kubelet API's handler functions over several clusters (the first answers for none)."""

    def __init__(self, clusters: Sequence[Served]) -> None:
        assert clusters, "a kubelet serves at least one cluster"
        self._clusters = list(clusters)

    def _of_pod(self, namespace: str, pod: str) -> PodHandlers:
        for cluster in self._clusters:
            if cluster.handlers.serves(namespace, pod):
                return cluster.handlers
        return self._clusters[0].handlers

    async def logs(
        self, namespace: str, pod: str, container: str, options: LogOptions
    ) -> AsyncIterator[bytes]:
        return await self._of_pod(namespace, pod).logs(namespace, pod, container, options)

    def exec_target(self, namespace: str, pod: str) -> executing.Target | None:
        return self._of_pod(namespace, pod).exec_target(namespace, pod)

    def listed(self) -> list[dict[str, Any]]:
        return [pod for cluster in self._clusters for pod in cluster.handlers.listed()]

    def nodes_for(self, path: str) -> list[str]:
        """As ``PodHandlers.nodes_for``: the pod's node, the node named, else every node served."""
        pod = rules.pod_of(path)
        if pod:
            for cluster in self._clusters:
                if cluster.handlers.serves(*pod):
                    return cluster.handlers.nodes_for(path)
        return sorted({node for c in self._clusters for node in c.handlers.nodes_for(path) if node}) or [""]

    async def summary(self) -> dict[str, Any]:
        """Every cluster's summary: their pods, and their node figures added up."""
        parts = [await cluster.stats.summary() for cluster in self._clusters]
        nodes = [part["node"] for part in parts]
        node = {
            **nodes[0],
            "nodeName": ",".join(n["nodeName"] for n in nodes if n["nodeName"]),
            "cpu": added_up([n["cpu"] for n in nodes]),
            "memory": added_up([n["memory"] for n in nodes]),
        }
        return {"node": node, "pods": [pod for part in parts for pod in part["pods"]]}

    async def resource_metrics(self, node: str | None) -> str:
        """One node's text (its cluster's), or every cluster's merged family by family (None)."""
        if node is not None:
            for cluster in self._clusters:
                if cluster.owns(node):
                    return await cluster.stats.resource_metrics(node)
            raise NotFound(f'node "{node}" is not served by this kubelet')
        return merged_texts([await cluster.stats.resource_metrics(None) for cluster in self._clusters])


def added_up(figures: list[dict[str, Any]]) -> dict[str, Any]:
    """The first's figures, its whole numbers added up over all (a figure some lack is left out)."""
    out: dict[str, Any] = {}
    for key, value in figures[0].items():
        if isinstance(value, int) and not isinstance(value, bool):
            if all(isinstance(f.get(key), int) for f in figures):
                out[key] = sum(f[key] for f in figures)
        else:
            out[key] = value
    return out


def merged_texts(texts: list[str]) -> str:
    """Prometheus texts as one: each family's comments once, then its labelled samples from every
    text; a sample without labels (a node figure) added up, the scrape error the largest."""
    families: dict[str, list[str]] = {}
    bare: dict[str, tuple[float, str]] = {}
    for text in texts:
        family = ""
        for line in text.splitlines():
            if line.startswith("# "):
                family = line.split()[2]
                lines = families.setdefault(family, [])
                if line not in lines:
                    lines.append(line)
            elif line and "{" not in line.split(" ", 1)[0]:
                name, value, *stamps = line.split()
                before = bare.get(name)
                if before is None:
                    families.setdefault(family, []).append(name)
                    bare[name] = (float(value), " ".join(stamps))
                elif name == _SCRAPE_ERROR:
                    bare[name] = (max(before[0], float(value)), before[1])
                else:
                    bare[name] = (before[0] + float(value), before[1])
            elif line:
                families.setdefault(family, []).append(line)
    out = []
    for lines in families.values():
        for line in lines:
            if line in bare:
                total, stamp = bare[line]
                shown = repr(int(total)) if total.is_integer() else repr(total)
                line = " ".join(part for part in (line, shown, stamp) if part)
            out.append(line + "\n")
    return "".join(out)
