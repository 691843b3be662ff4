"""The HTTP client to slurmrestd and the reading of its answers (bodies captured from slurmrestd 22.05.8).

The server here is a few lines of asyncio on a Unix socket that answers what
each test tells it to, and counts the connections it was given.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from wlmvk.redbox.slurm.rest.backend import _first_error, _submitted, unchanged
from wlmvk.redbox.slurm.rest.connection import Client, Lost, NotSent, Response
from wlmvk.redbox.slurm.rest.daemon import stopped

META = (
    '"meta": {"plugin": {"type": "openapi\\/v0.0.38", "name": "Slurm OpenAPI v0.0.38"}, '
    '"Slurm": {"version": {"major": 22, "micro": 8, "minor": 5}, "release": "22.05.8"}}'
)
HELD = (
    "{"
    + META
    + ', "errors": [{"error_code": 2042, "error": "Job is in held state, pending scheduler release"}],'
    ' "job_id": 56, "step_id": "BATCH", "job_submit_user_msg": ""}'
)
BAD_PARTITION = (
    "{" + META + ', "errors": [{"error_code": 2000, "error": "Invalid partition name specified"}]}'
)
NO_ENVIRONMENT = (
    "{" + META + ', "errors": [{"error": "environment must be set", "error_code": 2127},'
    ' {"error_code": 9001, "error": "Failure during parsing"}]}'
)
CANCEL_UNKNOWN = (
    "{" + META + ', "errors": [{"description": "unable to kill JobId=99999999 with signal 9: Invalid job id'
    ' specified", "error_number": 2017, "error": "Invalid job id specified", "source": "slurm_kill_job"}]}'
)

Answer = Callable[[bytes], bytes | None]  # request head+body -> raw answer, None: close without one


def http(status: int, body: str) -> bytes:
    data = body.encode()
    head = f"HTTP/1.1 {status} X\r\nContent-Length: {len(data)}\r\nContent-Type: application/json\r\n\r\n"
    return head.encode() + data


class Server:
    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.connections = 0
        self.requests: list[bytes] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length")
                    ),
                    0,
                )
                request = head + await reader.readexactly(length)
                self.requests.append(request)
                raw = self.answer(request)
                if raw is None:
                    return
                writer.write(raw)
                await writer.drain()
        except asyncio.IncompleteReadError:
            return
        finally:
            writer.close()


Start = Callable[[Answer], Awaitable[tuple[Server, str]]]


@pytest.fixture
async def serve() -> AsyncIterator[Start]:
    servers: list[asyncio.AbstractServer] = []
    home = Path(tempfile.mkdtemp(prefix="resthttp"))

    async def start(answer: Answer) -> tuple[Server, str]:
        fake = Server(answer)
        path = str(home / f"s{len(servers)}.sock")
        servers.append(await asyncio.start_unix_server(fake.handle, path))
        return fake, path

    yield start
    for server in servers:
        server.close()


async def test_one_connection_is_kept_for_requests_in_turn(serve: Start) -> None:
    fake, path = await serve(lambda _: http(200, HELD))
    client = Client(path)
    for _ in range(3):
        answer = await client.request("POST", "/slurm/v0.0.38/job/submit", b'{"script": "x"}')
        assert answer == Response(200, HELD.encode())
    assert fake.connections == 1
    assert fake.requests[0].startswith(b"POST /slurm/v0.0.38/job/submit HTTP/1.1\r\n")
    assert b"Content-Length: 15\r\n" in fake.requests[0]
    assert fake.requests[0].endswith(b'\r\n\r\n{"script": "x"}')
    client.close()


async def test_after_an_error_answer_a_new_connection_is_used(serve: Start) -> None:
    answers = iter([http(500, BAD_PARTITION), http(200, HELD)])
    fake, path = await serve(lambda _: next(answers))
    client = Client(path)
    assert (await client.request("POST", "/x", b"{}")).status == 500
    assert (await client.request("POST", "/x", b"{}")).status == 200
    assert fake.connections == 2
    client.close()


async def test_no_socket_is_not_sent() -> None:
    client = Client("/nonexistent/slurmrestd.sock")
    with pytest.raises(NotSent, match=r"slurmrestd at /nonexistent/slurmrestd\.sock"):
        await client.request("POST", "/x", b"{}")


async def test_a_connection_closed_without_an_answer_is_lost(serve: Start) -> None:
    _, path = await serve(lambda _: None)
    with pytest.raises(Lost, match=r"POST /slurm/v0\.0\.38/job/submit: no answer"):
        await Client(path).request("POST", "/slurm/v0.0.38/job/submit", b"{}")


async def test_no_answer_in_time_is_lost(serve: Start) -> None:
    # A head, then one byte of the ten the body should have: the connection stays open.
    _, path = await serve(lambda _: b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{")
    with pytest.raises(Lost, match="no answer"):
        await Client(path, timeout=0.2).request("GET", "/x")


def test_a_held_job_is_a_job() -> None:
    assert _submitted(Response(200, HELD.encode())) == (56, [2042], "")


def test_any_answer_with_a_job_id_is_a_job() -> None:
    body = json.loads(HELD)
    body["errors"].append({"error_code": 9999, "error": "something else"})
    assert _submitted(Response(200, json.dumps(body).encode()))[0] == 56


@pytest.mark.parametrize(
    ("answer", "codes", "refusal"),
    [
        (
            Response(500, BAD_PARTITION.encode()),
            [2000],
            "HTTP 500, error 2000: Invalid partition name specified",
        ),
        (
            Response(400, NO_ENVIRONMENT.encode()),
            [2127, 9001],
            "HTTP 400, error 2127: environment must be set",
        ),
        (Response(400, b"Unable to parse query."), None, "HTTP 400: Unable to parse query."),
    ],
)
def test_a_refusal_says_why(answer: Response, codes: list[int] | None, refusal: str) -> None:
    assert _submitted(answer) == (0, codes, refusal)


def test_cancel_answers_name_the_code_error_number() -> None:
    assert _first_error(Response(500, CANCEL_UNKNOWN.encode())) == (2017, "Invalid job id specified")


CAPTURED = Path(__file__).resolve().parents[4] / "fixtures" / "slurm_captured" / "releases"


def _captured(release: str, name: str, status: int) -> Response:
    return Response(status, (CAPTURED / release / f"slurmrestd-v0.0.42-{name}.json").read_bytes())


@pytest.mark.parametrize("release", ["24.11", "26.05"])
def test_v0_0_42_answers_read_as_v0_0_38_ones(release: str) -> None:
    assert _submitted(_captured(release, "submit-held", 200))[0] > 0
    refused = _submitted(_captured(release, "submit-bad-partition", 500))
    assert refused == (0, [2000], "HTTP 500, error 2000: Invalid partition name specified")
    assert _first_error(_captured(release, "cancel-unknown", 404)) == (2017, "Invalid job id specified")


@pytest.mark.parametrize("release", ["24.11", "26.05"])
def test_no_job_changed_is_read_from_each_versions_answer(release: str) -> None:
    assert unchanged(_captured(release, "jobs-unchanged", 200))
    assert not unchanged(_captured(release, "jobs-changed", 200))
    if release == "26.05":  # a change, and no job left to show: a dump too, with slurmctld's time
        assert not unchanged(_captured(release, "jobs-changed-none-left", 200))
    assert unchanged(Response(304, b""))  # v0.0.38
    assert not unchanged(Response(200, b"not json"))
    assert not unchanged(Response(500, b'{"jobs": [], "last_update": 0}'))


# --- every wait bounded, and the liveness look ---


async def test_no_free_slot_within_the_timeout_is_not_sent(serve: Start) -> None:
    """Every slot taken (by requests slurmrestd holds): the next is NotSent (it never left) once the
    timeout passed, not queued for ever."""
    fake, path = await serve(lambda _: http(200, HELD))
    client = Client(path, connections=1, timeout=0.3)
    await client._gate.acquire()  # the one slot, held
    started = asyncio.get_running_loop().time()
    with pytest.raises(NotSent, match=r"GET /next: no connection free within 0\.3 s"):
        await client.request("GET", "/next")
    assert 0.3 <= asyncio.get_running_loop().time() - started < 0.6
    assert fake.requests == []
    client._gate.release()
    assert (await client.request("GET", "/next")).status == 200


async def test_a_look_answers_beside_busy_slots_and_not_when_hung(serve: Start) -> None:
    answers = {b"/wlmvk/liveness": http(404, "Unable find requested URL.")}
    fake, path = await serve(lambda request: answers.get(request.split()[1]))
    client = Client(path, connections=1, timeout=5)
    before = client.answered_at
    assert await client.look("/wlmvk/liveness", 0.5)
    assert client.answered_at > before
    _, hung_path = await serve(lambda _: b"HTTP/1.1 200 OK\r\n")  # a head begun, never ended
    assert not await Client(hung_path).look("/wlmvk/liveness", 0.2)
    assert not await Client("/nonexistent/s.sock").look("/wlmvk/liveness", 0.2)
    assert fake.connections == 1


async def test_a_stopped_process_is_seen_stopped() -> None:
    proc = await asyncio.create_subprocess_exec("sleep", "30")
    try:
        assert not stopped(proc.pid)
        os.kill(proc.pid, signal.SIGSTOP)
        await asyncio.sleep(0.1)
        assert stopped(proc.pid)
        os.kill(proc.pid, signal.SIGCONT)
        await asyncio.sleep(0.1)
        assert not stopped(proc.pid)
    finally:
        proc.kill()
        await proc.wait()
    assert not stopped(proc.pid)
