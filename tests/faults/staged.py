"""The staged SlurmJob the fault tests strike at mid-transfer.

Its inputs are a host directory that the prepare pod uploads into the job's ``in/<volume>``, its
results what the job leaves in ``out``, downloaded by the collect pod into another host
directory. Staging pods run as the job owner (UID 1000), so both directories are opened to it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.e2e.operator.stack import Stack


def staging_dirs(scratch: Path, files: Mapping[str, bytes]) -> tuple[Path, Path]:
    """``scratch/inputs`` holding ``files`` (by relative path) and an empty ``scratch/outputs``:
    every directory 0777 and every file 0644, whatever the umask."""
    inputs, outputs = scratch / "inputs", scratch / "outputs"
    inputs.mkdir()
    outputs.mkdir()
    for relative, data in files.items():
        path = inputs / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        path.chmod(0o644)
    for directory in (scratch, outputs, inputs, *(p for p in inputs.rglob("*") if p.is_dir())):
        directory.chmod(0o777)
    return inputs, outputs


def staged_slurmjob(
    name: str, batch: str, inputs: Path, outputs: Path, *, namespace: str | None = None
) -> dict[str, Any]:
    """A SlurmJob whose ``inputs`` go up as volume ``data`` into ``in`` and whose ``out`` comes
    down into ``outputs`` (volume ``res``)."""
    metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {
        "apiVersion": "wlm.sylabs.io/v1alpha1",
        "kind": "SlurmJob",
        "metadata": metadata,
        "spec": {
            "batch": batch,
            "prepare": {
                "to": "in",
                "mount": {"name": "data", "hostPath": {"path": str(inputs), "type": "Directory"}},
            },
            "results": {
                "from": "out",
                "mount": {"name": "res", "hostPath": {"path": str(outputs), "type": "Directory"}},
            },
        },
    }


async def create_staged(stack: Stack, name: str, batch: str, inputs: Path, outputs: Path) -> None:
    """``kubectl create`` the staged SlurmJob (in the default namespace)."""
    body = staged_slurmjob(name, batch, inputs, outputs)
    created = await stack.kubectl("create", "-f", "-", input=json.dumps(body))
    assert created.returncode == 0, created.stderr
