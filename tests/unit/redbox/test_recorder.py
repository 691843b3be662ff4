"""red-box's end-of-job recorder survives an unexpected failure of one look at Slurm (issue 14)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from tests.unit.redbox.test_jobs import ScriptedSlurm, done
from wlmvk.core.jobs import JobId, JobState, JobStatus
from wlmvk.redbox.app import recorder
from wlmvk.redbox.files import Confinement
from wlmvk.redbox.jobs import Jobs
from wlmvk.redbox.store import Store


class BreaksOnce(ScriptedSlurm):
    """squeue fails once with an error nobody planned for, then answers."""

    def __init__(self) -> None:
        super().__init__()
        self.broken = True

    async def queue(self, job_ids: Sequence[JobId] | None = None) -> list[JobState]:
        if self.broken:
            self.broken = False
            raise RuntimeError("something new")
        return await super().queue(job_ids)


async def test_the_recorder_keeps_recording_after_an_unexpected_exception(tmp_path: Path) -> None:
    slurm = BreaksOnce()
    store = Store(tmp_path / "state")
    store.open()
    confinement = Confinement(tmp_path, [tmp_path])
    jobs = Jobs(slurm=slurm, store=store, confinement=confinement, max_script_bytes=1000, base_env={})  # type: ignore[arg-type]
    store.track(JobId(7))
    slurm.queued = {JobId(7): done(7, JobStatus.FAILED, 3)}
    task = asyncio.ensure_future(recorder(jobs, 0.01))
    try:
        for _ in range(500):
            recorded = store.get(JobId(7))
            if task.done() or (recorded is not None and recorded.status.terminal):
                break
            await asyncio.sleep(0.01)
        assert not task.done(), f"the recorder ended: {task.exception()!r}"
        assert not slurm.broken
        recorded = store.get(JobId(7))
        assert recorded is not None
        assert (recorded.status, recorded.exit_code) == (JobStatus.FAILED, 3)
    finally:
        task.cancel()
        store.close()
