"""The work queue shared by the kubelet and the operator (client-go's workqueue semantics)."""

from __future__ import annotations

import asyncio

from wlmvk.kube.workqueue import WorkQueue


async def test_a_waiting_key_is_queued_once() -> None:
    queue = WorkQueue[str]()
    queue.add("a")
    queue.add("a")
    queue.add("b")
    assert len(queue) == 2
    assert await queue.get() == "a"
    assert await queue.get() == "b"


async def test_a_key_being_worked_on_is_handed_out_again_after_done() -> None:
    queue = WorkQueue[str]()
    queue.add("a")
    key = await queue.get()
    queue.add("a")  # an event while a worker holds it
    assert len(queue) == 0
    getter = asyncio.create_task(queue.get())
    await asyncio.sleep(0.01)
    assert not getter.done()  # no second worker gets it meanwhile
    queue.done(key)
    assert await asyncio.wait_for(getter, 1) == "a"


async def test_add_after() -> None:
    queue = WorkQueue[str]()
    queue.add_after("late", 0.05)
    assert len(queue) == 0
    assert await asyncio.wait_for(queue.get(), 1) == "late"


async def test_add_cancels_a_pending_delayed_add() -> None:
    queue = WorkQueue[str]()
    queue.add_after("k", 0.05)
    queue.add("k")
    assert await queue.get() == "k"
    queue.done("k")
    await asyncio.sleep(0.1)
    assert len(queue) == 0


async def test_urgent_keys_are_handed_out_first_in_order() -> None:
    queue = WorkQueue[str]()
    queue.add("status-1")
    queue.add("submit-1", urgent=True)
    queue.add("status-2")
    queue.add("submit-2", urgent=True)
    assert [await queue.get() for _ in range(4)] == ["submit-1", "submit-2", "status-1", "status-2"]


async def test_a_waiting_key_added_urgent_moves_forward_once() -> None:
    queue = WorkQueue[str]()
    queue.add("a")
    queue.add("b")
    queue.add("b", urgent=True)
    queue.add("b")  # already waiting, and in the better class: no-op
    assert len(queue) == 2
    assert await queue.get() == "b"
    assert await queue.get() == "a"
    assert len(queue) == 0
    queue.add("c")
    assert await asyncio.wait_for(queue.get(), 1) == "c"  # b's stale entry was skipped, not handed out


async def test_a_dirty_key_keeps_its_urgency() -> None:
    queue = WorkQueue[str]()
    queue.add("a")
    key = await queue.get()
    queue.add("a", urgent=True)
    queue.add("a")
    queue.add("b")
    queue.done(key)
    assert await queue.get() == "a"


async def test_add_after_urgent() -> None:
    queue = WorkQueue[str]()
    queue.add("normal")
    queue.add_after("retry", 0.01, urgent=True)
    await asyncio.sleep(0.05)
    assert await queue.get() == "retry"


async def test_urgent_counts_waiting_and_active_urgent_keys() -> None:
    queue = WorkQueue[str]()
    queue.add("status")
    queue.add("submit", urgent=True)
    assert queue.urgent() == 1
    key = await queue.get()
    assert key == "submit"
    assert queue.urgent() == 1
    queue.done(key)
    assert queue.urgent() == 0
    assert await queue.get() == "status"
    assert queue.urgent() == 0


async def test_a_failing_key_waits_longer_after_each_failure_until_forgotten() -> None:
    queue = WorkQueue[str](base_delay=0.01, max_delay=0.04)
    delays = [queue.add_rate_limited("k") for _ in range(4)]
    assert delays == [0.01, 0.02, 0.04, 0.04]
    assert queue.failures("k") == 4
    queue.forget("k")
    assert queue.failures("k") == 0
    assert queue.add_rate_limited("k") == 0.01


async def test_failures_are_counted_per_key() -> None:
    queue = WorkQueue[str](base_delay=1.0, max_delay=8.0)
    queue.add_rate_limited("a")
    queue.add_rate_limited("a")
    assert queue.add_rate_limited("b") == 1.0
    assert (queue.failures("a"), queue.failures("b")) == (2, 1)


async def test_a_rate_limited_key_is_handed_out_after_its_delay() -> None:
    queue = WorkQueue[str](base_delay=0.02)
    queue.add_rate_limited("k")
    assert "k" not in queue
    assert await asyncio.wait_for(queue.get(), 1) == "k"


async def test_an_event_runs_a_rate_limited_key_at_once() -> None:
    queue = WorkQueue[str](base_delay=60.0)
    queue.add_rate_limited("k")
    queue.add("k")
    assert await asyncio.wait_for(queue.get(), 1) == "k"


def test_keys_may_be_tuples_and_are_added_without_a_running_loop() -> None:
    queue = WorkQueue[tuple[str, str]]()
    queue.add(("SlurmJob", "a"))
    queue.add(("SlurmJob", "a"))
    assert queue.waiting() == [("SlurmJob", "a")]
    assert ("SlurmJob", "a") in queue
