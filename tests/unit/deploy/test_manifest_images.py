"""The manifests run the image as it is built: its subcommands, its user.

What the image is (user, entrypoint, read-only root) is tested by running it:
tests/e2e/deploy/test_image.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from wlmvk.cli import SUBCOMMANDS

ROOT = Path(__file__).resolve().parents[3]


def _image_containers() -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(file, pod spec, container) for every container that runs the project's image."""
    found = []
    for path in sorted((ROOT / "manifests").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if not isinstance(doc, dict) or doc.get("kind") not in {"Deployment", "DaemonSet"}:
                continue
            pod = doc["spec"]["template"]["spec"]
            for container in pod["containers"]:
                if container["image"].split(":")[0].endswith("wlmvk"):
                    found.append((path.name, pod, container))
    return found


def test_manifests_run_subcommands_of_the_image_as_its_user() -> None:
    containers = _image_containers()
    assert {name for name, _, _ in containers} >= {"operator.yaml", "configurator.yaml"}
    for name, pod, container in containers:
        assert "command" not in container, f"{name}: the image's entrypoint is wlmvk; use args"
        assert container["args"][0] in SUBCOMMANDS, f"{name}: {container['args'][0]} is no wlmvk command"
        context = {**pod.get("securityContext", {}), **container.get("securityContext", {})}
        assert (context.get("runAsUser"), context.get("runAsGroup")) == (1000, 1000), name
