"""One image setting reaches every pod wlmvk runs: a site's overlay with kustomize ``images:``
(docs/deployment.md, step 3), rendered by the real ``kubectl kustomize``.

kustomize rewrites ``image:`` fields only; the staging pods' image is the operator's own
(wlmvk.operator.ownimage), so no argument or variable may name an image of its own.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fixtures.apiserver import KUBECTL
from wlmvk.operator import ownimage

ROOT = Path(__file__).resolve().parents[3]
SITE_IMAGE = "registry.example/site/wlmvk:0.1.0"

pytestmark = pytest.mark.kubectl


def _render(tmp_path: Path) -> list[dict[str, Any]]:
    base = os.path.relpath(ROOT / "manifests", tmp_path)
    (tmp_path / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": [base],
                "images": [{"name": "wlmvk", "newName": "registry.example/site/wlmvk", "newTag": "0.1.0"}],
            }
        )
    )
    done = subprocess.run(
        [KUBECTL, "kustomize", str(tmp_path)], capture_output=True, text=True, check=True, timeout=60
    )
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def _templates(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        f"{doc['kind']}/{doc['metadata']['name']}": doc["spec"]["template"]["spec"]
        for doc in docs
        if "template" in doc.get("spec", {})
    }


def test_the_overlays_image_reaches_every_pod_template(tmp_path: Path) -> None:
    templates = _templates(_render(tmp_path))
    assert set(templates) == {"Deployment/wlmvk-operator", "DaemonSet/wlmvk-configurator"}
    for kind_name, pod in templates.items():
        for container in pod["containers"] + pod.get("initContainers", []):
            assert container["image"] == SITE_IMAGE, kind_name


def test_the_staging_image_is_the_operators_container_and_nothing_names_another(tmp_path: Path) -> None:
    docs = _render(tmp_path)
    operator = _templates(docs)["Deployment/wlmvk-operator"]
    (container,) = [c for c in operator["containers"] if c["name"] == ownimage.OWN_CONTAINER]
    assert not [arg for arg in container["args"] if arg.startswith("--stage-image")]
    # Where a site's patch (tests/e2e/deploy/test_real_node.py, test_chart.py) moves the socket.
    assert container["args"][1] == "--red-box-socket=/var/run/syslurm/red-box.sock"
    env = {item["name"]: item.get("valueFrom", {}).get("fieldRef", {}) for item in container["env"]}
    assert (env["POD_NAME"], env["POD_NAMESPACE"]) == (
        {"fieldPath": "metadata.name"},
        {"fieldPath": "metadata.namespace"},
    )
    assert "WLMVK_STAGE_IMAGE" not in env
    assert "wlmvk:latest" not in yaml.safe_dump_all(docs)
