"""Raw Kubernetes JSON as plain structures, and the resources they live at.

Everything above ``wlmvk.kube`` sees objects as the API server sends them:
JSON decoded into dicts (``Body``). Translation code stays pure over these
structures; no kubernetes_asyncio model ever leaves this package. Fields are
read through ``objects``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, NewType, TypedDict

from wlmvk.kube import objects

# The accessors live in ``objects``; these names remain for the modules not yet moved to it.
from wlmvk.kube.objects import annotations as annotations_of
from wlmvk.kube.objects import deleting as is_deleting
from wlmvk.kube.objects import labels as labels_of
from wlmvk.kube.objects import meta
from wlmvk.kube.objects import name as name_of
from wlmvk.kube.objects import namespace as namespace_of
from wlmvk.kube.objects import resource_version as resource_version_of

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


def uid_of(body: Body) -> Uid:
    return Uid(objects.uid(body))


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


__all__ = [
    "EVENTS", "LEASES", "NAMESPACES", "NODES", "PODS", "SUBJECT_ACCESS_REVIEWS", "TOKEN_REVIEWS",
    "Body", "EventType", "OwnerReference", "Resource", "Uid", "WatchLine",
    "annotations_of", "is_deleting", "labels_of", "meta", "name_of", "namespace_of", "owner_reference",
    "resource_version_of", "uid_of",
]  # fmt: skip
