"""The operator's I/O loop: mirror the cluster, queue keys, apply decisions.

Four watches keep an in-memory mirror: SlurmJobs, WlmJobs, the pods the
operator made (label ``app.kubernetes.io/managed-by=wlmvk-operator``) and the
virtual nodes. Each change queues the key of the resource concerned (a
pod's controller owner; every unfinished resource for a node change). A pod
change that does not end the pod queues its owner ``pod_batch_period`` later,
as the Job controller of kube-controller-manager batches pod updates: a pod's
binding, job id and first status, which come within a fraction of a second,
then make one status write, not three. A pod that ended or was deleted
queues its owner at once, so completion is reported without delay.
``workers`` take keys at once (the queue hands a key to one worker at a
time, so each resource is decided and acted on by one), ask
``reconcile.decide`` what to do and do it. Work starts only once every
mirror has been listed, so a restarted operator decides from the full
picture. A periodic resync queues
everything again, in case an event was missed.

What the worker does is written back into the mirror at once (a created
pod, a patched status), so the next decision never repeats an action the
watch has not echoed yet; the echo itself (the same resourceVersion) queues
nothing, so the batch of a pod's changes starts at its binding, not at the
operator's own create. A create that finds the pod already there (409) is
not an error.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import structlog

from wlmvk.core import names, tasks
from wlmvk.core.errors import FailedPrecondition, InvalidInput, NotFound, WlmvkError
from wlmvk.kube import objects, times
from wlmvk.kube.backoff import Backoff
from wlmvk.kube.bodies import NODES, PODS, Body, Resource
from wlmvk.kube.client import KubeClient
from wlmvk.kube.errors import AlreadyExists
from wlmvk.kube.events import EventPoster
from wlmvk.kube.tenants import TenantWatch
from wlmvk.kube.watching import Changed, Listed, WatchOptions, watch
from wlmvk.kube.workqueue import WorkQueue
from wlmvk.operator import pods, reconcile
from wlmvk.operator.settings import OperatorSettings

_log = structlog.get_logger(__name__)

SLURMJOBS = Resource(names.GROUP, names.VERSION, "slurmjobs", kind="SlurmJob")
WLMJOBS = Resource(names.GROUP, names.VERSION, "wlmjobs", kind="WlmJob")
RESOURCES = {"SlurmJob": SLURMJOBS, "WlmJob": WLMJOBS}

Key = tuple[str, str, str]  # kind, namespace, name


@dataclass
class Mirror:
    jobs: dict[Key, Body] = field(default_factory=dict)
    pods: dict[tuple[str, str], Body] = field(default_factory=dict)  # (namespace, name)
    nodes: dict[str, Body] = field(default_factory=dict)

    def owned(self, uid: str) -> list[Body]:
        return [pod for pod in self.pods.values() if objects.controller_uid(pod) == uid]


def _key(body: Body, kind: str) -> Key:
    return (kind, objects.namespace(body), objects.name(body))


class Controller:
    def __init__(self, client: KubeClient, settings: OperatorSettings) -> None:
        self.client = client
        self.settings = settings
        self.mirror = Mirror()
        self.events = EventPoster(client, component="wlmvk-operator", host=settings.identity)
        # A key whose reconcile fails is retried after 2 s, doubling to 1 min while it keeps failing.
        self._queue: WorkQueue[Key] = WorkQueue(base_delay=RETRY, max_delay=RETRY_MAX)
        self._synced: set[str] = set()
        self._ready = asyncio.Event()
        self._expected = 4
        # Resources whose pod the API server forbade: no create before ``until``, then the next delay.
        self._refusals: dict[Key, _Refusal] = {}
        self.tenants = TenantWatch(client=client)

    async def run(self) -> None:
        """Watch, and reconcile until cancelled."""
        namespace = self.settings.namespace or None
        managed = f"{pods.MANAGED_BY}={pods.OPERATOR}"
        virtual = f"{names.LABEL_TYPE}={names.TYPE_VIRTUAL_KUBELET}"
        served = await self._served()
        self._expected = len(served) + 2
        watchers = [
            tasks.guarded(self._mirror(kind, RESOURCES[kind], WatchOptions(namespace=namespace)), name=kind)
            for kind in served
        ]
        watchers += [
            tasks.guarded(
                self._mirror("Pod", PODS, WatchOptions(namespace=namespace, label_selector=managed)),
                name="pods",
            ),
            tasks.guarded(self._mirror("Node", NODES, WatchOptions(label_selector=virtual)), name="nodes"),
        ]
        resync = tasks.guarded(self._resync(), name="resync")
        watchers.append(tasks.guarded(self.tenants.run(), name="tenants"))
        try:
            await self._ready.wait()
            await self.tenants.synced.wait()  # whether tenancy is on: no pod is made on a guess
            _log.info("mirrors synced", jobs=len(self.mirror.jobs), pods=len(self.mirror.pods))
            self._enqueue_all()
            await self._working()
        finally:
            await tasks.stop(*watchers, resync)

    async def _served(self) -> list[str]:
        """The kinds whose CRD is installed (waiting until at least one is)."""
        backoff = Backoff(initial=1.0, maximum=30.0)
        while True:
            try:
                listing = await self.client.request("GET", f"/apis/{names.GROUP}/{names.VERSION}")
            except WlmvkError as exc:
                _log.warning(
                    "the wlm.sylabs.io CRDs are not served yet (apply manifests/crds)", error=str(exc)
                )
                await backoff.sleep()
                continue
            plurals = {str(r.get("name", "")) for r in listing.get("resources") or []}
            served = [kind for kind, resource in RESOURCES.items() if resource.plural in plurals]
            for kind in set(RESOURCES) - set(served):
                _log.warning("CRD not installed: these resources are ignored until a restart", kind=kind)
            if served:
                return served
            await backoff.sleep()

    # -- mirrors ------------------------------------------------------------------------------------------

    async def _mirror(self, kind: str, resource: Resource, options: WatchOptions) -> None:
        async for event in watch(self.client, resource, options):
            if isinstance(event, Listed):
                self._replace(kind, event.items)
                self._synced.add(kind)
                if len(self._synced) == self._expected:
                    self._ready.set()
            elif isinstance(event, Changed):
                self._apply(kind, event.type, event.object)

    def _replace(self, kind: str, items: Iterable[Body]) -> None:
        items = list(items)
        if kind in RESOURCES:
            for key in [k for k in self.mirror.jobs if k[0] == kind]:
                del self.mirror.jobs[key]
            for item in items:
                item.setdefault("kind", kind)
                self.mirror.jobs[_key(item, kind)] = item
                self._enqueue(_key(item, kind))
        elif kind == "Pod":
            self.mirror.pods = {(objects.namespace(p), objects.name(p)): p for p in items}
            self._enqueue_all()
        else:
            self.mirror.nodes = {objects.name(n): n for n in items}
            self._enqueue_all()

    def _apply(self, kind: str, type_: str, body: Body) -> None:
        if kind in RESOURCES:
            body.setdefault("kind", kind)
            key = _key(body, kind)
            if type_ == "DELETED":
                self.mirror.jobs.pop(key, None)
                return
            known = self.mirror.jobs.get(key)
            if _older(body, known) or _same(body, known):
                return  # an echo of what this process wrote (or has already written past)
            self.mirror.jobs[key] = body
            self._enqueue(key)
        elif kind == "Pod":
            where = (objects.namespace(body), objects.name(body))
            if type_ == "DELETED":
                self.mirror.pods.pop(where, None)
            elif _same(body, self.mirror.pods.get(where)):
                return  # the echo of a pod this process created: its owner has just been decided
            elif not _older(body, self.mirror.pods.get(where)):
                self.mirror.pods[where] = body
            ended = type_ == "DELETED" or objects.status(body).get("phase") in ("Succeeded", "Failed")
            for ref in objects.owner_references(body):
                if ref.get("controller") and ref.get("kind") in RESOURCES:
                    key = (str(ref["kind"]), where[0], str(ref.get("name", "")))
                    if ended:
                        self._enqueue(key)
                    else:
                        self._queue.add_after(key, self.settings.pod_batch_period)
        else:
            name = objects.name(body)
            if type_ == "DELETED":
                self.mirror.nodes.pop(name, None)
            else:
                self.mirror.nodes[name] = body
            self._enqueue_unfinished()

    # -- queue --------------------------------------------------------------------------------------------

    def _enqueue(self, key: Key) -> None:
        self._queue.add(key)

    def _enqueue_all(self) -> None:
        for key in list(self.mirror.jobs):
            self._enqueue(key)

    def _enqueue_unfinished(self) -> None:
        for key, body in list(self.mirror.jobs.items()):
            if objects.status(body).get("status") not in reconcile.TERMINAL:
                self._enqueue(key)

    async def _resync(self) -> None:
        while True:
            await asyncio.sleep(self.settings.resync_interval)
            if self._ready.is_set():
                self._enqueue_unfinished()

    async def _working(self) -> None:
        await asyncio.gather(*(self._work() for _ in range(self.settings.workers)))

    async def _work(self) -> None:
        while True:
            key = await self._queue.get()
            try:
                await self.handle(key)
            except WlmvkError as exc:
                delay = self._queue.add_rate_limited(key)
                _log.warning("reconcile failed, retrying", key="/".join(key), error=exc.message, after=delay)
            except Exception:  # a bug must not stop every other job: log it, retry later
                delay = self._queue.add_rate_limited(key)
                _log.exception("reconcile crashed, retrying", key="/".join(key), after=delay)
            else:
                self._queue.forget(key)
            finally:
                self._queue.done(key)

    # -- one decision -------------------------------------------------------------------------------------

    async def handle(self, key: Key) -> None:
        body = self.mirror.jobs.get(key)
        if body is None:
            return
        uid = objects.uid(body)
        actions = reconcile.decide(
            body,
            owned=self.mirror.owned(uid),
            nodes=list(self.mirror.nodes.values()),
            settings=self.settings,
            now=times.rfc3339(),
            tenants=self.tenants.book,
        )
        log = _log.bind(kind=key[0], namespace=key[1], name=key[2])
        refusal = self._refusals.get(key)
        loop = asyncio.get_running_loop()
        if (
            refusal is not None
            and loop.time() < refusal.until
            and any(isinstance(action, reconcile.CreatePod) for action in actions)
        ):
            return  # backing off: the retry is already scheduled
        for action in actions:
            if isinstance(action, reconcile.CreatePod):
                if not await self._create(key, body, action, log):
                    return  # refused: the rest of the plan no longer applies
            elif isinstance(action, reconcile.PatchStatus):
                await self._patch_status(key, body, action.status, log)
            else:
                await self.events.post(
                    _reference(body), type=action.type, reason=action.reason, message=action.message
                )

    async def _create(self, key: Key, owner: Body, action: reconcile.CreatePod, log: Any) -> bool:
        """Create a pod; False when the API server refused it (reported, and retried if it may pass)."""
        where = (objects.namespace(action.body), objects.name(action.body))
        try:
            created = await self.client.create(PODS, action.body, namespace=where[0])
        except AlreadyExists:
            log.debug("pod already exists", pod=where[1])
            return True
        except (InvalidInput, FailedPrecondition) as exc:
            # 422: the pod cannot become valid. 403: admission or RBAC, which an administrator may change.
            final = isinstance(exc, InvalidInput)
            log.warning("pod refused", pod=where[1], error=exc.message, final=final)
            for step in reconcile.refused(owner, where[1], exc.message, final=final, now=times.rfc3339()):
                await self._apply_report(key, owner, step, log)
            if not final:
                self._back_off(key)
            return False
        self._refusals.pop(key, None)
        if not _older(created, self.mirror.pods.get(where)):
            self.mirror.pods[where] = created  # unless the watch already brought a newer version
        log.info("created pod", pod=where[1])
        await self.events.post(
            _reference(owner), type=names.EventType.NORMAL, reason=action.reason, message=action.message
        )
        return True

    async def _apply_report(self, key: Key, owner: Body, action: reconcile.Action, log: Any) -> None:
        if isinstance(action, reconcile.PatchStatus):
            await self._patch_status(key, owner, action.status, log)
        elif isinstance(action, reconcile.Emit):
            await self.events.post(
                _reference(owner), type=action.type, reason=action.reason, message=action.message
            )

    def _back_off(self, key: Key) -> None:
        refusal = self._refusals.setdefault(key, _Refusal())
        delay = refusal.backoff.delay()
        loop = asyncio.get_running_loop()
        refusal.until = loop.time() + delay
        loop.call_later(delay, self._enqueue, key)

    async def _patch_status(self, key: Key, body: Body, status: Body, log: Any) -> None:
        old = objects.status(body)
        patch: Body = dict(status)
        for gone in set(old) - set(status):
            patch[gone] = None  # merge patch removes keys set to null
        try:
            updated = await self.client.patch_status(
                RESOURCES[key[0]], key[2], {"status": patch}, namespace=key[1]
            )
        except NotFound:
            self.mirror.jobs.pop(key, None)
            return
        updated.setdefault("kind", key[0])
        if not _older(updated, self.mirror.jobs.get(key)):
            self.mirror.jobs[key] = updated
        if status.get("status") != old.get("status"):
            log.info("status", status=status.get("status"), reason=status.get("reason"))


@dataclass
class _Refusal:
    """A resource whose pod the API server forbade: retried after a growing delay (5 s to 5 min)."""

    backoff: Backoff = field(
        default_factory=lambda: Backoff(initial=REFUSAL_RETRY, maximum=REFUSAL_RETRY_MAX)
    )
    until: float = 0.0


REFUSAL_RETRY = 5.0
REFUSAL_RETRY_MAX = 300.0
RETRY = 2.0
RETRY_MAX = 60.0


def _older(body: Body, known: Body | None) -> bool:
    """True when ``body`` is an older version of the same object than ``known``."""
    if known is None or objects.uid(known) != objects.uid(body):
        return False
    new, old = objects.resource_version(body), objects.resource_version(known)
    return new.isdigit() and old.isdigit() and int(new) < int(old)


def _same(body: Body, known: Body | None) -> bool:
    """True when ``body`` is the very version of the object that ``known`` is (an echo)."""
    if known is None or objects.uid(known) != objects.uid(body):
        return False
    version = objects.resource_version(body)
    return bool(version) and version == objects.resource_version(known)


def _reference(body: Body) -> Body:
    return {
        "apiVersion": body.get("apiVersion") or names.API_VERSION,
        "kind": body.get("kind", ""),
        "metadata": {k: objects.meta(body).get(k) for k in ("name", "namespace", "uid", "resourceVersion")},
    }
