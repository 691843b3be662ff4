"""Faults during pod churn, counted from Slurm's side (see churn.py): kill -9 of the kubelet,
kill -9 of red-box, of the ssh client of the forward to it and of sshd (each on either control
plane, the red-box ones also while jobs run), the API server's watches dropped with 410 Gone (the
in-memory server's history compacted).

The kubelet reaches red-box as it does when deployed: red-box runs as the job owner (UID 1000)
and its socket comes through a real ``ssh -nNT -L`` (deploy/red-box-forward) from a real sshd on
loopback (tests/fixtures/sshd.py).

Small counts (one round each); bench/faults_run.py runs the same rounds many times."""

from __future__ import annotations

import random

import pytest

from tests.faults import churn
from tests.faults.conftest import Rig
from wlmvk_dev.apiserver.objects.resources import PODS as PODS_GVR

pytestmark = [pytest.mark.slurm]


def _report(tally: churn.Tally, rig: Rig) -> str:
    return "\n".join([churn.markdown([tally]), *tally.problems[:20], rig.kubelet.log.read_text()[-2000:]])


async def test_no_fault_baseline(rig: Rig) -> None:
    """The row every fault is compared with: the same round with nothing broken, every count zero."""
    rng = random.Random(7)
    tally = churn.Tally("none (baseline)")
    await churn.churn_round(rig.kube, pods=8, fault=churn.no_fault(), tally=tally, rng=rng)
    assert tally.cells()[1:-1] == ("1", "8", "0", "0", "0", "0", "0"), _report(tally, rig)
    assert tally.clean, _report(tally, rig)


async def test_kill_9_of_the_kubelet_mid_churn(rig: Rig) -> None:
    rng = random.Random(8)
    tally = churn.Tally("kubelet kill -9")
    await churn.churn_round(
        rig.kube, pods=16, fault=churn.kill_kubelet(rig.kubelet, rng, strikes=2), tally=tally, rng=rng
    )
    assert rig.kubelet.starts == 3
    assert tally.clean, _report(tally, rig)


async def test_red_box_ssh_client_and_sshd_killed_while_jobs_run(rig: Rig) -> None:
    """kill -9 of red-box, then of the forward's ssh client, then of sshd, once a job runs: the node
    goes NotReady and back Ready each time (else a round problem), and every running job's pod
    still ends Succeeded, every deleted pod's job is gone."""
    rng = random.Random(9)
    tally = churn.Tally("red-box, ssh, sshd kill -9 while jobs run")
    fault = churn.redbox_outages(rig.box, rig.forward, rig.sshd, rig.kube, rng, tally)
    await churn.churn_round(rig.kube, pods=8, fault=fault, tally=tally, rng=rng, settle=60, run_seconds=3)
    assert tally.cells()[1:-1] == ("1", "8", "0", "0", "0", "0", "0"), _report(tally, rig)
    assert rig.forward.starts == 3, rig.forward.log()
    assert tally.clean, _report(tally, rig)


# In-memory only: it compacts the store's history, which kube-apiserver offers no knob for.
async def test_watches_dropped_and_410_gone(rig: Rig) -> None:
    rng = random.Random(10)
    tally = churn.Tally("watch dropped, 410 Gone")
    fault = churn.watch_drops(rig.apiserver.store, PODS_GVR, rng, drops=3)
    await churn.churn_round(rig.kube, pods=16, fault=fault, tally=tally, rng=rng)
    assert tally.clean, _report(tally, rig)
    assert "watch expired, relisting" in rig.kubelet.log.read_text()
