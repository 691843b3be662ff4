"""An in-memory ``Backend`` for fast tests of the kubelet's control logic.

It behaves like red-box over a tiny Slurm: jobs go PENDING on submit and
the test moves them on (``run``, ``finish``); ``cancel`` ends a job
CANCELLED; files are byte buffers the test appends to. ``down`` makes every
call raise Unavailable; ``original`` makes ``find`` raise Unsupported.
Every call is counted in ``calls``, and every submission that reached the fake,
found again by its key or not, in ``submitted`` (per key): a second submission
of a pod shows there even though the fake answers it with the first job.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterable, AsyncIterator, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime

from wlmvk.core.errors import NotFound, Unavailable, Unsupported
from wlmvk.core.jobs import (
    ContainerJobSpec,
    JobId,
    JobSpec,
    JobState,
    JobStatus,
    PartitionResources,
    WorkloadInfo,
)

PARTITIONS = {
    "debug": PartitionResources("debug", 1, 2, 20000, 600, gpu_per_node=2, default=True),
    "long": PartitionResources("long", 1, 2, 20000, 86400),
}


class FakeBackend:
    def __init__(self) -> None:
        self.partition_table: dict[str, PartitionResources] = dict(PARTITIONS)
        self.jobs: dict[JobId, JobState] = {}
        self.specs: dict[JobId, JobSpec] = {}
        self.files: dict[str, bytearray] = {}
        self.calls: Counter[str] = Counter()
        self.submitted: Counter[str] = Counter()  # raw submissions per idempotency key
        self.down = False
        self.original = False
        self.submit_delay = 0.0
        self.submit_gate: asyncio.Event | None = None  # set: submissions wait until it is set
        self._next = 100

    def _enter(self, name: str) -> None:
        self.calls[name] += 1
        if self.down:
            raise Unavailable("red-box: connection refused")

    # -- test controls ------------------------------------------------------------------------------------

    def run(self, job_id: JobId) -> None:
        self.jobs[job_id] = replace(self.jobs[job_id], status=JobStatus.RUNNING, start_time=datetime.now(UTC))

    def finish(self, job_id: JobId, exit_code: int = 0) -> None:
        status = JobStatus.COMPLETED if exit_code == 0 else JobStatus.FAILED
        self.jobs[job_id] = replace(
            self.jobs[job_id],
            status=status,
            exit_code=exit_code,
            reason="None" if exit_code == 0 else "NonZeroExitCode",
            end_time=datetime.now(UTC),
        )

    def write(self, job_id: JobId, data: bytes) -> None:
        self.files.setdefault(self.jobs[job_id].std_out, bytearray()).extend(data)

    def job_of(self, key: str) -> JobId:
        return next(j for j, s in self.jobs.items() if s.idempotency_key == key)

    # -- Backend ------------------------------------------------------------------------------------------

    async def info(self) -> WorkloadInfo:
        self._enter("info")
        return WorkloadInfo("slurm", "22.05.8", 1001)

    async def partitions(self) -> list[str]:
        self._enter("partitions")
        return list(self.partition_table)

    async def resources(self, partition: str) -> PartitionResources:
        self._enter("resources")
        if partition not in self.partition_table:
            raise NotFound(partition)
        return self.partition_table[partition]

    async def submit(self, spec: JobSpec) -> JobId:
        self._enter("submit")
        if self.submit_delay:
            await asyncio.sleep(self.submit_delay)
        if self.submit_gate is not None:
            await self.submit_gate.wait()
        self.submitted[spec.idempotency_key] += 1
        if spec.idempotency_key and not self.original:
            for job_id, state in self.jobs.items():
                if state.idempotency_key == spec.idempotency_key:
                    return job_id
        self._next += 1
        job_id = JobId(self._next)
        out = f"{spec.working_dir or '/jobs'}/slurm-{job_id}.out"
        self.jobs[job_id] = JobState(
            job_id,
            JobStatus.PENDING,
            reason="Priority",
            submit_time=datetime.now(UTC),
            std_out=out,
            partition=spec.partition,
            name=spec.name,
            idempotency_key=spec.idempotency_key,
        )
        self.specs[job_id] = spec
        self.files[out] = bytearray()
        return job_id

    async def submit_container(self, spec: ContainerJobSpec) -> JobId:
        raise Unsupported("not in the fake")

    async def find(self, idempotency_key: str) -> JobState | None:
        self._enter("find")
        if self.original:
            raise Unsupported("FindJob")
        return next((s for s in self.jobs.values() if s.idempotency_key == idempotency_key), None)

    async def states(self, job_ids: Sequence[JobId]) -> Mapping[JobId, JobState]:
        self._enter("states")
        return {j: self.jobs[j] for j in job_ids if j in self.jobs}

    async def cancel(self, job_id: JobId) -> None:
        self._enter("cancel")
        state = self.jobs.get(job_id)
        if state is None:
            raise NotFound(f"job {job_id}")
        if not state.status.terminal:
            self.jobs[job_id] = replace(
                state, status=JobStatus.CANCELLED, signal=15, end_time=datetime.now(UTC)
            )

    def open_file(self, path: str) -> AsyncIterator[bytes]:
        return self._open(path)

    async def _open(self, path: str) -> AsyncIterator[bytes]:
        self._enter("open_file")
        if path not in self.files:
            raise NotFound(path)
        data = bytes(self.files[path])
        for start in range(0, len(data), 128):
            yield data[start : start + 128]

    def tail_file(self, path: str) -> AsyncIterator[bytes]:
        return self._tail(path)

    async def _tail(self, path: str) -> AsyncIterator[bytes]:
        self._enter("tail_file")
        sent = 0
        while True:
            if self.down:  # red-box went away mid-stream
                raise Unavailable("red-box: connection lost")
            data = self.files.get(path, bytearray())
            if len(data) > sent:
                yield bytes(data[sent:])
                sent = len(data)
            await asyncio.sleep(0.02)

    async def stage_in(self, directory: str, tar_stream: AsyncIterable[bytes]) -> tuple[int, int]:
        raise Unsupported("not in the fake")

    def stage_out(self, path: str) -> AsyncIterator[bytes]:
        raise Unsupported("not in the fake")
