"""How controllers plug into the server: an agent coroutine per control loop.

A controller is ``async def run(store: Store) -> None``: it watches and writes through
the :class:`~wlmvk_dev.apiserver.store.Store` and runs until cancelled. Pass them
to ``ApiServer(controllers=[...])`` (or ``server.register_controller(fn)`` before
``start()``); the server starts each as a guarded task after the store exists and
cancels them on ``stop()``. Parameterised controllers are ``functools.partial``\\ s.

:func:`default_controllers` collects the ``run`` functions of the controller modules of
this package that exist (scheduler, gc, nodelifecycle): the fixture and
``wlmvk dev apiserver`` run these unless told otherwise.

A :class:`ClientController` is a client of the server like any other (the host
nodes of ``hostkubelet``): the server calls ``run(url)`` with its own URL.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aiohttp import web

    from wlmvk_dev.apiserver.kubeletclient import KubeletClientCredentials
    from wlmvk_dev.apiserver.store import Store

Controller = Callable[["Store"], Coroutine[Any, Any, None]]


@dataclass(frozen=True)
class ClientController:
    """A controller that reaches the server over HTTP: ``run(url)`` until cancelled."""

    run: Callable[[str], Coroutine[Any, Any, None]]
    name: str


LogHandler = Callable[["web.Request", dict[str, Any], "Store"], Awaitable["web.StreamResponse"]]
"""``pods/{name}/log``: ``handler(request, pod, store)`` answers with the log (text/plain,
streamed when ``follow=true``). The request's query carries container, follow, tailLines,
limitBytes, sinceSeconds, sinceTime, timestamps, previous."""

ExecHandler = Callable[["web.Request", dict[str, Any], "Store"], Awaitable["web.StreamResponse"]]
"""``pods/{name}/exec``: ``handler(request, pod, store)`` upgrades the request and relays the
session with the pod's kubelet (``execproxy.py``). The query carries command, container, stdin,
stdout, stderr, tty."""

DEFAULT_MODULES = ("scheduler", "gc", "nodelifecycle")


def default_controllers() -> list[Controller]:
    """``run`` of each default controller module that is present in this package."""
    found: list[Controller] = []
    for name in DEFAULT_MODULES:
        try:
            module = importlib.import_module(f"wlmvk_dev.apiserver.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"wlmvk_dev.apiserver.{name}":
                raise
            continue
        run = getattr(module, "run", None)
        if run is not None:
            found.append(run)
    return found


def default_log_handler(credentials: KubeletClientCredentials | None = None) -> LogHandler | None:
    """The log proxy of ``logproxy.py`` when present (it proxies to the node's kubelet), presenting
    ``credentials`` (``kubeletclient.issue``) to kubelets, as kube-apiserver does."""
    try:
        module = importlib.import_module("wlmvk_dev.apiserver.logproxy")
    except ModuleNotFoundError as e:
        if e.name != "wlmvk_dev.apiserver.logproxy":
            raise
        return None
    if credentials is not None:
        made: LogHandler = module.make_handler(
            client_cert=str(credentials.cert), client_key=str(credentials.key)
        )
        return made
    handler: LogHandler | None = getattr(module, "handle", None)
    return handler
