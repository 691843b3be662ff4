"""Bodies of SlurmJobs, virtual nodes and pods in the states the kubelets report."""

from __future__ import annotations

import copy
from typing import Any

from wlmvk.core import names
from wlmvk.operator import reconcile
from wlmvk.operator.settings import OperatorSettings, StagingSettings

Body = dict[str, Any]

SETTINGS = OperatorSettings(
    work_root="/jobs", staging=StagingSettings(image="wlmvk:test", command=("wlmvk",))
)
NOW = "2026-12-02T16:00:00Z"


def slurmjob(name: str = "sj1", **spec: Any) -> Body:
    spec.setdefault("batch", "#!/bin/sh\necho Hello\n")
    return {
        "apiVersion": "wlm.sylabs.io/v1alpha1",
        "kind": "SlurmJob",
        "metadata": {"name": name, "namespace": "default", "uid": "u-1", "generation": 1},
        "spec": spec,
    }


def wlmjob(name: str = "wj1", **spec: Any) -> Body:
    spec.setdefault("image", "docker://alpine")
    body = slurmjob(name, **spec)
    body["kind"] = "WlmJob"
    del body["spec"]["batch"]
    return body


def hostpath(name: str, path: str) -> Body:
    return {"name": name, "hostPath": {"path": path, "type": "DirectoryOrCreate"}}


def virtual_node(
    partition: str = "debug",
    *,
    cluster: str = "c1",
    host: str = "host1",
    cpus: int = 2,
    mem: int = 20000,
    nodes: int = 1,
    wall: int = 600,
    gpus: int = 0,
    features: tuple[str, ...] = (),
    socket: str = "",
) -> Body:
    name = names.node_name(cluster, partition)
    labels = {
        names.LABEL_TYPE: names.TYPE_VIRTUAL_KUBELET,
        names.LABEL_HOSTNAME: name,
        names.LABEL_PARTITION: partition,
        names.LABEL_NODES: str(nodes),
        names.LABEL_CPU_PER_NODE: str(cpus),
        names.LABEL_MEM_PER_NODE: str(mem),
        names.LABEL_WALL_TIME: str(wall),
        names.LABEL_GPU_PER_NODE: str(gpus),
        names.LABEL_AGENT_HOST: host,
        **{names.feature_label(f): "1" for f in features},
    }
    metadata: Body = {"name": name, "labels": labels}
    if socket:
        metadata["annotations"] = {names.ANNOTATION_RED_BOX_SOCKET: socket}
    return {
        "metadata": metadata,
        "spec": {"taints": [{"key": names.TAINT_KEY, "value": names.TAINT_VALUE, "effect": "NoSchedule"}]},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def ordinary_node(name: str = "host1") -> Body:
    return {"metadata": {"name": name, "labels": {names.LABEL_HOSTNAME: name}}, "spec": {}}


def scheduled(pod: Body, node: str, *, job_id: str = "", phase: str = "Pending") -> Body:
    pod = copy.deepcopy(pod)
    pod["spec"]["nodeName"] = node
    if job_id:
        pod["metadata"].setdefault("annotations", {})[names.ANNOTATION_JOB_ID] = job_id
    pod["status"] = {"phase": phase, "conditions": [{"type": "PodScheduled", "status": "True"}]}
    if phase == "Running":
        pod["status"]["containerStatuses"] = [
            {"name": "jt1", "state": {"running": {"startedAt": "2026-12-02T16:00:05Z"}}}
        ]
    return pod


def unschedulable(pod: Body, message: str) -> Body:
    pod = copy.deepcopy(pod)
    pod["status"] = {
        "phase": "Pending",
        "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}
        ],
    }
    return pod


def terminated(pod: Body, *, exit_code: int = 0, reason: str = "", message: str = "") -> Body:
    pod = copy.deepcopy(pod)
    pod.setdefault("spec", {}).setdefault("nodeName", "host1")
    state = {
        "exitCode": exit_code,
        "reason": reason or ("Completed" if exit_code == 0 else "Error"),
        "startedAt": "2026-12-02T16:00:05Z",
        "finishedAt": "2026-12-02T16:00:09Z",
    }
    if message:
        state["message"] = message
    pod["status"] = {
        "phase": "Succeeded" if exit_code == 0 and "ancel" not in reason else "Failed",
        "containerStatuses": [{"name": "c", "state": {"terminated": state}}],
    }
    return pod


def running(pod: Body) -> Body:
    pod = copy.deepcopy(pod)
    pod.setdefault("spec", {}).setdefault("nodeName", "host1")
    pod["status"] = {"phase": "Running"}
    return pod


class World:
    """A resource and its pods; applies the operator's actions as the API server would, and keeps
    the Events the controller posts (``Emit``, and one per pod created)."""

    def __init__(self, body: Body, nodes: list[Body], settings: OperatorSettings = SETTINGS) -> None:
        self.body = body
        self.nodes = nodes
        self.settings = settings
        self.pods: dict[str, Body] = {}
        self.events: list[reconcile.Emit] = []

    def step(self) -> list[reconcile.Action]:
        actions = reconcile.decide(
            self.body, owned=list(self.pods.values()), nodes=self.nodes, settings=self.settings, now=NOW
        )
        for action in actions:
            if isinstance(action, reconcile.CreatePod):
                name = action.body["metadata"]["name"]
                self.pods.setdefault(name, copy.deepcopy(action.body))
                # The controller posts a Normal Event for each pod it creates.
                self.events.append(reconcile.Emit(reconcile.NORMAL, action.reason, action.message))
            elif isinstance(action, reconcile.PatchStatus):
                self.body = {**self.body, "status": action.status}
            else:
                self.events.append(action)
        return actions

    @property
    def status(self) -> Body:
        return dict(self.body.get("status") or {})
