"""The kubelet's exec handler: a pod's exec request run in its Slurm job, over any transport.

``Executor.check`` finds the pod's job before any upgrade, so that what
kubectl asks of a pod that is not there (404) or of a job that does not run
(400, the job's state named) is answered as an HTTP error. ``Executor.run``
is the ``ExecHandler``: it starts the command through ``Backend.exec``
(red-box's ``srun --overlap``) and relays both ways until the command's exit
code, which it writes as the final status. Input is read from the client
only once the command has started; a client that goes away ends the command.

Only the job id the kubelet verified (the job's key matched the pod) is used:
a forged ``wlm.sylabs.io/job-id`` annotation reaches no job. The command gets
the container's env and workingDir (``pods.environment.exec_context``), as
``kubectl exec`` into a container does.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field

import structlog

from wlmvk.core.backend import Backend
from wlmvk.core.errors import FailedPrecondition, NotFound, Unsupported
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
from wlmvk.core.jobs import JobId, JobState, JobStatus
from wlmvk.kubelet.api.exec.requests import ExecChannel, ExecRequest, exit_status

_log = structlog.get_logger(__name__)

FIRST_SIZE_WAIT = 2.0
"""Seconds a terminal session waits for the client's first size before the command starts."""


@dataclass(frozen=True)
class Target:
    """What the kubelet knows of a pod an exec names."""

    container: str
    job_id: JobId | None
    state: JobState | None
    env: Mapping[str, str] = field(default_factory=dict)
    """The container's environment, which the command gets."""
    working_dir: str = ""
    """The container's working directory ("" = the job's), where the command starts."""
    backend: Backend | None = None
    """The red-box holding the job (a tenant user's: the command runs as that user); None: the
    executor's own."""


Lookup = Callable[[str, str], Target | None]
"""(namespace, pod) -> the pod's target, None when the kubelet runs no such pod."""


class Executor:
    def __init__(self, *, lookup: Lookup, backend: Backend) -> None:
        self._lookup = lookup
        self._backend = backend

    async def check(self, request: ExecRequest) -> None:
        """Raise the error kubectl should see before a session starts (nothing when it may)."""
        self._target(request)

    def _target(self, request: ExecRequest) -> tuple[JobId, Target]:
        """The pod's job, verified running as far as the kubelet knows, and the pod's target."""
        target = self._lookup(request.namespace, request.pod)
        if target is None:
            raise NotFound(f'pod "{request.pod}" not found on this kubelet')
        if request.container and request.container != target.container:
            raise NotFound(f'container "{request.container}" is not valid for pod "{request.pod}"')
        where = f'container "{target.container}" in pod "{request.pod}"'
        if target.job_id is None:
            # No job shown to be the pod's yet: not submitted, or a claimed id not yet verified.
            raise FailedPrecondition(f"{where} is waiting to start: the Slurm job is not submitted yet")
        state = target.state
        if state is not None and state.status is not JobStatus.RUNNING:
            why = f" ({state.reason})" if state.reason and state.reason != "None" else ""
            if state.status.terminal or state.status is JobStatus.NOT_FOUND:
                raise FailedPrecondition(
                    f"{where} is not running: Slurm job {target.job_id} ended {state.status.value}{why}"
                )
            raise FailedPrecondition(
                f"{where} is not running: Slurm job {target.job_id} is {state.status.value}{why}"
            )
        return target.job_id, target

    async def run(self, request: ExecRequest, channel: ExecChannel) -> None:
        """The ``ExecHandler``: the command in the pod's job, relayed until its exit code."""
        job_id, target = self._target(request)
        size, early = await _first_size(channel) if request.tty else (None, [])
        spec = exec_spec(
            job_id,
            request.command,
            tty=request.tty,
            size=size,
            env=target.env,
            working_dir=target.working_dir,
        )
        started = asyncio.Event()
        gone = asyncio.Event()
        backend = target.backend or self._backend
        outputs = backend.exec(spec, _events(request, channel, started, gone, early))
        log = _log.bind(pod=f"{request.namespace}/{request.pod}", job_id=job_id)
        try:
            first = await anext(outputs)
        except Unsupported as exc:
            raise Unsupported(f'cannot exec into pod "{request.pod}": {exc.message}') from exc
        if not isinstance(first, Started):
            raise FailedPrecondition(f"exec: red-box answered {first!r} before the command started")
        started.set()
        log.info("exec started", command=list(request.command), tty=request.tty)
        relay = asyncio.create_task(_relay(outputs, request, channel))
        leaving = asyncio.create_task(gone.wait())
        try:
            await asyncio.wait({relay, leaving}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            leaving.cancel()
            if not relay.done():
                log.info("exec client gone: ending the command")
                relay.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await relay
            aclose = getattr(outputs, "aclose", None)
            if aclose is not None:
                await aclose()
        if relay.cancelled():
            return
        code = relay.result()
        log.info("exec ended", exit_code=code)
        await channel.finish(exit_status(code))


async def _first_size(channel: ExecChannel) -> tuple[Resize | None, list[ExecEvent | None]]:
    """The terminal's size, which kubectl sends first, and what came before it.

    The command starts on a terminal of that size: a size changed just after
    the start is one srun may miss.
    """
    early: list[ExecEvent | None] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + FIRST_SIZE_WAIT
    while (left := deadline - loop.time()) > 0:
        try:
            event = await asyncio.wait_for(channel.receive(), left)
        except TimeoutError:
            break
        if isinstance(event, Resize):
            return event, early
        early.append(event)
        if event is None:
            break
    return None, early


async def _events(
    request: ExecRequest,
    channel: ExecChannel,
    started: asyncio.Event,
    gone: asyncio.Event,
    early: list[ExecEvent | None],
) -> AsyncIterator[ExecEvent]:
    """The client's input, once the command runs; without stdin, its end at once."""
    await started.wait()
    if not request.stdin:
        yield StdinClosed()
    pending = list(early)
    while True:
        event = pending.pop(0) if pending else await channel.receive()
        if event is None:
            gone.set()
            return
        if isinstance(event, StdinData | StdinClosed) and not request.stdin:
            continue
        yield event


async def _relay(outputs: AsyncIterator[ExecOutput], request: ExecRequest, channel: ExecChannel) -> int:
    """The command's output to the client; its exit code."""
    async for output in outputs:
        match output:
            case StdoutData(data):
                if request.stdout:
                    await channel.send_stdout(data)
            case StderrData(data):
                if request.stderr and not request.tty:
                    await channel.send_stderr(data)
                elif request.tty and request.stdout:
                    # A terminal has one output: srun's own words join it.
                    await channel.send_stdout(data)
            case Exited(code):
                return code
    raise FailedPrecondition("exec: the command's output ended without an exit code")
