"""RedBoxClient against in-process servers: fallbacks, capability detection, reconnects.

The servers here are small stand-ins on a real Unix socket; the real
red-box is exercised in tests/e2e/redbox.
"""

from __future__ import annotations

import asyncio

import pytest
from grpclib import GRPCError
from grpclib.const import Status
from grpclib.server import Server

from wlmvk._proto import api
from wlmvk.core.errors import InvalidInput, NotFound, Unavailable, Unsupported
from wlmvk.core.jobs import JobId, JobSpec, JobStatus
from wlmvk.redboxclient.client import RedBoxClient


class OriginalRedBox(api.WorkloadManagerBase):  # type: ignore[misc]
    """Answers like the original red-box: no extensions, JobInfo only, UNKNOWN errors."""

    def __init__(self, extensions: tuple[str, ...] = ()) -> None:
        self.extensions = extensions
        self.job_info_calls = 0

    async def workload_info(self, request: api.WorkloadInfoRequest) -> api.WorkloadInfoResponse:
        return api.WorkloadInfoResponse(
            name="slurm", version="22.05.8\n", uid=0, extensions=list(self.extensions)
        )

    async def job_info(self, request: api.JobInfoRequest) -> api.JobInfoResponse:
        self.job_info_calls += 1
        if request.job_id == 404:
            raise GRPCError(Status.UNKNOWN, "slurm_load_jobs error: Invalid job id specified")
        status = api.JobStatus.COMPLETED if request.job_id == 1 else api.JobStatus.UNKNOWN
        return api.JobInfoResponse(info=[api.JobInfo(id=str(request.job_id), exit_code="0:0", status=status)])

    async def submit_job(self, request: api.SubmitJobRequest) -> api.SubmitJobResponse:
        raise GRPCError(Status.UNKNOWN, "sbatch: error: Batch job submission failed: Invalid partition name")


async def serve(handler: api.WorkloadManagerBase, path: str) -> Server:
    server = Server([handler])
    await server.start(path=path)
    return server


async def stop(server: Server) -> None:
    server.close()
    await server.wait_closed()


async def test_states_fall_back_to_job_info_per_job(socket_path: str) -> None:
    server = await serve(OriginalRedBox(), socket_path)
    client = RedBoxClient(socket_path)
    try:
        states = await client.states([JobId(1), JobId(2), JobId(404), JobId(1)])
        assert list(states) == [1, 2, 404]
        assert states[JobId(1)].status is JobStatus.COMPLETED
        assert states[JobId(1)].exit_code == 0
        assert states[JobId(2)].status is JobStatus.UNKNOWN
        assert states[JobId(404)].status is JobStatus.NOT_FOUND
        with pytest.raises(Unsupported):
            await client.find("key")
        with pytest.raises(InvalidInput, match="Invalid partition"):
            await client.submit(JobSpec(script="#!/bin/sh\n", partition="nope"))
        assert (await client.info()).version == "22.05.8"
    finally:
        await client.close()
        await stop(server)


async def test_a_server_that_claims_more_than_it_serves_is_detected(socket_path: str) -> None:
    handler = OriginalRedBox(extensions=("JobStates", "FindJob"))
    server = await serve(handler, socket_path)
    client = RedBoxClient(socket_path)
    try:
        states = await client.states([JobId(1)])
        assert states[JobId(1)].status is JobStatus.COMPLETED
        await client.states([JobId(1)])
        assert handler.job_info_calls == 2, "after one UNIMPLEMENTED the client goes straight to JobInfo"
        with pytest.raises(Unsupported):
            await client.find("key")
    finally:
        await client.close()
        await stop(server)


async def test_unavailable_until_the_socket_appears(socket_path: str) -> None:
    """(Restarts of a real red-box process are in tests/e2e/redbox/test_daemon.py.)"""
    client = RedBoxClient(socket_path, timeout=5)
    try:
        with pytest.raises(Unavailable, match="does not exist"):
            await client.info()
        server = await serve(OriginalRedBox(), socket_path)
        assert (await client.info()).name == "slurm"
        await stop(server)
    finally:
        await client.close()


async def test_not_found_from_a_new_server(socket_path: str) -> None:
    class Modern(OriginalRedBox):
        async def cancel_job(self, request: api.CancelJobRequest) -> api.CancelJobResponse:
            raise GRPCError(Status.NOT_FOUND, f"job {request.job_id}: unknown")

    server = await serve(Modern(), socket_path)
    client = RedBoxClient(socket_path)
    try:
        with pytest.raises(NotFound, match="CancelJob: job 9: unknown"):
            await client.cancel(JobId(9))
    finally:
        await client.close()
        await stop(server)


async def test_a_call_past_its_deadline_is_unavailable_and_the_server_sees_it_go(socket_path: str) -> None:
    gone = asyncio.Event()

    class Stuck(OriginalRedBox):
        async def partitions(self, request: api.PartitionsRequest) -> api.PartitionsResponse:
            try:
                await asyncio.sleep(3600)
            finally:
                gone.set()
            raise AssertionError("unreachable")

    server = await serve(Stuck(), socket_path)
    client = RedBoxClient(socket_path, timeout=0.2)
    try:
        with pytest.raises(Unavailable, match="Partitions: red-box did not answer in time"):
            await client.partitions()
        await asyncio.wait_for(gone.wait(), 10)  # the stream was reset, the handler cancelled
        info = await client.info()  # the client goes on (on a new connection)
        assert info.version == "22.05.8"
    finally:
        await client.close()
        await stop(server)


@pytest.mark.parametrize("claimed", [(), ("Associations",)])
async def test_an_original_red_box_cannot_say_what_slurm_knows_of_its_user(
    socket_path: str, claimed: tuple[str, ...]
) -> None:
    """Not advertised, or advertised and answered UNIMPLEMENTED: Unsupported (the tenant's status
    reads Unknown), never a guess."""
    server = await serve(OriginalRedBox(extensions=claimed), socket_path)
    client = RedBoxClient(socket_path)
    try:
        with pytest.raises(Unsupported) as unsupported:
            await client.associations("alice")
        assert str(unsupported.value) == (
            "Associations: UNIMPLEMENTED"
            if claimed
            else "Associations: this red-box does not answer what Slurm knows of its user"
        )
    finally:
        await client.close()
        await stop(server)
