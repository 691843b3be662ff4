"""The container-job annotation shared by the operator and the kubelet."""

from __future__ import annotations

import json

import pytest

from wlmvk.core import containerjob
from wlmvk.core.errors import InvalidInput
from wlmvk.core.jobs import ContainerJobSpec, ContainerOptions


def test_round_trip() -> None:
    spec = ContainerJobSpec(
        image="docker://alpine",
        nodes=1,
        cpu_per_node=2,
        mem_per_node=512,
        wall_time=300,
        options=ContainerOptions(app="a", binds=("/x:/y",), clear_env=True, fake_root=True, host_name="h"),
    )
    assert containerjob.decode(containerjob.encode(spec)) == spec


def test_shape_is_the_wlmjob_spec() -> None:
    text = containerjob.encode(ContainerJobSpec(image="i", wall_time=60))
    assert json.loads(text)["resources"] == {"nodes": 0, "cpuPerNode": 0, "memPerNode": 0, "wallTime": 60}
    assert json.loads(text)["options"]["cleanEnv"] is False


def test_absent_keys_are_zero() -> None:
    assert containerjob.decode('{"image": "i"}') == ContainerJobSpec(image="i")


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[]",
        '{"image": ""}',
        '{"image": "i", "options": []}',
        '{"image": "i", "options": {"binds": "/a"}}',
        '{"image": "i", "resources": {"nodes": -1}}',
        '{"image": "i", "resources": {"wallTime": "10"}}',
    ],
)
def test_malformed(text: str) -> None:
    with pytest.raises(InvalidInput):
        containerjob.decode(text)
