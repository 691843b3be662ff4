"""The operator's probes: ``/healthz`` (the event loop answers) and ``/readyz``.

A replica is ready once it has connected and either leads with its mirrors
synced or stands by as a candidate; the Deployment's probes use both.
"""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web


@dataclass
class Health:
    role: str = "starting"  # starting, candidate, leader

    @property
    def ready(self) -> bool:
        return self.role in ("candidate", "leader")


async def serve(health: Health, *, host: str, port: int) -> web.AppRunner:
    """Start answering probes on ``host:port``; the caller cleans the runner up."""

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def readyz(_: web.Request) -> web.Response:
        status = 200 if health.ready else 503
        return web.Response(status=status, text=f"{health.role}\n")

    app = web.Application()
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    # reuse_port: replicas that share one network namespace (a host without pod networks, as
    # wlmvk dev node's pods) each bind the probe port and answer alike, instead of all but one
    # crash-looping on EADDRINUSE; with pod networks, as on any cluster, it changes nothing.
    await web.TCPSite(runner, host, port, reuse_port=True).start()
    return runner
