"""Usage samples of the running jobs, taken at most once per interval, for ``/stats/summary``
and ``/metrics/resource``.

A sample is one JobUsage call (one ``sstat`` on red-box's side) for every
running job of every node this kubelet serves, taken when a request asks and
the last one is older than the interval: scrapes of several nodes, or of
several consumers, within one interval share one call, and nothing is asked
of Slurm while nobody looks. Concurrent requests wait for the same call. A
red-box without JobUsage raises Unsupported (the API answers 501).
The sample before the last is kept to give each job a CPU rate, and a
``CpuLedger`` keeps the cumulative counters metrics-server needs.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from wlmvk.core.backend import Backend
from wlmvk.core.errors import NotFound, WlmvkError
from wlmvk.core.jobs import JobId, JobStatus
from wlmvk.core.usage import JobUsage
from wlmvk.kubelet import resource_metrics, summary
from wlmvk.kubelet.ledger import CpuLedger
from wlmvk.kubelet.pod_controller import PodController
from wlmvk.kubelet.summary import PodJob


class StatsSource:
    def __init__(
        self,
        *,
        backend: Backend,
        pods: Callable[[], Iterable[summary.PodJob]],
        nodes: Callable[[], Iterable[str]],
        interval: float,
    ) -> None:
        self._backend = backend
        self._pods = pods
        self._nodes = nodes
        self._interval = interval
        self._started = datetime.now(UTC)
        self._sampled_at = -float("inf")
        self._current: Mapping[JobId, JobUsage] = {}
        self._previous: dict[JobId, JobUsage] = {}
        self._sampling: asyncio.Future[None] | None = None
        self._ledger = CpuLedger()
        self._sampled_wall = self._started
        self.calls = 0

    async def summary(self) -> dict[str, Any]:
        pods = list(self._pods())
        await self._fresh(pods)
        return summary.summary(
            nodes=self._nodes(),
            started=self._started,
            pods=pods,
            usage=self._current,
            previous=self._previous,
            now=datetime.now(UTC),
            ledger=self._ledger,
        )

    async def resource_metrics(self, node: str | None) -> str:
        """The ``/metrics/resource`` text of ``node``, or of every node served (None).

        As the kubelet's collector: when the usage cannot be had, the text says
        so (``resource_scrape_error 1``) with no figures, and the answer is 200.
        """
        served = sorted(self._nodes())
        if node is not None and node not in served:
            raise NotFound(f'node "{node}" is not served by this kubelet')
        pods = list(self._pods())
        try:
            await self._fresh(pods)
        except WlmvkError:
            error = True
        else:
            error = False
        return resource_metrics.render(
            nodes=served if node is None else [node],
            pods=pods,
            usage=self._current,
            ledger=self._ledger,
            sampled=self._sampled_wall,
            error=error,
        )

    async def _fresh(self, pods: list[PodJob]) -> None:
        if self._sampling is None:
            if time.monotonic() - self._sampled_at < self._interval:
                return
            self._sampling = asyncio.ensure_future(self._sample(pods))
            self._sampling.add_done_callback(self._sampled)
        # Shielded: one request going away must not cancel the call the others wait for.
        await asyncio.shield(self._sampling)

    def _sampled(self, future: asyncio.Future[None]) -> None:
        self._sampling = None

    async def _sample(self, pods: list[PodJob]) -> None:
        self.calls += 1
        job_ids = [pod.job_id for pod in pods]
        usage = await self._backend.usage(job_ids) if job_ids else {}
        self._sampled_at = time.monotonic()
        self._sampled_wall = datetime.now(UTC)
        self._ledger = self._ledger.advance(pods, usage)
        self._previous = {
            job: before
            for job, before in self._current.items()
            if job in usage and before.sampled < usage[job].sampled
        }
        self._current = usage


_RUNNING = (JobStatus.RUNNING, JobStatus.COMPLETING)


def running_pods(controller: PodController, host_ip: str) -> list[summary.PodJob]:
    """The pods of ``controller`` whose job Slurm last reported running."""
    running: list[summary.PodJob] = []
    for record in controller.records():
        if record.job_id is None or record.state is None:
            continue
        if record.state.status not in _RUNNING:
            continue
        running.append(
            summary.PodJob(
                namespace=record.namespace,
                name=record.name,
                uid=record.uid,
                node=record.node,
                container=record.facts(host_ip).container,
                job_id=record.job_id,
                started=record.state.start_time,
            )
        )
    return running
