"""Raw Kubernetes JSON as plain structures, and the resources they live at.

Everything above ``wlmvk.kube`` sees objects as the API server sends them:
JSON decoded into dicts (``Body``). Translation code stays pure over these
structures; no kubernetes_asyncio model ever leaves this package. The few
accessors below read the metadata every caller needs, tolerating absent
fields the way the API server omits them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, NewType, TypedDict

Body = dict[str, Any]
"""One object (or List, Status, Event...) as decoded JSON."""

Uid = NewType("Uid", str)

EventType = Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"]


class WatchLine(TypedDict):
    """One line of a watch stream."""

    type: EventType
    object: Body


class OwnerReference(TypedDict, total=False):
    apiVersion: str
    kind: str
    name: str
    uid: str
    controller: bool
    blockOwnerDeletion: bool


@dataclass(frozen=True)
class Resource:
    """A group-version-resource, and whether its objects live in a namespace."""

    group: str
    version: str
    plural: str
    namespaced: bool = True
    kind: str = ""

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, *, namespace: str | None = None, name: str | None = None, subresource: str = "") -> str:
        """The URL path of the collection, or of one object (and a subresource)."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name is not None:
            base += f"/{name}"
            if subresource:
                base += f"/{subresource}"
        return base


PODS = Resource("", "v1", "pods", kind="Pod")
NODES = Resource("", "v1", "nodes", namespaced=False, kind="Node")
EVENTS = Resource("", "v1", "events", kind="Event")
NAMESPACES = Resource("", "v1", "namespaces", namespaced=False, kind="Namespace")
LEASES = Resource("coordination.k8s.io", "v1", "leases", kind="Lease")
TOKEN_REVIEWS = Resource("authentication.k8s.io", "v1", "tokenreviews", namespaced=False, kind="TokenReview")
SUBJECT_ACCESS_REVIEWS = Resource(
    "authorization.k8s.io", "v1", "subjectaccessreviews", namespaced=False, kind="SubjectAccessReview"
)


def meta(body: Body) -> dict[str, Any]:
    """``metadata`` of an object (an empty dict when absent)."""
    value = body.get("metadata")
    return value if isinstance(value, dict) else {}


def name_of(body: Body) -> str:
    return str(meta(body).get("name", ""))


def namespace_of(body: Body) -> str:
    return str(meta(body).get("namespace", ""))


def uid_of(body: Body) -> Uid:
    return Uid(str(meta(body).get("uid", "")))


def resource_version_of(body: Body) -> str:
    return str(meta(body).get("resourceVersion", ""))


def labels_of(body: Body) -> dict[str, str]:
    return dict(meta(body).get("labels") or {})


def annotations_of(body: Body) -> dict[str, str]:
    return dict(meta(body).get("annotations") or {})


def is_deleting(body: Body) -> bool:
    return bool(meta(body).get("deletionTimestamp"))


def owner_reference(owner: Body, *, controller: bool = False) -> OwnerReference:
    """A reference to ``owner`` for another object's ``metadata.ownerReferences``."""
    ref = OwnerReference(
        apiVersion=str(owner.get("apiVersion", "v1")),
        kind=str(owner.get("kind", "")),
        name=name_of(owner),
        uid=str(uid_of(owner)),
    )
    if controller:
        ref["controller"] = True
    return ref
