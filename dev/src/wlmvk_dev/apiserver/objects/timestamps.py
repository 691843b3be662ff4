"""Kubernetes timestamps for the in-memory API server: the product's own (``wlmvk.kube.times``).

The names stay those the server's modules use; the formats are the product's, so that the
double and the kubelet cannot drift apart. Only ``parse`` is the server's own: it tolerates
what a client may leave out or garble, where the product's refuses it.
"""

from __future__ import annotations

from datetime import datetime

from wlmvk.kube import times
from wlmvk.kube.times import micro_time as format_micro
from wlmvk.kube.times import now
from wlmvk.kube.times import rfc3339 as format_time

__all__ = ["format_micro", "format_time", "now", "parse"]


def parse(text: str | None) -> datetime | None:
    """``times.parse``, tolerant: None when absent or unreadable (fields a client may leave out or garble)."""
    if not text:
        return None
    try:
        return times.parse(text)
    except ValueError:
        return None
