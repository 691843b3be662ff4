"""One active kubelet per cluster, the others standing by: the cluster Lease and the fence.

Several agent hosts may run ``wlmvk kubelet --leader-elect`` for the same
``--cluster-name``. They compete for one coordination.k8s.io Lease per cluster
(``lease_name``, in the node Leases' namespace) through ``kube.leader.Elector``;
the holder serves the cluster's nodes and pods, the others wait for the Lease
to expire (or be released at a graceful stop) and then start serving as a
restarted kubelet does: nodes re-registered with the new holder's address and
port, every pod looked up by its key before anything is submitted.

The holder's writes are fenced three times. Its API client
(``kube.fencing.FencedClient``) and its red-box calls that change Slurm
(``FencedBackend``: submit, cancel, stage in) first check that its proof of
the Lease is still valid (``Elector.check``); red-box's client checks again
just before each call is sent, a batch's and a retry's included
(``LeaseFence``, ``redboxclient.fencing``); and each call carries the Lease's
transitions count as a fencing token that red-box never accepts lower than
the highest it has seen (``core.fences``). So a holder that lost the Lease, or
was frozen past it, changes nothing, even with calls already on their way;
it then exits, to come back as a standby.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import AsyncIterable, AsyncIterator, Callable, Mapping, Sequence

from wlmvk.core import names
from wlmvk.core.backend import Backend
from wlmvk.core.execs import ExecEvent, ExecOutput, ExecSpec
from wlmvk.core.fences import Token
from wlmvk.core.jobs import ContainerJobSpec, JobId, JobSpec, JobState, PartitionResources, WorkloadInfo
from wlmvk.core.usage import UsageSample
from wlmvk.kube.leader import ElectionConfig, Elector

LEASE_SUFFIX = ".kubelet"


def lease_name(cluster: str) -> str:
    """The cluster's Lease: ``slurm-<cluster>.kubelet``.

    The dot keeps it apart from the node Leases in the same namespace (``slurm-<cluster>-<partition>``;
    only a partition named ``*.kubelet`` of a cluster named ``<cluster>-*`` could collide), and
    ``slurm-`` is the prefix of the Leases the kubelet may write (manifests/admission.yaml).
    """
    return f"slurm-{cluster}".lower().replace("_", "-") + LEASE_SUFFIX


def identity(agent_host: str) -> str:
    """This process among the cluster's kubelets: its host, and a random part for a restarted one."""
    host = agent_host or socket.gethostname()
    return f"{host}_{os.getpid()}_{uuid.uuid4().hex[:8]}"


def election(
    cluster: str, who: str, *, duration: int, renew_interval: float, retry_interval: float
) -> ElectionConfig:
    """The cluster Lease's election settings."""
    return ElectionConfig(
        name=lease_name(cluster),
        namespace=names.NODE_LEASE_NAMESPACE,
        identity=who,
        duration=duration,
        renew_interval=renew_interval,
        retry_interval=retry_interval,
    )


def takeover_bound(config: ElectionConfig) -> float:
    """Seconds from the holder's last renewal until a standby holds the Lease, at most.

    A standby counts ``duration`` from when it saw the last renewal, which it sees within one
    ``retry_interval``, and looks again every ``retry_interval``.
    """
    return config.duration + 2 * config.retry_interval


class LeaseFence:
    """``core.fences.Fencing`` by the cluster Lease: the holder's proof checked, its transitions sent."""

    def __init__(self, elector: Elector) -> None:
        self._elector = elector

    def check(self) -> Token:
        self._elector.check()
        return Token(self._elector.scope, self._elector.transitions)

    def token(self) -> Token | None:
        if not self._elector.holds():
            return None
        return Token(self._elector.scope, self._elector.transitions)

    async def refused(self, highest: int) -> None:
        """Still holding yet refused: the Lease was made again (its count restarted); count on."""
        await self._elector.advance(highest + 1)


class FencedBackend:
    """A ``Backend`` whose calls that change Slurm first pass ``check`` (raising when fenced)."""

    def __init__(self, inner: Backend, *, check: Callable[[], object]) -> None:
        self._inner = inner
        self._check = check

    async def info(self) -> WorkloadInfo:
        return await self._inner.info()

    async def partitions(self) -> list[str]:
        return await self._inner.partitions()

    async def resources(self, partition: str) -> PartitionResources:
        return await self._inner.resources(partition)

    async def submit(self, spec: JobSpec) -> JobId:
        self._check()
        return await self._inner.submit(spec)

    async def submit_container(self, spec: ContainerJobSpec) -> JobId:
        self._check()
        return await self._inner.submit_container(spec)

    async def find(self, idempotency_key: str) -> JobState | None:
        return await self._inner.find(idempotency_key)

    async def states(self, job_ids: Sequence[JobId]) -> Mapping[JobId, JobState]:
        return await self._inner.states(job_ids)

    async def usage(self, job_ids: Sequence[JobId], *, budget: float | None = None) -> UsageSample:
        return await self._inner.usage(job_ids, budget=budget)

    async def cancel(self, job_id: JobId) -> None:
        self._check()
        await self._inner.cancel(job_id)

    def exec(self, spec: ExecSpec, events: AsyncIterator[ExecEvent]) -> AsyncIterator[ExecOutput]:
        return self._inner.exec(spec, events)

    def open_file(self, path: str) -> AsyncIterator[bytes]:
        return self._inner.open_file(path)

    def tail_file(self, path: str) -> AsyncIterator[bytes]:
        return self._inner.tail_file(path)

    async def stage_in(self, directory: str, tar_stream: AsyncIterable[bytes]) -> tuple[int, int]:
        self._check()
        return await self._inner.stage_in(directory, tar_stream)

    def stage_out(self, path: str) -> AsyncIterator[bytes]:
        return self._inner.stage_out(path)
