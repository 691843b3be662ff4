"""What the operator writes to the API server per SlurmJob, counted on the in-memory plane.

The operator runs in-process against the in-memory API server with no controllers; the test plays
the scheduler and the kubelet (the binding, the job id annotation, the pod's status), so each
write the operator makes is its own and the counts are exact. A SlurmJob through its steps gets
three status writes (Pending when its pod is made; Queued with the job id once the pod is bound,
annotated and given its first status, which come together; Succeeded) and two Events (Created,
Succeeded): issue 35's cut of the per-step Events and writes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from tests.fixtures.polling import eventually
from tests.unit.operator.builders import virtual_node
from wlmvk.core import names
from wlmvk.kube.bodies import EVENTS, NODES, PODS
from wlmvk.kube.client import KubeClient
from wlmvk.kube.watching import Changed, WatchOptions, watch
from wlmvk.operator.app import serve
from wlmvk.operator.controller import SLURMJOBS
from wlmvk.operator.settings import OperatorSettings

pytestmark = pytest.mark.apiserver(controllers=False)

JOBS = ("w1", "w2", "w3")
NODE = names.node_name("c1", "debug")
FINISHED = "2026-12-06T20:00:09Z"


async def until(probe: Callable[[], Awaitable[Any]], what: str) -> Any:
    return await eventually(probe, timeout=30, every=0.05, what=what, tolerate=())


async def test_a_slurmjob_costs_three_status_writes_and_two_events(apiserver: Any, kube: KubeClient) -> None:
    crd = await apiserver.kubectl("apply", "-f", "manifests/crds/slurmjobs.yaml")
    assert crd.returncode == 0, crd.stderr
    await kube.create(NODES, virtual_node())
    written: dict[str, list[tuple[str, str]]] = {name: [] for name in JOBS}

    async def follow() -> None:  # every write that changed a SlurmJob's status, in order
        async for event in watch(kube, SLURMJOBS, WatchOptions(namespace="default")):
            if isinstance(event, Changed) and event.type == "MODIFIED":
                status = event.object.get("status") or {}
                written[event.object["metadata"]["name"]].append((status["status"], status["reason"]))

    stop = asyncio.Event()
    # The batch period made long enough that this test's three pod writes always fall in it.
    settings = OperatorSettings(leader_election=False, identity="op-w", pod_batch_period=2.0)
    following = asyncio.create_task(follow())
    operator = asyncio.create_task(serve(settings, kubeconfig=str(apiserver.kubeconfig), stop=stop))
    try:
        await asyncio.sleep(0.3)  # the watch has listed
        for name in JOBS:
            body = {
                "apiVersion": "wlm.sylabs.io/v1alpha1",
                "kind": "SlurmJob",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"batch": "#!/bin/sh\necho hi\n"},
            }
            await kube.create(SLURMJOBS, body, namespace="default")

        async def all_pending() -> bool:
            return all(("Pending", "Scheduling") in written[name] for name in JOBS)

        await until(all_pending, "each SlurmJob Pending with its pod made")
        await asyncio.sleep(0.2)  # the operator has taken its own write's echo
        for number, name in enumerate(JOBS, 1):  # the scheduler and the kubelet, back to back
            pod = f"{name}-job"
            binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": pod},
                       "target": {"apiVersion": "v1", "kind": "Node", "name": NODE}}  # fmt: skip
            await kube.request("POST", f"/api/v1/namespaces/default/pods/{pod}/binding", body=binding)
            annotation = {"metadata": {"annotations": {names.ANNOTATION_JOB_ID: str(number)}}}
            await kube.patch(PODS, pod, annotation, namespace="default")
            scheduled = {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}]}
            await kube.patch_status(PODS, pod, {"status": scheduled}, namespace="default")

        async def all_queued() -> bool:
            return all(("Pending", "Queued") in written[name] for name in JOBS)

        await until(all_queued, "each SlurmJob Queued")
        for name in JOBS:
            done = {"name": "jt1", "state": {"terminated": {"exitCode": 0, "reason": "Completed",
                    "startedAt": "2026-12-06T20:00:05Z", "finishedAt": FINISHED}}}  # fmt: skip
            status = {"phase": "Succeeded", "containerStatuses": [done]}
            await kube.patch_status(PODS, f"{name}-job", {"status": status}, namespace="default")

        async def all_succeeded() -> bool:
            return all(("Succeeded", "Completed") in written[name] for name in JOBS)

        await until(all_succeeded, "each SlurmJob Succeeded")
        await asyncio.sleep(2.5)  # a batched reconcile still to come would write here
        events = (await kube.list(EVENTS, namespace="default"))["items"]
    finally:
        stop.set()
        await asyncio.wait_for(operator, 20)
        following.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await following
    for number, name in enumerate(JOBS, 1):
        assert written[name] == [("Pending", "Scheduling"), ("Pending", "Queued"), ("Succeeded", "Completed")]
        job = await kube.get(SLURMJOBS, name, namespace="default")
        assert (job["status"]["jobId"], job["status"]["node"], job["status"]["completionTime"]) == (
            str(number),
            NODE,
            FINISHED,
        )
        mine = [e for e in events if e["involvedObject"]["name"] == name]
        assert [(e["type"], e["reason"], e.get("count") or 1) for e in mine] == [
            ("Normal", "Created", 1),
            ("Normal", "Succeeded", 1),
        ]
