"""``red-box`` / ``wlmvk red-box``: startup, serving, graceful shutdown (its flags: ``flags``).

Startup checks what can be checked before serving: the YAML overrides (an
unknown key, a bad value or a partition Slurm does not have is an error
naming the key and its line), the socket (a stale one is replaced, a live
one is refused: two red-boxes on one socket would split the clients), the
state directory. Then the service and the standard health service listen
on the Unix socket (mode 0600) and, when asked, on TCP with mutual TLS
only (a client certificate of ``--tls-client-ca`` is required at the
handshake; without a client CA red-box refuses to start; the host defaults
to loopback). A
background recorder looks at the jobs red-box follows every few seconds,
more often than Slurm's MinJobAge, so their end is recorded even without
accounting. SIGTERM/SIGINT stop it gracefully: health turns NOT_SERVING,
the listeners close, open streams get a few seconds, the socket is removed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import ssl
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from wlmvk.core import logging as wlog
from wlmvk.core import loop as event_loop
from wlmvk.core import runtimes
from wlmvk.core.errors import InvalidInput, Unavailable, WlmvkError
from wlmvk.core.tasks import guarded, stop
from wlmvk.redbox import config as cfg
from wlmvk.redbox import tallies
from wlmvk.redbox.dialects import ORIGINAL, WLMVK
from wlmvk.redbox.files import Confinement
from wlmvk.redbox.flags import parser, settings_from, tcp_address
from wlmvk.redbox.health import Health
from wlmvk.redbox.jobs import Jobs
from wlmvk.redbox.listening import Listener
from wlmvk.redbox.service import Service
from wlmvk.redbox.slurm.cli.commands import Slurm
from wlmvk.redbox.slurm.processes.runner import Runner
from wlmvk.redbox.slurm.rest import fields as restfields
from wlmvk.redbox.slurm.rest.backend import RestSlurm
from wlmvk.redbox.slurm.rest.daemon import LIVENESS_SLACK, Restd
from wlmvk.redbox.store import Store

_log = structlog.get_logger("wlmvk.redbox")

SHUTDOWN_GRACE = 5.0

READY_WAIT = 15.0
"""Seconds startup waits for red-box's slurmrestd to serve."""


def prepare_socket(path: str) -> None:
    """Create the parent directory; replace a stale socket; refuse a live one or a non-socket.

    A directory red-box creates is 0700. One that anybody may write to without
    the sticky bit is refused: another user could swap the socket for their own.
    """
    target = Path(path)
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    parent_mode = target.parent.stat().st_mode
    if parent_mode & stat.S_IWOTH and not parent_mode & stat.S_ISVTX:
        raise InvalidInput(
            f"{target.parent} is writable by anybody (mode {stat.S_IMODE(parent_mode):o}): "
            "another user could replace the socket; use a directory only red-box's user can write to"
        )
    try:
        mode = target.lstat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise InvalidInput(f"{path} exists and is not a socket; refusing to replace it")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(2)
    try:
        probe.connect(path)
    except (ConnectionRefusedError, FileNotFoundError):
        target.unlink(missing_ok=True)
        _log.info("replaced a stale socket", socket=path)
        return
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot probe the existing socket: {exc}") from exc
    finally:
        probe.close()
    raise InvalidInput(f"{path}: another red-box is already listening there; stop it first")


def tls_context(cert: str, key: str, client_ca: str) -> ssl.SSLContext:
    """Mutual TLS: the server's certificate, and client certificates required and verified."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    context.load_verify_locations(client_ca)
    context.verify_mode = ssl.CERT_REQUIRED
    context.set_alpn_protocols(["h2"])
    return context


async def recorder(jobs: Jobs, interval: float) -> None:
    """See every unfinished job at least every ``interval`` seconds so its end is recorded.

    A job a client looked at since (the kubelet asks for all of its jobs every tick) is
    not asked about again: Slurm answers each tick once, not once more for red-box.
    """
    while True:
        await asyncio.sleep(min(1.0, interval / 2))
        try:
            await jobs.poll_unfinished(max_age=interval)
        except Unavailable as exc:
            _log.warning("could not poll Slurm", error=exc.message)
        except Exception:
            # Whatever broke one look must not end the recording of every job for good.
            _log.exception("recorder poll crashed; polling again", interval=interval)


@dataclass
class Assembly:
    """red-box's parts, wired: what ``serve`` listens with (benchmarks build one in-process)."""

    runner: Runner
    store: Store
    jobs: Jobs
    service: Service
    health: Health
    restd: Restd | None = None
    restd_task: asyncio.Task[None] | None = None


async def slurm_for(settings: cfg.Settings, runner: Runner) -> tuple[Slurm, Restd | None]:
    """The CLI, or the CLI with submission and cancel through a slurmrestd (``--slurm-api``)."""
    if settings.slurm_api == "cli":
        return Slurm(runner), None
    restd = await Restd.find(timeout=settings.slurm_timeout)
    if restd is None:
        if settings.slurm_api == "rest":
            raise InvalidInput(
                "--slurm-api rest: no slurmrestd on PATH that offers an OpenAPI version red-box speaks "
                f"({', '.join(restfields.VERSIONS)})"
            )
        _log.info("submitting through sbatch: no usable slurmrestd", api=settings.slurm_api)
        return Slurm(runner), None
    return RestSlurm(runner, restd=restd), restd


