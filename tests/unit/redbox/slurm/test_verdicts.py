"""The rule of exactly-once submission: what each answer means, and when a missed key lookup concludes.

The pure rule (``verdicts``) densely; then each path's use of it: a fake slurmrestd on a Unix
socket answering error 5004 (one POST, no sbatch), sbatch's failure texts through a runner that
answers as sbatch does, and ``Jobs`` settling an unsettled key against a scripted Slurm whose
job appears only after the submission answered (slurmctld slow), timed by the monotonic clock.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from tests.unit.redbox.slurm.rest.test_connection import Server, Start, http, serve  # noqa: F401
from tests.unit.redbox.test_jobs import ScriptedSlurm
from wlmvk.core.errors import InvalidInput, Unavailable
from wlmvk.core.jobs import JobId, JobSpec, JobState, JobStatus
from wlmvk.redbox.files import Confinement
from wlmvk.redbox.jobs import Jobs
from wlmvk.redbox.slurm import verdicts
from wlmvk.redbox.slurm.cli.commands import Slurm
from wlmvk.redbox.slurm.processes.runner import Completed, NoAnswer
from wlmvk.redbox.slurm.rest.backend import RestSlurm
from wlmvk.redbox.slurm.rest.connection import Client
from wlmvk.redbox.slurm.rest.daemon import Restd
from wlmvk.redbox.slurm.verdicts import Unsettled, Verdict
from wlmvk.redbox.store import Store

TIMEOUT_5004 = '{"errors": [{"error_code": 5004, "error": "Socket timed out on send/recv operation"}]}'
JOB_ID_5 = '{"errors": [], "job_id": 5, "step_id": "BATCH"}'


@pytest.mark.parametrize(
    ("job_id", "codes", "verdict"),
    [
        (56, [2042], Verdict.FINAL),  # held: a job
        (56, [], Verdict.FINAL),
        (0, [2000], Verdict.RETRY_NOW),  # invalid partition: slurmctld refused it
        (0, [2127, 9001], Verdict.RETRY_NOW),  # slurmrestd's own parse failure: never sent
        (0, [5004], Verdict.LOOK_UP),  # socket timed out: slurmctld may have it
        (0, [1003], Verdict.LOOK_UP),  # receive error
        (0, [1800], Verdict.LOOK_UP),  # slurmctld communication error
        (0, [5005], Verdict.LOOK_UP),
        (0, [6000], Verdict.LOOK_UP),  # a reply whose credential did not verify
        (0, [2000, 5004], Verdict.LOOK_UP),  # one uncertain error is enough
        (0, [0], Verdict.LOOK_UP),  # an error without a code
        (0, [], Verdict.LOOK_UP),  # no job id and no error
        (0, None, Verdict.LOOK_UP),  # the body does not decode: a lost reply
        (True, [], Verdict.LOOK_UP),
    ],
)
def test_each_slurmrestd_answer_class(job_id: object, codes: list[int] | None, verdict: Verdict) -> None:
    assert verdicts.rest_answer(job_id, codes) is verdict


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        (
            "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation",
            Verdict.LOOK_UP,
        ),
        (
            "sbatch: error: Batch job submission failed: Zero Bytes were transmitted or received",
            Verdict.LOOK_UP,
        ),
        ("sbatch: error: Batch job submission failed: Communication connection failure", Verdict.LOOK_UP),
        ("sbatch: error: Batch job submission failed: Unexpected message received", Verdict.LOOK_UP),
        ("sbatch: error: Unable to contact slurm controller (connect failure)", Verdict.RETRY_NOW),
        ("sbatch: error: Slurm backup controller in standby mode", Verdict.RETRY_NOW),
        ("sbatch: fatal: Unable to process configuration file", Verdict.RETRY_NOW),
        ("sbatch: error: Batch job submission failed: Invalid partition name specified", Verdict.FINAL),
        ("sbatch: error: invalid partition specified: nope", Verdict.FINAL),
    ],
)
def test_each_sbatch_failure_class(text: str, verdict: Verdict) -> None:
    assert verdicts.sbatch_failure(text) is verdict


def test_message_timeout_is_read_from_the_configuration() -> None:
    config = "MaxStepCount            = 40000\nMessageTimeout          = 25 sec\nMinJobAge  = 300 sec\n"
    assert verdicts.message_timeout(config) == 25.0
    assert verdicts.message_timeout("ClusterName = x\n") == verdicts.DEFAULT_MESSAGE_TIMEOUT
    assert verdicts.bound(25.0) == 25.0 + verdicts.MARGIN


def test_a_miss_concludes_only_a_bound_after_slurmctld_first_answered() -> None:
    state = Unsettled(since=100.0)
    assert not state.counts(99.0)
    assert state.looked(99.0, 101.0) == state, "a lookup that started before the answer says nothing"
    assert state.wait(100.0, 12.0) == 0.0, "the first lookup goes at once"
    assert not state.conclusive(500.0, 12.0), "no miss concludes before slurmctld answered one"
    first = state.looked(100.5, 104.0)
    assert first.answered == 104.0
    assert first.looked(110.0, 111.0) == first, "the first answer is kept"
    assert first.wait(105.0, 12.0) == 11.0
    assert not first.conclusive(115.9, 12.0)
    assert first.conclusive(116.0, 12.0)


# --- the REST path: an uncertain answer is not followed by sbatch ---


class CountingRunner:
    """Slurm's commands as red-box's runner runs them; sbatch answers ``sbatch_answer``."""

    def __init__(self, sbatch_answer: Completed | None = None) -> None:
        self.argvs: list[tuple[str, ...]] = []
        self.sbatch_answer = sbatch_answer

    async def run(
        self,
        argv: Sequence[str],
        *,
        stdin: bytes | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> Completed:
        self.argvs.append(tuple(argv))
        if argv[0] == "sbatch":
            if self.sbatch_answer is None:
                raise NoAnswer("sbatch: no answer from Slurm within 30 s (killed)")
            return self.sbatch_answer
        raise AssertionError(f"not expected here: {argv}")

    def sbatches(self) -> int:
        return sum(1 for argv in self.argvs if argv[0] == "sbatch")


async def _rest(serve: Start, body: str) -> tuple[RestSlurm, Server, CountingRunner]:  # noqa: F811
    fake, path = await serve(lambda _: http(500, body))
    restd = Restd(version="v0.0.38")
    restd.client = Client(path)
    runner = CountingRunner(Completed(("sbatch",), 0, "7\n", ""))
    return RestSlurm(runner, restd=restd, user="4242"), fake, runner  # type: ignore[arg-type]


async def test_error_5004_makes_one_post_and_no_sbatch(serve: Start) -> None:  # noqa: F811
    """Before the fix: one POST, then sbatch at once (two jobs for one key when slurmctld had it)."""
    slurm, fake, runner = await _rest(serve, TIMEOUT_5004)
    with pytest.raises(Unavailable, match="error 5004: Socket timed out"):
        await slurm.submit(b"#!/bin/sh\ntrue\n", ["--partition=debug", "--comment=wlmvk:k1"], env={})
    assert (len(fake.requests), runner.sbatches()) == (1, 0)


async def test_a_reply_that_does_not_decode_is_a_lost_reply(serve: Start) -> None:  # noqa: F811
    slurm, fake, runner = await _rest(serve, "<html>proxy error</html>")
    with pytest.raises(verdicts.MaybeMade, match="proxy error"):
        await slurm.submit(b"#!/bin/sh\ntrue\n", ["--comment=wlmvk:k1"], env={})
    assert (len(fake.requests), runner.sbatches()) == (1, 0)


async def test_a_refusal_goes_to_sbatch_at_once(serve: Start) -> None:  # noqa: F811
    refused = '{"errors": [{"error_code": 2000, "error": "Invalid partition name specified"}]}'
    slurm, fake, runner = await _rest(serve, refused)
    assert await slurm.submit(b"#!/bin/sh\ntrue\n", ["--comment=wlmvk:k1"], env={}) == 7
    assert (len(fake.requests), runner.sbatches()) == (1, 1)


# --- the CLI path: sbatch's uncertain failures ---


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (
            Completed(("sbatch",), 1, "", "sbatch: error: ... Socket timed out on send/recv operation"),
            "MaybeMade",
        ),
        (None, "MaybeMade"),  # killed at the runner's timeout
        (Completed(("sbatch",), 0, "Submitted?\n", ""), "MaybeMade"),  # an answer that does not read
        (Completed(("sbatch",), 1, "", "sbatch: error: Unable to contact slurm controller"), "Unavailable"),
        (Completed(("sbatch",), 1, "", "sbatch: error: invalid partition specified: x"), "InvalidInput"),
    ],
)
async def test_sbatch_failures_raise_by_their_verdict(answer: Completed | None, error: str) -> None:
    runner = CountingRunner(answer)
    with pytest.raises((verdicts.MaybeMade, Unavailable, InvalidInput)) as raised:
        await Slurm(runner, user="someone").submit(b"#!/bin/sh\n", ["--comment=wlmvk:k1"])  # type: ignore[arg-type]
    assert type(raised.value).__name__ == error


# --- Jobs: the key is looked up after the bound, on either path ---


class SlowSlurm(ScriptedSlurm):
    """The first submission answers uncertainly; slurmctld makes its job ``late`` seconds later."""

    def __init__(self, *, late: float | None, timeout: float) -> None:
        super().__init__()
        self.late = late
        self.timeout = timeout
        self.times: list[tuple[str, float]] = []
        self.down_after_submit = False

    async def submit(
        self, script: bytes, options: Sequence[str], *, env: Mapping[str, str] | None = None
    ) -> JobId:
        self.times.append(("submit", time.monotonic()))
        if len(self.times) > 1 and any(what == "submit" for what, _ in self.times[:-1]):
            return await super().submit(script, options, env=env)
        self.next_id += 1
        job = JobId(self.next_id)
        key = next((o.split(":", 1)[1] for o in options if o.startswith("--comment=wlmvk:")), "")
        if self.late is not None:
            asyncio.get_running_loop().call_later(
                self.late, self.queued.__setitem__, job, JobState(job, JobStatus.PENDING, idempotency_key=key)
            )
        raise verdicts.MaybeMade("sbatch: Socket timed out on send/recv operation", since=time.monotonic())

    async def queue(self, job_ids: Sequence[JobId] | None = None) -> list[JobState]:
        self.times.append(("squeue", time.monotonic()))
        if self.down_after_submit and any(what == "submit" for what, _ in self.times):
            raise Unavailable("squeue: Socket timed out on send/recv operation")
        return await super().queue(job_ids)

    async def message_timeout(self) -> float:
        return self.timeout


def _jobs(slurm: ScriptedSlurm, tmp_path: Path) -> Jobs:
    store = Store(tmp_path / "state")
    store.open()
    (tmp_path / "work").mkdir(exist_ok=True)
    confinement = Confinement(tmp_path / "work", [tmp_path / "work"])
    return Jobs(slurm=slurm, store=store, confinement=confinement, max_script_bytes=1000, base_env={})  # type: ignore[arg-type]


SPEC = JobSpec(script="#!/bin/sh\ntrue\n", idempotency_key="slow-1")


async def test_a_job_made_late_is_found_by_the_lookup_after_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(verdicts, "MARGIN", 0.0)
    slurm = SlowSlurm(late=0.2, timeout=0.4)  # made after the first lookup, within the bound
    job_id = await _jobs(slurm, tmp_path).submit(SPEC)
    # The index before it, the uncertain submission, then a miss and the lookup after the bound.
    assert [what for what, _ in slurm.times] == ["squeue", "submit", "squeue", "squeue"]
    assert slurm.calls.count("sbatch") == 0, "no second submission"
    assert list(slurm.queued) == [job_id]
    first, second = slurm.times[2][1], slurm.times[3][1]
    assert second - first >= 0.4


async def test_a_job_never_made_is_submitted_again_only_after_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(verdicts, "MARGIN", 0.0)
    slurm = SlowSlurm(late=None, timeout=0.3)
    job_id = await _jobs(slurm, tmp_path).submit(SPEC)
    assert [what for what, _ in slurm.times] == ["squeue", "submit", "squeue", "squeue", "submit"]
    assert slurm.times[3][1] - slurm.times[2][1] >= 0.3
    assert list(slurm.queued) == [job_id]


async def test_while_slurm_does_not_answer_the_key_stays_unsettled(tmp_path: Path) -> None:
    slurm = SlowSlurm(late=None, timeout=0.0)

    slurm.down_after_submit = True
    jobs = _jobs(slurm, tmp_path)
    for _ in range(3):  # each retry with the key looks it up first: none submits
        with pytest.raises(Unavailable, match="squeue"):
            await jobs.submit(SPEC)
    assert [what for what, _ in slurm.times] == ["squeue", "submit", "squeue", "squeue", "squeue"]


async def test_an_unkeyed_job_with_an_uncertain_answer_is_unavailable(tmp_path: Path) -> None:
    slurm = SlowSlurm(late=None, timeout=0.0)
    with pytest.raises(Unavailable, match="may exist and has no key"):
        await _jobs(slurm, tmp_path).submit(JobSpec(script="#!/bin/sh\ntrue\n"))


async def test_a_key_an_earlier_red_box_left_unrecorded_is_settled_before_a_submission(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """red-box died with its sbatch on its way; slurmctld makes that job after the new red-box's
    first lookup: the lookup after the bound finds it, nothing is submitted again."""
    monkeypatch.setattr(verdicts, "MARGIN", 0.3)
    slurm = ScriptedSlurm()  # MessageTimeout 0: the bound is MARGIN
    before = _jobs(slurm, tmp_path)
    before.store.intend("slow-1")
    before.store.close()
    after = _jobs(slurm, tmp_path)
    made = JobId(500)
    asyncio.get_running_loop().call_later(
        0.05, slurm.queued.__setitem__, made, JobState(made, JobStatus.PENDING, idempotency_key="slow-1")
    )
    assert await after.submit(SPEC) == made
    assert slurm.calls.count("squeue") == 2
    assert "sbatch" not in slurm.calls
