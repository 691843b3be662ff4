"""kubectl exec over WebSocket against the kubelet's aiohttp app, with a stub exec handler.

The client speaks as client-go's WebSocket executor: binary messages, one channel byte first,
``v5.channel.k8s.io`` (stdin closed with 255 + 0) or ``v4.channel.k8s.io``.
"""

from __future__ import annotations

import asyncio
import json

import aiohttp
import pytest

from tests.fixtures.apiserver import failure_status
from tests.unit.kubelet.execstub import ExecServer
from wlmvk.kubelet.api.exec.requests import ExecRequest, Resize, StdinClosed, StdinData, exit_status


def url(base: str, pod: str, *command: str, tty: bool = False) -> str:
    words = "&".join(f"command={word}" for word in command)
    return f"{base}/exec/ns/{pod}/c?{words}&input=1&output=1&error=1" + ("&tty=1" if tty else "")


async def session(
    base: str, pod: str, *command: str, send: tuple[bytes, ...] = (), protocol: str = "v5.channel.k8s.io"
) -> tuple[str | None, list[bytes]]:
    target = url(base, pod, *command)
    async with aiohttp.ClientSession() as client, client.ws_connect(target, protocols=(protocol,)) as socket:
        for message in send:
            await socket.send_bytes(message)
        received = [m.data async for m in socket if m.type == aiohttp.WSMsgType.BINARY]
        return socket.protocol, received


async def test_a_command_writes_its_channels_then_its_status(exec_server: ExecServer) -> None:
    base, stub = exec_server.base, exec_server.stub
    protocol, received = await session(base, "p", "echo", "3")
    assert protocol == "v5.channel.k8s.io"
    assert received[:2] == [b"\x01out\n", b"\x02err\n"]
    assert received[2][:1] == b"\x03"
    assert json.loads(received[2][1:]) == exit_status(3)
    assert len(received) == 3
    assert stub.requests[0] == ExecRequest("ns", "p", "c", ("echo", "3"), True, True, True, False)


async def test_input_resize_and_the_v5_close_of_stdin(exec_server: ExecServer) -> None:
    base, stub = exec_server.base, exec_server.stub
    sent = (b'\x04{"Width":80,"Height":24}', b"\x00hello", b"\xff\x00")
    _, received = await session(base, "p", "cat", send=sent)
    assert received[:2] == [b"\x01[80x24]", b"\x01hello"]
    assert json.loads(received[2][1:]) == {"metadata": {}, "status": "Success"}
    assert stub.events == [Resize(80, 24), StdinData(b"hello"), StdinClosed()]


async def test_v4_is_served_and_has_no_close(exec_server: ExecServer) -> None:
    base, stub = exec_server.base, exec_server.stub
    async with aiohttp.ClientSession() as client:
        async with client.ws_connect(url(base, "p", "cat"), protocols=("v4.channel.k8s.io",)) as socket:
            assert socket.protocol == "v4.channel.k8s.io"
            await socket.send_bytes(b"\xff\x00")
            await socket.send_bytes(b"\x00still open")
            message = await socket.receive(timeout=5)
            assert message.data == b"\x01still open"
        await asyncio.wait_for(stub.gone.wait(), 5)
    assert stub.events == [StdinData(b"still open"), None], "v4 has no close channel"


async def test_a_client_that_leaves_is_none_to_the_handler(exec_server: ExecServer) -> None:
    base, stub = exec_server.base, exec_server.stub
    async with aiohttp.ClientSession() as client:
        socket = await client.ws_connect(url(base, "p", "cat"), protocols=("v5.channel.k8s.io",))
        await socket.send_bytes(b"\x00a")
        assert (await socket.receive(timeout=5)).data == b"\x01a"
        await socket.close()
    await asyncio.wait_for(stub.gone.wait(), 5)


async def test_a_handlers_error_is_a_failure_status(exec_server: ExecServer) -> None:
    base = exec_server.base
    _, received = await session(base, "p", "fail")
    assert [m[:1] for m in received] == [b"\x03"]
    assert json.loads(received[0][1:]) == exit_status(
        None, "exec: job 9 is COMPLETED: a command runs only in a running job"
    )


@pytest.mark.parametrize(
    ("pod", "status", "reason", "text"),
    [
        ("gone", 404, "NotFound", 'pod "gone" not found on this kubelet'),
        ("held", 400, "BadRequest", 'container "c" in pod "held" is not running: Slurm job 9 is PENDING'),
    ],
)
async def test_refusals_come_before_any_upgrade(
    exec_server: ExecServer, pod: str, status: int, reason: str, text: str
) -> None:
    base, stub = exec_server.base, exec_server.stub
    async with aiohttp.ClientSession() as client:
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await client.ws_connect(url(base, pod, "true"), protocols=("v5.channel.k8s.io",))
        assert refused.value.status == status
        async with client.get(url(base, pod, "true"), headers={"Upgrade": "websocket"}) as reply:
            assert (reply.status, reply.content_type, await reply.json()) == (
                status,
                "application/json",
                failure_status(status, reason, text),
            )
    assert stub.requests == []


async def test_no_subprotocol_in_common_is_400(exec_server: ExecServer) -> None:
    base, stub = exec_server.base, exec_server.stub
    headers = {
        "Upgrade": "websocket",
        "Connection": "Upgrade",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Protocol": "v3.channel.k8s.io",
    }
    async with (
        aiohttp.ClientSession() as client,
        client.get(url(base, "p", "true"), headers=headers) as reply,
    ):
        assert (reply.status, await reply.text()) == (
            400,
            "unable to upgrade: the client offers the WebSocket subprotocols ['v3.channel.k8s.io'],"
            " the kubelet serves ['v5.channel.k8s.io', 'v4.channel.k8s.io']\n",
        )
    assert stub.requests == []


async def test_a_request_without_upgrade_is_400(exec_server: ExecServer) -> None:
    base = exec_server.base
    async with aiohttp.ClientSession() as client, client.post(url(base, "p", "true")) as reply:
        assert (reply.status, await reply.text()) == (400, "Upgrade request required\n")
