"""The Backend as the kubelet uses it: every call timed into the metrics, its outcome told.

``MeteredBackend`` wraps the ``Backend`` (red-box's client): each call is
timed into ``KubeletMetrics``, and its outcome updates ``Reachability``
(``node.reachability``): an ``Unavailable`` marks red-box unreachable, the next
call that succeeds marks it reachable again.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Mapping, Sequence
from typing import TypeVar

from wlmvk.core.backend import Backend
from wlmvk.core.errors import Unavailable
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
from wlmvk.kubelet.metrics import KubeletMetrics
from wlmvk.kubelet.node.reachability import Reachability

T = TypeVar("T")


class MeteredBackend:
    """A ``Backend`` that times every call and tracks reachability."""

    def __init__(self, inner: Backend, *, metrics: KubeletMetrics, reachability: Reachability) -> None:
        self._inner = inner
        self._metrics = metrics
        self.reachability = reachability

    async def _call(self, method: str, call: Awaitable[T]) -> T:
        with self._metrics.wlm_calls.time(method=method):
            try:
                result = await call
            except Unavailable as exc:
                self._metrics.wlm_errors.inc(method=method)
                self.reachability.failed(exc.message)
                raise
            except Exception:
                self._metrics.wlm_errors.inc(method=method)
                self.reachability.ok()
                raise
        self.reachability.ok()
        return result

    async def info(self) -> WorkloadInfo:
        return await self._call("info", self._inner.info())

    async def partitions(self) -> list[str]:
        return await self._call("partitions", self._inner.partitions())

    async def resources(self, partition: str) -> PartitionResources:
        return await self._call("resources", self._inner.resources(partition))

    async def submit(self, spec: JobSpec) -> JobId:
        return await self._call("submit", self._inner.submit(spec))

    async def submit_container(self, spec: ContainerJobSpec) -> JobId:
        return await self._call("submit_container", self._inner.submit_container(spec))

    async def find(self, idempotency_key: str) -> JobState | None:
        return await self._call("find", self._inner.find(idempotency_key))

    async def states(self, job_ids: Sequence[JobId]) -> Mapping[JobId, JobState]:
        return await self._call("states", self._inner.states(job_ids))

    async def usage(self, job_ids: Sequence[JobId], *, budget: float | None = None) -> UsageSample:
        return await self._call("usage", self._inner.usage(job_ids, budget=budget))

    async def cancel(self, job_id: JobId) -> None:
        await self._call("cancel", self._inner.cancel(job_id))

    def exec(self, spec: ExecSpec, events: AsyncIterator[ExecEvent]) -> AsyncIterator[ExecOutput]:
        return self._stream("exec", self._inner.exec(spec, events))

    def open_file(self, path: str) -> AsyncIterator[bytes]:
        return self._stream("open_file", self._inner.open_file(path))

    def tail_file(self, path: str) -> AsyncIterator[bytes]:
        return self._stream("tail_file", self._inner.tail_file(path))

    async def stage_in(self, directory: str, tar_stream: AsyncIterable[bytes]) -> tuple[int, int]:
        return await self._call("stage_in", self._inner.stage_in(directory, tar_stream))

    def stage_out(self, path: str) -> AsyncIterator[bytes]:
        return self._stream("stage_out", self._inner.stage_out(path))

    async def _stream(self, method: str, stream: AsyncIterator[T]) -> AsyncIterator[T]:
        try:
            async for chunk in stream:
                self.reachability.ok()
                yield chunk
        except Unavailable as exc:
            self._metrics.wlm_errors.inc(method=method)
            self.reachability.failed(exc.message)
            raise
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
