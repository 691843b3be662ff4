"""Kubernetes timestamps for the in-memory API server: the product's own (``wlmvk.kube.times``).

The names stay those the server's modules use; the formats are the product's, so that the
double and the kubelet cannot drift apart.
"""

from __future__ import annotations

from wlmvk.kube.times import micro_time as format_micro
from wlmvk.kube.times import now
from wlmvk.kube.times import parse_or_none as parse
from wlmvk.kube.times import rfc3339 as format_time

__all__ = ["format_micro", "format_time", "now", "parse"]
