"""How red-box starts an exec's srun: the job's state checked, beside srun once the job is known.

An exec runs only in a running job, and in the job's working directory
(``srun --chdir``), which only the job's state tells. The first exec into a
job asks the state, refuses a job that does not run (NotFound,
FailedPrecondition, the state named), then spawns srun. A running job's
working directory does not change, so red-box remembers it (the last
``KNOWN`` jobs): a later exec into the same job spawns srun at once and asks
the state while srun starts, instead of before (a slurmrestd round trip, a
few ms of every ``kubectl exec``). The session's Started goes at once, but
none of the command's output before the state is in (``service`` awaits the
check first): a job found not running (or no longer the one remembered) is
refused with the same words as before, after Started instead of before, and
its srun stopped; srun itself cannot run a command in a job that does not run.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping

import structlog

from wlmvk.core.errors import FailedPrecondition, NotFound
from wlmvk.core.execs import ExecSpec
from wlmvk.core.jobs import JobId, JobState, JobStatus
from wlmvk.redbox.slurm.processes.executing import Execution

_log = structlog.get_logger(__name__)

KNOWN = 1024
"""Running jobs whose working directory red-box remembers for their next exec."""

StateOf = Callable[[JobId], Awaitable[JobState]]


def running(job_id: JobId, state: JobState) -> JobState:
    """``state`` when the job runs; else the refusal the client hears."""
    if state.status is JobStatus.NOT_FOUND:
        raise NotFound(f"exec: job {job_id} is unknown to Slurm and red-box")
    if state.status is not JobStatus.RUNNING:
        why = f" ({state.reason})" if state.reason and state.reason != "None" else ""
        raise FailedPrecondition(
            f"exec: job {job_id} is {state.status.value}{why}: a command runs only in a running job"
        )
    return state


class ExecStarts:
    """Starts execs (``start``); remembers the working directory of the jobs it found running."""

    def __init__(self, *, state_of: StateOf, known: int = KNOWN) -> None:
        self._state_of = state_of
        self._known = known
        self._dirs: OrderedDict[JobId, str] = OrderedDict()

    async def start(
        self, spec: ExecSpec, env: Mapping[str, str] | None
    ) -> tuple[Execution, asyncio.Future[None]]:
        """srun started in the job ``spec`` names, and the job's check: done at once on a job's
        first exec (a job that does not run is refused before srun), else the state asked beside
        srun's start, which raises the refusal. The caller awaits the check before it passes on
        any output, and stops the execution in any case."""
        job_id = spec.job_id
        known = self._dirs.get(job_id)
        if known is None:
            state = running(job_id, await self._state_of(job_id))
            _log.debug("exec: state checked", job_id=job_id)
            self._remember(job_id, state.working_dir)
            checked: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            checked.set_result(None)
            return await _started(Execution(spec, working_dir=state.working_dir, env=env)), checked
        checked = asyncio.ensure_future(self._check(job_id, known))
        try:
            execution = await _started(Execution(spec, working_dir=known, env=env))
        except BaseException:
            checked.cancel()
            with contextlib.suppress(BaseException):
                await checked
            raise
        return execution, checked

    async def _check(self, job_id: JobId, known: str) -> None:
        """The job still runs, and is the one whose working directory srun was given."""
        try:
            state = running(job_id, await self._state_of(job_id))
            if state.working_dir != known:
                raise FailedPrecondition(
                    f"exec: job {job_id} is not the job red-box knew (its working directory changed):"
                    " try again"
                )
        except BaseException:
            self._dirs.pop(job_id, None)
            raise
        _log.debug("exec: state checked", job_id=job_id)
        self._dirs.move_to_end(job_id)

    def _remember(self, job_id: JobId, working_dir: str) -> None:
        self._dirs[job_id] = working_dir
        while len(self._dirs) > self._known:
            self._dirs.popitem(last=False)


async def _started(execution: Execution) -> Execution:
    try:
        await execution.start()
    except BaseException:
        await execution.stop()
        raise
    _log.debug("exec: srun spawned", job_id=execution.spec.job_id)
    return execution
