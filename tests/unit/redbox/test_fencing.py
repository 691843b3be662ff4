"""red-box's fence (redbox.fencing): a token below the highest seen is refused, the highest is kept
across a restart, and a new holder's first call waits for the calls admitted under older tokens.

The store is the real one on disk; the gRPC tests run real grpclib on a Unix socket with the
stand-in's handlers wrapped as red-box wraps its own (``fenced``)."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from grpclib import GRPCError
from grpclib.client import Channel
from grpclib.const import Cardinality, Handler, Status
from grpclib.server import Server

from wlmvk._proto import api
from wlmvk.core.fences import HEADER, Token
from wlmvk.redbox import fencing
from wlmvk.redbox.fencing import Fences, fenced
from wlmvk.redbox.store import Store

SCOPE = "kube-node-lease/slurm-c.kubelet"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store(tmp_path / "state")
    opened.open()
    yield opened
    opened.close()


async def test_a_lower_token_is_refused_naming_both(store: Store) -> None:
    fences = Fences(store)
    async with fences.admitted(Token(SCOPE, 2)):
        pass
    with pytest.raises(GRPCError) as refused:
        async with fences.admitted(Token(SCOPE, 1)):
            raise AssertionError("a stale token's call ran")
    assert refused.value.status is Status.FAILED_PRECONDITION
    assert refused.value.message == (
        f"fenced: token 1 of {SCOPE} is below the highest seen, 2: a newer holder of the Lease has"
        " spoken to red-box; this call changes nothing"
    )
    async with fences.admitted(Token(SCOPE, 2)):  # the holder itself, again
        pass
    async with fences.admitted(Token("other/lease", 0)):  # scopes are apart
        pass


async def test_the_highest_token_survives_a_restart(tmp_path: Path) -> None:
    first = Store(tmp_path / "state")
    first.open()
    async with Fences(first).admitted(Token(SCOPE, 5)):
        pass
    first.close()  # as a killed red-box: the line was fsynced before the call ran
    again = Store(tmp_path / "state")
    again.open()  # replayed and compacted
    again.close()
    third = Store(tmp_path / "state")
    third.open()
    try:
        assert third.fence(SCOPE) == 5
        with pytest.raises(GRPCError, match=r"token 4 of .* below the highest seen, 5"):
            async with Fences(third).admitted(Token(SCOPE, 4)):
                pass
    finally:
        third.close()


async def test_a_new_holder_waits_for_the_calls_admitted_under_older_tokens(store: Store) -> None:
    fences = Fences(store)
    order: list[str] = []
    release = asyncio.Event()

    async def old_call() -> None:
        async with fences.admitted(Token(SCOPE, 1)):
            order.append("old call admitted")
            await release.wait()
            order.append("old call ended")

    async def new_call() -> None:
        async with fences.admitted(Token(SCOPE, 2)):
            order.append("new call runs")

    old = asyncio.ensure_future(old_call())
    await asyncio.sleep(0.05)
    new = asyncio.ensure_future(new_call())
    await asyncio.sleep(0.05)
    assert order == ["old call admitted"]  # the new holder's call waits ...
    with pytest.raises(GRPCError):  # ... and from now on the old token is refused
        async with fences.admitted(Token(SCOPE, 1)):
            pass
    release.set()
    await asyncio.gather(old, new)
    assert order == ["old call admitted", "old call ended", "new call runs"]


async def test_a_new_holder_waits_neither_for_old_reads_nor_for_good(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An old holder's log followed for hours, or a write of a frozen client that never ends."""
    monkeypatch.setattr(fencing, "BARRIER_WAIT", 0.3)
    fences = Fences(store)
    never = asyncio.Event()

    async def old(writes: bool) -> None:
        async with fences.admitted(Token(SCOPE, 1), writes=writes):
            await never.wait()

    reading = asyncio.ensure_future(old(False))
    await asyncio.sleep(0.05)
    async with asyncio.timeout(0.2), fences.admitted(Token(SCOPE, 2)):
        pass  # not held by the read
    writing = asyncio.ensure_future(old(True))
    with pytest.raises(GRPCError):  # token 1 is stale now: refused, not admitted
        await writing
    fences_again = Fences(store)
    stuck = asyncio.ensure_future(_admitted_forever(fences_again, Token(SCOPE, 2), never))
    await asyncio.sleep(0.05)
    started = asyncio.get_running_loop().time()
    async with fences_again.admitted(Token(SCOPE, 3)):
        waited = asyncio.get_running_loop().time() - started
    assert 0.3 <= waited < 1.0  # waited for the write under token 2, then went on
    for task in (reading, stuck):
        task.cancel()
    await asyncio.gather(reading, stuck, return_exceptions=True)


