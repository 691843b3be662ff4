"""Protobuf bodies of kubectl's imperative create commands, captured from the real kubectl 1.32."""

from __future__ import annotations

import binascii
from pathlib import Path

import pytest

from wlmvk_dev.apiserver.handlers.protobuf import decode
from wlmvk_dev.apiserver.objects.errors import ApiError

CAPTURED = {
    path: binascii.unhexlify(hexed)
    for path, hexed in (
        line.split()
        for line in (Path(__file__).parent / "kubectl_create_protobuf.txt").read_text().splitlines()
    )
}


def test_namespace() -> None:
    assert decode(CAPTURED["/api/v1/namespaces"]) == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "team-b"},
        "spec": {},
    }


def test_secret_data_is_base64() -> None:
    secret = decode(CAPTURED["/api/v1/namespaces/team-a/secrets"])
    assert secret["metadata"] == {"name": "s1", "namespace": "team-a"}
    assert secret["data"] == {"token": "YWJj"}
    assert secret["type"] == "wlmvk/token"


def test_configmap_keeps_empty_values() -> None:
    cm = decode(CAPTURED["/api/v1/namespaces/default/configmaps"])
    assert cm["kind"] == "ConfigMap"
    assert cm["data"] == {"a": "b", "empty": ""}


def test_serviceaccount() -> None:
    sa = decode(CAPTURED["/api/v1/namespaces/default/serviceaccounts"])
    assert sa["metadata"]["name"] == "sa1"


def test_other_kinds_and_garbage_are_refused() -> None:
    envelope = b"k8s\x00\n\x15\n\x07apps/v1\x12\nDeployment\x12\x00"
    with pytest.raises(ApiError) as raised:
        decode(envelope)
    assert raised.value.code == 415
    assert "Deployment" in raised.value.message
    with pytest.raises(ApiError) as garbage:
        decode(b"k8s\x00\n\xff")
    assert garbage.value.code == 400
