"""deploy/chart renders manifests/ itself: `helm template` equals `kubectl kustomize` of the same
settings (the image, red-box's socket, the cluster's name, confinement), and `helm lint` passes.

Helm is built from its Go module by dev/scripts/helm-build, which CI runs in the background: the
tests are skipped where that build is absent, saying so (a failure under CI); docs/raw/chart-test.txt
keeps a run.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

import wlmvk
from tests.fixtures.apiserver import KUBECTL
from tests.fixtures.helm import CHART, HELM
from tests.fixtures.prerequisites import unless_installed

ROOT = Path(__file__).resolve().parents[3]

pytestmark = [
    pytest.mark.kubectl,
    # A failure under CI, which builds it (scripts/test).
    unless_installed(not HELM.exists(), f"no Helm at {HELM}: dev/scripts/helm-build builds it"),
]

Objects = dict[tuple[str, str, str], dict[str, Any]]


def _objects(text: str) -> Objects:
    docs = [doc for doc in yaml.safe_load_all(text) if doc]
    found = {(d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]): d for d in docs}
    assert len(found) == len(docs), "two objects of one kind and name"
    return found


def _helm(*args: str) -> Objects:
    done = subprocess.run(
        [str(HELM), "template", "wlmvk", str(CHART), *args], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return _objects(done.stdout)


def _kustomize(tmp_path: Path, **overlay: Any) -> Objects:
    """An overlay of manifests/ (and manifests/confine/ with confine=True) as a site writes it."""
    confine = overlay.pop("confine", False)
    resources = [os.path.relpath(ROOT / "manifests", tmp_path)]
    if confine:
        resources.append(os.path.relpath(ROOT / "manifests" / "confine", tmp_path))
    kustomization = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization"}
    (tmp_path / "kustomization.yaml").write_text(
        yaml.safe_dump({**kustomization, "resources": resources, **overlay})
    )
    done = subprocess.run([KUBECTL, "kustomize", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return _objects(done.stdout)


def test_the_chart_lints_and_names_wlmvks_version() -> None:
    done = subprocess.run([str(HELM), "lint", str(CHART)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert (chart["version"], chart["appVersion"]) == (wlmvk.__version__, wlmvk.__version__)


def test_the_defaults_render_the_manifests(tmp_path: Path) -> None:
    assert _helm() == _kustomize(tmp_path)


def test_the_image_value_is_a_kustomize_images_setting(tmp_path: Path) -> None:
    images = [{"name": "wlmvk", "newName": "registry.example/site/wlmvk", "newTag": "0.1.0"}]
    assert _helm("--set", "image=registry.example/site/wlmvk:0.1.0") == _kustomize(tmp_path, images=images)


def test_confine_adds_manifests_confine(tmp_path: Path) -> None:
    assert _helm("--set", "confine=true") == _kustomize(tmp_path, confine=True)


def test_the_cluster_value_is_the_configurators_wlmvk_cluster(tmp_path: Path) -> None:
    patch = {
        "target": {"kind": "DaemonSet", "name": "wlmvk-configurator"},
        "patch": yaml.safe_dump(
            [{"op": "add", "path": "/spec/template/spec/containers/0/env/0/value", "value": "hpc1"}]
        ),
    }
    assert _helm("--set", "cluster=hpc1") == _kustomize(tmp_path, patches=[patch])


def test_the_socket_value_moves_the_socket_and_its_directory_everywhere(tmp_path: Path) -> None:
    socket, directory = "/run/wlmvk/rb.sock", "/run/wlmvk"
    configurator = "/spec/template/spec/containers/0"
    patches = [
        {
            "target": {"kind": "DaemonSet", "name": "wlmvk-configurator"},
            "patch": yaml.safe_dump(
                [
                    {
                        "op": "replace",
                        "path": f"{configurator}/args/1",
                        "value": f"--red-box-socket={socket}",
                    },
                    {"op": "replace", "path": f"{configurator}/volumeMounts/0/mountPath", "value": directory},
                    {
                        "op": "replace",
                        "path": "/spec/template/spec/volumes/0/hostPath/path",
                        "value": directory,
                    },
                ]
            ),
        },
        {
            "target": {"kind": "Deployment", "name": "wlmvk-operator"},
            "patch": yaml.safe_dump(
                [{"op": "replace", "path": f"{configurator}/args/1", "value": f"--red-box-socket={socket}"}]
            ),
        },
    ]
    assert _helm("--set", f"redBoxSocket={socket}") == _kustomize(tmp_path, patches=patches)
