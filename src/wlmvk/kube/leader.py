"""Leader election over a coordination.k8s.io/v1 Lease, as client-go does it.

Replicas of a controller compete for one Lease. The holder renews it every
``renew_interval``; the others watch its ``renewTime`` change. A candidate
judges expiry by its *own* clock: a Lease whose holder and renewTime have not
changed for ``duration`` seconds since this process last saw them change is
free to take, so clock skew between hosts does not matter. Taking and
renewing are PUTs carrying the resourceVersion that was read: of two
candidates racing for an expired Lease, one gets 409 Conflict and keeps
waiting.

``Elector.acquire()`` returns once this process leads; ``Elector.hold()``
renews until leadership is lost (it then returns, and the caller must stop
leading at once) or is cancelled; ``release()`` hands the Lease back so the
next candidate need not wait for expiry.

Fencing: ``holds()`` says whether this process may still write as the
holder. A renewal sent at ``t`` keeps the Lease ours at most until
``t + duration`` on our CLOCK_BOOTTIME (a candidate starts counting only
after it saw that renewal, and CLOCK_BOOTTIME runs on while the process is
stopped, the machine suspended or the VM paused, where CLOCK_MONOTONIC
stops: a holder frozen by SIGSTOP, a partition or a suspend finds its proof
expired the moment it runs again). ``fence_margin`` is kept back from that
bound for the clocks' drift and the write's own trip. ``check()`` raises
``Fenced`` once the proof is gone, else says how long it lasts: callers put
it before every write and bound the write by it. ``transitions`` (the
Lease's ``leaseTransitions`` when this process took it) is the holder's
fencing token: each takeover raises it, so a later holder's is higher.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import structlog

from wlmvk.core.errors import Conflict, NotFound, Unavailable, WlmvkError
from wlmvk.kube import objects
from wlmvk.kube.bodies import LEASES, Body
from wlmvk.kube.client import KubeClient
from wlmvk.kube.errors import AlreadyExists
from wlmvk.kube.leases import lease_body
from wlmvk.kube.times import micro_time

_log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class ElectionConfig:
    name: str
    namespace: str
    identity: str
    duration: int = 15  # seconds a Lease stays valid without renewal
    renew_interval: float = 5.0  # the holder renews this often
    retry_interval: float = 2.0  # a candidate looks again this often
    fence_margin: float = 2.0  # seconds before the bound of its last renewal a holder stops writing


def boottime() -> float:
    """Seconds on CLOCK_BOOTTIME: monotonic, and running on through a suspend (see Fencing above)."""
    return time.clock_gettime(time.CLOCK_BOOTTIME)


class Fenced(Unavailable):
    """This process no longer holds the Lease: it must not write (retrying is the new holder's job)."""


def valid_until(sent: float, config: ElectionConfig) -> float:
    """The CLOCK_BOOTTIME time up to which a renewal sent at ``sent`` lets its holder write."""
    return sent + config.duration - config.fence_margin


class Elector:
    def __init__(self, client: KubeClient, config: ElectionConfig) -> None:
        self._client = client
        self._config = config
        self._observed: tuple[str, str] | None = None  # (holder, renewTime) last seen
        self._observed_at = 0.0
        self._lease: Body | None = None
        self._valid_until = 0.0
        self.log = _log.bind(lease=config.name, identity=config.identity)

    @property
    def leading(self) -> bool:
        return self._lease is not None and self._holder(self._lease) == self._config.identity

    @property
    def scope(self) -> str:
        """The Lease, ``<namespace>/<name>``: what ``transitions`` counts."""
        return f"{self._config.namespace}/{self._config.name}"

    @property
    def transitions(self) -> int:
        """The held Lease's ``leaseTransitions``: this holder's fencing token (higher is newer)."""
        return int(objects.spec(self._lease or {}).get("leaseTransitions") or 0)

    def holds(self) -> bool:
        """Whether this process may write as the holder now (see Fencing above)."""
        return self.leading and boottime() < self._valid_until

    def check(self) -> float:
        """Seconds this process may still write as the holder; raise ``Fenced`` when none."""
        left = self._valid_until - boottime()
        if not self.leading or left <= 0:
            raise Fenced(f"not the holder of Lease {self.scope}: write refused")
        return left

    async def acquire(self) -> None:
        """Wait until this process holds the Lease."""
        while not await self.try_acquire():
            await asyncio.sleep(self._config.retry_interval)
        self.log.info("became leader")

    async def try_acquire(self) -> bool:
        """One attempt to take (or keep) the Lease."""
        config = self._config
        try:
            lease = await self._client.get(LEASES, config.name, namespace=config.namespace)
        except NotFound:
            body = lease_body(config.name, config.namespace, holder=config.identity, duration=config.duration)
            body["spec"]["leaseTransitions"] = 0
            sent = boottime()
            try:
                self._lease = await self._client.create(LEASES, body, namespace=config.namespace)
            except (AlreadyExists, Conflict):
                return False
            self._valid_until = valid_until(sent, config)
            return True
        except WlmvkError as exc:
            self.log.warning("cannot read the leader Lease", error=str(exc))
            return False
        self._observe(lease)
        holder = self._holder(lease)
        if holder and holder != config.identity and not self._expired(lease):
            self._lease = None  # someone else leads
            return False
        spec = dict(objects.spec(lease))
        now = micro_time()
        if holder != config.identity:
            spec["acquireTime"] = now
            spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
            self.log.info("taking over the Lease", previous=holder or None)
        spec.update(holderIdentity=config.identity, leaseDurationSeconds=config.duration, renewTime=now)
        sent = boottime()
        if not await self._put(lease, spec):
            return False
        self._valid_until = valid_until(sent, config)
        return True

    async def advance(self, at_least: int) -> bool:
        """Raise the held Lease's ``leaseTransitions`` to ``at_least``; whether it was.

        For a Lease deleted and made again, whose count restarted below what others have seen
        of it. A PUT with the resourceVersion read: a holder replaced meanwhile gets 409 and
        raises nothing.
        """
        if self._lease is None or not self.holds() or self.transitions >= at_least:
            return False
        spec = {**objects.spec(self._lease), "leaseTransitions": at_least}
        if not await self._put(self._lease, spec):
            return False
        self.log.warning("Lease transitions raised above a count seen elsewhere", transitions=at_least)
        return True

    async def hold(self) -> None:
        """Renew until leadership is lost (returns) or the task is cancelled."""
        config = self._config
        deadline = boottime() + config.duration
        while True:
            await asyncio.sleep(config.renew_interval)
            if await self.try_acquire():
                deadline = boottime() + config.duration
                continue
            if self._lease is None:
                self.log.warning("leadership lost to another holder")
                return
            if boottime() >= min(deadline, self._valid_until):
                self.log.warning("could not renew the Lease in time: leadership lost")
                self._lease = None
                return

    async def release(self) -> None:
        """Give the Lease up (holder cleared, 1 s duration) so that a successor takes it at once."""
        if not self.leading or self._lease is None:
            return
        spec = dict(objects.spec(self._lease))
        spec.update(holderIdentity="", leaseDurationSeconds=1, renewTime=micro_time())
        try:
            await self._put(self._lease, spec)
        except WlmvkError as exc:
            self.log.warning("cannot release the Lease", error=str(exc))
        self._lease = None
        self._valid_until = 0.0
        self.log.info("released leadership")

    async def _put(self, lease: Body, spec: Body) -> bool:
        config = self._config
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                **objects.meta(lease),
                "resourceVersion": objects.resource_version(lease),
            },
            "spec": spec,
        }
        try:
            self._lease = await self._client.replace(LEASES, config.name, body, namespace=config.namespace)
        except (Conflict, NotFound):
            return False
        except WlmvkError as exc:
            self.log.warning("cannot write the leader Lease", error=str(exc))
            return False
        self._observe(self._lease)
        return self.leading

    def _observe(self, lease: Body) -> None:
        spec = objects.spec(lease)
        record = (str(spec.get("holderIdentity") or ""), str(spec.get("renewTime") or ""))
        if record != self._observed:
            self._observed = record
            self._observed_at = boottime()

    def _expired(self, lease: Body) -> bool:
        duration = int(objects.spec(lease).get("leaseDurationSeconds") or self._config.duration)
        return boottime() - self._observed_at > duration

    @staticmethod
    def _holder(lease: Body) -> str:
        return str(objects.spec(lease).get("holderIdentity") or "")
