"""Shared plumbing of the red-box benchmarks: an in-process red-box on a Unix socket.

The benchmarks build red-box's real parts (``wlmvk.redbox.app.build``) and
serve them with grpclib in the benchmark's own process, so that the number
of Slurm commands red-box spawned can be read off its runner. Clients talk
to it through the real socket with the real ``RedBoxClient``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from grpclib.server import Server

from wlmvk.core.errors import Unavailable
from wlmvk.redbox import config as cfg
from wlmvk.redbox.app import Assembly, build
from wlmvk.redboxclient.client import RedBoxClient
from wlmvk_dev import localslurm

localslurm.use()  # the local Slurm of dev/scripts/slurm-local, for every Slurm command from here
JOBS_ROOT = localslurm.jobs_root()


@contextlib.asynccontextmanager
async def red_box() -> AsyncIterator[tuple[Assembly, RedBoxClient]]:
    home = Path(tempfile.mkdtemp(prefix="rbbench", dir="/tmp"))
    work = Path(tempfile.mkdtemp(prefix="bench-", dir=JOBS_ROOT))
    settings = cfg.Settings(
        socket=str(home / "rb.sock"), work_dir=work, state_dir=home / "state", poll_interval=0
    )
    parts = await build(settings)
    server = Server([parts.service, parts.health])
    await server.start(path=settings.socket)
    client = RedBoxClient(settings.socket, timeout=120)
    try:
        yield parts, client
    finally:
        await client.close()
        server.close()
        await server.wait_closed()
        parts.store.close()


def scancel(job_ids: Sequence[int]) -> None:
    for start in range(0, len(job_ids), 500):
        batch = [str(j) for j in job_ids[start : start + 500]]
        subprocess.run(["scancel", *batch], capture_output=True, check=False)


async def sbatch_held(count: int, *, parallel: int = 4) -> list[int]:
    """Submit ``count`` held one-line jobs directly (setup, not measured)."""
    limit = asyncio.Semaphore(parallel)

    async def one() -> int:
        async with limit:
            proc = await asyncio.create_subprocess_exec(
                "sbatch",
                "--parsable",
                "--hold",
                "-J",
                "bench",
                "-o",
                "/dev/null",
                "--wrap",
                "true",
                stdout=asyncio.subprocess.PIPE,
            )
            out, _ = await proc.communicate()
            return int(out.decode().split(";")[0])

    return list(await asyncio.gather(*(one() for _ in range(count))))


def _spawn(argv: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(argv)


async def wait_serving(client: RedBoxClient) -> None:
    """Until red-box answers (20 s at most: then the next call says why)."""
    for _ in range(200):
        try:
            await client.partitions()
            return
        except Unavailable:
            await asyncio.sleep(0.1)


JOB_OWNER = 1000
"""The uid a red-box with its own slurmrestd runs as (slurmrestd refuses root), as deployed."""


def as_job_owner(argv: list[str], *directories: Path) -> list[str]:
    """``argv`` run as the job owner (uid JOB_OWNER, through ``setpriv``, which execs: the pid
    is the program's), the ``directories`` it writes in given to that user."""
    for directory in directories:
        os.chown(directory, JOB_OWNER, JOB_OWNER)
    return ["setpriv", f"--reuid={JOB_OWNER}", f"--regid={JOB_OWNER}", "--init-groups", *argv]


@contextlib.asynccontextmanager
async def red_box_process(
    work: Path | None = None,
    pids: list[int] | None = None,
    *,
    args: Sequence[str] = (),
    owner: bool = False,
) -> AsyncIterator[RedBoxClient]:
    """A red-box in its own process, as deployed (working root ``work``); the client in this one.

    Its process id is appended to ``pids`` when given (for CPU readings). With ``owner`` it
    runs as the job owner (uid JOB_OWNER, through ``setpriv``, which execs: the pid is
    red-box's), as it must to run its own slurmrestd (``args`` ``--slurm-api rest``)."""
    home = Path(tempfile.mkdtemp(prefix="rbbench", dir="/tmp"))
    work = work or Path(tempfile.mkdtemp(prefix="bench-", dir=JOBS_ROOT))
    socket = str(home / "rb.sock")
    argv = [sys.executable, "-m", "wlmvk.redbox", "--socket", socket, "--work-dir", str(work)]
    argv += ["--state-dir", str(home / "state"), "--log-level", "warning", "--poll-interval", "0", *args]
    if owner:
        argv = as_job_owner(argv, home, work)
    proc = _spawn(argv)
    if pids is not None:
        pids.append(proc.pid)
    client = RedBoxClient(socket, timeout=120)
    try:
        await wait_serving(client)
        yield client
    finally:
        await client.close()
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
