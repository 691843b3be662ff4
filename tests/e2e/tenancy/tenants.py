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
    said = done.stdout + done.stderr
    # What is there already: 22.05 says "Nothing new added", 24.11 and later "Already existing"
    # (an account) and "Nothing added" (an association).
    if done.returncode != 0 and not any(
        s in said for s in ("Nothing new added", "Nothing added", "Already existing")
    ):
        raise RuntimeError(f"sacctmgr {' '.join(argv)}: {done.stdout}{done.stderr}")
