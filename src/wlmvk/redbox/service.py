"""The WorkloadManager gRPC service: wire messages in, core values to the workers, wire out.

Each rpc is thin: it converts the request (``wire.codec``), calls ``Jobs``,
``Slurm``, ``Partitions``, ``Confinement`` or ``archives``, and converts the
answer (``jobinfo`` for JobInfo). The original rpcs keep the original
semantics for old clients; the wlmvk additions are separate methods. The
``Dialect`` (``dialects``) says what is served: ``ORIGINAL`` serves only
what the original red-box served, and the kubelet's fallbacks are tested
against it. Request messages are checked before an rpc sees them
(``checking``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import structlog
from grpclib import GRPCError
from grpclib.const import Handler, Status

from wlmvk._proto import api
from wlmvk.core import runtimes, tarstreams
from wlmvk.core.errors import FailedPrecondition, InvalidInput, NotFound, WlmvkError
from wlmvk.core.execs import Started
from wlmvk.core.jobs import JobId, JobSpec, JobStatus, PartitionResources
from wlmvk.redbox import archives, files, jobinfo, scripts
from wlmvk.redbox.answering import Inflight, answering, streaming, unary
from wlmvk.redbox.checking import checked
from wlmvk.redbox.config import PartitionOverride
from wlmvk.redbox.dialects import WLMVK, Dialect
from wlmvk.redbox.execstarts import ExecStarts
from wlmvk.redbox.fencing import Fences, fenced
from wlmvk.redbox.jobs import Jobs
from wlmvk.redbox.observing import Observing
from wlmvk.redbox.partitions import Partitions
from wlmvk.redbox.slurm.cli.commands import Slurm
from wlmvk.redbox.slurm.cli.users import user_name
from wlmvk.redbox.slurm.processes.executing import Execution
from wlmvk.wire import associations, batches, codec, submits
from wlmvk.wire import execs as sessions
from wlmvk.wire import usage as usage_codec
from wlmvk.wire.states import EncodedStates, StatesEncoder

_log = structlog.get_logger(__name__)

MAX_BATCH = 256
"""The most jobs one SubmitJobs may carry (the kubelet sends a few tens at most)."""

FIND_INDEX_AGE = 2.0
"""FindJob trusts an index of Slurm's keys this young: a burst of lookups shares one scan."""


def container_runtime(setting: str = runtimes.AUTO) -> str:
    """The runtime ``setting`` picks now ("" when none): installing one later needs no restart."""
    return runtimes.choose(setting, lambda name: shutil.which(name) is not None)


