"""An exec session's values: what a command in a running job is asked to run and what flows.

``kubectl exec`` reaches a job through three hops (kubelet transport ->
``Backend.exec`` -> red-box's Exec rpc -> ``srun --overlap``); each hop
speaks these values. Input: ``StdinData``, ``StdinClosed``, ``Resize``.
Output: ``Started`` first (what comes before it is a refusal: the job does
not run, the command cannot start), then ``StdoutData``, ``StderrData`` and,
last, ``Exited``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from wlmvk.core.errors import InvalidInput
from wlmvk.core.jobs import JobId

MAX_COMMAND_BYTES = 128 * 1024
"""A command line longer than this is refused: srun passes it through the job's environment.
The container's environment is bounded the same."""

MAX_PATH_BYTES = 4096
"""PATH_MAX: a longer working directory is no path."""


@dataclass(frozen=True)
class StdinData:
    data: bytes


@dataclass(frozen=True)
class StdinClosed:
    """The client closed its stdin: the command reads end-of-file."""


@dataclass(frozen=True)
class Resize:
    width: int
    height: int


ExecEvent = StdinData | StdinClosed | Resize


@dataclass(frozen=True)
class Started:
    """The command started: from here on a failure ends a session the client has open."""


@dataclass(frozen=True)
class StdoutData:
    data: bytes


@dataclass(frozen=True)
class StderrData:
    data: bytes


@dataclass(frozen=True)
class Exited:
    """The command ended: its exit code (128 + n when signal n ended it)."""

    code: int


ExecOutput = Started | StdoutData | StderrData | Exited


@dataclass(frozen=True)
class ExecSpec:
    job_id: JobId
    command: tuple[str, ...]
    tty: bool = False
    size: Resize | None = None
    environment: tuple[tuple[str, str], ...] = ()
    """The container's variables (name, value), set over red-box's own as the job script sets them."""
    working_dir: str = ""
    """The container's working directory; a relative one is under the job's; empty: the job's."""


def exec_spec(
    job_id: int,
    command: Sequence[str],
    *,
    tty: bool,
    size: Resize | None,
    environment: Sequence[tuple[str, str]] = (),
    working_dir: str = "",
) -> ExecSpec:
    """A checked exec request: a command of non-empty words without NUL, of a sane length.

    The environment's names are non-empty, without ``=`` or NUL, and its values without
    NUL (what ``execve`` can pass); it is bounded as the command is.
    """
    if job_id <= 0:
        raise InvalidInput(f"exec: job id {job_id} is not a Slurm job id")
    words = tuple(command)
    if not words or not words[0]:
        raise InvalidInput("exec: the command is empty")
    if any("\x00" in word for word in words):
        raise InvalidInput("exec: a command word contains a NUL byte")
    if sum(len(word.encode()) + 1 for word in words) > MAX_COMMAND_BYTES:
        raise InvalidInput(f"exec: the command is longer than {MAX_COMMAND_BYTES} bytes")
    if size is not None and (size.width < 0 or size.height < 0):
        raise InvalidInput(f"exec: terminal size {size.width}x{size.height} is negative")
    variables = tuple((str(name), str(value)) for name, value in environment)
    for name, value in variables:
        if not name or "=" in name or "\x00" in name:
            raise InvalidInput(f"exec: environment variable name {name!r} is not one execve can set")
        if "\x00" in value:
            raise InvalidInput(f"exec: environment variable {name} has a NUL byte in its value")
    if sum(len(name.encode()) + len(value.encode()) + 2 for name, value in variables) > MAX_COMMAND_BYTES:
        raise InvalidInput(f"exec: the environment is longer than {MAX_COMMAND_BYTES} bytes")
    if "\x00" in working_dir or len(working_dir.encode()) > MAX_PATH_BYTES:
        raise InvalidInput(f"exec: working directory {working_dir[:80]!r} is not a path")
    return ExecSpec(
        job_id=JobId(job_id),
        command=words,
        tty=tty,
        size=size,
        environment=variables,
        working_dir=working_dir,
    )
