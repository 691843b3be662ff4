"""The contract between the Kubernetes side and a workload manager.

The kubelet, the operator's staging commands and the configurator speak to
a WLM only through this Protocol. ``redboxclient.client`` implements it over the
red-box gRPC API; another WLM plugs in by serving that API (or by
implementing this Protocol). Methods raise ``core.errors`` classes:
``Unavailable`` when the WLM cannot be reached, ``Unsupported`` when the peer
lacks an optional capability (an original red-box without wlmvk's rpcs).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from wlmvk.core.execs import ExecEvent, ExecOutput, ExecSpec
from wlmvk.core.jobs import (
    ContainerJobSpec,
    JobId,
    JobSpec,
    JobState,
    PartitionResources,
    WorkloadInfo,
)
from wlmvk.core.usage import UsageSample


class Backend(Protocol):
    async def info(self) -> WorkloadInfo:
        """Name, version and owner uid of the WLM; raises Unavailable when unreachable."""
        ...

    async def partitions(self) -> list[str]: ...

    async def resources(self, partition: str) -> PartitionResources: ...

    async def submit(self, spec: JobSpec) -> JobId:
        """Submit a batch job. With an idempotency key, a second call returns the first job."""
        ...

    async def submit_container(self, spec: ContainerJobSpec) -> JobId: ...

    async def find(self, idempotency_key: str) -> JobState | None:
        """The job submitted with this key, or None. Raises Unsupported on an original red-box."""
        ...

    async def states(self, job_ids: Sequence[JobId]) -> Mapping[JobId, JobState]:
        """States of many jobs in one round trip (falls back to one JobInfo per job)."""
        ...

    async def usage(self, job_ids: Sequence[JobId], *, budget: float | None = None) -> UsageSample:
        """CPU time and memory of the running ones of these jobs (others absent), read within
        ``budget`` seconds: running jobs not read in time are named unanswered. Unsupported when
        the WLM cannot."""
        ...

    async def cancel(self, job_id: JobId) -> None: ...

    def exec(self, spec: ExecSpec, events: AsyncIterator[ExecEvent]) -> AsyncIterator[ExecOutput]:
        """Run a command in a running job: ``events`` feed its input, the answer is its output,
        ending with ``Exited``. FailedPrecondition when the job is not running, NotFound when it is
        unknown, Unsupported when the WLM cannot (an original red-box). Stopping the iteration
        (``aclose()``, cancellation) ends the command."""
        ...

    def open_file(self, path: str) -> AsyncIterator[bytes]:
        """The whole file, in chunks."""
        ...

    def tail_file(self, path: str) -> AsyncIterator[bytes]:
        """The file from its start, then new bytes as they are written, until the caller stops."""
        ...

    async def stage_in(self, directory: str, tar_stream: AsyncIterable[bytes]) -> tuple[int, int]:
        """Unpack a tar stream into ``directory``; returns (files, bytes)."""
        ...

    def stage_out(self, path: str) -> AsyncIterator[bytes]:
        """A tar stream of a file or directory, named by its base name."""
        ...


@dataclass(frozen=True)
class Observation:
    """What one look at several users' jobs showed (``Observer.observe``)."""

    states: Mapping[JobId, tuple[str, JobState]]
    """Each job Slurm showed: its owner's user name and its state."""
    own_user: str
    """The user the red-box that looked runs as."""


class Observer(Protocol):
    """An optional capability of a WLM reached per Unix user (red-box: one per tenant user)."""

    async def observe(self, job_ids: Sequence[JobId]) -> Observation:
        """What Slurm shows of these jobs, whoever owns them: a reading, never an act.

        Jobs not shown (gone, or hidden from this user by the site) are absent. Raises
        Unsupported when the WLM cannot (an original red-box)."""
        ...

    async def follow(self, job_ids: Sequence[JobId]) -> None:
        """Say that these jobs of this user are followed through another's ``observe``."""
        ...
