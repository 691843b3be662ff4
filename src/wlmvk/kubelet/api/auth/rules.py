"""Who may use the kubelet API, as the kubelet decides it: the pure rules.

The real kubelet authenticates a request by its client certificate (the user
is the certificate's CommonName, the groups its Organizations), else by its
bearer token (a TokenReview to the API server), else, only when anonymous
access is on, as ``system:anonymous``. It then authorizes the request with a
SubjectAccessReview on the ``nodes`` resource, the node's name, the verb of
the HTTP method and a subresource named after the path
(``pkg/kubelet/server/auth.go``): ``/stats`` -> ``stats``, ``/metrics`` ->
``metrics``, ``/logs`` -> ``log``, everything else (``/containerLogs``,
``/exec``...) -> ``proxy``; with fine-grained authorization (on by default
since v1.33), ``/pods`` may use ``pods`` and ``/healthz`` ``healthz``, with
``proxy`` as the fallback. This module holds those rules and the review
bodies; ``gate`` does the I/O.

One wlmvk kubelet serves several nodes (one per partition): a request about
one pod is authorized on the pod's node, one about one node
(``/metrics/resource/<node>``) on that node; any other (``/pods``, ``/healthz``,
a pod it does not run) on every node it serves, since it answers for them
all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from wlmvk.kube import objects

ANONYMOUS = "system:anonymous"
UNAUTHENTICATED = "system:unauthenticated"
AUTHENTICATED = "system:authenticated"

_VERBS = {
    "GET": "get",
    "HEAD": "get",
    "POST": "create",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}
_POD_PATHS = ("containerLogs", "exec", "attach", "portForward", "run")


@dataclass(frozen=True)
class User:
    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: dict[str, list[str]] = field(default_factory=dict, compare=False, hash=False)


ANONYMOUS_USER = User(ANONYMOUS, (UNAUTHENTICATED,))


@dataclass(frozen=True)
class Attributes:
    """One question for the authorizer: may ``user`` do ``verb`` on ``nodes/<subresource>`` of ``node``."""

    user: User
    verb: str
    subresource: str
    node: str
    path: str = field(compare=False)
    """Not asked about (the review names the node's subresource): one decision serves every path,
    so an exec into a second pod of the node is not reviewed again, as the kubelet's webhook cache
    keys its decisions by the review alone."""


def verb_of(method: str) -> str:
    return _VERBS.get(method.upper(), "")


def subresources_of(path: str) -> tuple[str, ...]:
    """The subresources a path is authorized as, in the order they are tried."""

    def under(prefix: str) -> bool:
        return path == prefix or path.startswith(prefix + "/")

    fine: tuple[str, ...] = ()
    if under("/pods") or under("/runningpods"):
        fine = ("pods",)
    elif under("/healthz"):
        fine = ("healthz",)
    elif under("/configz"):
        fine = ("configz",)
    if under("/stats"):
        return (*fine, "stats")
    if under("/metrics"):
        return (*fine, "metrics")
    if under("/logs"):
        return (*fine, "log")
    if under("/checkpoint"):
        return (*fine, "checkpoint")
    return (*fine, "proxy")


def attributes(user: User, method: str, path: str, node: str) -> tuple[Attributes, ...]:
    """The alternatives that allow a request on one node: any one suffices."""
    verb = verb_of(method)
    return tuple(Attributes(user, verb, sub, node, path) for sub in subresources_of(path))


def pod_of(path: str) -> tuple[str, str] | None:
    """(namespace, pod) of a per-pod path such as ``/containerLogs/{namespace}/{pod}/{container}``."""
    parts = path.split("/")
    if len(parts) >= 4 and parts[0] == "" and parts[1] in _POD_PATHS and parts[2] and parts[3]:
        return unquote(parts[2]), unquote(parts[3])
    return None


def node_of(path: str) -> str | None:
    """The node of a per-node path: ``/metrics/resource/{node}`` (``resource_metrics.node_path``)."""
    parts = path.split("/")
    if len(parts) == 4 and parts[:3] == ["", "metrics", "resource"] and parts[3]:
        return unquote(parts[3])
    return None


def user_from_certificate(peercert: dict[str, Any]) -> User | None:
    """The user of a verified client certificate (``ssl.SSLSocket.getpeercert()``): CN and O."""
    names: list[str] = []
    groups: list[str] = []
    for rdn in peercert.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                names.append(value)
            elif key == "organizationName":
                groups.append(value)
    if not names or not names[0]:
        return None
    return User(names[0], (*groups, AUTHENTICATED))


def bearer_token(authorization: str) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header."""
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def token_review(token: str) -> dict[str, Any]:
    return {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": token},
    }


def user_from_token_review(answer: dict[str, Any]) -> User | None:
    """The user a TokenReview answer names, None when the token was not authenticated."""
    status = objects.status(answer)
    if not status.get("authenticated"):
        return None
    info = status.get("user") or {}
    name = str(info.get("username") or "")
    if not name:
        return None
    extra = {str(k): [str(v) for v in values] for k, values in (info.get("extra") or {}).items()}
    groups = tuple(str(g) for g in info.get("groups") or ())
    return User(name, groups, str(info.get("uid") or ""), extra)


def subject_access_review(attrs: Attributes) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "user": attrs.user.name,
        "groups": list(attrs.user.groups),
        "resourceAttributes": {
            "verb": attrs.verb,
            "group": "",
            "version": "v1",
            "resource": "nodes",
            "subresource": attrs.subresource,
            "name": attrs.node,
        },
    }
    if attrs.user.uid:
        spec["uid"] = attrs.user.uid
    if attrs.user.extra:
        spec["extra"] = attrs.user.extra
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}


def allowed_by(answer: dict[str, Any]) -> bool:
    status = objects.status(answer)
    return bool(status.get("allowed")) and not status.get("denied")


def forbidden_message(alternatives: tuple[Attributes, ...]) -> str:
    """The kubelet's 403 text."""
    first = alternatives[0]
    subresources = " ".join(a.subresource for a in alternatives)
    return (
        f"Forbidden (user={first.user.name}, verb={first.verb}, resource=nodes, "
        f"subresource(s)=[{subresources}])"
    )
