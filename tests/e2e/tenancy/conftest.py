"""Two tenants on a Slurm of their own that enforces associations (docs/tenancy.md).

``tenant_slurm`` starts ``scripts/slurm-local`` in its own base directory, on its own ports
(the shared Slurm's plus 40) and cluster name, with ``AccountingStorageEnforce=associations,
limits,qos``, and makes the two tenants' accounts, QoS and users with ``sacctmgr``. The shared
Slurm, which the rest of the suite uses, keeps running unchanged. The two Unix users are the
ones the suite already has: the job owner (uid 1000) and ``slurmuser`` (made by slurm-local).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.faults import ownslurm
from tests.fixtures.redbox import JOB_OWNER
from tests.fixtures.slurm import JOB_USER


@dataclass(frozen=True)
class Tenant:
    name: str
    namespace: str
    user: str
    account: str
    qos: str


A = Tenant("team-a", "tenant-alpha", JOB_OWNER, "acct-a", "qos-a")
B = Tenant("team-b", "tenant-beta", JOB_USER, "acct-b", "qos-b")
TENANTS = (A, B)


def sacctmgr(*argv: str) -> None:
    done = subprocess.run(["sacctmgr", "-i", *argv], capture_output=True, text=True, check=False)
    if done.returncode != 0 and "Nothing new added" not in done.stdout + done.stderr:
        raise RuntimeError(f"sacctmgr {' '.join(argv)}: {done.stdout}{done.stderr}")


@pytest.fixture(scope="module")
def tenant_slurm(slurm: str) -> Iterator[ownslurm.Instance]:
    """A Slurm enforcing associations, with A's and B's; this process pointed at it meanwhile."""
    shared = os.environ.get("WLMVK_SLURM_BASE", "/var/tmp/wlmvk-local-slurm")
    port = int(os.environ.get("WLMVK_SLURM_CTLD_PORT") or 6917) + 40
    instance = ownslurm.Instance(
        Path(f"{shared}-tenancy"), port, "tenancy", enforce="associations,limits,qos"
    )
    with ownslurm.running(instance):
        for tenant in TENANTS:
            sacctmgr("add", "qos", tenant.qos)
            sacctmgr("add", "account", tenant.account, f"cluster={instance.cluster}")
            sacctmgr(
                "add", "user", tenant.user, f"account={tenant.account}", f"cluster={instance.cluster}",
                f"qos={tenant.qos}", f"defaultqos={tenant.qos}",
            )  # fmt: skip
        yield instance
