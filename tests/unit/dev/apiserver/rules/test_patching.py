"""Merge, strategic-merge and JSON patch semantics."""

from __future__ import annotations

from typing import Any

import pytest

from wlmvk_dev.apiserver.objects.errors import ApiError
from wlmvk_dev.apiserver.objects.resources import BUILTINS, GVR, PODS, ResourceInfo
from wlmvk_dev.apiserver.rules.patching import apply_patch, json_patch, merge_patch, strategic_merge

POD_INFO = next(i for i in BUILTINS if i.gvr == PODS)
CR_INFO = ResourceInfo(GVR("wlm.sylabs.io", "v1alpha1", "slurmjobs"), "SlurmJob", True, "slurmjob")


def pod() -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "labels": {"a": "1", "b": "2"}, "finalizers": ["x"]},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "i1",
                    "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                    "volumeMounts": [{"name": "v", "mountPath": "/data"}],
                    "ports": [{"containerPort": 80}],
                },
                {"name": "side", "image": "s1"},
            ],
            "volumes": [{"name": "v", "emptyDir": {}}],
            "tolerations": [{"key": "t1", "operator": "Exists"}],
        },
        "status": {
            "conditions": [{"type": "Ready", "status": "False"}, {"type": "PodScheduled", "status": "True"}]
        },
    }


def test_merge_patch_rfc7386() -> None:
    assert merge_patch({"a": "b", "c": {"d": "e", "f": "g"}}, {"a": "z", "c": {"f": None}}) == {
        "a": "z",
        "c": {"d": "e"},
    }
    assert merge_patch({"a": [1, 2]}, {"a": [3]}) == {"a": [3]}
    assert merge_patch({"a": 1}, {"b": {"c": None}}) == {"a": 1, "b": {}}


def test_strategic_merge_merges_containers_and_env_by_name() -> None:
    patched = strategic_merge(
        pod(),
        {
            "spec": {
                "containers": [
                    {
                        "name": "main",
                        "image": "i2",
                        "env": [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}],
                    }
                ]
            }
        },
    )
    main, side = patched["spec"]["containers"]
    assert (main["image"], side["image"]) == ("i2", "s1")
    assert main["env"] == [
        {"name": "A", "value": "1"},
        {"name": "B", "value": "3"},
        {"name": "C", "value": "4"},
    ]
    assert main["volumeMounts"] == [{"name": "v", "mountPath": "/data"}]


def test_strategic_merge_delete_directive_and_replace_for_atomic_lists() -> None:
    patched = strategic_merge(
        pod(),
        {
            "spec": {
                "containers": [{"name": "side", "$patch": "delete"}],
                "tolerations": [{"key": "t2", "operator": "Exists"}],
            }
        },
    )
    assert [c["name"] for c in patched["spec"]["containers"]] == ["main"]
    assert patched["spec"]["tolerations"] == [{"key": "t2", "operator": "Exists"}]


def test_strategic_merge_conditions_by_type_and_ports_by_container_port() -> None:
    patched = strategic_merge(
        pod(),
        {
            "status": {"conditions": [{"type": "Ready", "status": "True"}]},
            "spec": {"containers": [{"name": "main", "ports": [{"containerPort": 81}]}]},
        },
    )
    assert patched["status"]["conditions"] == [
        {"type": "Ready", "status": "True"},
        {"type": "PodScheduled", "status": "True"},
    ]
    assert patched["spec"]["containers"][0]["ports"] == [{"containerPort": 80}, {"containerPort": 81}]


def test_strategic_merge_set_element_order_and_primitive_lists() -> None:
    patched = strategic_merge(
        pod(),
        {
            "metadata": {"finalizers": ["y"], "labels": {"a": None}},
            "spec": {
                "$setElementOrder/containers": [{"name": "side"}, {"name": "main"}],
                "containers": [{"name": "main", "image": "i3"}],
            },
        },
    )
    assert [c["name"] for c in patched["spec"]["containers"]] == ["side", "main"]
    assert patched["metadata"]["finalizers"] == ["x", "y"]
    assert patched["metadata"]["labels"] == {"b": "2"}
    dropped = strategic_merge(patched, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["x"]}})
    assert dropped["metadata"]["finalizers"] == ["y"]


def test_strategic_merge_replace_and_retain_keys() -> None:
    replaced = strategic_merge(pod(), {"metadata": {"labels": {"$patch": "replace", "c": "3"}}})
    assert replaced["metadata"]["labels"] == {"c": "3"}
    retained = strategic_merge({"v": {"a": 1, "b": 2}}, {"v": {"$retainKeys": ["b", "c"], "c": 3}})
    assert retained == {"v": {"b": 2, "c": 3}}
    whole_list = strategic_merge(
        pod(), {"spec": {"volumes": [{"$patch": "replace"}, {"name": "w", "emptyDir": {}}]}}
    )
    assert whole_list["spec"]["volumes"] == [{"name": "w", "emptyDir": {}}]


def test_patches_never_change_the_original() -> None:
    original = pod()
    apply_patch(original, {"spec": {"containers": [{"name": "main", "image": "z"}]}}, "strategic", POD_INFO)
    apply_patch(
        original,
        [{"op": "add", "path": "/spec/containers/0/env/-", "value": {"name": "Z"}}],
        "json",
        POD_INFO,
    )
    assert original == pod()


def test_json_patch_operations() -> None:
    doc = {"a": {"b": [1, 2]}, "c": "d"}
    ops = [
        {"op": "add", "path": "/a/b/1", "value": 9},
        {"op": "add", "path": "/a/b/-", "value": 3},
        {"op": "replace", "path": "/c", "value": "e"},
        {"op": "copy", "from": "/c", "path": "/f"},
        {"op": "move", "from": "/f", "path": "/g~1h"},
        {"op": "remove", "path": "/a/b/0"},
        {"op": "test", "path": "/c", "value": "e"},
    ]
    assert json_patch(doc, ops) == {"a": {"b": [9, 2, 3]}, "c": "e", "g/h": "e"}


@pytest.mark.parametrize(
    "ops",
    [
        [{"op": "test", "path": "/c", "value": "x"}],
        [{"op": "remove", "path": "/nope"}],
        [{"op": "replace", "path": "/a/b/7", "value": 1}],
        [{"op": "jump", "path": "/c"}],
    ],
)
def test_json_patch_failures_are_422(ops: list[dict[str, Any]]) -> None:
    with pytest.raises(ApiError) as raised:
        json_patch({"a": {"b": [1]}, "c": "d"}, ops)
    assert raised.value.code == 422


def test_custom_resources_refuse_strategic_merge() -> None:
    with pytest.raises(ApiError) as raised:
        apply_patch({"spec": {}}, {"spec": {}}, "strategic", CR_INFO)
    assert raised.value.code == 415
    assert apply_patch({"spec": {"a": [1]}}, {"spec": {"a": [2]}}, "apply", CR_INFO) == {"spec": {"a": [2]}}
