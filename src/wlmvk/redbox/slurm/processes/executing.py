"""A command run inside a running job (``srun --overlap``), streamed both ways.

``Execution`` starts srun with the command line of ``overlap.srun_argv`` as
red-box's user (the job owner), takes input events (``send``) and yields the
output (``outputs``), ending with ``Exited``. Without a terminal srun's
stdin, stdout and stderr are pipes; with one (``--pty``) srun runs on the
slave side of a local pseudo-terminal, which is its controlling terminal, so
a size set on the master (TIOCSWINSZ) reaches srun as SIGWINCH and srun
passes it to the job's terminal; srun's own stderr stays a pipe, apart from
the command's output. Output is read only as fast as the caller takes it
(a queue of ``QUEUE`` chunks), so a slow client slows the command rather
than red-box's memory.

``stop()`` ends srun: SIGTERM (srun forwards it to the step's task and ends
the step), then SIGKILL to its process group after ``GRACE`` seconds, and
says which it took. A killed srun cannot end its step: Slurm keeps it (and
its command) until it notices srun is gone, so the caller cancels the step,
named ``self.name``, through Slurm.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import os
import signal
import struct
import subprocess
import termios
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Literal

import structlog

from wlmvk.core.errors import Unavailable
from wlmvk.core.execs import (
    ExecEvent,
    ExecOutput,
    ExecSpec,
    Exited,
    Resize,
    StderrData,
    StdinClosed,
    StdinData,
    StdoutData,
)
from wlmvk.redbox.slurm.processes import spawning
from wlmvk.redbox.slurm.processes.overlap import ExitLineFilter, srun_argv

_log = structlog.get_logger(__name__)

QUEUE = 16
CHUNK = 65536
GRACE = 5.0
"""Seconds srun has to end its step at SIGTERM: it asks slurmctld, which a busy machine
keeps waiting for over 2 s (a CI run's 3 workers on 2 cores did)."""
_EOT = b"\x04"  # a terminal's end of input (VEOF in canonical mode)

Ending = Literal["exited", "terminated", "killed"]
"""How srun ended: by itself, at SIGTERM, or at SIGKILL (its step may outlive it)."""


def _take_terminal() -> None:  # pragma: no cover - runs in the child, before exec
    # The child is a new session's leader (start_new_session): the pseudo-terminal on its
    # stdin becomes its controlling terminal, whose size changes srun hears about.
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def _set_size(fd: int, size: Resize) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", size.height, size.width, 0, 0))


class Execution:
    """One srun; ``start`` it, feed it with ``send``, read ``outputs``, ``stop`` it in any case."""

    def __init__(
        self, spec: ExecSpec, *, working_dir: str = "", env: Mapping[str, str] | None = None
    ) -> None:
        """``env``: srun's whole environment (None: red-box's own)."""
        self.spec = spec
        self.name = f"wlmvk-exec-{uuid.uuid4().hex[:12]}"
        """The step's name in Slurm."""
        self.argv = srun_argv(spec, working_dir=working_dir, name=self.name)
        self.env = env
        self._proc: subprocess.Popen[bytes] | None = None
        self._input = -1  # srun's stdin: a pipe, or the terminal's master
        self._terminal = -1
        self._outputs: asyncio.Queue[ExecOutput | None] = asyncio.Queue(QUEUE)
        # srun 22.05 reports "pty: accept failure: Interrupted system call" and stops passing sizes
        # on when a SIGWINCH comes while it waits for the job's terminal to connect: a size that
        # comes before the command's first output is kept until that output.
        self._connected = False
        self._early_size: Resize | None = None
        self._readers: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            self._proc = await loop.run_in_executor(None, self._spawn)
        except OSError as exc:
            raise Unavailable(f"exec: cannot run srun: {exc.strerror or exc}") from exc
        proc = self._proc
        assert proc.stderr is not None
        stderr = proc.stderr.fileno()
        if self.spec.tty:
            self._readers.append(asyncio.create_task(self._pump(self._terminal, StdoutData)))
        else:
            assert proc.stdout is not None
            self._readers.append(asyncio.create_task(self._pump(proc.stdout.fileno(), StdoutData)))
        self._readers.append(asyncio.create_task(self._pump(stderr, StderrData, ExitLineFilter())))

    def _spawn(self) -> subprocess.Popen[bytes]:
        executable = spawning.executable(self.argv[0], None)
        if not self.spec.tty:
            proc = subprocess.Popen(
                self.argv,
                executable=executable,
                env=self.env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
            assert proc.stdin is not None
            assert proc.stdout is not None
            self._input = proc.stdin.fileno()
            for pipe in (proc.stdin, proc.stdout):
                os.set_blocking(pipe.fileno(), False)
        else:
            master, slave = os.openpty()
            try:
                _set_size(master, self.spec.size or Resize(80, 24))
                proc = subprocess.Popen(
                    self.argv,
                    executable=executable,
                    env=self.env,
                    stdin=slave,
                    stdout=slave,
                    stderr=subprocess.PIPE,
                    start_new_session=True,
                    preexec_fn=_take_terminal,
                )
            except BaseException:
                os.close(master)
                raise
            finally:
                os.close(slave)
            os.set_blocking(master, False)
            self._input = self._terminal = master
        assert proc.stderr is not None
        os.set_blocking(proc.stderr.fileno(), False)
        return proc

    async def _pump(
        self, fd: int, kind: Callable[[bytes], ExecOutput], cut: ExitLineFilter | None = None
    ) -> None:
        async for data in _chunks(fd):
            if fd == self._terminal and not self._connected:
                self._connected = True
                if self._early_size is not None:
                    _set_size(fd, self._early_size)
            kept = cut.feed(data) if cut is not None else data
            if kept:
                await self._outputs.put(kind(kept))
        rest = cut.end() if cut is not None else b""
        if rest:
            await self._outputs.put(kind(rest))
        await self._outputs.put(None)

    async def outputs(self) -> AsyncIterator[ExecOutput]:
        """The command's output as it comes, then its ``Exited``."""
        open_readers = len(self._readers)
        while open_readers:
            item = await self._outputs.get()
            if item is None:
                open_readers -= 1
            else:
                yield item
        yield Exited(await self._exit_code())

    async def _exit_code(self) -> int:
        assert self._proc is not None
        code = await asyncio.get_running_loop().run_in_executor(None, self._proc.wait)
        return 128 - code if code < 0 else code

    async def send(self, event: ExecEvent) -> None:
        match event:
            case StdinData(data):
                await _write(self._input, data)
            case StdinClosed():
                if self.spec.tty:
                    await _write(self._input, _EOT)
                elif self._proc is not None and self._proc.stdin is not None:
                    self._proc.stdin.close()
            case Resize():
                if self._terminal < 0 or event.width <= 0 or event.height <= 0:
                    return
                if self._connected:
                    _set_size(self._terminal, event)
                else:
                    self._early_size = event

    async def stop(self) -> Ending:
        """End srun if it still runs, and release its descriptors; how srun ended."""
        proc = self._proc
        ending: Ending = "exited"
        if proc is not None and proc.poll() is None:
            ending = "terminated"
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(asyncio.shield(self._exit_code()), GRACE)
            except TimeoutError:
                ending = "killed"
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
                await self._exit_code()
        for reader in self._readers:
            reader.cancel()
        await asyncio.gather(*self._readers, return_exceptions=True)
        if proc is not None:
            for pipe in (proc.stdin, proc.stdout, proc.stderr):
                if pipe is not None:
                    with contextlib.suppress(OSError):
                        pipe.close()
        if self._terminal >= 0:
            os.close(self._terminal)
            self._terminal = -1
        return ending


async def _wait(fd: int, *, write: bool) -> None:
    loop = asyncio.get_running_loop()
    ready = loop.create_future()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    (loop.add_writer if write else loop.add_reader)(fd, wake)
    try:
        await ready
    finally:
        (loop.remove_writer if write else loop.remove_reader)(fd)


async def _chunks(fd: int) -> AsyncIterator[bytes]:
    """What ``fd`` gives until its end (EIO on a terminal's master once the slave side is gone)."""
    while True:
        try:
            data = os.read(fd, CHUNK)
        except BlockingIOError:
            await _wait(fd, write=False)
            continue
        except OSError as exc:
            if exc.errno != errno.EIO:
                _log.warning("exec output ended by an error", error=str(exc))
            return
        if not data:
            return
        yield data


async def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            await _wait(fd, write=True)
        except (BrokenPipeError, ValueError, OSError) as exc:
            # The command closed its stdin or ended: its input is no longer wanted.
            _log.debug("exec input dropped", error=str(exc))
            return
