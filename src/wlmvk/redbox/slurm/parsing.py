"""What red-box's service reads of Slurm's output, by one name (pure; the rules live in the modules below).

Each output has its own module: ``squeue``, ``sacct``, ``records``
(``scontrol``), ``partitions``, ``stats`` and ``slices`` (``sstat``), built on
``values`` (single values), ``rows`` (a listing cut into jobs), ``exits``
(exit code and signal), ``outputs`` (a job's output paths) and ``releases``
(what differs between Slurm releases, detected once from ``sinfo -V``). All
are unit-tested on output captured from real runs of Slurm 22.05, 24.11 and
26.05 (tests/fixtures/slurm_captured/).
"""

from __future__ import annotations

from wlmvk.redbox.slurm.partitions import PartitionRecord
from wlmvk.redbox.slurm.records import job_info_fields
from wlmvk.redbox.slurm.rows import SEP, UNREADABLE_REASON
from wlmvk.redbox.slurm.sacct import FORMAT as SACCT_FORMAT
from wlmvk.redbox.slurm.squeue import FORMAT as SQUEUE_FORMAT
from wlmvk.redbox.slurm.values import duration, idempotency_key, job_status, timestamp

# SEP and the formats: scripts/slurm-capture reads red-box's formats under these names.
__all__ = [
    "SACCT_FORMAT",
    "SEP",
    "SQUEUE_FORMAT",
    "UNREADABLE_REASON",
    "PartitionRecord",
    "duration",
    "idempotency_key",
    "job_info_fields",
    "job_status",
    "timestamp",
]
