"""Writes on both planes: create, patch (merge, strategic merge on containers, JSON patch), the
status subresource, pod deletion (graceful when bound, at once when not) and what DELETE answers."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.fidelity.support import (
    CONFIGMAPS,
    JSON_PATCH,
    MERGE,
    PODS,
    SLURMJOBS,
    STRATEGIC,
    call,
    configmap,
    install_crds,
    pod,
    slurmjob,
    unique,
    watch,
)

pytestmark = pytest.mark.kube_any(subject="writes: create, patches, the status subresource, deletion")


async def test_status_is_ignored_on_create_and_on_main_resource_writes(apiserver: Any, kube_api: Any) -> None:
    install_crds(apiserver)
    name = unique("st")
    body = {**pod(name, schedulerName="nobody"), "status": {"phase": "Running", "podIP": "10.1.1.1"}}
    code, made = await call(kube_api, "POST", PODS, body=body)
    assert (code, made["status"]) == (201, {"phase": "Pending", "qosClass": "BestEffort"})
    made["status"] = {"phase": "Running"}
    made["metadata"]["labels"] = {"x": "y"}
    code, updated = await call(kube_api, "PUT", f"{PODS}/{name}", body=made)
    assert (code, updated["status"], updated["metadata"]["labels"]) == (
        200,
        {"phase": "Pending", "qosClass": "BestEffort"},
        {"x": "y"},
    )
    job = {**slurmjob(name), "status": {"status": "Running"}}
    code, made = await call(kube_api, "POST", SLURMJOBS, body=job)
    assert (code, "status" in made, made["metadata"]["generation"]) == (201, False, 1)
    # (the spec is frozen after creation: a label change is the main-resource write here)
    patch = {"status": {"status": "Done"}, "metadata": {"labels": {"x": "y"}}}
    code, patched = await call(kube_api, "PATCH", f"{SLURMJOBS}/{name}", body=patch, content_type=MERGE)
    assert (code, "status" in patched, patched["spec"], patched["metadata"]["generation"]) == (
        200,
        False,
        made["spec"],
        1,
    )


async def test_status_writes_keep_a_pods_label_changes_but_not_a_custom_resources(
    apiserver: Any, kube_api: Any
) -> None:
    install_crds(apiserver)
    name = unique("st")
    await call(kube_api, "POST", PODS, body=pod(name, schedulerName="nobody"))
    patch = {"metadata": {"labels": {"x": "z"}}, "status": {"phase": "Running"}}
    code, written = await call(kube_api, "PATCH", f"{PODS}/{name}/status", body=patch, content_type=MERGE)
    assert (code, written["status"]["phase"], written["metadata"]["labels"]) == (200, "Running", {"x": "z"})
    await call(kube_api, "POST", SLURMJOBS, body=slurmjob(name))
    patch = {"metadata": {"labels": {"x": "z"}}, "status": {"status": "Running"}}
    code, written = await call(
        kube_api, "PATCH", f"{SLURMJOBS}/{name}/status", body=patch, content_type=MERGE
    )
    assert (code, written["status"], "labels" in written["metadata"]) == (200, {"status": "Running"}, False)


async def test_patches_merge_strategic_and_json(apiserver: Any, kube_api: Any) -> None:
    name = unique("pp")
    await call(kube_api, "POST", PODS, body=pod(name, schedulerName="nobody"))
    path = f"{PODS}/{name}"
    smp = {"spec": {"containers": [{"name": "main", "image": "busybox:2"}]}}
    code, patched = await call(kube_api, "PATCH", path, body=smp, content_type=STRATEGIC)
    containers = [(c["name"], c["image"], c["imagePullPolicy"]) for c in patched["spec"]["containers"]]
    # the pull policy defaulted at creation ("busybox": latest, so Always) stays
    assert (code, containers) == (200, [("main", "busybox:2", "Always")])
    ops = [
        {"op": "replace", "path": "/spec/containers/0/image", "value": "busybox:3"},
        {"op": "add", "path": "/metadata/annotations", "value": {"a": "b"}},
    ]
    code, patched = await call(kube_api, "PATCH", path, body=ops, content_type=JSON_PATCH)
    assert (code, patched["spec"]["containers"][0]["image"], patched["metadata"]["annotations"]) == (
        200,
        "busybox:3",
        {"a": "b"},
    )
    code, patched = await call(
        kube_api, "PATCH", path, body={"metadata": {"annotations": {"a": None, "c": "d"}}}, content_type=MERGE
    )
    assert (code, patched["metadata"]["annotations"]) == (200, {"c": "d"})
    added = {"spec": {"containers": [{"name": "side", "image": "busybox"}]}}
    code, refused = await call(kube_api, "PATCH", path, body=added, content_type=STRATEGIC)
    assert (code, refused["message"], refused["details"]["causes"]) == (
        422,
        f'Pod "{name}" is invalid: spec.containers: Forbidden: pod updates may not add or remove containers',
        [
            {
                "reason": "FieldValueForbidden",
                "message": "Forbidden: pod updates may not add or remove containers",
                "field": "spec.containers",
            }
        ],
    )


async def test_delete_answers_a_status_for_objects_and_the_object_for_pods(
    apiserver: Any, kube_api: Any
) -> None:
    install_crds(apiserver)
    name = unique("del")
    _, made = await call(kube_api, "POST", CONFIGMAPS, body=configmap(name))
    assert await call(kube_api, "DELETE", f"{CONFIGMAPS}/{name}") == (
        200,
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": {"name": name, "kind": "configmaps", "uid": made["metadata"]["uid"]},
        },
    )
    _, made = await call(kube_api, "POST", SLURMJOBS, body=slurmjob(name))
    assert await call(kube_api, "DELETE", f"{SLURMJOBS}/{name}") == (
        200,
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": {
                "name": name,
                "group": "wlm.sylabs.io",
                "kind": "slurmjobs",
                "uid": made["metadata"]["uid"],
            },
        },
    )
    finalized = {**slurmjob(name), "metadata": {"name": name, "finalizers": ["wlm.sylabs.io/test"]}}
    await call(kube_api, "POST", SLURMJOBS, body=finalized)
    code, held = await call(kube_api, "DELETE", f"{SLURMJOBS}/{name}")
    meta = held["metadata"]
    assert (code, held["kind"], meta["generation"], meta["deletionGracePeriodSeconds"]) == (
        200,
        "SlurmJob",
        2,
        0,
    )
    code, released = await call(
        kube_api, "PATCH", f"{SLURMJOBS}/{name}", body={"metadata": {"finalizers": None}}, content_type=MERGE
    )
    assert (code, released["kind"]) == (200, "SlurmJob")
    assert (await call(kube_api, "GET", f"{SLURMJOBS}/{name}"))[0] == 404


def _deletion(event: dict[str, Any]) -> tuple[str, int, bool, int | None]:
    meta = event["object"]["metadata"]
    return (
        event["type"],
        meta["generation"],
        "deletionTimestamp" in meta,
        meta.get("deletionGracePeriodSeconds"),
    )


async def test_a_bound_pod_is_deleted_gracefully_and_an_unbound_one_at_once(
    apiserver: Any, kube_api: Any
) -> None:
    tag = unique("t")
    labels = {"fidelity": tag}
    _, listed = await call(kube_api, "GET", PODS, query={"labelSelector": f"fidelity={tag}"})
    free, bound = unique("free"), unique("bound")
    await call(
        kube_api,
        "POST",
        PODS,
        body={**pod(free, schedulerName="nobody"), "metadata": {"name": free, "labels": labels}},
    )
    code, gone = await call(kube_api, "DELETE", f"{PODS}/{free}")
    assert (code, gone["kind"], gone["metadata"]["deletionGracePeriodSeconds"]) == (200, "Pod", 0)
    assert (await call(kube_api, "GET", f"{PODS}/{free}"))[0] == 404
    await call(
        kube_api,
        "POST",
        PODS,
        body={**pod(bound, nodeName="nowhere"), "metadata": {"name": bound, "labels": labels}},
    )
    code, marked = await call(kube_api, "DELETE", f"{PODS}/{bound}")
    assert (code, marked["metadata"]["deletionGracePeriodSeconds"], marked["metadata"]["generation"]) == (
        200,
        30,
        2,
    )
    code, kept = await call(kube_api, "GET", f"{PODS}/{bound}")
    assert (code, kept["metadata"]["deletionGracePeriodSeconds"]) == (200, 30)
    code, shorter = await call(kube_api, "DELETE", f"{PODS}/{bound}", body={"gracePeriodSeconds": 10})
    assert (code, shorter["metadata"]["deletionGracePeriodSeconds"]) == (200, 10)
    code, longer = await call(kube_api, "DELETE", f"{PODS}/{bound}", body={"gracePeriodSeconds": 20})
    assert (code, longer["metadata"]["deletionGracePeriodSeconds"]) == (200, 10)
    code, gone = await call(kube_api, "DELETE", f"{PODS}/{bound}", body={"gracePeriodSeconds": 0})
    assert (code, gone["metadata"]["deletionGracePeriodSeconds"]) == (200, 0)
    assert (await call(kube_api, "GET", f"{PODS}/{bound}"))[0] == 404
    events = await watch(
        kube_api,
        PODS,
        {
            "resourceVersion": listed["metadata"]["resourceVersion"],
            "labelSelector": f"fidelity={tag}",
            "timeoutSeconds": "10",
        },
        count=8,
    )
    assert [_deletion(e) for e in events] == [
        ("ADDED", 1, False, None),
        ("MODIFIED", 2, True, 0),
        ("DELETED", 2, True, 0),
        ("ADDED", 1, False, None),
        ("MODIFIED", 2, True, 30),
        ("MODIFIED", 2, True, 10),
        ("MODIFIED", 2, True, 0),
        ("DELETED", 2, True, 0),
    ]
