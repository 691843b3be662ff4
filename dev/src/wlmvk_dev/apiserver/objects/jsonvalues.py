"""Helpers for objects as JSON values: deep copies and Kubernetes timestamps."""

from __future__ import annotations

from datetime import datetime
from typing import TypeVar

from wlmvk.kube.times import rfc3339

_T = TypeVar("_T")


def clone(value: _T) -> _T:
    """A deep copy of a JSON value (faster than ``copy.deepcopy``)."""
    if isinstance(value, dict):
        return {k: clone(v) for k, v in value.items()}  # type: ignore[return-value]
    if isinstance(value, list):
        return [clone(v) for v in value]  # type: ignore[return-value]
    return value


def timestamp(moment: datetime) -> str:
    return rfc3339(moment)
