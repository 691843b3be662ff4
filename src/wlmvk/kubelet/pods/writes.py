"""A pod's status written by the pod controller, pinned to the pod it last read.

The write carries the record's uid and the resourceVersion last seen of the pod: a kubelet
replaced by a standby while this write was on its way (``--leader-elect``: stopped after its
Lease check passed) gets 409 Conflict once the successor wrote the pod, instead of putting an
older status back. On a conflict the pod is read again and the write tried again (through the
fence, which refuses it from a replaced holder); a pod of that name with another uid is not the
record's, and the record is gone.
"""

from __future__ import annotations

from collections.abc import Callable

from wlmvk.core.errors import Conflict, InvalidInput, NotFound, Unavailable
from wlmvk.kube import objects
from wlmvk.kube.bodies import PODS, Body
from wlmvk.kube.client import KubeClient
from wlmvk.kubelet.pods.records import PodRecord, slim

# A status write pinned to a resourceVersion that another write overtook is read again and tried
# again this many times in a row before the sync retries later.
CONFLICT_TRIES = 5


class PodWrites:
    """The pinned status write and the re-read of a record's pod (``gone``: the record's pod is not there)."""

    def __init__(
        self, client: KubeClient, *, gone: Callable[[PodRecord], None], written: Callable[[], None]
    ) -> None:
        self._client = client
        self._gone = gone
        self._written = written

    async def patch_status(self, record: PodRecord, body: Body) -> None:
        """Write the pod's status, pinned to the resourceVersion last seen of the pod."""
        status = {"reason": None, "message": None, **body}
        for _ in range(CONFLICT_TRIES):
            seen = objects.resource_version(record.pod)
            pin = {"uid": record.uid, "resourceVersion": seen} if seen else {"uid": record.uid}
            patch = {"metadata": pin, "status": status}
            try:
                updated = await self._client.patch_status(
                    PODS, record.name, patch, namespace=record.namespace
                )
            except NotFound:
                self._gone(record)
                return
            except (Conflict, InvalidInput) as exc:
                fresh = await self.fresh(record)
                if fresh is None:
                    return
                if isinstance(exc, InvalidInput):
                    raise
                record.pod = slim(fresh)
                continue
            self._written()
            if objects.uid(updated) == record.uid:
                record.pod = slim(updated)
            return
        raise Unavailable(f"the pod's status: 409 Conflict {CONFLICT_TRIES} times in a row")

    async def fresh(self, record: PodRecord) -> Body | None:
        """The record's pod read again; None (and the record gone) when the name has another uid or none."""
        try:
            fresh = await self._client.get(PODS, record.name, namespace=record.namespace)
        except NotFound:
            fresh = {}
        if objects.uid(fresh) != record.uid:
            self._gone(record)
            return None
        return fresh
