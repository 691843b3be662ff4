"""RedBoxClient's submissions against a stand-in red-box on a real Unix socket: when it batches
(SubmitJobs), when it retries a batch (only when every job has its key), the UNIMPLEMENTED fallback,
and the fence (wlm.fencing): each send and each retry checked, the token sent, a batch queued
behind others not sent once fenced.

The stand-in records every call that reached it, so a second submission cannot hide."""

from __future__ import annotations

import asyncio
import contextvars
import shutil
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from grpclib import GRPCError
from grpclib.const import Handler, Status
from grpclib.server import Server

from wlmvk._proto import api
from wlmvk.core.errors import Unavailable
from wlmvk.core.fences import HEADER, Token
from wlmvk.core.jobs import JobId, JobSpec
from wlmvk.kube.leader import Fenced
from wlmvk.kubelet.standby import FencedBackend
from wlmvk.redboxclient.client import RedBoxClient

TOKEN = Token("kube-node-lease/slurm-c.kubelet", 4)
_token: contextvars.ContextVar[str | None] = contextvars.ContextVar("token", default=None)


def spec(key: str) -> JobSpec:
    return JobSpec(script="#!/bin/sh\ntrue\n", partition="debug", idempotency_key=key)


class StandIn(api.WorkloadManagerBase):  # type: ignore[misc]
    """red-box with SubmitJobs (when in ``extensions``); records (rpc, jobs, token) per call received."""

    def __init__(self, *, extensions: tuple[str, ...] = ("SubmitJobs",), batches: bool = True) -> None:
        self.extensions = extensions
        self.batches = batches  # False: SubmitJobs answers UNIMPLEMENTED
        self.received: list[tuple[str, int, str | None]] = []
        self.drop = 0  # SubmitJobs calls reset (the connection "lost") after they were read
        self.on_drop: Callable[[], None] = lambda: None
        self.gate: asyncio.Event | None = None  # set: SubmitJobs waits for it before answering
        self.refuse: str | None = None  # SubmitJobs answers FAILED_PRECONDITION with this
        self._next = 100

    def __mapping__(self) -> dict[str, Handler]:
        return {path: self._recording(path, h) for path, h in super().__mapping__().items()}

    def _recording(self, path: str, handler: Handler) -> Handler:
        rpc = path.rsplit("/", 1)[-1]
        func: Callable[[Any], Awaitable[None]] = handler.func

        async def handle(stream: Any) -> None:
            token = stream.metadata.get(HEADER) if stream.metadata else None
            if rpc == "SubmitJobs" and self.drop:
                self.drop -= 1
                request = await stream.recv_message()
                self.received.append((rpc, len(request.jobs), token))
                self.on_drop()
                await stream.cancel()
                return
            _token.set(token)  # each call is its own task
            await func(stream)

        return handler._replace(func=handle)

    def _ids(self, count: int) -> list[int]:
        self._next += count
        return list(range(self._next - count + 1, self._next + 1))

    async def workload_info(self, request: api.WorkloadInfoRequest) -> api.WorkloadInfoResponse:
        self.received.append(("WorkloadInfo", 0, _token.get()))
        return api.WorkloadInfoResponse(name="slurm", version="22.05.8", extensions=list(self.extensions))

    async def submit_job(self, request: api.SubmitJobRequest) -> api.SubmitJobResponse:
        self.received.append(("SubmitJob", 1, _token.get()))
        return api.SubmitJobResponse(job_id=self._ids(1)[0])

    async def submit_jobs(self, request: api.SubmitJobsRequest) -> api.SubmitJobsResponse:
        self.received.append(("SubmitJobs", len(request.jobs), _token.get()))
        if not self.batches:
            raise GRPCError(Status.UNIMPLEMENTED, "Method not found")
        if self.refuse is not None:
            raise GRPCError(Status.FAILED_PRECONDITION, self.refuse)
        if self.gate is not None:
            await self.gate.wait()
        return api.SubmitJobsResponse(
            results=[api.SubmitJobsResult(job_id=i) for i in self._ids(len(request.jobs))]
        )

    def submissions(self) -> list[tuple[str, int, str | None]]:
        return [r for r in self.received if r[0].startswith("Submit")]


class MovableFence:
    """A holder's fence the test moves: ``fenced`` makes ``check`` raise and ``token`` None."""

    def __init__(self) -> None:
        self.fenced = False
        self.checks = 0
        self.told: list[int] = []  # the highest numbers red-box named in its refusals

    def check(self) -> Token:
        self.checks += 1
        if self.fenced:
            raise Fenced("not the holder of Lease kube-node-lease/slurm-c.kubelet: write refused")
        return TOKEN

    def token(self) -> Token | None:
        return None if self.fenced else TOKEN

    async def refused(self, highest: int) -> None:
        self.told.append(highest)


async def running(service: StandIn) -> AsyncIterator[RedBoxClient]:
    home = tempfile.mkdtemp(dir="/tmp")
    server = Server([service])
    await server.start(path=f"{home}/s.sock")
    client = RedBoxClient(f"{home}/s.sock", timeout=10.0)
    try:
        yield client
    finally:
        await client.close()
        server.close()
        await server.wait_closed()
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def service() -> StandIn:
    return StandIn()


@pytest.fixture
async def client(service: StandIn) -> AsyncIterator[RedBoxClient]:
    async for made in running(service):
        yield made


