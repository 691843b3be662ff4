"""``wlmvk.kube`` against the in-memory API server: every verb, patch kind, and error mapping."""

from __future__ import annotations

import pytest

from tests.fixtures.apiserver import RunningApiServer
from wlmvk.core.errors import Conflict, InvalidInput, NotFound, Unavailable
from wlmvk.kube.bodies import NODES, PODS, Resource, name_of, uid_of
from wlmvk.kube.client import KubeClient, PatchKind
from wlmvk.kube.errors import AlreadyExists

CONFIGMAPS = Resource("", "v1", "configmaps", kind="ConfigMap")

pytestmark = pytest.mark.apiserver(controllers=False)


def configmap(name: str, **data: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def pod(name: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "x"}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }


def test_resource_paths() -> None:
    assert PODS.path(namespace="ns") == "/api/v1/namespaces/ns/pods"
    assert PODS.path(namespace="ns", name="p", subresource="status") == "/api/v1/namespaces/ns/pods/p/status"
    assert NODES.path(namespace="ignored", name="n") == "/api/v1/nodes/n"
    leases = Resource("coordination.k8s.io", "v1", "leases")
    assert (
        leases.path(namespace="kube-node-lease")
        == "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
    )
    assert PODS.path() == "/api/v1/pods"


async def test_create_get_list_delete(kube: KubeClient) -> None:
    created = await kube.create(CONFIGMAPS, configmap("one", a="1"), namespace="default")
    assert uid_of(created)
    assert (await kube.get(CONFIGMAPS, "one", namespace="default"))["data"] == {"a": "1"}
    listing = await kube.list(CONFIGMAPS, namespace="default")
    assert "one" in [name_of(item) for item in listing["items"]]
    assert listing["metadata"]["resourceVersion"]
    await kube.delete(CONFIGMAPS, "one", namespace="default")
    with pytest.raises(NotFound):
        await kube.get(CONFIGMAPS, "one", namespace="default")


async def test_create_twice_is_already_exists(kube: KubeClient) -> None:
    await kube.create(CONFIGMAPS, configmap("dup"), namespace="default")
    with pytest.raises(AlreadyExists):
        await kube.create(CONFIGMAPS, configmap("dup"), namespace="default")


async def test_patch_kinds(kube: KubeClient) -> None:
    await kube.create(CONFIGMAPS, configmap("p", a="1", b="2"), namespace="default")
    merged = await kube.patch(CONFIGMAPS, "p", {"data": {"a": "10", "b": None}}, namespace="default")
    assert merged["data"] == {"a": "10"}
    strategic = await kube.patch(
        CONFIGMAPS, "p", {"data": {"c": "3"}}, namespace="default", kind=PatchKind.STRATEGIC
    )
    assert strategic["data"] == {"a": "10", "c": "3"}
    ops = [{"op": "replace", "path": "/data/a", "value": "11"}, {"op": "remove", "path": "/data/c"}]
    patched = await kube.patch(CONFIGMAPS, "p", ops, namespace="default", kind=PatchKind.JSON)
    assert patched["data"] == {"a": "11"}
    with pytest.raises(InvalidInput):
        await kube.patch(CONFIGMAPS, "p", {"data": {}}, namespace="default", kind=PatchKind.JSON)


async def test_status_patch_keeps_the_spec(kube: KubeClient) -> None:
    # kube-apiserver's pod status strategy: the spec is the old one, labels may change.
    created = await kube.create(PODS, pod("s"), namespace="default")
    patched = await kube.patch_status(
        PODS,
        "s",
        {
            "status": {"phase": "Running"},
            "metadata": {"labels": {"app": "changed"}},
            "spec": {"activeDeadlineSeconds": 5},
        },
        namespace="default",
    )
    assert patched["status"]["phase"] == "Running"
    assert patched["metadata"]["labels"]["app"] == "changed"
    assert patched["spec"] == created["spec"]


async def test_delete_with_uid_precondition(kube: KubeClient) -> None:
    await kube.create(CONFIGMAPS, configmap("u"), namespace="default")
    with pytest.raises(Conflict):
        await kube.delete(CONFIGMAPS, "u", namespace="default", uid="not-the-uid")
    await kube.get(CONFIGMAPS, "u", namespace="default")


async def test_selectors(kube: KubeClient) -> None:
    await kube.create(PODS, pod("sel-a"), namespace="default")
    other = pod("sel-b")
    other["metadata"]["labels"] = {"app": "y"}  # type: ignore[index]
    await kube.create(PODS, other, namespace="default")
    by_label = await kube.list(PODS, namespace="default", label_selector="app=y")
    assert [name_of(i) for i in by_label["items"]] == ["sel-b"]
    by_field = await kube.list(PODS, namespace="default", field_selector="metadata.name=sel-a")
    assert [name_of(i) for i in by_field["items"]] == ["sel-a"]


async def test_unreachable_server_is_unavailable(tmp_path: object) -> None:
    import socket
    from pathlib import Path

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = Path(str(tmp_path)) / "kubeconfig"
    config.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\n"
        "users: [{name: u, user: {}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
        "current-context: x\n"
    )
    client = await KubeClient.connect(str(config), timeout=2)
    try:
        with pytest.raises(Unavailable):
            await client.get(PODS, "p", namespace="default")
    finally:
        await client.close()


async def test_requests_take_no_thread_hops(apiserver: RunningApiServer) -> None:
    """The proxy environment is read once at connect, not in a worker thread per request."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    submitted: list[object] = []

    class Counting(ThreadPoolExecutor):
        def submit(self, fn, /, *args, **kwargs):  # type: ignore[no-untyped-def]
            submitted.append(fn)
            return super().submit(fn, *args, **kwargs)

    client = await KubeClient.connect(str(apiserver.kubeconfig))
    try:
        await client.list(PODS, namespace="default")  # connection made
        asyncio.get_running_loop().set_default_executor(Counting(max_workers=1))
        for _ in range(5):
            await client.list(PODS, namespace="default")
        assert submitted == []
    finally:
        await client.close()


async def test_proxy_environment_is_honoured(
    apiserver: RunningApiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = sock.getsockname()[1]  # nothing listens there once closed
    for variable in ("HTTP_PROXY", "HTTPS_PROXY"):
        monkeypatch.setenv(variable, f"http://127.0.0.1:{dead}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    proxied = await KubeClient.connect(str(apiserver.kubeconfig), timeout=5)
    try:
        with pytest.raises(Unavailable):
            await proxied.list(PODS, namespace="default")
    finally:
        await proxied.close()
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    bypassed = await KubeClient.connect(str(apiserver.kubeconfig), timeout=5)
    try:
        assert "items" in await bypassed.list(PODS, namespace="default")
    finally:
        await bypassed.close()
