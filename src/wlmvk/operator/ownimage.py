"""The staging pods' image when no ``--stage-image`` is given: the operator's own.

A site points the manifests at its registry with one setting (kustomize ``images:``, which
rewrites ``image:`` fields only, or the chart's image value). An argument naming the staging
image would escape it, and staging pods would still ask for the old image. So the operator runs
its staging pods from the image its own container runs, read from its pod (the downward API gives
it its pod's name and namespace, ``POD_NAME`` and ``POD_NAMESPACE``): whatever image the site set
reaches both. Outside a pod (the demo, a developer's process), the default is ``wlmvk:latest``.
"""

from __future__ import annotations

from collections.abc import Mapping

from wlmvk.core.errors import NotFound
from wlmvk.kube.bodies import Body

OWN_CONTAINER = "operator"
"""The operator's container in its pod (manifests/operator.yaml): its image is the staging image."""
OUTSIDE_A_POD = "wlmvk:latest"


def own_pod(env: Mapping[str, str]) -> tuple[str, str] | None:
    """(namespace, name) of the operator's pod from the downward API's variables, or None outside one."""
    namespace, name = env.get("POD_NAMESPACE", ""), env.get("POD_NAME", "")
    return (namespace, name) if namespace and name else None


def container_image(pod: Body, container: str = OWN_CONTAINER) -> str:
    """The image of ``pod``'s container named ``container``."""
    for spec in pod.get("spec", {}).get("containers", []):
        if spec.get("name") == container and spec.get("image"):
            return str(spec["image"])
    meta = pod.get("metadata", {})
    raise NotFound(
        f"pod {meta.get('namespace', '')}/{meta.get('name', '')} has no container {container!r} with an "
        "image to run the staging pods from: give --stage-image"
    )
