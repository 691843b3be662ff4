"""One child process on the event loop, cheaply: vfork/exec, three pipes and a pidfd.

Every submission spawns an ``sbatch``, so this is on red-box's hottest
path. asyncio's own subprocess support builds a transport, a protocol and
three pipe transports per child, and on Python 3.11 starts a thread per
child to wait for its exit; profiled, that was a third of red-box's event
loop at full submission rate. Here the child is started by
``subprocess.Popen`` (vfork/exec, no Python in the child), its pipes are
plain non-blocking file descriptors read by loop readers, and its exit is
a readable pidfd (Linux >= 5.3). Where pidfds are missing, ``available()``
is false and the runner uses asyncio's subprocess support instead.

``start()`` runs the ``Popen`` itself on a spawner thread: vfork suspends
the calling thread until the child has exec'd (Python drops the GIL
meanwhile), which on a busy machine took a sixth of the loop's time when
the loop made that call; the loop now serves other calls while a child
starts.

The caller owns the timeout: a ``Child`` is awaited through ``output()``,
and ``kill()`` ends the child's whole process group (it is started in a
session of its own) and stops reading. A caller cancelled while its child
is being started does not leave the child behind: it is killed once started.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import errno
import functools
import os
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from typing import IO


def available() -> bool:
    return _pidfds()


@functools.cache
def _pidfds() -> bool:
    if not hasattr(os, "pidfd_open"):
        return False
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:
        return False  # an older kernel: ENOSYS
    return True


@functools.lru_cache(maxsize=64)
def _lookup(command: str, path: str) -> str:
    found = shutil.which(command, path=path)
    if found is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), command)
    return found


def executable(command: str, env: Mapping[str, str] | None) -> str:
    """The file ``command`` names on PATH, looked up once (a miss is looked up again next time).

    Left to exec, the child tries every directory of PATH in turn on every spawn.
    """
    if os.sep in command:
        return command
    return _lookup(command, (os.environ if env is None else env).get("PATH", os.defpath))


_SPAWNER = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="spawner")
"""Two threads: one child's exec on a slow disk does not hold up the next."""


def _launch(
    argv: Sequence[str], stdin: bytes, env: Mapping[str, str] | None, cwd: str | None
) -> tuple[subprocess.Popen[bytes], int, int]:
    """On a spawner thread: the started child, its pidfd and how much of ``stdin`` fit the pipe."""
    proc = subprocess.Popen(
        list(argv),
        executable=executable(argv[0], env),
        stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=None if env is None else dict(env),
        start_new_session=True,
    )
    try:
        pidfd = os.pidfd_open(proc.pid)
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                os.set_blocking(pipe.fileno(), False)
        written = 0
        if proc.stdin is not None:
            # A small script fits the pipe at once; the loop writes the rest as the child reads.
            with contextlib.suppress(BlockingIOError, BrokenPipeError):
                written = os.write(proc.stdin.fileno(), stdin)
            if written == len(stdin):
                # Closed here too: the close wakes the child, and on a busy machine the
                # woken child may take the CPU from whoever closed.
                proc.stdin.close()
    except BaseException:
        _abandon(proc)
        raise
    return proc, pidfd, written


def _abandon(proc: subprocess.Popen[bytes]) -> None:
    """Kill a child nobody will read, on the thread that started it, and reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    proc.communicate()


async def start(
    argv: Sequence[str],
    *,
    stdin: bytes | None,
    env: Mapping[str, str] | None,
    cwd: str | None,
) -> Child:
    """Start ``argv`` on a spawner thread; the loop collects it (see above)."""
    loop = asyncio.get_running_loop()
    data = stdin or b""
    launched = loop.run_in_executor(_SPAWNER, _launch, argv, data, env, cwd)
    try:
        proc, pidfd, written = await asyncio.shield(launched)
    except asyncio.CancelledError:
        launched.add_done_callback(_kill_started)
        raise
    return Child(proc, pidfd, memoryview(data)[written:])


def _kill_started(launched: asyncio.Future[tuple[subprocess.Popen[bytes], int, int]]) -> None:
    if launched.cancelled() or launched.exception() is not None:
        return
    proc, pidfd, _ = launched.result()
    os.close(pidfd)
    _SPAWNER.submit(_abandon, proc)


class Child:
    """A started child: its output collected by the loop, its exit seen through a pidfd."""

    def __init__(self, proc: subprocess.Popen[bytes], pidfd: int, rest: memoryview) -> None:
        self._loop = asyncio.get_running_loop()
        self._proc = proc
        self.pid = proc.pid
        self._exited: asyncio.Future[int] = self._loop.create_future()
        self._streams: asyncio.Future[None] = self._loop.create_future()
        self._pidfd = pidfd
        self._loop.add_reader(self._pidfd, self._reap)
        # The pipes stay owned by their file objects (closed through them, never twice).
        pipes = [p for p in (proc.stdout, proc.stderr) if p is not None]
        self._files: dict[int, IO[bytes]] = {p.fileno(): p for p in pipes}
        self._chunks: dict[int, list[bytes]] = {fd: [] for fd in self._files}
        for fd in self._chunks:
            self._loop.add_reader(fd, self._readable, fd)
        self._input = rest
        self._open = set(self._files)
        if proc.stdin is not None and not proc.stdin.closed:
            fd = proc.stdin.fileno()
            self._files[fd] = proc.stdin
            self._open.add(fd)
            self._loop.add_writer(fd, self._writable, fd)

    def _readable(self, fd: int) -> None:
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            self._chunks[fd].append(data)
        else:
            self._done_with(fd, reader=True)

    def _writable(self, fd: int) -> None:
        if fd not in self._open:
            return
        try:
            while self._input:
                written = os.write(fd, self._input)
                self._input = self._input[written:]
        except BlockingIOError:
            return
        except OSError:
            pass  # the child closed its stdin without reading all: it answers for itself
        self._done_with(fd, reader=False)

    def _done_with(self, fd: int, *, reader: bool) -> None:
        if fd not in self._open:
            return
        self._open.discard(fd)
        if reader:
            self._loop.remove_reader(fd)
        else:
            self._loop.remove_writer(fd)
        with contextlib.suppress(OSError):
            self._files[fd].close()
        if not self._open and not self._streams.done():
            self._streams.set_result(None)

    def _reap(self) -> None:
        try:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            pid, status = self.pid, 255 << 8  # reaped elsewhere: asyncio's watchers answer 255 too
        if pid == 0:
            return
        self._loop.remove_reader(self._pidfd)
        os.close(self._pidfd)
        code = os.waitstatus_to_exitcode(status)
        self._proc.returncode = code  # Popen must not wait for it again
        if not self._exited.done():
            self._exited.set_result(code)

    async def output(self) -> tuple[int, bytes, bytes]:
        """Exit status, stdout and stderr, once the child has exited and closed its output."""
        await self._streams
        code = await asyncio.shield(self._exited)
        out, err = (b"".join(chunks) for chunks in self._chunks.values())
        return code, out, err

    async def kill(self, grace: float) -> None:
        """SIGKILL the child's process group, stop reading, and wait up to ``grace`` s for its exit."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            self._proc.kill()
        for fd in list(self._open):
            self._done_with(fd, reader=fd in self._chunks)
        with contextlib.suppress(TimeoutError):
            # A child stuck in the kernel is reaped by its pidfd reader whenever it dies.
            await asyncio.wait_for(asyncio.shield(self._exited), grace)
