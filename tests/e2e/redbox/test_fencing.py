"""A deposed holder's SubmitJobs, already sent but held on its way, is refused by red-box itself
(real red-box, real Slurm, the real Elector/LeaseFence/FencedBackend/batcher on the in-memory API
server): nothing of it reaches Slurm, and red-box still refuses it after a restart.

The gate (tests/fixtures/gate.py) is a Unix-socket relay in front of red-box's socket that holds
what the old holder sends until the test lets it through, as a stopped process, a full socket
buffer or a slow network would: the holder's own checks all passed when it sent."""

from __future__ import annotations

import asyncio
import subprocess
import uuid
from collections.abc import AsyncIterator

import pytest

from tests.e2e.redbox.helpers import script
from tests.fixtures.gate import Gate
from tests.fixtures.redbox import RedBox
from wlmvk.core.errors import Unavailable
from wlmvk.core.fences import Token
from wlmvk.core.jobs import JobSpec
from wlmvk.kube import leader
from wlmvk.kube.bodies import LEASES
from wlmvk.kube.client import KubeClient
from wlmvk.kube.leader import ElectionConfig, Elector, Fenced
from wlmvk.kubelet.standby import FencedBackend, LeaseFence
from wlmvk.redboxclient.client import RedBoxClient

pytestmark = [pytest.mark.slurm, pytest.mark.apiserver(controllers=False)]

HELD = script("#SBATCH --hold", "true")


@pytest.fixture
async def gate(redbox: RedBox) -> AsyncIterator[Gate]:
    made = Gate(redbox.socket)
    await made.start()
    yield made
    await made.close()


def keys_in_slurm() -> list[str]:
    out = subprocess.run(
        ["squeue", "-h", "-t", "all", "-o", "%k"], capture_output=True, text=True, check=True
    ).stdout
    return [line.removeprefix("wlmvk:") for line in out.split() if line.startswith("wlmvk:")]


def config(identity: str) -> ElectionConfig:
    return ElectionConfig(
        "fence-e2e", "default", identity, duration=10, renew_interval=1.0, retry_interval=0.1
    )


async def test_a_deposed_holders_queued_submit_jobs_is_refused_by_red_box(
    redbox: RedBox, gate: Gate, kube: KubeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    old, new = Elector(kube, config("old")), Elector(kube, config("new"))
    assert await old.try_acquire()
    assert not await new.try_acquire()  # new sees old's renewal and counts from here
    old_client = RedBoxClient(gate.path, timeout=30.0)
    old_client.fence_with(LeaseFence(old))
    old_backend = FencedBackend(old_client, check=old.check)
    new_client = RedBoxClient(redbox.socket, timeout=30.0)
    new_client.fence_with(LeaseFence(new))
    gate.open.set()
    await old_client.info()  # the old holder's token reached red-box once: 0
    gate.open.clear()
    keys = [str(uuid.uuid4()) for _ in range(3)]
    try:
        # Three submissions made together: one SubmitJobs, checked and stamped, then held in the gate.
        sending = [
            asyncio.ensure_future(
                old_backend.submit(JobSpec(script=HELD, partition="debug", idempotency_key=k))
            )
            for k in keys
        ]
        await asyncio.sleep(0.5)
        assert not any(task.done() for task in sending)

        # The Lease passes to the new holder (old frozen past its bound, as SIGSTOP would).
        real = leader.boottime
        monkeypatch.setattr(leader, "boottime", lambda: real() + 11.0)
        assert await new.try_acquire()
        assert new.transitions == old.transitions + 1 == 1
        for key in keys:  # the new holder looks each pod's key up first, as a takeover does
            assert await new_client.find(key) is None

        gate.open.set()  # the old holder's SubmitJobs arrives now
        answers = await asyncio.gather(*sending, return_exceptions=True)
        assert [type(a) for a in answers] == [Unavailable] * 3
        assert str(answers[0]) == (
            "SubmitJobs: fenced: token 0 of default/fence-e2e is below the highest seen, 1: a newer"
            " holder of the Lease has spoken to red-box; this call changes nothing"
        )
        assert not set(keys) & set(keys_in_slurm())
        for key in keys:
            assert await new_client.find(key) is None
        assert "rpc refused: a deposed holder's token" in redbox.log()

        # Its own fence now refuses too, before anything is sent.
        with pytest.raises(Fenced):
            await old_backend.submit(JobSpec(script=HELD, partition="debug", idempotency_key=keys[0]))
    finally:
        await old_client.close()
        await new_client.close()


async def test_the_highest_token_outlives_a_red_box_restart(redbox: RedBox) -> None:
    """Seen once, token 1 of a scope keeps token 0 out after red-box restarts (its journal)."""

    class Fixed:
        def __init__(self, number: int) -> None:
            self.number = number

        def check(self) -> Token:
            return Token("default/restart-e2e", self.number)

        def token(self) -> Token:
            return self.check()

        async def refused(self, highest: int) -> None:
            pass

    newer = RedBoxClient(redbox.socket, timeout=30.0)
    newer.fence_with(Fixed(1))
    await newer.info()
    await newer.close()
    redbox.restart()
    older = RedBoxClient(redbox.socket, timeout=30.0)
    older.fence_with(Fixed(0))
    key = str(uuid.uuid4())
    try:
        with pytest.raises(
            Unavailable, match="fenced: token 0 of default/restart-e2e is below the highest seen, 1"
        ):
            await older.submit(JobSpec(script=HELD, partition="debug", idempotency_key=key))
        assert key not in keys_in_slurm()
    finally:
        await older.close()


async def test_a_holder_of_a_lease_made_again_is_refused_once_then_counts_on(
    redbox: RedBox, kube: KubeClient
) -> None:
    """The cluster Lease deleted by hand: its count restarts at 0, below what red-box has seen. The
    holder's first call is refused; told the highest, it raises its Lease's count and goes on."""
    first = Elector(kube, config("first"))
    assert await first.try_acquire()
    assert await first.advance(3)  # as after three takeovers
    seen = RedBoxClient(redbox.socket, timeout=30.0)
    seen.fence_with(LeaseFence(first))
    await seen.info()  # red-box has seen 3
    await seen.close()
    await kube.delete(LEASES, "fence-e2e", namespace="default")
    again = Elector(kube, config("again"))
    assert await again.try_acquire()
    assert again.transitions == 0
    client = RedBoxClient(redbox.socket, timeout=30.0)
    client.fence_with(LeaseFence(again))
    key = str(uuid.uuid4())
    job = JobSpec(script=HELD, partition="debug", idempotency_key=key)
    try:
        with pytest.raises(
            Unavailable, match="fenced: token 0 of default/fence-e2e is below the highest seen, 3"
        ):
            await client.submit(job)
        assert again.transitions == 4
        await client.submit(job)  # scancelled at teardown with the others red-box's journal names
        assert keys_in_slurm().count(key) == 1
    finally:
        await client.close()
