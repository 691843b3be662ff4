"""The two tenants of the tenancy tests, and ``sacctmgr`` as the admin runs it.

The two Unix users are the ones the suite already has: the job owner (uid 1000) and
``slurmuser`` (made by slurm-local).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass

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
