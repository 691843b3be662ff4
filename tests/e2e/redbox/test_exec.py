"""Exec on real Slurm: a command in a running job through red-box (as the job owner), both ways.

``srun --overlap`` runs the command beside the job's batch step: its stdout,
stderr and exit code come back apart (srun's own exit-code line left out);
stdin reaches it; on a terminal (``--pty``) its size is the one asked for and
follows a resize; it gets the environment and directory asked (a bad variable
name is INVALID_ARGUMENT). A job that is not running is refused with its state named;
an original red-box answers UNIMPLEMENTED, raised as Unsupported.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from tests.e2e.redbox.helpers import scancel, script, wait_for
from tests.fixtures.redbox import JOB_OWNER, RedBox
from wlmvk.core.errors import FailedPrecondition, InvalidInput, NotFound, Unsupported
from wlmvk.core.execs import (
    ExecEvent,
    ExecOutput,
    Exited,
    Resize,
    Started,
    StderrData,
    StdinClosed,
    StdinData,
    StdoutData,
    exec_spec,
)
from wlmvk.core.jobs import JobId, JobSpec, JobStatus
from wlmvk.redboxclient.client import RedBoxClient

SLEEP = "sleep 300"


@pytest.fixture
def owner_box(redbox_factory: Callable[..., RedBox]) -> RedBox:
    return redbox_factory(user=JOB_OWNER)


async def running_job(client: RedBoxClient) -> JobId:
    job = await client.submit(JobSpec(script=script("#SBATCH --time=5", SLEEP), partition="debug"))
    await wait_for(client, job, lambda s: s.status is JobStatus.RUNNING)
    return job


async def no_input() -> AsyncIterator[ExecEvent]:
    yield StdinClosed()


async def collect(outputs: AsyncIterator[ExecOutput]) -> tuple[bytes, bytes, int | None]:
    out, err, code = b"", b"", None
    assert await anext(outputs) == Started()
    async for item in outputs:
        match item:
            case StdoutData(data):
                out += data
            case StderrData(data):
                err += data
            case Exited(c):
                code = c
    return out, err, code


async def test_a_command_returns_its_output_apart_and_its_exit_code(owner_box: RedBox) -> None:
    client = RedBoxClient(owner_box.socket)
    job = await running_job(client)
    try:
        spec = exec_spec(job, ["sh", "-c", "echo out; echo err >&2; id -un; exit 3"], tty=False, size=None)
        out, err, code = await collect(client.exec(spec, no_input()))
        assert (out, err, code) == (f"out\n{JOB_OWNER}\n".encode(), b"err\n", 3)
    finally:
        scancel(job)
        await client.close()


async def test_stdin_reaches_the_command_until_it_is_closed(owner_box: RedBox) -> None:
    client = RedBoxClient(owner_box.socket)
    job = await running_job(client)

    async def lines() -> AsyncIterator[ExecEvent]:
        yield StdinData(b"one\n")
        yield StdinData(b"two\n")
        yield StdinClosed()

    try:
        spec = exec_spec(job, ["sh", "-c", "cat; echo done"], tty=False, size=None)
        assert await collect(client.exec(spec, lines())) == (b"one\ntwo\ndone\n", b"", 0)
    finally:
        scancel(job)
        await client.close()


async def test_a_terminal_has_the_size_asked_and_follows_a_resize(owner_box: RedBox) -> None:
    client = RedBoxClient(owner_box.socket)
    job = await running_job(client)
    typed: asyncio.Queue[ExecEvent | None] = asyncio.Queue()

    async def keyboard() -> AsyncIterator[ExecEvent]:
        while (event := await typed.get()) is not None:
            yield event

    try:
        spec = exec_spec(job, ["sh"], tty=True, size=Resize(100, 30))
        outputs = client.exec(spec, keyboard())
        assert await anext(outputs) == Started()
        seen = b""

        async def until(pattern: bytes) -> None:
            nonlocal seen
            while not re.search(pattern, seen):
                item = await anext(outputs)
                assert isinstance(item, StdoutData), f"{item!r} after {seen!r}"
                seen += item.data

        await typed.put(StdinData(b"stty size; tty\n"))
        await until(rb"30 100\r\n/dev/pts/\d+\r\n")
        await typed.put(Resize(120, 40))
        await asyncio.sleep(0.5)  # srun passes the size on when SIGWINCH reaches it
        await typed.put(StdinData(b"stty size; exit 7\n"))
        await until(rb"40 120\r\n")
        rest = [item async for item in outputs]
        assert rest[-1] == Exited(7)
    finally:
        await typed.put(None)
        scancel(job)
        await client.close()


async def test_the_command_runs_with_the_env_and_directory_asked(owner_box: RedBox) -> None:
    client = RedBoxClient(owner_box.socket)
    job = await running_job(client)
    try:
        spec = exec_spec(
            job,
            ["sh", "-c", 'printf "%s|%s|%s\\n" "$GREETING" "$SLURM_JOB_ID" "$(pwd -P)"'],
            tty=False,
            size=None,
            env={"GREETING": "a, b=c"},
            working_dir="/tmp",
        )
        assert await collect(client.exec(spec, no_input())) == (f"a, b=c|{job}|/tmp\n".encode(), b"", 0)
        bad = exec_spec(job, ["true"], tty=False, size=None, env={"BAD-NAME": "x"})
        with pytest.raises(InvalidInput) as refused:
            await collect(client.exec(bad, no_input()))
        assert refused.value.message == "Exec: environment variable name 'BAD-NAME' is not valid"
    finally:
        scancel(job)
        await client.close()


async def test_a_job_that_is_not_running_is_refused_with_its_state(owner_box: RedBox) -> None:
    client = RedBoxClient(owner_box.socket)
    held = await client.submit(JobSpec(script=script("#SBATCH --hold", SLEEP), partition="debug"))
    try:
        spec = exec_spec(held, ["true"], tty=False, size=None)
        with pytest.raises(FailedPrecondition) as refused:
            await collect(client.exec(spec, no_input()))
        assert refused.value.message == (
            f"Exec: exec: job {held} is PENDING (JobHeldUser): a command runs only in a running job"
        )
        with pytest.raises(NotFound, match="job 999999991 is unknown to Slurm and red-box"):
            await collect(client.exec(exec_spec(999_999_991, ["true"], tty=False, size=None), no_input()))
    finally:
        scancel(held)
        await client.close()


async def test_a_job_that_ended_since_its_last_exec_is_refused_with_its_state(owner_box: RedBox) -> None:
    """red-box knows the job from the first exec and starts the second's srun before it has the
    state (execstarts): the refusal is the same, after Started."""
    client = RedBoxClient(owner_box.socket)
    job = await running_job(client)
    try:
        spec = exec_spec(job, ["true"], tty=False, size=None)
        assert await collect(client.exec(spec, no_input())) == (b"", b"", 0)
        scancel(job)
        await wait_for(client, job, lambda s: s.status is JobStatus.CANCELLED)
        with pytest.raises(FailedPrecondition) as refused:
            await collect(client.exec(spec, no_input()))
        assert refused.value.message == (
            f"Exec: exec: job {job} is CANCELLED: a command runs only in a running job"
        )
    finally:
        scancel(job)
        await client.close()


async def test_an_original_red_box_cannot_exec(redbox_factory: Callable[..., RedBox]) -> None:
    box = redbox_factory(original=True)
    client = RedBoxClient(box.socket)
    try:
        with pytest.raises(Unsupported, match="an original red-box"):
            await collect(client.exec(exec_spec(1, ["true"], tty=False, size=None), no_input()))
    finally:
        await client.close()


def srun_pid(job: JobId) -> int:
    """The srun of the one exec step into ``job`` (the oldest process: srun forks a helper)."""
    found = subprocess.run(
        ["pgrep", "-o", "-f", f"^srun --overlap --jobid={job} "], capture_output=True, text=True, check=True
    )
    return int(found.stdout)


async def eventually_logged(box: RedBox, event: str) -> dict[str, Any]:
    for _ in range(300):
        for line in box.log().splitlines():
            if line.startswith("{") and json.loads(line).get("event") == event:
                found: dict[str, Any] = json.loads(line)
                return found
        await asyncio.sleep(0.2)
    raise AssertionError(f"red-box never logged {event!r}:\n{box.log()[-4000:]}")


def steps(job: JobId) -> set[str]:
    out = subprocess.run(
        ["squeue", "-h", "-s", "-j", str(job), "-o", "%i"], capture_output=True, text=True, check=False
    ).stdout
    return {line.strip() for line in out.splitlines() if line.strip() and not line.strip().endswith("batch")}


async def until_steps(job: JobId, wanted: Callable[[set[str]], bool]) -> set[str]:
    for _ in range(300):
        found = steps(job)
        if wanted(found):
            return found
        await asyncio.sleep(0.2)
    raise AssertionError(f"job {job}: steps {steps(job)}")


async def waiting_exec(client: RedBoxClient, job: JobId) -> tuple[AsyncIterator[ExecOutput], str]:
    """An exec of ``sleep 300`` whose client sends nothing, once started; its step."""
    never = asyncio.Event()

    async def open_input() -> AsyncIterator[ExecEvent]:
        await never.wait()
        yield StdinClosed()

    outputs = client.exec(exec_spec(job, ["sleep", "300"], tty=False, size=None), open_input())
    assert await anext(outputs) == Started()
    (step,) = await until_steps(job, lambda found: len(found) == 1)
    return outputs, step


async def test_a_client_that_leaves_ends_the_command(owner_box: RedBox) -> None:
    client = RedBoxClient(owner_box.socket)
    job = await running_job(client)
    try:
        outputs, step = await waiting_exec(client, job)
        await outputs.aclose()  # the kubelet's client went away
        try:
            await until_steps(job, lambda found: not found)
        except AssertionError:
            print(f"step {step} left behind; red-box's log:\n{owner_box.log()[-8000:]}")
            raise
        ended = await eventually_logged(owner_box, "exec ended")
        assert (ended["srun"], ended["step_cancelled"]) == ("terminated", None)
    finally:
        scancel(job)
        await client.close()


async def test_a_client_that_leaves_a_hung_srun_gets_its_step_cancelled(owner_box: RedBox) -> None:
    """srun that does not end at SIGTERM is killed; the step it can no longer end is cancelled."""
    client = RedBoxClient(owner_box.socket)
    job = await running_job(client)
    try:
        outputs, step = await waiting_exec(client, job)
        os.kill(srun_pid(job), signal.SIGSTOP)  # hung: SIGTERM stays pending
        await outputs.aclose()
        assert await until_steps(job, lambda found: not found) == set()
        ended = await eventually_logged(owner_box, "exec ended")
        assert (ended["srun"], ended["step_cancelled"]) == ("killed", step)
    finally:
        scancel(job)
        await client.close()
