"""Usage samples of the running jobs, taken at most once per interval, for ``/stats/summary``
and ``/metrics/resource``.

A sample is one JobUsage call for every running job of every node this
kubelet serves, taken when a request asks and the last one is older than the
interval: scrapes of several nodes, or of several consumers, within one
interval share one call, and nothing is asked of Slurm while nobody looks.
Concurrent requests wait for the same call. A red-box without JobUsage
raises Unsupported (the API answers 501).

The call's budget is BUDGET_SHARE of the interval: red-box answers the jobs
it could read by then and names the others unanswered, which keep their
last sample (``samples``). A request waits for a sample at most one
interval (an older red-box ignores the budget): then it is served the last
sample, whose timestamps say how old it is, while the call goes on for the
next request. The sample before the last gives each job a CPU rate, and a
``CpuLedger`` keeps the cumulative counters metrics-server needs.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog

from wlmvk.core.backend import Backend
from wlmvk.core.errors import NotFound, Unavailable, WlmvkError
from wlmvk.core.jobs import JobId
from wlmvk.core.usage import UsageSample
from wlmvk.kubelet.api.stats import resource_metrics, samples, summary
from wlmvk.kubelet.api.stats.ledger import CpuLedger
from wlmvk.kubelet.api.stats.summary import PodJob

_log = structlog.get_logger(__name__)

BUDGET_SHARE = 0.7
"""Share of the interval red-box may spend reading usage (the rest: the call and the answer)."""

KEEP_FOR = 5
"""Intervals an unanswered running job keeps its last sample before it is left out (unless told)."""


class StatsSource:
    def __init__(
        self,
        *,
        backend: Backend,
        pods: Callable[[], Iterable[summary.PodJob]],
        nodes: Callable[[], Iterable[str]],
        interval: float,
        keep_for: float | None = None,
        holders: Mapping[str, Backend] | None = None,
    ) -> None:
        self._backend = backend
        self._holders = dict(holders or {})
        """The red-box of each tenant user (``PodJob.holder``); the others' jobs are ``backend``'s."""
        self._pods = pods
        self._nodes = nodes
        self._interval = interval
        self._keep_for = timedelta(seconds=interval * KEEP_FOR if keep_for is None else keep_for)
        self._started = datetime.now(UTC)
        self._sampled_at = -float("inf")
        self._samples = samples.Samples()
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
            usage=self._samples.current,
            previous=self._samples.previous,
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
            usage=self._samples.current,
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
        # Shielded: one request going away, or giving up, must not cancel the call others wait for.
        try:
            # An interval of 0 (every request asks) waits for the answer, with red-box's own limit.
            await asyncio.wait_for(asyncio.shield(self._sampling), self._interval or None)
        except TimeoutError:
            if self._sampled_at == -float("inf"):  # no sample yet to serve
                raise Unavailable(f"JobUsage: no answer within {self._interval:g} s") from None

    def _sampled(self, future: asyncio.Future[None]) -> None:
        self._sampling = None
        if not future.cancelled():
            future.exception()  # a failure reached its waiters; one that outlived them is not logged

    async def _sample(self, pods: list[PodJob]) -> None:
        self.calls += 1
        held: dict[str, list[JobId]] = {}
        for pod in pods:
            held.setdefault(pod.holder, []).append(pod.job_id)
        budget = self._interval * BUDGET_SHARE or None
        answers = await asyncio.gather(
            *(
                self._holders.get(holder, self._backend).usage(ids, budget=budget)
                for holder, ids in held.items()
            )
        )
        answer = UsageSample(
            {job: usage for one in answers for job, usage in one.usages.items()},
            frozenset(job for one in answers for job in one.unanswered),
            "; ".join(one.reason for one in answers if one.reason),
        )
        self._sampled_at = time.monotonic()
        self._sampled_wall = datetime.now(UTC)
        if answer.unanswered:
            # Their last figures are served meanwhile: say why they are not fresh.
            _log.warning(
                "usage not read for some running jobs", jobs=len(answer.unanswered), reason=answer.reason
            )
        self._samples = samples.advance(
            self._samples,
            answer,
            now=self._sampled_wall,
            keep_for=self._keep_for,
        )
        self._ledger = self._ledger.advance(pods, self._samples.current)
