"""Old clients keep working: every original rpc with only the original fields set.

Also the other direction: against a red-box serving only the original API
(``--original-api-only``), wlmvk's client falls back (states through
JobInfo, staging through the dptech fork's zip rpcs) or says Unsupported.
"""

from __future__ import annotations

import asyncio
import io
import tarfile
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from pathlib import Path

import pytest
from grpclib import GRPCError
from grpclib.client import Channel
from grpclib.const import Status

from tests.e2e.redbox.helpers import script, wait_for
from tests.fixtures.redbox import RedBox
from wlmvk._proto import api
from wlmvk._proto.grpc.health.v1 import HealthCheckRequest, HealthCheckResponseServingStatus, HealthStub
from wlmvk.core.errors import Unsupported
from wlmvk.core.jobs import JobId, JobSpec, JobStatus
from wlmvk.redboxclient.client import RedBoxClient

pytestmark = pytest.mark.slurm


async def wait_info(
    stub: api.WorkloadManagerStub, job_id: int, done: Callable[[api.JobInfo], bool]
) -> api.JobInfo:
    async with asyncio.timeout(90):
        while True:
            info = (await stub.job_info(api.JobInfoRequest(job_id=job_id))).info[0]
            if done(info):
                return info
            await asyncio.sleep(0.3)


async def test_each_original_rpc_with_original_fields(redbox: RedBox) -> None:
    channel = Channel(path=redbox.socket)
    stub = api.WorkloadManagerStub(channel)
    try:
        info = await stub.workload_info(api.WorkloadInfoRequest())
        assert info.name == "slurm"
        assert info.version.count(".") == 2
        assert not info.version.endswith("\n")
        partitions = (await stub.partitions(api.PartitionsRequest())).partition
        assert "debug" in partitions
        res = await stub.resources(api.ResourcesRequest(partition="debug"))
        assert res.nodes >= 1
        assert res.cpu_per_node >= 1
        assert res.mem_per_node > 0
        assert res.wall_time == 600

        reply = await stub.submit_job(
            api.SubmitJobRequest(script=script("echo old client"), partition="debug")
        )
        done = await wait_info(stub, reply.job_id, lambda i: i.status == api.JobStatus.COMPLETED)
        assert done.id == str(reply.job_id)
        assert done.exit_code == "0:0"
        assert done.partition == "debug"
        assert done.time_limit == timedelta(minutes=10)
        assert done.working_dir == str(redbox.work_dir), "jobs run in red-box's working root by default"
        output = b"".join([c.content async for c in stub.open_file(api.OpenFileRequest(path=done.std_out))])
        assert output == b"old client\n"
        # slurmdbd learns of a job in steps (submitted, started, ended), 1-3 s after each and later
        # on a busy machine: the allocation's row can read PENDING after the job has ended.
        unsettled = {api.JobStatus.PENDING, api.JobStatus.RUNNING}
        async with asyncio.timeout(30):
            while (
                not (steps := (await stub.job_steps(api.JobStepsRequest(job_id=reply.job_id))).job_steps)
                or steps[0].status in unsettled
            ):
                await asyncio.sleep(0.5)
        assert steps[0].id == str(reply.job_id)
        assert steps[0].status == api.JobStatus.COMPLETED

        long = await stub.submit_job(api.SubmitJobRequest(script=script("sleep 100"), partition="debug"))
        await stub.cancel_job(api.CancelJobRequest(job_id=long.job_id))
        cancelled = await wait_info(stub, long.job_id, lambda i: i.status == api.JobStatus.CANCELLED)
        assert cancelled.id == str(long.job_id)

    finally:
        channel.close()