async def _admitted_forever(fences: Fences, token: Token, never: asyncio.Event) -> None:
    async with fences.admitted(token):
        await never.wait()


class StandIn(api.WorkloadManagerBase):  # type: ignore[misc]
    def __init__(self, fences: Fences) -> None:
        self.fences = fences
        self.cancelled: list[int] = []

    def __mapping__(self) -> dict[str, Handler]:
        mapping = super().__mapping__().items()
        return {path: fenced(handler, self.fences, rpc=path.rsplit("/", 1)[-1]) for path, handler in mapping}

    async def cancel_job(self, request: api.CancelJobRequest) -> api.CancelJobResponse:
        self.cancelled.append(request.job_id)
        return api.CancelJobResponse()


@pytest.fixture
async def served(store: Store) -> AsyncIterator[tuple[StandIn, api.WorkloadManagerStub]]:
    home = tempfile.mkdtemp(dir="/tmp")
    service = StandIn(Fences(store))
    server = Server([service])
    await server.start(path=f"{home}/s.sock")
    channel = Channel(path=f"{home}/s.sock")
    yield service, api.WorkloadManagerStub(channel)
    channel.close()
    server.close()
    await server.wait_closed()
    shutil.rmtree(home, ignore_errors=True)


async def test_over_grpc_a_call_without_a_token_is_served_as_before_and_a_stale_one_refused(
    served: tuple[StandIn, api.WorkloadManagerStub],
) -> None:
    service, stub = served
    await stub.cancel_job(api.CancelJobRequest(job_id=1))  # the original client: no metadata
    await stub.cancel_job(api.CancelJobRequest(job_id=2), metadata={HEADER: f"{SCOPE}=3"})
    with pytest.raises(GRPCError) as refused:
        await stub.cancel_job(api.CancelJobRequest(job_id=3), metadata={HEADER: f"{SCOPE}=2"})
    assert refused.value.status is Status.FAILED_PRECONDITION
    assert "token 2 of kube-node-lease/slurm-c.kubelet is below the highest seen, 3" in str(
        refused.value.message
    )
    await stub.cancel_job(api.CancelJobRequest(job_id=4))  # still served: no token, no fence
    assert service.cancelled == [1, 2, 4]


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        ({HEADER: "no-number"}, "wlmvk-fence 'no-number': expected <scope>=<number>"),
        ([(HEADER, f"{SCOPE}=1"), (HEADER, f"{SCOPE}=2")], "2 wlmvk-fence headers; at most one"),
    ],
)
async def test_over_grpc_a_malformed_token_is_invalid_argument(
    served: tuple[StandIn, api.WorkloadManagerStub], metadata: object, message: str
) -> None:
    service, stub = served
    with pytest.raises(GRPCError) as refused:
        await stub.cancel_job(api.CancelJobRequest(job_id=9), metadata=metadata)
    assert (refused.value.status, refused.value.message) == (Status.INVALID_ARGUMENT, message)
    assert service.cancelled == []


async def test_over_grpc_a_deposed_holders_call_whose_message_is_held_does_not_hold_the_new_holder(
    served: tuple[StandIn, api.WorkloadManagerStub],
) -> None:
    # The deposed holder's call came through up to its headers, its message held on its way (a
    # partition mid-call): it has done nothing, so the new holder's first call goes at once (it
    # waited BARRIER_WAIT, 120 s, and a standby did not take over within a minute); the message,
    # once it arrives, is judged by the fence as it stands then: refused.
    service, stub = served
    path = next(p for p in service.__mapping__() if p.endswith("/CancelJob"))
    held = stub.channel.request(
        path,
        Cardinality.UNARY_UNARY,
        api.CancelJobRequest,
        api.CancelJobResponse,
        metadata={HEADER: f"{SCOPE}=1"},
    )
    async with held as stream:
        await stream.send_request()  # the headers, no message yet
        await asyncio.sleep(0.2)  # red-box has them
        await asyncio.wait_for(
            stub.cancel_job(api.CancelJobRequest(job_id=2), metadata={HEADER: f"{SCOPE}=2"}), 10
        )
        await stream.send_message(api.CancelJobRequest(job_id=1), end=True)
        with pytest.raises(GRPCError) as refused:
            await stream.recv_message()
    assert refused.value.status is Status.FAILED_PRECONDITION
    assert service.cancelled == [2]
