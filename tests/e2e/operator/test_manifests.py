"""manifests/ and the CRDs through the real kubectl against the in-memory API server."""

from __future__ import annotations

import json
from pathlib import Path

import aiohttp
import pytest

ROOT = Path(__file__).resolve().parents[3]
MANIFESTS = ROOT / "manifests"

pytestmark = pytest.mark.kubectl


async def test_kustomization_applies_cleanly(apiserver) -> None:  # type: ignore[no-untyped-def]
    applied = await apiserver.kubectl("apply", "-k", str(MANIFESTS))
    assert applied.returncode == 0, applied.stderr
    out = applied.stdout
    for line in (
        "namespace/wlmvk",
        "customresourcedefinition.apiextensions.k8s.io/slurmjobs.wlm.sylabs.io",
        "customresourcedefinition.apiextensions.k8s.io/wlmjobs.wlm.sylabs.io",
        "serviceaccount/wlmvk-operator",
        "clusterrole.rbac.authorization.k8s.io/wlmvk-operator",
        "deployment.apps/wlmvk-operator",
        "daemonset.apps/wlmvk-configurator",
    ):
        assert line in out
    again = await apiserver.kubectl("apply", "-k", str(MANIFESTS))
    assert again.returncode == 0, again.stderr
    assert "unchanged" in again.stdout


async def test_each_manifest_applies_on_its_own(apiserver) -> None:  # type: ignore[no-untyped-def]
    for name in ("namespace.yaml", "crds/slurmjobs.yaml", "crds/wlmjobs.yaml", "rbac.yaml", "operator.yaml"):
        applied = await apiserver.kubectl("apply", "-f", str(MANIFESTS / name))
        assert applied.returncode == 0, f"{name}: {applied.stderr}"


async def crds(apiserver) -> None:  # type: ignore[no-untyped-def]
    for name in ("slurmjobs.yaml", "wlmjobs.yaml"):
        applied = await apiserver.kubectl("apply", "-f", str(MANIFESTS / "crds" / name))
        assert applied.returncode == 0, applied.stderr


@pytest.mark.parametrize(
    ("spec", "complaint"),
    [
        ({}, "batch"),
        ({"batch": ""}, "batch"),
        ({"batch": 5}, "batch"),
        ({"batch": "#!/bin/sh\n", "prepare": {"to": "."}}, "mount"),
        ({"batch": "#!/bin/sh\n", "results": {"mount": {"name": "o", "emptyDir": {}}}}, "from"),
        ({"batch": "#!/bin/sh\n", "nodeSelector": {"a": 1}}, "nodeSelector"),
    ],
)
async def test_invalid_slurmjob_is_refused_with_422(apiserver, spec: dict, complaint: str) -> None:  # type: ignore[no-untyped-def,type-arg]
    await crds(apiserver)
    doc = {
        "apiVersion": "wlm.sylabs.io/v1alpha1",
        "kind": "SlurmJob",
        "metadata": {"name": "bad"},
        "spec": spec,
    }
    applied = await apiserver.kubectl("create", "-f", "-", "-o", "name", input=json.dumps(doc))
    assert applied.returncode != 0
    assert 'The SlurmJob "bad" is invalid' in applied.stderr, applied.stderr
    assert complaint in applied.stderr
    url = f"{apiserver.url}/apis/wlm.sylabs.io/v1alpha1/namespaces/default/slurmjobs"
    async with aiohttp.ClientSession() as session, session.post(url, json=doc) as response:
        assert response.status == 422
        assert (await response.json())["reason"] == "Invalid"
    listed = await apiserver.kubectl("get", "sj", "-o", "name")
    assert "bad" not in listed.stdout


async def test_examples_are_valid_resources(apiserver) -> None:  # type: ignore[no-untyped-def]
    await crds(apiserver)
    for path in sorted((ROOT / "examples").glob("*.yaml")):
        applied = await apiserver.kubectl("apply", "--dry-run=server", "-f", str(path))
        assert applied.returncode == 0, f"{path.name}: {applied.stderr}"
