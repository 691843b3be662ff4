"""A pod's quality-of-service class, the rule the API server applies once, at creation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def qos_class(pod: Mapping[str, Any]) -> str:
    """Guaranteed (limits = requests for cpu and memory), BestEffort (nothing set), else Burstable."""
    spec = pod.get("spec") or {}
    containers = list(spec.get("containers") or []) + list(spec.get("initContainers") or [])
    any_set = False
    guaranteed = True
    for container in containers:
        resources = container.get("resources") or {}
        limits, requests = resources.get("limits") or {}, resources.get("requests") or {}
        if limits or requests:
            any_set = True
        for name in ("cpu", "memory"):
            if name not in limits or requests.get(name, limits[name]) != limits[name]:
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"
