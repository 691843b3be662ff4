"""Typed accessors of Kubernetes objects: the one place that knows where a field lives.

Objects travel as decoded JSON (``bodies.Body``), and the API server omits what is empty: a pod
without labels has no ``labels`` key, a new pod no ``status``. Reading them through these
functions (as kopf's ``bodies.Meta.uid``, ``Body.spec``) keeps that tolerance in one place
instead of a ``.get("metadata") or {}`` at every use, and gives every caller the same types.

Readers only: they never change the object. The dicts they return are the object's own
(``meta``, ``spec``, ``status``) or copies (``labels``, ``annotations``), as documented on each.
"""

# No ``from __future__ import annotations`` here: it would bind the name of the ``annotations``
# accessor below (nothing here needs postponed annotations).
from collections.abc import Mapping
from typing import Any

Object = Mapping[str, Any]
"""Any object as decoded JSON (a ``bodies.Body`` or a read-only view of one)."""


def _section(body: Object, key: str) -> dict[str, Any]:
    value = body.get(key)
    return value if isinstance(value, dict) else {}


def meta(body: Object) -> dict[str, Any]:
    """``metadata`` (the object's own dict; empty when absent)."""
    return _section(body, "metadata")


def spec(body: Object) -> dict[str, Any]:
    """``spec`` (the object's own dict; empty when absent)."""
    return _section(body, "spec")


def status(body: Object) -> dict[str, Any]:
    """``status`` (the object's own dict; empty when absent)."""
    return _section(body, "status")


def name(body: Object) -> str:
    return str(meta(body).get("name") or "")


def namespace(body: Object) -> str:
    return str(meta(body).get("namespace") or "")


def uid(body: Object) -> str:
    return str(meta(body).get("uid") or "")


def resource_version(body: Object) -> str:
    return str(meta(body).get("resourceVersion") or "")


def generation(body: Object) -> int:
    """``metadata.generation`` (0 when absent: objects the API server does not version)."""
    return int(meta(body).get("generation") or 0)


def labels(body: Object) -> dict[str, str]:
    """A copy of the labels (empty when none)."""
    return dict(meta(body).get("labels") or {})


def annotations(body: Object) -> dict[str, str]:
    """A copy of the annotations (empty when none)."""
    return dict(meta(body).get("annotations") or {})


def owner_references(body: Object) -> list[dict[str, Any]]:
    return list(meta(body).get("ownerReferences") or [])


def controller_uid(body: Object) -> str:
    """The UID of the object's controlling owner ('' when it has none)."""
    for ref in owner_references(body):
        if ref.get("controller"):
            return str(ref.get("uid", ""))
    return ""


def deleting(body: Object) -> bool:
    """Whether deletion has begun (``metadata.deletionTimestamp`` set)."""
    return bool(meta(body).get("deletionTimestamp"))


def node_name(pod: Object) -> str:
    """The node a pod is bound to ('' while unscheduled)."""
    return str(spec(pod).get("nodeName") or "")


def phase(pod: Object) -> str:
    """A pod's ``status.phase`` ('' when no status was written yet)."""
    return str(status(pod).get("phase") or "")


def containers(pod: Object) -> list[dict[str, Any]]:
    """A pod's ``spec.containers`` (empty when absent)."""
    return list(spec(pod).get("containers") or [])
