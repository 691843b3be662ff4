"""kubectl exec, independent of its transport: the request, the events, the final status.

A transport (WebSocket ``v4``/``v5.channel.k8s.io``, SPDY/3.1) parses the
kubelet's query into an ``ExecRequest``, turns the client's frames into
``StdinData``/``StdinClosed``/``Resize`` events and offers them through an
``ExecChannel``; the exec handler (which knows Slurm) reads those events,
sends the command's output back and ends with ``finish(exit_status(...))``.

The final status is the ``metav1.Status`` the kubelet writes on the error
channel (``ServeExec`` in the kubelet's cri streaming ``remotecommand``):
``Success``, or ``Failure`` with reason ``NonZeroExitCode`` and one cause of
type ``ExitCode`` whose message is the code, which client-go turns into the
exit code kubectl exits with. Anything else is a failure whose message
kubectl prints.

Errors: a handler that raises ``core.errors`` is answered by the transport
with a Failure status carrying the message (the session is already
upgraded). What kubectl should hear as an HTTP error before any upgrade (no
such pod: 404; a job that is not running: 400) is raised by the server's
``Handlers.exec_check``, which runs before the transport is chosen.

Pure: no I/O here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from wlmvk.core.errors import InvalidInput
from wlmvk.core.execs import ExecEvent, Resize, StdinClosed, StdinData

# Kubelet's remotecommand constants (k8s.io/apimachinery/pkg/util/remotecommand).
NON_ZERO_EXIT_CODE_REASON = "NonZeroExitCode"
EXIT_CODE_CAUSE_TYPE = "ExitCode"

_TRUE = frozenset({"1", "true"})
# The kubelet's names (kube-apiserver sends input/output/error=1), and the API's (stdin/stdout/stderr).
_FLAGS = {"stdin": "input", "stdout": "output", "stderr": "error", "tty": "tty"}

__all__ = [
    "ExecChannel",
    "ExecEvent",
    "ExecHandler",
    "ExecRequest",
    "Resize",
    "StdinClosed",
    "StdinData",
    "exit_status",
    "parse_exec_query",
]


@dataclass(frozen=True)
class ExecRequest:
    namespace: str
    pod: str
    container: str
    command: tuple[str, ...]
    stdin: bool
    stdout: bool
    stderr: bool
    tty: bool


class ExecChannel(Protocol):
    async def receive(self) -> StdinData | StdinClosed | Resize | None:
        """The client's next event; None once the client is gone."""

    async def send_stdout(self, data: bytes) -> None: ...

    async def send_stderr(self, data: bytes) -> None: ...

    async def finish(self, status: dict[str, Any]) -> None:
        """Write the final status on the error channel and close the session."""


ExecHandler = Callable[[ExecRequest, ExecChannel], Awaitable[None]]


def parse_exec_query(
    namespace: str, pod: str, container: str, query: Mapping[str, Sequence[str]]
) -> ExecRequest:
    """The kubelet's exec query: ``command`` repeated; flags ``input``, ``output``, ``error`` (as
    kube-apiserver names them to a kubelet, or ``stdin``, ``stdout``, ``stderr``) and ``tty``, on
    when "1" or "true"."""
    command = tuple(query.get("command", ()))
    if not command or not command[0]:
        raise InvalidInput("exec needs a command: no 'command' query parameter was given")
    if any("\x00" in word for word in command):
        raise InvalidInput("exec command words cannot contain NUL bytes")
    flags = {name: _flag(query, name, alias) for name, alias in _FLAGS.items()}
    if not (flags["stdin"] or flags["stdout"] or flags["stderr"]):
        raise InvalidInput("you must specify at least one of stdin, stdout, stderr")
    return ExecRequest(
        namespace=namespace,
        pod=pod,
        container=container,
        command=command,
        stdin=flags["stdin"],
        stdout=flags["stdout"],
        stderr=flags["stderr"],
        tty=flags["tty"],
    )


def _flag(query: Mapping[str, Sequence[str]], name: str, alias: str) -> bool:
    values = [*query.get(alias, ()), *query.get(name, ())]
    return any(value.lower() in _TRUE for value in values)


def exit_status(code: int | None, message: str = "") -> dict[str, Any]:
    """The status the kubelet writes on the error channel when the command ends.

    ``code`` 0 is Success; another code is the NonZeroExitCode failure kubectl
    exits with; None (the command never ran or was lost) is a failure carrying
    ``message``, which kubectl prints as the error.
    """
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    if code is None:
        return {
            "metadata": {},
            "status": "Failure",
            "message": message or "error executing command in container",
            "reason": "InternalError",
            "code": 500,
        }
    return {
        "metadata": {},
        "status": "Failure",
        "message": message or f"command terminated with non-zero exit code: exit status {code}",
        "reason": NON_ZERO_EXIT_CODE_REASON,
        "details": {"causes": [{"reason": EXIT_CODE_CAUSE_TYPE, "message": str(code)}]},
    }
