"""The node controller: one Node and one Lease per Slurm partition.

Three loops share one ``NodeDirectory``:

- discovery (every ``discovery_interval``): red-box's partitions and their
  resources; a new partition gets a Node (and a Lease owned by it), a
  changed one gets its labels and status rewritten, a vanished one loses
  its Node. An unreachable red-box changes nothing but the conditions.
- node status: written when it changed (reachability flips wake this loop
  at once) and at least every ``node_status_interval`` as a heartbeat.
  GPUs in use change only allocatable: a discovery that finds only they
  changed wakes this loop, nothing is registered again.
- leases: renewed every ``lease_renew_interval`` (recreated when missing).

Heartbeats and Lease renewals of many nodes are spread over their interval
(``spread``: each node at its own phase), not sent in one burst, and renewals
go out a few at a time so one slow answer delays no other node's. Discovery
registers new nodes a few at a time too.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

import structlog

from wlmvk.core import names
from wlmvk.core.backend import Backend
from wlmvk.core.errors import NotFound, Unavailable, WlmvkError
from wlmvk.core.jobs import PartitionResources
from wlmvk.core.tasks import restarting
from wlmvk.kube import leases
from wlmvk.kube.bodies import NODES, Body, labels_of, name_of, owner_reference
from wlmvk.kube.client import KubeClient
from wlmvk.kube.errors import AlreadyExists
from wlmvk.kube.times import rfc3339
from wlmvk.kubelet.metrics import KubeletMetrics
from wlmvk.kubelet.node import nodes
from wlmvk.kubelet.node.directory import NodeDirectory
from wlmvk.kubelet.node.reachability import Reachability
from wlmvk.kubelet.node.spread import Schedule
from wlmvk.slurm.durations import UNLIMITED_WALL_TIME
from wlmvk.slurm.memory import UNLIMITED_MEMORY_MB

_log = structlog.get_logger(__name__)

IN_FLIGHT = 8
"""Registrations of new nodes sent at once."""
RENEWALS_IN_FLIGHT = 64
"""Lease renewals sent at once: 1,000 nodes renewed every 10 s are 100 a second, and with 8 at once
an API server slower than 80 ms per answer (a loaded machine) left a backlog that grew for as long
as it stayed slow (renewals up to 36 s apart in a 30-minute run at load 26 on 2 cores)."""
STEP = 0.05
"""Seconds the spread loops sleep at least: nodes due within it go out together."""


@dataclass(frozen=True)
class NodeTimings:
    discovery_interval: float = 30.0
    status_interval: float = 60.0
    lease_duration: int = 40
    lease_renew_interval: float = 10.0


@dataclass
class _Node:
    resources: PartitionResources
    uid: str = ""
    written: Body | None = None
    ready_status: str = ""
    ready_since: str = ""
    last_write: float = 0.0
    # Written by this process: a node adopted at start (a restart, or a standby taking over) is
    # registered again, so that its address, port and agent host are this kubelet's at once.
    registered: bool = False
    # GPUs per resource held by this node's running pods when Slurm's use was last read.
    held: Mapping[str, int] = field(default_factory=dict)


def resources_from_labels(labels: dict[str, str]) -> PartitionResources:
    """A node's partition as its labels describe it (used before red-box answers)."""

    def number(key: str) -> int:
        try:
            return int(labels.get(key, "0"))
        except ValueError:
            return 0

    wall = number(names.LABEL_WALL_TIME)
    memory = number(names.LABEL_MEM_PER_NODE)
    return PartitionResources(
        name=labels.get(names.LABEL_PARTITION, ""),
        nodes=number(names.LABEL_NODES),
        cpu_per_node=number(names.LABEL_CPU_PER_NODE),
        mem_per_node=-1 if memory == UNLIMITED_MEMORY_MB else memory,
        wall_time=None if wall == UNLIMITED_WALL_TIME else wall,
        gpu_per_node=number(names.LABEL_GPU_PER_NODE),
    )


