"""core.jobs values <-> the WLM API's wire messages, both directions, pure.

red-box and the client share these functions so that a value survives the
round trip. Wire quirks handled here: proto3 cannot tell an unset
timestamp from the epoch (the epoch reads back as ``None``), job states
share their names with Slurm's, an exit code is only meaningful once the
job has ended, and an UNLIMITED wall time travels as ``wall_time_unlimited``
plus a huge ``wallTime`` (so that an old client still sees jobs fit).
"""

from __future__ import annotations

from datetime import UTC, datetime

from wlmvk._proto import api
from wlmvk.core.jobs import (
    ContainerJobSpec,
    ContainerOptions,
    Feature,
    GpuKind,
    JobId,
    JobState,
    JobStatus,
    PartitionResources,
    WorkloadInfo,
)
from wlmvk.slurm.durations import UNLIMITED_WALL_TIME

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

ORIGINAL_STATUSES = frozenset(
    {
        api.JobStatus.COMPLETED,
        api.JobStatus.CANCELLED,
        api.JobStatus.FAILED,
        api.JobStatus.TIMEOUT,
        api.JobStatus.PENDING,
        api.JobStatus.UNKNOWN,
    }
)


def status_to_wire(status: JobStatus) -> api.JobStatus:
    return api.JobStatus[status.name]


def status_from_wire(status: api.JobStatus | int) -> JobStatus:
    try:
        return JobStatus[api.JobStatus(status).name]
    except (ValueError, KeyError):
        return JobStatus.UNKNOWN


def time_from_wire(value: datetime | None) -> datetime | None:
    if value is None or value == EPOCH:
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def state_to_wire(state: JobState) -> api.JobState:
    return api.JobState(
        job_id=state.job_id,
        status=status_to_wire(state.status),
        reason=state.reason,
        exit_code=state.exit_code or 0,
        signal=state.signal,
        submit_time=state.submit_time,
        start_time=state.start_time,
        end_time=state.end_time,
        std_out=state.std_out,
        std_err=state.std_err,
        working_dir=state.working_dir,
        partition=state.partition,
        node_list=state.node_list,
        name=state.name,
        idempotency_key=state.idempotency_key,
    )


def state_from_wire(wire: api.JobState) -> JobState:
    status = status_from_wire(wire.status)
    return JobState(
        job_id=JobId(wire.job_id),
        status=status,
        reason=wire.reason,
        exit_code=wire.exit_code if status.terminal else None,
        signal=wire.signal,
        submit_time=time_from_wire(wire.submit_time),
        start_time=time_from_wire(wire.start_time),
        end_time=time_from_wire(wire.end_time),
        std_out=wire.std_out,
        std_err=wire.std_err,
        working_dir=wire.working_dir,
        partition=wire.partition,
        node_list=wire.node_list,
        name=wire.name,
        idempotency_key=wire.idempotency_key,
    )


def _exit_code_text(text: str) -> tuple[int | None, int]:
    code, _, signal = text.partition(":")
    try:
        return int(code), int(signal or 0)
    except ValueError:
        return None, 0


def state_from_job_info(info: api.JobInfo) -> JobState:
    """An original JobInfo (as an old red-box sends it) -> JobState."""
    status = status_from_wire(info.status)
    exit_code, signal = _exit_code_text(info.exit_code)
    job_id = info.id.strip()
    return JobState(
        job_id=JobId(int(job_id) if job_id.isdigit() else 0),
        status=status,
        reason=info.reason,
        exit_code=exit_code if status.terminal else None,
        signal=signal if status.terminal else 0,
        submit_time=time_from_wire(info.submit_time),
        start_time=time_from_wire(info.start_time),
        end_time=time_from_wire(info.end_time),
        std_out=info.std_out,
        std_err=info.std_err,
        working_dir=info.working_dir,
        partition=info.partition,
        node_list=info.node_list,
        name=info.name,
        idempotency_key=info.idempotency_key,
    )


