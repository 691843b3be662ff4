from __future__ import annotations

import asyncio

from wlmvk.kubelet.metrics import Counter, Histogram, KubeletMetrics
from wlmvk.kubelet.queue import KeyedQueue


async def test_a_waiting_key_is_queued_once() -> None:
    queue = KeyedQueue()
    queue.add("a")
    queue.add("a")
    queue.add("b")
    assert len(queue) == 2
    assert await queue.get() == "a"
    assert await queue.get() == "b"


async def test_a_key_being_worked_on_is_handed_out_again_after_done() -> None:
    queue = KeyedQueue()
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
    queue = KeyedQueue()
    queue.add_after("late", 0.05)
    assert len(queue) == 0
    assert await asyncio.wait_for(queue.get(), 1) == "late"


async def test_add_cancels_a_pending_delayed_add() -> None:
    queue = KeyedQueue()
    queue.add_after("k", 0.05)
    queue.add("k")
    assert await queue.get() == "k"
    queue.done("k")
    await asyncio.sleep(0.1)
    assert len(queue) == 0


def test_exposition_format() -> None:
    counter = Counter("c_total", "help text")
    counter.inc(method='a"b')
    counter.inc(2, method='a"b')
    assert counter.render() == [
        "# HELP c_total help text",
        "# TYPE c_total counter",
        'c_total{method="a\\"b"} 3',
    ]
    histogram = Histogram("h_seconds", "latency", buckets=(0.1, 1.0))
    histogram.observe(0.05, m="x")
    histogram.observe(0.5, m="x")
    lines = histogram.render()
    assert 'h_seconds_bucket{m="x",le="0.1"} 1' in lines
    assert 'h_seconds_bucket{m="x",le="1"} 2' in lines
    assert 'h_seconds_bucket{m="x",le="+Inf"} 2' in lines
    assert 'h_seconds_count{m="x"} 2' in lines


def test_kubelet_metrics_render_pods_by_phase() -> None:
    metrics = KubeletMetrics(lambda: {"Running": 2, "Pending": 1})
    text = metrics.render()
    assert 'wlmvk_kubelet_pods{phase="Running"} 2' in text
    assert text.endswith("\n")


async def test_urgent_keys_are_handed_out_first_in_order() -> None:
    queue = KeyedQueue()
    queue.add("status-1")
    queue.add("submit-1", urgent=True)
    queue.add("status-2")
    queue.add("submit-2", urgent=True)
    assert [await queue.get() for _ in range(4)] == ["submit-1", "submit-2", "status-1", "status-2"]


async def test_a_waiting_key_added_urgent_moves_forward_once() -> None:
    queue = KeyedQueue()
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
    queue = KeyedQueue()
    queue.add("a")
    key = await queue.get()
    queue.add("a", urgent=True)
    queue.add("a")
    queue.add("b")
    queue.done(key)
    assert await queue.get() == "a"


async def test_add_after_urgent() -> None:
    queue = KeyedQueue()
    queue.add("normal")
    queue.add_after("retry", 0.01, urgent=True)
    await asyncio.sleep(0.05)
    assert await queue.get() == "retry"


async def test_urgent_counts_waiting_and_active_urgent_keys() -> None:
    queue = KeyedQueue()
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
