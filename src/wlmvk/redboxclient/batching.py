"""Group commit of submissions: SubmitJob calls made while others are on their way go as one SubmitJobs.

A kubelet submits a burst of pods with many calls in flight. Each gRPC call
costs both sides about as much CPU as the job's own work in red-box (HTTP/2
frames, headers, a stream each way), so calls that meet are sent together, as
a database commits a group of transactions with one write: ``Batcher`` sends
at once while fewer than ``in_flight`` calls are on their way, and gathers
whatever is asked meanwhile (at most ``most``) into the next call. A lone call
goes out after one turn of the event loop (others made in the same turn join
it); nothing waits for a batch to fill.

Each caller gets its own job's answer, as from its own SubmitJob: an id, or
the error SubmitJob would have raised (``results``). A failure of the whole
call (red-box unreachable) is every caller's. A caller that stops waiting
before its call goes is left out of it; once its call went, the others
still get their answers, and red-box still submits its job (its key finds
it again).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

from grpclib import GRPCError
from grpclib.const import Status

from wlmvk.core.errors import Unavailable, Unsupported, WlmvkError
from wlmvk.core.jobs import JobId, JobSpec
from wlmvk.redboxclient import failures
from wlmvk.wire.batches import Outcome, SubmitJobsReply, SubmitJobsRequest

I = TypeVar("I")  # noqa: E741
O = TypeVar("O")  # noqa: E741

IN_FLIGHT = 2
"""Batches on their way at once: one is answered while the next gathers."""
MOST = 64
"""The most jobs in one batch."""


def results(outcomes: Sequence[Outcome], asked: int) -> list[JobId | WlmvkError]:
    """Each job's answer from SubmitJobs' outcomes: its id, or the error SubmitJob would have raised."""
    if len(outcomes) != asked:
        raise Unavailable(f"SubmitJobs: {len(outcomes)} answers for {asked} jobs")
    answers: list[JobId | WlmvkError] = []
    for outcome in outcomes:
        if outcome.status == 0:
            answers.append(JobId(outcome.job_id))
            continue
        try:
            status = Status(outcome.status)
        except ValueError:
            status = Status.UNKNOWN
        answers.append(failures.from_grpc(GRPCError(status, outcome.message), "SubmitJob"))
    return answers


async def submit_together(
    specs: list[JobSpec],
    *,
    call: Callable[[SubmitJobsRequest], Awaitable[SubmitJobsReply]],
    one: Callable[[JobSpec], Awaitable[JobId]],
    lacks: Callable[[str], None],
) -> list[JobId | WlmvkError]:
    """``specs`` through one SubmitJobs ``call``; each job's answer (``results``).

    A red-box that turns out not to serve SubmitJobs (UNIMPLEMENTED: nothing was
    submitted) is noted (``lacks``) and each job goes through its own SubmitJob (``one``).
    """
    try:
        reply = await call(SubmitJobsRequest(specs))
    except Unsupported:
        lacks("SubmitJobs")
        settled: list[JobId | WlmvkError] = []
        for answer in await asyncio.gather(*(one(spec) for spec in specs), return_exceptions=True):
            if isinstance(answer, BaseException) and not isinstance(answer, WlmvkError):
                raise answer from None
            settled.append(answer)
        return settled
    return results(reply.outcomes, len(specs))


class Batcher(Generic[I, O]):
    """Calls of ``send`` carrying what ``call`` was asked meanwhile; each caller gets its own answer."""

    def __init__(
        self,
        send: Callable[[list[I]], Awaitable[Sequence[O | WlmvkError]]],
        *,
        in_flight: int = IN_FLIGHT,
        most: int = MOST,
    ) -> None:
        self._send = send
        self._in_flight = max(1, in_flight)
        self._most = max(1, most)
        self._waiting: list[tuple[I, asyncio.Future[O]]] = []
        self._sending: set[asyncio.Task[None]] = set()
        self._scheduled = False

    async def call(self, item: I) -> O:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[O] = loop.create_future()
        self._waiting.append((item, future))
        if not self._scheduled:
            self._scheduled = True
            loop.call_soon(self._start)
        return await future

    def _start(self) -> None:
        self._scheduled = False
        # A caller that stopped waiting before its call went is left out: nobody would hear of its job.
        self._waiting = [(item, future) for item, future in self._waiting if not future.done()]
        while self._waiting and len(self._sending) < self._in_flight:
            batch, self._waiting = self._waiting[: self._most], self._waiting[self._most :]
            task = asyncio.ensure_future(self._deliver(batch))
            self._sending.add(task)
            task.add_done_callback(self._sent)

    def _sent(self, task: asyncio.Task[None]) -> None:
        self._sending.discard(task)
        self._start()

    async def _deliver(self, batch: list[tuple[I, asyncio.Future[O]]]) -> None:
        try:
            answers = await self._send([item for item, _ in batch])
            if len(answers) != len(batch):
                raise Unavailable(f"{len(answers)} answers for {len(batch)} calls")
        except asyncio.CancelledError:
            _fail(batch, Unavailable("the client was closed"))
            raise
        except Exception as exc:
            _fail(batch, exc)
            return
        for (_, future), answer in zip(batch, answers, strict=True):
            if future.done():
                continue
            if isinstance(answer, WlmvkError):
                future.set_exception(answer)
            else:
                future.set_result(answer)

    async def close(self) -> None:
        """Stop the calls on their way; their callers get ``Unavailable``."""
        for task in list(self._sending):
            task.cancel()
        _fail(self._waiting, Unavailable("the client was closed"))
        self._waiting = []
        await asyncio.gather(*self._sending, return_exceptions=True)


def _fail(batch: Sequence[tuple[object, asyncio.Future[O]]], exc: BaseException) -> None:
    for _, future in batch:
        if not future.done():
            future.set_exception(exc)
