"""Faults during pod churn, counted from Slurm's side (see churn.py): kill -9 of the kubelet,
red-box killed and its socket vanishing (both on either control plane), the API server's watches
dropped with 410 Gone (the in-memory server's history compacted).

Small counts (one round each); bench/faults_run.py runs the same rounds many times."""

from __future__ import annotations

import random
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.faults import churn
from tests.fixtures.apiserver import RunningApiServer
from tests.fixtures.redbox import RedBox
from wlmvk.kube.client import KubeClient
from wlmvk_dev.apiserver.resources import PODS as PODS_GVR

pytestmark = [pytest.mark.slurm]


class BoxHandle:
    """The fixture's red-box, as the red-box faults see it."""

    def __init__(self, box: RedBox) -> None:
        self.box = box
        self.socket = box.socket

    def kill(self) -> None:
        assert self.box.proc is not None
        self.box.proc.kill()
        self.box.proc.wait()

    def start(self) -> object:
        return self.box.start()


@dataclass
class Rig:
    apiserver: RunningApiServer
    box: RedBox
    forward: churn.UnixForward
    kube: KubeClient
    kubelet: churn.KubeletRunner


@pytest.fixture
async def rig(
    slurm: str, apiserver: RunningApiServer, redbox_factory: Callable[..., RedBox]
) -> AsyncIterator[Rig]:
    box = redbox_factory()
    kube = await KubeClient.connect(str(apiserver.kubeconfig))
    scratch = Path(tempfile.mkdtemp(prefix="faults-", dir="/tmp"))
    # The kubelet reaches red-box through a forward, as through ``ssh -L`` from the login node.
    forward = churn.UnixForward(str(scratch / "fwd.sock"), box.socket)
    await forward.restore()
    kubeconfig = apiserver.kubeconfig_for("wlmvk-kubelet")
    kubelet = churn.KubeletRunner(kubeconfig, forward.front, scratch / "kubelet.log")
    await kubelet.start()
    try:
        assert await churn.wait_for(lambda: churn.node_ready(kube), 60), kubelet.log.read_text()[-3000:]
        yield Rig(apiserver, box, forward, kube, kubelet)
    finally:
        await kubelet.stop()
        await forward.drop()
        await kube.close()
        shutil.copy(scratch / "kubelet.log", "/tmp/faults-last-kubelet.log")
        shutil.rmtree(scratch, ignore_errors=True)


def _report(tally: churn.Tally, rig: Rig) -> str:
    return "\n".join([churn.markdown([tally]), *tally.problems[:20], rig.kubelet.log.read_text()[-2000:]])


@pytest.mark.kube_any
async def test_no_fault_baseline(rig: Rig) -> None:
    """The row every fault is compared with: the same round with nothing broken, every count zero."""
    rng = random.Random(7)
    tally = churn.Tally("none (baseline)")
    await churn.churn_round(rig.kube, pods=8, fault=churn.no_fault(), tally=tally, rng=rng)
    assert tally.cells()[1:-1] == ("1", "8", "0", "0", "0", "0", "0"), _report(tally, rig)
    assert tally.clean, _report(tally, rig)


@pytest.mark.kube_any
async def test_kill_9_of_the_kubelet_mid_churn(rig: Rig) -> None:
    rng = random.Random(8)
    tally = churn.Tally("kubelet kill -9")
    await churn.churn_round(
        rig.kube, pods=16, fault=churn.kill_kubelet(rig.kubelet, rng, strikes=2), tally=tally, rng=rng
    )
    assert rig.kubelet.starts == 3
    assert tally.clean, _report(tally, rig)


@pytest.mark.kube_any
async def test_red_box_killed_and_its_socket_gone(rig: Rig) -> None:
    rng = random.Random(9)
    tally = churn.Tally("red-box kill -9, socket gone")
    fault = churn.redbox_outages(BoxHandle(rig.box), rig.forward, rig.kube, rng, tally)
    await churn.churn_round(rig.kube, pods=8, fault=fault, tally=tally, rng=rng, settle=30)
    assert tally.clean, _report(tally, rig)


# In-memory only: it compacts the store's history, which kube-apiserver offers no knob for.
async def test_watches_dropped_and_410_gone(rig: Rig) -> None:
    rng = random.Random(10)
    tally = churn.Tally("watch dropped, 410 Gone")
    fault = churn.watch_drops(rig.apiserver.store, PODS_GVR, rng, drops=3)
    await churn.churn_round(rig.kube, pods=16, fault=fault, tally=tally, rng=rng)
    assert tally.clean, _report(tally, rig)
    assert "watch expired, relisting" in rig.kubelet.log.read_text()
