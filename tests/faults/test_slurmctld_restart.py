"""slurmctld restarted for real mid-churn, on a Slurm of the test's own (``own_rig``): the shared
local Slurm, which other tests use, is never touched. Counted from Slurm's side as every churn
round (churn.py); bench/faults_run.py --only slurmctld runs the same rounds many times."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.faults import churn, ownslurm
from tests.faults.conftest import Rig
from wlmvk_dev import localslurm

pytestmark = [pytest.mark.xdist_group("own_slurm"), pytest.mark.slurm]

# The shared Slurm's slurmctld pid file, read before any fixture points the process elsewhere.
SHARED_PID_FILE = localslurm.pid_file("slurmctld")


def _pid(pid_file: Path) -> int:
    return int(pid_file.read_text().split()[0])


async def test_slurmctld_restarted_while_jobs_run(own_slurm: ownslurm.Instance, own_rig: Rig) -> None:
    """SIGTERM of slurmctld once a job of the round runs, down 2-5 s, started again: every pod's job
    exactly once, the running ones' pods Succeeded, the deleted ones' jobs gone; a new slurmctld
    process; the shared Slurm's slurmctld untouched."""
    own = own_slurm.base / "run" / "slurmctld.pid"
    before, shared = _pid(own), _pid(SHARED_PID_FILE)
    rng = random.Random(11)
    tally = churn.Tally("slurmctld restarted")
    fault = churn.slurmctld_restart(own_slurm, rng, tally)
    await churn.churn_round(
        own_rig.kube, pods=12, fault=fault, tally=tally, rng=rng, settle=120, run_seconds=3
    )
    report = "\n".join(
        [churn.markdown([tally]), *tally.problems[:20], own_rig.kubelet.log.read_text()[-2000:]]
    )
    assert tally.cells()[1:-1] == ("1", "12", "0", "0", "0", "0", "0"), report
    assert tally.clean, report
    assert _pid(own) != before
    assert _pid(SHARED_PID_FILE) == shared
