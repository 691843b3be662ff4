"""Spawning Slurm commands: argv lists, stdin, a timeout, nothing else.

This is the only place in wlmvk that starts a Slurm process. At most
``concurrency`` commands run at once; the rest wait their turn. A command
that hangs (a slurmctld that stopped answering) is killed with its process
group after ``timeout`` seconds and reported as ``Unavailable``, so red-box
keeps serving. A command that is not installed is ``Unavailable`` too.
Children are started and collected by ``spawning`` (cheap, off the loop);
where the kernel lacks pidfds, by asyncio's subprocess support.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import structlog

from wlmvk.core.errors import Unavailable
from wlmvk.redbox.slurm.processes import spawning

_log = structlog.get_logger(__name__)


class NoAnswer(Unavailable):
    """The command was killed at its timeout: what it asked of Slurm may have been done."""


@dataclass(frozen=True)
class Completed:
    """A finished command: its argv, exit status and decoded output."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def message(self) -> str:
        """Slurm's own words for a failure, for the gRPC error message."""
        text = self.stderr.strip() or self.stdout.strip() or f"exit status {self.returncode}"
        return f"{self.argv[0]}: {text}"


class Runner:
    """Runs commands with a default timeout and counts what it spawned (for benchmarks)."""

    def __init__(self, *, timeout: float = 30.0, cwd: str | None = None, concurrency: int = 16) -> None:
        self.timeout = timeout
        self.cwd = cwd
        self.spawned = 0
        # Bounds the commands in flight, so a burst of rpcs cannot flood slurmctld.
        self._slots = asyncio.Semaphore(concurrency)

    async def run(
        self,
        argv: Sequence[str],
        *,
        stdin: bytes | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> Completed:
        async with self._slots:
            return await self._run(argv, stdin=stdin, env=env, timeout=timeout)

    async def _run(
        self,
        argv: Sequence[str],
        *,
        stdin: bytes | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> Completed:
        limit = self.timeout if timeout is None else timeout
        self.spawned += 1
        try:
            if spawning.available():
                code, out, err = await self._by_pidfd(argv, stdin=stdin, env=env, limit=limit)
            else:
                code, out, err = await self._by_asyncio(argv, stdin=stdin, env=env, limit=limit)
        except FileNotFoundError as exc:
            raise Unavailable(f"{argv[0]}: command not found (is Slurm installed?)") from exc
        except TimeoutError as exc:  # an OSError too: caught first
            _log.warning("slurm command timed out", argv=list(argv), timeout=limit)
            raise NoAnswer(f"{argv[0]}: no answer from Slurm within {limit:g} s (killed)") from exc
        except OSError as exc:
            raise Unavailable(f"{argv[0]}: {exc}") from exc
        done = Completed(
            argv=tuple(argv),
            returncode=code,
            stdout=out.decode("utf-8", "replace"),
            stderr=err.decode("utf-8", "replace"),
        )
        if not done.ok:
            _log.debug(
                "slurm command failed", argv=list(argv), rc=done.returncode, stderr=done.stderr.strip()
            )
        return done

    async def _by_pidfd(
        self, argv: Sequence[str], *, stdin: bytes | None, env: Mapping[str, str] | None, limit: float
    ) -> tuple[int, bytes, bytes]:
        child = await spawning.start(argv, stdin=stdin, env=env, cwd=self.cwd)
        try:
            return await asyncio.wait_for(child.output(), limit)
        except (TimeoutError, asyncio.CancelledError):
            await child.kill(grace=5)
            raise

    async def _by_asyncio(
        self, argv: Sequence[str], *, stdin: bytes | None, env: Mapping[str, str] | None, limit: float
    ) -> tuple[int, bytes, bytes]:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            executable=spawning.executable(argv[0], env),
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=self.cwd,
            env=None if env is None else dict(env),
            start_new_session=True,
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(stdin), limit)
        except (TimeoutError, asyncio.CancelledError):
            _kill(proc)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(proc.wait(), 5)
            raise
        assert proc.returncode is not None
        return proc.returncode, out, err


def _kill(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
