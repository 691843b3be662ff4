"""A SlurmJob's or WlmJob's tenant: whether its namespace's SlurmTenant lets it run (``core.tenancy``),
and which red-box its staging pods reach.

The operator asks before it makes a resource's first pod (``reconcile.decide``); the partition is
left to the kubelet, which knows the cluster. A tenant's staging pods (``prepare``, ``results``)
reach its user's red-box, the one its job runs through (the kubelet publishes each tenant user's
socket on its nodes), so the files they write on the Slurm side are that user's, in the job's own
working directory. A staging pod runs in the tenant's namespace and mounts the socket's whole
directory: a directory that also holds another red-box's socket would let it reach that one, so
such a job is refused (``StagingUnsupported``) rather than staged.
"""

from __future__ import annotations

import json
import posixpath

from wlmvk.core import names
from wlmvk.kube import objects
from wlmvk.kube.bodies import Body
from wlmvk.operator.resources import Job
from wlmvk.slurm import tenancy

STAGING_UNSUPPORTED = "StagingUnsupported"


def decide(job: Job, body: Body, tenants: tenancy.Book | None) -> tenancy.Identity | tenancy.Refusal | None:
    """Who the job runs as, or why the namespace's SlurmTenant refuses it (None: no tenancy)."""
    if tenants is None:
        return None
    script = job.batch if job.kind == "SlurmJob" else ""
    return tenancy.decide(
        tenants, namespace=objects.namespace(body), cluster=None, partition="", script=script
    )


def sockets(node: Body) -> dict[str, str]:
    """The socket of each tenant user's red-box the node's kubelet publishes (user -> host path)."""
    try:
        found = json.loads(objects.annotations(node).get(names.ANNOTATION_RED_BOX_SOCKETS) or "{}")
    except ValueError:
        return {}
    if not isinstance(found, dict):
        return {}
    return {str(user): path for user, path in found.items() if isinstance(path, str) and path}


def staging_socket(
    node: Body, default: str, tenant: tenancy.Identity | tenancy.Refusal | None
) -> str | tenancy.Refusal:
    """The host path of the red-box socket a staging pod for ``node`` mounts the directory of.

    ``default`` is the node's own red-box socket (no tenancy); a tenant's job gets its user's,
    which must be in a directory no other red-box's socket of the node is in. A job its tenant
    refuses now (the mapping changed while it ran) stages nothing.
    """
    if tenant is None or isinstance(tenant, tenancy.Refusal):
        return default if tenant is None else tenant
    who = f"SlurmTenant {tenant.tenant}"
    published = sockets(node)
    own = published.get(tenant.user)
    if own is None:
        return tenancy.Refusal(
            f"{who}: node {objects.name(node)} publishes no red-box of user {tenant.user} (the kubelet's"
            f" --red-box {tenant.user}=SOCKET): there is nothing to stage through",
            reason=STAGING_UNSUPPORTED,
        )
    others = sorted({path for user, path in published.items() if path != own} | ({default} - {own}))
    shared = [path for path in others if posixpath.dirname(path) == posixpath.dirname(own)]
    if shared:
        return tenancy.Refusal(
            f"{who}: the socket of user {tenant.user}'s red-box, {own}, shares its directory with"
            f" {shared[0]}; a staging pod mounts the whole directory, so each tenant user's red-box"
            " needs a directory of its own to stage through",
            reason=STAGING_UNSUPPORTED,
        )
    return own
