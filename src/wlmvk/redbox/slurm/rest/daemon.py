"""red-box's own slurmrestd: started as red-box's user on a private socket, restarted when it dies.

slurmrestd with ``rest_auth/local`` serves only clients of its own uid (it
checks each connection's peer credentials) and refuses to run as root or
as SlurmUser, so red-box, which runs as the job owner, runs one for itself:
``slurmrestd -a rest_auth/local -s openapi/<version> -t 2 unix:<socket>``
(``-s openapi/slurmctld -d data_parser/<version>`` from 23.02 on),
the socket in a directory only red-box's user may enter. No slurm.conf
change is needed. It dies with red-box (``setpriv --pdeathsig``).

The supervisor (``run``) keeps it up: when it exits, ``client`` is None
(callers use the CLI meanwhile), and it is started again at once when it
had come up and served, else after a back-off that doubles up to RESTART_MAX. What it
printed last is logged when it exits. ``recycle`` ends the current process
on purpose: a request that got no answer must not be acted on later by a
slurmrestd that was only slow.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
import time
from pathlib import Path

import structlog

from wlmvk.redbox.slurm.rest import fields as restfields
from wlmvk.redbox.slurm.rest.connection import Client

_log = structlog.get_logger(__name__)

THREADS = 2
"""slurmrestd's worker threads (``-t``): 1 is refused; 2 used less CPU than the default 20 at full rate."""

CONNECTIONS = 16
"""Requests red-box keeps on their way to slurmrestd at once, each on a kept-alive connection of
its own. With 2 worker threads slurmrestd still gains from more waiting: while one answer goes
back through red-box, the next request is already there. A kubelet's burst (SubmitJobs of 64,
2 calls in flight) reached 0.82x and 0.84x a bare slurmrestd's jobs/s with 8, 0.90x and 0.94x
with 16, as many as the bare client's 16 in flight (bench/redbox_submit.py, 3 rounds each, two
runs per setting, 2026-12-07, docs/raw/redbox-restd-connections-ab.txt); one SubmitJob per
call at 16 in flight stayed at 0.72-0.74x."""

READY_TIMEOUT = 10.0
"""Seconds a starting slurmrestd has to accept connections."""

RESTART_MIN = 0.5
RESTART_MAX = 30.0
"""Back-off between starts that fail (slurmrestd exits or never accepts a connection), doubled
while they keep failing; one that served is started again at once."""

LIVENESS_PERIOD = 2.0
"""Seconds between liveness looks at a serving slurmrestd."""

LIVENESS_TIMEOUT = 15.0
"""Seconds without any answer, a look's included, after which a slurmrestd is hung and replaced.
Its workers wait on slurmctld up to MessageTimeout per request (a stopped slurmctld: each then
answers 5004), so this is longer than Slurm's default MessageTimeout (10 s); red-box sets it to
the cluster's MessageTimeout + LIVENESS_SLACK once read."""

LIVENESS_SLACK = 5.0

LIVENESS_TARGET = "/wlmvk/liveness"
"""A path no plugin serves: slurmrestd answers 404 itself, without asking slurmctld."""

_TAIL = 4096


def _dies_with_us(argv: list[str]) -> list[str]:
    # setpriv (util-linux) sets the parent-death signal and execs: slurmrestd gets SIGTERM when
    # red-box dies, even by SIGKILL. Without setpriv it would outlive a killed red-box.
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM", "--", *argv] if setpriv else argv


async def offered_versions(binary: str = "slurmrestd") -> list[str]:
    """The plugins that name OpenAPI versions: ``openapi/v0.0.38`` from ``-s list`` (22.05),
    ``data_parser/v0.0.42`` from ``-d list`` (23.02 on, beside ``openapi/slurmctld``)."""
    names = await _listed(binary, "-s")
    if "openapi/slurmctld" in names:
        names += await _listed(binary, "-d")
    return names


