"""Tenants on a local Slurm, as the tenancy tests and the demo make them (docs/tenancy.md).

What a site's admin does for a tenant, in one place: the Slurm side (``associate``: its QoS,
account and user association with ``sacctmgr``, on a Slurm run with ``ENFORCE``) and the
Kubernetes side (``slurmtenant``: the SlurmTenant object).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from typing import Any

ENFORCE = "associations,limits,qos"
"""``AccountingStorageEnforce`` (``WLMVK_SLURM_ENFORCE`` of dev/scripts/slurm-local) for tenancy."""


@dataclass(frozen=True)
class Tenant:
    name: str
    namespace: str
    user: str
    account: str
    qos: str


def sacctmgr(*argv: str) -> None:
    """``sacctmgr -i ARGV`` as the admin runs it; what is there already is no error."""
    done = subprocess.run(["sacctmgr", "-i", *argv], capture_output=True, text=True, check=False)
    said = done.stdout + done.stderr
    # What is there already: 22.05 says "Nothing new added", 24.11 and later "Already existing"
    # (an account) and "Nothing added" (an association).
    if done.returncode != 0 and not any(
        s in said for s in ("Nothing new added", "Nothing added", "Already existing")
    ):
        raise RuntimeError(f"sacctmgr {' '.join(argv)}: {done.stdout}{done.stderr}")


def associate(tenant: Tenant, cluster: str) -> None:
    """The tenant's QoS and account, and its user in them (default QoS its own), on ``cluster``."""
    sacctmgr("add", "qos", tenant.qos)
    sacctmgr("add", "account", tenant.account, f"cluster={cluster}")
    sacctmgr(
        "add", "user", tenant.user, f"account={tenant.account}", f"cluster={cluster}",
        f"qos={tenant.qos}", f"defaultqos={tenant.qos}",
    )  # fmt: skip


def slurmtenant(tenant: Tenant, cluster: str, partitions: list[str]) -> dict[str, Any]:
    """The SlurmTenant mapping the tenant's namespace to its user, account and QoS on ``partitions``
    of the kubelet cluster ``cluster``."""
    return {
        "apiVersion": "wlm.sylabs.io/v1alpha1",
        "kind": "SlurmTenant",
        "metadata": {"name": tenant.name},
        "spec": {
            "namespaces": [tenant.namespace],
            "user": tenant.user,
            "account": tenant.account,
            "qos": {"default": tenant.qos},
            "partitions": [{"cluster": cluster, "partitions": partitions}],
        },
    }
