"""Helpers of the kubelet's end-to-end tests: pods, polling, and asking Slurm itself."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from tests.fixtures import polling
from wlmvk.core import names

Body = dict[str, Any]


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


async def eventually(check: Callable[[], Awaitable[Any]], timeout: float = 90.0, every: float = 0.25) -> Any:
    """Poll ``check`` until it returns something truthy; generous timeouts (Slurm is shared)."""
    return await polling.eventually(check, timeout=timeout, every=every)


def job_pod(
    name: str,
    script: str,
    *,
    partition: str = "debug",
    resources: Body | None = None,
    **spec: Any,
) -> Body:
    """A pod that selects a partition's node (scheduled by the API server) and runs ``sh -c script``."""
    container: Body = {"name": "main", "image": "busybox", "command": ["sh", "-c", script]}
    container["resources"] = resources or {"requests": {"cpu": "1"}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "restartPolicy": "Never",
            "nodeSelector": {names.LABEL_PARTITION: partition, "type": "virtual-kubelet"},
            "tolerations": [
                {
                    "key": names.TAINT_KEY,
                    "operator": "Equal",
                    "value": names.TAINT_VALUE,
                    "effect": "NoSchedule",
                }
            ],
            "containers": [container],
            **spec,
        },
    }


def slurm(*argv: str) -> str:
    return subprocess.run(list(argv), capture_output=True, text=True, check=False).stdout


def slurm_jobs_named(name_prefix: str) -> dict[str, set[str]]:
    """Job ids per job name with ``name_prefix``, from squeue (all states) and sacct: Slurm's own view."""
    found: dict[str, set[str]] = {}
    for line in slurm("squeue", "-h", "-t", "all", "-o", "%i|%j").splitlines():
        job_id, _, job_name = line.partition("|")
        if job_name.startswith(name_prefix):
            found.setdefault(job_name, set()).add(job_id.strip())
    for line in slurm(
        "sacct", "-a", "-X", "-n", "-P", "-S", "now-2hours", "-o", "JobID,JobName"
    ).splitlines():
        job_id, _, job_name = line.partition("|")
        if job_name.startswith(name_prefix):
            found.setdefault(job_name, set()).add(job_id.strip())
    return found


def slurm_state(job_id: str) -> str:
    """The job's state as Slurm reports it (squeue while known there, else sacct)."""
    out = slurm("squeue", "-h", "-t", "all", "-j", job_id, "-o", "%T").strip()
    if out:
        return out
    rows = slurm("sacct", "-X", "-n", "-P", "-j", job_id, "-o", "State").split()
    return rows[0] if rows else ""


def json_of(text: str) -> Body:
    return json.loads(text)  # type: ignore[no-any-return]
