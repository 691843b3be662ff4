"""Group commit of submissions (wlm.batching): calls that meet share one send; each gets its own answer."""

from __future__ import annotations

import asyncio

import pytest

from wlmvk.core.errors import InvalidInput, NotFound, Unavailable, WlmvkError
from wlmvk.core.jobs import JobId
from wlmvk.redboxclient import batching
from wlmvk.wire.batches import Outcome


class Sends:
    """A send that answers each item doubled, or the error an item names; each send held until released."""

    def __init__(self) -> None:
        self.batches: list[list[int]] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.gate = asyncio.Event()

    async def __call__(self, items: list[int]) -> list[int | WlmvkError]:
        self.batches.append(items)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        await self.gate.wait()
        self.in_flight -= 1
        if -1 in items:
            raise Unavailable("red-box is gone")
        return [InvalidInput(f"item {i}") if i < 0 else i * 2 for i in items]


async def test_calls_made_while_others_are_on_their_way_share_one_send() -> None:
    sends = Sends()
    batcher: batching.Batcher[int, int] = batching.Batcher(sends, in_flight=2, most=64)
    first = [asyncio.ensure_future(batcher.call(i)) for i in range(3)]  # one turn: one send
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    second = [asyncio.ensure_future(batcher.call(i)) for i in range(3, 5)]
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    third = [asyncio.ensure_future(batcher.call(i)) for i in range(5, 10)]  # two on their way: they wait
    await asyncio.sleep(0.01)
    assert sends.batches == [[0, 1, 2], [3, 4]]
    sends.gate.set()
    assert await asyncio.gather(*first, *second, *third) == [i * 2 for i in range(10)]
    assert sends.batches == [[0, 1, 2], [3, 4], [5, 6, 7, 8, 9]]
    assert sends.most_in_flight == 2


async def test_a_batch_holds_at_most_most() -> None:
    sends = Sends()
    sends.gate.set()
    batcher: batching.Batcher[int, int] = batching.Batcher(sends, in_flight=1, most=4)
    assert await asyncio.gather(*(batcher.call(i) for i in range(10))) == [i * 2 for i in range(10)]
    assert sends.batches == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


async def test_one_refused_item_is_its_callers_error_alone() -> None:
    sends = Sends()
    sends.gate.set()
    batcher: batching.Batcher[int, int] = batching.Batcher(sends)
    answers = await asyncio.gather(*(batcher.call(i) for i in (1, -2, 3)), return_exceptions=True)
    assert answers[0] == 2
    assert isinstance(answers[1], InvalidInput)
    assert answers[1].message == "item -2"
    assert answers[2] == 6
    assert sends.batches == [[1, -2, 3]]


async def test_a_failed_send_is_every_callers_error_and_the_next_send_goes_on() -> None:
    sends = Sends()
    sends.gate.set()
    batcher: batching.Batcher[int, int] = batching.Batcher(sends)
    answers = await asyncio.gather(*(batcher.call(i) for i in (1, -1)), return_exceptions=True)
    assert [type(a) for a in answers] == [Unavailable, Unavailable]
    assert await batcher.call(4) == 8


async def test_a_caller_that_stops_waiting_leaves_the_others_their_answers() -> None:
    sends = Sends()
    batcher: batching.Batcher[int, int] = batching.Batcher(sends)
    leaving = asyncio.ensure_future(batcher.call(1))
    staying = asyncio.ensure_future(batcher.call(2))
    await asyncio.sleep(0.01)
    leaving.cancel()
    sends.gate.set()
    assert await staying == 4
    assert leaving.cancelled()


async def test_a_caller_that_stops_waiting_before_its_call_goes_is_left_out() -> None:
    sends = Sends()
    batcher: batching.Batcher[int, int] = batching.Batcher(sends, in_flight=1)
    first = asyncio.ensure_future(batcher.call(1))
    await asyncio.sleep(0.01)  # on its way: the next ones wait
    leaving = asyncio.ensure_future(batcher.call(2))
    staying = asyncio.ensure_future(batcher.call(3))
    await asyncio.sleep(0.01)
    leaving.cancel()
    sends.gate.set()
    assert await asyncio.gather(first, staying) == [2, 6]
    assert sends.batches == [[1], [3]]


async def test_close_ends_the_sends_and_the_waiting_calls_with_unavailable() -> None:
    sends = Sends()
    batcher: batching.Batcher[int, int] = batching.Batcher(sends, in_flight=1)
    calls = [asyncio.ensure_future(batcher.call(i)) for i in range(2)]
    await asyncio.sleep(0.01)
    later = asyncio.ensure_future(batcher.call(5))
    await asyncio.sleep(0.01)
    await batcher.close()
    answers = await asyncio.gather(*calls, later, return_exceptions=True)
    assert [str(a) for a in answers] == ["the client was closed"] * 3


def test_outcomes_become_ids_or_the_errors_submit_job_raises() -> None:
    answers = batching.results(
        [Outcome(job_id=7), Outcome(status=3, message="bad partition"), Outcome(status=5, message="gone")], 3
    )
    assert answers[0] == JobId(7)
    assert isinstance(answers[1], InvalidInput)
    assert answers[1].message == "SubmitJob: bad partition"
    assert isinstance(answers[2], NotFound)


def test_a_count_of_answers_other_than_asked_is_unavailable() -> None:
    with pytest.raises(Unavailable, match="SubmitJobs: 1 answers for 2 jobs"):
        batching.results([Outcome(job_id=7)], 2)
