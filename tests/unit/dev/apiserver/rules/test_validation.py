"""Built-in validation: names, labels, pod containers."""

from __future__ import annotations

from typing import Any

import pytest

from wlmvk_dev.apiserver.objects.errors import ApiError
from wlmvk_dev.apiserver.objects.resources import BUILTINS, CLUSTERROLES, CONFIGMAPS, GVR, NAMESPACES, PODS
from wlmvk_dev.apiserver.rules.validation import validate
from wlmvk_dev.apiserver.storage.store import Store


def info(gvr: GVR) -> Any:
    return next(i for i in BUILTINS if i.gvr == gvr)


def fields(gvr: GVR, obj: dict[str, Any]) -> list[str]:
    return [c.field for c in validate(info(gvr), obj)]


@pytest.mark.parametrize(
    ("gvr", "name", "ok"),
    [
        (CONFIGMAPS, "a.b-c", True),
        (CONFIGMAPS, "Upper", False),
        (CONFIGMAPS, "under_score", False),
        (CONFIGMAPS, "-lead", False),
        (CONFIGMAPS, "a" * 254, False),
        (NAMESPACES, "team-a", True),
        (NAMESPACES, "team.a", False),
        (CLUSTERROLES, "system:controller:x", True),
        (CLUSTERROLES, "a/b", False),
    ],
)
def test_names(gvr: GVR, name: str, ok: bool) -> None:
    assert (fields(gvr, {"metadata": {"name": name}}) == []) is ok


@pytest.mark.parametrize(
    ("labels", "ok"),
    [
        ({"app": "web", "wlm.sylabs.io/nodes": "2", "empty": ""}, True),
        ({"app": "a/b"}, False),
        ({"app": "x" * 64}, False),
        ({"bad key": "x"}, False),
        ({"Bad_Prefix/x": "y"}, False),
        ({"n": 1}, False),
    ],
)
def test_labels(labels: dict[str, Any], ok: bool) -> None:
    assert (fields(CONFIGMAPS, {"metadata": {"name": "c", "labels": labels}}) == []) is ok


def test_pods_need_named_containers() -> None:
    assert fields(PODS, {"metadata": {"name": "p"}, "spec": {}}) == ["spec.containers"]
    bad = {
        "metadata": {"name": "p"},
        "spec": {"containers": [{"image": "i"}, {"name": "Main", "image": "i"}]},
    }
    assert fields(PODS, bad) == ["spec.containers[0].name", "spec.containers[1].name"]


def test_store_answers_422_with_the_real_message() -> None:
    with pytest.raises(ApiError) as raised:
        Store().create(CONFIGMAPS, {"metadata": {"name": "My_Config"}})
    assert raised.value.code == 422
    assert raised.value.message.startswith(
        'ConfigMap "My_Config" is invalid: metadata.name: Invalid value: "My_Config": '
        "a lowercase RFC 1123 subdomain"
    )


def test_client_updates_of_pod_specs_are_limited() -> None:
    store = Store()
    made = store.create(
        PODS, {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    )
    tolerations = made["spec"]["tolerations"]
    allowed = {
        "spec": {
            "containers": [{"name": "c", "image": "j"}],
            "activeDeadlineSeconds": 60,
            "tolerations": [*tolerations, {"key": "k", "operator": "Exists"}],
        }
    }
    store.patch(PODS, "p", allowed, patch_type="strategic", client=True)
    for forbidden in (
        {"spec": {"nodeName": "n1"}},
        {"spec": {"tolerations": []}},
        {"spec": {"containers": [{"name": "c", "command": ["x"]}]}},
    ):
        with pytest.raises(ApiError) as raised:
            store.patch(PODS, "p", forbidden, patch_type="strategic", client=True)
        assert raised.value.code == 422
        assert "pod updates may not change fields" in raised.value.message
    store.patch(PODS, "p", {"spec": {"tolerations": []}}, patch_type="merge")
    assert store.get(PODS, "p")["spec"]["tolerations"] == []
