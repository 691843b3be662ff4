"""The status poller: every ``status_interval``, ONE ``Backend.states`` call for every job followed
(with tenants, one look at every user's jobs through the default red-box: ``observing``; each
holder is asked only for what that look could not answer, and for claims).

Slurm tells nobody when a job changes, so its states are polled; virtual-kubelet does the same
for providers that cannot notify (its ``syncProviderWrapper``), but one batched query per tick
(one ``squeue``, at most one ``sacct`` in red-box) replaces its one call per pod. A changed
state is stored in the pod's record and the pod is queued (``notify``); the controller writes
the status. The same query checks the claims: a job id found in a pod's annotation becomes the
pod's job once the job's key is the pod's UID, and makes the pod FOREIGN otherwise.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import structlog

from wlmvk.core.backend import Backend
from wlmvk.core.errors import WlmvkError
from wlmvk.core.jobs import JobId, JobState
from wlmvk.kubelet.metrics import KubeletMetrics
from wlmvk.kubelet.pods import status as pod_status
from wlmvk.kubelet.pods.provider import belongs
from wlmvk.kubelet.pods.records import PodRecord
from wlmvk.kubelet.pods.states import FOLLOWED, Happening, Stage
from wlmvk.kubelet.pods.tenants import TenantRoutes

_log = structlog.get_logger(__name__)


def pause(started: float, ended: float, interval: float) -> float:
    """Seconds to wait after a tick that ran from ``started`` to ``ended``.

    Ticks start ``interval`` apart, as a ticker's do (virtual-kubelet's sync loop): a
    state change waits at most one interval plus one tick, not one interval plus two
    (sleeping a whole interval after each tick made the period 5 s + the tick's own
    time; measured with 1000 pods, that put a change's p95 at 6.3 s). A tick longer
    than the interval is followed by a fifth of one, so that Slurm is not asked back
    to back.
    """
    return max(interval / 5, started + interval - ended)


@dataclass(frozen=True, kw_only=True)
class StatusPoller:
    backend: Backend
    metrics: KubeletMetrics
    records: Callable[[], Iterable[PodRecord]]
    """The pods served (the controller's records)."""
    notify: Callable[[PodRecord], None]
    """Queue a pod whose job changed."""
    busy: Callable[[], bool]
    """Whether pods wait to be submitted or cancelled (a tick then waits, at most one interval)."""
    interval: float
    routes: TenantRoutes | None = None
    """The red-box holding a pod's job, and the one look at every job (None: ``backend`` holds
    every job)."""

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._yield_to_submissions()
            started = loop.time()
            await self.tick()
            await asyncio.sleep(pause(started, loop.time(), self.interval))

    async def _yield_to_submissions(self) -> None:
        """While a burst of pods is being submitted, hold the tick back (at most one interval).

        A tick's query and the status writes it causes compete with the submissions
        for red-box, Slurm and the API server; the jobs should reach Slurm first. A
        pod's phase is Pending before and after its first status write either way.
        """
        loop = asyncio.get_running_loop()
        until = loop.time() + self.interval
        while self.busy() and loop.time() < until:
            await asyncio.sleep(min(0.1, self.interval))

    async def tick(self) -> None:
        """One batched state query for every job followed; changed states queue their pods."""
        live: dict[JobId, PodRecord] = {}
        claims: list[tuple[JobId, PodRecord]] = []
        for record in self.records():
            if record.stage in FOLLOWED and record.job_id is not None and not record.ended.is_set():
                live[record.job_id] = record
            elif record.stage is Stage.CLAIMED and record.claimed is not None:
                claims.append((record.claimed, record))
        if not live and not claims:
            try:
                await self.backend.info()  # keeps reachability (and the node conditions) current
            except WlmvkError:
                pass
            return
        self.metrics.status_ticks.inc()
        looks = self.routes.looks if self.routes is not None else None
        looked: dict[JobId, JobState] | None = None
        if looks is not None and looks.on and live and self.routes is not None:
            looked = await looks.look({j: self.routes.holder_of(r) for j, r in live.items()})
        seen = looked or {}
        asked: dict[int, tuple[Backend, list[JobId]]] = {}
        for job_id, record in [*((j, r) for j, r in live.items() if j not in seen), *claims]:
            backend = self.routes.backend_of(record) if self.routes is not None else self.backend
            asked.setdefault(id(backend), (backend, []))[1].append(job_id)
        answered: dict[JobId, JobState] = {}
        for backend, job_ids in asked.values():
            # A red-box that does not answer holds its own pods back, not the others'.
            answered.update(await self._states(backend, job_ids))
        if looked is not None and looks is not None:
            looks.check({j: answered[j] for j in live if j not in seen and j in answered})
        states = {**answered, **seen}
        for job_id, record in claims:
            claimed = answered.get(job_id)
            if claimed is None or record.stage is not Stage.CLAIMED:
                continue
            if belongs(claimed, record.uid):
                record.job_id, record.claimed = job_id, None
                record.advance(Happening.CLAIM_CONFIRMED)
                live[job_id] = record
            else:
                record.advance(Happening.CLAIM_FOREIGN)
                self.notify(record)
        for job_id, record in live.items():
            state = states.get(job_id)
            if state is None or state == record.state:
                continue
            record.state = state
            if pod_status.over(state.status):
                record.ended.set()
            self.notify(record)

    async def _states(self, backend: Backend, job_ids: list[JobId]) -> Mapping[JobId, JobState]:
        try:
            return await backend.states(list(dict.fromkeys(job_ids)))
        except WlmvkError as exc:
            _log.warning("job states unavailable", error=exc.message, jobs=len(job_ids))
            return {}
