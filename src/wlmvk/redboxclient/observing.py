"""The client's side of ObserveStates, FollowJobs (``core.backend.Observer``) and
ObserveAssociations (the SlurmTenants' status); red-box's side: ``redbox.observing``. A part of
``RedBoxClient``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, TypeVar

from wlmvk._proto import api
from wlmvk.core.backend import Observation
from wlmvk.core.errors import Unsupported
from wlmvk.core.jobs import JobId
from wlmvk.slurm.tenantstatus import AssociationLook
from wlmvk.wire import associations, codec

T = TypeVar("T")


class _Calls(Protocol):
    async def _has(self, extension: str) -> bool: ...

    def _lacks(self, extension: str) -> None: ...

    async def _call(
        self, rpc: str, call: Callable[[api.WorkloadManagerStub], Awaitable[T]], *, retry: bool = True
    ) -> T: ...


async def _added(
    calls: _Calls, rpc: str, lacking: str, call: Callable[[api.WorkloadManagerStub], Awaitable[T]]
) -> T:
    """One of wlmvk's added rpcs: Unsupported (``lacking``) from a red-box that does not say it
    serves it; its UNIMPLEMENTED remembered."""
    if not await calls._has(rpc):
        raise Unsupported(f"{rpc}: {lacking}")
    try:
        return await calls._call(rpc, call)
    except Unsupported:
        calls._lacks(rpc)
        raise


class Observing:
    async def observe(self: _Calls, job_ids: Sequence[JobId]) -> Observation:
        """ObserveStates; Unsupported from a red-box without it (an original, an older one)."""
        request = api.JobStatesRequest(job_ids=list(dict.fromkeys(job_ids)))
        wire = await _added(
            self,
            "ObserveStates",
            "this red-box reads only its own user's jobs",
            lambda s: s.observe_states(request),
        )
        seen = ((o.user, codec.state_from_wire(o.state)) for o in wire.states)
        return Observation({state.job_id: (user, state) for user, state in seen}, wire.own_user)

    async def follow(self: _Calls, job_ids: Sequence[JobId]) -> None:
        """FollowJobs; Unsupported from a red-box without it."""
        request = api.JobStatesRequest(job_ids=list(dict.fromkeys(job_ids)))
        await _added(
            self, "FollowJobs", "this red-box's recorder cannot be told", lambda s: s.follow_jobs(request)
        )

    async def observe_associations(self: _Calls, users: Sequence[str]) -> AssociationLook:
        """ObserveAssociations: what Slurm knows of ``users``, one look; Unsupported from a
        red-box without it."""
        request = api.ObserveAssociationsRequest(users=list(dict.fromkeys(users)))
        wire = await _added(
            self,
            "ObserveAssociations",
            "this red-box answers about its own user only",
            lambda s: s.observe_associations(request),
        )
        return associations.look_from_wire(wire)
