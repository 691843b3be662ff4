"""The GPUs a node's pods hold now: what allocatable subtracts for this node's own running jobs (pure).

A pod holds its GPUs while Slurm runs its job (configuring, running, completing, suspended); a
pod whose request cannot be read holds none (it was refused before it was submitted).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from wlmvk.core.errors import InvalidInput
from wlmvk.core.jobs import JobState, JobStatus
from wlmvk.kube.bodies import Body
from wlmvk.kubelet.pods import translate

HOLDING = frozenset({JobStatus.CONFIGURING, JobStatus.RUNNING, JobStatus.COMPLETING, JobStatus.SUSPENDED})


class Served(Protocol):
    """What this rule reads of a served pod (a ``records.PodRecord``)."""

    @property
    def pod(self) -> Body: ...
    @property
    def node(self) -> str: ...
    @property
    def state(self) -> JobState | None: ...


def gpus_held(records: Iterable[Served], gpu_names: Mapping[str, str]) -> dict[str, dict[str, int]]:
    """GPUs per node and extended resource that pods hold whose jobs Slurm runs now."""
    out: dict[str, dict[str, int]] = {}
    for record in records:
        if record.state is None or record.state.status not in HOLDING:
            continue
        try:
            asked = translate.gpu_request(record.pod, gpu_names)
        except InvalidInput:
            continue
        if asked is not None:
            held = out.setdefault(record.node, {})
            held[asked.resource] = held.get(asked.resource, 0) + asked.count
    return out
