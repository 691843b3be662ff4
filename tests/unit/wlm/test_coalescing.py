"""wire.coalescing: a connection's writes of one loop turn go out as one, the same bytes in order."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

from wlmvk._proto import api
from wlmvk.core.jobs import JobId, JobSpec
from wlmvk.wire.coalescing import CoalescingTransport, Server
from wlmvk.wlm.client import RedBoxClient


class Socket(asyncio.Transport):
    """The transport under the coalescing one: what reaches the socket, write by write."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[bytes] = []
        self.closing = False
        self.aborted = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.sent.append(bytes(data))

    def is_closing(self) -> bool:
        return self.closing

    def get_write_buffer_size(self) -> int:
        return 0

    def close(self) -> None:
        self.closing = True

    def abort(self) -> None:
        self.closing = self.aborted = True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": "here"}.get(name, default)


async def _turn() -> None:
    await asyncio.sleep(0)


async def test_the_writes_of_one_turn_are_sent_together_in_order() -> None:
    socket = Socket()
    transport = CoalescingTransport(socket)
    for piece in (b"headers", b"", b"message", b"trailers"):
        transport.write(piece)
    assert socket.sent == []
    assert transport.get_write_buffer_size() == len(b"headersmessagetrailers")
    await _turn()
    assert socket.sent == [b"headersmessagetrailers"]
    transport.write(b"next")
    await _turn()
    assert socket.sent == [b"headersmessagetrailers", b"next"]
    assert transport.get_extra_info("peername") == "here"


async def test_closing_sends_what_is_gathered_first() -> None:
    socket = Socket()
    transport = CoalescingTransport(socket)
    transport.write(b"trailers")
    transport.close()
    assert (socket.sent, socket.closing) == ([b"trailers"], True)
    await _turn()
    assert socket.sent == [b"trailers"]


async def test_an_abort_drops_what_is_gathered_and_a_closed_socket_gets_nothing() -> None:
    socket = Socket()
    transport = CoalescingTransport(socket)
    transport.write(b"lost")
    transport.abort()
    await _turn()
    assert (socket.sent, socket.aborted) == ([], True)

    socket = Socket()
    transport = CoalescingTransport(socket)
    transport.write(b"late")
    socket.closing = True  # the peer went away before the turn ended
    await _turn()
    assert socket.sent == []
    assert transport.is_closing()


class Numbering(api.WorkloadManagerBase):  # type: ignore[misc]
    """Answers each submission with the number its key carries (the message classes' reading)."""

    async def submit_job(self, request: api.SubmitJobRequest) -> api.SubmitJobResponse:
        await asyncio.sleep(0)
        return api.SubmitJobResponse(job_id=int(request.idempotency_key) * 1000 + len(request.env))


@pytest.fixture
def socket_path() -> Iterator[str]:
    home = tempfile.mkdtemp(dir="/tmp")
    yield f"{home}/s.sock"
    shutil.rmtree(home, ignore_errors=True)


async def test_many_calls_in_flight_each_get_their_own_answer(socket_path: str) -> None:
    server = Server([Numbering()])
    await server.start(path=socket_path)
    client = RedBoxClient(socket_path, timeout=30)
    try:

        async def one(n: int) -> JobId:
            env = {f"V{i}": "x" for i in range(n % 5)}
            return await client.submit(JobSpec(script="s", idempotency_key=str(n), env=env))

        for _ in range(2):  # and again on the same connection
            got = await asyncio.gather(*(one(n) for n in range(1, 101)))
            assert got == [n * 1000 + n % 5 for n in range(1, 101)]
    finally:
        await client.close()
        server.close()
        await server.wait_closed()
