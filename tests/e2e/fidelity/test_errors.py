"""The same failing request on both planes, the same Status: code, reason, message and details.

404 NotFound (an object, a resource type), 409 AlreadyExists and Conflict (stale
resourceVersion, delete preconditions), 405 MethodNotAllowed, 400 BadRequest (name or kind
mismatches, undecodable resource lists, selectors) and 422 Invalid with field causes (pod
names, CRD schema violations of manifests/crds, JSON patch failures, apply without a field
manager).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.fidelity.support import (
    APPLY,
    CONFIGMAPS,
    JSON_PATCH,
    MERGE,
    PODS,
    SLURMJOBS,
    call,
    configmap,
    install_crds,
    pod,
    slurmjob,
    status,
    unique,
)
from wlmvk_dev.apiserver.rules.validation import DNS_LABEL_MSG, SUBDOMAIN_MSG

pytestmark = pytest.mark.kube_any(subject="the Status of each failing request")

NO_RESOURCE = "the server could not find the requested resource"
# After a blocking schema error (required, wrong type, unsupported value) kube-apiserver runs
# none of a CRD's CEL rules (the SlurmJob's frozen spec) and adds this cause.
NOT_CHECKED = (
    "FieldValueInvalid",
    "<nil>",
    "Invalid value: null: some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation",
)
NOT_ALLOWED = "the server does not allow this method on the requested resource"


async def test_a_missing_object_is_404_with_its_resource_and_name(apiserver: Any, kube_api: Any) -> None:
    install_crds(apiserver)
    assert await call(kube_api, "GET", f"{PODS}/nope") == (
        404,
        status(404, "NotFound", 'pods "nope" not found', {"name": "nope", "kind": "pods"}),
    )
    assert await call(kube_api, "GET", f"{SLURMJOBS}/nope") == (
        404,
        status(
            404,
            "NotFound",
            'slurmjobs.wlm.sylabs.io "nope" not found',
            {"name": "nope", "group": "wlm.sylabs.io", "kind": "slurmjobs"},
        ),
    )


async def test_an_unknown_resource_type_is_404(apiserver: Any, kube_api: Any) -> None:
    install_crds(apiserver)
    expected = (404, status(404, "NotFound", NO_RESOURCE, {}))
    assert await call(kube_api, "GET", "/api/v1/namespaces/default/nopes/x") == expected
    assert await call(kube_api, "GET", "/apis/apps/v1/namespaces/default/nopes") == expected
    # a custom resource group answers as the apiextensions handler does: plain text
    plain = (404, "404 page not found\n")
    assert await call(kube_api, "GET", "/apis/wlm.sylabs.io/v1alpha1/namespaces/default/nopes") == plain


async def test_creating_twice_is_409_already_exists(apiserver: Any, kube_api: Any) -> None:
    name = unique("cm")
    assert (await call(kube_api, "POST", CONFIGMAPS, body=configmap(name)))[0] == 201
    assert await call(kube_api, "POST", CONFIGMAPS, body=configmap(name)) == (
        409,
        status(
            409, "AlreadyExists", f'configmaps "{name}" already exists', {"name": name, "kind": "configmaps"}
        ),
    )


async def test_an_update_with_a_stale_resource_version_is_409_conflict(apiserver: Any, kube_api: Any) -> None:
    name = unique("cm")
    _, made = await call(kube_api, "POST", CONFIGMAPS, body=configmap(name, a="1"))
    code, updated = await call(kube_api, "PUT", f"{CONFIGMAPS}/{name}", body={**made, "data": {"a": "2"}})
    assert (code, updated["data"]) == (200, {"a": "2"})
    why = "the object has been modified; please apply your changes to the latest version and try again"
    stale = (
        409,
        status(
            409,
            "Conflict",
            f'Operation cannot be fulfilled on configmaps "{name}": {why}',
            {"name": name, "kind": "configmaps"},
        ),
    )
    assert await call(kube_api, "PUT", f"{CONFIGMAPS}/{name}", body={**made, "data": {"a": "3"}}) == stale
    pinned = {"metadata": {"resourceVersion": made["metadata"]["resourceVersion"]}, "data": {"a": "4"}}
    assert await call(kube_api, "PATCH", f"{CONFIGMAPS}/{name}", body=pinned, content_type=MERGE) == stale


async def test_delete_preconditions_are_409_conflict(apiserver: Any, kube_api: Any) -> None:
    name = unique("cm")
    _, made = await call(kube_api, "POST", CONFIGMAPS, body=configmap(name))
    uid, rv = made["metadata"]["uid"], made["metadata"]["resourceVersion"]
    details = {"name": name, "kind": "ConfigMap"}
    assert await call(kube_api, "DELETE", f"{CONFIGMAPS}/{name}", body={"preconditions": {"uid": "abc"}}) == (
        409,
        status(
            409,
            "Conflict",
            f'Operation cannot be fulfilled on ConfigMap "{name}": the UID in the precondition (abc) '
            f"does not match the UID in record ({uid}). "
            "The object might have been deleted and then recreated",
            details,
        ),
    )
    assert await call(
        kube_api, "DELETE", f"{CONFIGMAPS}/{name}", body={"preconditions": {"resourceVersion": "1"}}
    ) == (
        409,
        status(
            409,
            "Conflict",
            f'Operation cannot be fulfilled on ConfigMap "{name}": the ResourceVersion in the precondition '
            f"(1) does not match the ResourceVersion in record ({rv}). The object might have been modified",
            details,
        ),
    )


async def test_methods_a_path_does_not_serve_are_405(apiserver: Any, kube_api: Any) -> None:
    name = unique("cm")
    _, made = await call(kube_api, "POST", CONFIGMAPS, body=configmap(name))
    expected = (405, status(405, "MethodNotAllowed", NOT_ALLOWED, {}))
    assert await call(kube_api, "POST", f"{CONFIGMAPS}/{name}", body=made) == expected
    assert await call(kube_api, "PUT", CONFIGMAPS, body=made) == expected


async def test_mismatched_names_and_kinds_are_400(apiserver: Any, kube_api: Any) -> None:
    install_crds(apiserver)
    name = unique("cm")
    _, made = await call(kube_api, "POST", CONFIGMAPS, body=configmap(name))
    assert await call(kube_api, "PUT", f"{CONFIGMAPS}/other", body=made) == (
        400,
        status(
            400, "BadRequest", f"the name of the object ({name}) does not match the name on the URL (other)"
        ),
    )
    assert await call(kube_api, "POST", CONFIGMAPS, body=pod("x")) == (
        400,
        status(
            400,
            "BadRequest",
            'Pod in version "v1" cannot be handled as a ConfigMap: converting (v1.Pod) to (core.ConfigMap): '
            "unknown conversion",
        ),
    )
    assert await call(kube_api, "POST", SLURMJOBS, body={**slurmjob("x"), "apiVersion": "v1"}) == (
        400,
        status(
            400,
            "BadRequest",
            "the API version in the data (v1) does not match the expected API version "
            "(wlm.sylabs.io/v1alpha1)",
        ),
    )


@pytest.mark.parametrize(
    ("field", "value", "json_type"),
    [("limits", ["cpu", "1"], "array"), ("requests", "1", "string")],
)
async def test_a_pod_whose_resources_are_not_maps_cannot_be_decoded_400(
    apiserver: Any, kube_api: Any, field: str, value: Any, json_type: str
) -> None:
    body = pod(unique("res"))
    body["spec"]["containers"][0]["resources"] = {field: value}
    assert await call(kube_api, "POST", PODS, body=body) == (
        400,
        status(
            400,
            "BadRequest",
            'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal '
            f"{json_type} into Go struct field ResourceRequirements.spec.containers.resources.{field} "
            "of type v1.ResourceList",
        ),
    )


def invalid(kind: str, name: str, causes: list[tuple[str, str, str]], group: str = "") -> dict[str, Any]:
    listed = ", ".join(f"{field}: {message}" for _, field, message in causes)
    if len(causes) > 1:
        listed = f"[{listed}]"
    qualified = f"{kind}.{group}" if group else kind
    details: dict[str, Any] = {"name": name, "kind": kind}
    if group:
        details["group"] = group
    details["causes"] = [{"reason": r, "message": m, "field": f} for r, f, m in causes]
    return status(422, "Invalid", f'{qualified} "{name}" is invalid: {listed}', details)


async def test_a_bad_pod_name_and_container_name_are_422_with_field_causes(
    apiserver: Any, kube_api: Any
) -> None:
    assert await call(kube_api, "POST", PODS, body=pod("Bad_Name")) == (
        422,
        invalid(
            "Pod",
            "Bad_Name",
            [("FieldValueInvalid", "metadata.name", f'Invalid value: "Bad_Name": {SUBDOMAIN_MSG}')],
        ),
    )
    bad_container = {**pod("x"), "spec": {"containers": [{"name": "Main", "image": "busybox"}]}}
    assert await call(kube_api, "POST", PODS, body=bad_container) == (
        422,
        invalid(
            "Pod",
            "x",
            [("FieldValueInvalid", "spec.containers[0].name", f'Invalid value: "Main": {DNS_LABEL_MSG}')],
        ),
    )
    assert await call(kube_api, "POST", PODS, body={**pod("x"), "spec": {}}) == (
        422,
        invalid("Pod", "x", [("FieldValueRequired", "spec.containers", "Required value")]),
    )
    nameless = {**pod(""), "metadata": {}}
    code, body = await call(kube_api, "POST", PODS, body=nameless)
    assert (code, body) == (
        422,
        status(
            422,
            "Invalid",
            'Pod "" is invalid: metadata.name: Required value: name or generateName is required',
            {
                "kind": "Pod",
                "causes": [
                    {
                        "reason": "FieldValueRequired",
                        "message": "Required value: name or generateName is required",
                        "field": "metadata.name",
                    }
                ],
            },
        ),
    )


G = "wlm.sylabs.io"


@pytest.mark.parametrize(
    ("spec", "causes"),
    [
        (
            {"batch": ""},
            [
                (
                    "FieldValueInvalid",
                    "spec.batch",
                    'Invalid value: "": spec.batch in body should be at least 1 chars long',
                )
            ],
        ),
        ({}, [("FieldValueRequired", "spec.batch", "Required value"), NOT_CHECKED]),
        (None, [("FieldValueRequired", "spec", "Required value"), NOT_CHECKED]),
        (
            {"batch": 3},
            [
                (
                    "FieldValueTypeInvalid",
                    "spec.batch",
                    'Invalid value: "integer": spec.batch in body must be of type string: "integer"',
                ),
                NOT_CHECKED,
            ],
        ),
    ],
    ids=["too-short", "required-field", "required-spec", "wrong-type"],
)
async def test_a_slurmjob_violating_the_crd_schema_is_422(
    apiserver: Any, kube_api: Any, spec: dict[str, Any] | None, causes: list[tuple[str, str, str]]
) -> None:
    install_crds(apiserver)
    body = slurmjob("sj")
    if spec is None:
        del body["spec"]
    else:
        body["spec"] = spec
    assert await call(kube_api, "POST", SLURMJOBS, body=body) == (422, invalid("SlurmJob", "sj", causes, G))


async def test_several_schema_violations_are_one_422_with_every_cause(apiserver: Any, kube_api: Any) -> None:
    install_crds(apiserver)
    body = slurmjob("sj", batch=3, nodeSelector={"a": 1}, results={"from": "x"})
    code, answer = await call(kube_api, "POST", SLURMJOBS, body=body)
    causes = sorted(answer["details"]["causes"], key=lambda c: c["field"])
    # the order of the causes follows Go map iteration on kube-apiserver: compared sorted
    assert (code, answer["reason"], causes) == (
        422,
        "Invalid",
        [
            dict(zip(("reason", "field", "message"), NOT_CHECKED, strict=True)),
            {
                "reason": "FieldValueTypeInvalid",
                "message": 'Invalid value: "integer": spec.batch in body must be of type string: "integer"',
                "field": "spec.batch",
            },
            {
                "reason": "FieldValueTypeInvalid",
                "message": 'Invalid value: "integer": spec.nodeSelector.a in body must be of type string: '
                '"integer"',
                "field": "spec.nodeSelector.a",
            },
            {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.results.mount"},
        ],
    )
    assert answer["message"].startswith('SlurmJob.wlm.sylabs.io "sj" is invalid: [')


async def test_a_status_write_violating_the_schema_names_paths_below_status(
    apiserver: Any, kube_api: Any
) -> None:
    install_crds(apiserver)
    name = unique("sj")
    assert (await call(kube_api, "POST", SLURMJOBS, body=slurmjob(name)))[0] == 201
    patch = {"status": {"exitCode": "x"}}
    assert await call(kube_api, "PATCH", f"{SLURMJOBS}/{name}/status", body=patch, content_type=MERGE) == (
        422,
        invalid(
            "SlurmJob",
            name,
            [
                (
                    "FieldValueTypeInvalid",
                    "status.exitCode",
                    'Invalid value: "string": exitCode in body must be of type integer: "string"',
                ),
                NOT_CHECKED,
            ],
            G,
        ),
    )
    patch = {"status": {"conditions": [{"type": "Ready", "status": "Maybe"}]}}
    assert await call(kube_api, "PATCH", f"{SLURMJOBS}/{name}/status", body=patch, content_type=MERGE) == (
        422,
        invalid(
            "SlurmJob",
            name,
            [
                (
                    "FieldValueNotSupported",
                    "status.conditions[0].status",
                    'Unsupported value: "Maybe": supported values: "True", "False", "Unknown"',
                ),
                NOT_CHECKED,
            ],
            G,
        ),
    )


async def test_a_failing_json_patch_is_422(apiserver: Any, kube_api: Any) -> None:
    name = unique("cm")
    await call(kube_api, "POST", CONFIGMAPS, body=configmap(name, a="1"))
    expected = (
        422,
        status(422, "Invalid", "the server rejected our request due to an error in our request", {}),
    )
    failed_test = [{"op": "test", "path": "/data/a", "value": "2"}]
    assert (
        await call(kube_api, "PATCH", f"{CONFIGMAPS}/{name}", body=failed_test, content_type=JSON_PATCH)
        == expected
    )
    missing = [{"op": "remove", "path": "/data/nothere"}]
    assert (
        await call(kube_api, "PATCH", f"{CONFIGMAPS}/{name}", body=missing, content_type=JSON_PATCH)
        == expected
    )


async def test_an_apply_without_field_manager_is_422(apiserver: Any, kube_api: Any) -> None:
    name = unique("cm")
    assert await call(
        kube_api, "PATCH", f"{CONFIGMAPS}/{name}", body=configmap(name), content_type=APPLY
    ) == (
        422,
        status(
            422,
            "Invalid",
            'PatchOptions.meta.k8s.io "" is invalid: '
            "fieldManager: Required value: is required for apply patch",
            {
                "group": "meta.k8s.io",
                "kind": "PatchOptions",
                "causes": [
                    {
                        "reason": "FieldValueRequired",
                        "message": "Required value: is required for apply patch",
                        "field": "fieldManager",
                    }
                ],
            },
        ),
    )


async def test_unsupported_and_malformed_field_selectors_are_400(apiserver: Any, kube_api: Any) -> None:
    install_crds(apiserver)
    for path, label in ((PODS, "spec.foo"), (SLURMJOBS, "status.status"), ("/api/v1/nodes", "status.phase")):
        assert await call(kube_api, "GET", path, query={"fieldSelector": f"{label}=x"}) == (
            400,
            status(400, "BadRequest", f"field label not supported: {label}"),
        )
    assert await call(kube_api, "GET", PODS, query={"fieldSelector": "metadata.name"}) == (
        400,
        status(400, "BadRequest", "invalid selector: 'metadata.name'; can't understand 'metadata.name'"),
    )


MALFORMED_LABEL_SELECTOR = {
    # Known difference (README): the in-memory server's own parser words its errors differently.
    "memory": "unable to parse requirement: 'a b' in label selector 'a b'",
    "real": "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt",
}


async def test_a_malformed_label_selector_is_400(apiserver: Any, kube_api: Any) -> None:
    assert await call(kube_api, "GET", PODS, query={"labelSelector": "a b"}) == (
        400,
        status(400, "BadRequest", MALFORMED_LABEL_SELECTOR[apiserver.plane]),
    )


async def test_a_slurmjobs_spec_cannot_change_after_creation_422(apiserver: Any, kube_api: Any) -> None:
    install_crds(apiserver)
    name = unique("sj")
    _, made = await call(kube_api, "POST", SLURMJOBS, body=slurmjob(name))
    frozen = (
        "FieldValueInvalid",
        "spec",
        "Invalid value: spec is immutable: a job runs once; delete it and create it again to run a "
        "changed spec",
    )
    changed = {**made, "spec": {"batch": "#!/bin/sh\necho other\n"}}
    assert await call(kube_api, "PUT", f"{SLURMJOBS}/{name}", body=changed) == (
        422,
        invalid("SlurmJob", name, [frozen], G),
    )
    patch = {"spec": {"nodeSelector": {"a": "b"}}}
    assert await call(kube_api, "PATCH", f"{SLURMJOBS}/{name}", body=patch, content_type=MERGE) == (
        422,
        invalid("SlurmJob", name, [frozen], G),
    )
    # A schema error comes first; the rule is then not evaluated, and the answer says so.
    broken = {"spec": {"prepare": {"to": "x"}}}
    assert await call(kube_api, "PATCH", f"{SLURMJOBS}/{name}", body=broken, content_type=MERGE) == (
        422,
        invalid(
            "SlurmJob",
            name,
            [
                ("FieldValueRequired", "spec.prepare.mount", "Required value"),
                NOT_CHECKED,
            ],
            G,
        ),
    )
    # Labels and the status still change.
    labels = {"metadata": {"labels": {"team": "a"}}}
    code, body = await call(kube_api, "PATCH", f"{SLURMJOBS}/{name}", body=labels, content_type=MERGE)
    assert (code, body["metadata"]["labels"]) == (200, {"team": "a"})