def container_spec_to_wire(spec: ContainerJobSpec) -> api.SubmitJobContainerRequest:
    o = spec.options
    return api.SubmitJobContainerRequest(
        image_name=spec.image,
        nodes=spec.nodes,
        cpu_per_node=spec.cpu_per_node,
        mem_per_node=spec.mem_per_node,
        wall_time=spec.wall_time,
        partition=spec.partition,
        options=api.SingularityOptions(
            app=o.app,
            allow_unsigned=o.allow_unsigned,
            binds=list(o.binds),
            clear_env=o.clear_env,
            fake_root=o.fake_root,
            host_name=o.host_name,
            ipc=o.ipc,
            pid=o.pid,
            no_privs=o.no_privs,
            writable=o.writable,
        ),
        idempotency_key=spec.idempotency_key,
        job_name=spec.name,
        working_dir=spec.working_dir,
        std_out=spec.std_out,
        std_err=spec.std_err,
        env=dict(spec.env),
        account=spec.account,
        qos=spec.qos,
    )


def container_spec_from_wire(wire: api.SubmitJobContainerRequest) -> ContainerJobSpec:
    o = wire.options
    return ContainerJobSpec(
        image=wire.image_name,
        partition=wire.partition,
        nodes=wire.nodes,
        cpu_per_node=wire.cpu_per_node,
        mem_per_node=wire.mem_per_node,
        wall_time=wire.wall_time,
        options=ContainerOptions(
            app=o.app,
            allow_unsigned=o.allow_unsigned,
            binds=tuple(o.binds),
            clear_env=o.clear_env,
            fake_root=o.fake_root,
            host_name=o.host_name,
            ipc=o.ipc,
            pid=o.pid,
            no_privs=o.no_privs,
            writable=o.writable,
        ),
        idempotency_key=wire.idempotency_key,
        name=wire.job_name,
        working_dir=wire.working_dir,
        std_out=wire.std_out,
        std_err=wire.std_err,
        env=dict(wire.env),
        account=wire.account,
        qos=wire.qos,
    )


def resources_to_wire(res: PartitionResources) -> api.ResourcesResponse:
    return api.ResourcesResponse(
        nodes=res.nodes,
        cpu_per_node=res.cpu_per_node,
        mem_per_node=res.mem_per_node,
        wall_time=UNLIMITED_WALL_TIME if res.wall_time is None else res.wall_time,
        features=[api.Feature(name=f.name, version=f.version, quantity=f.quantity) for f in res.features],
        gpu_per_node=res.gpu_per_node,
        wall_time_unlimited=res.wall_time is None,
        default_partition=res.default,
        state=res.state,
        container_runtime=res.container_runtime,
        gpu_kinds=[
            api.GpuKind(type=k.kind, per_node=k.per_node, total=k.total, used=k.used) for k in res.gpu_kinds
        ],
        image_dir=res.image_dir,
        images=list(res.images),
    )


def resources_from_wire(name: str, wire: api.ResourcesResponse) -> PartitionResources:
    """An original red-box reports an unlimited partition as wallTime 0: that is 'no limit' too;
    its ``memPerNode -1`` (no MaxMemPerNode) stays negative: no limit known, not zero memory."""
    unlimited = wire.wall_time_unlimited or wire.wall_time <= 0
    return PartitionResources(
        name=name,
        nodes=wire.nodes,
        cpu_per_node=wire.cpu_per_node,
        mem_per_node=-1 if wire.mem_per_node < 0 else wire.mem_per_node,
        wall_time=None if unlimited else wire.wall_time,
        gpu_per_node=wire.gpu_per_node,
        features=tuple(Feature(name=f.name, version=f.version, quantity=f.quantity) for f in wire.features),
        default=wire.default_partition,
        state=wire.state or "UP",
        container_runtime=wire.container_runtime,
        gpu_kinds=tuple(
            GpuKind(kind=k.type, per_node=k.per_node, total=k.total, used=k.used) for k in wire.gpu_kinds
        ),
        image_dir=wire.image_dir,
        images=tuple(wire.images),
    )


def info_from_wire(wire: api.WorkloadInfoResponse) -> WorkloadInfo:
    return WorkloadInfo(
        name=wire.name,
        version=wire.version.strip(),
        uid=wire.uid,
        cluster_name=wire.cluster_name,
        extensions=tuple(wire.extensions),
    )
