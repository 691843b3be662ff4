"""Leases and Events on both planes (what the kubelet's heartbeat and every component's event
recorder write), and server-side apply field managers."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.fidelity.support import APPLY, CONFIGMAPS, call, configmap, status, unique

pytestmark = pytest.mark.kube_any(subject="Leases, Events and server-side apply as each plane stores them")

LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
EVENTS = "/api/v1/namespaces/default/events"


def lease(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": name}, "spec": spec}


async def test_a_lease_update_with_a_stale_resource_version_is_409(apiserver: Any, kube_api: Any) -> None:
    name = unique("lease")
    code, made = await call(
        kube_api, "POST", LEASES, body=lease(name, holderIdentity="a", leaseDurationSeconds=15)
    )
    assert (code, made["spec"]) == (201, {"holderIdentity": "a", "leaseDurationSeconds": 15})
    code, renewed = await call(
        kube_api,
        "PUT",
        f"{LEASES}/{name}",
        body={**made, "spec": {"holderIdentity": "b", "leaseDurationSeconds": 15}},
    )
    assert (code, renewed["spec"]["holderIdentity"]) == (200, "b")
    why = "the object has been modified; please apply your changes to the latest version and try again"
    assert await call(kube_api, "PUT", f"{LEASES}/{name}", body=made) == (
        409,
        status(
            409,
            "Conflict",
            f'Operation cannot be fulfilled on leases.coordination.k8s.io "{name}": {why}',
            {"name": name, "group": "coordination.k8s.io", "kind": "leases"},
        ),
    )
    bad = unique("lease")
    assert await call(kube_api, "POST", LEASES, body=lease(bad, leaseDurationSeconds=0)) == (
        422,
        status(
            422,
            "Invalid",
            f'Lease.coordination.k8s.io "{bad}" is invalid: '
            "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
            {
                "name": bad,
                "group": "coordination.k8s.io",
                "kind": "Lease",
                "causes": [
                    {
                        "reason": "FieldValueInvalid",
                        "message": "Invalid value: 0: must be greater than 0",
                        "field": "spec.leaseDurationSeconds",
                    }
                ],
            },
        ),
    )


def event(name: str, **fields: Any) -> dict[str, Any]:
    body = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name},
        "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": "p", "namespace": "default"},
        "reason": "Started",
        "message": "hi",
        "type": "Normal",
        "source": {"component": "wlmvk"},
        "firstTimestamp": "2026-01-01T00:00:00Z",
        "lastTimestamp": "2026-01-01T00:00:00Z",
        "count": 1,
    }
    return {**body, **fields}


async def test_events_are_created_validated_and_mirrored(apiserver: Any, kube_api: Any) -> None:
    name = unique("ev")
    recorded = event(
        name,
        eventTime="2026-01-01T00:00:00.000000Z",
        reportingComponent="wlmvk",
        reportingInstance="host",
        action="Started",
    )
    code, made = await call(kube_api, "POST", EVENTS, body=recorded)
    assert (code, made["reason"], made["reportingComponent"]) == (201, "Started", "wlmvk")
    code, mirrored = await call(kube_api, "GET", f"/apis/events.k8s.io/v1/namespaces/default/events/{name}")
    assert (
        code,
        mirrored["note"],
        mirrored["regarding"]["name"],
        mirrored["reportingController"],
        mirrored["action"],
    ) == (
        200,
        "hi",
        "p",
        "wlmvk",
        "Started",
    )
    elsewhere = unique("ev")
    body = event(elsewhere, involvedObject={"kind": "Pod", "name": "p", "namespace": "other"})
    assert await call(kube_api, "POST", EVENTS, body=body) == (
        422,
        status(
            422,
            "Invalid",
            f'Event "{elsewhere}" is invalid: '
            'involvedObject.namespace: Invalid value: "other": does not match event.namespace',
            {
                "name": elsewhere,
                "kind": "Event",
                "causes": [
                    {
                        "reason": "FieldValueInvalid",
                        "message": 'Invalid value: "other": does not match event.namespace',
                        "field": "involvedObject.namespace",
                    }
                ],
            },
        ),
    )
    incomplete = unique("ev")
    body = event(incomplete, eventTime="2026-01-01T00:00:00.000000Z", reportingComponent="wlmvk")
    code, refused = await call(kube_api, "POST", EVENTS, body=body)
    assert (code, [c["field"] for c in refused["details"]["causes"]]) == (
        422,
        ["reportingInstance", "action"],
    )


MANAGERS = {
    # Known difference (README): no managedFields and no apply conflicts in the in-memory server.
    "memory": ([], (200, {"a": "2"})),
    "real": ([("alice", "Apply")], (409, 'Apply failed with 1 conflict: conflict with "alice": .data.a')),
}


async def test_server_side_apply_field_managers(apiserver: Any, kube_api: Any) -> None:
    name = unique("ssa")
    path = f"{CONFIGMAPS}/{name}"
    code, made = await call(
        kube_api,
        "PATCH",
        path,
        query={"fieldManager": "alice"},
        body=configmap(name, a="1"),
        content_type=APPLY,
    )
    managers, conflict = MANAGERS[apiserver.plane]
    assert (
        code,
        made["data"],
        [(m["manager"], m["operation"]) for m in made["metadata"].get("managedFields", [])],
    ) == (201 if apiserver.plane == "real" else 200, {"a": "1"}, managers)
    code, answer = await call(
        kube_api,
        "PATCH",
        path,
        query={"fieldManager": "bob"},
        body=configmap(name, a="2"),
        content_type=APPLY,
    )
    assert (code, answer["message"] if code == 409 else answer["data"]) == conflict
    code, forced = await call(
        kube_api,
        "PATCH",
        path,
        query={"fieldManager": "bob", "force": "true"},
        body=configmap(name, a="2", b="3"),
        content_type=APPLY,
    )
    assert (code, forced["data"]) == (200, {"a": "2", "b": "3"})
