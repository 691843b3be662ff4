"""The cluster's SlurmTenants, mirrored by a list+watch for the kubelet and the operator.

``TenantWatch.book`` is what ``core.tenancy`` decides by; ``synced`` is set once it is known.
Until then neither app may run a job: whether tenancy is on is not known yet, and a job run as
red-box's own user in a mapped namespace would be the escape tenancy exists to prevent.

A cluster without the SlurmTenant CRD has no tenants (the API answers 404 for the collection):
the book is empty and synced, and the collection is looked at again every ``recheck`` seconds,
so that installing the CRD and a first SlurmTenant turns tenancy on without a restart. Any other
failure to read (403 without ``manifests/tenants.yaml``, the API server down) leaves ``synced``
as it was and is retried: nothing runs on a guess.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import structlog

from wlmvk.core.errors import NotFound, WlmvkError
from wlmvk.core.names import GROUP, VERSION
from wlmvk.kube import objects
from wlmvk.kube.bodies import Body, Resource
from wlmvk.kube.client import KubeClient
from wlmvk.kube.watching import Changed, Listed, WatchOptions, watch
from wlmvk.slurm import tenancy

_log = structlog.get_logger(__name__)

SLURMTENANTS = Resource(GROUP, VERSION, tenancy.PLURAL, namespaced=False, kind=tenancy.KIND)


@dataclass(kw_only=True)
class TenantWatch:
    client: KubeClient
    recheck: float = 30.0
    """Seconds between looks for the CRD while the cluster has none."""
    book: tenancy.Book = field(default_factory=tenancy.Book, init=False)
    synced: asyncio.Event = field(default_factory=asyncio.Event, init=False)
    changed: asyncio.Event = field(default_factory=asyncio.Event, init=False)
    """Set at each change of the objects read; whoever waits on it clears it."""
    _bodies: dict[str, Body] = field(default_factory=dict, init=False)

    async def run(self) -> None:
        """Mirror the SlurmTenants until cancelled."""
        while True:
            try:
                await self.client.list(SLURMTENANTS, limit=1)
            except NotFound:
                if self._bodies or not self.synced.is_set():
                    _log.info("no SlurmTenant resource in this cluster: tenancy is off")
                self._take({})
                await asyncio.sleep(self.recheck)
                continue
            except WlmvkError as exc:
                _log.warning("SlurmTenants cannot be read; no job runs until they can", error=exc.message)
                await asyncio.sleep(min(self.recheck, 5.0))
                continue
            async for event in watch(self.client, SLURMTENANTS, WatchOptions()):
                if isinstance(event, Listed):
                    self._take({objects.name(body): body for body in event.items})
                elif isinstance(event, Changed):
                    bodies = dict(self._bodies)
                    if event.type == "DELETED":
                        bodies.pop(objects.name(event.object), None)
                    else:
                        bodies[objects.name(event.object)] = event.object
                    self._take(bodies)

    @property
    def bodies(self) -> dict[str, Body]:
        """The SlurmTenant objects read, by name."""
        return dict(self._bodies)

    def _take(self, bodies: dict[str, Body]) -> None:
        if bodies != self._bodies:
            self.changed.set()
        self._bodies = bodies
        book = tenancy.tenants_from(bodies.values())
        if book != self.book:
            _log.info(
                "SlurmTenants read",
                tenancy=book.on,
                tenants=[tenant.name for tenant in book.tenants],
                invalid=dict(book.unreadable or {}),
            )
        self.book = book
        self.synced.set()
