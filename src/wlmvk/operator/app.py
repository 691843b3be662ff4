"""``wlmvk operator``: the SlurmJob/WlmJob controller process.

Startup connects to the API server; with leader election on (the default)
the process waits until it holds the Lease, then runs the controller while
renewing it. Losing the Lease stops the process with exit code 1 (the
Deployment restarts it as a candidate); SIGTERM/SIGINT stop it cleanly and
hand the Lease over at once.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from dataclasses import replace
from typing import Any

import structlog

from wlmvk.core import logging as core_logging
from wlmvk.core import loop as event_loop
from wlmvk.core import tasks
from wlmvk.core.errors import FailedPrecondition, WlmvkError
from wlmvk.kube.bodies import PODS
from wlmvk.kube.client import KubeClient
from wlmvk.kube.leader import ElectionConfig, Elector
from wlmvk.operator import flags, ownimage, probes
from wlmvk.operator.controller import Controller
from wlmvk.operator.settings import OperatorSettings

_log = structlog.get_logger(__name__)


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
        args = flags.parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    core_logging.configure(args.log_level)
    try:
        return event_loop.run(serve(flags.settings_from(args), kubeconfig=args.kubeconfig))
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
