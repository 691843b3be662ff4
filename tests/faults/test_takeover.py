"""The agent host fails: two kubelets for one cluster (``--leader-elect``), the active one killed -9
or stopped (SIGSTOP, a partition that heals with SIGCONT) while pods are created, submitted, run
and deleted; the standby takes over. Counted from Slurm's side as every churn round (churn.py):
every pod's job exactly once, nothing lost or orphaned, no spurious failure; the takeover within
60 s; the stopped holder, resumed, writes nothing and exits 1."""

from __future__ import annotations

import random

import pytest

from tests.faults import churn
from tests.faults.conftest import Rig

pytestmark = [pytest.mark.slurm]


def _report(tally: churn.Tally, pair: tuple[churn.KubeletRunner, churn.KubeletRunner]) -> str:
    logs = [k.log.read_text()[-2000:] for k in pair if k.log.exists()]
    return "\n".join([churn.markdown([tally]), str(tally.takeovers), *tally.problems[:20], *logs])


@pytest.mark.parametrize("freeze", [False, True], ids=["kill-9", "sigstop"])
async def test_the_standby_takes_over_mid_churn(
    rig: Rig, pair: tuple[churn.KubeletRunner, churn.KubeletRunner], freeze: bool
) -> None:
    rng = random.Random(24)
    tally = churn.Tally("agent-host takeover")
    fault = churn.takeover(pair, rig.kube, rng, tally, freeze=freeze)
    await churn.churn_round(rig.kube, pods=16, fault=fault, tally=tally, rng=rng, settle=120, run_seconds=3)
    assert tally.cells()[1:-1] == ("1", "16", "0", "0", "0", "0", "0"), _report(tally, pair)
    assert tally.clean, _report(tally, pair)
    assert len(tally.takeovers) == 1
    assert tally.takeovers[0] < churn.TAKEOVER_LIMIT
    assert sum(k.starts for k in pair) == 3  # the struck one came back as a standby
