"""manifests/ and the CRDs through the real kubectl against the in-memory API server."""

from __future__ import annotations

import json
from pathlib import Path

import aiohttp
import pytest
import yaml

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
        "customresourcedefinition.apiextensions.k8s.io/slurmtenants.wlm.sylabs.io",
        "clusterrolebinding.rbac.authorization.k8s.io/wlmvk-tenants-reader",
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
    names = (
        "namespace.yaml",
        "crds/slurmjobs.yaml",
        "crds/wlmjobs.yaml",
        "crds/slurmtenants.yaml",
        "rbac.yaml",
    )
    for name in (*names, "tenants.yaml", "operator.yaml"):
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


def rendered() -> dict[tuple[str, str], dict]:  # type: ignore[type-arg]
    docs = []
    for name in ("namespace.yaml", "rbac.yaml", "operator.yaml", "configurator.yaml"):
        docs += [d for d in yaml.safe_load_all((MANIFESTS / name).read_text()) if d]
    return {(d["kind"], d["metadata"]["name"]): d for d in docs}


def test_configurator_runs_the_kubelet_as_the_original_did() -> None:
    ds = rendered()[("DaemonSet", "wlmvk-configurator")]
    pod = ds["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsUser"] == 1000
    assert pod["securityContext"]["runAsGroup"] == 1000
    container = pod["containers"][0]
    assert container["args"][0] == "kubelet"
    fields = {
        e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in container["env"] if "valueFrom" in e
    }
    assert fields == {"NODE_NAME": "spec.nodeName", "POD_IP": "status.podIP"}
    # The cluster's name is the site's to set (two agent hosts of one cluster share it); empty, the
    # kubelet names the cluster after its host, as the original did.
    assert {"name": "WLMVK_CLUSTER"} in container["env"]
    assert "--cluster-name=$(WLMVK_CLUSTER)" in container["args"]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert mounts["syslurm"] == "/var/run/syslurm"
    assert volumes["syslurm"]["hostPath"] == {"path": "/var/run/syslurm", "type": "Directory"}
    assert pod["serviceAccountName"] == "wlmvk-kubelet"


def test_operator_deployment_has_two_replicas_and_a_leader_lease() -> None:
    objects = rendered()
    deployment = objects[("Deployment", "wlmvk-operator")]
    assert deployment["spec"]["replicas"] == 2
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "wlmvk-operator"
    assert pod["containers"][0]["args"][0] == "operator"
    leases = objects[("Role", "wlmvk-operator-leader")]["rules"]
    assert leases == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "create", "update"]}
    ]


def test_rbac_is_least_privilege() -> None:
    objects = rendered()
    for kind, name in objects:
        if kind not in ("ClusterRole", "Role"):
            continue
        for rule in objects[(kind, name)]["rules"]:
            assert "*" not in rule["verbs"], (name, rule)
            assert "*" not in rule["resources"], (name, rule)
    operator = objects[("ClusterRole", "wlmvk-operator")]["rules"]
    pods = next(r for r in operator if r["resources"] == ["pods"])
    assert "delete" not in pods["verbs"]  # owned pods go with their owner (garbage collection)
    assert not any("secrets" in r["resources"] for r in operator)


async def test_short_names_and_printer_columns(apiserver) -> None:  # type: ignore[no-untyped-def]
    await crds(apiserver)
    doc = {
        "apiVersion": "wlm.sylabs.io/v1alpha1",
        "kind": "SlurmJob",
        "metadata": {"name": "cols"},
        "spec": {"batch": "#!/bin/sh\n"},
    }
    assert (await apiserver.kubectl("create", "-f", "-", input=json.dumps(doc))).returncode == 0
    listed = await apiserver.kubectl("get", "sj", "-o", "wide")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split("\n")[0].split() == ["NAME", "STATUS", "JOB", "ID", "PARTITION", "NODE", "AGE"]
    empty = await apiserver.kubectl("get", "wj")
    assert empty.returncode == 0, empty.stderr
    assert "No resources found" in empty.stderr


async def test_slurmtenants_are_cluster_scoped_with_their_columns(apiserver) -> None:  # type: ignore[no-untyped-def]
    applied = await apiserver.kubectl("apply", "-f", str(MANIFESTS / "crds" / "slurmtenants.yaml"))
    assert applied.returncode == 0, applied.stderr
    doc = {
        "apiVersion": "wlm.sylabs.io/v1alpha1",
        "kind": "SlurmTenant",
        "metadata": {"name": "team-a"},
        "spec": {
            "namespaces": ["alpha", "alpha-dev"],
            "user": "alice",
            "account": "physics",
            "qos": {"default": "normal", "allowed": ["long"]},
            "partitions": [{"cluster": "hpc", "partitions": ["cpu"]}],
        },
    }
    created = await apiserver.kubectl("create", "-f", "-", "-o", "name", input=json.dumps(doc))
    assert created.returncode == 0, created.stderr
    assert created.stdout.strip() == "slurmtenant.wlm.sylabs.io/team-a"
    listed = await apiserver.kubectl("get", "st", "-n", "elsewhere")  # cluster-scoped: any -n sees it
    assert listed.returncode == 0, listed.stderr
    header, row = listed.stdout.splitlines()[:2]
    assert header.split() == ["NAME", "USER", "ACCOUNT", "QOS", "NAMESPACES", "READY", "REASON", "AGE"]
    assert row.split()[:5] == ["team-a", "alice", "physics", "normal", '["alpha","alpha-dev"]']
    bad = {**doc, "metadata": {"name": "bad"}, "spec": {"namespaces": [], "user": "bob"}}
    refused = await apiserver.kubectl("create", "-f", "-", input=json.dumps(bad))
    assert refused.returncode != 0
    assert 'The SlurmTenant "bad" is invalid' in refused.stderr, refused.stderr
    assert "account" in refused.stderr
