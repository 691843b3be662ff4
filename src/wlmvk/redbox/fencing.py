"""red-box's side of the fence: a call bringing a fencing token lower than the highest seen is refused.

A kubelet holding its cluster's Lease sends its token (``core.fences``) with
every call; red-box keeps the highest per scope in its store (``Store.fence``,
journaled and fsynced before the call that raised it runs, so a restart does
not forget it) and answers a lower one FAILED_PRECONDITION, naming both.

A higher token is also a barrier. Before the first call of a new holder runs,
red-box waits until the writes (``core.fences.WRITES``) it admitted with lower
tokens of the scope have ended, for ``BARRIER_WAIT`` seconds at most (a frozen
client's open StageIn must not hold the new holder off for good): whatever a
deposed holder's admitted SubmitJobs creates exists before the new holder's
first FindJob looks for it, and nothing it sends later is admitted. Reads
(a log followed for hours, an exec) are not waited for. A call whose request
is one message is admitted once that message has arrived: until then it has
done nothing, so a new holder does not wait for it (a deposed holder's call
whose headers came through and whose message was held on its way held the
new holder off for BARRIER_WAIT), and when it arrives the fence as it stands
then judges it. A call without a token is served as before (the original
client).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import structlog
from grpclib import GRPCError
from grpclib.const import Cardinality, Handler, Status

from wlmvk.core import fences
from wlmvk.core.fences import Token
from wlmvk.redbox.store import Store

_log = structlog.get_logger(__name__)

BARRIER_WAIT = 120.0
"""The most seconds a new holder's first call waits for the older holders' writes to end (four of
red-box's 30 s Slurm timeouts: an sbatch, its lost-reply lookup and more)."""


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
    async def admitted(self, token: Token, *, writes: bool = True) -> AsyncIterator[None]:
        """Run the body as a call of ``token``, or raise GRPCError FAILED_PRECONDITION if it is stale.

        A call that ``writes`` is one a later token's first call waits for.
        """
        scope = self._scopes.setdefault(token.scope, _Scope())
        self._refuse_below(token)
        if token.number > scope.settled:
            async with scope.raising:
                self._refuse_below(token)
                if token.number > scope.settled:
                    await self._raise(scope, token)
        if not writes:
            yield
            return
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

        def older() -> int:
            return sum(count for number, count in scope.running.items() if number < token.number)

        try:
            async with asyncio.timeout(BARRIER_WAIT), scope.ended:
                await scope.ended.wait_for(lambda: not older())
        except TimeoutError:
            _log.warning("older holders' writes still running; going on", scope=token.scope, calls=older())
        scope.settled = token.number


class _Received:
    """A server stream whose one request message was read before its call was admitted."""

    def __init__(self, stream: Any, message: Any) -> None:
        self._stream = stream
        self._message = message

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    async def recv_message(self) -> Any:
        message, self._message = self._message, None  # a unary request has no second message
        return message


def fenced(handler: Handler, fences_: Fences, *, rpc: str) -> Handler:
    """``handler`` (of ``rpc``) run as a call of the token its metadata brings, if any (``admitted``),
    a unary request's once its message has arrived."""
    func: Callable[[Any], Awaitable[None]] = handler.func
    writes = rpc in fences.WRITES
    unary = handler.cardinality in (Cardinality.UNARY_UNARY, Cardinality.UNARY_STREAM)

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
        if unary:
            stream = _Received(stream, await stream.recv_message())
        async with fences_.admitted(token, writes=writes):
            await func(stream)

    return handler._replace(func=handle)
