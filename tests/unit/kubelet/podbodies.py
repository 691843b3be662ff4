"""Pod bodies as the API server returns them (shapes from the real kube-apiserver)."""

from __future__ import annotations

import copy
from typing import Any

from wlmvk.core import names

Body = dict[str, Any]

BASE: Body = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "cow",
        "namespace": "default",
        "uid": "0b5c1a9e-6f1d-4f3b-9c1e-2a7d3c4b5e6f",
        "resourceVersion": "17",
        "creationTimestamp": "2026-12-02T14:40:00Z",
    },
    "spec": {
        "nodeName": "slurm-vm-debug",
        "restartPolicy": "Never",
        "containers": [{"name": "main", "image": "busybox:1.36", "command": ["echo", "hello world"]}],
        "volumes": [
            {
                "name": "kube-api-access-x1",
                "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]},
            }
        ],
    },
    "status": {"phase": "Pending"},
}


def pod(**changes: Any) -> Body:
    """A copy of BASE; keys ``spec``/``metadata``/``container`` are merged one level deep."""
    body = copy.deepcopy(BASE)
    for key in ("spec", "metadata"):
        body[key].update(changes.pop(key, {}))
    body["spec"]["containers"][0].update(changes.pop("container", {}))
    body.update(changes)
    return body


def batch_pod(script: str, **changes: Any) -> Body:
    body = pod(**changes)
    body["metadata"].setdefault("annotations", {})[names.ANNOTATION_BATCH] = script
    body["spec"]["containers"][0] = {"name": "jt1", "image": "no-image"}
    return body
