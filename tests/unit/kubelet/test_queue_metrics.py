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
