"""What red-box answers as: wlmvk's service, or only what the original red-box served.

``--original-api-only`` serves the original's API for its clients'
expectations, and the kubelet's fallbacks are tested against it: the wlmvk
rpcs are not served (the client gets UNIMPLEMENTED, as from the original),
the added request fields are ignored, the added states read UNKNOWN and the
added answer fields stay empty. A ``Dialect`` is that difference as a value,
so the service's rpcs have one body each.
"""

from __future__ import annotations

from dataclasses import dataclass

from wlmvk._proto import api
from wlmvk.core.jobs import JobSpec
from wlmvk.redbox.slurm.cli.nodeinfo import PartitionRecord
from wlmvk.wire import codec

ADDED_RPCS = (
    "JobStates",
    "FindJob",
    "StageIn",
    "StageOut",
    "JobUsage",
    "Exec",
    "SubmitJobs",
    "Associations",
    "ObserveStates",
    "FollowJobs",
    "ObserveAssociations",
)
"""wlmvk's rpcs, which the original does not serve."""

EXTENSIONS = (
    *ADDED_RPCS,
    "SubmitJob.idempotency_key",
    "SubmitJob.options",
    "JobStatus.all",
    "grpc.health.v1",
)
"""What WorkloadInfo tells a client wlmvk's red-box serves beyond the original."""


@dataclass(frozen=True)
class Dialect:
    """The API red-box serves: the rpcs left out, and whether wlmvk's added fields count."""

    extensions: tuple[str, ...]
    unserved: frozenset[str]
    """rpc names (as in the proto) this dialect does not serve."""
    additions: bool
    """wlmvk's added request fields read, added answer fields and states filled."""

    def spec(self, spec: JobSpec) -> JobSpec:
        """What of a submission is honoured (the original: its script and partition)."""
        return spec if self.additions else JobSpec(script=spec.script, partition=spec.partition)

    def status(self, status: api.JobStatus) -> api.JobStatus:
        """A state as this dialect names it (the original knows fewer: the rest read UNKNOWN)."""
        if self.additions or status in codec.ORIGINAL_STATUSES:
            return status
        return api.JobStatus.UNKNOWN

    def resources(self, wire: api.ResourcesResponse) -> api.ResourcesResponse:
        """A Resources answer with only the fields this dialect has."""
        if self.additions:
            return wire
        return api.ResourcesResponse(
            nodes=wire.nodes,
            cpu_per_node=wire.cpu_per_node,
            mem_per_node=wire.mem_per_node,
            wall_time=wire.wall_time,
            features=wire.features,
        )

    def mem_per_node(self, record: PartitionRecord) -> int:
        """A partition's memory per node (the original read only MaxMemPerNode, -1 when UNLIMITED)."""
        if self.additions:
            return record.mem_per_node
        return -1 if record.mem_limit is None else record.mem_limit


WLMVK = Dialect(extensions=EXTENSIONS, unserved=frozenset(), additions=True)
ORIGINAL = Dialect(
    extensions=(),
    unserved=frozenset(ADDED_RPCS),
    additions=False,
)
