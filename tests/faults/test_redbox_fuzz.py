"""Random and malformed input for every red-box rpc: each gets a status, red-box never falls over.

Structured fuzzing builds each request message from hostile strings (shell
metacharacters, ``..``, NUL, huge and empty values) and impossible numbers;
an unexpected exception would come back INTERNAL, so INTERNAL and UNKNOWN
fail the test. Raw fuzzing sends random bytes as the message body of every
rpc (the same: INTERNAL and UNKNOWN fail; hand-picked bytes that cannot
decode must be INVALID_ARGUMENT, each), and random bytes straight onto the
socket (not even HTTP/2). Through all
of it a canary file that any shell interpreting the input would create must
never appear, and red-box must keep serving.

CancelJob and Exec only ever get impossible ids (red-box runs as root here and the
Slurm is shared: a random small id could be someone's job).
"""

from __future__ import annotations

import asyncio
import os
import socket
import uuid
from pathlib import Path
from typing import Any

import pytest
from grpclib.client import Channel
from grpclib.const import Status
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.faults.support import raw_call, rss_kib, serving, status_of
from tests.fixtures.redbox import RedBox
from wlmvk._proto import api

pytestmark = [pytest.mark.slurm]

CANARY = Path(f"/tmp/wlmvk-canary-{uuid.uuid4().hex[:8]}")
SHELLY = [
    f"$(touch {CANARY})",
    f"`touch {CANARY}`",
    f"; touch {CANARY}",
    f"| touch {CANARY}",
    f"&& touch {CANARY} #",
    f"\ntouch {CANARY}\n",
    "../../../../etc/passwd",
    "/etc/shadow",
    "..",
    "a\x00b",
    "%j%x%u%N",
    "--help",
    "-n",
    "x" * 5000,
    "\u202e\ufeff\U0001f600",
    "\n#SBATCH --wrap=id",
]
text = st.one_of(st.text(max_size=64), st.sampled_from(SHELLY))
number = st.one_of(st.integers(min_value=-(2**63), max_value=2**63 - 1), st.sampled_from([0, -1, 2**31]))
impossible_id = st.one_of(
    st.integers(max_value=0, min_value=-(2**63)), st.integers(min_value=2**40, max_value=2**63 - 1)
)
env = st.dictionaries(text, text, max_size=4)
# A script sbatch would accept is held: it never runs, and the fixture cancels it.
script = st.one_of(text, st.just("#!/bin/sh\n#SBATCH --hold\n#SBATCH --cpus-per-task=1\ntrue\n"))

RequestPlan = tuple[str, Any]

requests: st.SearchStrategy[RequestPlan] = st.one_of(
    st.builds(
        lambda *a: ("submit_job", api.SubmitJobRequest(*a)),
        script,
        text,
        text,
        text,
        text,
        text,
        text,
        text,
        env,
    ),
    st.builds(
        lambda image, p, key, name, wd, e, app, binds: (
            "submit_job_container",
            api.SubmitJobContainerRequest(
                image_name=image,
                partition=p,
                idempotency_key=key,
                job_name=name,
                working_dir=wd,
                env=e,
                options=api.SingularityOptions(app=app, binds=binds),
            ),
        ),
        text,
        text,
        text,
        text,
        text,
        env,
        text,
        st.lists(text, max_size=3),
    ),
    st.builds(lambda i: ("cancel_job", api.CancelJobRequest(job_id=i)), impossible_id),
    st.builds(lambda i: ("job_info", api.JobInfoRequest(job_id=i)), number),
    st.builds(lambda i: ("job_steps", api.JobStepsRequest(job_id=i)), number),
    st.builds(lambda ids: ("job_states", api.JobStatesRequest(job_ids=ids)), st.lists(number, max_size=20)),
    st.builds(lambda k: ("find_job", api.FindJobRequest(idempotency_key=k)), text),
    st.builds(lambda p: ("open_file", api.OpenFileRequest(path=p)), text),
    st.builds(
        lambda p: ("tail_file", [api.TailFileRequest(path=p, action=api.TailAction.ReadToEndAndClose)]), text
    ),
    st.builds(
        lambda p, c: ("create_file", [api.CreateFileRequest(path=p), api.CreateFileRequest(content=c)]),
        text,
        st.binary(max_size=64),
    ),
    st.builds(lambda p, t: ("zip", api.ZipRequest(path=p, target=t)), text, text),
    st.builds(lambda s, p: ("unzip", api.UnzipRequest(source=s, path=p)), text, text),
    st.builds(
        lambda p, d: ("stage_in", [api.StageInRequest(path=p), api.StageInRequest(data=d)]),
        text,
        st.binary(max_size=600),
    ),
    st.builds(lambda p: ("stage_out", api.StageOutRequest(path=p)), text),
    st.builds(
        lambda i, c, tty, d: (
            "exec",
            [api.ExecRequest(job_id=i, command=c, tty=tty, width=80, height=24), api.ExecRequest(stdin=d)],
        ),
        impossible_id,
        st.lists(text, max_size=3),
        st.booleans(),
        st.binary(max_size=64),
    ),
    st.builds(lambda p: ("resources", api.ResourcesRequest(partition=p)), text),
    st.just(("partitions", api.PartitionsRequest())),
    st.just(("workload_info", api.WorkloadInfoRequest())),
)