async def test_submissions_made_together_go_as_one_submit_jobs(
    service: StandIn, client: RedBoxClient
) -> None:
    await client.info()
    ids = await asyncio.gather(*(client.submit(spec(f"k{i}")) for i in range(5)))
    assert ids == [101, 102, 103, 104, 105]
    assert service.submissions() == [("SubmitJobs", 5, None)]


async def test_a_red_box_without_submit_jobs_gets_one_submit_job_each() -> None:
    service = StandIn(extensions=())
    async for client in running(service):
        ids = await asyncio.gather(*(client.submit(spec(f"k{i}")) for i in range(3)))
        assert sorted(ids) == [101, 102, 103]
        assert service.submissions() == [("SubmitJob", 1, None)] * 3


async def test_submit_jobs_answered_unimplemented_falls_back_to_submit_job_for_good() -> None:
    service = StandIn(batches=False)  # claims SubmitJobs, does not serve it: nothing submitted
    async for client in running(service):
        await client.info()
        ids = await asyncio.gather(*(client.submit(spec(f"k{i}")) for i in range(3)))
        assert sorted(ids) == [101, 102, 103]
        assert await client.submit(spec("later")) == JobId(104)
        assert service.submissions() == [("SubmitJobs", 3, None)] + [("SubmitJob", 1, None)] * 4


async def test_a_batch_whose_jobs_all_have_keys_is_retried_on_a_new_connection(
    service: StandIn, client: RedBoxClient
) -> None:
    await client.info()
    service.drop = 1
    ids = await asyncio.gather(client.submit(spec("a")), client.submit(spec("b")))
    assert ids == [101, 102]
    assert service.submissions() == [("SubmitJobs", 2, None), ("SubmitJobs", 2, None)]


async def test_a_batch_with_a_job_without_key_is_not_retried(service: StandIn, client: RedBoxClient) -> None:
    await client.info()
    service.drop = 1
    answers = await asyncio.gather(client.submit(spec("a")), client.submit(spec("")), return_exceptions=True)
    assert [type(a) for a in answers] == [Unavailable, Unavailable]
    assert service.submissions() == [("SubmitJobs", 2, None)]  # a retry could have made "" twice


async def test_a_fenced_client_sends_its_token_with_every_call(
    service: StandIn, client: RedBoxClient
) -> None:
    client.fence_with(MovableFence())
    await client.info()
    await asyncio.gather(client.submit(spec("a")), client.submit(spec("b")))
    assert service.received == [("WorkloadInfo", 0, TOKEN.header()), ("SubmitJobs", 2, TOKEN.header())]


async def test_once_fenced_nothing_that_writes_is_sent_and_reads_carry_no_token(
    service: StandIn, client: RedBoxClient
) -> None:
    fence = MovableFence()
    client.fence_with(fence)
    await client.info()
    fence.fenced = True
    with pytest.raises(Fenced, match="write refused"):
        await client.submit(spec("a"))
    with pytest.raises(Fenced):
        await client.cancel(JobId(7))
    await client.info()
    assert service.received == [("WorkloadInfo", 0, TOKEN.header()), ("WorkloadInfo", 0, None)]


async def test_the_fence_is_checked_again_before_a_retry(service: StandIn, client: RedBoxClient) -> None:
    fence = MovableFence()
    client.fence_with(fence)
    await client.info()
    service.drop = 1

    def deposed() -> None:
        fence.fenced = True  # the Lease's bound passes while the first send is on its way

    service.on_drop = deposed
    answers = await asyncio.gather(client.submit(spec("a")), client.submit(spec("b")), return_exceptions=True)
    assert [type(a) for a in answers] == [Fenced, Fenced]
    assert service.submissions() == [("SubmitJobs", 2, TOKEN.header())]  # the retry was not sent


async def test_a_batch_queued_behind_others_is_not_sent_once_fenced(
    service: StandIn, client: RedBoxClient
) -> None:
    """The issue's case: the FencedBackend's check passed when the call started; the batch then
    waited behind two calls on their way, and the holder was deposed meanwhile."""
    fence = MovableFence()
    client.fence_with(fence)
    backend = FencedBackend(client, check=fence.check)
    await client.info()
    service.gate = asyncio.Event()
    first = asyncio.ensure_future(backend.submit(spec("a")))
    await asyncio.sleep(0.1)
    second = asyncio.ensure_future(backend.submit(spec("b")))
    await asyncio.sleep(0.1)
    queued = asyncio.ensure_future(backend.submit(spec("c")))  # two on their way: it waits
    await asyncio.sleep(0.1)
    assert service.submissions() == [("SubmitJobs", 1, TOKEN.header())] * 2
    fence.fenced = True
    service.gate.set()
    assert await asyncio.gather(first, second) == [101, 102]
    with pytest.raises(Fenced):
        await queued
    assert service.submissions() == [("SubmitJobs", 1, TOKEN.header())] * 2


async def test_red_box_refusing_a_stale_token_is_unavailable_to_the_caller(
    service: StandIn, client: RedBoxClient
) -> None:
    fence = MovableFence()
    client.fence_with(fence)
    await client.info()
    service.refuse = "fenced: token 4 of kube-node-lease/slurm-c.kubelet is below the highest seen, 5: ..."
    with pytest.raises(Unavailable, match=r"^SubmitJobs: fenced: token 4 of .* below the highest seen, 5"):
        await client.submit(spec("a"))
    assert fence.told == [5]  # so that a holder whose Lease was made again can count on from there