class NodeController:
    def __init__(
        self,
        *,
        client: KubeClient,
        backend: Backend,
        directory: NodeDirectory,
        context: nodes.NodeContext,
        reachability: Reachability,
        timings: NodeTimings,
        held: Callable[[], Mapping[str, Mapping[str, int]]] = dict,
        metrics: KubeletMetrics | None = None,
    ) -> None:
        self._client = client
        self._held = held
        self._backend = backend
        self._directory = directory
        self._context = context
        self._reachability = reachability
        self._timings = timings
        self._nodes: dict[str, _Node] = {}
        self._wake = asyncio.Event()
        self._metrics = metrics
        self._heartbeats = Schedule(timings.status_interval)
        self._renewals = Schedule(timings.lease_renew_interval)
        self._renewing: set[str] = set()

    @property
    def selector(self) -> str:
        return (
            f"{names.LABEL_TYPE}={names.TYPE_VIRTUAL_KUBELET},{names.LABEL_CLUSTER}={self._context.cluster}"
        )

    async def start(self) -> None:
        """Adopt this cluster's existing nodes, then discover partitions once (before pods are watched)."""
        try:
            listing = await self._client.list(NODES, label_selector=self.selector)
        except WlmvkError as exc:
            _log.warning("cannot list existing nodes", error=str(exc))
            listing = {"items": []}
        for item in listing.get("items") or []:
            name = name_of(item)
            self._directory.adopt(name)
            if name not in self._nodes:
                self._nodes[name] = _Node(
                    resources_from_labels(labels_of(item)), uid=str(item["metadata"]["uid"])
                )
                self._schedule(name)
        try:
            info = await self._backend.info()
            self._context = replace(
                self._context, wlm_version=info.version.strip(), original_api=not info.extensions
            )
        except WlmvkError as exc:
            _log.warning("red-box info unavailable", error=str(exc))
        await self.discover()

    async def run(self) -> None:
        await asyncio.gather(
            restarting(self._discovery_loop, name="partition discovery"),
            restarting(self._status_loop, name="node status"),
            restarting(self._lease_loop, name="node leases"),
        )

    # -- discovery -------------------------------------------------------------------------------------------

    async def _discovery_loop(self) -> None:
        while True:
            await asyncio.sleep(self._timings.discovery_interval)
            await self.discover()

    async def discover(self) -> None:
        # Before Slurm is asked: a job that starts meanwhile counts as in use by others, never twice.
        held = {name: dict(gpus) for name, gpus in self._held().items()}
        try:
            partitions = await self._backend.partitions()
            found = await asyncio.gather(*(self._backend.resources(p) for p in partitions))
        except Unavailable as exc:
            _log.warning("partition discovery failed: red-box unreachable", error=exc.message)
            self._wake.set()
            return
        except WlmvkError as exc:
            _log.warning("partition discovery failed", error=exc.message)
            return
        current = {names.node_name(self._context.cluster, res.name): res for res in found}
        gate = asyncio.Semaphore(IN_FLIGHT)

        async def register(name: str, res: PartitionResources) -> None:
            async with gate:
                try:
                    await self._register(name, res, held.get(name, {}))
                except WlmvkError as exc:
                    _log.warning("node registration failed", node=name, error=exc.message)

        await asyncio.gather(*(register(name, res) for name, res in current.items()))
        for name in [n for n in self._nodes if n not in current]:
            await self._remove(name)

    async def _register(self, name: str, res: PartitionResources, held: Mapping[str, int]) -> None:
        known = self._nodes.get(name)
        self._directory.set(name, res)
        if (
            known is not None
            and known.uid
            and known.registered
            and known.resources.settled() == res.settled()
        ):
            if known.resources != res or known.held != held:
                known.resources, known.held = res, held
                self._wake.set()  # GPUs in use changed: allocatable only
            return
        heartbeat = rfc3339()
        node = known or _Node(res, ready_since=heartbeat)
        node.resources, node.held = res, held
        node.ready_since = node.ready_since or heartbeat
        health = self._health()
        body = nodes.node_object(
            res, self._context, health, heartbeat=heartbeat, ready_since=node.ready_since
        )
        try:
            created = await self._client.create(NODES, body)
            node.uid = str(created["metadata"]["uid"])
            _log.info("node registered", node=name, partition=res.name)
        except AlreadyExists:
            existing = await self._client.get(NODES, name)
            wanted = body["metadata"]["labels"]
            stale = {
                key: None
                for key in labels_of(existing)
                if key.startswith(f"{names.GROUP}/") and key not in wanted
            }
            patch = {
                "metadata": {
                    "labels": {**stale, **wanted},
                    # null removes the mark of an original red-box that has since been replaced
                    "annotations": {
                        names.ANNOTATION_WORKING_DIR_IGNORED: None,
                        names.ANNOTATION_RED_BOX_SOCKETS: None,
                        **body["metadata"]["annotations"],
                    },
                },
                "spec": {"taints": nodes.taints()},
            }
            updated = await self._client.patch(NODES, name, patch)
            node.uid = str(updated["metadata"]["uid"])
            _log.info("node updated", node=name, partition=res.name)
        self._nodes[name] = node
        self._schedule(name)
        node.written = None
        await self._write_status(name, node, reason="registered")
        node.registered = True
        await self._ensure_lease(name, node.uid)

    async def _ensure_lease(self, name: str, uid: str) -> None:
        """The node's Lease, owned by its Node (made when missing)."""
        await leases.ensure(
            self._client,
            name,
            names.NODE_LEASE_NAMESPACE,
            holder=name,
            duration=self._timings.lease_duration,
            owner=owner_reference(
                {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "uid": uid}}
            ),
        )

    def _schedule(self, name: str) -> None:
        now = asyncio.get_running_loop().time()
        self._heartbeats.add(name, now)
        self._renewals.add(name, now)

    async def _remove(self, name: str) -> None:
        self._nodes.pop(name, None)
        self._heartbeats.discard(name)
        self._renewals.discard(name)
        self._directory.drop(name)
        try:
            with contextlib.suppress(NotFound):
                await self._client.delete(NODES, name)
            await leases.delete(self._client, name, names.NODE_LEASE_NAMESPACE)
            _log.info("node removed: partition vanished", node=name)
        except WlmvkError as exc:
            _log.warning("node removal failed", node=name, error=exc.message)

    # -- status ----------------------------------------------------------------------------------------------

    def _health(self) -> nodes.Health:
        r = self._reachability
        return nodes.Health(reachable=r.reachable, message=r.message, since=rfc3339(r.since))

    async def _status_loop(self) -> None:
        """Changed nodes when woken (a reachability flip, GPUs in use); each node's heartbeat at
        its own phase of the status interval; every node is checked for a change at least every
        10 s (or status interval) too."""
        loop = asyncio.get_running_loop()
        scan = min(self._timings.status_interval, 10.0)
        scanned = loop.time()
        while True:
            now = loop.time()
            due_at = self._heartbeats.next_time()
            pause = min(scanned + scan - now, (due_at - now) if due_at is not None else scan)
            flipped = asyncio.ensure_future(self._reachability.changed())
            woken = asyncio.ensure_future(self._wake.wait())
            try:
                # Which woke it is read before the cancels below (a cancelled future is done too).
                done, _ = await asyncio.wait({flipped, woken}, timeout=max(pause, STEP))
            finally:
                flipped.cancel()
                woken.cancel()
            now = loop.time()
            if done or now - scanned >= scan:
                self._wake.clear()
                scanned = now
                await self._write_each(list(self._nodes), force=False)
            await self._write_each([name for name, _ in self._heartbeats.take_due(now)], force=True)

    async def _write_each(self, names_: list[str], *, force: bool) -> None:
        for name in names_:
            node = self._nodes.get(name)
            if node is None:
                continue
            try:
                await self._write_status(name, node, force=force, reason="heartbeat" if force else "changed")
            except WlmvkError as exc:
                _log.warning("node status not written", node=name, error=exc.message)

    async def _write_status(self, name: str, node: _Node, *, force: bool = True, reason: str = "") -> None:
        health = self._health()
        probe = nodes.status(node.resources, self._context, health, heartbeat="", ready_since="")
        ready_status = probe["conditions"][0]["status"]
        if ready_status != node.ready_status:
            node.ready_since = rfc3339()
        body = nodes.status(
            node.resources,
            self._context,
            health,
            heartbeat=rfc3339(),
            ready_since=node.ready_since,
            held=node.held,
        )
        visible = nodes.visible(body)
        if not force and visible == node.written:
            return
        try:
            await self._client.patch_status(NODES, name, {"status": body})
        except NotFound:
            # Deleted behind our back: the next discovery registers it again.
            node.uid = ""
            return
        node.written = visible
        node.ready_status = ready_status
        node.last_write = asyncio.get_running_loop().time()
        if self._metrics is not None:
            self._metrics.node_status_writes.inc(reason=reason or "changed")
        if ready_status == "False":
            _log.info("node not ready", node=name, reason=body["conditions"][0]["reason"])

    # -- leases ----------------------------------------------------------------------------------------------

    async def _lease_loop(self) -> None:
        """Each node's Lease renewed at its own phase of the renew interval, RENEWALS_IN_FLIGHT at a time;
        a node whose renewal is still out when it falls due again waits for the next slot."""
        loop = asyncio.get_running_loop()
        gate = asyncio.Semaphore(RENEWALS_IN_FLIGHT)
        out: set[asyncio.Task[None]] = set()
        try:
            while True:
                now = loop.time()
                due_at = self._renewals.next_time()
                await asyncio.sleep(max(STEP, min(1.0, (due_at - now) if due_at is not None else 1.0)))
                for name, due in self._renewals.take_due(loop.time()):
                    if name in self._renewing or name not in self._nodes:
                        continue
                    self._renewing.add(name)
                    task = asyncio.ensure_future(self._renew(name, due, gate))
                    out.add(task)
                    task.add_done_callback(out.discard)
        finally:
            for task in out:
                task.cancel()

    async def _renew(self, name: str, due: float, gate: asyncio.Semaphore) -> None:
        try:
            async with gate:
                renewed = await self._renew_lease(name)
            if renewed and self._metrics is not None:
                self._metrics.lease_renewals.inc()
                self._metrics.lease_lateness.observe(max(0.0, asyncio.get_running_loop().time() - due))
        finally:
            self._renewing.discard(name)

    async def _renew_lease(self, name: str) -> bool:
        """Whether the Lease was renewed (or made again, when it was missing)."""
        try:
            await leases.renew(
                self._client,
                name,
                names.NODE_LEASE_NAMESPACE,
                holder=name,
                duration=self._timings.lease_duration,
            )
        except NotFound:
            node = self._nodes.get(name)
            try:
                await self._ensure_lease(name, node.uid if node else "")
            except WlmvkError:
                return False
        except WlmvkError as exc:
            _log.warning("lease not renewed", node=name, error=exc.message)
            return False
        return True
