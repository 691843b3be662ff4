"""``wlmvk operator``: the SlurmJob/WlmJob controller process.

Startup connects to the API server; with leader election on (the default)
the process waits until it holds the Lease, then runs the controller while
renewing it. Losing the Lease stops the process with exit code 1 (the
Deployment restarts it as a candidate); SIGTERM/SIGINT stop it cleanly and
hand the Lease over at once.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import signal
import socket
import sys
from dataclasses import replace
from typing import Any

import structlog

from wlmvk.core import logging as core_logging
from wlmvk.core import loop as event_loop
from wlmvk.core import tasks
from wlmvk.core.errors import FailedPrecondition, WlmvkError
from wlmvk.core.names import DEFAULT_RED_BOX_SOCKET
from wlmvk.kube.bodies import PODS
from wlmvk.kube.client import KubeClient
from wlmvk.kube.leader import ElectionConfig, Elector
from wlmvk.operator import ownimage, probes
from wlmvk.operator.controller import Controller
from wlmvk.operator.settings import DEFAULT_WORK_ROOT, OperatorSettings, StagingSettings

_log = structlog.get_logger(__name__)


def _env(name: str, default: str) -> str:
    return os.environ.get(name) or default


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="wlmvk operator", description="The SlurmJob/WlmJob controller.")
    p.add_argument(
        "--kubeconfig", default=os.environ.get("KUBECONFIG"), help="kubeconfig (default: in-cluster)"
    )
    p.add_argument(
        "--namespace",
        default=os.environ.get("WATCH_NAMESPACE", ""),
        help="namespace to watch (env WATCH_NAMESPACE; default: all namespaces)",
    )
    p.add_argument(
        "--work-root",
        default=_env("WLMVK_WORK_ROOT", DEFAULT_WORK_ROOT),
        help="root of the jobs' working directories on the WLM side: <root>/<namespace>/<name>-<uid>"
        " (default: relative, i.e. under each red-box's --work-dir)",
    )
    p.add_argument(
        "--stage-image",
        default=os.environ.get("WLMVK_STAGE_IMAGE", ""),
        help="image of staging pods (default: the image of this pod's container 'operator', read from "
        f"the API server by env POD_NAME and POD_NAMESPACE; outside a pod: {ownimage.OUTSIDE_A_POD})",
    )
    p.add_argument(
        "--stage-command",
        default=_env("WLMVK_STAGE_COMMAND", ""),
        help="command that runs wlmvk in the staging image (split like a shell would; "
        "default: the image's entrypoint)",
    )
    p.add_argument(
        "--stage-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="environment variable of the staging containers (repeatable)",
    )
    p.add_argument(
        "--red-box-socket",
        default=DEFAULT_RED_BOX_SOCKET,
        help="host path of the red-box socket on agent hosts (when the virtual node does not say)",
    )
    p.add_argument("--run-as-user", type=int, default=1000, help="UID of the staging pods")
    p.add_argument("--run-as-group", type=int, default=1000, help="GID of the staging pods")
    p.add_argument(
        "--stage-timeout",
        type=int,
        default=3600,
        help="seconds one staging transfer may take; the staging pod's activeDeadlineSeconds adds "
        "300 s to start it",
    )
    p.add_argument(
        "--leader-elect",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="elect one leader among replicas through a Lease",
    )
    p.add_argument("--lease-name", default="wlmvk-operator-lock", help="name of the leader Lease")
    p.add_argument(
        "--lease-namespace",
        default=_env("POD_NAMESPACE", "default"),
        help="namespace of the leader Lease (env POD_NAMESPACE)",
    )
    p.add_argument("--lease-duration", type=int, default=15, help="seconds a leader Lease lasts unrenewed")
    p.add_argument("--renew-interval", type=float, default=5.0, help="seconds between Lease renewals")
    p.add_argument(
        "--retry-interval",
        type=float,
        default=2.0,
        help="seconds between a candidate's looks at a Lease another replica holds",
    )
    p.add_argument(
        "--identity",
        default=_env("POD_NAME", f"{socket.gethostname()}-{os.getpid()}"),
        help="this replica's name in the Lease (env POD_NAME)",
    )
    p.add_argument(
        "--health-port", type=int, default=0, help="port of /healthz and /readyz (0: no probe server)"
    )
    p.add_argument("--resync", type=float, default=60.0, help="seconds between full re-examinations")
    p.add_argument("--log-level", default="info", help="debug, info, warning or error")
    return p


def _pair(item: str) -> tuple[str, str]:
    name, eq, value = item.partition("=")
    if not eq or not name:
        raise SystemExit(f"wlmvk operator: --stage-env wants NAME=VALUE, not {item!r}")
    return name, value


def settings_from(args: argparse.Namespace) -> OperatorSettings:
    pod = ownimage.own_pod(os.environ)
    return OperatorSettings(
        work_root=args.work_root,
        namespace=args.namespace,
        staging=StagingSettings(
            # Empty in a pod: read from the pod at start (resolve_stage_image).
            image=args.stage_image or ("" if pod else ownimage.OUTSIDE_A_POD),
            command=tuple(shlex.split(args.stage_command)),
            socket_host_path=args.red_box_socket,
            run_as_user=args.run_as_user,
            run_as_group=args.run_as_group,
            env=tuple(_pair(item) for item in args.stage_env),
            timeout=args.stage_timeout,
        ),
        leader_election=args.leader_elect,
        lease_name=args.lease_name,
        lease_namespace=args.lease_namespace,
        lease_duration=args.lease_duration,
        renew_interval=args.renew_interval,
        retry_interval=args.retry_interval,
        identity=args.identity,
        resync_interval=args.resync,
        health_port=args.health_port,
        own_pod=pod,
    )


async def resolve_stage_image(client: KubeClient, settings: OperatorSettings) -> OperatorSettings:
    """``settings`` with the staging image set: as given, else the operator's own container's."""
    if settings.staging.image or settings.own_pod is None:
        return settings
    namespace, name = settings.own_pod
    try:
        pod = await client.get(PODS, name, namespace=namespace)
    except WlmvkError as exc:
        raise FailedPrecondition(
            f"the staging image is the operator's own, but its pod {namespace}/{name} could not be read "
            f"({exc.message}): give --stage-image"
        ) from exc
    image = ownimage.container_image(pod)
    _log.info("staging pods run the operator's own image", image=image)
    return replace(settings, staging=replace(settings.staging, image=image))


def main(argv: list[str]) -> int:
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    core_logging.configure(args.log_level)
    try:
        return event_loop.run(serve(settings_from(args), kubeconfig=args.kubeconfig))
    except WlmvkError as exc:
        print(f"wlmvk operator: {exc.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


async def serve(
    settings: OperatorSettings, *, kubeconfig: str | None, stop: asyncio.Event | None = None
) -> int:
    """Run until SIGTERM/SIGINT or ``stop`` is set (0), or leadership is lost (1)."""
    if stop is None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
    client = await KubeClient.connect(kubeconfig)
    try:
        settings = await resolve_stage_image(client, settings)
    except WlmvkError:
        await client.close()
        raise
    log = _log.bind(identity=settings.identity)
    elector: Elector | None = None
    running: list[asyncio.Task[Any]] = []
    state = probes.Health()
    probe_server = (
        await probes.serve(state, host="0.0.0.0", port=settings.health_port) if settings.health_port else None
    )
    try:
        stopping = tasks.guarded(stop.wait(), name="signals")
        running.append(stopping)
        if settings.leader_election:
            elector = Elector(
                client,
                ElectionConfig(
                    name=settings.lease_name,
                    namespace=settings.lease_namespace,
                    identity=settings.identity,
                    duration=settings.lease_duration,
                    renew_interval=settings.renew_interval,
                    retry_interval=settings.retry_interval,
                ),
            )
            state.role = "candidate"
            acquiring = tasks.guarded(elector.acquire(), name="acquire")
            await asyncio.wait({acquiring, stopping}, return_when=asyncio.FIRST_COMPLETED)
            if not acquiring.done():
                await tasks.stop(acquiring)
                return 0
            if acquiring.cancelled() or acquiring.exception() is not None:
                return 1  # the election itself broke (logged by the guarded task)
            running.append(tasks.guarded(elector.hold(), name="hold"))
        state.role = "leader"
        log.info("operator running", namespace=settings.namespace or "(all)", work_root=settings.work_root)
        running.append(tasks.guarded(Controller(client, settings).run(), name="controller"))
        done, _ = await asyncio.wait(set(running), return_when=asyncio.FIRST_COMPLETED)
        if stopping in done:
            log.info("stopping")
            return 0
        log.error("operator stopped: leadership lost or controller ended")
        return 1
    finally:
        await tasks.stop(*running)
        if elector is not None:
            await elector.release()
        if probe_server is not None:
            await probe_server.cleanup()
        await client.close()
