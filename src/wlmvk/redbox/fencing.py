"""red-box's side of the fence: a call bringing a fencing token lower than the highest seen is refused.

A kubelet holding its cluster's Lease sends its token (``core.fences``) with
every call; red-box keeps the highest per scope in its store (``Store.fence``,
journaled and fsynced before the call that raised it runs, so a restart does
not forget it) and answers a lower one FAILED_PRECONDITION, naming both.

A higher token is also a barrier. Before the first call of a new holder runs,
red-box waits until the calls it admitted with lower tokens of the scope have
ended: whatever a deposed holder's admitted SubmitJobs creates exists before
the new holder's first FindJob looks for it, and nothing it sends later is
admitted. A call without a token is served as before (the original client).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import structlog
from grpclib import GRPCError
from grpclib.const import Handler, Status

from wlmvk.core import fences
from wlmvk.core.fences import Token
from wlmvk.redbox.store import Store

_log = structlog.get_logger(__name__)


class _Scope:
    def __init__(self) -> None:
        self.settled = -1  # the highest token whose earlier calls have all ended
        self.raising = asyncio.Lock()
        self.running: Counter[int] = Counter()  # calls in progress per token
        self.ended = asyncio.Condition()


class Fences:
    """The highest token per scope (kept in ``store``) and the calls admitted under each."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._scopes: dict[str, _Scope] = {}

    @contextlib.asynccontextmanager
    async def admitted(self, token: Token) -> AsyncIterator[None]:
        """Run the body as a call of ``token``, or raise GRPCError FAILED_PRECONDITION if it is stale."""
        scope = self._scopes.setdefault(token.scope, _Scope())
        self._refuse_below(token)
        if token.number > scope.settled:
            async with scope.raising:
                self._refuse_below(token)
                if token.number > scope.settled:
                    await self._raise(scope, token)
        scope.running[token.number] += 1
        try:
            yield
        finally:
            scope.running[token.number] -= 1
            async with scope.ended:
                scope.ended.notify_all()

    def _refuse_below(self, token: Token) -> None:
        highest = self._store.fence(token.scope)
        if highest is not None and token.number < highest:
            message = fences.refusal(token, highest)
            _log.warning(
                "rpc refused: a deposed holder's token",
                scope=token.scope,
                token=token.number,
                highest=highest,
            )
            raise GRPCError(Status.FAILED_PRECONDITION, message)

    async def _raise(self, scope: _Scope, token: Token) -> None:
        highest = self._store.fence(token.scope)
        if highest is None or token.number > highest:
            # From here on a lower token is refused; on disk before this call runs.
            self._store.raise_fence(token.scope, token.number)
            await self._store.durable()
            _log.info("fencing token raised", scope=token.scope, token=token.number, previous=highest)
        async with scope.ended:
            await scope.ended.wait_for(
                lambda: not any(count for number, count in scope.running.items() if number < token.number)
            )
        scope.settled = token.number


def fenced(handler: Handler, fences_: Fences) -> Handler:
    """``handler`` run as a call of the token its metadata brings (``Fences.admitted``), if any."""
    func: Callable[[Any], Awaitable[None]] = handler.func

    async def handle(stream: Any) -> None:
        values = stream.metadata.getall(fences.HEADER, []) if stream.metadata else []
        if not values:
            await func(stream)
            return
        if len(values) > 1:
            raise GRPCError(Status.INVALID_ARGUMENT, f"{len(values)} {fences.HEADER} headers; at most one")
        try:
            token = fences.parse(str(values[0]))
        except ValueError as exc:
            raise GRPCError(Status.INVALID_ARGUMENT, str(exc)) from exc
        async with fences_.admitted(token):
            await func(stream)

    return handler._replace(func=handle)
