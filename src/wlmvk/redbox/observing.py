"""ObserveStates, FollowJobs and ObserveAssociations: one look at several users' jobs or
associations, for a client with tenants.

With tenants (docs/tenancy.md) the kubelet follows jobs of several Unix users, one red-box each.
Asking each red-box for its jobs' states costs Slurm one squeue per tenant user per tick;
``ObserveStates`` asks one red-box for all of them (one squeue without ``-u``, which shows
every user's jobs unless the site sets ``PrivateData=jobs``). It is a reading, never an act:
nothing of it is recorded (another user's job never enters red-box's record, key index or
recorder), and red-box acts (cancel, adopt by key) only on what its own user's ``-u`` queries
show. Whoever reads it decides whether the owner it names is the one it expected.

``FollowJobs`` tells a tenant's red-box that the client follows these of its jobs through
another red-box's ObserveStates: its recorder leaves them out for one poll interval, as after a
JobStates, and looks itself once the client stops (the job ended, or the client went away), so
their end is still recorded. It asks nothing of Slurm.

``ObserveAssociations`` answers what Slurm knows of several users' associations, and every QoS,
with two sacctmgr however many users (the SlurmTenants' status, ``slurm.tenantstatus``): a
reading of what any Slurm user may read, as red-box's own user sees it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from wlmvk._proto import api
from wlmvk.core.jobs import JobId, JobState
from wlmvk.redbox.answering import Inflight, unary
from wlmvk.redbox.jobs import Jobs
from wlmvk.redbox.slurm.cli import arrays
from wlmvk.redbox.slurm.cli.users import user_name
from wlmvk.wire import associations, codec


async def observe(jobs: Jobs, job_ids: Sequence[JobId]) -> list[tuple[str, JobState]]:
    """What Slurm shows of these jobs, whoever owns them, each with its owner (one squeue).

    A row squeue cannot tell exactly (an array's combined end, which accounting settles) is
    left out: the caller asks its owner's red-box. Red-box's own jobs seen count as looked at.
    """
    wanted = sorted({j for j in job_ids if j > 0})
    seen = [
        (user, state)
        for user, state in await jobs.slurm.observe(wanted)
        if not (arrays.combined(state) and state.status.terminal)
    ]
    own = user_name(jobs.slurm.user)
    jobs.follow([state.job_id for user, state in seen if user == own])
    return seen


class Observing:
    """The three rpcs, as a part of red-box's service."""

    jobs: Jobs
    inflight: Inflight
    _cluster_name: Callable[[], Awaitable[str]]

    @unary("ObserveStates", bind=lambda r: {"jobs": len(r.job_ids)})
    async def observe_states(self, job_states_request: api.JobStatesRequest) -> api.ObserveStatesResponse:
        seen = await observe(self.jobs, [JobId(i) for i in job_states_request.job_ids])
        return api.ObserveStatesResponse(
            states=[api.ObservedState(state=codec.state_to_wire(s), user=user) for user, s in seen],
            own_user=user_name(self.jobs.slurm.user),
        )

    @unary("FollowJobs", bind=lambda r: {"jobs": len(r.job_ids)})
    async def follow_jobs(self, job_states_request: api.JobStatesRequest) -> api.FollowJobsResponse:
        return api.FollowJobsResponse(
            followed=self.jobs.follow([JobId(i) for i in job_states_request.job_ids])
        )

    @unary("ObserveAssociations", bind=lambda r: {"users": len(r.users)})
    async def observe_associations(
        self, observe_associations_request: api.ObserveAssociationsRequest
    ) -> api.ObserveAssociationsResponse:
        users = list(observe_associations_request.users)
        look = await self.jobs.slurm.observe_associations(users, await self._cluster_name())
        return associations.look_to_wire(look)
