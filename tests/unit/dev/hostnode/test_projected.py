"""The host node's projected volumes (kube-api-access), the objects a pod needs, its flags' syntax."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from wlmvk_dev.hostnode.config import parse_image, parse_labels, parse_taints, service_env
from wlmvk_dev.hostnode.env import references
from wlmvk_dev.hostnode.volumes import MountFailed, prepare, token_requests

KUBE_API_ACCESS = {
    "name": "kube-api-access-x1",
    "projected": {
        "defaultMode": 0o644,
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {
                "downwardAPI": {
                    "items": [{"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}}]
                }
            },
            {"secret": {"name": "extra", "optional": True}},
        ],
    },
}


def pod(*volumes: dict[str, Any]) -> dict[str, Any]:
    mounts = [{"name": v["name"], "mountPath": f"/m/{v['name']}"} for v in volumes]
    return {
        "metadata": {"name": "p", "namespace": "team"},
        "spec": {"volumes": list(volumes), "containers": [{"name": "c", "volumeMounts": mounts}]},
    }


def test_kube_api_access_gets_the_token_the_ca_and_the_namespace(tmp_path: Path) -> None:
    objects = {("configmaps", "kube-root-ca.crt"): {"data": {"ca.crt": "PEM"}}}
    paths = prepare(
        pod(KUBE_API_ACCESS),
        tmp_path,
        lambda kind, name: objects.get((kind, name)),
        tokens={("", 3607): "tok-en"},
    )
    where = Path(paths["kube-api-access-x1"])
    files = {p.name: p.read_text() for p in where.iterdir()}
    assert files == {"token": "tok-en", "ca.crt": "PEM", "namespace": "team"}


def test_a_projected_token_nobody_could_get_fails_the_mount(tmp_path: Path) -> None:
    objects = {("configmaps", "kube-root-ca.crt"): {"data": {"ca.crt": "PEM"}}}
    with pytest.raises(MountFailed, match="no ServiceAccount token could be had for the pod"):
        prepare(pod(KUBE_API_ACCESS), tmp_path, lambda kind, name: objects.get((kind, name)))


def test_projected_secret_sources_are_decoded(tmp_path: Path) -> None:
    volume = {"name": "s", "projected": {"sources": [{"secret": {"name": "creds"}}]}}
    secret = {"data": {"user": base64.b64encode(b"alice").decode()}}
    paths = prepare(
        pod(volume), tmp_path, lambda kind, name: secret if (kind, name) == ("secrets", "creds") else None
    )
    assert (Path(paths["s"]) / "user").read_text() == "alice"


def test_token_requests_and_references_name_what_the_pod_needs() -> None:
    spec = pod(
        KUBE_API_ACCESS,
        {"name": "cm", "configMap": {"name": "settings"}},
        {"name": "sec", "secret": {"secretName": "keys"}},
    )
    spec["spec"]["containers"][0]["envFrom"] = [{"secretRef": {"name": "env-secret"}}]
    spec["spec"]["containers"][0]["env"] = [
        {"name": "A", "valueFrom": {"configMapKeyRef": {"name": "env-cm", "key": "a"}}}
    ]
    assert token_requests(spec) == {("", 3607)}
    assert references(spec) == {
        ("configmaps", "kube-root-ca.crt"),
        ("configmaps", "settings"),
        ("configmaps", "env-cm"),
        ("secrets", "extra"),
        ("secrets", "keys"),
        ("secrets", "env-secret"),
    }


def test_label_and_taint_flags() -> None:
    assert parse_labels("a=1, b=,c") == {"a": "1", "b": "", "c": ""}
    assert parse_taints("dedicated=agents:NoSchedule,spot:PreferNoSchedule") == (
        {"key": "dedicated", "value": "agents", "effect": "NoSchedule"},
        {"key": "spot", "effect": "PreferNoSchedule"},
    )
    with pytest.raises(ValueError, match="taint 'x=y': want key"):
        parse_taints("x=y")


def test_image_flag() -> None:
    assert parse_image("wlmvk:latest=/var/tmp/bin/wlmvk --x 'a b'") == (
        "wlmvk:latest",
        ("/var/tmp/bin/wlmvk", "--x", "a b"),
    )
    for wrong in ("wlmvk:latest", "=/bin/true", "img="):
        with pytest.raises(ValueError, match="want IMAGE=COMMAND"):
            parse_image(wrong)


def test_the_kubernetes_service_variables_name_the_api_server() -> None:
    assert service_env("https://127.0.0.1:16443") == {
        "KUBERNETES_SERVICE_HOST": "127.0.0.1",
        "KUBERNETES_SERVICE_PORT": "16443",
        "KUBERNETES_SERVICE_PORT_HTTPS": "16443",
        "KUBERNETES_PORT": "tcp://127.0.0.1:16443",
        "KUBERNETES_PORT_16443_TCP": "tcp://127.0.0.1:16443",
        "KUBERNETES_PORT_16443_TCP_PROTO": "tcp",
        "KUBERNETES_PORT_16443_TCP_PORT": "16443",
        "KUBERNETES_PORT_16443_TCP_ADDR": "127.0.0.1",
    }
    assert service_env("https://[::1]")["KUBERNETES_PORT"] == "tcp://[::1]:443"
