"""The agent host fails: two kubelets for one cluster (``--leader-elect``), the active one killed -9
or stopped (SIGSTOP, a partition that heals with SIGCONT) while pods are created, submitted, run
and deleted; the standby takes over. Counted from Slurm's side as every churn round (churn.py):
every pod's job exactly once, nothing lost or orphaned, no spurious failure; the takeover within
60 s; the stopped holder, resumed, writes nothing and exits 1."""

from __future__ import annotations

import contextlib
import random
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.faults import churn
from tests.faults.conftest import Rig
from wlmvk.core import names
from wlmvk.core.errors import WlmvkError
from wlmvk.kube.bodies import LEASES

pytestmark = [pytest.mark.slurm]


@pytest.fixture
async def pair(rig: Rig) -> AsyncIterator[tuple[churn.KubeletRunner, churn.KubeletRunner]]:
    """The rig's kubelet replaced by two with --leader-elect on two 'agent hosts'; the first holds."""
    await rig.kubelet.stop()
    log = rig.kubelet.log
    first, second = (
        churn.KubeletRunner(
            rig.kubelet.kubeconfig,
            rig.kubelet.socket,
            Path(f"{log}.{host}"),
            client_ca=rig.kubelet.client_ca,
            agent_host=host,
            extra=churn.LEADING,
        )
        for host in ("agent-a", "agent-b")
    )
    try:
        await first.start()
        assert await churn.wait_for(lambda: churn.serving(rig.kube, first), 60), first.log.read_text()[-3000:]
        await second.start()
        yield first, second
    finally:
        await first.stop()
        await second.stop()
        with contextlib.suppress(WlmvkError):
            lease = f"slurm-{churn.CLUSTER}.kubelet"
            await rig.kube.delete(LEASES, lease, namespace=names.NODE_LEASE_NAMESPACE)


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
