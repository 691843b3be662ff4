"""The in-memory scheduler against the real kube-scheduler: where a pod lands, or that it waits.

The in-memory scheduler and the operator share their rules (``wlmvk.core.scheduling``), so
they cannot disagree with each other; these tests check both against kube-scheduler and
kube-apiserver themselves. Nodes carry labels and taints, pods the edge cases of node
affinity and tolerations; each pod has exactly one node it may land on, or none. The shapes
kube-scheduler could not parse are refused at creation, with kube-apiserver's words.

Each pod selects this test's nodes only (a label unique to the run) and tolerates the taints
the real node lifecycle controller puts on nodes without a kubelet (not-ready, unreachable).
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from tests.e2e.fidelity.support import PODS, call, pod
from wlmvk.kube.bodies import NODES
from wlmvk.kube.bodies import PODS as POD_RESOURCE
from wlmvk.kube.client import KubeClient
from wlmvk_dev.apiserver.rules.validation import LABEL_VALUE_MSG

pytestmark = pytest.mark.kube_any(subject="kube-scheduler's placement against the in-memory scheduler's")

RUN = "fidelity-run"
ABSENT = {"key": "node.kubernetes.io/not-ready", "operator": "Exists"}
UNREACHABLE = {"key": "node.kubernetes.io/unreachable", "operator": "Exists"}
GPU_TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
MAINT_TAINT = {"key": "maint", "effect": "NoExecute"}


def node(name: str, run: str, labels: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, RUN: run, **labels}},
        "spec": spec,
        "status": {
            "capacity": {"cpu": "2", "memory": "4Gi", "pods": "110"},
            "allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    }


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}
    }


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    requirement: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        requirement["values"] = list(values)
    return requirement


def terms(*expressions: dict[str, Any]) -> dict[str, Any]:
    return {"matchExpressions": list(expressions)}


# node A: size 4, zone a; B: size 16, zone b, gpu, tainted dedicated=gpu:NoSchedule;
# C: size "x" (not a number), no zone, tainted maint:NoExecute; D: size 2, zone d, cordoned.
Case = tuple[str, list[dict[str, Any]], list[dict[str, Any]], str | None]


def placements(name_of_a: str) -> list[Case]:
    """(case, node selector terms, tolerations, the node it lands on or None)."""
    return [
        ("gt-only-tainted", [terms(expr("size", "Gt", "8"))], [], None),
        ("gt-tolerated", [terms(expr("size", "Gt", "8"))], [{"key": "dedicated", "value": "gpu"}], "b"),
        ("gt-leading-zeros", [terms(expr("size", "Gt", "007"))], [{"operator": "Exists"}], "b"),
        ("lt-cordoned", [terms(expr("size", "Lt", "3"))], [], None),
        (
            "lt-cordon-tolerated",
            [terms(expr("size", "Lt", "3"))],
            [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}],
            "d",
        ),
        ("lt-zero", [terms(expr("size", "Lt", "0"))], [{"operator": "Exists"}], None),
        ("gt-bound-not-a-number", [terms(expr("size", "Gt", "x"))], [{"operator": "Exists"}], None),
        ("unparsable-term-ored", [terms(expr("size", "Gt", "x")), terms(expr("zone", "In", "a"))], [], "a"),
        ("notin-missing-label-noexecute", [terms(expr("zone", "NotIn", "a", "b", "d"))], [], None),
        (
            "notin-missing-label-tolerated",
            [terms(expr("zone", "NotIn", "a", "b", "d"))],
            [{"key": "maint", "operator": "Exists", "effect": "NoExecute"}],
            "c",
        ),
        (
            "doesnotexist",
            [terms(expr("zone", "DoesNotExist"))],
            [{"key": "maint", "operator": "Exists"}],
            "c",
        ),
        (
            "effect-mismatch",
            [terms(expr("zone", "In", "b"))],
            [{"key": "dedicated", "operator": "Exists", "effect": "PreferNoSchedule"}],
            None,
        ),
        (
            "exists-empty-label",
            [terms(expr("gpu", "Exists"))],
            [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}],
            "b",
        ),
        (
            "match-fields",
            [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [name_of_a]}]}],
            [],
            "a",
        ),
        ("empty-key-exists-tolerates-all", [terms(expr("size", "Gt", "10"))], [{"operator": "Exists"}], "b"),
    ]


async def landing(kube: KubeClient, name: str, timeout: float = 60) -> str | None:
    """The node the pod was bound to, or None once the scheduler has found it unschedulable."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        current = await kube.get(POD_RESOURCE, name, namespace="default")
        if current["spec"].get("nodeName"):
            return str(current["spec"]["nodeName"])
        conditions = current.get("status", {}).get("conditions") or []
        if any(c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable" for c in conditions):
            return None
        assert loop.time() < deadline, f"pod {name} neither bound nor unschedulable: {current.get('status')}"
        await asyncio.sleep(0.2)


async def test_pods_land_where_kube_scheduler_puts_them(apiserver: Any, kube: KubeClient) -> None:
    run = uuid.uuid4().hex[:8]
    names = {key: f"sched-{key}-{run}" for key in "abcd"}
    for created in (
        node(names["a"], run, {"size": "4", "zone": "a"}),
        node(names["b"], run, {"size": "16", "zone": "b", "gpu": ""}, taints=[GPU_TAINT]),
        node(names["c"], run, {"size": "x"}, taints=[MAINT_TAINT]),
        node(names["d"], run, {"size": "2", "zone": "d"}, unschedulable=True),
    ):
        await kube.create(NODES, created)
    cases = placements(names["a"])
    for case, node_terms, tolerations, _ in cases:
        body = pod(
            f"{case}-{run}",
            nodeSelector={RUN: run},
            affinity=required(*node_terms),
            tolerations=[ABSENT, UNREACHABLE, *tolerations],
        )
        await kube.create(POD_RESOURCE, body, namespace="default")
    landed: dict[str, str | None] = {}
    for case, *_ in cases:
        node_name = await landing(kube, f"{case}-{run}")
        landed[case] = None if node_name is None else next(k for k, v in names.items() if v == node_name)
    assert landed == {case: expected for case, _, _, expected in cases}


AFFINITY = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"


@pytest.mark.parametrize(
    ("spec", "field", "message", "reason"),
    [
        (
            {"affinity": required(terms(expr("zone", "NotIn")))},
            f"{AFFINITY}[0].matchExpressions[0].values",
            "Required value: must be specified when `operator` is 'In' or 'NotIn'",
            "FieldValueRequired",
        ),
        (
            {"affinity": required(terms(expr("zone", "Exists", "a")))},
            f"{AFFINITY}[0].matchExpressions[0].values",
            "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            "FieldValueForbidden",
        ),
        (
            {"affinity": required(terms(expr("size", "Gt", "1", "2")))},
            f"{AFFINITY}[0].matchExpressions[0].values",
            "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'",
            "FieldValueRequired",
        ),
        (
            {"affinity": required(terms(expr("size", "Matches", "1")))},
            f"{AFFINITY}[0].matchExpressions[0].operator",
            'Invalid value: "Matches": not a valid selector operator',
            "FieldValueInvalid",
        ),
        (
            {"affinity": required(terms(expr("size", "Lt", "-1")))},
            f"{AFFINITY}[0].matchExpressions[0].values[0]",
            f'Invalid value: "-1": {LABEL_VALUE_MSG}',
            "FieldValueInvalid",
        ),
        (
            {"affinity": required()},
            AFFINITY,
            "Required value: must have at least one node selector term",
            "FieldValueRequired",
        ),
        (
            {"tolerations": [{"key": "dedicated", "operator": "Bogus", "value": "gpu"}]},
            "spec.tolerations[0].operator",
            'Unsupported value: "Bogus": supported values: "Equal", "Exists"',
            "FieldValueNotSupported",
        ),
        (
            {"tolerations": [{"key": "dedicated", "operator": "Gt", "value": "5"}]},
            "spec.tolerations[0].operator",
            'Unsupported value: "Gt": supported values: "Equal", "Exists", "Lt", "Gt"',
            "FieldValueNotSupported",
        ),
        (
            {"tolerations": [{"key": "dedicated", "operator": "Exists", "value": "gpu"}]},
            "spec.tolerations[0].operator",
            "Invalid value: \"gpu\": value must be empty when `operator` is 'Exists'",
            "FieldValueInvalid",
        ),
        (
            {"tolerations": [{"operator": "Equal", "value": "gpu"}]},
            "spec.tolerations[0].operator",
            'Invalid value: "Equal": operator must be Exists when `key` is empty,'
            ' which means "match all values and all keys"',
            "FieldValueInvalid",
        ),
    ],
    ids=[
        "notin-without-values",
        "exists-with-values",
        "gt-with-two-values",
        "unknown-operator",
        "negative-bound",
        "no-terms",
        "toleration-unknown-operator",
        "toleration-gt",
        "toleration-exists-with-value",
        "toleration-empty-key-equal",
    ],
)
async def test_shapes_the_scheduler_cannot_read_are_refused_at_creation(
    apiserver: Any, kube_api: Any, spec: dict[str, Any], field: str, message: str, reason: str
) -> None:
    name = f"shape-{uuid.uuid4().hex[:6]}"
    code, body = await call(kube_api, "POST", PODS, body=pod(name, **spec))
    assert (code, body["message"]) == (422, f'Pod "{name}" is invalid: {field}: {message}')
    assert body["details"]["causes"] == [{"reason": reason, "message": message, "field": field}]
