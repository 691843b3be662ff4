"""The client's side of ObserveStates and FollowJobs (``core.backend.Observer``; red-box's side:
``redbox.observing``), a part of ``RedBoxClient``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, TypeVar

from wlmvk._proto import api
from wlmvk.core.backend import Observation
from wlmvk.core.errors import Unsupported
from wlmvk.core.jobs import JobId
from wlmvk.wire import codec

T = TypeVar("T")


class _Calls(Protocol):
    async def _has(self, extension: str) -> bool: ...

    def _lacks(self, extension: str) -> None: ...

    async def _call(
        self, rpc: str, call: Callable[[api.WorkloadManagerStub], Awaitable[T]], *, retry: bool = True
    ) -> T: ...


class Observing:
    async def observe(self: _Calls, job_ids: Sequence[JobId]) -> Observation:
        """ObserveStates; Unsupported from a red-box without it (an original, an older one)."""
        if not await self._has("ObserveStates"):
            raise Unsupported("ObserveStates: this red-box reads only its own user's jobs")
        request = api.JobStatesRequest(job_ids=list(dict.fromkeys(job_ids)))
        try:
            wire = await self._call("ObserveStates", lambda s: s.observe_states(request))
        except Unsupported:
            self._lacks("ObserveStates")
            raise
        seen = ((o.user, codec.state_from_wire(o.state)) for o in wire.states)
        return Observation({state.job_id: (user, state) for user, state in seen}, wire.own_user)

    async def follow(self: _Calls, job_ids: Sequence[JobId]) -> None:
        """FollowJobs; Unsupported from a red-box without it."""
        if not await self._has("FollowJobs"):
            raise Unsupported("FollowJobs: this red-box's recorder cannot be told")
        request = api.JobStatesRequest(job_ids=list(dict.fromkeys(job_ids)))
        try:
            await self._call("FollowJobs", lambda s: s.follow_jobs(request))
        except Unsupported:
            self._lacks("FollowJobs")
            raise
