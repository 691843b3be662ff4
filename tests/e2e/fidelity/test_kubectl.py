"""What kubectl shows on both planes: table columns of ``get pods``/``get nodes`` (``-o wide``)
and of our CRDs' additionalPrinterColumns, ``explain`` on our CRDs, discovery of wlm.sylabs.io."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.fidelity.support import (
    MERGE,
    PODS,
    SLURMJOBS,
    TABLE,
    call,
    install_crds,
    pod,
    slurmjob,
    unique,
)

pytestmark = pytest.mark.kube_any(subject="what each plane answers kubectl (tables, explain, discovery)")


async def _node(kube_api: Any, name: str) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"node-role.kubernetes.io/slurm": ""}},
    }
    await call(kube_api, "POST", "/api/v1/nodes", body=body)
    status = {
        "nodeInfo": {
            "kubeletVersion": "v1.36.0",
            "osImage": "Debian",
            "kernelVersion": "6.1",
            "containerRuntimeVersion": "slurm://24",
        },
        "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "ok",
                "lastHeartbeatTime": "2026-01-01T00:00:00Z",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ],
    }
    await call(kube_api, "PATCH", f"/api/v1/nodes/{name}/status", body={"status": status}, content_type=MERGE)


def _columns(table: dict[str, Any]) -> list[tuple[str, str, str, int]]:
    return [(c["name"], c["type"], c["format"], c["priority"]) for c in table["columnDefinitions"]]


async def test_tables_of_nodes_pods_and_slurmjobs(apiserver: Any, kube_api: Any) -> None:
    install_crds(apiserver)
    node, name = unique("fid-node"), unique("tp")
    await _node(kube_api, node)
    await call(kube_api, "POST", PODS, body=pod(name, nodeName=node))
    await call(kube_api, "POST", SLURMJOBS, body=slurmjob(name))
    status = {"status": "Running", "jobId": "42", "partition": "debug", "node": "slurm-debug"}
    await call(kube_api, "PATCH", f"{SLURMJOBS}/{name}/status", body={"status": status}, content_type=MERGE)
    _, table = await call(kube_api, "GET", f"/api/v1/nodes/{node}", accept=TABLE)
    assert _columns(table) == [
        ("Name", "string", "name", 0),
        ("Status", "string", "", 0),
        ("Roles", "string", "", 0),
        ("Age", "string", "", 0),
        ("Version", "string", "", 0),
        ("Internal-IP", "string", "", 1),
        ("External-IP", "string", "", 1),
        ("OS-Image", "string", "", 1),
        ("Kernel-Version", "string", "", 1),
        ("Container-Runtime", "string", "", 1),
    ]
    cells = table["rows"][0]["cells"]
    assert cells[:3] + cells[4:] == [
        node,
        "Ready",
        "slurm",
        "v1.36.0",
        "10.0.0.1",
        "<none>",
        "Debian",
        "6.1",
        "slurm://24",
    ]
    _, table = await call(kube_api, "GET", f"{PODS}/{name}", accept=TABLE)
    assert _columns(table) == [
        ("Name", "string", "name", 0),
        ("Ready", "string", "", 0),
        ("Status", "string", "", 0),
        ("Restarts", "string", "", 0),
        ("Age", "string", "", 0),
        ("IP", "string", "", 1),
        ("Node", "string", "", 1),
        ("Nominated Node", "string", "", 1),
        ("Readiness Gates", "string", "", 1),
    ]
    cells = table["rows"][0]["cells"]
    assert cells[:4] + cells[5:] == [name, "0/1", "Pending", "0", "<none>", node, "<none>", "<none>"]
    _, table = await call(kube_api, "GET", f"{SLURMJOBS}/{name}", accept=TABLE)
    assert _columns(table) == [
        ("Name", "string", "name", 0),
        ("Status", "string", "", 0),
        ("Job ID", "string", "", 0),
        ("Partition", "string", "", 0),
        ("Node", "string", "", 1),
        ("Age", "date", "", 0),
    ]
    cells = table["rows"][0]["cells"]
    assert cells[:5] == [name, "Running", "42", "debug", "slurm-debug"]


async def test_kubectl_get_wide_headers_and_cells(apiserver: Any, kube_api: Any) -> None:
    install_crds(apiserver)
    node, name = unique("fid-node"), unique("tp")
    await _node(kube_api, node)
    await call(kube_api, "POST", PODS, body=pod(name, nodeName=node))
    await call(kube_api, "POST", SLURMJOBS, body=slurmjob(name))
    got = await apiserver.kubectl("get", "node", node, "-o", "wide")
    header, row = got.stdout.splitlines()
    assert header.split() == [
        "NAME",
        "STATUS",
        "ROLES",
        "AGE",
        "VERSION",
        "INTERNAL-IP",
        "EXTERNAL-IP",
        "OS-IMAGE",
        "KERNEL-VERSION",
        "CONTAINER-RUNTIME",
    ]
    assert row.split()[:3] == [node, "Ready", "slurm"]
    got = await apiserver.kubectl("get", "pod", name, "-n", "default", "-o", "wide")
    header, row = got.stdout.splitlines()
    assert header.split() == [
        "NAME",
        "READY",
        "STATUS",
        "RESTARTS",
        "AGE",
        "IP",
        "NODE",
        "NOMINATED",
        "NODE",
        "READINESS",
        "GATES",
    ]
    assert row.split()[:4] + row.split()[5:] == [
        name,
        "0/1",
        "Pending",
        "0",
        "<none>",
        node,
        "<none>",
        "<none>",
    ]
    got = await apiserver.kubectl("get", "slurmjobs", "-n", "default", "-o", "wide")
    header, row = got.stdout.splitlines()
    assert header.split() == ["NAME", "STATUS", "JOB", "ID", "PARTITION", "NODE", "AGE"]
    assert row.split()[0] == name


async def test_discovery_of_the_wlm_group(apiserver: Any, kube_api: Any) -> None:
    install_crds(apiserver)
    code, group = await call(kube_api, "GET", "/apis/wlm.sylabs.io")
    version = {"groupVersion": "wlm.sylabs.io/v1alpha1", "version": "v1alpha1"}
    assert (code, group) == (
        200,
        {
            "kind": "APIGroup",
            "apiVersion": "v1",
            "name": "wlm.sylabs.io",
            "versions": [version],
            "preferredVersion": version,
        },
    )
    code, listed = await call(kube_api, "GET", "/apis/wlm.sylabs.io/v1alpha1")
    resources = {r["name"]: {**r, "verbs": sorted(r["verbs"])} for r in listed["resources"]}
    assert resources["slurmjobs"] == {
        "name": "slurmjobs",
        "singularName": "slurmjob",
        "namespaced": True,
        "kind": "SlurmJob",
        "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
        "shortNames": ["sj"],
        "storageVersionHash": "8KRDAqFiB3w=",
    }
    assert resources["slurmjobs/status"] == {
        "name": "slurmjobs/status",
        "singularName": "",
        "namespaced": True,
        "kind": "SlurmJob",
        "verbs": ["get", "patch", "update"],
    }
    got = await apiserver.kubectl("api-resources", "--api-group=wlm.sylabs.io")
    assert [line.split() for line in got.stdout.splitlines()] == [
        ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"],
        ["slurmjobs", "sj", "wlm.sylabs.io/v1alpha1", "true", "SlurmJob"],
        ["slurmtenants", "st", "wlm.sylabs.io/v1alpha1", "false", "SlurmTenant"],
        ["wlmjobs", "wj", "wlm.sylabs.io/v1alpha1", "true", "WlmJob"],
    ]


async def test_kubectl_explain_on_our_crds(apiserver: Any) -> None:
    install_crds(apiserver)
    got = await apiserver.kubectl("explain", "slurmjob.spec.prepare")
    assert got.returncode == 0, got.stderr
    lines = [line.strip() for line in got.stdout.splitlines() if line.strip()]
    assert lines[:4] == [
        "GROUP:      wlm.sylabs.io",
        "KIND:       SlurmJob",
        "VERSION:    v1alpha1",
        "FIELD: prepare <Object>",
    ]
    assert "DESCRIPTION:" in lines
    assert "Upload a volume's contents before the job runs." in lines
    assert "mount\t<Object> -required-" in got.stdout
    assert "to\t<string> -required-" in got.stdout
