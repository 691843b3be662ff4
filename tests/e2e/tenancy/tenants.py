"""The two tenants of the tenancy tests (``wlmvk_dev.tenants`` makes them, as the demo does).

The two Unix users are the ones the suite already has: the job owner (uid 1000) and
``slurmuser`` (made by slurm-local).
"""

from __future__ import annotations

from tests.fixtures.redbox import JOB_OWNER
from tests.fixtures.slurm import JOB_USER
from wlmvk_dev.tenants import Tenant, sacctmgr

__all__ = ["TENANTS", "A", "B", "Tenant", "sacctmgr"]

A = Tenant("team-a", "tenant-alpha", JOB_OWNER, "acct-a", "qos-a")
B = Tenant("team-b", "tenant-beta", JOB_USER, "acct-b", "qos-b")
TENANTS = (A, B)
