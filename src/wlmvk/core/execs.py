"""An exec session's values: what a command in a running job is asked to run and what flows.

``kubectl exec`` reaches a job through three hops (kubelet transport ->
``Backend.exec`` -> red-box's Exec rpc -> ``srun --overlap``); each hop
speaks these values. Input: ``StdinData``, ``StdinClosed``, ``Resize``.
Output: ``Started`` first (what comes before it is a refusal: the job does
not run, the command cannot start), then ``StdoutData``, ``StderrData`` and,
last, ``Exited``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from wlmvk.core.errors import InvalidInput
from wlmvk.core.jobs import JobId

MAX_COMMAND_BYTES = 128 * 1024
"""A command line longer than this is refused: srun passes it through the job's environment."""

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
    env: Mapping[str, str] = field(default_factory=dict)
    """The container's variables, set over red-box's own as for a job (``redbox.scripts.check_env``)."""
    working_dir: str = ""
    """The container's working directory; a relative one is under the job's; empty: the job's."""


def exec_spec(
    job_id: int,
    command: Sequence[str],
    *,
    tty: bool,
    size: Resize | None,
    env: Mapping[str, str] | None = None,
    working_dir: str = "",
) -> ExecSpec:
    """A checked exec request: a command of non-empty words without NUL, of a sane length.

    ``env`` is checked where it is used, by the rules of a job's (``redbox.scripts.check_env``).
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
    if "\x00" in working_dir or len(working_dir.encode()) > MAX_PATH_BYTES:
        raise InvalidInput(f"exec: working directory {working_dir[:80]!r} is not a path")
    return ExecSpec(
        job_id=JobId(job_id),
        command=words,
        tty=tty,
        size=size,
        env=dict(env or {}),
        working_dir=working_dir,
    )
