"""The exec handler the transport tests (SPDY, WebSocket) serve behind the kubelet's own API.

``Stub`` is an exec handler whose behaviour the command's first word picks; ``ExecServer`` is
``server.kubelet_app`` with it as its exec handler, on a free port (the ``exec_server`` fixture
of this directory's conftest).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from aiohttp import web

from wlmvk.core.errors import FailedPrecondition, NotFound
from wlmvk.kubelet.api import server as kubelet_server
from wlmvk.kubelet.api.exec.requests import (
    ExecChannel,
    ExecRequest,
    Resize,
    StdinClosed,
    StdinData,
    exit_status,
)


@dataclass
class Stub:
    """An exec handler whose behaviour the command's first word picks."""

    requests: list[ExecRequest] = field(default_factory=list)
    events: list[object] = field(default_factory=list)
    """What ``cat`` received, its end (None: the client left) included."""
    gone: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    async def check(self, request: ExecRequest) -> None:
        if request.pod == "held":
            raise FailedPrecondition('container "c" in pod "held" is not running: Slurm job 9 is PENDING')
        if request.pod == "gone":
            raise NotFound('pod "gone" not found on this kubelet')

    async def __call__(self, request: ExecRequest, channel: ExecChannel) -> None:
        self.requests.append(request)
        match request.command[0]:
            case "echo":
                await channel.send_stdout(b"out\n")
                await channel.send_stderr(b"err\n")
                await channel.finish(exit_status(int(request.command[1])))
            case "big":
                await channel.send_stdout(b"x" * 200_000)
                await channel.finish(exit_status(0))
            case "cat":
                while True:
                    event = await channel.receive()
                    self.events.append(event)
                    if isinstance(event, StdinData):
                        await channel.send_stdout(event.data)
                    elif isinstance(event, Resize):
                        await channel.send_stdout(f"[{event.width}x{event.height}]".encode())
                    elif isinstance(event, StdinClosed):
                        await channel.finish(exit_status(0))
                        return
                    else:
                        self.gone.set()
                        return
            case "notrunning":
                raise NotFound("pod ns/p: its job 7 is not running (PENDING)")
            case "fail":
                raise FailedPrecondition("exec: job 9 is COMPLETED: a command runs only in a running job")
            case "silent":
                return
            case "crash":
                await channel.send_stdout(b"partial\n")
                raise RuntimeError("the backend broke")
            case "count":  # reads nothing until released, then counts stdin to its end
                await self.release.wait()
                total = 0
                while isinstance(event := await channel.receive(), StdinData):
                    total += len(event.data)
                await channel.send_stdout(str(total).encode())
                await channel.finish(exit_status(0))


@dataclass(frozen=True)
class ExecServer:
    port: int
    stub: Stub

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@asynccontextmanager
async def exec_server() -> AsyncIterator[ExecServer]:
    """The kubelet's own API (``server.kubelet_app``) with a ``Stub`` as its exec handler."""
    stub = Stub()
    app = kubelet_server.kubelet_app(kubelet_server.Handlers(exec=stub, exec_check=stub.check))
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield ExecServer(runner.addresses[0][1], stub)
    finally:
        await runner.cleanup()
