"""What the kubelet keeps of each pod it serves: the slimmed pod, its stage and its job.

The controller, the provider and the status poller share these records (one event loop, one
worker per pod at a time). A record's ``stage`` says where the pod is in its lifecycle
(``states``); the other fields are data, not flags: the job followed, the last state Slurm
reported, and the last status written.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from wlmvk.core import names
from wlmvk.core.jobs import JobId, JobState
from wlmvk.kube import objects
from wlmvk.kube.bodies import Body
from wlmvk.kubelet.pods import status as pod_status
from wlmvk.kubelet.pods import translate
from wlmvk.kubelet.pods.states import Happening, Presence, Stage, advance


@dataclass
class PodRecord:
    """What the kubelet knows of one pod (keyed by UID)."""

    uid: str
    pod: Body
    stage: Stage
    job_id: JobId | None = None
    """The pod's job, once shown to be the pod's (submitted, adopted, or a confirmed claim)."""
    claimed: JobId | None = None
    """The job the pod's annotation names, until checked (CLAIMED); kept when it is another's."""
    state: JobState | None = None
    written_state: JobState | None = None
    written_key: int = 0
    gone: bool = False
    """Deleted from the API: the record outlives the pod until its job is over."""
    held: str = ""
    """The message of the limit that last held the pod's submission back ("" when none did)."""
    user: str = ""
    """The tenant user whose red-box the pod's job was submitted to ("" for the default red-box)."""
    image_unused: str = ""
    """Why the pod's image does not run where its job runs ("" when it does, or before it is known)."""
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once the job will not change (log followers wait on it)."""
    _job_name: str | None = field(default=None, init=False, repr=False)

    @property
    def job_name(self) -> str:
        """The name of the pod's Slurm job (``translate.job_name``), derived once: the job submitted
        carries it, and a job found by the pod's key must bear it."""
        if self._job_name is None:
            self._job_name = translate.job_name(self.pod)
        return self._job_name

    def advance(self, happening: Happening) -> None:
        before, self.stage = self.stage, advance(self.stage, happening)
        if self.stage is Stage.FINAL:
            self.ended.set()
            if before is Stage.CLAIMED:
                self.claimed = None  # never checked: it says nothing of the pod any more

    @property
    def foreign(self) -> bool:
        """The pod's annotation names a job shown to be another's (it stays so once the pod failed)."""
        return self.claimed is not None and self.stage in (Stage.FOREIGN, Stage.FINAL)

    @property
    def presence(self) -> Presence:
        if self.gone:
            return Presence.GONE
        return Presence.DELETING if objects.deleting(self.pod) else Presence.LIVE

    @property
    def namespace(self) -> str:
        return objects.namespace(self.pod)

    @property
    def name(self) -> str:
        return objects.name(self.pod)

    @property
    def node(self) -> str:
        return objects.node_name(self.pod)

    @property
    def phase(self) -> str:
        return objects.phase(self.pod) or pod_status.PENDING

    @property
    def finished_before(self) -> bool:
        """The pod ended before this kubelet wrote anything for it (a predecessor did)."""
        return self.written_state is None and self.phase in pod_status.TERMINAL_PHASES

    def facts(self, host_ip: str) -> pod_status.PodFacts:
        container = objects.containers(self.pod)[0] if objects.containers(self.pod) else {}
        return pod_status.PodFacts(
            container=str(container.get("name", "job")),
            image=str(container.get("image", "")),
            host_ip=host_ip,
            created=str(objects.meta(self.pod).get("creationTimestamp", "")),
            image_unused=self.image_unused,
        )


def slim(pod: Body) -> Body:
    """What the kubelet keeps of a pod: all but managedFields and the status it writes itself.

    Thousands of pods are held at once; the status the kubelet wrote is known from
    the job state, so only the phase is kept (to know a pod finished before a restart).
    """
    metadata = {key: value for key, value in objects.meta(pod).items() if key != "managedFields"}
    phase = objects.phase(pod)
    return {
        "apiVersion": pod.get("apiVersion", "v1"),
        "kind": pod.get("kind", "Pod"),
        "metadata": metadata,
        "spec": objects.spec(pod),
        "status": {"phase": phase} if phase else {},
    }


def job_id_of(pod: Body) -> JobId | None:
    """The job id the pod's annotation names (a claim, until checked)."""
    value = objects.annotations(pod).get(names.ANNOTATION_JOB_ID, "")
    return JobId(int(value)) if value.strip().isdigit() else None
