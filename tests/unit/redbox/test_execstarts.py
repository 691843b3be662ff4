"""How red-box starts an exec's srun (``execstarts``): the first exec into a job checks its state
first; a later one starts srun at once, the state asked beside it, and is still refused (srun
stopped) when the job no longer runs. srun here is a script on PATH that notes each start."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from wlmvk.core.errors import FailedPrecondition, NotFound
from wlmvk.core.execs import Exited, StdinClosed, StdoutData, exec_spec
from wlmvk.core.jobs import JobId, JobState, JobStatus
from wlmvk.redbox.execstarts import ExecStarts
from wlmvk.redbox.slurm.processes.executing import Execution

JOB = JobId(42)
WORK = "/var/tmp/jobs/42"


@pytest.fixture
def srun(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake srun first on PATH (red-box finds srun on its own PATH): appends its --chdir to
    the file returned, then runs the command after ``--``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    starts = tmp_path / "starts"
    fake = bin_dir / "srun"
    fake.write_text(
        "#!/bin/sh\n"
        'for a in "$@"; do case "$a" in --chdir=*) echo "${a#--chdir=}" >> "'
        + str(starts)
        + '";; esac; done\n'
        'while [ "$1" != "--" ]; do shift; done; shift\nexec "$@"\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    return starts


def env_of(srun: Path) -> dict[str, str]:
    return {"PATH": os.environ["PATH"]}


def started(srun: Path) -> list[str]:
    return srun.read_text().split() if srun.exists() else []


def states(
    *answers: JobState, srun: Path | None = None, waits: dict[int, int] | None = None
) -> tuple[Callable[[JobId], Awaitable[JobState]], list[JobId]]:
    """A state source answering ``answers`` in turn; its n-th answer (``waits``: n -> count)
    waits until srun has started that many times."""
    asked: list[JobId] = []
    queue = list(answers)

    async def state_of(job_id: JobId) -> JobState:
        asked.append(job_id)
        count = (waits or {}).get(len(asked), 0)
        for _ in range(500):
            if srun is None or len(started(srun)) >= count:
                break
            await asyncio.sleep(0.01)
        return queue.pop(0)

    return state_of, asked


def run_state(status: JobStatus = JobStatus.RUNNING, reason: str = "", working_dir: str = WORK) -> JobState:
    return JobState(job_id=JOB, status=status, reason=reason, working_dir=working_dir)


async def output_of(execution: Execution) -> list[object]:
    await execution.send(StdinClosed())
    return [o async for o in execution.outputs()]


async def test_the_first_exec_into_a_job_checks_its_state_before_srun(srun: Path) -> None:
    state_of, asked = states(run_state())
    starts = ExecStarts(state_of=state_of)
    spec = exec_spec(JOB, ["echo", "hi"], tty=False, size=None)
    execution, checked = await starts.start(spec, env_of(srun))
    try:
        assert checked.done()
        assert asked == [JOB]
        assert await output_of(execution) == [StdoutData(b"hi\n"), Exited(0)]
        assert started(srun) == [WORK]
    finally:
        await execution.stop()


async def test_a_job_that_does_not_run_is_refused_before_any_srun(srun: Path) -> None:
    state_of, _ = states(run_state(JobStatus.PENDING, "JobHeldUser"), run_state(JobStatus.NOT_FOUND))
    starts = ExecStarts(state_of=state_of)
    spec = exec_spec(JOB, ["true"], tty=False, size=None)
    with pytest.raises(FailedPrecondition) as refused:
        await starts.start(spec, env_of(srun))
    assert (
        refused.value.message == "exec: job 42 is PENDING (JobHeldUser): a command runs only in a running job"
    )
    with pytest.raises(NotFound) as unknown:
        await starts.start(spec, env_of(srun))
    assert unknown.value.message == "exec: job 42 is unknown to Slurm and red-box"
    assert started(srun) == []


async def test_a_later_exec_starts_srun_before_the_state_answers(srun: Path) -> None:
    # The second state answers only once the second srun has started: asked first, it would wait.
    state_of, asked = states(run_state(), run_state(), srun=srun, waits={2: 2})
    starts = ExecStarts(state_of=state_of)
    spec = exec_spec(JOB, ["echo", "hi"], tty=False, size=None)
    first, _ = await starts.start(spec, env_of(srun))
    await output_of(first)
    await first.stop()
    second, checked = await asyncio.wait_for(starts.start(spec, env_of(srun)), 2)
    try:
        await asyncio.wait_for(checked, 10)
        assert started(srun) == [WORK, WORK]
        assert asked == [JOB, JOB]
        assert await output_of(second) == [StdoutData(b"hi\n"), Exited(0)]
    finally:
        await second.stop()


async def sleep_after_a_first_exec(starts: ExecStarts, srun: Path) -> tuple[Execution, asyncio.Future[None]]:
    """One exec run to its end (the job's directory known), then ``sleep 30`` started."""
    first, _ = await starts.start(exec_spec(JOB, ["true"], tty=False, size=None), env_of(srun))
    await output_of(first)
    await first.stop()
    return await starts.start(exec_spec(JOB, ["sleep", "30"], tty=False, size=None), env_of(srun))


async def test_a_later_exec_into_a_job_that_ended_is_refused_and_its_srun_stopped(srun: Path) -> None:
    cancelled = run_state(JobStatus.CANCELLED, "None")
    state_of, asked = states(run_state(), cancelled, cancelled, srun=srun, waits={2: 2})
    starts = ExecStarts(state_of=state_of)
    second, checked = await sleep_after_a_first_exec(starts, srun)
    with pytest.raises(FailedPrecondition) as refused:
        await checked
    assert refused.value.message == "exec: job 42 is CANCELLED: a command runs only in a running job"
    assert await second.stop() == "terminated"
    # Forgotten: the next exec into the job asks first, and starts no srun.
    with pytest.raises(FailedPrecondition):
        await starts.start(exec_spec(JOB, ["true"], tty=False, size=None), env_of(srun))
    assert started(srun) == [WORK, WORK]
    assert asked == [JOB, JOB, JOB]


async def test_a_later_exec_into_another_job_under_the_same_id_is_refused(srun: Path) -> None:
    state_of, _ = states(run_state(), run_state(working_dir="/elsewhere"), srun=srun, waits={2: 2})
    second, checked = await sleep_after_a_first_exec(ExecStarts(state_of=state_of), srun)
    with pytest.raises(FailedPrecondition) as refused:
        await checked
    assert refused.value.message == (
        "exec: job 42 is not the job red-box knew (its working directory changed): try again"
    )
    assert await second.stop() == "terminated"
