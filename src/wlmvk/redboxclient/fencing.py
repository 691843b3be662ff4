"""The client's side of the fence: each call checked, and its token added, just before it is sent.

A kubelet holding its cluster's Lease gives red-box's client a ``Fencing``
(``core.fences``). ``stamp`` listens on the client's channel for every request
about to be sent, first attempts, retries and batches alike: a call that
writes (``core.fences.WRITES``) is sent only while ``check`` passes (it raises otherwise,
and nothing goes out), and every call carries the holder's token, so red-box
both refuses a deposed holder's late call and learns of a new holder at its
first call, a lookup included. ``told`` passes red-box's refusal of a token
on to the fence (``Fencing.refused``).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from grpclib import GRPCError
from grpclib.client import Channel
from grpclib.const import Status
from grpclib.events import SendRequest, listen

from wlmvk.core import fences
from wlmvk.core.fences import Fencing

__all__ = ["Fencing", "guard", "stamp", "told"]


def guard(channel: Channel, fence: Fencing | None) -> None:
    """Have ``fence`` (if any) asked before each request ``channel`` sends (``stamp``)."""
    if fence is not None:
        listen(channel, SendRequest, stamp(fence))


def stamp(fence: Fencing) -> Callable[[SendRequest], Coroutine[Any, Any, None]]:
    """A ``SendRequest`` listener: ``fence`` asked, its token added to the request's metadata."""

    async def stamping(event: SendRequest) -> None:
        rpc = event.method_name.rsplit("/", 1)[-1]
        token = fence.check() if rpc in fences.WRITES else fence.token()
        if token is not None:
            event.metadata[fences.HEADER] = token.header()

    return stamping


async def told(fence: Fencing | None, error: GRPCError) -> None:
    """Tell ``fence`` of red-box's refusal of its token, if ``error`` is one."""
    if fence is None or error.status is not Status.FAILED_PRECONDITION:
        return
    highest = fences.highest_in(error.message or "")
    if highest is not None:
        await fence.refused(highest)
