"""red-box's server takes more long-lived streams on one connection than h2's default 100.

A kubelet serving 200 ``kubectl logs -f`` holds 200 TailFile streams open to red-box on one
connection; its status tick's next unary call must still be answered at once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from wlmvk._proto import api
from wlmvk.redbox.listening import STREAMS, Listener
from wlmvk.redboxclient.client import RedBoxClient

FOLLOWS = 150


class Tailing(api.WorkloadManagerBase):  # type: ignore[misc]
    """Every TailFile sends one chunk and stays open; WorkloadInfo answers."""

    async def tail_file(
        self, tail_file_request_iterator: AsyncIterator[api.TailFileRequest]
    ) -> AsyncIterator[api.Chunk]:
        await anext(tail_file_request_iterator)
        yield api.Chunk(content=b"line\n")
        await asyncio.Event().wait()

    async def workload_info(self, request: api.WorkloadInfoRequest) -> api.WorkloadInfoResponse:
        return api.WorkloadInfoResponse(name="slurm", version="22.05.8", uid=0)


async def test_a_unary_call_is_answered_beside_150_open_follows(socket_path: str) -> None:
    server = Listener([Tailing()])
    await server.start(path=socket_path)
    client = RedBoxClient(socket_path, timeout=5)
    tails = [client.tail_file(f"out-{i}") for i in range(FOLLOWS)]
    try:
        firsts = await asyncio.wait_for(asyncio.gather(*(anext(tail) for tail in tails)), 10)
        assert firsts == [b"line\n"] * FOLLOWS
        info = await asyncio.wait_for(client.info(), 2)
        assert info.name == "slurm"
        assert STREAMS > 2 * FOLLOWS
    finally:
        for tail in tails:
            with contextlib.suppress(Exception):
                await tail.aclose()  # type: ignore[attr-defined]
        await client.close()
        server.close()
        await server.wait_closed()
