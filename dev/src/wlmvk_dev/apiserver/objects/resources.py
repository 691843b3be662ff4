"""Resource types the server knows: their names, kinds, scope and subresources.

A resource type is addressed by :class:`GVR` (group, version, plural). The built-in
catalogue below is what a fresh server serves; CustomResourceDefinitions add more at
run time (see ``crds.py``). Constants such as :data:`PODS` are the keys controllers
pass to the store.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from wlmvk_dev.apiserver.objects.errors import Cause

Obj = dict[str, Any]
"""A Kubernetes object as plain JSON (dicts, lists, str, int, float, bool, None)."""

Validator = Callable[[Obj], list[Cause]]

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


class GVR(NamedTuple):
    """A resource type: API group ("" for core), version and plural resource name."""

    group: str
    version: str
    resource: str

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def __str__(self) -> str:
        return f"{self.resource}.{self.version}.{self.group}" if self.group else f"{self.resource}.v1"


@dataclass(frozen=True)
class ResourceInfo:
    """How one resource type is served."""

    gvr: GVR
    kind: str
    namespaced: bool
    singular: str
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    """Served subresources, e.g. ``status``, ``binding``, ``log``."""
    verbs: tuple[str, ...] = ALL_VERBS
    printer_columns: tuple[Mapping[str, Any], ...] = ()
    """CRD ``additionalPrinterColumns`` (name, type, jsonPath, priority, ...)."""
    schema: Mapping[str, Any] | None = None
    """The OpenAPI v3 schema of a custom resource version, when it has one."""
    validate: Validator | None = field(default=None, compare=False)
    """Called on every create/update; non-empty causes answer 422 Invalid."""

    @property
    def group(self) -> str:
        return self.gvr.group

    @property
    def plural(self) -> str:
        return self.gvr.resource

    @property
    def api_version(self) -> str:
        return self.gvr.group_version

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources


NAMESPACES = GVR("", "v1", "namespaces")
NODES = GVR("", "v1", "nodes")
PODS = GVR("", "v1", "pods")
EVENTS = GVR("", "v1", "events")
CONFIGMAPS = GVR("", "v1", "configmaps")
SECRETS = GVR("", "v1", "secrets")
SERVICEACCOUNTS = GVR("", "v1", "serviceaccounts")
SERVICES = GVR("", "v1", "services")
EVENTS_V1 = GVR("events.k8s.io", "v1", "events")
LEASES = GVR("coordination.k8s.io", "v1", "leases")
CRDS = GVR("apiextensions.k8s.io", "v1", "customresourcedefinitions")
DEPLOYMENTS = GVR("apps", "v1", "deployments")
DAEMONSETS = GVR("apps", "v1", "daemonsets")
REPLICASETS = GVR("apps", "v1", "replicasets")
STATEFULSETS = GVR("apps", "v1", "statefulsets")
JOBS = GVR("batch", "v1", "jobs")
CLUSTERROLES = GVR("rbac.authorization.k8s.io", "v1", "clusterroles")
CLUSTERROLEBINDINGS = GVR("rbac.authorization.k8s.io", "v1", "clusterrolebindings")
ROLES = GVR("rbac.authorization.k8s.io", "v1", "roles")
ROLEBINDINGS = GVR("rbac.authorization.k8s.io", "v1", "rolebindings")
ADMISSION_POLICIES = GVR("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies")
ADMISSION_POLICY_BINDINGS = GVR("admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings")
SELF_SUBJECT_ACCESS_REVIEWS = GVR("authorization.k8s.io", "v1", "selfsubjectaccessreviews")
SUBJECT_ACCESS_REVIEWS = GVR("authorization.k8s.io", "v1", "subjectaccessreviews")
TOKEN_REVIEWS = GVR("authentication.k8s.io", "v1", "tokenreviews")
REVIEWS = (SELF_SUBJECT_ACCESS_REVIEWS, SUBJECT_ACCESS_REVIEWS, TOKEN_REVIEWS)
"""Asked, answered, never stored."""

_STATUS = ("status",)
_SCALABLE = ("status", "scale")

BUILTINS: tuple[ResourceInfo, ...] = (
    ResourceInfo(NAMESPACES, "Namespace", False, "namespace", ("ns",), subresources=_STATUS),
    ResourceInfo(NODES, "Node", False, "node", ("no",), subresources=("proxy", "status")),
    ResourceInfo(
        PODS,
        "Pod",
        True,
        "pod",
        ("po",),
        ("all",),
        subresources=("status", "binding", "log", "exec", "eviction"),
    ),
    ResourceInfo(EVENTS, "Event", True, "event", ("ev",)),
    ResourceInfo(CONFIGMAPS, "ConfigMap", True, "configmap", ("cm",)),
    ResourceInfo(SECRETS, "Secret", True, "secret"),
    ResourceInfo(SERVICEACCOUNTS, "ServiceAccount", True, "serviceaccount", ("sa",)),
    ResourceInfo(SERVICES, "Service", True, "service", ("svc",), ("all",), subresources=_STATUS),
    ResourceInfo(EVENTS_V1, "Event", True, "event", ("ev",)),
    ResourceInfo(LEASES, "Lease", True, "lease"),
    ResourceInfo(
        CRDS,
        "CustomResourceDefinition",
        False,
        "customresourcedefinition",
        ("crd", "crds"),
        ("api-extensions",),
        subresources=_STATUS,
    ),
    ResourceInfo(
        DEPLOYMENTS, "Deployment", True, "deployment", ("deploy",), ("all",), subresources=_SCALABLE
    ),
    ResourceInfo(DAEMONSETS, "DaemonSet", True, "daemonset", ("ds",), ("all",), subresources=_STATUS),
    ResourceInfo(REPLICASETS, "ReplicaSet", True, "replicaset", ("rs",), ("all",), subresources=_SCALABLE),
    ResourceInfo(
        STATEFULSETS, "StatefulSet", True, "statefulset", ("sts",), ("all",), subresources=_SCALABLE
    ),
    ResourceInfo(JOBS, "Job", True, "job", (), ("all",), subresources=_STATUS),
    ResourceInfo(CLUSTERROLES, "ClusterRole", False, "clusterrole"),
    ResourceInfo(CLUSTERROLEBINDINGS, "ClusterRoleBinding", False, "clusterrolebinding"),
    ResourceInfo(ROLES, "Role", True, "role"),
    ResourceInfo(ROLEBINDINGS, "RoleBinding", True, "rolebinding"),
    ResourceInfo(
        ADMISSION_POLICIES,
        "ValidatingAdmissionPolicy",
        False,
        "validatingadmissionpolicy",
        ("vap",),
        subresources=_STATUS,
    ),
    ResourceInfo(
        ADMISSION_POLICY_BINDINGS,
        "ValidatingAdmissionPolicyBinding",
        False,
        "validatingadmissionpolicybinding",
    ),
    ResourceInfo(
        SELF_SUBJECT_ACCESS_REVIEWS,
        "SelfSubjectAccessReview",
        False,
        "selfsubjectaccessreview",
        verbs=("create",),
    ),
    ResourceInfo(
        SUBJECT_ACCESS_REVIEWS, "SubjectAccessReview", False, "subjectaccessreview", verbs=("create",)
    ),
    ResourceInfo(TOKEN_REVIEWS, "TokenReview", False, "tokenreview", verbs=("create",)),
)
"""Served from the start. apps/batch/rbac objects and admission policies are stored and served,
never run or enforced."""