class Service(Observing, api.WorkloadManagerBase):  # type: ignore[misc]
    """red-box's service, original rpcs and wlmvk additions, as its ``dialect`` serves them."""

    def __init__(
        self,
        *,
        slurm: Slurm,
        jobs: Jobs,
        confinement: files.Confinement,
        overrides: Mapping[str, PartitionOverride],
        container_runtime: str = runtimes.AUTO,
        image_dir: str = "",
        dialect: Dialect = WLMVK,
    ) -> None:
        self.slurm = slurm
        self.runtime_setting = container_runtime
        self.image_dir = image_dir
        self.jobs = jobs
        self.confinement = confinement
        self.dialect = dialect
        self._partitions = Partitions(
            slurm=slurm,
            overrides=overrides,
            mem_per_node=dialect.mem_per_node,
            sif_runtime=self._sif_runtime,
            image_dir=image_dir,
            sif_images=self._sif_images,
        )
        self._version = ""
        self._cluster = ""
        self._states = StatesEncoder()
        self.inflight = Inflight()
        self.fences = Fences(jobs.store)
        self.exec_starts = ExecStarts(state_of=jobs.state)

    def _sif_runtime(self) -> bool:
        """Whether a plain pod's image can run here: Apptainer/Singularity only (core.runtimes.pod_lines)."""
        return container_runtime(self.runtime_setting) in runtimes.SIF_RUNTIMES

    def _sif_images(self) -> tuple[str, ...]:
        """The SIF files of ``--image-dir`` now, by name (none when it is unset or unreadable)."""
        if not self.image_dir:
            return ()
        try:
            return tuple(
                sorted(p.name for p in Path(self.image_dir).iterdir() if p.suffix == ".sif" and p.is_file())
            )
        except OSError:
            return ()

    def __mapping__(self) -> dict[str, Handler]:
        """The generated handlers, their requests checked; an rpc the dialect leaves out UNIMPLEMENTED.

        SubmitJob's and SubmitJobs' requests and answers are read and written by ``wire.submits``
        and ``wire.batches``, not as messages. A call bringing a fencing token runs only if the
        token is not stale (``fencing``, which reads a unary request's message, checked, first).
        """
        return {
            path: _unimplemented(handler)
            if path.rsplit("/", 1)[-1] in self.dialect.unserved
            else checked(fenced(handler, self.fences, rpc=path.rsplit("/", 1)[-1]))
            for path, handler in batches.handlers(submits.handlers(super().__mapping__())).items()
        }

    # --- submitting ---

    @unary("SubmitJob", bind=lambda r: {"partition": r.spec.partition})
    async def submit_job(self, submit_job_request: submits.SubmitRequest) -> submits.SubmitReply:
        return submits.SubmitReply(await self.jobs.submit(self.dialect.spec(submit_job_request.spec)))

    @unary("SubmitJobs", bind=lambda r: {"jobs": len(r.specs)})
    async def submit_jobs(self, submit_jobs_request: batches.SubmitJobsRequest) -> batches.SubmitJobsReply:
        """Each job as SubmitJob takes it, side by side; each answered on its own, in order."""
        specs = submit_jobs_request.specs
        if len(specs) > MAX_BATCH:
            raise InvalidInput(f"{len(specs)} jobs in one SubmitJobs; at most {MAX_BATCH}")
        outcomes = await asyncio.gather(*(self._submit_one(spec) for spec in specs))
        await self.jobs.store.durable()  # every job's key and id on the disk, one fsync for them all
        return batches.SubmitJobsReply(outcomes)

    async def _submit_one(self, spec: JobSpec) -> batches.Outcome:
        """One job as SubmitJob answers it: its failure, mapped and logged by ``answering`` as
        SubmitJob's is, is this job's answer alone; the others keep theirs. Its key and id reach
        the disk with the others' (``submit_jobs``), before the call is answered."""
        try:
            with answering("SubmitJob", partition=spec.partition):
                return batches.Outcome(job_id=await self.jobs.submit(self.dialect.spec(spec), durable=False))
        except GRPCError as refused:
            return batches.Outcome(status=refused.status.value, message=refused.message or "")

    @unary("SubmitJobContainer", bind=lambda r: {"partition": r.partition})
    async def submit_job_container(
        self, submit_job_container_request: api.SubmitJobContainerRequest
    ) -> api.SubmitJobContainerResponse:
        spec = codec.container_spec_from_wire(submit_job_container_request)
        if not spec.image:
            raise InvalidInput("imageName is required")
        runtime = container_runtime(self.runtime_setting)
        if not runtime:
            raise FailedPrecondition(runtimes.missing(self.runtime_setting))
        script = scripts.container_script(
            spec, runtime, pull_name=f"wlmvk-{uuid.uuid4().hex}.sif", binary=shutil.which(runtime) or ""
        )
        job = JobSpec(
            script=script,
            partition=spec.partition,
            idempotency_key=spec.idempotency_key,
            name=spec.name,
            working_dir=spec.working_dir,
            std_out=spec.std_out,
            std_err=spec.std_err,
            env=spec.env,
        )
        job_id = await self.jobs.submit(self.dialect.spec(job))
        return api.SubmitJobContainerResponse(job_id=job_id)

    @unary("CancelJob", bind=lambda r: {"job_id": r.job_id})
    async def cancel_job(self, cancel_job_request: api.CancelJobRequest) -> api.CancelJobResponse:
        await self.jobs.cancel(JobId(cancel_job_request.job_id))
        return api.CancelJobResponse()

    # --- job information ---

    @unary("JobInfo", bind=lambda r: {"job_id": r.job_id})
    async def job_info(self, job_info_request: api.JobInfoRequest) -> api.JobInfoResponse:
        job_id = JobId(job_info_request.job_id)
        try:
            records = await self.slurm.show_job(job_id)
        except NotFound as gone:
            return api.JobInfoResponse(info=[await self._job_left(job_id, gone)])
        if not records:
            raise NotFound(f"job {job_id}: scontrol knows no such job")
        return api.JobInfoResponse(info=[jobinfo.from_record(r, self.dialect) for r in records])

    async def _job_left(self, job_id: JobId, gone: NotFound) -> api.JobInfo:
        """A job scontrol no longer shows: what red-box's record and accounting know of it."""
        if not self.dialect.additions:
            raise gone
        state = await self.jobs.state(job_id)
        if state.status is JobStatus.NOT_FOUND:
            raise NotFound(f"job {job_id}: {state.reason}") from None
        return jobinfo.from_state(state)

    @unary("JobSteps", bind=lambda r: {"job_id": r.job_id})
    async def job_steps(self, job_steps_request: api.JobStepsRequest) -> api.JobStepsResponse:
        steps = await self.slurm.steps(JobId(job_steps_request.job_id))
        if steps is None:
            raise FailedPrecondition("Slurm accounting is disabled: there is no record of job steps")
        return api.JobStepsResponse(
            job_steps=[
                api.JobStepInfo(
                    id=s.id,
                    name=s.name,
                    exit_code=s.exit_code,
                    status=self.dialect.status(codec.status_to_wire(s.status)),
                    start_time=s.start_time,
                    end_time=s.end_time,
                )
                for s in steps
            ]
        )

    @unary("JobStates")
    async def job_states(self, job_states_request: api.JobStatesRequest) -> api.JobStatesResponse:
        ids = [JobId(i) for i in job_states_request.job_ids]
        states = await self.jobs.states(ids)
        return EncodedStates(self._states.encode(states[i] for i in dict.fromkeys(ids)))

    @unary("FindJob")
    async def find_job(self, find_job_request: api.FindJobRequest) -> api.FindJobResponse:
        if not find_job_request.idempotency_key:
            raise InvalidInput("idempotency_key is required")
        state = await self.jobs.find(find_job_request.idempotency_key, max_age=FIND_INDEX_AGE)
        if state is None:
            return api.FindJobResponse(found=False)
        return api.FindJobResponse(found=True, job_id=state.job_id, state=codec.state_to_wire(state))

    @unary("JobUsage")
    async def job_usage(self, job_usage_request: api.JobUsageRequest) -> api.JobUsageResponse:
        budget = job_usage_request.budget.total_seconds() if job_usage_request.budget else 0.0
        if budget < 0:
            raise InvalidInput(f"budget must not be negative, not {budget:g} s")
        job_ids = list(dict.fromkeys(JobId(i) for i in job_usage_request.job_ids))
        sample = await self.slurm.usage(job_ids, budget=budget or None)
        return usage_codec.sample_to_wire(sample)

    @unary("Associations")
    async def associations(self, associations_request: api.AssociationsRequest) -> api.AssociationsResponse:
        own = user_name(self.slurm.user)
        if associations_request.user not in ("", own):
            raise InvalidInput(
                f"red-box answers about its own user {own} only, not {associations_request.user}"
            )
        return associations.to_wire(await self.slurm.associations(await self._cluster_name()))

    # --- exec ---

    @streaming("Exec")
    async def exec(
        self, exec_request_iterator: AsyncIterator[api.ExecRequest]
    ) -> AsyncIterator[api.ExecResponse]:
        first = await anext(exec_request_iterator, None)
        if first is None:
            return
        spec = sessions.spec_from_wire(first)
        _log.debug("exec asked", job_id=spec.job_id)
        env = scripts.environment(self.jobs.base_env, spec.env)
        execution, checked = await self.exec_starts.start(spec, env)
        _log.info("exec", job_id=spec.job_id, argv=execution.argv)
        feeder: asyncio.Task[None] | None = None
        try:
            feeder = asyncio.create_task(_feed(exec_request_iterator, execution))
            yield sessions.output_to_wire(Started())
            await checked  # no output before the job is known to run (execstarts)
            async for output in execution.outputs():
                yield sessions.output_to_wire(output)
        finally:
            checked.cancel()
            if feeder is not None:
                feeder.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await feeder
            stopping = time.monotonic()
            ending = await execution.stop()
            stopped_ms = round((time.monotonic() - stopping) * 1000)
            step = None
            if ending == "killed":
                try:
                    step = await self.slurm.cancel_step(spec.job_id, execution.name)
                except WlmvkError as exc:
                    _log.warning(
                        "exec: its step could not be cancelled", job_id=spec.job_id, error=exc.message
                    )
            _log.info("exec ended", job_id=spec.job_id, srun=ending, stop_ms=stopped_ms, step_cancelled=step)

    # --- files ---

    @streaming("OpenFile", files=True)
    async def open_file(self, open_file_request: api.OpenFileRequest) -> AsyncIterator[api.Chunk]:
        path = self.confinement.existing_file(open_file_request.path)
        async for data in files.read_chunks(path):
            yield api.Chunk(content=data)

    @streaming("TailFile", files=True)
    async def tail_file(
        self, tail_file_request_iterator: AsyncIterator[api.TailFileRequest]
    ) -> AsyncIterator[api.Chunk]:
        first = await anext(tail_file_request_iterator, None)
        if first is None:
            return
        path = self.confinement.resolve(first.path)
        if path.is_dir():
            raise InvalidInput(f"{first.path}: is a directory")
        files.refuse_special(path, first.path)
        stop = asyncio.Event()
        if first.action == api.TailAction.ReadToEndAndClose:
            stop.set()
        listener = asyncio.create_task(_wait_for_close(tail_file_request_iterator, stop))
        try:
            async for data in files.follow(path, stop):
                yield api.Chunk(content=data)
        finally:
            listener.cancel()

    @unary("CreateFile", files=True)
    async def create_file(
        self, create_file_request_iterator: AsyncIterator[api.CreateFileRequest]
    ) -> api.CreateFileResponse:
        first = await anext(create_file_request_iterator, None)
        if first is None:
            raise InvalidInput("CreateFile: the first message must name the path")
        path = self.confinement.resolve(first.path)
        self.confinement.directory(str(path.parent), create=True)
        with os.fdopen(files.open_for_writing(path), "wb") as out:
            if first.content:
                out.write(first.content)
            async for message in create_file_request_iterator:
                out.write(message.content)
        return api.CreateFileResponse()

    @unary("Zip", files=True)
    async def zip(self, zip_request: api.ZipRequest) -> api.ZipResponse:
        source = self.confinement.resolve(zip_request.path)
        target = self.confinement.resolve(zip_request.target or f"{zip_request.path}.zip")
        files.refuse_special(source, zip_request.path)
        files.refuse_special(target, zip_request.target)
        await tarstreams.in_thread(lambda stop: archives.zip_path(source, target, stop))
        return api.ZipResponse()

    @unary("Unzip", files=True)
    async def unzip(self, unzip_request: api.UnzipRequest) -> api.UnzipResponse:
        source = self.confinement.resolve(unzip_request.source)
        files.refuse_special(source, unzip_request.source)
        dest = self.confinement.directory(unzip_request.path or ".", create=True)
        await tarstreams.in_thread(lambda stop: archives.unzip_into(source, dest, stop))
        return api.UnzipResponse()

    @unary("StageIn", files=True)
    async def stage_in(
        self, stage_in_request_iterator: AsyncIterator[api.StageInRequest]
    ) -> api.StageInResponse:
        first = await anext(stage_in_request_iterator, None)
        if first is None or not first.path:
            raise InvalidInput("StageIn: the first message must name the target directory")
        dest = self.confinement.directory(first.path, create=True)

        async def chunks() -> AsyncIterator[bytes]:
            if first.data:
                yield first.data
            async for message in stage_in_request_iterator:
                yield message.data

        count, size = await archives.receive_tar(chunks(), dest)
        _log.info("staged in", path=str(dest), files=count, bytes=size)
        return api.StageInResponse(files=count, bytes=size)

    @streaming("StageOut", files=True)
    async def stage_out(self, stage_out_request: api.StageOutRequest) -> AsyncIterator[api.Chunk]:
        given = stage_out_request.path.rstrip("/")
        path = self.confinement.resolve(given)
        if not path.exists():
            raise NotFound(f"{given}: no such file or directory")
        files.refuse_special(path, given)
        arcname = Path(given).name or path.name
        # Closed here, not when collected: its finally stops the packing thread.
        async with contextlib.aclosing(archives.send_tar(path, arcname)) as chunks:
            async for data in chunks:
                yield api.Chunk(content=data)

    # --- the cluster ---

    @unary("Resources", bind=lambda r: {"partition": r.partition})
    async def resources(self, resources_request: api.ResourcesRequest) -> api.ResourcesResponse:
        return self.dialect.resources(
            codec.resources_to_wire(await self.partition_resources(resources_request.partition))
        )

    async def partition_resources(self, name: str) -> PartitionResources:
        """The resources of partition ``name`` ("" = Slurm's default), overrides applied."""
        return await self._partitions.resources(name)

    @unary("Partitions")
    async def partitions(self, partitions_request: api.PartitionsRequest) -> api.PartitionsResponse:
        return api.PartitionsResponse(partition=await self.slurm.partition_names())

    @unary("WorkloadInfo")
    async def workload_info(self, workload_info_request: api.WorkloadInfoRequest) -> api.WorkloadInfoResponse:
        if not self._version:
            self._version = await self.slurm.version()
        return api.WorkloadInfoResponse(
            name="slurm",
            version=self._version,
            uid=os.geteuid(),
            cluster_name=await self._cluster_name() if self.dialect.additions else "",
            extensions=list(self.dialect.extensions),
        )

    async def _cluster_name(self) -> str:
        if not self._cluster:
            self._cluster = await self.slurm.cluster_name()
        return self._cluster


def _unimplemented(handler: Handler) -> Handler:
    async def refuse(stream: Any) -> None:
        raise GRPCError(Status.UNIMPLEMENTED)

    return handler._replace(func=refuse)


async def _wait_for_close(requests: AsyncIterator[api.TailFileRequest], stop: asyncio.Event) -> None:
    """Set ``stop`` when the client sends ReadToEndAndClose (a half-close alone keeps tailing)."""
    async for request in requests:
        if request.action == api.TailAction.ReadToEndAndClose:
            stop.set()
            return


async def _feed(requests: AsyncIterator[api.ExecRequest], execution: Execution) -> None:
    """The client's input to the command; a client that stops sending closes nothing by itself."""
    async for request in requests:
        for event in sessions.events_from_wire(request):
            await execution.send(event)
