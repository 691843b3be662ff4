"""The operator's settings: one frozen value built from flags and environment."""

from __future__ import annotations

from dataclasses import dataclass, field

from wlmvk.core.names import DEFAULT_RED_BOX_SOCKET
from wlmvk.slurm import tenancy

# Empty: working directories are relative, so each red-box resolves them under its
# own --work-dir (several clusters, each with its own directory).
DEFAULT_WORK_ROOT = ""


@dataclass(frozen=True)
class StagingSettings:
    """How staging pods (``wlmvk stage in|out``) are built."""

    image: str = "wlmvk:latest"
    # The command that runs wlmvk in the image; empty: the image's entrypoint (wlmvk's image
    # has ENTRYPOINT ["wlmvk"]), so the staging pods set only their args.
    command: tuple[str, ...] = ()
    # Host path of the red-box socket on the agent host, when the virtual node does not say.
    socket_host_path: str = DEFAULT_RED_BOX_SOCKET
    run_as_user: int = 1000
    run_as_group: int = 1000
    image_pull_policy: str = "IfNotPresent"
    # Extra environment of the staging container (NAME, value) pairs.
    env: tuple[tuple[str, str], ...] = ()
    # Seconds one transfer may take (``wlmvk stage --timeout``). The pod's activeDeadlineSeconds
    # adds START_GRACE, so a stalled pod (a hung mount, an image never pulled) ends Failed too.
    timeout: int = 3600
    # Per job, set by reconcile.decide: whose red-box its staging pods reach (None: no tenancy,
    # the node's own; a refusal: none).
    tenant: tenancy.Identity | tenancy.Refusal | None = None


START_GRACE = 300
"""Seconds a staging pod may spend before its transfer starts: pulling the image, mounting."""


@dataclass(frozen=True)
class OperatorSettings:
    # Each job runs in <work_root>/<namespace>/<name>-<uid> on the WLM side (relative: under red-box's).
    work_root: str = DEFAULT_WORK_ROOT
    # Namespace watched; empty means all namespaces.
    namespace: str = ""
    staging: StagingSettings = field(default_factory=StagingSettings)
    # Leader election over a coordination Lease.
    leader_election: bool = True
    lease_name: str = "wlmvk-operator-lock"
    lease_namespace: str = "default"
    lease_duration: int = 15
    renew_interval: float = 5.0
    # A candidate looks at the Lease this often while another process holds it.
    retry_interval: float = 2.0
    identity: str = ""
    # Re-examine every resource this often even without events (seconds).
    resync_interval: float = 60.0
    # Resources reconciled at once (each by one worker at a time: the work queue's rule). One
    # worker waited on every API call in turn: 200 SlurmJobs took six or so calls each in a row.
    workers: int = 16
    # A change of an owned pod that does not end it queues its resource this much later (seconds),
    # as kube-controller-manager's Job controller batches pod updates (syncJobBatchPeriod): the
    # binding, the job id and the kubelet's first status of one pod come within a fraction of a
    # second, and are written to the resource's status at once. A pod that ended, or was
    # deleted, queues its resource at once.
    pod_batch_period: float = 1.0
    # Port of /healthz and /readyz; 0 serves no probes.
    health_port: int = 0
    # (namespace, name) of the operator's own pod, from the downward API: with staging.image
    # empty, the staging pods run the image of its container (wlmvk.operator.ownimage).
    own_pod: tuple[str, str] | None = None
