"""SubmitJobs through a real red-box and the real Slurm: each job taken and answered as SubmitJob would.

The client sends the submissions made while others are on their way as one SubmitJobs
(wlm.batching); here the rpc is also called as it is on the wire, to see each answer.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import tempfile
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from grpclib import GRPCError
from grpclib.client import Channel
from grpclib.const import Status

from tests.e2e.redbox.helpers import scancel, script, slurm_cmd
from tests.fixtures.redbox import RedBox
from tests.fixtures.slurm import JOBS_ROOT
from wlmvk._proto import api
from wlmvk.core.errors import InvalidInput
from wlmvk.core.jobs import JobSpec
from wlmvk.redbox.service import MAX_BATCH
from wlmvk.redboxclient.client import RedBoxClient
from wlmvk.wire import batches, submits

pytestmark = [pytest.mark.slurm]

HELD = script("#SBATCH --hold", "true")


@pytest.fixture
async def stub(redbox: RedBox) -> AsyncIterator[api.WorkloadManagerStub]:
    channel = Channel(path=redbox.socket)
    yield api.WorkloadManagerStub(channel)
    channel.close()


def _comments(job_ids: list[int]) -> dict[int, str]:
    out = slurm_cmd("squeue", "-h", "-j", ",".join(map(str, job_ids)), "-o", "%i|%k")
    return {int(line.split("|")[0]): line.split("|", 1)[1] for line in out.splitlines()}


async def test_each_job_is_answered_on_its_own_in_order_and_once(stub: api.WorkloadManagerStub) -> None:
    keys = [str(uuid.uuid4()) for _ in range(4)]
    specs = [
        JobSpec(script=HELD, partition="debug", name=f"batch-{i}", idempotency_key=k)
        for i, k in enumerate(keys)
    ]
    refused = JobSpec(script=HELD, partition="no-such-partition", idempotency_key=str(uuid.uuid4()))
    asked = [*specs[:2], refused, *specs[2:]]
    reply = await batches.ask(batches.SubmitJobsRequest(asked), stub)
    try:
        outcomes = reply.outcomes
        assert [o.status for o in outcomes] == [0, 0, Status.INVALID_ARGUMENT.value, 0, 0]
        ids = [o.job_id for i, o in enumerate(outcomes) if i != 2]
        assert len(set(ids)) == 4
        assert _comments(ids) == {job_id: f"wlmvk:{key}" for job_id, key in zip(ids, keys, strict=True)}
        # The refused job's answer is SubmitJob's for the same job, word for word.
        with pytest.raises(GRPCError) as alone:
            await stub._unary_unary(submits.SUBMIT_JOB, submits.SubmitRequest(refused), submits.SubmitReply)
        assert alone.value.status is Status.INVALID_ARGUMENT
        assert outcomes[2].message == alone.value.message
        assert outcomes[2].job_id == 0
        again = await batches.ask(batches.SubmitJobsRequest(asked), stub)
        assert [o.job_id for o in again.outcomes] == [o.job_id for o in outcomes], (
            "the same keys: the same jobs"
        )
    finally:
        scancel(*(o.job_id for o in reply.outcomes if o.job_id))


async def test_more_jobs_than_one_call_may_carry_are_refused(stub: api.WorkloadManagerStub) -> None:
    asked = [JobSpec(script=HELD, partition="debug")] * (MAX_BATCH + 1)
    with pytest.raises(GRPCError) as refused:
        await batches.ask(batches.SubmitJobsRequest(asked), stub)
    assert refused.value.status is Status.INVALID_ARGUMENT
    assert refused.value.message == f"{MAX_BATCH + 1} jobs in one SubmitJobs; at most {MAX_BATCH}"


async def test_the_clients_submissions_together_get_their_own_answers(
    redbox_client: RedBoxClient,
) -> None:
    specs = [JobSpec(script=HELD, partition="debug", idempotency_key=str(uuid.uuid4())) for _ in range(12)]
    specs[5] = JobSpec(script=HELD, partition="no-such-partition", idempotency_key=str(uuid.uuid4()))
    answers = await asyncio.gather(*(redbox_client.submit(spec) for spec in specs), return_exceptions=True)
    ids = [a for a in answers if isinstance(a, int)]
    try:
        assert isinstance(answers[5], InvalidInput)
        assert answers[5].message.startswith("SubmitJob: ")
        assert len(set(ids)) == 11
        keys = _comments(ids)
        assert [keys[a] for a in answers if isinstance(a, int)] == [
            f"wlmvk:{s.idempotency_key}" for i, s in enumerate(specs) if i != 5
        ]
    finally:
        scancel(*ids)


async def _tallies(box: RedBox, path: Path, written: int) -> dict[str, Any]:
    """red-box's tallies (``--stats-file``), its ``written``-th writing, asked for by SIGUSR1."""
    assert box.proc is not None
    os.kill(box.servers[0][0] if box.servers else box.proc.pid, signal.SIGUSR1)
    for _ in range(500):
        figures = _read(path)
        if figures.get("written") == written:
            return figures
        await asyncio.sleep(0.01)
    raise AssertionError(f"red-box wrote no tallies to {path}")


def _read(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text())) if path.exists() else {}


async def test_one_fsync_puts_every_job_of_a_call_on_the_disk(redbox_factory: Callable[..., RedBox]) -> None:
    """The jobs of one SubmitJobs reach the journal's disk together, before the call is answered:
    one group commit for the call, not one for each job as it comes back from Slurm."""
    stats = Path(tempfile.mkdtemp(prefix="rbstats", dir=JOBS_ROOT)) / "tallies.json"
    box = redbox_factory("--stats-file", str(stats))
    channel = Channel(path=box.socket)
    stub = api.WorkloadManagerStub(channel)
    specs = [JobSpec(script=HELD, partition="debug", idempotency_key=str(uuid.uuid4())) for _ in range(16)]
    before = await _tallies(box, stats, 1)
    reply = await batches.ask(batches.SubmitJobsRequest(specs), stub)
    try:
        after = await _tallies(box, stats, 2)
        ids = [o.job_id for o in reply.outcomes]
        assert [o.status for o in reply.outcomes] == [0] * 16
        assert after["fsyncs"] - before["fsyncs"] == 1
        assert set(ids) <= box.journal_job_ids()
    finally:
        channel.close()
        scancel(*(o.job_id for o in reply.outcomes if o.job_id))
