"""A pod's tenant on this kubelet: the identity its job gets, and the red-box that submits it.

Identity is the Unix user a red-box runs as (docs/tenancy.md): one red-box per tenant user, each
reached through its own socket, named by the site on the kubelet's command line (``--red-box
USER=SOCKET``), never by anything a pod author or tenant writes. ``core.tenancy.decide`` says
which user, account and QoS a pod's job runs as; this module applies it to the job (its script
gets ``--account`` and ``--qos``) and picks that user's red-box. With no SlurmTenant at all, every
pod goes to the default red-box, as before.

A job is followed, cancelled and looked up through the red-box that holds it: the one its
submission went to (``PodRecord.user``), else, after a restart, its namespace's tenant's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from wlmvk.core import names
from wlmvk.core.backend import Backend
from wlmvk.core.errors import InvalidInput
from wlmvk.core.jobs import ContainerJobSpec, JobSpec
from wlmvk.kube import objects
from wlmvk.kube.tenants import TenantWatch
from wlmvk.kubelet.pods.observing import StateLooks
from wlmvk.kubelet.pods.records import PodRecord
from wlmvk.kubelet.pods.translate import Rejection
from wlmvk.slurm import sbatch, tenancy

TENANT_REFUSED = "TenantRefused"


@dataclass(frozen=True)
class Routed:
    """A job to submit as ``user`` ('' for the default red-box's own) through ``backend``."""

    backend: Backend
    user: str
    spec: JobSpec | ContainerJobSpec


@dataclass(kw_only=True)
class TenantRoutes:
    default: Backend
    cluster: str
    red_boxes: Mapping[str, Backend] = field(default_factory=dict)
    """The site's ``--red-box USER=SOCKET``: the red-box of each tenant user."""
    watch: TenantWatch | None = None
    """None: no SlurmTenant is ever read (tenancy off), as for a kubelet built without one."""
    looks: StateLooks | None = None
    """One look at every followed job through the default red-box (None: each holder is asked)."""

    @property
    def ready(self) -> bool:
        """Whether the SlurmTenants are known (nothing is submitted before)."""
        return self.watch is None or self.watch.synced.is_set()

    @property
    def book(self) -> tenancy.Book:
        return self.watch.book if self.watch is not None else tenancy.Book()

    def holder_of(self, record: PodRecord) -> str:
        """The tenant user whose red-box holds (or would hold) the pod's job; '' for the default."""
        user = record.user
        if not user and self.book.on:
            tenant = tenancy.tenant_of(self.book, record.namespace)
            user = tenant.user if isinstance(tenant, tenancy.Tenant) else ""
        return user if user in self.red_boxes else ""

    def backend_of(self, record: PodRecord) -> Backend:
        """The red-box that holds (or would hold) the pod's job."""
        holder = self.holder_of(record)
        return self.red_boxes[holder] if holder else self.default

    def backends(self) -> list[Backend]:
        """Every red-box jobs may be held by, the default first."""
        return [self.default, *self.red_boxes.values()]

    def route(self, record: PodRecord, spec: JobSpec | ContainerJobSpec) -> Routed | Rejection:
        """The pod's job as its tenant runs it, or why it may not run.

        A scripted pod's own script is judged, so that a refusal names the line its author wrote:
        the kubelet adds only resource options (``translate``), which choose no identity.
        """
        own = objects.annotations(record.pod).get(names.ANNOTATION_BATCH)
        script = own if own is not None else spec.script if isinstance(spec, JobSpec) else ""
        decided = tenancy.decide(
            self.book,
            namespace=record.namespace,
            cluster=self.cluster,
            partition=spec.partition,
            script=script,
            env=spec.env,
        )
        if decided is None:
            return Routed(self.default, "", spec)
        if isinstance(decided, tenancy.Refusal):
            return Rejection(decided.reason, decided.message)
        backend = self.red_boxes.get(decided.user)
        if backend is None:
            return Rejection(
                TENANT_REFUSED,
                f"SlurmTenant {decided.tenant}: user {decided.user} has no red-box on this kubelet"
                f" (the site's --red-box {decided.user}=SOCKET)",
            )
        if isinstance(spec, ContainerJobSpec):
            # red-box writes a container job's script itself, with the account and QoS asked here.
            return Routed(backend, decided.user, replace(spec, account=decided.account, qos=decided.qos))
        try:
            script = sbatch.with_defaults(spec.script, decided.directives())
        except InvalidInput as exc:
            return Rejection("InvalidBatchScript", exc.message)
        return Routed(backend, decided.user, replace(spec, script=script))
