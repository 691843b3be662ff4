"""The CRDs: one Python source, the manifests generated from it, the original's fields."""

from __future__ import annotations

from pathlib import Path

import yaml

from wlmvk_dev import crdmanifests as crds

MANIFESTS = Path(__file__).resolve().parents[3] / "manifests" / "crds"


def test_manifests_are_generated_from_the_source() -> None:
    for name, crd in crds.definitions().items():
        on_disk = (MANIFESTS / name).read_text()
        assert on_disk == crds.render(crd), f"run: python -m wlmvk_dev.crdmanifests manifests/crds ({name})"
        assert yaml.safe_load(on_disk) == crd


def _version(crd: dict) -> dict:  # type: ignore[type-arg]
    return crd["spec"]["versions"][0]  # type: ignore[no-any-return]


def test_slurmjob_schema_follows_the_original() -> None:
    crd = crds.slurmjob()
    assert crd["metadata"]["name"] == "slurmjobs.wlm.sylabs.io"
    assert crd["spec"]["names"]["shortNames"] == ["sj"]
    version = _version(crd)
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    assert version["subresources"] == {"status": {}}
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["required"] == ["batch"]
    assert spec["properties"]["batch"]["minLength"] == 1
    assert spec["properties"]["prepare"]["required"] == ["to", "mount"]
    assert spec["properties"]["results"]["required"] == ["from", "mount"]
    mount = spec["properties"]["results"]["properties"]["mount"]
    assert mount["x-kubernetes-preserve-unknown-fields"] is True
    assert spec["properties"]["nodeSelector"]["additionalProperties"] == {"type": "string"}
    columns = [c["name"] for c in version["additionalPrinterColumns"]]
    assert columns == ["Status", "Job ID", "Partition", "Node", "Age"]


def test_wlmjob_schema_follows_the_original() -> None:
    crd = crds.wlmjob()
    assert crd["spec"]["names"]["shortNames"] == ["wj"]
    spec = _version(crd)["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["required"] == ["image"]
    assert set(spec["properties"]) == {"image", "options", "resources", "nodeSelector", "results"}
    assert set(spec["properties"]["resources"]["properties"]) == {
        "nodes",
        "cpuPerNode",
        "memPerNode",
        "wallTime",
    }
    assert spec["properties"]["options"]["properties"]["binds"]["items"] == {"type": "string"}


def test_slurmtenant_is_cluster_scoped_and_changeable() -> None:
    crd = crds.slurmtenant()
    assert crd["metadata"]["name"] == "slurmtenants.wlm.sylabs.io"
    assert crd["spec"]["scope"] == "Cluster"
    version = _version(crd)
    assert version["subresources"] == {"status": {}}
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["required"] == ["namespaces", "user", "account"]
    assert "x-kubernetes-validations" not in spec  # an admin edits the mapping in place
    assert [c["name"] for c in version["additionalPrinterColumns"]] == [
        "User",
        "Account",
        "QoS",
        "Namespaces",
        "Ready",
        "Reason",
        "Age",
        "Message",
    ]
    ready = '.status.conditions[?(@.type=="Ready")]'
    columns = {c["name"]: c for c in version["additionalPrinterColumns"]}
    assert columns["Reason"]["jsonPath"] == f"{ready}.reason"
    assert columns["Message"] == {
        "name": "Message",
        "type": "string",
        "jsonPath": f"{ready}.message",
        "priority": 1,
    }
    status = version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
    assert set(status) == {"conditions", "observedGeneration", "clusters"}
    assert status["clusters"]["items"]["required"] == ["cluster"]
