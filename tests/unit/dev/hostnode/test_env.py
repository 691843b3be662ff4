"""Container environment and command line, resolved as the kubelet does."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from wlmvk.core.errors import InvalidInput, NotFound
from wlmvk_dev.hostnode.env import command_line, container_env, expand, field_value

POD: dict[str, Any] = {
    "metadata": {
        "name": "p1",
        "namespace": "team",
        "uid": "u-1",
        "labels": {"app": "x", "tier": "db"},
        "annotations": {"note": "hi"},
    },
    "spec": {"nodeName": "host1", "serviceAccountName": "default"},
    "status": {"hostIP": "10.0.0.5", "podIP": "10.0.0.5", "podIPs": [{"ip": "10.0.0.5"}]},
}

OBJECTS = {
    ("configmaps", "cm"): {"data": {"A": "1", "B": "2"}},
    ("secrets", "s"): {"data": {"TOKEN": base64.b64encode(b"sekret").decode()}},
}


def lookup(kind: str, name: str) -> dict[str, Any] | None:
    return OBJECTS.get((kind, name))


def ref(path: str) -> dict[str, Any]:
    return {"fieldRef": {"fieldPath": path}}


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("metadata.name", "p1"),
        ("metadata.namespace", "team"),
        ("metadata.uid", "u-1"),
        ("spec.nodeName", "host1"),
        ("spec.serviceAccountName", "default"),
        ("status.podIP", "10.0.0.5"),
        ("status.hostIP", "10.0.0.5"),
        ("status.podIPs", "10.0.0.5"),
        ("metadata.labels['app']", "x"),
        ("metadata.annotations['note']", "hi"),
        ("metadata.labels['none']", ""),
        ("metadata.labels", 'app="x"\ntier="db"'),
    ],
)
def test_field_refs(path: str, value: str) -> None:
    assert field_value(POD, path) == value


def test_unknown_field_ref_is_invalid() -> None:
    with pytest.raises(InvalidInput):
        field_value(POD, "spec.containers")


@pytest.mark.parametrize(
    ("text", "out"),
    [
        ("$(A)", "1"),
        ("x-$(A)-$(B)", "x-1-2"),
        ("$(MISSING)", "$(MISSING)"),
        ("$$(A)", "$(A)"),
        ("$$", "$"),
        ("$A", "$A"),
        ("$(A", "$(A"),
        ("", ""),
    ],
)
def test_expansion(text: str, out: str) -> None:
    assert expand(text, {"A": "1", "B": "2"}) == out


def test_env_in_order_with_refs_and_sources() -> None:
    container = {
        "envFrom": [{"configMapRef": {"name": "cm"}, "prefix": "CM_"}, {"secretRef": {"name": "s"}}],
        "env": [
            {"name": "POD", "valueFrom": ref("metadata.name")},
            {"name": "WHERE", "value": "$(POD)@$(NODE)"},
            {"name": "NODE", "valueFrom": ref("spec.nodeName")},
            {"name": "LATER", "value": "$(NODE)"},
            {"name": "KEY", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "B"}}},
            {"name": "OPT", "valueFrom": {"secretKeyRef": {"name": "nope", "key": "x", "optional": True}}},
            {"name": "CM_A", "value": "overridden"},
        ],
    }
    env = container_env(POD, container, lookup, base={"PATH": "/bin"})
    assert env == {
        "PATH": "/bin",
        "CM_A": "overridden",
        "CM_B": "2",
        "TOKEN": "sekret",
        "POD": "p1",
        "WHERE": "p1@$(NODE)",
        "NODE": "host1",
        "LATER": "host1",
        "KEY": "2",
    }


def test_missing_required_config_map_is_not_found() -> None:
    container = {"env": [{"name": "K", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "Z"}}}]}
    with pytest.raises(NotFound):
        container_env(POD, container, lookup)
    with pytest.raises(NotFound):
        container_env(POD, {"envFrom": [{"configMapRef": {"name": "gone"}}]}, lookup)
    optional = {"envFrom": [{"configMapRef": {"name": "gone", "optional": True}}]}
    assert container_env(POD, optional, lookup) == {}


def resource(name: str, divisor: str | None = None) -> dict[str, Any]:
    ref = {"resource": name, **({"divisor": divisor} if divisor else {})}
    return {"resourceFieldRef": ref}


def test_resource_field_refs() -> None:
    container = {
        "resources": {"limits": {"memory": "1Gi"}, "requests": {"cpu": "250m"}},
        "env": [
            {"name": "MEM_MI", "valueFrom": resource("limits.memory", "1Mi")},
            {"name": "CPU", "valueFrom": resource("requests.cpu")},
            {"name": "CPU_M", "valueFrom": resource("requests.cpu", "1m")},
            {"name": "LIM_CPU", "valueFrom": resource("limits.cpu")},
        ],
    }
    env = container_env(POD, container, lookup, node_allocatable={"cpu": "8"})
    assert env == {"MEM_MI": "1024", "CPU": "1", "CPU_M": "250", "LIM_CPU": "8"}


def test_command_and_args_are_expanded() -> None:
    container = {"command": ["sh", "-c"], "args": ["echo $(GREETING) $$(HOME)"]}
    assert command_line(container, {"GREETING": "hi"}) == ["sh", "-c", "echo hi $(HOME)"]


def test_no_command_is_a_clear_error() -> None:
    with pytest.raises(InvalidInput) as raised:
        command_line({"image": "busybox", "args": ["x"]}, {}, {"wlmvk:latest": ["/bin/wlmvk"]})
    assert raised.value.message == (
        'the host kubelet runs commands on this host and cannot run the entrypoint of image "busybox": '
        "set the container's command (or give the node --image busybox=PROGRAM)"
    )


def test_no_command_runs_the_program_standing_in_for_the_image_entrypoint_with_args() -> None:
    container = {"image": "wlmvk:latest", "args": ["kubelet", "--node-ip=$(HOST_IP)"]}
    images = {"wlmvk:latest": ["/opt/wlmvk", "--quiet"]}
    assert command_line(container, {"HOST_IP": "10.0.0.7"}, images) == [
        "/opt/wlmvk",
        "--quiet",
        "kubelet",
        "--node-ip=10.0.0.7",
    ]


def test_a_command_wins_over_the_image_entrypoint() -> None:
    container = {"image": "wlmvk:latest", "command": ["sh", "-c"], "args": ["true"]}
    assert command_line(container, {}, {"wlmvk:latest": ["/opt/wlmvk"]}) == ["sh", "-c", "true"]
