"""The Slurm pod provider: a pod's job created, found, cancelled, over the ``Backend``.

As virtual-kubelet's ``PodLifecycleHandler``, the provider knows the workload manager and nothing
of Kubernetes' plumbing: the pod controller calls it to create a pod's job and to delete it, and
does the API writes (annotation, status, Events) from what it answers. It moves a pod's stage
(``states``) for what it learns from red-box.

Exactly once: the pod UID is the job's idempotency key. A pod seen at start without a job id
(stage UNVERIFIED) is looked up by that key before anything is submitted, after a short grace
(a predecessor killed mid-submission may have left a job that red-box and Slurm show only a
moment later); a submission whose reply was lost is looked up again before submitting again or
letting a deleted pod go. Against an original red-box (no lookup) the annotation alone protects,
which is said once in the log at start.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import structlog

from wlmvk.core import names, runtimes
from wlmvk.core.backend import Backend
from wlmvk.core.errors import LimitReached, NotFound, Unavailable, Unsupported, WlmvkError
from wlmvk.core.jobs import ContainerJobSpec, JobId, JobState, JobStatus, PartitionResources
from wlmvk.kubelet.metrics import KubeletMetrics
from wlmvk.kubelet.node.directory import NodeDirectory
from wlmvk.kubelet.pods import status as pod_status
from wlmvk.kubelet.pods import translate
from wlmvk.kubelet.pods.records import PodRecord
from wlmvk.kubelet.pods.states import Happening, Stage
from wlmvk.kubelet.pods.tenants import TenantRoutes
from wlmvk.kubelet.pods.translate import Rejection, unused_image

_log = structlog.get_logger(__name__)

Logger = structlog.typing.FilteringBoundLogger

_LIMIT_REASON = re.compile(r"\b[A-Z][A-Za-z]*Limit\b")
"""Slurm's name of the limit in sbatch's answer (``sbatch: error: QOSMaxSubmitJobPerUserLimit``)."""


@dataclass(frozen=True)
class Started:
    """The pod has its job: ``reason`` (Submitted, or Adopted when found by its key after a
    restart) and ``message`` say how, for the Normal Event."""

    job_id: JobId
    reason: str
    message: str
    warning: str = ""
    """What the pod asked that its job does not honour (for a Warning Event): its image unused."""


@dataclass(frozen=True)
class Later:
    """Nothing to do yet: come back after ``delay`` seconds (None: the usual retry delay)."""

    delay: float | None = None
    held: Rejection | None = None
    """Why the pod waits, for its status (Pending) and a Warning Event: a limit of Slurm's refused
    its submission for now (``reason`` is Slurm's, e.g. QOSMaxSubmitJobPerUserLimit)."""


LIMIT_RETRY = 20.0
"""Seconds a pod whose submission a limit refused waits before it is tried again: a tenant's many
held pods ask Slurm a few times a minute each, not in a storm, and start soon after it frees."""


Created = Started | Rejection | Later
"""What ``create`` did; a ``Rejection`` fails the pod with its reason (a condition and a Warning Event)."""


def belongs(state: JobState, uid: str) -> bool:
    """A claimed job is the pod's when its key is the pod's UID; a job Slurm lost holds nothing to protect."""
    if state.idempotency_key:
        return state.idempotency_key == uid
    return state.status is JobStatus.NOT_FOUND


def not_the_pods(found: JobState, record: PodRecord) -> str:
    """Why a job FindJob returned for the pod's key is not the pod's ('' when it is).

    The key is the pod's UID and the job's name the pod's (its script's own
    ``--job-name``, else the pod's name): any Slurm job of
    red-box's user can carry a key in its comment, and a red-box may answer wrongly,
    so both are checked before a job is adopted or cancelled on the pod's behalf.
    """
    if found.idempotency_key != record.uid:
        return f"its key is {found.idempotency_key or 'missing'}, not the pod's UID {record.uid}"
    if found.name and found.name != (expected := record.job_name):
        return f"its name is {found.name!r}, not the pod's {expected!r}"
    return ""


@dataclass(kw_only=True)
class SlurmProvider:
    backend: Backend
    directory: NodeDirectory
    metrics: KubeletMetrics
    jobs_root: str
    gpu_names: Mapping[str, str] = field(default_factory=dict)
    """The site's GPU resource names -> Slurm GRES types."""
    sif_gpu_flags: tuple[str, ...] = runtimes.GPU_FLAGS
    """The SIF runtime's flags for a plain pod's image with GPUs (the site's)."""
    submissions: int
    """Submissions in flight at once to each red-box (its concurrency): each tenant user's red-box
    has its own, so one that is slow or busy holds back only its own tenant's pods."""
    lookup_grace: float
    """Seconds after start before pods found without a job id are looked up by key."""
    tenants: TenantRoutes | None = None
    """Whose red-box a pod's job goes to, as whom (None: every job to ``backend``, as its user)."""
    lookups: bool = field(default=True, init=False)
    """Whether red-box can find a job by key (an original red-box cannot)."""
    _submitting: dict[str, asyncio.Semaphore] = field(default_factory=dict, init=False)
    """The submissions in flight to each red-box, by its user ('' for the default red-box)."""
    _lookups_from: float = field(default=0.0, init=False)

    def __post_init__(self) -> None:
        if self.tenants is None:
            self.tenants = TenantRoutes(default=self.backend, cluster=self.directory.cluster)

    def backend_of(self, record: PodRecord) -> Backend:
        """The red-box that holds (or would hold) the pod's job."""
        assert self.tenants is not None
        return self.tenants.backend_of(record)

    def holder_of(self, record: PodRecord) -> str:
        """The user of the red-box that holds (or would hold) the pod's job ('' the default one)."""
        assert self.tenants is not None
        return self.tenants.holder_of(record)

    @property
    def ready(self) -> bool:
        """Whether pods can be submitted (the SlurmTenants are known)."""
        assert self.tenants is not None
        return self.tenants.ready

    async def probe(self) -> None:
        """Learn whether red-box can look jobs up by key; start the lookup grace."""
        self._lookups_from = asyncio.get_running_loop().time() + self.lookup_grace
        try:
            await self.backend.find("wlmvk-startup-probe")
        except Unsupported:
            self.lookups = False
            _log.warning(
                "red-box has no idempotency lookup (an original red-box): exactly-once submission"
                " relies on the job-id annotation alone; a crash between submit and annotation can"
                " submit a pod twice"
            )
        except WlmvkError as exc:
            _log.info("idempotency lookup probe failed; will try per pod", error=exc.message)

    async def create(self, record: PodRecord, log: Logger) -> Created:
        """Give a pod in stage UNVERIFIED, NEW or FOREIGN its job: find the one submitted earlier,
        or submit (not for FOREIGN: its annotation names another's job, it fails ForeignJob).

        Raises ``Unavailable`` when red-box cannot be reached (the pod is retried).
        """
        assert self.tenants is not None
        if not self.tenants.ready:
            return Later()  # whether tenancy is on is not known yet: nothing runs on a guess
        if record.stage in (Stage.UNVERIFIED, Stage.FOREIGN):
            # Before anything else: a job found under the pod's key is the pod's, whatever its spec
            # (or its annotation, only a claim) now says.
            wait = self._lookups_from - asyncio.get_running_loop().time()
            if wait > 0 and self.lookups:
                return Later(wait)
            log.debug("looking up the job by key")
            found = await self._find(record)
            if found is not None and (why := not_the_pods(found, record)):
                return Rejection(
                    "ForeignJob",
                    f"red-box found Slurm job {found.job_id} by this pod's key, but {why}; it is not adopted",
                )
            if found is not None:
                claimed = record.claimed
                self._adopt(record, found)
                self._note_image(record)
                log.info("adopted job submitted before a restart", job_id=found.job_id, claimed=claimed)
                besides = f" (found by this pod's key; the annotation named job {claimed}, another's)"
                message = f"Adopted Slurm job {found.job_id}{besides if claimed else ''}"
                return Started(found.job_id, "Adopted", message)
            if record.stage is Stage.FOREIGN:
                return Rejection(
                    "ForeignJob",
                    f"annotation {names.ANNOTATION_JOB_ID}={record.claimed}: that Slurm job is not"
                    " this pod's (its key is not the pod's UID); it is not adopted",
                )
            record.advance(Happening.NOTHING_FOUND)
        resources = self.directory.partition_of(record.node)
        if resources is None:
            if self.directory.partitions:
                return Rejection("PartitionGone", f"node {record.node} has no Slurm partition any more")
            return Later()  # no partition known yet (red-box unreachable since start)
        target = self._target(resources)
        planned = translate.plan(record.pod, target, name=record.job_name)
        if isinstance(planned, Rejection):
            return planned
        routed = self.tenants.route(record, planned.spec)
        if isinstance(routed, Rejection):
            return routed
        spec, backend, record.user = routed.spec, routed.backend, routed.user
        record.image_unused = planned.image_unused
        log.debug("submitting", user=routed.user or None)
        try:
            async with self._gate(routed.user):
                if isinstance(spec, ContainerJobSpec):
                    job_id = await backend.submit_container(spec)
                else:
                    job_id = await backend.submit(spec)
        except LimitReached as exc:
            # sbatch made nothing: the pod stays NEW, and is tried again later.
            self.metrics.submissions.inc(result="limited")
            limit = _LIMIT_REASON.search(exc.message)
            reason = limit.group(0) if limit else "SubmitLimit"
            return Later(LIMIT_RETRY, held=Rejection(reason, f"Slurm refused the job for now: {exc.message}"))
        except Unavailable:
            self.metrics.submissions.inc(result="unavailable")
            # The reply may be what was lost (red-box ran sbatch, then the connection dropped):
            # look the key up again before submitting again or letting a deleted pod go.
            record.advance(Happening.REPLY_LOST)
            raise
        except WlmvkError as exc:
            self.metrics.submissions.inc(result="rejected")
            return Rejection("SubmitFailed", f"Slurm refused the job: {exc.message}")
        self.metrics.submissions.inc(result="submitted")
        record.job_id = job_id
        record.advance(Happening.SUBMITTED)
        log.info("submitted", job_id=job_id, partition=spec.partition)
        message = f"Submitted Slurm job {job_id} to partition {spec.partition}"
        if routed.user:
            message += f" as user {routed.user}"
        return Started(job_id, "Submitted", message, warning=record.image_unused)

    def _gate(self, user: str) -> asyncio.Semaphore:
        """The bound on submissions in flight to ``user``'s red-box ('' for the default red-box).

        One per red-box, not one for all: with one for all, many tenants' red-boxes would share
        ``submissions`` in flight, each call carrying one job (pods of many tenants seldom meet on
        one red-box to go together), and a red-box that does not answer would hold back every
        tenant's pods. The pod workers bound the whole.
        """
        gate = self._submitting.get(user)
        if gate is None:
            gate = self._submitting[user] = asyncio.Semaphore(max(1, self.submissions))
        return gate

    def _note_image(self, record: PodRecord) -> None:
        """An adopted pod's image, judged on its partition as when it was submitted."""
        resources = self.directory.partition_of(record.node)
        if resources is not None:
            target = self._target(resources)
            record.image_unused = unused_image(record.pod, target)

    def _target(self, resources: PartitionResources) -> translate.Target:
        """Where a pod runs: its partition as red-box reports it, with this kubelet's site settings."""
        return translate.target(resources, self.jobs_root, self.gpu_names, self.sif_gpu_flags)

    @staticmethod
    def _adopt(record: PodRecord, found: JobState) -> None:
        """Take on the job found under the pod's key; an annotation's claim says nothing any more."""
        record.job_id, record.state, record.claimed = found.job_id, found, None
        record.advance(Happening.ADOPTED)

    async def _find(self, record: PodRecord) -> JobState | None:
        """The job red-box knows under the pod's key (None when none, or when it cannot look up)."""
        if not self.lookups:
            return None
        try:
            return await self.backend_of(record).find(record.uid)
        except Unsupported:
            self.lookups = False
            return None

    async def delete(self, record: PodRecord, log: Logger) -> bool:
        """End the pod's job for a pod going away; True once nothing of it runs in Slurm.

        False while a cancelled job has not ended yet: the status poller queues the pod
        again when Slurm reports the end. Raises ``Unavailable`` (the pod is retried).
        """
        if record.stage in (Stage.UNVERIFIED, Stage.CLAIMED, Stage.FOREIGN):
            # A job may run under the pod's key that no annotation names: find it before letting go.
            found = await self._find(record)
            if found is not None and not not_the_pods(found, record):
                self._adopt(record, found)
            elif record.stage is Stage.UNVERIFIED:
                record.advance(Happening.NOTHING_FOUND)
        if record.stage not in (Stage.TRACKING, Stage.CANCELLING) or record.job_id is None:
            return True  # no job of the pod's, or its end was already written
        if record.ended.is_set() or (record.state is not None and pod_status.over(record.state.status)):
            return True
        if record.finished_before:
            return True
        if record.stage is Stage.TRACKING:
            try:
                await self.backend_of(record).cancel(record.job_id)
            except NotFound:
                return True
            except Unavailable:
                raise
            except WlmvkError as exc:
                # Typically "already completing": the poller learns the end from Slurm.
                log.info("cancel refused", job_id=record.job_id, error=exc.message)
            record.advance(Happening.CANCELLED)
            log.info("cancelled", job_id=record.job_id)
        return False
