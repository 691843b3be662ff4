"""The staging image when none is given: the image of the operator's own container."""

from __future__ import annotations

import pytest

from wlmvk.core.errors import NotFound
from wlmvk.operator import ownimage


def _pod(*containers: tuple[str, str]) -> dict[str, object]:
    return {
        "metadata": {"namespace": "wlmvk", "name": "wlmvk-operator-7f9c"},
        "spec": {"containers": [{"name": name, "image": image} for name, image in containers]},
    }


def test_the_operator_containers_image_among_others() -> None:
    pod = _pod(("sidecar", "proxy:1"), ("operator", "registry.example/site/wlmvk:0.1.0"))
    assert ownimage.container_image(pod) == "registry.example/site/wlmvk:0.1.0"


def test_a_pod_without_the_operator_container_says_what_to_give() -> None:
    with pytest.raises(NotFound) as caught:
        ownimage.container_image(_pod(("main", "wlmvk:1")))
    assert caught.value.message == (
        "pod wlmvk/wlmvk-operator-7f9c has no container 'operator' with an image to run the staging "
        "pods from: give --stage-image"
    )


@pytest.mark.parametrize(
    ("env", "pod"),
    [
        ({"POD_NAMESPACE": "wlmvk", "POD_NAME": "op-1"}, ("wlmvk", "op-1")),
        ({"POD_NAME": "op-1"}, None),
        ({"POD_NAMESPACE": "wlmvk", "POD_NAME": ""}, None),
        ({}, None),
    ],
)
def test_the_own_pod_is_known_only_from_both_downward_api_variables(
    env: dict[str, str], pod: tuple[str, str] | None
) -> None:
    assert ownimage.own_pod(env) == pod
