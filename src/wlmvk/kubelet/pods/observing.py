"""One look at every followed job, whichever tenant user's red-box holds it.

With tenants (docs/tenancy.md) each tenant user's jobs are held by that user's red-box, and red-box
reads only its own user's jobs: a tick asking each holder costs Slurm one squeue (two RPCs) per
tenant user. ``StateLooks`` asks the default red-box instead, once per tick, for every job
followed (``ObserveStates``: one squeue with no user filter), and tells each tenant's red-box
which of its jobs were seen that way (``FollowJobs``, no Slurm RPC), so that its recorder does not
look at them again. A status tick then costs Slurm one squeue whatever the number of tenants.

What a look shows is only believed for a job whose owner is the user whose red-box holds it (the
default red-box's own user for its own jobs): a job id showing another owner is asked of its
holder, as is every job the look did not show (it left Slurm's queue: the holder reads its record
and accounting) and every claim (a job id found in an annotation is confirmed by its holder, which
sees only its own user's jobs). Nothing is acted on through a look: cancels and lookups by key
stay with the holder.

A site with ``PrivateData=jobs`` hides other users' jobs from the default red-box's user: the look
then misses jobs their holders still show queued. Seen once, it is logged once and the holders are
asked again for HIDDEN_RECHECK seconds, then a look is tried again.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import structlog

from wlmvk.core.backend import Observer
from wlmvk.core.errors import Unsupported, WlmvkError
from wlmvk.core.jobs import JobId, JobState, JobStatus

_log = structlog.get_logger(__name__)

HIDDEN_RECHECK = 600.0
"""Seconds of per-user looks after the default red-box's look missed a queued job of another user."""

_GONE = (JobStatus.NOT_FOUND, JobStatus.UNKNOWN)


def believed(
    wanted: Mapping[JobId, str], shown: Mapping[JobId, tuple[str, JobState]], own: str
) -> dict[JobId, JobState]:
    """The shown states that answer for their job: its owner is the user of the red-box holding it
    (``wanted``: each job's holder, '' for the default red-box, whose user is ``own``)."""
    believed: dict[JobId, JobState] = {}
    for job_id, holder in wanted.items():
        seen = shown.get(job_id)
        if seen is not None and seen[0] == (holder or own) and seen[0]:
            believed[job_id] = seen[1]
    return believed


def hidden(missed: Mapping[JobId, JobState]) -> list[JobId]:
    """Jobs a look did not show that their holder still shows in Slurm's queue."""
    return [
        job_id for job_id, state in missed.items() if not state.status.terminal and state.status not in _GONE
    ]


@dataclass(kw_only=True)
class StateLooks:
    observer: Observer
    """The default red-box, which looks."""
    followers: Mapping[str, Observer]
    """Each tenant user's red-box, told which of its jobs were seen."""
    _off_until: float = field(default=-math.inf, init=False)
    _unsupported: bool = field(default=False, init=False)
    _said_hidden: bool = field(default=False, init=False)

    @property
    def on(self) -> bool:
        return not self._unsupported and time.monotonic() >= self._off_until

    async def look(self, wanted: Mapping[JobId, str]) -> dict[JobId, JobState] | None:
        """The believed states of these jobs (each mapped to its holder), from one look; the
        tenants' red-boxes told which of theirs were seen. None when the look failed."""
        try:
            shown = await self.observer.observe(list(wanted))
        except Unsupported:
            self._unsupported = True
            _log.info("the default red-box cannot look at other users' jobs: each red-box is asked")
            return None
        except WlmvkError as exc:
            _log.warning("one look at every job failed: each red-box is asked", error=exc.message)
            return None
        states = believed(wanted, shown.states, shown.own_user)
        seen: dict[str, list[JobId]] = {}
        for job_id in states:
            holder = wanted[job_id]
            if holder and holder != shown.own_user and holder in self.followers:
                seen.setdefault(holder, []).append(job_id)
        await asyncio.gather(*(self._tell(user, job_ids) for user, job_ids in seen.items()))
        return states

    async def _tell(self, user: str, job_ids: list[JobId]) -> None:
        try:
            await self.followers[user].follow(job_ids)
        except WlmvkError as exc:
            # Its recorder then looks at them itself: one squeue more, nothing lost.
            _log.debug("could not tell a red-box its jobs are followed", user=user, error=exc.message)

    def check(self, missed: Mapping[JobId, JobState]) -> None:
        """The holders' answers for jobs the look did not show: a queued one means Slurm hides
        other users' jobs from the default red-box (PrivateData=jobs)."""
        jobs = hidden(missed)
        if not jobs:
            return
        self._off_until = time.monotonic() + HIDDEN_RECHECK
        if not self._said_hidden:
            self._said_hidden = True
            _log.warning(
                "Slurm hides other users' jobs from the default red-box (PrivateData=jobs?):"
                " each tenant user's red-box is asked for its own jobs' states",
                jobs=len(jobs),
                example=jobs[0],
                recheck_s=HIDDEN_RECHECK,
            )
