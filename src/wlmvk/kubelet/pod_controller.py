"""The pod controller: pods bound to this kubelet's nodes become Slurm jobs.

Three kinds of agent share the pod records:

- the watcher: ONE list+watch of pods (``kube.watching``), filtered to the
  nodes in the ``NodeDirectory``; each event updates a record and queues
  its key;
- the workers: take keys from a ``WorkQueue`` (one worker per pod at a
  time) and reconcile: submit, adopt, write status, cancel, delete;
- the status ticker: every ``status_interval``, ONE ``Backend.states`` call
  for every live job; a changed state queues the pod.

Exactly once: the pod UID is the job's idempotency key, the job id goes
into the pod's ``wlm.sylabs.io/job-id`` annotation right after submission,
and every pod present at start that has no job id is looked up by its UID
before anything is submitted. Against an original red-box (no lookup) the
annotation alone protects, which is said once in the log at start.

A job id found in a pod's annotation is only a claim (anybody who may write
the pod can write it): it becomes the pod's job once the job's key, read by
the next status tick, is the pod's UID. Another pod's job is never adopted,
read or cancelled: the pod fails with reason ``ForeignJob``.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime

import structlog

from wlmvk.core import names
from wlmvk.core.backend import Backend
from wlmvk.core.errors import NotFound, Unavailable, Unsupported, WlmvkError
from wlmvk.core.jobs import ContainerJobSpec, JobId, JobState, JobStatus
from wlmvk.core.tasks import restarting
from wlmvk.kube.bodies import PODS, Body, annotations_of, is_deleting, meta
from wlmvk.kube.client import KubeClient
from wlmvk.kube.events import NORMAL, WARNING, EventPoster, EventQueue
from wlmvk.kube.watching import Changed, Listed, WatchEvent, WatchOptions, watch
from wlmvk.kube.workqueue import WorkQueue
from wlmvk.kubelet import status as pod_status
from wlmvk.kubelet.directory import NodeDirectory
from wlmvk.kubelet.metrics import KubeletMetrics
from wlmvk.kubelet.translate import Rejection, Target, job_name, pod_to_job

_log = structlog.get_logger(__name__)

_RETRY_MAX = 10.0


@dataclass
class PodRecord:
    """What the kubelet knows of one pod (keyed by UID)."""

    uid: str
    pod: Body
    job_id: JobId | None = None
    claimed: JobId | None = None
    foreign: bool = False
    state: JobState | None = None
    written_state: JobState | None = None
    written_key: int = 0
    final: bool = False
    gone: bool = False
    looked_up: bool = True
    cancelled: bool = False
    retrying: bool = False
    ended: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def namespace(self) -> str:
        return str(meta(self.pod).get("namespace", ""))

    @property
    def name(self) -> str:
        return str(meta(self.pod).get("name", ""))

    @property
    def node(self) -> str:
        return str((self.pod.get("spec") or {}).get("nodeName", ""))

    @property
    def phase(self) -> str:
        return str((self.pod.get("status") or {}).get("phase", "Pending"))

    def facts(self, host_ip: str) -> pod_status.PodFacts:
        containers = (self.pod.get("spec") or {}).get("containers") or [{}]
        return pod_status.PodFacts(
            container=str(containers[0].get("name", "job")),
            image=str(containers[0].get("image", "")),
            host_ip=host_ip,
            created=str(meta(self.pod).get("creationTimestamp", "")),
        )


def slim(pod: Body) -> Body:
    """What the kubelet keeps of a pod: all but managedFields and the status it writes itself.

    Thousands of pods are held at once; the status the kubelet wrote is known from
    the job state, so only the phase is kept (to know a pod finished before a restart).
    """
    metadata = {key: value for key, value in (pod.get("metadata") or {}).items() if key != "managedFields"}
    phase = (pod.get("status") or {}).get("phase")
    return {
        "apiVersion": pod.get("apiVersion", "v1"),
        "kind": pod.get("kind", "Pod"),
        "metadata": metadata,
        "spec": pod.get("spec") or {},
        "status": {"phase": phase} if phase else {},
    }


def _urgent(record: PodRecord) -> bool:
    """Pods to submit or to cancel go before status writes: a burst reaches Slurm first."""
    if record.gone or is_deleting(record.pod):
        return True
    return record.job_id is None and not record.final


def _belongs(state: JobState, uid: str) -> bool:
    """A claimed job is the pod's when its key is the pod's UID; a job Slurm lost holds nothing to protect."""
    if state.idempotency_key:
        return state.idempotency_key == uid
    return state.status is JobStatus.NOT_FOUND


def _not_the_pods(found: JobState, record: PodRecord) -> str:
    """Why a job FindJob returned for the pod's key is not the pod's ('' when it is).

    The key is the pod's UID and the job's name the pod's (its script's own
    ``--job-name``, else the pod's name): any Slurm job of
    red-box's user can carry a key in its comment, and a red-box may answer wrongly,
    so both are checked before a job is adopted or cancelled on the pod's behalf.
    """
    if found.idempotency_key != record.uid:
        return f"its key is {found.idempotency_key or 'missing'}, not the pod's UID {record.uid}"
    if found.name and found.name != (expected := job_name(record.pod)):
        return f"its name is {found.name!r}, not the pod's {expected!r}"
    return ""


def job_id_of(pod: Body) -> JobId | None:
    value = annotations_of(pod).get(names.ANNOTATION_JOB_ID, "")
    return JobId(int(value)) if value.strip().isdigit() else None


@dataclass(frozen=True)
class PodSettings:
    host_ip: str = "127.0.0.1"
    jobs_root: str = ""
    status_interval: float = 5.0
    workers: int = 32
    # Submissions in flight at once: red-box's concurrency. More workers than this keep
    # red-box busy while others write annotations and statuses.
    submissions: int = 16
    # Seconds after start before pods found without a job id are looked up by key.
    lookup_grace: float = 3.0


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
    ) -> None:
        self._client = client
        self._backend = backend
        self._events = EventQueue(events)
        self._directory = directory
        self._metrics = metrics
        self._settings = settings
        self._records: dict[str, PodRecord] = {}
        self._by_name: dict[tuple[str, str], str] = {}
        # A pod whose reconcile fails is retried after 0.5 s, doubling to 10 s while it keeps failing.
        self._queue: WorkQueue[str] = WorkQueue(base_delay=0.5, max_delay=_RETRY_MAX)
        self._find_supported = True
        self._first_listing = True
        self._synced = asyncio.Event()
        self._submitting = asyncio.Semaphore(max(1, settings.submissions))
        self._lookups_from = 0.0

    # -- public views --------------------------------------------------------------------------------------

    def pods(self) -> list[Body]:
        return [record.pod for record in self._records.values() if not record.gone]

    def record(self, namespace: str, name: str) -> PodRecord | None:
        uid = self._by_name.get((namespace, name))
        return self._records.get(uid) if uid else None

    def phases(self) -> dict[str, int]:
        return dict(Counter(record.phase for record in self._records.values() if not record.gone))

    async def synced(self) -> None:
        """Resolve once the first listing was taken in."""
        await self._synced.wait()

    # -- agents --------------------------------------------------------------------------------------------

    async def run(self) -> None:
        self._lookups_from = asyncio.get_running_loop().time() + self._settings.lookup_grace
        await self._probe_lookup()
        workers = [self._worker() for _ in range(max(1, self._settings.workers))]
        try:
            await asyncio.gather(
                restarting(self._watcher, name="pod watcher"),
                restarting(self._ticker, name="status ticker"),
                restarting(self._events.run, name="event sender"),
                *workers,
            )
        finally:
            self._queue.close()

    async def _probe_lookup(self) -> None:
        try:
            await self._backend.find("wlmvk-startup-probe")
        except Unsupported:
            self._find_supported = False
            _log.warning(
                "red-box has no idempotency lookup (an original red-box): exactly-once submission"
                " relies on the job-id annotation alone; a crash between submit and annotation can"
                " submit a pod twice"
            )
        except WlmvkError as exc:
            _log.info("idempotency lookup probe failed; will try per pod", error=exc.message)

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
                if self._directory.owns(str((pod.get("spec") or {}).get("nodeName", ""))):
                    uid = str(meta(pod).get("uid", ""))
                    seen.add(uid)
                    self._upsert(pod, lookup=self._first_listing)
            for uid, record in self._records.items():
                if uid not in seen and not record.gone:
                    record.gone = True
                    self._wake(record)
            self._first_listing = False
            self._synced.set()
            return
        assert isinstance(event, Changed)
        uid = str(meta(event.object).get("uid", ""))
        if event.type == "DELETED":
            known = self._records.get(uid)
            if known is not None:
                known.pod = slim(event.object)
                known.gone = True
                self._wake(known)
            return
        node = str((event.object.get("spec") or {}).get("nodeName", ""))
        if self._directory.owns(node):
            self._upsert(event.object, lookup=False)

    def _upsert(self, pod: Body, *, lookup: bool) -> None:
        uid = str(meta(pod).get("uid", ""))
        record = self._records.get(uid)
        if record is None:
            record = PodRecord(uid=uid, pod=slim(pod), looked_up=not lookup)
            self._records[uid] = record
            self._by_name[(record.namespace, record.name)] = uid
        else:
            record.pod = slim(pod)
        if record.job_id is None and record.claimed is None:
            if self._find_supported:
                record.claimed = job_id_of(pod)
            else:
                record.job_id = job_id_of(pod)  # an original red-box reports no keys to check
        self._wake(record)

    def _wake(self, record: PodRecord) -> None:
        self._queue.add(record.uid, urgent=_urgent(record))

    async def _worker(self) -> None:
        while True:
            uid = await self._queue.get()
            try:
                record = self._records.get(uid)
                if record is not None:
                    await self._reconcile(record)
            except Exception:
                _log.exception("reconcile crashed", uid=uid)
                self._retry(uid)
            finally:
                self._queue.done(uid)

    def _retry(self, uid: str) -> None:
        record = self._records.get(uid)
        if record is not None:
            record.retrying = True
        self._queue.add_rate_limited(uid, urgent=record is not None and _urgent(record))

    async def _ticker(self) -> None:
        await self._synced.wait()
        while True:
            await self._yield_to_submissions()
            await self.tick()
            await asyncio.sleep(self._settings.status_interval)

    async def _yield_to_submissions(self) -> None:
        """While a burst of pods is being submitted, hold the tick back (at most one interval).

        A tick's query and the status writes it causes compete with the submissions
        for red-box, Slurm and the API server; the jobs should reach Slurm first. A
        pod's phase is Pending before and after its first status write either way.
        """
        loop = asyncio.get_running_loop()
        until = loop.time() + self._settings.status_interval
        while self._queue.urgent() and loop.time() < until:
            await asyncio.sleep(min(0.1, self._settings.status_interval))

    async def tick(self) -> None:
        """One batched state query for every live job; changed states queue their pods."""
        live = {
            record.job_id: record
            for record in self._records.values()
            if record.job_id is not None and not record.final and not record.ended.is_set()
        }
        claims = [
            (record.claimed, record)
            for record in self._records.values()
            if record.claimed is not None and not (record.job_id or record.final or record.foreign)
        ]
        if not live and not claims:
            try:
                await self._backend.info()  # keeps reachability (and the node conditions) current
            except WlmvkError:
                pass
            return
        self._metrics.status_ticks.inc()
        try:
            states = await self._backend.states(list(dict.fromkeys([*live, *(job for job, _ in claims)])))
        except WlmvkError as exc:
            _log.warning("job states unavailable", error=exc.message, jobs=len(live))
            return
        for job_id, record in claims:
            claimed = states.get(job_id)
            if claimed is not None and _belongs(claimed, record.uid):
                record.job_id, record.claimed = job_id, None
                live[job_id] = record
            elif claimed is not None:
                record.foreign = True
                self._wake(record)
        for job_id, record in live.items():
            state = states.get(job_id)
            if state is None or state == record.state:
                continue
            record.state = state
            if pod_status.over(state.status):
                record.ended.set()
            self._wake(record)

    # -- reconcile -----------------------------------------------------------------------------------------

    async def _reconcile(self, record: PodRecord) -> None:
        log = _log.bind(pod=f"{record.namespace}/{record.name}", job_id=record.job_id)
        record.retrying = False
        try:
            if record.gone:
                await self._forget(record, log)
            elif is_deleting(record.pod):
                await self._finish_deletion(record, log)
            elif record.final:
                return
            elif record.job_id is None:
                if record.phase in pod_status.TERMINAL_PHASES:
                    record.final = True
                elif record.foreign:
                    message = (
                        f"annotation {names.ANNOTATION_JOB_ID}={record.claimed}: that Slurm job is not"
                        " this pod's (its key is not the pod's UID); it is not adopted"
                    )
                    await self._reject(record, "ForeignJob", message)
                elif record.claimed is None:
                    await self._submit(record, log)
                # else: a claimed job id, checked by the next status tick
            elif record.phase in pod_status.TERMINAL_PHASES and record.written_state is None:
                record.final = True  # finished before this kubelet started
                record.ended.set()
            else:
                await self._write_status(record)
            if not record.retrying:
                self._queue.forget(record.uid)
        except Unavailable as exc:
            log.info("red-box or API server unavailable; will retry", error=exc.message)
            self._retry(record.uid)

    async def _submit(self, record: PodRecord, log: structlog.typing.FilteringBoundLogger) -> None:
        resources = self._directory.partition_of(record.node)
        if resources is None:
            if self._directory.partitions:
                message = f"node {record.node} has no Slurm partition any more"
                await self._reject(record, "PartitionGone", message)
            else:
                self._retry(record.uid)  # no partition known yet (red-box unreachable since start)
            return
        target = Target(resources.name, resources.container_runtime, self._settings.jobs_root)
        spec = pod_to_job(record.pod, target)
        if isinstance(spec, Rejection):
            await self._reject(record, spec.reason, spec.message)
            return
        if not record.looked_up and self._find_supported:
            wait = self._lookups_from - asyncio.get_running_loop().time()
            if wait > 0:
                # A predecessor killed mid-submission may have left a job that red-box and
                # Slurm show only a moment later: look up after a short grace.
                self._queue.add_after(record.uid, wait, urgent=True)
                record.retrying = True
                return
            log.debug("looking up the job by key before submitting")
            try:
                found = await self._backend.find(record.uid)
            except Unsupported:
                self._find_supported = False
                found = None
            record.looked_up = True
            if found is not None and (why := _not_the_pods(found, record)):
                message = (
                    f"red-box found Slurm job {found.job_id} by this pod's key, but {why}; it is not adopted"
                )
                await self._reject(record, "ForeignJob", message)
                return
            if found is not None:
                record.job_id, record.state = found.job_id, found
                log.info("adopted job submitted before a restart", job_id=found.job_id)
                await self._annotate(record)
                self._post(
                    record.pod, type=NORMAL, reason="Adopted", message=f"Adopted Slurm job {found.job_id}"
                )
                self._wake(record)
                return
        log.debug("submitting")
        try:
            async with self._submitting:
                if isinstance(spec, ContainerJobSpec):
                    job_id = await self._backend.submit_container(spec)
                else:
                    job_id = await self._backend.submit(spec)
        except Unavailable:
            self._metrics.submissions.inc(result="unavailable")
            # The reply may be what was lost (red-box ran sbatch, then the connection dropped):
            # look the key up again before submitting again or letting a deleted pod go.
            record.looked_up = False
            raise
        except WlmvkError as exc:
            self._metrics.submissions.inc(result="rejected")
            await self._reject(record, "SubmitFailed", f"Slurm refused the job: {exc.message}")
            return
        self._metrics.submissions.inc(result="submitted")
        record.job_id = job_id
        log.info("submitted", job_id=job_id, partition=spec.partition)
        await self._annotate(record)
        self._post(
            record.pod,
            type=NORMAL,
            reason="Submitted",
            message=f"Submitted Slurm job {job_id} to partition {spec.partition}",
        )

    def _post(self, pod: Body, *, type: str, reason: str, message: str) -> None:
        """Queue an Event off the worker's path: Events are best effort and must not slow submission."""
        self._events.record(pod, type=type, reason=reason, message=message)

    async def _annotate(self, record: PodRecord) -> None:
        patch = {"metadata": {"annotations": {names.ANNOTATION_JOB_ID: str(record.job_id)}}}
        delay = 0.2
        while True:
            try:
                record.pod = slim(
                    await self._client.patch(PODS, record.name, patch, namespace=record.namespace)
                )
                return
            except NotFound:
                record.gone = True  # deleted meanwhile: the job is cancelled by _forget
                self._wake(record)
                return
            except Unavailable:
                # The job exists: keep trying, the id must reach the pod.
                await asyncio.sleep(delay)
                delay = min(delay * 2, _RETRY_MAX)

    async def _reject(self, record: PodRecord, reason: str, message: str) -> None:
        body = pod_status.rejected_status(reason, message, record.facts(self._settings.host_ip), now=_now())
        await self._patch_status(record, body)
        record.final = True
        record.ended.set()
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
        await self._patch_status(record, body)
        for transition in pod_status.transitions(record.written_state, state):
            self._post(record.pod, type=transition.type, reason=transition.reason, message=transition.message)
        record.written_state, record.written_key = state, key
        if body["phase"] in pod_status.TERMINAL_PHASES:
            record.final = True
            record.ended.set()

    async def _patch_status(self, record: PodRecord, body: Body) -> None:
        patch = {"status": {"reason": None, "message": None, **body}}
        try:
            updated = await self._client.patch_status(PODS, record.name, patch, namespace=record.namespace)
        except NotFound:
            record.gone = True
            self._wake(record)
            return
        self._metrics.status_writes.inc()
        if str(meta(updated).get("uid", "")) == record.uid:
            record.pod = slim(updated)

    async def _cancel(self, record: PodRecord, log: structlog.typing.FilteringBoundLogger) -> bool:
        """Cancel the pod's job; True once Slurm reports it ended (or there is none)."""
        if record.job_id is None and not record.looked_up and self._find_supported:
            try:
                found = await self._backend.find(record.uid)
            except Unsupported:
                self._find_supported = False
                found = None
            record.looked_up = True
            if found is not None and not _not_the_pods(found, record):
                record.job_id, record.state = found.job_id, found
        if record.job_id is None or record.ended.is_set():
            return True
        if record.state is not None and pod_status.over(record.state.status):
            return True
        if record.written_state is None and record.phase in pod_status.TERMINAL_PHASES:
            return True  # finished before this kubelet started
        if not record.cancelled:
            try:
                await self._backend.cancel(record.job_id)
            except NotFound:
                return True
            except Unavailable:
                raise
            except WlmvkError as exc:
                # Typically "already completing": the ticker learns the end from Slurm.
                log.info("cancel refused", job_id=record.job_id, error=exc.message)
            record.cancelled = True
            log.info("cancelled", job_id=record.job_id)
        return False  # the ticker queues the pod again when Slurm reports the end

    async def _finish_deletion(self, record: PodRecord, log: structlog.typing.FilteringBoundLogger) -> None:
        if not await self._cancel(record, log):
            return
        if not record.final:
            body = pod_status.deleted_status(
                record.job_id, record.facts(self._settings.host_ip), now=_now(), state=record.state
            )
            await self._patch_status(record, body)
            record.final = True
        record.ended.set()
        try:
            await self._client.delete(
                PODS, record.name, namespace=record.namespace, grace_period_seconds=0, uid=record.uid
            )
        except NotFound:
            pass
        log.info("pod deleted")

    async def _forget(self, record: PodRecord, log: structlog.typing.FilteringBoundLogger) -> None:
        if not await self._cancel(record, log):
            return
        record.ended.set()
        self._records.pop(record.uid, None)
        if self._by_name.get((record.namespace, record.name)) == record.uid:
            del self._by_name[(record.namespace, record.name)]


def _now() -> datetime:
    return datetime.now(UTC)
