"""The kubelet's control loops against the in-memory API server and a fake red-box.

Fast checks of what the end-to-end tests then confirm with the real Slurm:
nodes and leases, pods -> jobs exactly once, batched states, status,
deletion, reachability, restarts.
"""

from __future__ import annotations

import asyncio
import datetime
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.fixtures import polling
from tests.fixtures.apiserver import RunningApiServer, failure_status
from tests.fixtures.kubelet import StartKubelet
from tests.unit.kubelet.fakebackend import FakeBackend
from wlmvk.core import names
from wlmvk.core.errors import WlmvkError
from wlmvk.core.jobs import GpuKind, JobId, PartitionResources
from wlmvk.kube.bodies import LEASES, NODES, PODS, Body
from wlmvk.kube.client import KubeClient
from wlmvk.kubelet.node.spread import phase

NODE = "slurm-test-debug"


async def eventually(check: Callable[[], Awaitable[Any]], timeout: float = 10.0) -> Any:
    return await polling.eventually(check, timeout=timeout, every=0.1, tolerate=(AssertionError, WlmvkError))


def pod_body(name: str, *, node: str = NODE, command: list[str] | None = None, **spec: Any) -> Body:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "nodeName": node,
            "restartPolicy": "Never",
            "containers": [{"name": "main", "image": "busybox", "command": command or ["echo", "hi"]}],
            **spec,
        },
    }


@pytest.fixture
def fake() -> FakeBackend:
    return FakeBackend()


async def start(
    kubelet_factory: StartKubelet, apiserver: RunningApiServer, fake: FakeBackend, **kw: Any
) -> Any:
    return await kubelet_factory(kubeconfig=apiserver.kubeconfig, backend=fake, **kw)


async def get_pod(kube: KubeClient, name: str) -> Body:
    return await kube.get(PODS, name, namespace="default")