ACCEPTABLE = {
    Status.OK,
    Status.INVALID_ARGUMENT,
    Status.NOT_FOUND,
    Status.FAILED_PRECONDITION,
    Status.UNAVAILABLE,
    Status.ABORTED,
    Status.UNIMPLEMENTED,
}
RPCS = [
    "SubmitJob", "SubmitJobContainer", "JobInfo", "JobSteps", "OpenFile", "TailFile", "CreateFile", "Zip",
    "Unzip", "Resources", "Partitions", "WorkloadInfo", "JobStates", "FindJob", "StageIn", "StageOut",
    "Exec",
]  # fmt: skip


async def _one(socket_path: str, plan: RequestPlan) -> Status:
    rpc, request = plan
    channel = Channel(path=socket_path)
    try:
        method = getattr(api.WorkloadManagerStub(channel), rpc)
        return await status_of(method(request, timeout=30), timeout=40)
    finally:
        channel.close()


def _alive(box: RedBox) -> None:
    assert box.proc is not None
    assert box.proc.poll() is None, f"red-box died:\n{box.log()[-3000:]}"


def test_random_messages_for_every_rpc_get_a_status(fenced_redbox: RedBox) -> None:
    redbox = fenced_redbox
    seen: dict[str, set[Status]] = {}

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(requests)
    def one(plan: RequestPlan) -> None:
        status = asyncio.run(_one(redbox.socket, plan))
        seen.setdefault(plan[0], set()).add(status)
        assert status in ACCEPTABLE, (
            f"{plan[0]} answered {status.name} to {plan[1]!r}:\n{redbox.log()[-2000:]}"
        )

    one()
    _alive(redbox)
    assert asyncio.run(serving(redbox.socket))
    assert not CANARY.exists(), "some input reached a shell"
    assert "Traceback" not in redbox.log()
    assert os.listdir(redbox.work_dir.parent) == [redbox.work_dir.name], "written outside the root"
    assert len(seen) >= 15, f"too few rpcs exercised: {sorted(seen)}"


def test_random_bytes_as_the_message_of_every_rpc(redbox: RedBox) -> None:
    rss_before = rss_kib(redbox.proc.pid)  # type: ignore[union-attr]

    @settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(st.sampled_from(RPCS), st.lists(st.binary(max_size=2048), min_size=0, max_size=3))
    def one(rpc: str, payloads: list[bytes]) -> None:
        status = asyncio.run(raw_call(redbox.socket, rpc, payloads, timeout=30))
        # Random bytes may decode as a message (protobuf is lenient): any answer but a crash.
        assert status in ACCEPTABLE, f"{rpc} answered {status.name} to {payloads!r}"

    one()
    # Known nasties: a truncated varint, a wrong wire type, a length past the end, a deep group.
    # None decodes: each rpc must say so (INVALID_ARGUMENT), not crash (INTERNAL) or time out.
    nasties = [
        b"\x08",
        b"\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",
        b"\x0a\xff\xff\xff\x0f",
        b"\x0b" * 5000,
    ]
    answers = {
        (payload[:12], rpc): asyncio.run(raw_call(redbox.socket, rpc, [payload], timeout=30))
        for payload in nasties
        for rpc in [*RPCS, "CancelJob"]
    }
    wrong = {key: status.name for key, status in answers.items() if status is not Status.INVALID_ARGUMENT}
    assert wrong == {}, "a message that does not decode must be INVALID_ARGUMENT"
    _alive(redbox)
    assert asyncio.run(serving(redbox.socket))
    assert not CANARY.exists()
    grown = rss_kib(redbox.proc.pid) - rss_before  # type: ignore[union-attr]
    assert grown < 40 * 1024, f"red-box grew {grown} KiB under garbage"


def _garbage_on_the_socket(path: str, data: bytes) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as raw:
        raw.settimeout(5)
        raw.connect(path)
        try:
            raw.sendall(data)
            raw.shutdown(socket.SHUT_WR)
            while raw.recv(65536):
                pass
        except OSError:
            pass  # red-box hung up on us: that is an answer too


PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def test_random_bytes_on_the_socket(redbox: RedBox) -> None:
    @settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(st.one_of(st.binary(max_size=4096), st.binary(max_size=4096).map(lambda b: PREFACE + b)))
    def one(data: bytes) -> None:
        _garbage_on_the_socket(redbox.socket, data)

    one()
    _garbage_on_the_socket(redbox.socket, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    _garbage_on_the_socket(
        redbox.socket, PREFACE + b"\x00\xff\xff\x04\x00\x00\x00\x00\x00" + os.urandom(70000)
    )
    _alive(redbox)
    assert asyncio.run(serving(redbox.socket))
