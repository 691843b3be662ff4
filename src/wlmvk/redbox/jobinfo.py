"""JobInfo answers: from what ``scontrol show job`` prints, or from red-box's record of a job.

Pure. The original's fields come from scontrol's record as the original
red-box filled them; wlmvk's additions (the reason, the idempotency key, the
end time) only in the dialect that has them. A job scontrol no longer shows
is answered from ``JobState`` (red-box's record and accounting).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta

from wlmvk._proto import api
from wlmvk.core.jobs import JobState
from wlmvk.redbox.dialects import Dialect
from wlmvk.redbox.slurm.cli.scontrol import job_info_fields
from wlmvk.redbox.slurm.cli.values import duration, idempotency_key, job_status, timestamp
from wlmvk.wire import codec


def from_record(record: Mapping[str, str], dialect: Dialect) -> api.JobInfo:
    """The JobInfo of one record of ``scontrol show job``."""
    f = job_info_fields(record)
    status = job_status(f["JobState"])
    info = api.JobInfo(
        id=f["JobId"],
        user_id=f["UserId"],
        name=f["JobName"],
        exit_code=f["ExitCode"],
        status=dialect.status(codec.status_to_wire(status)),
        submit_time=timestamp(f["SubmitTime"]),
        start_time=timestamp(f["StartTime"]),
        run_time=duration(f["RunTime"]),
        time_limit=duration(f["TimeLimit"]),
        working_dir=f["WorkDir"],
        std_out=f["StdOut"],
        std_err=f["StdErr"],
        partition=f["Partition"],
        node_list=f["NodeList"],
        batch_host=f["BatchHost"],
        num_nodes=f["NumNodes"],
        array_id=f["ArrayJobId"],
    )
    if dialect.additions:
        info.reason = f["Reason"]
        info.idempotency_key = idempotency_key(f["Comment"])
        if status.terminal:
            info.end_time = timestamp(f["EndTime"])
    return info


def from_state(state: JobState) -> api.JobInfo:
    """The JobInfo of a job scontrol no longer shows, from what red-box and accounting know."""
    run_time = None
    if state.start_time and state.end_time:
        run_time = state.end_time - state.start_time
    return api.JobInfo(
        id=str(state.job_id),
        name=state.name,
        exit_code=f"{state.exit_code or 0}:{state.signal}",
        status=codec.status_to_wire(state.status),
        submit_time=state.submit_time,
        start_time=state.start_time,
        run_time=run_time or timedelta(0),
        working_dir=state.working_dir,
        std_out=state.std_out,
        std_err=state.std_err,
        partition=state.partition,
        node_list=state.node_list,
        reason=state.reason,
        end_time=state.end_time,
        idempotency_key=state.idempotency_key,
    )