async def _listed(binary: str, option: str) -> list[str]:
    # slurmrestd prints the plugin names on stderr, one a line.
    proc = await asyncio.create_subprocess_exec(
        binary, option, "list", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await proc.communicate()
    names = []
    for line in (out + err).decode(errors="replace").splitlines():
        word = line.removeprefix("slurmrestd:").strip()
        if word.startswith(("openapi/", "data_parser/")):
            names.append(word)
    return names


class Restd:
    """One supervised slurmrestd; ``client`` reaches it while it serves, else is None."""

    def __init__(
        self,
        *,
        version: str,
        binary: str = "slurmrestd",
        connections: int = CONNECTIONS,
        timeout: float = 30.0,
    ):
        self.version = version
        self.binary = binary
        self.connections = connections
        self.timeout = timeout
        self.liveness_timeout = LIVENESS_TIMEOUT
        self.client: Client | None = None
        self._directory = Path(tempfile.mkdtemp(prefix="wlmvk-restd-"))  # mode 0700
        self.socket = str(self._directory / "slurmrestd.sock")
        self._proc: asyncio.subprocess.Process | None = None
        self._process_of: dict[Client, asyncio.subprocess.Process] = {}
        self._up = asyncio.Event()

    @classmethod
    async def find(cls, binary: str = "slurmrestd", **kwargs: object) -> Restd | None:
        """A supervisor for the installed slurmrestd, None when it is missing or speaks no version we do.

        Also None for root: slurmrestd refuses to run as root (red-box runs as the job owner).
        """
        path = shutil.which(binary)
        if path is None or os.geteuid() == 0:
            return None
        version = restfields.choose_version(await offered_versions(path))
        if version is None:
            return None
        return cls(version=version, binary=path, **kwargs)  # type: ignore[arg-type]

    async def run(self) -> None:
        """Keep slurmrestd up until cancelled; it is stopped then."""
        pause = 0.0
        try:
            while True:
                served = await self._serve_once()
                # One that came up and served is started again at once (the CLI carries the
                # jobs meanwhile); one that fails to come up waits longer each time.
                pause = 0.0 if served else min(max(pause * 2, RESTART_MIN), RESTART_MAX)
                _log.info("slurmrestd restarting", after=pause)
                await asyncio.sleep(pause)
        finally:
            await self._end()
            shutil.rmtree(self._directory, ignore_errors=True)

    async def ready(self, timeout: float) -> bool:
        """Wait until slurmrestd serves, at most ``timeout`` seconds."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._up.wait(), timeout)
        return self._up.is_set()

    async def recycle(self, client: Client) -> None:
        """End the slurmrestd ``client`` belongs to, if it still runs, and wait until it is gone.

        Several requests to one hung slurmrestd may ask at once: each returns only once it
        has exited. One that exited already (the supervisor may have started the next) is gone.
        """
        proc = self._process_of.get(client)
        if proc is None:
            return
        if self.client is client:
            self._down()
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        await asyncio.shield(proc.wait())

    async def _serve_once(self) -> bool:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.socket)
        argv = [self.binary, "-a", "rest_auth/local", *restfields.plugin_options(self.version)]
        argv += ["-t", str(THREADS), f"unix:{self.socket}"]
        proc = self._proc = await asyncio.create_subprocess_exec(
            *_dies_with_us(argv),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        tail = bytearray()
        drain = asyncio.ensure_future(_keep_tail(proc, tail))
        served = False
        watch: asyncio.Future[None] | None = None
        try:
            if await self._accepting(proc):
                served = True
                self.client = Client(self.socket, connections=self.connections, timeout=self.timeout)
                self._process_of[self.client] = proc
                self._up.set()
                _log.info("slurmrestd serving", pid=proc.pid, version=self.version, socket=self.socket)
                watch = asyncio.ensure_future(self._watch(proc, self.client))
            code = await proc.wait()
        finally:
            if watch is not None:
                watch.cancel()
            self._down()
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await asyncio.shield(proc.wait())
            self._process_of = {c: p for c, p in self._process_of.items() if p is not proc}
            await asyncio.shield(drain)
        _log.warning(
            "slurmrestd exited", pid=proc.pid, code=code, printed=tail.decode(errors="replace")[-1000:]
        )
        return served

    async def _watch(self, proc: asyncio.subprocess.Process, client: Client) -> None:
        """Replace a hung slurmrestd: stopped (SIGSTOP, seen in /proc at once), or no answer to a
        look, nor to any request, within ``liveness_timeout``. Requests it held are then Lost."""
        while proc.returncode is None:
            await asyncio.sleep(LIVENESS_PERIOD)
            if stopped(proc.pid):
                why = "stopped (a signal)"
            else:
                started = time.monotonic()
                if await client.look(LIVENESS_TARGET, self.liveness_timeout) or client.answered_at > started:
                    continue
                why = f"no answer within {self.liveness_timeout:g} s"
            _log.warning("slurmrestd hung: replaced", pid=proc.pid, reason=why)
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            return

    async def _accepting(self, proc: asyncio.subprocess.Process) -> bool:
        deadline = time.monotonic() + READY_TIMEOUT
        while proc.returncode is None and time.monotonic() < deadline:
            try:
                _, writer = await asyncio.open_unix_connection(self.socket)
            except OSError:
                await asyncio.sleep(0.02)  # startup only: slurmrestd loads its plugins
                continue
            writer.close()
            return True
        if proc.returncode is None:
            _log.warning("slurmrestd did not accept connections in time", timeout=READY_TIMEOUT)
            proc.kill()
        return False

    def _down(self) -> None:
        self._up.clear()
        if self.client is not None:
            self.client.close()
            self.client = None

    async def _end(self) -> None:
        proc = self._proc
        self._down()
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), 5)
            if proc.returncode is None:
                proc.kill()
                await proc.wait()


def stopped(pid: int) -> bool:
    """Whether process ``pid`` is stopped (state T or t in /proc/PID/stat)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2 : stat.rindex(")") + 3] in ("T", "t")


async def _keep_tail(proc: asyncio.subprocess.Process, tail: bytearray) -> None:
    # slurmrestd logs two lines per request: only the last few KB are kept, to log at its exit.
    assert proc.stderr is not None
    while chunk := await proc.stderr.read(65536):
        tail += chunk
        del tail[:-_TAIL]
