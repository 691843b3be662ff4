"""The kubelet's exec handler with a scripted backend and channel: lookups, relaying, leaving."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from wlmvk.core.errors import FailedPrecondition, NotFound
from wlmvk.core.execs import (
    ExecEvent,
    ExecOutput,
    ExecSpec,
    Exited,
    Resize,
    Started,
    StderrData,
    StdinClosed,
    StdinData,
    StdoutData,
)
from wlmvk.core.jobs import JobId, JobState, JobStatus
from wlmvk.kubelet.api.exec.executing import Executor, Target
from wlmvk.kubelet.api.exec.requests import ExecRequest, exit_status


def request(*, stdin: bool = False, tty: bool = False, container: str = "main") -> ExecRequest:
    return ExecRequest("ns", "p", container, ("sh",), stdin, True, not tty, tty)


@dataclass
class Channel:
    incoming: asyncio.Queue[ExecEvent | None] = field(default_factory=asyncio.Queue)
    sent: list[tuple[str, Any]] = field(default_factory=list)

    async def receive(self) -> ExecEvent | None:
        return await self.incoming.get()

    async def send_stdout(self, data: bytes) -> None:
        self.sent.append(("stdout", data))

    async def send_stderr(self, data: bytes) -> None:
        self.sent.append(("stderr", data))

    async def finish(self, status: dict[str, Any]) -> None:
        self.sent.append(("status", status))


@dataclass
class Backend:
    """Answers an exec with ``outputs``, recording the spec and the input it was given."""

    outputs: list[ExecOutput]
    specs: list[ExecSpec] = field(default_factory=list)
    inputs: list[ExecEvent] = field(default_factory=list)
    closed: asyncio.Event = field(default_factory=asyncio.Event)
    hold: bool = False

    def exec(self, spec: ExecSpec, events: AsyncIterator[ExecEvent]) -> AsyncIterator[ExecOutput]:
        self.specs.append(spec)
        return self._run(events)

    async def _run(self, events: AsyncIterator[ExecEvent]) -> AsyncIterator[ExecOutput]:
        async def read() -> None:
            async for event in events:
                self.inputs.append(event)

        reader = asyncio.create_task(read())
        try:
            yield self.outputs[0]
            await asyncio.sleep(0.05)  # the input sent meanwhile arrives
            for output in self.outputs[1:]:
                yield output
            if self.hold:
                await asyncio.Event().wait()
        finally:
            reader.cancel()
            self.closed.set()


RUNNING = JobState(job_id=JobId(7), status=JobStatus.RUNNING)


def executor(backend: Backend, target: Target | None) -> Executor:
    return Executor(lookup=lambda namespace, pod: target, backend=backend)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("target", "error", "message"),
    [
        (None, NotFound, 'pod "p" not found on this kubelet'),
        (Target("other", JobId(7), RUNNING), NotFound, 'container "main" is not valid for pod "p"'),
        (
            Target("main", None, None),
            FailedPrecondition,
            'container "main" in pod "p" is waiting to start: the Slurm job is not submitted yet',
        ),
        (
            Target("main", JobId(7), JobState(job_id=JobId(7), status=JobStatus.PENDING, reason="Priority")),
            FailedPrecondition,
            'container "main" in pod "p" is not running: Slurm job 7 is PENDING (Priority)',
        ),
        (
            Target("main", JobId(7), JobState(job_id=JobId(7), status=JobStatus.COMPLETED, reason="None")),
            FailedPrecondition,
            'container "main" in pod "p" is not running: Slurm job 7 ended COMPLETED',
        ),
    ],
)
async def test_refusals_name_what_is_wrong(target: Target | None, error: type, message: str) -> None:
    with pytest.raises(error) as refused:
        await executor(Backend([]), target).check(request())
    assert refused.value.message == message


async def test_output_is_relayed_and_the_exit_code_is_the_status() -> None:
    backend = Backend([Started(), StdoutData(b"out"), StderrData(b"err"), Exited(3)])
    channel = Channel()
    await executor(backend, Target("main", JobId(7), RUNNING)).run(request(), channel)  # type: ignore[arg-type]
    assert channel.sent == [("stdout", b"out"), ("stderr", b"err"), ("status", exit_status(3))]
    assert backend.specs == [ExecSpec(job_id=JobId(7), command=("sh",), tty=False, size=None)]
    assert backend.inputs == [StdinClosed()], "no stdin asked: its end at once"


async def test_the_command_gets_the_containers_environment_and_directory() -> None:
    backend = Backend([Started(), Exited(0)])
    target = Target("main", JobId(7), RUNNING, env={"GREETING": "hi"}, working_dir="data")
    await executor(backend, target).run(request(), Channel())  # type: ignore[arg-type]
    assert backend.specs == [
        ExecSpec(job_id=JobId(7), command=("sh",), env={"GREETING": "hi"}, working_dir="data")
    ]


async def test_a_terminal_starts_at_the_clients_first_size_and_has_one_output() -> None:
    backend = Backend([Started(), StdoutData(b"$ "), StderrData(b"srun: error"), Exited(0)])
    channel = Channel()
    for event in (StdinData(b"early"), Resize(120, 40), StdinData(b"ls\n")):
        channel.incoming.put_nowait(event)
    target = Target("main", JobId(7), RUNNING)
    await executor(backend, target).run(request(stdin=True, tty=True), channel)  # type: ignore[arg-type]
    assert backend.specs[0].size == Resize(120, 40)
    assert backend.inputs == [StdinData(b"early"), StdinData(b"ls\n")]
    assert channel.sent == [("stdout", b"$ "), ("stdout", b"srun: error"), ("status", exit_status(0))]


async def test_a_client_that_leaves_ends_the_command_without_a_status() -> None:
    backend = Backend([Started(), StdoutData(b"tick")], hold=True)
    channel = Channel()
    target = Target("main", JobId(7), RUNNING)
    running = asyncio.create_task(executor(backend, target).run(request(stdin=True), channel))  # type: ignore[arg-type]
    await asyncio.sleep(0.2)
    channel.incoming.put_nowait(None)
    await asyncio.wait_for(running, 5)
    assert backend.closed.is_set()
    assert channel.sent == [("stdout", b"tick")]
