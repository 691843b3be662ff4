"""The example manifests as the demo runs them: their job, their host paths, their results.

An example's SlurmJob or WlmJob names what to wait for; its ``prepare`` and ``results``
host paths are made ready as the README asks the user to (inputs on the node, an output
directory writable by the job owner) and listed once it ends. ``HELLO`` is the multi-cluster
step's job, sent to each cluster's cpu partition.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import yaml

from wlmvk_dev.demo.clusters import JOB_UID
from wlmvk_dev.demo.progress import Progress

HELLO = """apiVersion: wlm.sylabs.io/v1alpha1
kind: SlurmJob
metadata:
  name: {name}
spec:
  batch: |
    #!/bin/sh
    echo "Hello from Slurm job $SLURM_JOB_ID on partition $SLURM_JOB_PARTITION"
  nodeSelector:
    kubernetes.io/hostname: {node}
"""


def metadata_name(doc: str) -> tuple[str, str] | None:
    """(kind, name) of the SlurmJob or WlmJob in an example."""
    for obj in yaml.safe_load_all(doc):
        if isinstance(obj, dict) and obj.get("kind") in {"SlurmJob", "WlmJob"}:
            name = obj.get("metadata", {}).get("name")
            return (str(obj["kind"]), str(name)) if name else None
    return None


def volumes(doc: str) -> list[tuple[str, Path]]:
    found = []
    for obj in yaml.safe_load_all(doc):
        if not isinstance(obj, dict):
            continue
        spec = obj.get("spec", {})
        for key in ("prepare", "results"):
            mount = (spec.get(key) or {}).get("mount") or {}
            path = (mount.get("hostPath") or {}).get("path")
            if path:
                found.append((key, Path(path)))
    return found


def prepare_inputs(doc: str) -> None:
    """What the README asks the user to do first: inputs on the node, an output dir writable by 1000."""
    for key, path in volumes(doc):
        path.mkdir(parents=True, exist_ok=True)
        if key == "prepare" and not any(path.iterdir()):
            (path / "foo.txt").write_text("foo\n")
        os.chown(path, JOB_UID, JOB_UID)


def show_results(progress: Progress, doc: str) -> None:
    for key, path in volumes(doc):
        if key != "results":
            continue
        listing = subprocess.run(["ls", "-lR", str(path)], capture_output=True, text=True, check=False)
        progress.command(["ls", "-lR", str(path)], listing.stdout + listing.stderr)
