"""The in-process host node of the in-memory API server: security contexts, symlink fallback, init containers.

The node reaches the server over HTTP like any client; the tests create pods in the store
and read their logs through ``pods/{name}/log`` (proxied to the node's kubelet API).
"""

from __future__ import annotations

import os
import pwd
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from tests.e2e.apiserver_controllers.conftest import Scratch, needs_root
from tests.unit.dev.apiserver.controllers.conftest import eventually
from wlmvk_dev.apiserver.kubelets import default_log_handler, hostkubelet
from wlmvk_dev.apiserver.objects.resources import CONFIGMAPS, EVENTS, NODES, PODS
from wlmvk_dev.apiserver.server import ApiServer
from wlmvk_dev.apiserver.storage.store import Store

NODE = "store-host"

pytestmark = needs_root


async def start(**config: Any) -> ApiServer:
    node = hostkubelet.controller(node_name=NODE, restart_backoff=0.1, **config)
    server = ApiServer(controllers=[node], log_handler=default_log_handler())
    await server.start()

    def registered() -> bool:
        return any(n["metadata"]["name"] == NODE for n in server.store.list(NODES).items)

    await eventually(registered)
    return server


@pytest.fixture
async def server() -> AsyncIterator[ApiServer]:
    running = await start()
    yield running
    await running.stop()


@pytest.fixture
def store(server: ApiServer) -> Store:
    return server.store


def run_pod(store: Store, name: str, script: str, **spec: Any) -> None:
    container = {"name": "main", "image": "busybox", "command": ["sh", "-c", script]}
    container.update(spec.pop("container", {}))
    store.create(
        PODS,
        {
            "metadata": {"name": name},
            "spec": {"nodeName": NODE, "restartPolicy": "Never", "containers": [container], **spec},
        },
    )


async def finished(store: Store, name: str) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        pod = store.get(PODS, name, "default")
        return pod if pod["status"].get("phase") in ("Succeeded", "Failed") else None

    result: dict[str, Any] = await eventually(done, timeout=30)
    return result


async def output(server: ApiServer, name: str, container: str = "main") -> str:
    url = f"{server.url}/api/v1/namespaces/default/pods/{name}/log?container={container}"
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        text = await response.text()
        assert response.status == 200, text
        return text


async def test_container_security_context_overrides_the_pods(server: ApiServer, store: Store) -> None:
    run_pod(
        store,
        "ids",
        "id -u; id -g; id -G; echo $HOME",
        securityContext={
            "runAsUser": 1000,
            "runAsGroup": 1000,
            "supplementalGroups": [4242],
            "fsGroup": 4343,
        },
        container={"securityContext": {"runAsUser": 1001}},
    )
    pod = await finished(store, "ids")
    assert pod["status"]["phase"] == "Succeeded"
    uid, gid, groups, home = (await output(server, "ids")).splitlines()
    assert (uid, gid, home) == ("1001", "1000", home_of(1001))
    assert {"1000", "4242", "4343"} <= set(groups.split())


async def test_run_as_non_root_refuses_root(store: Store) -> None:
    run_pod(store, "root", "id -u", securityContext={"runAsNonRoot": True})

    def refused() -> dict[str, Any] | None:
        statuses = store.get(PODS, "root", "default")["status"].get("containerStatuses") or [{}]
        waiting: dict[str, Any] | None = statuses[0].get("state", {}).get("waiting")
        return waiting if waiting and waiting["reason"] == "CreateContainerConfigError" else None

    waiting = await eventually(refused)
    assert "runAsNonRoot" in waiting["message"]


