"""One start of one host-kubelet container: a process launched by ``launch.py``.

The launcher runs in its own session (so the whole process group can be
signalled, as a container's processes are), with stdin from /dev/null and
stdout/stderr piped into the container's log. Whether the command really
started is read from a close-on-exec pipe: a message there is a StartError.
When the main process exits, whatever it left behind in its group is killed,
as a container's processes die with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wlmvk.core.errors import FailedPrecondition
from wlmvk.core.tasks import guarded
from wlmvk_dev.hostnode import logs as hostlogs

LAUNCHER = Path(__file__).with_name("launch.py")
START_ERROR_EXIT = 128


class StartFailed(FailedPrecondition):
    """The command could not be started (the runtime's StartError)."""

    def __init__(self, message: str, created: list[str]) -> None:
        super().__init__(message)
        self.created = created


@dataclass(frozen=True)
class LaunchSpec:
    argv: list[str]
    env: dict[str, str]
    cwd: str | None = None
    uid: int | None = None
    gid: int | None = None
    groups: list[int] = field(default_factory=list)
    mounts: list[dict[str, Any]] = field(default_factory=list)
    isolation: str = "auto"
    """``auto`` (mount namespace, else symbolic links), ``namespace`` or ``symlink``."""
    keep: list[str] = field(default_factory=list)
    """Host paths the process sees where they are even under its volumes (an image's own files)."""


class Process:
    """A started container process."""

    def __init__(self, proc: asyncio.subprocess.Process, pumps: list[asyncio.Task[None]], created: list[str]):
        self._proc = proc
        self._pumps = pumps
        self.created = created
        """Paths the launcher created as mount points (the kubelet removes them when unused)."""

    @property
    def pid(self) -> int:
        return self._proc.pid

    def signal(self, sig: int) -> None:
        """Signal the container's whole process group."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, sig)

    async def wait(self) -> int:
        """The exit code as a runtime reports it (128 + signal number when killed)."""
        code = await self._proc.wait()
        self.signal(signal.SIGKILL)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(2):
                await asyncio.gather(*self._pumps, return_exceptions=True)
        for pump in self._pumps:
            pump.cancel()
        return 128 - code if code < 0 else code


async def start(spec: LaunchSpec, *, log: hostlogs.LogWriter, scratch: Path) -> Process:
    """Launch the container; ``StartFailed`` when its command cannot run."""
    token = uuid.uuid4().hex
    spec_path, created_path = scratch / f"launch-{token}.json", scratch / f"created-{token}.json"
    read_end, write_end = os.pipe()
    body = {
        "argv": spec.argv,
        "env": spec.env,
        "cwd": spec.cwd,
        "uid": spec.uid,
        "gid": spec.gid,
        "groups": spec.groups,
        "mounts": spec.mounts,
        "isolation": spec.isolation,
        "keep": spec.keep,
        "created": str(created_path),
        "error_fd": write_end,
    }
    fd = os.open(spec_path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(body, f)
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-I",
            "-S",
            str(LAUNCHER),
            str(spec_path),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            pass_fds=(write_end,),
            start_new_session=True,
            env={},
        )
    except OSError as exc:
        os.close(read_end)
        raise StartFailed(f"cannot start the launcher: {exc}", []) from exc
    finally:
        os.close(write_end)
    error = await asyncio.get_running_loop().run_in_executor(None, _read_all, read_end)
    created = _created(created_path)
    assert proc.stdout is not None
    assert proc.stderr is not None
    pumps = [
        guarded(hostlogs.pump(proc.stdout, "stdout", log), name=f"log-pump:{proc.pid}:stdout"),
        guarded(hostlogs.pump(proc.stderr, "stderr", log), name=f"log-pump:{proc.pid}:stderr"),
    ]
    if error:
        await Process(proc, pumps, created).wait()
        raise StartFailed(error.decode("utf-8", "replace"), created)
    return Process(proc, pumps, created)


def _read_all(fd: int) -> bytes:
    chunks = []
    try:
        while chunk := os.read(fd, 4096):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


def _created(path: Path) -> list[str]:
    try:
        found = json.loads(path.read_text())
        path.unlink()
    except (OSError, ValueError):
        return []
    return [str(p) for p in found] if isinstance(found, list) else []
