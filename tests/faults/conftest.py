"""Fixtures of the fault suite: a fenced red-box; the ``rig`` of the churn and follow tests (red-box
as the job owner behind a real sshd and ``ssh -L`` forward, ``wlmvk kubelet`` as a process); the
``pair`` of ``--leader-elect`` kubelets (two agent hosts for one cluster) that replaces its kubelet;
``own_rig``, the rig on a Slurm of the test's own (``own_slurm``), whose slurmctld may be restarted."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.faults import churn, ownslurm
from tests.fixtures import prerequisites, slurm_release, sshd
from tests.fixtures.apiserver import RunningApiServer
from tests.fixtures.redbox import JOB_OWNER, RedBox
from tests.fixtures.slurm import JOBS_ROOT
from wlmvk.core import names
from wlmvk.core.errors import WlmvkError
from wlmvk.kube.bodies import LEASES
from wlmvk.kube.client import KubeClient


@pytest.fixture
def fence() -> Iterator[Path]:
    """A private directory under the Slurm jobs root; red-box's working root goes inside it, so
    anything written outside the root shows up here (the shared jobs root is busy with others)."""
    path = Path(tempfile.mkdtemp(prefix="fence-", dir=JOBS_ROOT))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def fenced_redbox(redbox_factory: Callable[..., RedBox], fence: Path) -> RedBox:
    """A red-box (as root) whose working root is ``fence/root``."""
    root = fence / "root"
    root.mkdir()
    return redbox_factory(work_dir=root)


@dataclass
class Rig:
    """Everything a round strikes at; the kubelet's API lets the API server's log proxy in."""

    apiserver: RunningApiServer
    box: RedBox
    forward: sshd.SshForward
    sshd: sshd.SshServer
    kube: KubeClient
    kubelet: churn.KubeletRunner


@pytest.fixture
async def rig(
    slurm: str, apiserver: RunningApiServer, redbox_factory: Callable[..., RedBox]
) -> AsyncIterator[Rig]:
    async with _rigged(apiserver, redbox_factory) as made:
        yield made


@pytest.fixture
def own_slurm(slurm: str) -> Iterator[ownslurm.Instance]:
    """A Slurm of the test's own (``ownslurm.TEST``), this process pointed at it meanwhile; under a
    release, the release's box (the run's own: tests/conftest.py has such a test run alone)."""
    if slurm_release.RELEASE is not None:
        yield ownslurm.box(slurm_release.RELEASE)
        return
    with ownslurm.running(ownslurm.TEST) as instance:
        yield instance


@pytest.fixture
async def own_rig(
    own_slurm: ownslurm.Instance, apiserver: RunningApiServer, redbox_factory: Callable[..., RedBox]
) -> AsyncIterator[Rig]:
    """The ``rig`` on the test's own Slurm: red-box and the audit's Slurm commands use it."""
    async with _rigged(apiserver, redbox_factory) as made:
        yield made


@contextlib.asynccontextmanager
async def _rigged(apiserver: RunningApiServer, redbox_factory: Callable[..., RedBox]) -> AsyncIterator[Rig]:
    if reason := sshd.missing():
        prerequisites.missing(reason)
    box = redbox_factory(user=JOB_OWNER)
    kube = await KubeClient.connect(str(apiserver.kubeconfig))
    scratch = Path(tempfile.mkdtemp(prefix="faults-", dir="/tmp"))
    # The kubelet reaches red-box through ``ssh -L`` from the login node, logged in as the job owner.
    server = sshd.SshServer(Path(tempfile.mkdtemp(prefix="sshd-", dir="/tmp")), JOB_OWNER)
    forward = sshd.SshForward(server, str(scratch / "fwd.sock"), box.socket, scratch / "ssh.log")
    kubeconfig = apiserver.kubeconfig_for("wlmvk-kubelet")
    kubelet = churn.KubeletRunner(
        kubeconfig, forward.local, scratch / "kubelet.log", client_ca=apiserver.kubelet_client_ca
    )
    try:
        # Started inside the try: whatever fails to start, what did start is stopped.
        server.start()
        forward.start()
        await kubelet.start()
        assert await churn.wait_for(lambda: churn.node_ready(kube), 60), kubelet.log.read_text()[-3000:]
        yield Rig(apiserver, box, forward, server, kube, kubelet)
    finally:
        await kubelet.stop()
        forward.stop()
        server.stop()
        await kube.close()
        if kubelet.log.exists():
            shutil.copy(kubelet.log, "/tmp/faults-last-kubelet.log")
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(server.directory, ignore_errors=True)


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
            await rig.kube.delete(LEASES, churn.SITE.lease, namespace=names.NODE_LEASE_NAMESPACE)
