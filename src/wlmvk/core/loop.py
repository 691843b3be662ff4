"""The event loop every wlmvk process runs on: uvloop's, unless ``WLMVK_EVENT_LOOP=asyncio``.

Each process (red-box, the kubelet, the operator, the staging pods) spends
a large share of its CPU in the event loop's own turns and in its socket
transports: per submission, red-box's grpclib reads and writes on one
connection many times. uvloop runs the same loop in native code (libuv);
measured with ``bench/redbox_loops.py`` (docs/slurmrestd.md, "Speed").

``run`` is the one place a process starts its loop. ``WLMVK_EVENT_LOOP``
chooses: ``uvloop`` (the default) or ``asyncio`` (the standard library's
loop, e.g. to rule uvloop out when chasing a bug). An unknown value is an
error, not a silent default; ``uvloop`` when it is not installed (a
hand-made environment) falls back to asyncio's loop.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from wlmvk.core.errors import InvalidInput

T = TypeVar("T")
ENV = "WLMVK_EVENT_LOOP"
CHOICES = ("uvloop", "asyncio")


def choice(environ: dict[str, str] | None = None) -> str:
    """The loop ``WLMVK_EVENT_LOOP`` asks for (``uvloop`` when unset or empty)."""
    value = (os.environ if environ is None else environ).get(ENV, "").strip().lower() or "uvloop"
    if value not in CHOICES:
        raise InvalidInput(f"{ENV}={value!r}: expected one of {', '.join(CHOICES)}")
    return value


def factory(name: str) -> Callable[[], asyncio.AbstractEventLoop]:
    """What makes the loop called ``name`` (asyncio's own when uvloop is not installed)."""
    if name == "uvloop":
        try:
            import uvloop
        except ImportError:
            return asyncio.new_event_loop
        return uvloop.new_event_loop
    return asyncio.new_event_loop


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)`` on the loop ``WLMVK_EVENT_LOOP`` chooses."""
    try:
        make = factory(choice())
    except InvalidInput:
        main.close()  # never awaited: no "coroutine was never awaited" warning on top of the error
        raise
    with asyncio.Runner(loop_factory=make) as runner:
        return runner.run(main)
