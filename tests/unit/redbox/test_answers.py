"""red-box's answers on the wire: a unary call's in one write, a stream's message by message.

The server is red-box's ``Listener`` on a Unix socket, the client grpclib's; what the server hands
its transport is read write by write through a transport that passes every write on.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from grpclib import GRPCError
from grpclib.client import Channel
from grpclib.const import Status

from wlmvk._proto import api
from wlmvk.redbox.listening import Listener
from wlmvk.redboxclient.client import RedBoxClient

BIG = 100_000
"""Bytes of partition names in one answer: more than one HTTP/2 frame (16 KiB)."""


class Service(api.WorkloadManagerBase):  # type: ignore[misc]
    def __init__(self) -> None:
        self.go_on = asyncio.Event()
        """Set: a TailFile sends its lines after the first."""

    async def workload_info(self, request: api.WorkloadInfoRequest) -> api.WorkloadInfoResponse:
        await asyncio.sleep(0.01)  # answered while the other calls are in flight
        return api.WorkloadInfoResponse(name="slurm", version="22.05.8", uid=0)

    async def job_info(self, request: api.JobInfoRequest) -> api.JobInfoResponse:
        raise GRPCError(Status.NOT_FOUND, f"job {request.job_id} is not known")

    async def partitions(self, request: api.PartitionsRequest) -> api.PartitionsResponse:
        return api.PartitionsResponse(partition=[f"p{i:07d}" for i in range(BIG // 8)])

    async def tail_file(
        self, tail_file_request_iterator: AsyncIterator[api.TailFileRequest]
    ) -> AsyncIterator[api.Chunk]:
        await anext(tail_file_request_iterator)
        yield api.Chunk(content=b"one\n")
        await self.go_on.wait()
        yield api.Chunk(content=b"two\n")
        yield api.Chunk(content=b"three\n")
        await asyncio.Event().wait()  # as red-box's: open until the client closes it


class Passing:
    """The connection's transport, each write noted before it is passed on."""

    def __init__(self, transport: Any, writes: list[bytes]) -> None:
        self._transport = transport
        self._writes = writes

    def write(self, data: bytes) -> None:
        self._writes.append(bytes(data))
        self._transport.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class Noted(Listener):
    """red-box's Listener whose connections' writes are noted in ``writes``."""

    def __init__(self, handlers: list[Any]) -> None:
        super().__init__(handlers)
        self.writes: list[bytes] = []

    def _protocol_factory(self) -> Any:
        protocol = super()._protocol_factory()
        made = protocol.connection_made
        protocol.connection_made = lambda transport: made(Passing(transport, self.writes))
        return protocol


async def _quiet(server: Noted) -> int:
    """How many writes the server made, once it has made none for a while."""
    while True:
        seen = len(server.writes)
        await asyncio.sleep(0.05)
        if len(server.writes) == seen:
            return seen


async def test_a_unary_answer_and_an_error_answer_each_leave_in_one_write(socket_path: str) -> None:
    server = Noted([Service()])
    await server.start(path=socket_path)
    channel = Channel(path=socket_path)
    stub = api.WorkloadManagerStub(channel)
    try:
        await stub.workload_info(api.WorkloadInfoRequest())  # the connection's own frames first
        before = await _quiet(server)
        info = await stub.workload_info(api.WorkloadInfoRequest())
        assert (info.name, info.version) == ("slurm", "22.05.8")
        assert await _quiet(server) - before == 1
        with pytest.raises(GRPCError) as missing:
            await stub.job_info(api.JobInfoRequest(job_id=7))
        assert (missing.value.status, missing.value.message) == (Status.NOT_FOUND, "job 7 is not known")
        assert await _quiet(server) - before == 2
    finally:
        channel.close()
        server.close()
        await server.wait_closed()


async def test_many_calls_at_once_on_one_connection_get_each_its_own_answer(socket_path: str) -> None:
    service = Service()
    service.go_on.set()
    server = Noted([service])
    await server.start(path=socket_path)
    channel = Channel(path=socket_path)
    stub = api.WorkloadManagerStub(channel)
    client = RedBoxClient(socket_path, timeout=5)
    try:
        tail = client.tail_file("out")
        first = await asyncio.wait_for(anext(tail), 5)
        answers = await asyncio.gather(
            *(stub.workload_info(api.WorkloadInfoRequest()) for _ in range(50)),
            *(stub.job_info(api.JobInfoRequest(job_id=i)) for i in range(50)),
            stub.partitions(api.PartitionsRequest()),
            return_exceptions=True,
        )
        chunks = [first, await anext(tail), await anext(tail)]
        await tail.aclose()  # type: ignore[attr-defined]
        infos, errors, (partitions,) = answers[:50], answers[50:100], answers[100:]
        assert all(isinstance(i, api.WorkloadInfoResponse) and i.name == "slurm" for i in infos)
        assert [e.message for e in errors if isinstance(e, GRPCError)] == [
            f"job {i} is not known" for i in range(50)
        ]
        assert isinstance(partitions, api.PartitionsResponse)
        assert partitions.partition == [f"p{i:07d}" for i in range(BIG // 8)]
        assert chunks == [b"one\n", b"two\n", b"three\n"]
    finally:
        channel.close()
        await client.close()
        server.close()
        await server.wait_closed()


async def test_a_streams_message_leaves_before_the_stream_ends(socket_path: str) -> None:
    service = Service()
    server = Noted([service])
    await server.start(path=socket_path)
    client = RedBoxClient(socket_path, timeout=5)
    try:
        tail = client.tail_file("out")
        assert await asyncio.wait_for(anext(tail), 5) == b"one\n"  # the server waits for it
        service.go_on.set()
        assert [await anext(tail), await anext(tail)] == [b"two\n", b"three\n"]
        await tail.aclose()  # type: ignore[attr-defined]
    finally:
        await client.close()
        server.close()
        await server.wait_closed()
