"""``RedBoxClient``: the ``core.backend.Backend`` Protocol over red-box's gRPC API.

Contracts:

- Errors are ``core.errors``: ``Unavailable`` when red-box cannot be reached
  (no socket file, connection refused, dropped connection, deadline, status
  UNAVAILABLE), ``NotFound``, ``InvalidInput``, ``FailedPrecondition``, and
  ``Unsupported`` when the server lacks an optional rpc.
- Reconnection is transparent: a red-box restart or a socket file that
  vanishes and comes back costs no more than the calls made while it was
  gone. Read-only calls (and submissions carrying an idempotency key) are
  retried once on a fresh connection when the old one turns out dead.
- An original red-box (no wlmvk additions; detected from WorkloadInfo's
  ``extensions`` or an UNIMPLEMENTED answer) is served by fallbacks:
  ``states()`` makes one JobInfo call per job; ``find()`` raises
  ``Unsupported``; ``stage_in``/``stage_out`` go through the dptech fork's
  CreateFile+Unzip / Zip+OpenFile (leaving the zip file on the Slurm side)
  and raise ``Unsupported`` when those are missing too.
- Submissions made while others are on their way go together as one
  SubmitJobs (``redboxclient.batching``), each answered as its own SubmitJob.
- ``fence_with``: each call is checked and carries the holder's token just
  before it is sent (``redboxclient.fencing``); red-box's refusal is ``Unavailable``.
- ``timeout`` bounds every unary call; streams (exec, open_file, tail_file,
  stage_in, stage_out) have no deadline: the caller stops them by closing
  the iterator (``aclose()``) or cancelling its task.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import tempfile
import uuid
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Mapping,
    Sequence,
)
from dataclasses import replace
from datetime import timedelta
from typing import TypeVar

import structlog
from grpclib import GRPCError
from grpclib.client import Channel
from grpclib.const import Cardinality
from h2.exceptions import StreamClosedError

from wlmvk._proto import api
from wlmvk.core.errors import InvalidInput, NotFound, Unsupported, WlmvkError
from wlmvk.core.execs import ExecEvent, ExecOutput, ExecSpec, Exited
from wlmvk.core.jobs import (
    ContainerJobSpec,
    JobId,
    JobSpec,
    JobState,
    JobStatus,
    PartitionResources,
    WorkloadInfo,
)
from wlmvk.core.usage import UsageSample
from wlmvk.redboxclient import batching, failures, feeding, fencing, zipbridge
from wlmvk.redboxclient.observing import Observing
from wlmvk.slurm.tenantstatus import Associations
from wlmvk.wire import associations, batches, codec, submits, uploads
from wlmvk.wire import execs as sessions
from wlmvk.wire import usage as usage_codec
from wlmvk.wire.states import RawStates, StatesDecoder

_log = structlog.get_logger(__name__)

T = TypeVar("T")
SERVICE = "/api.WorkloadManager/"
CHUNK = 256 * 1024
FALLBACK_CONCURRENCY = 16


class RedBoxClient(Observing):
    """A red-box client over a Unix socket; one per red-box, shared by all tasks.

    ``RedBoxClient("/var/run/syslurm/red-box.sock", timeout=30.0)``, its ``Backend`` calls, ``close()``.
    """

    def __init__(self, socket_path: str, *, timeout: float = 30.0) -> None:
        self.socket_path = socket_path
        self.timeout = timeout
        self._channel: Channel | None = None
        self._stub_cache: api.WorkloadManagerStub | None = None
        self._extensions: frozenset[str] | None = None
        self._states = StatesDecoder()
        self._batcher = batching.Batcher(self._submit_many)
        self._fence: fencing.Fencing | None = None

    def fence_with(self, fence: fencing.Fencing) -> None:
        """From now on, every call is sent only after ``fence`` is asked (see the contracts above)."""
        self._fence = fence
        self._reset()  # the next channel carries the listener

    async def close(self) -> None:
        await self._batcher.close()
        self._reset()

    async def __aenter__(self) -> RedBoxClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- plumbing ---

    def _stub(self) -> api.WorkloadManagerStub:
        if self._stub_cache is None:
            self._channel = Channel(path=self.socket_path)
            fencing.guard(self._channel, self._fence)
            self._stub_cache = api.WorkloadManagerStub(self._channel)
        return self._stub_cache

    def _reset(self) -> None:
        if self._channel is not None:
            self._channel.close()
        self._channel = None
        self._stub_cache = None
        self._extensions = None

    async def _call(
        self, rpc: str, call: Callable[[api.WorkloadManagerStub], Awaitable[T]], *, retry: bool = True
    ) -> T:
        """One unary call with the deadline, error mapping, and one retry on a dead connection."""
        attempts = 2 if retry else 1
        for attempt in range(attempts):
            try:
                # asyncio.timeout, not wait_for: no task of its own per call (half the overhead).
                async with asyncio.timeout(self.timeout):
                    return await call(self._stub())
            except GRPCError as exc:
                await fencing.told(self._fence, exc)
                raise failures.from_grpc(exc, rpc) from exc
            except failures.CALL_ERRORS as exc:
                if isinstance(exc, AttributeError) and not failures.dead_connection(exc):
                    raise
                self._reset()
                dead_connection = not isinstance(
                    exc, FileNotFoundError | ConnectionRefusedError | TimeoutError
                )
                if attempt + 1 < attempts and dead_connection:
                    _log.debug("red-box connection lost; retrying on a new one", rpc=rpc, error=repr(exc))
                    continue
                raise failures.from_connection(exc, rpc, self.socket_path) from exc
        raise AssertionError("unreachable")

    async def _stream(self, rpc: str, source: AsyncGenerator[T, None]) -> AsyncIterator[T]:
        """Pass a response stream through, mapping its failures."""
        try:
            async with contextlib.aclosing(source):
                async for item in source:
                    yield item
        except GRPCError as exc:
            raise failures.from_grpc(exc, rpc) from exc
        except failures.CALL_ERRORS as exc:
            if isinstance(exc, AttributeError) and not failures.dead_connection(exc):
                raise
            self._reset()
            raise failures.from_connection(exc, rpc, self.socket_path) from exc

    async def _has(self, extension: str) -> bool:
        if self._extensions is None:
            info = await self.info()
            self._extensions = frozenset(info.extensions)
        return extension in self._extensions

    def _lacks(self, extension: str) -> None:
        if self._extensions is not None:
            self._extensions = self._extensions - {extension}

    # --- the cluster ---

    async def info(self) -> WorkloadInfo:
        wire = await self._call("WorkloadInfo", lambda s: s.workload_info(api.WorkloadInfoRequest()))
        info = codec.info_from_wire(wire)
        self._extensions = frozenset(info.extensions)
        return info

    async def partitions(self) -> list[str]:
        wire = await self._call("Partitions", lambda s: s.partitions(api.PartitionsRequest()))
        return list(wire.partition)

    async def resources(self, partition: str) -> PartitionResources:
        wire = await self._call("Resources", lambda s: s.resources(api.ResourcesRequest(partition=partition)))
        return codec.resources_from_wire(partition, wire)

    # --- jobs ---

    async def submit(self, spec: JobSpec) -> JobId:
        if await self._has("SubmitJobs"):
            return await self._batcher.call(spec)  # with the others asked meanwhile (redboxclient.batching)
        return await self._submit_one(spec)

    async def _submit_many(self, specs: list[JobSpec]) -> list[JobId | WlmvkError]:
        def call(request: batches.SubmitJobsRequest) -> Awaitable[batches.SubmitJobsReply]:
            ask = functools.partial(batches.ask, request)  # retried only when every job has its key
            return self._call("SubmitJobs", ask, retry=all(spec.idempotency_key for spec in specs))

        return await batching.submit_together(specs, call=call, one=self._submit_one, lacks=self._lacks)

    async def _submit_one(self, spec: JobSpec) -> JobId:
        # Written and read as bytes (wire.submits): the same bytes as the messages, a third of the CPU.
        request = submits.SubmitRequest(spec)
        reply: submits.SubmitReply = await self._call(
            "SubmitJob",
            lambda s: s._unary_unary(submits.SUBMIT_JOB, request, submits.SubmitReply),
            retry=bool(spec.idempotency_key),
        )
        return reply.job_id

    async def submit_container(self, spec: ContainerJobSpec) -> JobId:
        request = codec.container_spec_to_wire(spec)
        wire = await self._call(
            "SubmitJobContainer", lambda s: s.submit_job_container(request), retry=bool(spec.idempotency_key)
        )
        return JobId(wire.job_id)

    async def find(self, idempotency_key: str) -> JobState | None:
        if not await self._has("FindJob"):
            raise Unsupported("FindJob: this red-box cannot look jobs up by idempotency key")
        request = api.FindJobRequest(idempotency_key=idempotency_key)
        try:
            wire = await self._call("FindJob", lambda s: s.find_job(request))
        except Unsupported:
            self._lacks("FindJob")
            raise
        if not wire.found:
            return None
        state = codec.state_from_wire(wire.state)
        return state if state.job_id else JobState(job_id=JobId(wire.job_id), status=state.status)

    async def states(self, job_ids: Sequence[JobId]) -> Mapping[JobId, JobState]:
        wanted = list(dict.fromkeys(job_ids))
        if not wanted:
            return {}
        if await self._has("JobStates"):
            request = api.JobStatesRequest(job_ids=wanted)
            try:
                # Taken as bytes: only the states that changed since the last answer are decoded.
                raw = await self._call(
                    "JobStates", lambda s: s._unary_unary(SERVICE + "JobStates", request, RawStates)
                )
                return {s.job_id: s for s in self._states.decode(raw.data)}
            except Unsupported:
                self._lacks("JobStates")
        return await self._states_one_by_one(wanted)

    async def usage(self, job_ids: Sequence[JobId], *, budget: float | None = None) -> UsageSample:
        """CPU time and memory of the running ones of these jobs, in one call, within ``budget`` s.

        Raises Unsupported on a red-box without JobUsage: the original has no
        equivalent (its JobSteps has no usage), so there is no fallback.
        """
        wanted = list(dict.fromkeys(job_ids))
        if not wanted:
            return UsageSample({})
        if not await self._has("JobUsage"):
            raise Unsupported("JobUsage: this red-box does not report the usage of running jobs")
        request = api.JobUsageRequest(job_ids=wanted)
        if budget is not None:
            request.budget = timedelta(seconds=budget)
        try:
            wire = await self._call("JobUsage", lambda s: s.job_usage(request))
        except Unsupported:
            self._lacks("JobUsage")
            raise
        return usage_codec.sample_from_wire(wire)

    async def associations(self, user: str) -> Associations:
        """``user``'s Slurm associations, asked of its own red-box; Unsupported from an original one."""
        if not await self._has("Associations"):
            raise Unsupported("Associations: this red-box does not answer what Slurm knows of its user")
        wire = await self._call("Associations", lambda s: s.associations(api.AssociationsRequest(user=user)))
        return associations.from_wire(wire)

    async def _states_one_by_one(self, job_ids: Sequence[JobId]) -> dict[JobId, JobState]:
        """The fallback for an original red-box: JobInfo per job, a few at a time."""
        limit = asyncio.Semaphore(FALLBACK_CONCURRENCY)

        async def one(job_id: JobId) -> JobState:
            async with limit:
                try:
                    wire = await self._call(
                        "JobInfo", lambda s: s.job_info(api.JobInfoRequest(job_id=job_id))
                    )
                except NotFound as exc:
                    return JobState(job_id=job_id, status=JobStatus.NOT_FOUND, reason=exc.message)
            if not wire.info:
                return JobState(job_id=job_id, status=JobStatus.NOT_FOUND)
            state = codec.state_from_job_info(wire.info[0])
            return state if state.job_id == job_id else replace(state, job_id=job_id)

        results = await asyncio.gather(*(one(j) for j in job_ids))
        return dict(zip(job_ids, results, strict=True))

    async def cancel(self, job_id: JobId) -> None:
        await self._call("CancelJob", lambda s: s.cancel_job(api.CancelJobRequest(job_id=job_id)))

    # --- exec ---

    def exec(self, spec: ExecSpec, events: AsyncIterator[ExecEvent]) -> AsyncIterator[ExecOutput]:
        return self._exec(spec, events)

    async def _exec(self, spec: ExecSpec, events: AsyncIterator[ExecEvent]) -> AsyncIterator[ExecOutput]:
        if not await self._has("Exec"):
            raise Unsupported(
                "Exec: this red-box cannot run a command in a running job (an original red-box)"
            )
        channel = self._stub().channel
        sender: asyncio.Task[None] | None = None
        try:
            async with channel.request(
                SERVICE + "Exec", Cardinality.STREAM_STREAM, api.ExecRequest, api.ExecResponse
            ) as stream:
                await stream.send_message(sessions.spec_to_wire(spec))
                ended = asyncio.Event()
                sender = asyncio.create_task(feeding.send_events(stream, events, ended))
                async for response in stream:
                    outputs = sessions.outputs_from_wire(response)
                    for output in outputs:
                        yield output
                    if any(isinstance(output, Exited) for output in outputs) and not ended.is_set():
                        # The last message: the input has no reader any more; ending it lets
                        # the call read red-box's final status.
                        await feeding.stop(sender)
                        if not ended.is_set():
                            await stream.end()
        except GRPCError as exc:
            error = failures.from_grpc(exc, "Exec")
            if isinstance(error, Unsupported):
                self._lacks("Exec")
            raise error from exc
        except failures.CONNECTION_ERRORS as exc:
            self._reset()
            raise failures.from_connection(exc, "Exec", self.socket_path) from exc
        finally:
            if sender is not None:
                await feeding.stop(sender)

    # --- files ---

    def open_file(self, path: str) -> AsyncIterator[bytes]:
        return self._open_file(path)

    async def _open_file(self, path: str) -> AsyncIterator[bytes]:
        chunks = self._stub().open_file(api.OpenFileRequest(path=path))
        async for chunk in self._stream("OpenFile", chunks):
            yield chunk.content

    def tail_file(self, path: str) -> AsyncIterator[bytes]:
        return self._tail_file(path)

    async def _tail_file(self, path: str) -> AsyncIterator[bytes]:
        channel = self._stub().channel
        try:
            async with channel.request(
                SERVICE + "TailFile", Cardinality.STREAM_STREAM, api.TailFileRequest, api.Chunk
            ) as stream:
                await stream.send_message(api.TailFileRequest(action=api.TailAction.Start, path=path))
                async for chunk in stream:
                    if chunk.content:
                        yield chunk.content
        except GRPCError as exc:
            raise failures.from_grpc(exc, "TailFile") from exc
        except failures.CONNECTION_ERRORS as exc:
            self._reset()
            raise failures.from_connection(exc, "TailFile", self.socket_path) from exc

    async def stage_in(self, directory: str, tar_stream: AsyncIterable[bytes]) -> tuple[int, int]:
        if await self._has("StageIn"):
            return await self._stage_in(directory, tar_stream)
        return await self._stage_in_by_zip(directory, tar_stream)

    async def _stage_in(self, directory: str, tar_stream: AsyncIterable[bytes]) -> tuple[int, int]:
        channel = self._stub().channel
        try:
            async with channel.request(
                SERVICE + "StageIn", Cardinality.STREAM_UNARY, api.StageInRequest, api.StageInResponse
            ) as stream:
                try:
                    await stream.send_message(api.StageInRequest(path=directory))
                    async for data in tar_stream:
                        if data:
                            await stream.send_message(api.StageInRequest(data=data))
                    await stream.end()
                except StreamClosedError:
                    # red-box answered before reading the whole stream (a refused path):
                    # its status, read next, says why.
                    pass
                reply = await stream.recv_message()
        except GRPCError as exc:
            raise failures.from_grpc(exc, "StageIn") from exc
        except failures.CONNECTION_ERRORS as exc:
            self._reset()
            raise failures.from_connection(exc, "StageIn", self.socket_path) from exc
        assert reply is not None
        return reply.files, reply.bytes

    async def _stage_in_by_zip(self, directory: str, tar_stream: AsyncIterable[bytes]) -> tuple[int, int]:
        """Original (dptech) red-box: tar -> zip here, CreateFile + Unzip there."""
        with tempfile.TemporaryFile() as tar_file, tempfile.TemporaryFile() as zip_file:
            async for data in tar_stream:
                tar_file.write(data)
            tar_file.seek(0)
            try:
                counts = await asyncio.to_thread(zipbridge.tar_to_zip, tar_file, zip_file)
            except (ValueError, OSError) as exc:
                raise InvalidInput(f"stage-in: {exc}") from exc
            zip_file.seek(0)
            remote = f"{directory.rstrip('/') or '.'}/.wlmvk-stage-in-{uuid.uuid4().hex}.zip"
            messages = uploads.create_file_messages(remote, zip_file, CHUNK)
            await self._call("CreateFile", lambda s: s.create_file(messages), retry=False)
            await self._call("Unzip", lambda s: s.unzip(api.UnzipRequest(source=remote, path=directory)))
            return counts

    def stage_out(self, path: str) -> AsyncIterator[bytes]:
        return self._stage_out(path)

    async def _stage_out(self, path: str) -> AsyncIterator[bytes]:
        if await self._has("StageOut"):
            chunks = self._stub().stage_out(api.StageOutRequest(path=path))
            async for chunk in self._stream("StageOut", chunks):
                yield chunk.content
            return
        async for data in self._stage_out_by_zip(path):
            yield data

    async def _stage_out_by_zip(self, path: str) -> AsyncIterator[bytes]:
        """Original (dptech) red-box: Zip + OpenFile there, zip -> tar here."""
        remote = f"{path.rstrip('/')}.wlmvk-{uuid.uuid4().hex}.zip"
        await self._call("Zip", lambda s: s.zip(api.ZipRequest(path=path, target=remote)))
        with tempfile.TemporaryFile() as zip_file, tempfile.TemporaryFile() as tar_file:
            async for data in self._open_file(remote):
                zip_file.write(data)
            zip_file.seek(0)
            await asyncio.to_thread(zipbridge.zip_to_tar, zip_file, tar_file)
            tar_file.seek(0)
            while data := tar_file.read(CHUNK):
                yield data
