"""What a host pod's containers start from: the objects it refers to, each container's launch.

The ConfigMaps and Secrets a pod refers to and its projected ServiceAccount tokens are read
from the API server (before its volumes are set up and before each container start); a
container's launch spec resolves its environment and command line (``env``), its user and
groups as the kubelet does (``runAsUser``, ``runAsGroup``, supplementary groups, ``fsGroup``)
and its mounts (``volumes``).
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Callable, Mapping
from typing import Any

from wlmvk.core.errors import InvalidInput, NotFound, WlmvkError
from wlmvk.kube.bodies import Body, Resource
from wlmvk.kube.client import KubeClient
from wlmvk_dev.hostnode import containers as hostcontainers
from wlmvk_dev.hostnode import env as podenv
from wlmvk_dev.hostnode import volumes as hostvolumes
from wlmvk_dev.hostnode.context import HostContext

Obj = Body
CONFIGMAPS = Resource("", "v1", "configmaps", kind="ConfigMap")
SECRETS = Resource("", "v1", "secrets", kind="Secret")
SERVICEACCOUNTS = Resource("", "v1", "serviceaccounts", kind="ServiceAccount")


async def fetch_tokens(client: KubeClient, pod: Obj) -> dict[tuple[str, int], str]:
    """A TokenRequest bound to the pod for each projected ServiceAccount token it mounts."""
    meta = pod["metadata"]
    name, uid, namespace = meta["name"], meta["uid"], meta.get("namespace", "default")
    account = pod["spec"].get("serviceAccountName") or "default"
    path = SERVICEACCOUNTS.path(namespace=namespace, name=account, subresource="token")
    tokens: dict[tuple[str, int], str] = {}
    for audience, seconds in sorted(hostvolumes.token_requests(pod)):
        spec: Body = {
            "expirationSeconds": seconds,
            "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": name, "uid": uid},
        }
        if audience:
            spec["audiences"] = [audience]
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
        try:
            answer = await client.request("POST", path, body=body)
        except WlmvkError as exc:
            raise hostvolumes.MountFailed(
                f"MountVolume.SetUp failed: failed to fetch token: {exc.message}"
            ) from exc
        tokens[audience, seconds] = str((answer.get("status") or {}).get("token", ""))
    return tokens


async def fetch_refs(client: KubeClient, pod: Obj) -> dict[tuple[str, str], Obj | None]:
    """Read the ConfigMaps and Secrets the pod refers to (missing ones are None)."""
    namespace = pod["metadata"].get("namespace", "default")
    refs: dict[tuple[str, str], Obj | None] = {}
    for kind, name in sorted(podenv.references(pod)):
        resource = CONFIGMAPS if kind == "configmaps" else SECRETS
        try:
            refs[kind, name] = await client.get(resource, name, namespace=namespace)
        except NotFound:
            refs[kind, name] = None
    return refs


def launch_spec(
    ctx: HostContext,
    pod: Obj,
    spec: Mapping[str, Any],
    *,
    label: str,
    volumes: Mapping[str, str],
    lookup: Callable[[str, str], Obj | None],
) -> hostcontainers.LaunchSpec:
    """How to start container ``spec`` of ``pod`` (its status as last written: fieldRefs see
    podIP and hostIP): environment, command line, user and groups, mounts."""
    pod_security = pod["spec"].get("securityContext") or {}
    security = {**pod_security, **(spec.get("securityContext") or {})}
    uid = security.get("runAsUser")
    account = _account(uid)
    if security.get("runAsNonRoot") and not uid:
        where = f'(pod: "{label}", container: {spec["name"]})'
        raise InvalidInput(f"container has runAsNonRoot and image will run as root {where}")
    gid = security.get("runAsGroup")
    if gid is None and uid is not None:
        gid = account.pw_gid if account is not None else 0
    groups: list[int] = []
    if uid is not None:
        groups = [int(gid or 0)]
        if account is not None:
            groups += os.getgrouplist(account.pw_name, account.pw_gid)
        groups += [int(g) for g in pod_security.get("supplementalGroups") or []]
        if pod_security.get("fsGroup") is not None:
            groups.append(int(pod_security["fsGroup"]))
        groups = list(dict.fromkeys(groups))
    home = account.pw_dir if account is not None else ("/root" if uid in (None, 0) else "/")
    base = {
        **ctx.service_env,
        "PATH": ctx.path,
        "HOSTNAME": pod["spec"].get("hostname") or pod["metadata"]["name"],
        "HOME": home,
    }
    node = ctx.allocatable
    env = podenv.container_env(pod, spec, lookup, base=base, node_allocatable=node)
    try:
        argv = podenv.command_line(spec, env, ctx.images)
    except InvalidInput as exc:
        raise hostcontainers.StartFailed(exc.message, []) from exc
    mounts = hostvolumes.container_mounts(spec, volumes, env)
    return hostcontainers.LaunchSpec(
        argv=argv,
        env=env,
        cwd=spec.get("workingDir") or None,
        uid=None if uid is None else int(uid),
        gid=None if gid is None else int(gid),
        groups=groups,
        mounts=mounts,
        isolation=ctx.isolation,
        keep=list(ctx.image_paths) if podenv.runs_image(spec, ctx.images) else [],
    )


def _account(uid: Any) -> pwd.struct_passwd | None:
    if uid is None:
        uid = os.getuid()
    try:
        return pwd.getpwuid(int(uid))
    except (KeyError, ValueError):
        return None