async def build(settings: cfg.Settings) -> Assembly:
    """Check the config against Slurm, open the state store and wire the service.

    A slurmrestd is started here (and kept up by a guarded task); the caller stops it
    with ``stop_restd``.
    """
    overrides = cfg.load_overrides(settings.config)
    if settings.runtime_path:
        # Ahead of PATH for red-box's lookups and for every job, which inherits this environment.
        os.environ["PATH"] = runtimes.search_path(settings.runtime_path, os.environ.get("PATH", ""))
    runner = Runner(timeout=settings.slurm_timeout, cwd=str(settings.work_dir))
    slurm, restd = await slurm_for(settings, runner)
    if overrides:
        cfg.check_partitions(overrides, await slurm.partition_names(), settings.config)
    store = Store(settings.state_dir)
    store.open()
    confinement = Confinement(settings.work_dir, settings.roots)
    jobs = Jobs(
        slurm=slurm,
        store=store,
        confinement=confinement,
        max_script_bytes=settings.max_script_bytes,
        allowed=settings.allowed,
    )
    service = Service(
        slurm=slurm,
        jobs=jobs,
        confinement=confinement,
        overrides=overrides,
        container_runtime=settings.container_runtime,
        image_dir=settings.image_dir,
        dialect=ORIGINAL if settings.original_api_only else WLMVK,
    )
    parts = Assembly(runner=runner, store=store, jobs=jobs, service=service, health=Health(), restd=restd)
    if restd is not None:
        with contextlib.suppress(WlmvkError):  # slurmctld not answering: the default meanwhile
            restd.liveness_timeout = await slurm.message_timeout() + LIVENESS_SLACK
        parts.restd_task = guarded(restd.run(), name="slurmrestd supervisor")
        if not await restd.ready(READY_WAIT):
            if settings.slurm_api == "rest":
                await stop(parts.restd_task)
                raise Unavailable(f"--slurm-api rest: slurmrestd did not serve within {READY_WAIT:g} s")
            _log.warning("slurmrestd not serving yet: sbatch meanwhile", waited=READY_WAIT)
    return parts


async def stop_restd(parts: Assembly) -> None:
    if parts.restd_task is not None:
        await stop(parts.restd_task)


async def serve(settings: cfg.Settings, *, ready: asyncio.Event | None = None) -> None:
    prepare_socket(settings.socket)
    parts = await build(settings)
    store, jobs, service, health = parts.store, parts.jobs, parts.service, parts.health
    handlers: list[Any] = [service] if settings.original_api_only else [service, health]
    servers = [Listener(handlers)]
    old_umask = os.umask(0o177)
    try:
        await servers[0].start(path=settings.socket)
    finally:
        os.umask(old_umask)
    os.chmod(settings.socket, 0o600)
    if settings.tcp:
        host, port = tcp_address(settings.tcp)
        tcp = Listener(handlers)
        context = tls_context(settings.tls_cert, settings.tls_key, settings.tls_client_ca)
        await tcp.start(host, port, ssl=context)
        servers.append(tcp)
    # A tenant's red-box reads its keys before its pods come, not while they all come at once.
    tasks = [guarded(jobs.warm_index(), name="key index at start")]
    if settings.poll_interval > 0:
        tasks.append(guarded(recorder(jobs, settings.poll_interval), name="red-box recorder"))
    _log.info(
        "red-box serving",
        socket=settings.socket,
        tcp=settings.tcp or None,
        work_dir=str(settings.work_dir),
        roots=[str(r) for r in settings.roots],
        original_api_only=settings.original_api_only,
        slurm_api="rest" if parts.restd is not None else "cli",
        uid=os.geteuid(),
    )
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    watch = tallies.GcWatch()
    if settings.stats_file:
        watch.start()
        stats = tallies.StatsFile(Path(settings.stats_file), jobs.index_scans, store.fsyncs, watch)
        loop.add_signal_handler(signal.SIGUSR1, stats.write)
    if ready is not None:
        ready.set()
    try:
        await stopping.wait()
    finally:
        _log.info("red-box stopping")
        health.set_serving(False)
        # No new connections (the socket file goes), let unary calls in progress
        # finish within the grace period, then cancel what is left (tails, stages).
        with contextlib.suppress(FileNotFoundError):
            os.unlink(settings.socket)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(service.inflight.idle(), SHUTDOWN_GRACE)
        for server in servers:
            server.close()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(*(s.wait_closed() for s in servers)), SHUTDOWN_GRACE)
        await stop(*tasks)
        await stop_restd(parts)
        store.close()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1):
            loop.remove_signal_handler(sig)
        watch.stop()
        _log.info("red-box stopped")


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    wlog.configure(args.log_level, cache=True)
    try:
        settings = settings_from(args)
        event_loop.run(serve(settings))
    except WlmvkError as exc:
        print(f"red-box: {exc.message}", file=sys.stderr)
        return 2 if isinstance(exc, InvalidInput) else 1
    except OSError as exc:
        print(f"red-box: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0
