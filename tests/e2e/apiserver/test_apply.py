"""kubectl apply (client- and server-side), apply -k, get/delete, through the real kubectl."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.fixtures.apiserver import RunningApiServer, deleted_line, requires_kubectl
from wlmvk_dev.apiserver.objects.resources import CONFIGMAPS, DAEMONSETS, DEPLOYMENTS, PODS, SECRETS

pytestmark = pytest.mark.kubectl

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def deployment(env_value: str, *, extra_env: bool = True) -> str:
    env = [{"name": "A", "value": env_value}] + ([{"name": "B", "value": "b"}] if extra_env else [])
    return yaml.safe_dump(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d1", "labels": {"app": "demo"}},
            "spec": {
                "selector": {"matchLabels": {"app": "demo"}},
                "template": {
                    "metadata": {"labels": {"app": "demo"}},
                    "spec": {
                        "containers": [
                            {"name": "c", "image": "busybox", "command": ["true"], "env": env},
                            {"name": "side", "image": "busybox"},
                        ]
                    },
                },
            },
        }
    )


async def test_apply_twice_patches_with_strategic_merge(apiserver: RunningApiServer) -> None:
    created = await apiserver.kubectl("apply", "-f", "-", input=deployment("1"))
    assert created.returncode == 0, created.stderr
    assert created.stdout.strip() == "deployment.apps/d1 created"
    again = await apiserver.kubectl("apply", "-f", "-", input=deployment("2", extra_env=False))
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "deployment.apps/d1 configured"
    stored = apiserver.store.get(DEPLOYMENTS, "d1", "default")
    containers = stored["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["c", "side"]
    assert containers[0]["env"] == [{"name": "A", "value": "2"}]
    assert json.loads(stored["metadata"]["annotations"][LAST_APPLIED])["spec"]["template"]["spec"][
        "containers"
    ][0]["env"] == [{"name": "A", "value": "2"}]
    unchanged = await apiserver.kubectl("apply", "-f", "-", input=deployment("2", extra_env=False))
    assert unchanged.stdout.strip() == "deployment.apps/d1 unchanged"


async def test_pod_spec_is_immutable_but_for_images(apiserver: RunningApiServer) -> None:
    def pod(image: str, command: str) -> str:
        return yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p1"},
                "spec": {"containers": [{"name": "c", "image": image, "command": [command]}]},
            }
        )

    assert (await apiserver.kubectl("apply", "-f", "-", input=pod("busybox", "true"))).returncode == 0
    new_image = await apiserver.kubectl("apply", "-f", "-", input=pod("alpine", "true"))
    assert new_image.stdout.strip() == "pod/p1 configured"
    new_command = await apiserver.kubectl("apply", "-f", "-", input=pod("alpine", "false"))
    assert new_command.returncode == 1
    assert "pod updates may not change fields other than `spec.containers[*].image`" in new_command.stderr
    assert apiserver.store.get(PODS, "p1", "default")["spec"]["containers"][0]["image"] == "alpine"


async def test_server_side_apply_creates_then_updates(apiserver: RunningApiServer) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm2"}, "data": {"a": "1"}}
    first = await apiserver.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(body))
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == "configmap/cm2 serverside-applied"
    body["data"] = {"a": "2", "b": "3"}
    second = await apiserver.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(body))
    assert second.returncode == 0, second.stderr
    assert apiserver.store.get(CONFIGMAPS, "cm2", "default")["data"] == {"a": "2", "b": "3"}
    body["data"] = {"a": "2"}
    third = await apiserver.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(body))
    assert third.returncode == 0, third.stderr
    assert apiserver.store.get(CONFIGMAPS, "cm2", "default")["data"] == {"a": "2"}


async def test_apply_kustomization_stores_workloads_and_rbac(
    apiserver: RunningApiServer, tmp_path: Path
) -> None:
    docs = {
        "ns.yaml": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "wlm"}},
        "sa.yaml": {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "op", "namespace": "wlm"},
        },
        "role.yaml": {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "op"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["*"]}],
        },
        "binding.yaml": {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "op"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "op"},
            "subjects": [{"kind": "ServiceAccount", "name": "op", "namespace": "wlm"}],
        },
        "deploy.yaml": {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "op", "namespace": "wlm"},
            "spec": {
                "selector": {"matchLabels": {"app": "op"}},
                "template": {
                    "metadata": {"labels": {"app": "op"}},
                    "spec": {"containers": [{"name": "op", "image": "wlmvk"}]},
                },
            },
        },
        "ds.yaml": {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "cfg", "namespace": "wlm"},
            "spec": {
                "selector": {"matchLabels": {"app": "cfg"}},
                "template": {
                    "metadata": {"labels": {"app": "cfg"}},
                    "spec": {"containers": [{"name": "cfg", "image": "wlmvk"}]},
                },
            },
        },
    }
    for name, doc in docs.items():
        (tmp_path / name).write_text(yaml.safe_dump(doc))
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump({"resources": sorted(docs)}))
    result = await apiserver.kubectl("apply", "-k", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "deployment.apps/op created" in result.stdout
    assert "clusterrolebinding.rbac.authorization.k8s.io/op created" in result.stdout
    assert (
        apiserver.store.get(DEPLOYMENTS, "op", "wlm")["spec"]["template"]["spec"]["containers"][0]["image"]
        == "wlmvk"
    )
    assert apiserver.store.get(DAEMONSETS, "cfg", "wlm")["metadata"]["namespace"] == "wlm"
    again = await apiserver.kubectl("apply", "-k", str(tmp_path))
    assert again.returncode == 0, again.stderr
    assert "deployment.apps/op unchanged" in again.stdout


async def test_get_and_delete_configmap(apiserver: RunningApiServer) -> None:
    apiserver.store.create(
        CONFIGMAPS, {"metadata": {"name": "cm", "labels": {"tier": "a"}}, "data": {"k": "v"}}
    )
    table = await apiserver.kubectl("get", "configmaps")
    assert table.stdout.split("\n")[0].split() == ["NAME", "DATA", "AGE"]
    assert table.stdout.split("\n")[1].split()[:2] == ["cm", "1"]
    as_yaml = await apiserver.kubectl("get", "configmap", "cm", "-o", "yaml")
    assert yaml.safe_load(as_yaml.stdout)["data"] == {"k": "v"}
    deleted = await apiserver.kubectl("delete", "configmap", "cm")
    assert deleted.stdout.strip() == deleted_line('configmap "cm"')
    missing = await apiserver.kubectl("get", "configmap", "cm")
    assert missing.returncode == 1
    assert 'Error from server (NotFound): configmaps "cm" not found' in missing.stderr


@requires_kubectl(32)
async def test_imperative_create_commands_send_protobuf_we_decode(apiserver: RunningApiServer) -> None:
    made = await apiserver.kubectl("create", "namespace", "team")
    assert made.returncode == 0, made.stderr
    secret = await apiserver.kubectl("create", "secret", "generic", "s", "--from-literal=k=v", "-n", "team")
    assert secret.returncode == 0, secret.stderr
    assert apiserver.store.get(SECRETS, "s", "team")["data"] == {"k": "dg=="}
    refused = await apiserver.kubectl("create", "deployment", "d", "--image=x")
    assert refused.returncode != 0
    assert "not Deployment: send JSON (kubectl apply -f / create -f)" in refused.stderr


@requires_kubectl(32)
async def test_diff_uses_dry_run_and_changes_nothing(apiserver: RunningApiServer) -> None:
    await apiserver.kubectl("apply", "-f", "-", input=deployment("1"))
    before = apiserver.store.get(DEPLOYMENTS, "d1", "default")
    diff = await apiserver.kubectl("diff", "-f", "-", input=deployment("2"))
    assert diff.returncode == 1, diff.stderr
    assert '-          value: "1"' in diff.stdout
    assert '+          value: "2"' in diff.stdout
    assert apiserver.store.get(DEPLOYMENTS, "d1", "default") == before
    same = await apiserver.kubectl("diff", "-f", "-", input=deployment("1"))
    assert same.returncode == 0, same.stdout + same.stderr


async def test_scale_sets_replicas_of_a_stored_deployment(apiserver: RunningApiServer) -> None:
    await apiserver.kubectl("apply", "-f", "-", input=deployment("1"))
    scaled = await apiserver.kubectl("scale", "deployment", "d1", "--replicas=3")
    assert scaled.returncode == 0, scaled.stderr
    assert scaled.stdout.strip() == "deployment.apps/d1 scaled"
    assert apiserver.store.get(DEPLOYMENTS, "d1", "default")["spec"]["replicas"] == 3
    table = await apiserver.kubectl("get", "deployment", "d1", "--no-headers")
    assert table.stdout.split()[1] == "0/3"
    stale = await apiserver.kubectl("scale", "deployment", "d1", "--replicas=1", "--resource-version=1")
    assert stale.returncode == 1
    assert "Expected resource version to be 1" in stale.stderr
    assert apiserver.store.get(DEPLOYMENTS, "d1", "default")["spec"]["replicas"] == 3
