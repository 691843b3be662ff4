"""The kubelet's usage source behind /stats/summary and /metrics/resource, over HTTP: one JobUsage
call per interval for both, every node's path, the collector's error answer, unknown nodes; the
call's budget, an unanswered job keeping its last sample, and a scrape that waits at most one
interval."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import aiohttp
import structlog
from prometheus_client.parser import text_string_to_metric_families

from tests.fixtures import polling
from wlmvk.core.backend import Backend
from wlmvk.core.errors import Unavailable
from wlmvk.core.jobs import JobId
from wlmvk.core.usage import JobUsage, UsageSample
from wlmvk.kube import tls
from wlmvk.kubelet.api import server
from wlmvk.kubelet.api.stats import sampling
from wlmvk.kubelet.api.stats.summary import PodJob

STARTED = datetime.now(UTC) - timedelta(minutes=5)
PODS = [
    PodJob("default", "a", "ua", "slurm-c-debug", "job", JobId(1), STARTED),
    PodJob("default", "b", "ub", "slurm-c-cpu", "job", JobId(2), STARTED),
]


class Usage:
    """Answers JobUsage with a CPU time that grows by 10 s per call; ``unanswered`` jobs are not
    read; while ``hold`` is set, a call waits for it."""

    def __init__(self) -> None:
        self.asked: list[list[JobId]] = []
        self.budgets: list[float | None] = []
        self.down = False
        self.unanswered: set[JobId] = set()
        self.hold: asyncio.Event | None = None

    async def usage(self, job_ids: Sequence[JobId], *, budget: float | None = None) -> UsageSample:
        if self.down:
            raise Unavailable("red-box unreachable")
        self.asked.append(list(job_ids))
        self.budgets.append(budget)
        if self.hold is not None:
            await self.hold.wait()
        seconds = 10.0 * len(self.asked)
        now = datetime.now(UTC)
        read = [job for job in job_ids if job not in self.unanswered]
        usages = {job: JobUsage(job, timedelta(seconds=seconds * job), 4096, now) for job in read}
        lost = frozenset(job_ids) - set(read)
        return UsageSample(usages, lost, "sstat: no answer within the budget of 7 s (killed)" if lost else "")


def source(backend: Usage, interval: float, keep_for: float | None = None) -> sampling.StatsSource:
    return sampling.StatsSource(
        backend=cast(Backend, backend),
        pods=lambda: PODS,
        nodes=lambda: ["slurm-c-cpu", "slurm-c-debug"],
        interval=interval,
        keep_for=keep_for,
    )


def values(text: str) -> dict[str, Any]:
    return {
        f"{s.name}{sorted(s.labels.values())}": s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


async def get(port: int, path: str) -> tuple[int, str, str]:
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"https://127.0.0.1:{port}{path}", ssl=context) as response,
    ):
        return response.status, response.headers["Content-Type"], await response.text()


async def serve(src: sampling.StatsSource) -> tuple[aiohttp.web.AppRunner, int]:
    handlers = server.Handlers(summary=src.summary, resource_metrics=src.resource_metrics)
    context = tls.server_context(cert="", key="", client_ca="", names=["localhost"], addresses=["127.0.0.1"])
    runner = aiohttp.web.AppRunner(server.kubelet_app(handlers))
    await runner.setup()
    await aiohttp.web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context).start()
    return runner, runner.addresses[0][1]


async def test_every_scrape_of_an_interval_shares_one_jobusage_call() -> None:
    backend = Usage()
    runner, port = await serve(source(backend, interval=3600))
    try:
        debug = await get(port, "/metrics/resource/slurm-c-debug")
        cpu = await get(port, "/metrics/resource/slurm-c-cpu")
        both = await get(port, "/metrics/resource")
        summary = await get(port, "/stats/summary")
    finally:
        await runner.cleanup()
    assert backend.asked == [[JobId(1), JobId(2)]]
    assert debug[:2] == (200, "text/plain; version=0.0.4; charset=utf-8")
    assert summary[0] == 200
    a, b = "['a', 'default', 'job']", "['b', 'default', 'job']"
    assert values(debug[2]) == {
        f"container_cpu_usage_seconds_total{a}": 10.0,
        f"container_memory_working_set_bytes{a}": 4096,
        f"container_start_time_seconds{a}": STARTED.timestamp(),
        "node_cpu_usage_seconds_total[]": 10.0,
        "node_memory_working_set_bytes[]": 4096,
        "pod_cpu_usage_seconds_total['a', 'default']": 10.0,
        "pod_memory_working_set_bytes['a', 'default']": 4096,
        "resource_scrape_error[]": 0,
    }
    assert values(cpu[2])[f"container_cpu_usage_seconds_total{b}"] == 20.0
    assert values(cpu[2])["node_cpu_usage_seconds_total[]"] == 20.0
    assert f"container_cpu_usage_seconds_total{a}" not in values(cpu[2])
    assert values(both[2])["node_cpu_usage_seconds_total[]"] == 30.0
    assert values(both[2])["node_memory_working_set_bytes[]"] == 8192


async def test_a_new_interval_asks_again_and_the_counters_rise() -> None:
    backend = Usage()
    src = source(backend, interval=0)
    first = values(await src.resource_metrics("slurm-c-debug"))
    second = values(await src.resource_metrics("slurm-c-debug"))
    assert len(backend.asked) == 2
    assert (first["node_cpu_usage_seconds_total[]"], second["node_cpu_usage_seconds_total[]"]) == (10.0, 20.0)


async def test_red_box_down_is_the_collectors_error_and_an_unknown_node_404() -> None:
    backend = Usage()
    backend.down = True
    runner, port = await serve(source(backend, interval=0))
    try:
        down = await get(port, "/metrics/resource/slurm-c-debug")
        unknown = await get(port, "/metrics/resource/slurm-other-debug")
        summary = await get(port, "/stats/summary")
    finally:
        await runner.cleanup()
    assert (down[0], values(down[2])) == (200, {"resource_scrape_error[]": 1})
    assert unknown[0] == 404
    assert unknown[2] == 'node "slurm-other-debug" is not served by this kubelet\n'
    assert summary == (503, "text/plain; charset=utf-8", "red-box unreachable\n")


async def test_the_call_gets_part_of_the_interval_as_its_budget() -> None:
    backend = Usage()
    await source(backend, interval=10).resource_metrics(None)
    assert backend.budgets == [10 * sampling.BUDGET_SHARE]
    assert sampling.BUDGET_SHARE < 1


async def test_an_unanswered_job_keeps_its_last_figures_and_their_time() -> None:
    backend = Usage()
    src = source(backend, interval=0, keep_for=3600)
    first = await src.resource_metrics(None)
    backend.unanswered = {JobId(2)}
    with structlog.testing.capture_logs() as logs:
        second = await src.resource_metrics(None)
    assert [(e["event"], e["jobs"], e["reason"]) for e in logs] == [
        ("usage not read for some running jobs", 1, "sstat: no answer within the budget of 7 s (killed)")
    ]
    a, b = "['a', 'default', 'job']", "['b', 'default', 'job']"
    assert values(second)[f"container_cpu_usage_seconds_total{a}"] == 20.0, "job 1 was read again"
    assert values(second)[f"container_cpu_usage_seconds_total{b}"] == 20.0, "job 2 kept its last figure"
    assert values(second)["resource_scrape_error[]"] == 0
    # Job 2's lines carry its first sample's timestamp, so a consumer sees no new point for it.
    stamp = next(
        line.rsplit(" ", 1)[1]
        for line in first.splitlines()
        if line.startswith('pod_cpu_usage_seconds_total{namespace="default",pod="b"}')
    )
    assert f'pod_cpu_usage_seconds_total{{namespace="default",pod="b"}} 20.0 {stamp}' in second.splitlines()
    summary = await src.summary()
    pods = {p["podRef"]["name"]: p for p in summary["pods"]}
    assert pods["b"]["cpu"]["usageCoreNanoSeconds"] == 20 * 10**9


async def test_a_scrape_waits_one_interval_then_gets_the_last_sample() -> None:
    backend = Usage()
    src = source(backend, interval=0.2)
    first = values(await src.resource_metrics(None))
    await asyncio.sleep(0.25)
    backend.hold = asyncio.Event()
    stale = values(await src.resource_metrics(None))  # the call hangs: after 0.2 s, the last sample
    assert stale == first
    assert len(backend.asked) == 2
    backend.hold.set()
    await asyncio.sleep(0.05)
    fresh = values(await src.resource_metrics(None))
    assert fresh["node_cpu_usage_seconds_total[]"] == 60.0, "the late answer is served once it came"


async def test_a_scrape_while_the_first_call_hangs_is_the_collectors_error_then_the_sample() -> None:
    """No sample yet and the one call unanswered: the scrape stops waiting (after one interval,
    a bound in time this test does not judge) and answers the collector's error, without asking
    red-box again; once the answer came, scrapes serve it."""
    backend = Usage()
    backend.hold = asyncio.Event()
    src = source(backend, interval=0.1)
    assert values(await src.resource_metrics(None)) == {"resource_scrape_error[]": 1}
    assert backend.asked == [[JobId(1), JobId(2)]]
    backend.hold.set()

    async def sampled() -> dict[str, Any] | None:
        got = values(await src.resource_metrics(None))
        return got if got["resource_scrape_error[]"] == 0 else None

    got = await polling.eventually(sampled, timeout=30, every=0.05)
    assert got["node_memory_working_set_bytes[]"] == 2 * 4096
