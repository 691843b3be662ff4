"""kubectl exec over SPDY against aiohttp: a client behaving as client-go's, a stub exec handler."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.fixtures.apiserver import failure_status
from tests.fixtures.spdyclient import SpdyClient
from tests.unit.kubelet.execstub import ExecServer
from wlmvk.kubelet.api.exec import spdy, spdyframes
from wlmvk.kubelet.api.exec.requests import Resize, StdinClosed, StdinData

V4_ONLY = ("v4.channel.k8s.io",)
CAPTURED_TTY_SESSION = (
    Path(__file__).resolve().parents[4] / "fixtures" / "spdy_captured" / "translator-tty-session.bin"
).read_bytes()


async def connect(port: int, query: str, pod: str = "p", **kwargs: object) -> SpdyClient:
    return await SpdyClient.connect("127.0.0.1", port, f"/exec/ns/{pod}/c?{query}", **kwargs)  # type: ignore[arg-type]


async def test_output_and_exit_code_as_the_apiserver_sees_them(exec_server: ExecServer) -> None:
    port, stub = exec_server.port, exec_server.stub
    client = await connect(port, "command=echo&command=3&error=1&output=1")
    assert client.upgrade.status == 101
    assert client.upgrade.header("Upgrade") == ["SPDY/3.1"]
    assert client.upgrade.header("X-Stream-Protocol-Version") == ["v4.channel.k8s.io"]
    await client.open_all("error", "stdout", "stderr")
    await client.until_closed()
    assert bytes(client.received["stdout"]) == b"out\n"
    assert bytes(client.received["stderr"]) == b"err\n"
    assert json.loads(client.received["error"]) == {
        "metadata": {},
        "status": "Failure",
        "message": "command terminated with non-zero exit code: exit status 3",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": "3"}]},
    }
    assert client.finished == {"error", "stdout", "stderr"}
    assert client.goaway == spdyframes.GoAway(5, spdyframes.GoAwayStatus.OK)
    assert stub.requests[0].command == ("echo", "3")
    await client.close()


async def test_success_and_large_output_in_order(exec_server: ExecServer) -> None:
    port = exec_server.port
    client = await connect(port, "command=big&output=1")
    await client.open_all("error", "stdout")
    await client.until_closed()
    assert bytes(client.received["stdout"]) == b"x" * 200_000
    assert json.loads(client.received["error"]) == {"metadata": {}, "status": "Success"}
    await client.close()


async def test_stdin_resizes_and_close_reach_the_handler(exec_server: ExecServer) -> None:
    port, stub = exec_server.port, exec_server.stub
    client = await connect(port, "command=cat&error=1&input=1&output=1&tty=1")
    await client.open_all("error", "stdin", "stdout", "resize")
    client.write("resize", b'{"Width":80,"Height":24}\n')
    await client.read_until("stdout", b"[80x24]")
    client.write("stdin", b"hello ")
    await client.read_until("stdout", b"hello ")
    client.write("resize", b'{"Width":100,')
    client.write("resize", b'"Height":30}\n')
    await client.read_until("stdout", b"[100x30]")
    client.write("stdin", b"world", fin=True)
    await client.until_closed()
    assert bytes(client.received["stdout"]) == b"[80x24]hello [100x30]world"
    assert stub.events == [
        Resize(80, 24),
        StdinData(b"hello "),
        Resize(100, 30),
        StdinData(b"world"),
        StdinClosed(),
    ]
    assert json.loads(client.received["error"])["status"] == "Success"
    assert "stdin" in client.finished  # the server closes its half of stdin too
    await client.close()


async def test_a_handler_error_is_the_failure_kubectl_prints(exec_server: ExecServer) -> None:
    port = exec_server.port
    client = await connect(port, "command=notrunning&output=1")
    await client.open_all("error", "stdout")
    await client.until_closed()
    status = json.loads(client.received["error"])
    assert (status["status"], status["message"]) == (
        "Failure",
        "pod ns/p: its job 7 is not running (PENDING)",
    )
    await client.close()


async def test_a_handler_that_forgets_its_status_still_ends_the_session(exec_server: ExecServer) -> None:
    port = exec_server.port
    client = await connect(port, "command=silent&output=1")
    await client.open_all("error", "stdout")
    await client.until_closed()
    assert json.loads(client.received["error"])["message"] == "the exec session ended without an exit status"
    await client.close()


async def test_v2_writes_a_failures_message_as_text(exec_server: ExecServer) -> None:
    port = exec_server.port
    client = await connect(port, "command=notrunning&output=1", versions=("v2.channel.k8s.io",))
    assert client.upgrade.header("X-Stream-Protocol-Version") == ["v2.channel.k8s.io"]
    await client.open_all("error", "stdout")
    await client.until_closed()
    assert bytes(client.received["error"]) == b"pod ns/p: its job 7 is not running (PENDING)"
    await client.close()


async def test_v1_resets_its_error_stream(exec_server: ExecServer) -> None:
    port = exec_server.port
    client = await connect(port, "command=echo&command=0&output=1", versions=("channel.k8s.io",))
    await client.open_all("error", "stdout")
    await client.until_closed()
    assert spdyframes.RstStream(1, spdyframes.RstStatus.CANCEL) in client.frames
    assert bytes(client.received["stdout"]) == b"out\n"
    assert "error" not in client.received
    await client.close()


async def test_no_common_version_is_refused_before_the_upgrade(exec_server: ExecServer) -> None:
    port, stub = exec_server.port, exec_server.stub
    client = await connect(port, "command=echo&command=0&output=1", versions=("v5.channel.k8s.io",))
    assert client.upgrade.status == 403
    assert client.upgrade.header("X-Accepted-Stream-Protocol-Versions") == [
        "v4.channel.k8s.io",
        "v3.channel.k8s.io",
        "v2.channel.k8s.io",
        "channel.k8s.io",
    ]
    assert b"unable to negotiate protocol" in client.upgrade.body
    assert stub.requests == []
    await client.close()


async def test_client_leaving_is_the_end_of_input(exec_server: ExecServer) -> None:
    port, stub = exec_server.port, exec_server.stub
    client = await connect(port, "command=cat&input=1&output=1", versions=V4_ONLY)
    await client.open_all("error", "stdin", "stdout")
    client.write("stdin", b"a")
    await client.read_until("stdout", b"a")
    await client.close()
    await asyncio.wait_for(stub.gone.wait(), 10)
    assert stub.events == [StdinData(b"a"), None]


async def test_pings_are_answered(exec_server: ExecServer) -> None:
    port = exec_server.port
    client = await connect(port, "command=cat&input=1&output=1", versions=V4_ONLY)
    await client.open_all("error", "stdin", "stdout")
    client.send(spdyframes.Ping(7))
    client.write("stdin", b"after-ping")
    await client.read_until("stdout", b"after-ping")
    assert spdyframes.Ping(7) in client.frames
    client.write("stdin", b"", fin=True)
    await client.until_closed()
    await client.close()


async def test_streams_never_opened_end_the_connection(
    exec_server: ExecServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(spdy, "STREAM_CREATION_TIMEOUT", 0.5)
    port, stub = exec_server.port, exec_server.stub
    client = await connect(port, "command=echo&command=0&error=1&output=1", versions=V4_ONLY)
    await client.open("error")
    await asyncio.wait_for(client.until_closed(), 10)
    assert client.closed
    assert stub.requests == []
    await client.close()


async def test_a_protocol_error_ends_the_session_with_goaway(exec_server: ExecServer) -> None:
    port, stub = exec_server.port, exec_server.stub
    client = await connect(port, "command=cat&input=1&output=1", versions=V4_ONLY)
    await client.open_all("error", "stdin", "stdout")
    client.writer.write(bytes.fromhex("8002000600000004 00000001".replace(" ", "")))  # SPDY/2
    await asyncio.wait_for(client.until_closed(), 10)
    assert client.goaway == spdyframes.GoAway(5, spdyframes.GoAwayStatus.PROTOCOL_ERROR)
    await asyncio.wait_for(stub.gone.wait(), 10)
    await client.close()


async def test_even_or_reused_stream_ids_are_reset(exec_server: ExecServer) -> None:
    port = exec_server.port
    client = await connect(port, "command=cat&input=1&output=1", versions=V4_ONLY)
    await client.open("error")
    client.send(spdyframes.SynStream(2, (("streamtype", "stdin"),)))
    client.send(spdyframes.SynStream(1, (("streamtype", "stdin"),)))
    client.next_id = 3
    await client.open_all("stdin", "stdout")
    assert spdyframes.RstStream(2, spdyframes.RstStatus.PROTOCOL_ERROR) in client.frames
    assert spdyframes.RstStream(1, spdyframes.RstStatus.PROTOCOL_ERROR) in client.frames
    client.write("stdin", b"ok", fin=True)
    await client.until_closed()
    assert bytes(client.received["stdout"]) == b"ok"
    await client.close()


async def test_the_apiservers_captured_tty_session_replayed(exec_server: ExecServer) -> None:
    # The bytes kube-apiserver v1.36.3 sent for `kubectl exec -it` (tests/fixtures/spdy_captured),
    # sent in one piece: the session reads them in order and the handler sees the user's events.
    port, stub = exec_server.port, exec_server.stub
    client = await connect(port, "command=cat&input=1&output=1&tty=1")
    client.writer.write(CAPTURED_TTY_SESSION)
    await asyncio.wait_for(client.until_closed(), 10)
    assert stub.events == [
        Resize(120, 40),
        StdinData(b"hi\r"),
        Resize(132, 50),
        StdinData(b"q\r"),
        StdinClosed(),
    ]
    assert [frame for frame in client.frames if isinstance(frame, spdyframes.SynReply)] == [
        spdyframes.SynReply(stream_id) for stream_id in (1, 3, 5, 7)
    ]
    assert spdyframes.Ping(1) in client.frames
    await client.close()


@pytest.mark.parametrize(
    ("pod", "query", "status", "reason", "text"),
    [
        (
            "held",
            "command=true&output=1",
            400,
            "BadRequest",
            'container "c" in pod "held" is not running: Slurm job 9 is PENDING',
        ),
        ("gone", "command=true&output=1", 404, "NotFound", 'pod "gone" not found on this kubelet'),
        ("p", "output=1", 400, "BadRequest", "exec needs a command: no 'command' query parameter was given"),
    ],
)
async def test_refusals_come_before_the_upgrade(
    exec_server: ExecServer, pod: str, query: str, status: int, reason: str, text: str
) -> None:
    # A metav1.Status in JSON: kubectl up to v1.35 reads a text body with ": " in it as YAML, an
    # empty Status ("Error from server: "); every client reads this one's message.
    port, stub = exec_server.port, exec_server.stub
    client = await connect(port, query, pod=pod)
    assert (client.upgrade.status, json.loads(client.upgrade.body)) == (
        status,
        failure_status(status, reason, text),
    )
    assert stub.requests == []
    await client.close()


async def test_stdin_nobody_reads_stops_being_read_and_nothing_is_lost(exec_server: ExecServer) -> None:
    # A client sending faster than the command reads: past STDIN_HIGH_WATER the kubelet stops
    # reading the connection, so TCP holds the client back instead of the kubelet's memory.
    port, stub = exec_server.port, exec_server.stub
    client = await connect(port, "command=count&input=1&output=1", versions=V4_ONLY)
    await client.open_all("error", "stdin", "stdout")
    chunk = b"y" * 32768
    sent = 0
    while sent < 64 * spdy.STDIN_HIGH_WATER:
        client.write("stdin", chunk)
        sent += len(chunk)
        try:
            await asyncio.wait_for(client.writer.drain(), 2)
        except TimeoutError:
            break
    assert sent < 64 * spdy.STDIN_HIGH_WATER, "the kubelet kept reading what nobody read"
    stub.release.set()
    client.write("stdin", b"", fin=True)
    await asyncio.wait_for(client.writer.drain(), 60)
    await asyncio.wait_for(client.until_closed(), 60)
    assert bytes(client.received["stdout"]) == str(sent).encode()
    assert json.loads(client.received["error"])["status"] == "Success"
    await client.close()


async def test_a_crashing_handler_ends_its_session_with_a_failure(exec_server: ExecServer) -> None:
    port = exec_server.port
    client = await connect(port, "command=crash&output=1")
    await client.open_all("error", "stdout")
    await client.until_closed()
    assert bytes(client.received["stdout"]) == b"partial\n"
    status = json.loads(client.received["error"])
    assert (status["status"], status["message"]) == (
        "Failure",
        "error executing command in container: the backend broke",
    )
    await client.close()


async def test_a_connection_idle_past_the_timeout_is_closed(
    exec_server: ExecServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A client gone without a word (no FIN, no ping) must not keep its command running for ever.
    monkeypatch.setattr(spdy, "IDLE_TIMEOUT", 1.0)
    port, stub = exec_server.port, exec_server.stub
    client = await connect(port, "command=cat&input=1&output=1", versions=V4_ONLY)
    await client.open_all("error", "stdin", "stdout")
    await asyncio.wait_for(client.until_closed(), 30)
    assert client.goaway == spdyframes.GoAway(5, spdyframes.GoAwayStatus.OK)
    await asyncio.wait_for(stub.gone.wait(), 10)
    assert stub.events == [None]
    await client.close()
