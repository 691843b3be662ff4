"""Slurm's single field values -> wlmvk values: states, times, durations, keys, ids (pure).

Every reader of a whole output builds on these: ``squeue``, ``sacct``, ``records`` (``scontrol``),
``partitions``, ``stats`` and ``slices`` (``sstat``), with ``rows`` (a listing cut into jobs),
``exits`` (exit code and signal), ``outputs`` (a job's output paths) and ``releases`` (what differs
between Slurm releases, read once from ``sinfo -V``).
"""

from __future__ import annotations

import functools
import re
from datetime import UTC, datetime, timedelta

from wlmvk.core.jobs import JobStatus
from wlmvk.slurm import durations, sbatch

_STATE_ALIASES = {
    "REQUEUE_FED": JobStatus.REQUEUED,
    "REQUEUE_HOLD": JobStatus.REQUEUED,
    "RESV_DEL_HOLD": JobStatus.PENDING,
    "RESIZING": JobStatus.RUNNING,
    "SIGNALING": JobStatus.COMPLETING,
    "STAGE_OUT": JobStatus.COMPLETING,
    "STOPPED": JobStatus.SUSPENDED,
    "SPECIAL_EXIT": JobStatus.FAILED,
    "REVOKED": JobStatus.CANCELLED,
}
_EMPTY = frozenset({"", "N/A", "Unknown", "None", "(null)", "None assigned", "NONE"})
_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"


def job_status(text: str) -> JobStatus:
    """Slurm's state name (``CANCELLED by 0`` and ``CANCELLED+`` included) -> JobStatus."""
    word = text.strip().split(" ", 1)[0].rstrip("+")
    if word in JobStatus.__members__:
        return JobStatus[word]
    return _STATE_ALIASES.get(word, JobStatus.UNKNOWN)


def timestamp(text: str) -> datetime | None:
    """Slurm's local ``YYYY-MM-DDTHH:MM:SS`` -> an aware UTC datetime; N/A/Unknown -> None."""
    return _timestamp(text.strip())


@functools.lru_cache(maxsize=8192)
def _timestamp(text: str) -> datetime | None:
    # Every status tick reads three times of every job, mostly the same few seconds over and
    # over; strptime and the local-time conversion took ~24 us each (50 ms a tick at 1000 jobs).
    if text in _EMPTY:
        return None
    try:
        local = datetime.strptime(text, _TIME_FORMAT)
    except ValueError:
        return None
    return local.astimezone(UTC)


def duration(text: str) -> timedelta | None:
    """A Slurm duration (``core.durations``) -> timedelta; no limit and empty -> None."""
    text = text.strip()
    if durations.unlimited(text) or text.upper() in {"", "NONE", "N/A", "PARTITION_LIMIT"}:
        return None
    seconds = durations.seconds(text)
    if seconds is None:
        raise ValueError(f"not a Slurm duration: {text!r}")
    return timedelta(seconds=seconds)


def idempotency_key(comment: str) -> str:
    """The key carried in a job comment (``core.sbatch``), or '' for a comment wlmvk did not write."""
    return sbatch.comment_key(comment)


def leading_id(text: str) -> int:
    """``12``, ``12_3`` (array task), ``12_[1-3]``, ``12+0`` (het job) -> 12."""
    match = re.match(r"\s*(\d+)", text)
    if not match:
        raise ValueError(f"not a job id: {text!r}")
    return int(match.group(1))


def text(value: str) -> str:
    """A text field, '' for each way Slurm says 'nothing' (``(null)``, ``N/A``, ``None``...)."""
    value = value.strip()
    return "" if value in _EMPTY else value
