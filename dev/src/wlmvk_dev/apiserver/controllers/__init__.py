"""How controllers plug into the server: an agent coroutine per control loop.

A controller is ``async def run(store: Store) -> None``: it watches and writes through
the :class:`~wlmvk_dev.apiserver.storage.store.Store` and runs until cancelled. Pass them
to ``ApiServer(controllers=[...])`` (or ``server.register_controller(fn)`` before
``start()``); the server starts each as a guarded task after the store exists and
cancels them on ``stop()``. Parameterised controllers are ``functools.partial``\\ s.

:func:`default_controllers` collects the ``run`` functions of this package's controllers
(``scheduler``, ``gc``, ``nodelifecycle``): the fixture and ``wlmvk dev apiserver`` run these
unless told otherwise. The other modules are their pure decisions (``placement``,
``podresources``, ``taints``, ``ownership``, ``nodehealth``) and helpers (``workqueue``,
``eventrecorder``, ``podgc`` which ``gc`` runs).

A :class:`ClientController` is a client of the server like any other (the host
nodes of ``kubelets.hostkubelet``): the server calls ``run(url)`` with its own URL.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wlmvk_dev.apiserver.storage.store import Store

Controller = Callable[["Store"], Coroutine[Any, Any, None]]


@dataclass(frozen=True)
class ClientController:
    """A controller that reaches the server over HTTP: ``run(url)`` until cancelled."""

    run: Callable[[str], Coroutine[Any, Any, None]]
    name: str


def default_controllers() -> list[Controller]:
    """``run`` of the default controllers: the scheduler, the garbage collector, node lifecycle."""
    # Imported here: each controller module builds on the store, which this module's types name.
    from wlmvk_dev.apiserver.controllers import gc, nodelifecycle, scheduler

    return [scheduler.run, gc.run, nodelifecycle.run]
