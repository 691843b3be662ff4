"""The pod controller: the Kubernetes side of serving pods on this kubelet's nodes.

Split as virtual-kubelet splits it (``node/podcontroller.go``, ``node/pod.go``): this module
knows Kubernetes and nothing of Slurm; ``provider`` creates and deletes jobs over the Backend;
``poller`` asks Slurm for every job's state; ``states`` is each pod's lifecycle.

- the watcher: ONE list+watch of pods (``kube.watching``), filtered to the nodes in the
  ``NodeDirectory``; each event updates a record (``records``) and queues its key;
- the workers: take keys from a ``WorkQueue`` (one worker per pod at a time) and sync the pod:
  ask the provider for a job, write the job id annotation, the status and Events, release a
  deleted pod once the provider has ended its job. A new pod's sync is handed off the worker,
  up to ``submissions`` per red-box (``handoff``), so that each red-box's client batches them;
- the status poller, which queues the pods whose job changed.

A job id found in a pod's annotation is only a claim (anybody who may write the pod can write
it): it becomes the pod's job once the job's key, read by the next status tick, is the pod's
UID. Another pod's job is never adopted, read or cancelled: the pod fails with reason
``ForeignJob``, unless a job is found under its own key (that one is the pod's, and adopted).
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

import structlog

from wlmvk.core import names, runtimes
from wlmvk.core.backend import Backend
from wlmvk.core.errors import Conflict, InvalidInput, NotFound, Unavailable
from wlmvk.core.tasks import restarting
from wlmvk.kube import objects
from wlmvk.kube.bodies import PODS, Body
from wlmvk.kube.client import KubeClient
from wlmvk.kube.events import NORMAL, WARNING, EventPoster, EventQueue
from wlmvk.kube.leader import Fenced
from wlmvk.kube.watching import Changed, Listed, WatchEvent, WatchOptions, watch
from wlmvk.kube.workqueue import WorkQueue
from wlmvk.kubelet.metrics import KubeletMetrics
from wlmvk.kubelet.node.directory import NodeDirectory
from wlmvk.kubelet.pods import held
from wlmvk.kubelet.pods import status as pod_status
from wlmvk.kubelet.pods.handoff import HandOffs
from wlmvk.kubelet.pods.poller import StatusPoller
from wlmvk.kubelet.pods.provider import Later, Logger, SlurmProvider, Started
from wlmvk.kubelet.pods.records import PodRecord, job_id_of, slim
from wlmvk.kubelet.pods.states import Happening, Presence, Stage, initial, urgent
from wlmvk.kubelet.pods.tenants import TenantRoutes
from wlmvk.kubelet.pods.translate import Rejection
from wlmvk.kubelet.pods.writes import PodWrites

_log = structlog.get_logger(__name__)

_RETRY_MAX = 10.0
IMAGE_NOT_USED = "ImageNotUsed"
"""The Warning Event's reason when a plain pod's image does not run (``translate.unused_image``)."""


@dataclass(frozen=True)
class PodSettings:
    host_ip: str = "127.0.0.1"
    jobs_root: str = ""
    status_interval: float = 5.0
    workers: int = 32
    # Submissions in flight at once to each red-box: its concurrency. More workers than this keep
    # red-box busy while others write annotations and statuses; the workers bound the whole.
    submissions: int = 16
    # Seconds after start before pods found without a job id are looked up by key.
    lookup_grace: float = 3.0
    # The site's GPU resource names -> Slurm GRES types (core.gpus).
    gpu_names: Mapping[str, str] = field(default_factory=dict)
    # The SIF runtime's flags for a plain pod's image with GPUs (core.runtimes.gpu_flags).
    sif_gpu_flags: tuple[str, ...] = runtimes.GPU_FLAGS


class PodController:
    def __init__(
        self,
        *,
        client: KubeClient,
        backend: Backend,
        events: EventPoster,
        directory: NodeDirectory,
        metrics: KubeletMetrics,
        settings: PodSettings,
        tenants: TenantRoutes | None = None,
    ) -> None:
        self._client = client
        self._events = EventQueue(events)
        self._directory = directory
        self._metrics = metrics
        self._settings = settings
        self._records: dict[str, PodRecord] = {}
        self._by_name: dict[tuple[str, str], str] = {}
        # A pod whose sync fails is retried after 0.5 s, doubling to 10 s while it keeps failing.
        self._queue: WorkQueue[str] = WorkQueue(base_delay=0.5, max_delay=_RETRY_MAX)
        self._requeued: set[str] = set()
        self._handoffs = HandOffs(settings.submissions)
        self._writes = PodWrites(client, gone=self._gone, written=metrics.status_writes.inc)
        self._first_listing = True
        self._synced = asyncio.Event()
        self.provider = SlurmProvider(
            backend=backend,
            directory=directory,
            metrics=metrics,
            jobs_root=settings.jobs_root,
            gpu_names=settings.gpu_names,
            sif_gpu_flags=settings.sif_gpu_flags,
            submissions=settings.submissions,
            lookup_grace=settings.lookup_grace,
            tenants=tenants,
        )
        self.poller = StatusPoller(
            backend=backend,
            metrics=metrics,
            records=self._records.values,
            notify=self._wake,
            busy=lambda: self._queue.urgent() > 0,
            interval=settings.status_interval,
            routes=self.provider.tenants,
        )

    # -- public views --------------------------------------------------------------------------------------

    def pods(self) -> list[Body]:
        return [record.pod for record in self._live()]

    def records(self) -> list[PodRecord]:
        """Every pod served (not those deleted from the API whose job is still being ended)."""
        return list(self._live())

    def _live(self) -> Iterator[PodRecord]:
        return (record for record in self._records.values() if not record.gone)

    def record(self, namespace: str, name: str) -> PodRecord | None:
        uid = self._by_name.get((namespace, name))
        return self._records.get(uid) if uid else None

    def gpus_held(self) -> dict[str, dict[str, int]]:
        """GPUs per node and extended resource that pods hold whose jobs Slurm runs now (``held``)."""
        return held.gpus_held(self._records.values(), self._settings.gpu_names)

    def phases(self) -> dict[str, int]:
        return dict(Counter(record.phase for record in self._live()))

    async def synced(self) -> None:
        """Resolve once the first listing was taken in."""
        await self._synced.wait()

    async def tick(self) -> None:
        """One status poll now (benchmarks and tests drive it; ``run`` polls on its own)."""
        await self.poller.tick()

    # -- agents --------------------------------------------------------------------------------------------

    async def run(self) -> None:
        await self.provider.probe()
        workers = [self._worker() for _ in range(max(1, self._settings.workers))]
        try:
            await asyncio.gather(
                restarting(self._watcher, name="pod watcher"),
                restarting(self._poll, name="status poller"),
                restarting(self._events.run, name="event sender"),
                *workers,
            )
        finally:
            self._queue.close()
            await self._handoffs.stop()

    async def _poll(self) -> None:
        await self._synced.wait()
        await self.poller.run()

    async def _watcher(self) -> None:
        def restarted(reason: str) -> None:
            self._metrics.watch_restarts.inc(reason=reason)

        async for event in watch(self._client, PODS, WatchOptions(), on_restart=restarted):
            self.handle(event)

    def handle(self, event: WatchEvent) -> None:
        """Take one watch event into the records and queue what changed."""
        if isinstance(event, Listed):
            seen: set[str] = set()
            for pod in event.items:
                if self._directory.owns(objects.node_name(pod)):
                    seen.add(objects.uid(pod))
                    self._upsert(pod, lookup=self._first_listing)
            for uid, record in self._records.items():
                if uid not in seen and not record.gone:
                    self._gone(record)
            self._first_listing = False
            self._synced.set()
            return
        assert isinstance(event, Changed)
        if event.type == "DELETED":
            known = self._records.get(objects.uid(event.object))
            if known is not None:
                known.pod = slim(event.object)
                known.gone = True
                self._wake(known)
            return
        if self._directory.owns(objects.node_name(event.object)):
            self._upsert(event.object, lookup=False)

    def _upsert(self, pod: Body, *, lookup: bool) -> None:
        uid = objects.uid(pod)
        annotated = job_id_of(pod)
        record = self._records.get(uid)
        if record is None:
            stage = initial(annotated=annotated is not None, lookup=lookup, lookups=self.provider.lookups)
            record = PodRecord(uid=uid, pod=slim(pod), stage=stage)
            self._records[uid] = record
            self._by_name[(record.namespace, record.name)] = uid
        else:
            record.pod = slim(pod)
            if annotated is not None and record.stage in (Stage.UNVERIFIED, Stage.NEW):
                # An original red-box reports no keys to check: the annotation is taken on trust.
                record.advance(Happening.ANNOTATED if self.provider.lookups else Happening.ADOPTED)
        if annotated is not None and record.stage is Stage.CLAIMED and record.claimed is None:
            record.claimed = annotated
        elif annotated is not None and record.stage is Stage.TRACKING and record.job_id is None:
            record.job_id = annotated
        self._wake(record)

    def _wake(self, record: PodRecord) -> None:
        self._queue.add(record.uid, urgent=urgent(record.stage, record.presence))

    def _gone(self, record: PodRecord) -> None:
        """Mark the record's pod gone from the API server and queue its sync."""
        record.gone = True
        self._wake(record)

    async def _worker(self) -> None:
        while True:
            uid = await self._queue.get()
            record = self._records.get(uid)
            holder = self._hand_off(record)
            if record is not None and holder is not None:
                self._handoffs.start(holder, self._work(uid, record))
                continue
            await self._work(uid, record)

    async def _work(self, uid: str, record: PodRecord | None) -> None:
        """Sync the pod; its key is handed to no other worker until this ends (``done``)."""
        try:
            if record is not None:
                await self._sync(record)
        except Exception:
            _log.exception("reconcile crashed", uid=uid)
            self._retry(uid)
        finally:
            self._queue.done(uid)

    def _hand_off(self, record: PodRecord | None) -> str | None:
        """The red-box ('' the default one) of a new pod whose sync goes off the worker, while
        fewer than ``submissions`` of its pods are; None: the worker syncs the pod itself."""
        if record is None or record.stage is not Stage.NEW or record.presence is not Presence.LIVE:
            return None
        if record.finished_before or not self.provider.ready:
            return None
        holder = self.provider.holder_of(record)
        return holder if self._handoffs.has_room(holder) else None

    def _retry(self, uid: str, delay: float | None = None) -> None:
        """Sync the pod again: after ``delay``, else after its failure delay (which grows)."""
        self._requeued.add(uid)
        record = self._records.get(uid)
        is_urgent = record is not None and urgent(record.stage, record.presence)
        if delay is None:
            self._queue.add_rate_limited(uid, urgent=is_urgent)
        else:
            self._queue.add_after(uid, delay, urgent=is_urgent)

    # -- one pod -------------------------------------------------------------------------------------------

    async def _sync(self, record: PodRecord) -> None:
        log = _log.bind(pod=f"{record.namespace}/{record.name}", job_id=record.job_id)
        self._requeued.discard(record.uid)
        try:
            presence = record.presence
            if presence is Presence.GONE:
                await self._forget(record, log)
            elif presence is Presence.DELETING:
                await self._finish_deletion(record, log)
            else:
                await self._sync_live(record, log)
            if record.uid not in self._requeued:
                self._queue.forget(record.uid)
        except Unavailable as exc:
            log.info("red-box or API server unavailable; will retry", error=exc.message)
            self._retry(record.uid)

    async def _sync_live(self, record: PodRecord, log: Logger) -> None:
        stage = record.stage
        if stage is Stage.FINAL:
            return
        if record.finished_before:
            record.advance(Happening.FINISHED)  # finished before this kubelet started
        elif stage in (Stage.UNVERIFIED, Stage.NEW, Stage.FOREIGN):
            await self._create(record, log)
        elif stage in (Stage.TRACKING, Stage.CANCELLING):
            await self._write_status(record)
        # CLAIMED: the next status tick checks the claim

    async def _create(self, record: PodRecord, log: Logger) -> None:
        outcome = await self.provider.create(record, log)
        if isinstance(outcome, Later):
            if outcome.held is not None and outcome.held.message != record.held:
                await self._hold(record, outcome.held)
            self._retry(record.uid, outcome.delay)
        elif isinstance(outcome, Rejection):
            await self._reject(record, outcome.reason, outcome.message)
        elif isinstance(outcome, Started):
            await self._annotate(record)
            self._post(record.pod, type=NORMAL, reason=outcome.reason, message=outcome.message)
            if outcome.warning:
                self._post(record.pod, type=WARNING, reason=IMAGE_NOT_USED, message=outcome.warning)
            if record.state is not None:
                self._wake(record)  # adopted: its state is known, its status can be written

    def _post(self, pod: Body, *, type: str, reason: str, message: str) -> None:
        """Queue an Event off the worker's path: Events are best effort and must not slow submission."""
        self._events.record(pod, type=type, reason=reason, message=message)

    async def _annotate(self, record: PodRecord) -> None:
        """Write the job id into the pod's annotation, pinned to the pod's uid.

        The pin makes the write refused (409) on another pod that took the name (deleted and
        recreated meanwhile), where a late write by name would land and make that pod's own
        job look foreign. Retried while the API server is unreachable, not once fenced.
        """
        patch = {
            "metadata": {"uid": record.uid, "annotations": {names.ANNOTATION_JOB_ID: str(record.job_id)}}
        }
        delay = 0.2
        while True:
            try:
                record.pod = slim(
                    await self._client.patch(PODS, record.name, patch, namespace=record.namespace)
                )
                return
            except NotFound:
                self._gone(record)  # deleted meanwhile: the job is cancelled by _forget
                return
            except (Conflict, InvalidInput):
                # The uid pin refused (409 here, 422 "field is immutable" from kube-apiserver).
                if await self._writes.fresh(record) is None:
                    return
                raise
            except Fenced:
                raise  # deposed: the successor looks the pod's key up and annotates
            except Unavailable:
                # The job exists: keep trying, the id must reach the pod.
                await asyncio.sleep(delay)
                delay = min(delay * 2, _RETRY_MAX)

    async def _hold(self, record: PodRecord, why: Rejection) -> None:
        """Say once per limit why the pod waits: Pending with Slurm's reason, and a Warning Event."""
        facts = record.facts(self._settings.host_ip)
        await self._writes.patch_status(
            record, pod_status.held_status(why.reason, why.message, facts, now=_now())
        )
        record.held = why.message
        self._post(record.pod, type=WARNING, reason=why.reason, message=why.message)

    async def _reject(self, record: PodRecord, reason: str, message: str) -> None:
        body = pod_status.rejected_status(reason, message, record.facts(self._settings.host_ip), now=_now())
        await self._writes.patch_status(record, body)
        record.advance(Happening.FINISHED)
        self._post(record.pod, type=WARNING, reason=reason, message=message)

    async def _write_status(self, record: PodRecord) -> None:
        state = record.state
        if state is None:
            return
        body = pod_status.pod_status(state, record.facts(self._settings.host_ip))
        if body is None:
            return
        key = hash(json.dumps(body, sort_keys=True))
        if key == record.written_key:
            return
        await self._writes.patch_status(record, body)
        for transition in pod_status.transitions(record.written_state, state):
            self._post(record.pod, type=transition.type, reason=transition.reason, message=transition.message)
        record.written_state, record.written_key = state, key
        if body["phase"] in pod_status.TERMINAL_PHASES:
            record.advance(Happening.FINISHED)

    async def _finish_deletion(self, record: PodRecord, log: Logger) -> None:
        if not await self.provider.delete(record, log):
            return
        if record.stage is not Stage.FINAL:
            body = pod_status.deleted_status(
                record.job_id, record.facts(self._settings.host_ip), now=_now(), state=record.state
            )
            await self._writes.patch_status(record, body)
            record.advance(Happening.FINISHED)
        record.ended.set()
        try:
            await self._client.delete(
                PODS, record.name, namespace=record.namespace, grace_period_seconds=0, uid=record.uid
            )
        except NotFound:
            pass
        log.info("pod deleted")

    async def _forget(self, record: PodRecord, log: Logger) -> None:
        if not await self.provider.delete(record, log):
            return
        record.ended.set()
        self._records.pop(record.uid, None)
        if self._by_name.get((record.namespace, record.name)) == record.uid:
            del self._by_name[(record.namespace, record.name)]


def _now() -> datetime:
    return datetime.now(UTC)
