"""Slurm's partitions as red-box serves them: one look shared for a while, overrides applied.

Every kubelet asks for each of its partitions' resources on every discovery
round; one ``scontrol show partition`` answers all of them for
``PARTITIONS_TTL`` seconds (a failed look is not kept). The site's overrides
(``config.PartitionOverride``) replace what Slurm says of a partition; an
empty name means Slurm's default partition.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping

from wlmvk.core.errors import InvalidInput, NotFound
from wlmvk.core.jobs import PartitionResources
from wlmvk.redbox.config import PartitionOverride
from wlmvk.redbox.slurm.cli.commands import Slurm
from wlmvk.redbox.slurm.cli.nodeinfo import PartitionRecord

PARTITIONS_TTL = 2.0
"""Seconds one look at Slurm's partitions answers Resources calls."""


class Partitions:
    """The partitions' resources, from a shared look at Slurm and the site's overrides."""

    def __init__(
        self,
        *,
        slurm: Slurm,
        overrides: Mapping[str, PartitionOverride],
        mem_per_node: Callable[[PartitionRecord], int],
        sif_runtime: Callable[[], bool],
        image_dir: str = "",
        sif_images: Callable[[], tuple[str, ...]] = tuple,
    ) -> None:
        self._slurm = slurm
        self._overrides = dict(overrides)
        self._mem_per_node = mem_per_node
        self._sif_runtime = sif_runtime
        self._image_dir = image_dir
        self._sif_images = sif_images
        self._task: asyncio.Future[list[PartitionRecord]] | None = None
        self._at = 0.0

    async def records(self) -> dict[str, PartitionRecord]:
        """Slurm's partitions by name, shared for PARTITIONS_TTL seconds."""
        if self._task is None or time.monotonic() - self._at > PARTITIONS_TTL:
            self._at = time.monotonic()
            self._task = asyncio.ensure_future(self._slurm.partitions())
        task = self._task
        try:
            records = await asyncio.shield(task)
        except BaseException:
            if task.done() and self._task is task:
                self._task = None  # a failed look is not kept
            raise
        return {r.name: r for r in records}

    async def resources(self, name: str) -> PartitionResources:
        """The resources of partition ``name`` ("" = Slurm's default), overrides applied."""
        records = await self.records()
        if not name:
            defaults = [r for r in records.values() if r.default]
            if not defaults:
                raise InvalidInput("partition is required (Slurm has no default partition)")
            name = defaults[0].name
        record = records.get(name)
        if record is None:
            raise NotFound(f"partition {name!r}: Slurm has {', '.join(records) or 'none'}")
        override = self._overrides.get(name)
        if override is not None:
            record = override.apply(record)
        return PartitionResources(
            name=record.name,
            nodes=record.nodes,
            cpu_per_node=record.cpu_per_node,
            mem_per_node=self._mem_per_node(record),
            wall_time=record.wall_time,
            gpu_per_node=record.gpu_per_node,
            features=record.features,
            default=record.default,
            state=record.state,
            # A plain pod's image runs through Apptainer/Singularity only (core.runtimes.pod_lines).
            container_runtime=self._sif_runtime(),
            gpu_kinds=record.gpu_kinds,
            image_dir=self._image_dir,
            images=self._sif_images(),
        )