async def test_init_containers_run_first_and_config_maps_reach_env_and_volumes(
    server: ApiServer, store: Store
) -> None:
    store.create(CONFIGMAPS, {"metadata": {"name": "settings"}, "data": {"greeting": "hello"}})
    shared = {"name": "shared", "mountPath": "/work-e2e"}
    store.create(
        PODS,
        {
            "metadata": {"name": "staged"},
            "spec": {
                "nodeName": NODE,
                "restartPolicy": "Never",
                "volumes": [
                    {"name": "shared", "emptyDir": {}},
                    {"name": "cfg", "configMap": {"name": "settings"}},
                ],
                "initContainers": [
                    {
                        "name": "prepare",
                        "image": "busybox",
                        "command": ["sh", "-c", "echo from-init > /work-e2e/note"],
                        "volumeMounts": [shared],
                    }
                ],
                "containers": [
                    {
                        "name": "main",
                        "image": "busybox",
                        "command": [
                            "sh",
                            "-c",
                            "cat /work-e2e/note; cat /cfg-e2e/greeting; echo; echo $GREETING",
                        ],
                        "env": [
                            {
                                "name": "GREETING",
                                "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "greeting"}},
                            }
                        ],
                        "volumeMounts": [shared, {"name": "cfg", "mountPath": "/cfg-e2e", "readOnly": True}],
                    }
                ],
            },
        },
    )
    pod = await finished(store, "staged")
    assert pod["status"]["phase"] == "Succeeded"
    assert pod["status"]["initContainerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"
    assert await output(server, "staged") == "from-init\nhello\nhello\n"
    reasons = [
        e["reason"] for e in store.list(EVENTS, "default").items if e["involvedObject"]["name"] == "staged"
    ]
    assert {"Created", "Started"} <= set(reasons)


async def test_symlink_fallback_maps_host_paths(scratch: Scratch) -> None:
    server = await start(isolation="symlink")
    store = server.store
    try:
        data = scratch(0o755)
        (data / "file").write_text("payload\n")
        target = f"/tmp/hk-link-{os.getpid()}"
        run_pod(
            store,
            "linked",
            f"cat {target}/file",
            volumes=[{"name": "d", "hostPath": {"path": str(data), "type": "Directory"}}],
            container={"volumeMounts": [{"name": "d", "mountPath": target}]},
        )
        pod = await finished(store, "linked")
        assert pod["status"]["phase"] == "Succeeded", pod["status"]
        assert await output(server, "linked") == "payload\n"
        assert not lexists(target), "the link goes when no container uses it"
    finally:
        await server.stop()


def home_of(uid: int) -> str:
    """HOME as a container runtime sets it: from the user database, else "/"."""
    try:
        return pwd.getpwuid(uid).pw_dir
    except KeyError:
        return "/"


def lexists(path: str) -> bool:
    return os.path.lexists(path)


async def test_active_deadline_fails_the_pod_and_stops_it(store: Store) -> None:
    run_pod(store, "slow", "exec sleep 60", activeDeadlineSeconds=1, terminationGracePeriodSeconds=1)
    pod = await finished(store, "slow")
    status = pod["status"]
    assert (status["phase"], status["reason"]) == ("Failed", "DeadlineExceeded")
    assert status["message"] == "Pod was active on the node longer than the specified deadline"

    def stopped() -> dict[str, Any] | None:
        state = store.get(PODS, "slow", "default")["status"]["containerStatuses"][0]["state"]
        terminated: dict[str, Any] | None = state.get("terminated")
        return terminated

    terminated = await eventually(stopped)
    assert terminated["exitCode"] == 143, "SIGTERM"


async def test_env_from_the_pods_own_fields(server: ApiServer, store: Store) -> None:
    fields = {
        "NAME": "metadata.name",
        "NAMESPACE": "metadata.namespace",
        "UID": "metadata.uid",
        "NODE": "spec.nodeName",
        "POD_IP": "status.podIP",
        "HOST_IP": "status.hostIP",
    }
    env = [{"name": k, "valueFrom": {"fieldRef": {"fieldPath": v}}} for k, v in fields.items()]
    env.append({"name": "PLAIN", "value": "x-$(NAME)"})
    run_pod(
        store, "fields", "echo $NAME $NAMESPACE $UID $NODE $POD_IP $HOST_IP $PLAIN", container={"env": env}
    )
    pod = await finished(store, "fields")
    uid = pod["metadata"]["uid"]
    assert await output(server, "fields") == f"fields default {uid} {NODE} 127.0.0.1 127.0.0.1 x-fields\n"
