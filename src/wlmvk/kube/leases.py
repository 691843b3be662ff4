"""coordination.k8s.io/v1 Leases: the heartbeat of a node (or a leader lock).

``ensure`` gets or creates a Lease; ``renew`` moves its ``renewTime`` to
now. The node controller calls ``renew`` every 10 s; the API server's node
lifecycle marks a node NotReady when its Lease goes stale.
"""

from __future__ import annotations

from wlmvk.core.errors import NotFound
from wlmvk.kube.bodies import LEASES, Body, OwnerReference
from wlmvk.kube.client import KubeClient
from wlmvk.kube.errors import AlreadyExists
from wlmvk.kube.times import micro_time


def lease_body(
    name: str, namespace: str, *, holder: str, duration: int, owner: OwnerReference | None = None
) -> Body:
    now = micro_time()
    metadata: Body = {"name": name, "namespace": namespace}
    if owner:
        metadata["ownerReferences"] = [dict(owner)]
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": metadata,
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": duration,
            "acquireTime": now,
            "renewTime": now,
        },
    }


async def ensure(
    client: KubeClient,
    name: str,
    namespace: str,
    *,
    holder: str,
    duration: int,
    owner: OwnerReference | None = None,
) -> Body:
    """The Lease, created (held by ``holder``) when missing."""
    try:
        return await client.get(LEASES, name, namespace=namespace)
    except NotFound:
        pass
    body = lease_body(name, namespace, holder=holder, duration=duration, owner=owner)
    try:
        return await client.create(LEASES, body, namespace=namespace)
    except AlreadyExists:
        return await client.get(LEASES, name, namespace=namespace)


async def renew(client: KubeClient, name: str, namespace: str, *, holder: str, duration: int) -> Body:
    """Set ``renewTime`` to now (and the holder and duration). Raises NotFound when the Lease is gone."""
    patch = {"spec": {"holderIdentity": holder, "leaseDurationSeconds": duration, "renewTime": micro_time()}}
    return await client.patch(LEASES, name, patch, namespace=namespace)


async def delete(client: KubeClient, name: str, namespace: str) -> None:
    try:
        await client.delete(LEASES, name, namespace=namespace)
    except NotFound:
        pass
