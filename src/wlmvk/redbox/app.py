"""``red-box`` / ``wlmvk red-box``: flags, startup, serving, graceful shutdown.

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

import argparse
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
from grpclib.server import Server

from wlmvk.core import logging as wlog
from wlmvk.core import loop as event_loop
from wlmvk.core import runtimes
from wlmvk.core.errors import InvalidInput, Unavailable, WlmvkError
from wlmvk.core.tasks import guarded, stop
from wlmvk.core.tenancy import Allowed
from wlmvk.redbox import config as cfg
from wlmvk.redbox.dialects import ORIGINAL, WLMVK
from wlmvk.redbox.files import Confinement
from wlmvk.redbox.health import Health
from wlmvk.redbox.jobs import Jobs
from wlmvk.redbox.service import Service
from wlmvk.redbox.slurm import restfields
from wlmvk.redbox.slurm.commands import Slurm
from wlmvk.redbox.slurm.restapi import RestSlurm
from wlmvk.redbox.slurm.restd import LIVENESS_SLACK, Restd
from wlmvk.redbox.slurm.runner import Runner
from wlmvk.redbox.store import Store

_log = structlog.get_logger("wlmvk.redbox")

SHUTDOWN_GRACE = 5.0

READY_WAIT = 15.0
"""Seconds startup waits for red-box's slurmrestd to serve."""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="red-box",
        description="The WLM gRPC daemon: serves the WorkloadManager API over Slurm's command line tools.",
        allow_abbrev=False,
    )
    p.add_argument(
        "-socket",
        "--socket",
        default=cfg.DEFAULT_SOCKET,
        help="Unix socket to listen on (created mode 0600 with its parent directory; default %(default)s)",
    )
    p.add_argument(
        "-config",
        "--config",
        default="",
        help="YAML file of per-partition overrides: nodes, cpu_per_node, mem_per_node (MB), "
        "wall_time (e.g. 10h), additional_features [{name, version, quantity}]",
    )
    p.add_argument(
        "--work-dir",
        default="",
        help="red-box's working root: jobs run here by default and relative paths resolve against it "
        "(default: the current directory)",
    )
    p.add_argument(
        "--allow-root",
        action="append",
        default=[],
        metavar="PATH",
        help="another directory the file rpcs and job working directories may use (repeatable)",
    )
    p.add_argument(
        "--state-dir",
        default="",
        help="where red-box records job states and idempotency keys across restarts "
        "(default: ~/.local/state/wlmvk-red-box)",
    )
    p.add_argument(
        "--original-api-only",
        action="store_true",
        help="serve only the original red-box rpcs; wlmvk's additions answer UNIMPLEMENTED",
    )
    p.add_argument(
        "--tcp",
        default="",
        metavar="[HOST:]PORT",
        help="also listen on TCP with mutual TLS (requires --tls-cert, --tls-key and --tls-client-ca); "
        "HOST defaults to 127.0.0.1: give 0.0.0.0 or an address to be reached from other hosts",
    )
    p.add_argument("--tls-cert", default="", help="PEM certificate chain for the TCP listener")
    p.add_argument("--tls-key", default="", help="PEM private key for the TCP listener")
    p.add_argument(
        "--tls-client-ca",
        default="",
        help="PEM bundle of the CA(s) whose client certificates the TCP listener accepts; "
        "a client without one is refused at the handshake",
    )
    p.add_argument(
        "--slurm-timeout",
        type=float,
        default=30.0,
        help="seconds before a hanging Slurm command is killed (UNAVAILABLE; default %(default)s)",
    )
    p.add_argument(
        "--max-script-bytes",
        type=int,
        default=1024 * 1024,
        help="largest batch script accepted (default %(default)s)",
    )
    p.add_argument(
        "--poll-interval",
        type=float,
        default=8.0,
        help="the longest an unfinished job goes without a look in Slurm (a client's JobStates counts), "
        "so its end is recorded; keep it below Slurm's MinJobAge; 0 = off (default %(default)s)",
    )
    p.add_argument(
        "--container-runtime",
        choices=runtimes.SETTINGS,
        default=runtimes.AUTO,
        help="what runs WlmJob images: auto takes the first installed of "
        f"{', '.join(runtimes.AUTO_ORDER)}; none refuses container jobs (default %(default)s)",
    )
    p.add_argument(
        "--runtime-path",
        default="",
        metavar="DIR[:DIR...]",
        help="directories searched for the container runtime ahead of PATH, by red-box and by its jobs "
        "(a plain pod's image line), e.g. a built Apptainer's bin (scripts/apptainer-local path); "
        "default: PATH alone",
    )
    p.add_argument(
        "--image-dir",
        default="",
        metavar="DIR",
        help="a directory of SIF files on the Slurm side that plain pods' images name: image NAME[:TAG] "
        "runs DIR/NAME[_TAG].sif ('/' and ':' become '_') through Apptainer/Singularity, and an image "
        "with no file there fails its pod (ImageNotFound); default: images are pulled (docker://)",
    )
    p.add_argument(
        "--slurm-api",
        choices=cfg.SLURM_APIS,
        default="auto",
        help="how jobs are submitted and cancelled: cli runs sbatch and scancel; rest runs red-box's own "
        "slurmrestd (as red-box's user, on a private socket; restarted when it dies, sbatch used "
        "meanwhile) and refuses to start without it; auto is rest when slurmrestd is installed and "
        "speaks an OpenAPI version red-box knows, else cli (default %(default)s)",
    )
    for kind, what in (("accounts", "Slurm accounts"), ("qos", "QoS"), ("partitions", "partitions")):
        p.add_argument(
            f"--allowed-{kind}",
            default="",
            metavar="A,B",
            help=f"the {what} this red-box's jobs may name (comma-separated; default: any): a job naming"
            " another in its script, partition or SBATCH_* environment is refused (docs/tenancy.md)",
        )
    p.add_argument("--log-level", default="info", help="debug, info, warning or error (default %(default)s)")
    return p


