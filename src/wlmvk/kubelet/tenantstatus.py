"""The SlurmTenants' status on this kubelet's cluster: does Slurm know their user, account and QoS?

``TenantStatusWriter`` asks the default red-box (``--red-box-socket``) once per round what Slurm
knows of every due tenant's user (the ObserveAssociations rpc: two sacctmgr however many tenant
users, a reading of what any Slurm user may read), judges each tenant by it
(``slurm.tenantstatus``) and writes the tenant's entry for
this cluster in ``status.clusters``, with the summed ``Ready`` condition, through the status
subresource. Only a kubelet that runs writes (a standby waits for the Lease before anything
starts); several clusters' kubelets write one tenant each its own entry, by read, change and
replace with the object's resourceVersion: a write that lost a race (409) is read again and
redone, so no cluster's entry is overwritten by another's.

A tenant is checked when its kubelet starts, at once when its object changes (its generation;
no sooner than ``CHANGE_FLOOR`` after its last check), and every ``interval`` (60 s) otherwise.
The user's own red-box is asked only whether it answers (WorkloadInfo, which costs Slurm nothing
once that red-box has answered it: a tenant whose red-box is down reads Unknown, and the
red-box is ready before the tenant's first pod). A user the look cannot tell of
(``tenantstatus.seen``: the site's PrivateData may hide it), or
every user when the default red-box has no ObserveAssociations (an original, an older one) or
it failed, is asked of its own red-box (``--red-box USER=SOCKET``; the Associations rpc, which
answers about that red-box's own user only): at most once per round, however many tenants
share the user. A tenant that allows no partition of this cluster is not this cluster's to judge.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog

from wlmvk.core.errors import Conflict, NotFound, Unsupported, WlmvkError
from wlmvk.core.jobs import WorkloadInfo
from wlmvk.kube import objects, times
from wlmvk.kube.client import KubeClient
from wlmvk.kube.tenants import SLURMTENANTS, TenantWatch
from wlmvk.slurm import tenancy, tenantstatus
from wlmvk.slurm.tenantstatus import AssociationLook, Associations, Condition

_log = structlog.get_logger(__name__)

CHANGE_FLOOR = 5.0
"""Seconds between two checks of one tenant however often its object changes."""


class AssociationSource(Protocol):
    async def associations(self, user: str) -> Associations: ...

    async def info(self) -> WorkloadInfo: ...


class AssociationObserver(Protocol):
    async def observe_associations(self, users: Sequence[str]) -> AssociationLook: ...


@dataclass(kw_only=True)
class TenantStatusWriter:
    client: KubeClient
    watch: TenantWatch
    cluster: str
    red_boxes: Mapping[str, AssociationSource]
    observer: AssociationObserver | None = None
    """The default red-box, asked about every due tenant's user at once."""
    interval: float = 60.0
    clock: Callable[[], float] = time.monotonic
    _checked: dict[str, tuple[int, float]] = field(default_factory=dict, init=False)
    """Per tenant name: the generation last written and when (monotonic)."""

    async def run(self) -> None:
        """Check and write until cancelled."""
        await self.watch.synced.wait()
        while True:
            self.watch.changed.clear()
            wait = await self.round()
            try:
                await asyncio.wait_for(self.watch.changed.wait(), timeout=wait)
            except TimeoutError:
                pass

    async def round(self) -> float:
        """Check the tenants due now; the seconds until the next is due."""
        bodies, now = self.watch.bodies, self.clock()
        book = tenancy.tenants_from(bodies.values())
        tenants = {t.name: t for t in book.tenants}
        due: dict[str, int] = {}
        soonest = self.interval
        for name, body in bodies.items():
            generation = objects.generation(body)
            last = self._checked.get(name)
            if last is None:
                next_at = now
            elif last[0] != generation:
                next_at = last[1] + CHANGE_FLOOR
            else:
                next_at = last[1] + self.interval
            if next_at <= now:
                due[name] = generation
            else:
                soonest = min(soonest, next_at - now)
        wanted = {
            tenants[name].user
            for name in due
            if name in tenants
            and tenants[name].allowed_partitions(self.cluster) != ()
            and tenants[name].user in self.red_boxes
        }
        look = await self._look(wanted)
        answers: dict[str, Associations | Condition] = {}
        for name, generation in due.items():
            tenant = tenants.get(name)
            if tenant is not None and tenant.allowed_partitions(self.cluster) == ():
                self._checked[name] = (generation, now)
                continue  # no partition here: another cluster's to judge
            if tenant is None:
                why = (book.unreadable or {}).get(name, "unreadable")
                conditions = tenantstatus.unchecked("InvalidSpec", why, ready="False")
            else:
                if tenant.user not in answers:
                    answers[tenant.user] = await self._ask(tenant.user, look)
                known = answers[tenant.user]
                conditions = (
                    tenantstatus.judge(tenant, known, cluster=self.cluster)
                    if isinstance(known, Associations)
                    else tenantstatus.unchecked(known.reason, known.message, ready=known.status)
                )
            if await self._write(name, generation, conditions):
                self._checked[name] = (generation, now)
        for name in set(self._checked) - set(bodies):
            del self._checked[name]
        return soonest

    async def _look(self, users: set[str]) -> AssociationLook | None:
        """What the default red-box sees of ``users`` (one look), or None: each is asked of its own."""
        if self.observer is None or not users:
            return None
        try:
            return await self.observer.observe_associations(sorted(users))
        except Unsupported:
            return None
        except WlmvkError as exc:
            _log.warning("associations not observed; each tenant user's red-box is asked", error=exc.message)
            return None

    async def _ask(self, user: str, look: AssociationLook | None) -> Associations | Condition:
        """``user``'s associations from the look, else from its red-box, or why they cannot be known."""
        red_box = self.red_boxes.get(user)
        if red_box is None:
            why = f"user {user} has no red-box on this kubelet (the site's --red-box {user}=SOCKET)"
            return Condition("", "False", "NoRedBox", why)
        known = tenantstatus.seen(look, user) if look is not None else None
        if known is not None:
            try:
                await red_box.info()  # the user's own red-box answers: Slurm is asked nothing once it has
            except WlmvkError as exc:
                return Condition("", "Unknown", "CheckFailed", exc.message)
            return known
        try:
            return await red_box.associations(user)
        except Unsupported as exc:
            return Condition("", "Unknown", "Unsupported", exc.message)
        except WlmvkError as exc:
            return Condition("", "Unknown", "CheckFailed", exc.message)

    async def _write(self, name: str, generation: int, conditions: list[Condition]) -> bool:
        """This cluster's entry of ``name``'s status written; False when it could not be."""
        for _ in range(5):
            try:
                body = await self.client.get(SLURMTENANTS, name)
            except NotFound:
                return True  # deleted meanwhile
            except WlmvkError as exc:
                _log.warning("SlurmTenant unreadable; its status waits", tenant=name, error=exc.message)
                return False
            if objects.generation(body) != generation:
                return False  # changed again: the next round judges the new spec
            now = times.rfc3339()
            old = objects.status(body)
            previous = next(
                (
                    e
                    for e in old.get("clusters") or []
                    if isinstance(e, dict) and e.get("cluster") == self.cluster
                ),
                None,
            )
            mine = tenantstatus.entry(self.cluster, generation, conditions, previous=previous, now=now)
            new: dict[str, Any] = {**body, "status": tenantstatus.status(old, mine, generation, now=now)}
            try:
                await self.client.replace(SLURMTENANTS, name, new, subresource="status")
            except Conflict:
                continue
            except NotFound:
                return True
            except WlmvkError as exc:
                _log.warning("SlurmTenant status not written", tenant=name, error=exc.message)
                return False
            _log.info("SlurmTenant status written", tenant=name, cluster=self.cluster, **_ready(conditions))
            return True
        return False


def _ready(conditions: list[Condition]) -> dict[str, str]:
    last = conditions[-1]
    return {"ready": last.status, "reason": last.reason}