async def test_bad_requests_get_the_right_status_and_slurms_words(redbox: RedBox) -> None:
    channel = Channel(path=redbox.socket)
    stub = api.WorkloadManagerStub(channel)
    cases: list[tuple[object, Status, str]] = [
        (stub.submit_job(api.SubmitJobRequest(script="   ")), Status.INVALID_ARGUMENT, "empty"),
        (
            stub.submit_job(api.SubmitJobRequest(script=script("true"), partition="nope")),
            Status.INVALID_ARGUMENT,
            "invalid partition",
        ),
        (stub.submit_job(api.SubmitJobRequest(script="echo no shebang")), Status.INVALID_ARGUMENT, "#!"),
        (
            stub.submit_job(api.SubmitJobRequest(script="#!/bin/sh\n" + "#" * (2 * 1024 * 1024))),
            Status.INVALID_ARGUMENT,
            "limit",
        ),
        (stub.job_info(api.JobInfoRequest(job_id=999_999_1)), Status.NOT_FOUND, "999999"),
        (stub.cancel_job(api.CancelJobRequest(job_id=999_999_1)), Status.NOT_FOUND, "999999"),
        (stub.resources(api.ResourcesRequest(partition="nope")), Status.NOT_FOUND, "nope"),
        (
            stub.submit_job(api.SubmitJobRequest(script=script("true"), working_dir="/etc/x")),
            Status.INVALID_ARGUMENT,
            "outside",
        ),
        (
            stub.submit_job(api.SubmitJobRequest(script=script("true"), idempotency_key="bad key!")),
            Status.INVALID_ARGUMENT,
            "idempotency key",
        ),
    ]
    try:
        for call, status, words in cases:
            with pytest.raises(GRPCError) as refused:
                await call  # type: ignore[misc]
            assert refused.value.status is status
            assert words in (refused.value.message or "")
    finally:
        channel.close()


async def test_health_service(redbox: RedBox) -> None:
    channel = Channel(path=redbox.socket)
    try:
        health = HealthStub(channel)
        for service in ("", "api.WorkloadManager"):
            reply = await health.check(HealthCheckRequest(service=service))
            assert reply.status is HealthCheckResponseServingStatus.SERVING
        with pytest.raises(GRPCError) as unknown:
            await health.check(HealthCheckRequest(service="nope.Nope"))
        assert unknown.value.status is Status.NOT_FOUND
    finally:
        channel.close()


async def tar_stream(data: bytes) -> AsyncIterator[bytes]:
    yield data


async def test_client_falls_back_on_an_original_red_box(redbox_factory, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    box: RedBox = redbox_factory(original=True)
    client = RedBoxClient(box.socket)
    channel = Channel(path=box.socket)
    try:
        info = await client.info()
        assert info.extensions == ()
        with pytest.raises(GRPCError) as unimplemented:
            await api.WorkloadManagerStub(channel).job_states(api.JobStatesRequest(job_ids=[1]))
        assert unimplemented.value.status is Status.UNIMPLEMENTED
        stub = api.WorkloadManagerStub(channel)
        # The original reported only a partition's own MaxMemPerNode: -1 when it is UNLIMITED (debug).
        assert (await stub.resources(api.ResourcesRequest(partition="debug"))).mem_per_node == -1
        assert (await stub.resources(api.ResourcesRequest(partition="long"))).mem_per_node == 8000
        assert (await client.resources("debug")).mem_per_node == -1, "no limit known, not 0 MB"

        job_id = await client.submit(JobSpec(script=script("sleep 2", "exit 4"), partition="debug"))
        seen: list[JobStatus] = []
        final = await wait_for(client, job_id, lambda s: s.status.terminal, seen=seen)
        assert final.job_id == job_id
        assert final.status is JobStatus.FAILED
        assert final.exit_code == 4
        assert JobStatus.RUNNING not in seen, "an original red-box has no RUNNING state"
        missing = await client.states([JobId(999_999_1)])
        assert missing[JobId(999_999_1)].status is JobStatus.NOT_FOUND

        with pytest.raises(Unsupported):
            await client.find("any-key")

        source = tmp_path / "payload"
        (source / "nested").mkdir(parents=True)
        (source / "nested" / "data.bin").write_bytes(bytes(range(256)) * 100)
        (source / "top.txt").write_text("top\n")
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            archive.add(source, arcname="payload")
        files, size = await client.stage_in("staged", tar_stream(buffer.getvalue()))
        assert (files, size) == (2, 25604)
        landed = box.work_dir / "staged" / "payload"
        assert (landed / "nested" / "data.bin").read_bytes() == bytes(range(256)) * 100

        stream = b"".join([c async for c in client.stage_out("staged/payload")])
        with tarfile.open(fileobj=io.BytesIO(stream)) as archive:
            names = sorted(archive.getnames())
            member = archive.extractfile("payload/top.txt")
            assert member is not None
            assert member.read() == b"top\n"
        assert "payload/nested/data.bin" in names
    finally:
        channel.close()
        await client.close()
