"""A SlurmJob's or WlmJob's tenant: whether its namespace's SlurmTenant lets it run (``core.tenancy``).

The operator asks before it makes a resource's first pod (``reconcile.decide``); the partition is
left to the kubelet, which knows the cluster. A tenant's job that stages data (``prepare``,
``results``) is refused for now: staging pods reach the node's red-box, not the tenant user's.
"""

from __future__ import annotations

from wlmvk.kube import objects
from wlmvk.kube.bodies import Body
from wlmvk.operator.resources import Job
from wlmvk.slurm import tenancy


def refusal(job: Job, body: Body, tenants: tenancy.Book | None) -> tenancy.Refusal | None:
    """Why the namespace's SlurmTenant refuses the job (None: allowed, or no tenancy)."""
    if tenants is None:
        return None
    script = job.batch if job.kind == "SlurmJob" else ""
    decided = tenancy.decide(
        tenants, namespace=objects.namespace(body), cluster=None, partition="", script=script
    )
    if isinstance(decided, tenancy.Identity) and (job.prepare is not None or job.results is not None):
        # Staging pods reach the node's red-box (the default one), not the tenant user's, whose
        # working directory the job runs in: refused rather than staged where the job is not.
        return tenancy.Refusal(
            f"SlurmTenant {decided.tenant}: prepare and results are not supported for tenants yet"
            " (docs/tenancy.md); stage the data from the job's own script",
            reason="StagingUnsupported",
        )
    return decided if isinstance(decided, tenancy.Refusal) else None