async def test_one_ready_node_per_partition_with_labels_taint_and_lease(
    apiserver: RunningApiServer, kube: KubeClient, kubelet_factory: StartKubelet, fake: FakeBackend
) -> None:
    kubelet = await start(kubelet_factory, apiserver, fake)
    listing = await kube.list(NODES, label_selector="type=virtual-kubelet")
    nodes = {item["metadata"]["name"]: item for item in listing["items"]}
    assert set(nodes) == {"slurm-test-debug", "slurm-test-long"}
    debug = nodes[NODE]
    assert debug["metadata"]["labels"][names.LABEL_PARTITION] == "debug"
    assert debug["metadata"]["labels"][names.LABEL_AGENT_HOST] == "agent-host"
    assert debug["spec"]["taints"][0]["key"] == names.TAINT_KEY
    assert debug["status"]["capacity"]["nvidia.com/gpu"] == "2"
    assert debug["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] == kubelet.port
    ready = {c["type"]: c["status"] for c in debug["status"]["conditions"]}
    assert ready == {"Ready": "True", "WLMReachable": "True"}
    lease = await kube.get(LEASES, NODE, namespace=names.NODE_LEASE_NAMESPACE)
    assert lease["spec"]["leaseDurationSeconds"] == 40
    assert lease["metadata"]["ownerReferences"][0]["uid"] == debug["metadata"]["uid"]


async def test_partitions_appear_and_vanish(
    apiserver: RunningApiServer, kube: KubeClient, kubelet_factory: StartKubelet, fake: FakeBackend
) -> None:
    await start(kubelet_factory, apiserver, fake, discovery_interval=0.2)
    fake.partition_table["extra"] = PartitionResources("extra", 1, 2, 100, 60)
    await eventually(lambda: kube.get(NODES, "slurm-test-extra"))
    del fake.partition_table["extra"]

    async def gone() -> bool:
        names_ = {i["metadata"]["name"] for i in (await kube.list(NODES))["items"]}
        return "slurm-test-extra" not in names_

    await eventually(gone)


async def test_pod_runs_as_one_job_and_ends_succeeded(
    apiserver: RunningApiServer, kube: KubeClient, kubelet_factory: StartKubelet, fake: FakeBackend
) -> None:
    await start(kubelet_factory, apiserver, fake)
    created = await kube.create(PODS, pod_body("p1"), namespace="default")
    uid = created["metadata"]["uid"]

    async def annotated() -> str:
        pod = await get_pod(kube, "p1")
        return str(pod["metadata"].get("annotations", {}).get(names.ANNOTATION_JOB_ID, ""))

    job_id = JobId(int(await eventually(annotated)))
    assert fake.job_of(uid) == job_id
    spec = fake.specs[job_id]
    assert spec.partition == "debug"
    assert "exec echo hi" in spec.script

    async def phase_is(phase: str) -> bool:
        return (await get_pod(kube, "p1")).get("status", {}).get("phase") == phase

    async def waiting_reason() -> str:
        statuses = (await get_pod(kube, "p1")).get("status", {}).get("containerStatuses") or [{}]
        return str(statuses[0].get("state", {}).get("waiting", {}).get("reason", ""))

    assert await eventually(waiting_reason) == "Priority"
    fake.run(job_id)
    await eventually(lambda: phase_is("Running"))
    fake.finish(job_id)
    await eventually(lambda: phase_is("Succeeded"))
    pod = await get_pod(kube, "p1")
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert terminated["reason"] == "Job finished"
    assert terminated["exitCode"] == 0
    assert fake.calls["submit"] == 1
    events = await kube.list(__import__("wlmvk.kube.bodies", fromlist=["EVENTS"]).EVENTS, namespace="default")
    reasons = [e["reason"] for e in events["items"] if e["involvedObject"]["name"] == "p1"]
    assert {"Submitted", "Started", "Completed"} <= set(reasons)


async def test_failing_job_ends_failed_with_exit_code(
    apiserver: RunningApiServer, kube: KubeClient, kubelet_factory: StartKubelet, fake: FakeBackend
) -> None:
    await start(kubelet_factory, apiserver, fake)
    created = await kube.create(PODS, pod_body("bad"), namespace="default")
    job_id = await eventually(lambda: _job(fake, created))
    fake.finish(job_id, exit_code=3)

    async def failed() -> Body | None:
        pod = await get_pod(kube, "bad")
        return pod if pod.get("status", {}).get("phase") == "Failed" else None

    pod = await eventually(failed)
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (3, "Error")


async def _job(fake: FakeBackend, created: Body) -> JobId | None:
    try:
        return fake.job_of(created["metadata"]["uid"])
    except StopIteration:
        return None


async def test_status_is_one_batched_call_per_tick(
    apiserver: RunningApiServer, kube: KubeClient, kubelet_factory: StartKubelet, fake: FakeBackend
) -> None:
    kubelet = await start(kubelet_factory, apiserver, fake, status_interval=3600)
    for index in range(5):
        await kube.create(PODS, pod_body(f"b{index}"), namespace="default")
    await eventually(lambda: _all_submitted(fake, 5))
    before = fake.calls["states"]
    assert kubelet.pods is not None
    await kubelet.pods.tick()
    assert fake.calls["states"] == before + 1


async def test_status_ticks_never_starve_behind_a_hanging_submission(
    apiserver: RunningApiServer, kube: KubeClient, kubelet_factory: StartKubelet, fake: FakeBackend
) -> None:
    """A submission under way holds the status tick back (by at most one interval, a bound in
    time this test does not judge), never for good: ticks go on while it hangs."""
    await start(kubelet_factory, apiserver, fake, status_interval=0.5)
    await kube.create(PODS, pod_body("first"), namespace="default")
    await eventually(lambda: _all_submitted(fake, 1))
    fake.submit_gate = asyncio.Event()  # the next submission hangs (red-box slow)
    await kube.create(PODS, pod_body("second"), namespace="default")
    await eventually(lambda: _submit_calls(fake, 2))
    before = fake.calls["states"]

    async def ticked_twice() -> bool:
        return fake.calls["states"] >= before + 2

    await eventually(ticked_twice)
    assert fake.calls["submit"] == 2, "the second submission still hangs, the first is done"

    async def waiting_reason() -> str:
        statuses = (await get_pod(kube, "first")).get("status", {}).get("containerStatuses") or [{}]
        return str(statuses[0].get("state", {}).get("waiting", {}).get("reason", ""))

    assert await eventually(waiting_reason) == "Priority"  # the first pod's status still came
    fake.submit_gate.set()
    await eventually(lambda: _all_submitted(fake, 2))


async def _submit_calls(fake: FakeBackend, count: int) -> bool:
    return fake.calls["submit"] >= count


async def _all_submitted(fake: FakeBackend, count: int) -> bool:
    return len(fake.jobs) == count


async def test_unsupported_pod_fails_with_reason_and_event(
    apiserver: RunningApiServer, kube: KubeClient, kubelet_factory: StartKubelet, fake: FakeBackend
) -> None:
    await start(kubelet_factory, apiserver, fake)
    body = pod_body("ports")
    body["spec"]["containers"][0]["ports"] = [{"containerPort": 80}]
    await kube.create(PODS, body, namespace="default")

    async def failed() -> Body | None:
        pod = await get_pod(kube, "ports")
        return pod if pod.get("status", {}).get("phase") == "Failed" else None

    pod = await eventually(failed)
    assert pod["status"]["reason"] == "UnsupportedPorts"
    assert fake.calls["submit"] == 0


async def test_delete_cancels_then_removes_the_pod(
    apiserver: RunningApiServer, kube: KubeClient, kubelet_factory: StartKubelet, fake: FakeBackend
) -> None:
    await start(kubelet_factory, apiserver, fake)
    created = await kube.create(PODS, pod_body("victim"), namespace="default")
    job_id = await eventually(lambda: _job(fake, created))
    fake.run(job_id)
    await kube.delete(PODS, "victim", namespace="default")

    async def gone() -> bool:
        try:
            await get_pod(kube, "victim")
        except Exception:
            return True
        return False

    await eventually(gone)
    assert fake.jobs[job_id].status.value == "CANCELLED"


async def test_red_box_down_marks_nodes_not_ready_and_leaves_pods(
    apiserver: RunningApiServer, kube: KubeClient, kubelet_factory: StartKubelet, fake: FakeBackend
) -> None:
    await start(kubelet_factory, apiserver, fake)
    created = await kube.create(PODS, pod_body("steady"), namespace="default")
    job_id = await eventually(lambda: _job(fake, created))
    fake.run(job_id)
    await eventually(lambda: _phase(kube, "steady", "Running"))
    fake.down = True

    async def ready(value: str) -> bool:
        node = await kube.get(NODES, NODE)
        conditions = {c["type"]: c for c in node["status"]["conditions"]}
        return bool(conditions["Ready"]["status"] == value)

    await eventually(lambda: ready("False"))
    assert (await get_pod(kube, "steady"))["status"]["phase"] == "Running"
    fake.down = False
    await eventually(lambda: ready("True"))


async def _phase(kube: KubeClient, name: str, phase: str) -> bool:
    return (await get_pod(kube, name)).get("status", {}).get("phase") == phase


async def test_pod_deleted_while_red_box_is_down_is_cancelled_when_it_returns(
    apiserver: RunningApiServer, kube: KubeClient, kubelet_factory: StartKubelet, fake: FakeBackend
) -> None:
    await start(kubelet_factory, apiserver, fake)
    created = await kube.create(PODS, pod_body("later"), namespace="default")
    job_id = await eventually(lambda: _job(fake, created))
    fake.down = True
    await kube.delete(PODS, "later", namespace="default")
    await asyncio.sleep(1.0)
    assert not fake.jobs[job_id].status.terminal
    fake.down = False

    async def cancelled() -> bool:
        return fake.jobs[job_id].status.value == "CANCELLED"

    await eventually(cancelled, timeout=20)


async def test_restart_adopts_and_never_submits_twice(
    apiserver: RunningApiServer, kube: KubeClient, kubelet_factory: StartKubelet, fake: FakeBackend
) -> None:
    # A job submitted by a kubelet that died before writing the annotation.
    created = await kube.create(PODS, pod_body("orphan"), namespace="default")
    from wlmvk.core.jobs import JobSpec

    job_id = await fake.submit(
        JobSpec(script="#!/bin/sh\n", partition="debug", idempotency_key=created["metadata"]["uid"])
    )
    fake.calls.clear()
    await start(kubelet_factory, apiserver, fake)

    async def annotated() -> bool:
        pod = await get_pod(kube, "orphan")
        return pod["metadata"].get("annotations", {}).get(names.ANNOTATION_JOB_ID) == str(job_id)

    await eventually(annotated)
    assert fake.calls["submit"] == 0
    assert fake.calls["find"] == 2  # the startup probe, then the pod's own lookup


async def test_a_job_found_under_the_key_of_a_pod_present_at_start_is_adopted_whatever_its_spec(
    apiserver: RunningApiServer, kube: KubeClient, kubelet_factory: StartKubelet, fake: FakeBackend
) -> None:
    """A predecessor submitted the pod's job, and this kubelet would refuse the pod's spec: the
    lookup comes first, so the job is followed (before: the pod failed UnsupportedPorts while its
    job ran on in Slurm, followed by nobody)."""
    body = pod_body("inherited")
    body["spec"]["containers"][0]["ports"] = [{"containerPort": 80}]
    created = await kube.create(PODS, body, namespace="default")
    from wlmvk.core.jobs import JobSpec

    job_id = await fake.submit(
        JobSpec(script="#!/bin/sh\n", partition="debug", idempotency_key=created["metadata"]["uid"])
    )
    fake.calls.clear()
    await start(kubelet_factory, apiserver, fake)

    async def annotated() -> bool:
        pod = await get_pod(kube, "inherited")
        return pod["metadata"].get("annotations", {}).get(names.ANNOTATION_JOB_ID) == str(job_id)

    await eventually(annotated)
    fake.finish(job_id)
    await eventually(lambda: _phase(kube, "inherited", "Succeeded"))
    assert fake.calls["submit"] == 0


async def test_pods_present_at_start_are_looked_up_before_submission(
    apiserver: RunningApiServer, kube: KubeClient, kubelet_factory: StartKubelet, fake: FakeBackend
) -> None:
    for index in range(3):
        await kube.create(PODS, pod_body(f"early{index}"), namespace="default")
    await start(kubelet_factory, apiserver, fake)
    await eventually(lambda: _all_submitted(fake, 3))
    assert fake.calls["find"] == 1 + 3
    await kube.create(PODS, pod_body("late"), namespace="default")
    await eventually(lambda: _all_submitted(fake, 4))
    assert fake.calls["find"] == 1 + 3  # pods created while running need no lookup


async def test_original_red_box_relies_on_the_annotation(
    apiserver: RunningApiServer, kube: KubeClient, kubelet_factory: StartKubelet, fake: FakeBackend
) -> None:
    fake.original = True
    await start(kubelet_factory, apiserver, fake)
    created = await kube.create(PODS, pod_body("old"), namespace="default")
    job_id = await eventually(lambda: _job(fake, created))
    fake.finish(job_id)
    await eventually(lambda: _phase(kube, "old", "Succeeded"))
    assert fake.calls["submit"] == 1


async def test_logs_follow_over_https(
    apiserver: RunningApiServer, kube: KubeClient, kubelet_factory: StartKubelet, fake: FakeBackend
) -> None:
    kubelet = await start(kubelet_factory, apiserver, fake)
    created = await kube.create(PODS, pod_body("talker"), namespace="default")
    job_id = await eventually(lambda: _job(fake, created))
    fake.run(job_id)
    fake.write(job_id, b"one\ntwo\n")
    await eventually(lambda: _phase(kube, "talker", "Running"))
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.load_cert_chain(*apiserver.kubelet_client)  # as the API server's log proxy
    base = f"https://127.0.0.1:{kubelet.port}"
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{base}/containerLogs/default/talker/main?tailLines=1", ssl=context) as r:
            assert r.status == 200
            assert await r.text() == "two\n"
        async with session.get(f"{base}/containerLogs/default/talker/main?previous=true", ssl=context) as r:
            assert r.status == 400
        async with session.get(f"{base}/exec/default/talker/main", ssl=context) as r:
            assert (r.status, await r.json()) == (
                400,
                failure_status(
                    400, "BadRequest", "exec needs a command: no 'command' query parameter was given"
                ),
            )
        async with session.get(f"{base}/attach/default/talker/main", ssl=context) as r:
            assert (r.status, await r.json()) == (
                501,
                failure_status(
                    501, "", "attach is not supported: a Slurm batch job has no terminal to attach to"
                ),
            )
        async with session.get(f"{base}/containerLogs/default/nobody/main", ssl=context) as r:
            assert r.status == 404
        async with session.get(f"{base}/containerLogs/default/talker/main?follow=true", ssl=context) as r:
            assert r.status == 200
            assert await r.content.readline() == b"one\n"
            assert await r.content.readline() == b"two\n"
            fake.write(job_id, b"three\n")
            line = await asyncio.wait_for(r.content.readline(), 5)
            assert line == b"three\n"
            fake.finish(job_id)
            rest = await asyncio.wait_for(r.read(), 15)
            assert rest == b""
        async with session.get(f"{base}/pods", ssl=context) as r:
            names_ = [p["metadata"]["name"] for p in (await r.json())["items"]]
            assert "talker" in names_
    await eventually(lambda: _phase(kube, "talker", "Succeeded"))
    metrics_url = f"http://127.0.0.1:{kubelet.metrics_port}/metrics"

    async def pods_by_phase() -> dict[str, float] | None:
        async with aiohttp.ClientSession() as session, session.get(metrics_url) as r:
            text = await r.text()
        assert "wlmvk_kubelet_job_submissions_total" in text
        (family,) = [f for f in text_string_to_metric_families(text) if f.name == "wlmvk_kubelet_pods"]
        phases = {sample.labels["phase"]: sample.value for sample in family.samples}
        return phases if phases.get("Succeeded") == 1.0 else None

    # The gauge counts the kubelet's own records: the finished job's pod, once it has seen it end.
    assert await eventually(pods_by_phase) == {"Succeeded": 1.0}


async def test_pod_on_a_vanished_partition_fails(
    apiserver: RunningApiServer, kube: KubeClient, kubelet_factory: StartKubelet, fake: FakeBackend
) -> None:
    await start(kubelet_factory, apiserver, fake, discovery_interval=0.2)
    del fake.partition_table["long"]

    async def dropped() -> bool:
        return "slurm-test-long" not in (await kube.list(NODES))["items"].__repr__()

    await eventually(dropped)
    await kube.create(PODS, pod_body("late", node="slurm-test-long"), namespace="default")

    async def failed() -> Body | None:
        pod = await get_pod(kube, "late")
        return pod if pod.get("status", {}).get("phase") == "Failed" else None

    assert (await eventually(failed))["status"]["reason"] == "PartitionGone"
    assert fake.calls["submit"] == 0


async def test_an_unexpected_error_in_a_status_tick_does_not_stop_the_kubelet(
    apiserver: RunningApiServer,
    kube: KubeClient,
    kubelet_factory: StartKubelet,
    fake: FakeBackend,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A library error nobody expected (here: in the batched state query) is survived."""
    await start(kubelet_factory, apiserver, fake)
    real_states = fake.states
    crashes = 0

    async def flaky(job_ids: Any) -> Any:
        nonlocal crashes
        if crashes < 2:
            crashes += 1
            raise AttributeError("'NoneType' object has no attribute '_transport'")
        return await real_states(job_ids)

    monkeypatch.setattr(fake, "states", flaky)
    await kube.create(PODS, pod_body("survivor"), namespace="default")

    async def annotated() -> str:
        pod = await get_pod(kube, "survivor")
        return str(pod["metadata"].get("annotations", {}).get(names.ANNOTATION_JOB_ID, ""))

    job_id = JobId(int(await eventually(annotated)))
    fake.finish(job_id)

    async def succeeded() -> bool:
        return (await get_pod(kube, "survivor")).get("status", {}).get("phase") == "Succeeded"

    await eventually(succeeded, timeout=20)
    assert crashes == 2


async def test_allocatable_follows_slurms_gpus_in_use_counting_the_nodes_own_running_pods_once(
    apiserver: RunningApiServer, kube: KubeClient, kubelet_factory: StartKubelet, fake: FakeBackend
) -> None:
    def slices(used: int) -> PartitionResources:
        return replace(fake.partition_table["debug"], gpu_kinds=(GpuKind("1g.10gb", 4, 4, used),))

    async def allocatable() -> dict[str, str]:
        node = await kube.get(NODES, NODE)
        return {k: v for k, v in node["status"]["allocatable"].items() if k.startswith("nvidia.com/")}

    async def becomes(wanted: dict[str, str]) -> bool:
        return await allocatable() == wanted

    fake.partition_table["debug"] = slices(0)
    await start(kubelet_factory, apiserver, fake, discovery_interval=0.2)
    await eventually(lambda: becomes({"nvidia.com/gpu": "4", "nvidia.com/mig-1g.10gb": "4"}))
    # Another's job takes one slice: allocatable falls by one.
    fake.partition_table["debug"] = slices(1)
    await eventually(lambda: becomes({"nvidia.com/gpu": "3", "nvidia.com/mig-1g.10gb": "3"}))

    body = pod_body("slice", command=["sleep", "60"])
    body["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/mig-1g.10gb": "1"}}
    created = await kube.create(PODS, body, namespace="default")

    async def submitted() -> JobId | None:
        uid = created["metadata"]["uid"]
        return next((j for j, s in fake.jobs.items() if s.idempotency_key == uid), None)

    job_id = await eventually(submitted)
    assert fake.specs[job_id].script.count("#SBATCH --gres=gpu:1g.10gb:1") == 1
    fake.run(job_id)
    await eventually(lambda: phase_of(kube, "slice", "Running"))
    # Slurm now says two in use, one the pod's own (which the scheduler counts itself): the slice
    # resource stays at 3; all GPUs (nvidia.com/gpu, not asked by the pod) fall to 2.
    fake.partition_table["debug"] = slices(2)
    await eventually(lambda: becomes({"nvidia.com/gpu": "2", "nvidia.com/mig-1g.10gb": "3"}))
    await asyncio.sleep(0.6)  # more discovery rounds: it stays
    assert await allocatable() == {"nvidia.com/gpu": "2", "nvidia.com/mig-1g.10gb": "3"}
    capacity = (await kube.get(NODES, NODE))["status"]["capacity"]
    assert (capacity["nvidia.com/gpu"], capacity["nvidia.com/mig-1g.10gb"]) == ("4", "4")


async def phase_of(kube: KubeClient, name: str, phase: str) -> bool:
    return bool((await get_pod(kube, name)).get("status", {}).get("phase") == phase)


async def test_many_nodes_renew_their_leases_each_at_its_own_phase_and_count_it(
    apiserver: RunningApiServer, kube: KubeClient, kubelet_factory: StartKubelet, fake: FakeBackend
) -> None:
    for n in range(12):
        fake.partition_table[f"p{n}"] = PartitionResources(f"p{n}", 1, 2, 100, 60)
    kubelet = await start(
        kubelet_factory, apiserver, fake, lease_renew_interval=1.0, node_status_interval=1.0
    )
    period = 1.0
    await asyncio.sleep(2.5)  # every Lease renewed twice since its node was registered
    listing = await kube.list(LEASES, namespace=names.NODE_LEASE_NAMESPACE)
    renewed = {
        item["metadata"]["name"]: datetime.datetime.strptime(
            item["spec"]["renewTime"], "%Y-%m-%dT%H:%M:%S.%fZ"
        )
        for item in listing["items"]
        if item["metadata"]["name"].startswith("slurm-test-p")
    }
    assert len(renewed) == 12
    first = min(renewed)
    for name, at in renewed.items():
        # Apart from the first node's by the difference of their phases (modulo the period).
        apart = (
            (at - renewed[first]).total_seconds() - (phase(name, period) - phase(first, period))
        ) % period
        assert min(apart, period - apart) < 0.25, (name, apart)
    assert max(renewed.values()) - min(renewed.values()) > datetime.timedelta(seconds=0.3)
    assert kubelet.metrics.lease_renewals.value() >= 24
    assert kubelet.metrics.node_status_writes.value(reason="heartbeat") >= 12
    assert kubelet.metrics.node_status_writes.value(reason="registered") == 14
