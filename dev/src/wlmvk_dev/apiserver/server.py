"""The server process: the store, the HTTP app, the controllers, and a kubeconfig for clients.

``ApiServer`` follows uvicorn's split of configuration and lifecycle::

    async with ApiServer(Config(port=0), controllers=default_controllers()) as server:
        server.write_kubeconfig(path)        # kubectl / kubernetes_asyncio use it unchanged
        ...                                  # server.url, server.store

``start()`` builds the store (unless given one), binds the socket,
then starts each controller as a guarded task; ``stop()`` cancels the controllers, ends
every watch stream and closes the socket.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog
import yaml
from aiohttp import web

from wlmvk.core.tasks import guarded, stop
from wlmvk_dev.apiserver.controllers import ClientController, Controller
from wlmvk_dev.apiserver.handlers.requests import Settings
from wlmvk_dev.apiserver.handlers.routes import build_app
from wlmvk_dev.apiserver.kubelets import ExecHandler, LogHandler
from wlmvk_dev.apiserver.kubelets.metrics import MetricsHandler
from wlmvk_dev.apiserver.kubelets.nodeproxy import NodeProxyHandler
from wlmvk_dev.apiserver.storage.store import Store

_log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Config:
    """How the server listens and behaves."""

    host: str = "127.0.0.1"
    port: int = 0
    """0 picks a free port (see ``ApiServer.port`` after ``start()``)."""
    bookmark_interval: float = 5.0
    """Seconds of silence after which a watch that allows bookmarks gets one."""
    history: int = 10_000
    """Watch events kept per resource type; older resourceVersions answer 410 Gone."""
    extra: dict[str, Any] = field(default_factory=dict)


class ApiServer:
    """See the module docstring."""

    def __init__(
        self,
        config: Config | None = None,
        *,
        store: Store | None = None,
        controllers: Sequence[Controller | ClientController] = (),
        log_handler: LogHandler | None = None,
        metrics: MetricsHandler | None = None,
        exec_handler: ExecHandler | None = None,
        node_proxy: NodeProxyHandler | None = None,
    ) -> None:
        self.config = config or Config()
        self.store = store or Store(history=self.config.history)
        self._controllers = list(controllers)
        self._log_handler = log_handler
        self._exec_handler = exec_handler
        self._metrics = metrics
        self._node_proxy = node_proxy
        self._tasks: list[asyncio.Task[Any]] = []
        self._runner: web.AppRunner | None = None
        self.port = self.config.port

    def register_controller(self, controller: Controller | ClientController) -> None:
        """Run ``controller(store)`` with the server (call before ``start()``)."""
        self._controllers.append(controller)

    @property
    def url(self) -> str:
        return f"http://{self.config.host}:{self.port}"

    async def start(self) -> None:
        settings = Settings(
            bookmark_interval=self.config.bookmark_interval,
            log_handler=self._log_handler,
            exec_handler=self._exec_handler,
            metrics=self._metrics,
            node_proxy=self._node_proxy,
        )
        app = build_app(self.store, settings)
        # handler_cancellation: a watch whose client went away ends at once (no leaked watcher).
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0, handler_cancellation=True)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.config.host, self.config.port)
        await site.start()
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        if sockets:
            self.port = sockets[0].getsockname()[1]
        for controller in self._controllers:
            if isinstance(controller, ClientController):
                self._tasks.append(guarded(controller.run(self.url), name=controller.name))
                continue
            name = getattr(controller, "__module__", None) or repr(controller)
            self._tasks.append(guarded(controller(self.store), name=f"apiserver-controller:{name}"))
        _log.info("apiserver started", url=self.url, controllers=len(self._tasks))

    async def stop(self) -> None:
        await stop(*self._tasks)
        self._tasks.clear()
        self.store.close_watches()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> ApiServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def kubeconfig(self, *, namespace: str = "default") -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "wlmvk", "cluster": {"server": self.url}}],
            "users": [{"name": "wlmvk", "user": {}}],
            "contexts": [
                {"name": "wlmvk", "context": {"cluster": "wlmvk", "user": "wlmvk", "namespace": namespace}}
            ],
            "current-context": "wlmvk",
            "preferences": {},
        }

    def write_kubeconfig(self, path: str | Path) -> Path:
        """Write a kubeconfig (plain HTTP, no credentials) for this server; returns the path."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(yaml.safe_dump(self.kubeconfig(), sort_keys=False))
        return target