def _names(value: str) -> tuple[str, ...]:
    return tuple(name for name in (part.strip() for part in value.split(",")) if name)


def settings_from(args: argparse.Namespace) -> cfg.Settings:
    work_dir = Path(os.path.realpath(args.work_dir or os.getcwd()))
    if not work_dir.is_dir():
        raise InvalidInput(f"--work-dir {work_dir}: no such directory")
    state_dir = Path(args.state_dir) if args.state_dir else cfg.Settings().state_dir
    if args.tcp:
        missing = [
            flag
            for flag, value in (
                ("--tls-cert", args.tls_cert),
                ("--tls-key", args.tls_key),
                ("--tls-client-ca", args.tls_client_ca),
            )
            if not value
        ]
        if missing:
            # Whoever reaches the port runs jobs and reads files as the job owner:
            # only clients with a certificate of a CA we were told to trust may.
            raise InvalidInput(f"--tcp needs {', '.join(missing)}: the TCP listener accepts only mutual TLS")
        tcp_address(args.tcp)
    if args.image_dir and not os.path.isdir(args.image_dir):
        raise InvalidInput(f"--image-dir {args.image_dir}: no such directory")
    for directory in filter(None, args.runtime_path.split(":")):
        if not os.path.isdir(directory):
            raise InvalidInput(f"--runtime-path {directory}: no such directory")
    return cfg.Settings(
        socket=args.socket,
        config=args.config,
        work_dir=work_dir,
        allow_roots=tuple(Path(os.path.realpath(r)) for r in args.allow_root),
        state_dir=state_dir,
        original_api_only=args.original_api_only,
        tcp=args.tcp,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        tls_client_ca=args.tls_client_ca,
        slurm_timeout=args.slurm_timeout,
        max_script_bytes=args.max_script_bytes,
        poll_interval=args.poll_interval,
        log_level=args.log_level,
        container_runtime=args.container_runtime,
        runtime_path=args.runtime_path,
        image_dir=os.path.realpath(args.image_dir) if args.image_dir else "",
        slurm_api=args.slurm_api,
        allowed=Allowed(
            _names(args.allowed_accounts), _names(args.allowed_qos), _names(args.allowed_partitions)
        ),
    )


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


def tcp_address(value: str) -> tuple[str, int]:
    """``[HOST:]PORT`` of ``--tcp``; the host defaults to loopback, never to every interface."""
    host, _, port = value.rpartition(":")
    try:
        number = int(port)
    except ValueError:
        number = -1
    if not 0 <= number <= 65535:
        raise InvalidInput(f"--tcp {value}: not [HOST:]PORT")
    return host.strip("[]") or "127.0.0.1", number


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
    servers = [Server(handlers)]
    old_umask = os.umask(0o177)
    try:
        await servers[0].start(path=settings.socket)
    finally:
        os.umask(old_umask)
    os.chmod(settings.socket, 0o600)
    if settings.tcp:
        host, port = tcp_address(settings.tcp)
        tcp = Server(handlers)
        context = tls_context(settings.tls_cert, settings.tls_key, settings.tls_client_ca)
        await tcp.start(host, port, ssl=context)
        servers.append(tcp)
    tasks = []
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
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
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
