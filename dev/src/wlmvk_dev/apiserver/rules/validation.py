"""Validation the real API server applies to every object of the built-in rules we rely on.

Names (DNS-1123 subdomain for most kinds, DNS-1123 label for namespaces, path segments
for RBAC), label keys and values, and the pod fields a pod cannot exist without
(``spec.containers``, each with a DNS-label ``name``), and the node-affinity and
toleration shapes kube-scheduler could not read (``core.scheduling`` says which).
Messages are the real server's, so a bug that a cluster would refuse is refused here
too. (A real server also requires each container's ``image``; this one does not, so
tests may omit it.)
"""

from __future__ import annotations

import re
from typing import Any

from wlmvk.core import scheduling
from wlmvk_dev.apiserver.objects.errors import Cause
from wlmvk_dev.apiserver.objects.resources import EVENTS, LEASES, NAMESPACES, PODS, Obj, ResourceInfo

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = re.compile(rf"^{_LABEL}(\.{_LABEL})*$")
_DNS_LABEL = re.compile(rf"^{_LABEL}$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation "
    "is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
DNS_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
    "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
LABEL_NAME_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


def _quote(value: Any) -> str:
    return '"' + str(value).replace('"', '\\"') + '"'


def validate(info: ResourceInfo, obj: Obj) -> list[Cause]:
    """Every violation of the built-in rules by ``obj``."""
    causes = _name(info, (obj.get("metadata") or {}).get("name", ""))
    causes += _labels((obj.get("metadata") or {}).get("labels"))
    if info.gvr == PODS:
        causes += _pod(obj.get("spec") or {})
    elif info.gvr == LEASES:
        causes += _lease(obj.get("spec") or {})
    elif info.gvr == EVENTS:
        causes += _event(obj)
    return causes


def _lease(spec: dict[str, Any]) -> list[Cause]:
    causes = []
    duration = spec.get("leaseDurationSeconds")
    if isinstance(duration, int) and duration <= 0:
        causes.append(
            Cause("spec.leaseDurationSeconds", f"Invalid value: {duration}: must be greater than 0")
        )
    transitions = spec.get("leaseTransitions")
    if isinstance(transitions, int) and transitions < 0:
        causes.append(
            Cause(
                "spec.leaseTransitions", f"Invalid value: {transitions}: must be greater than or equal to 0"
            )
        )
    return causes


def _event(event: Obj) -> list[Cause]:
    """core/v1 Events: kube-apiserver's legacy rules (a "new" Event is one with an eventTime)."""
    namespace = (event.get("metadata") or {}).get("namespace", "")
    involved = str((event.get("involvedObject") or {}).get("namespace") or "")
    mismatch = Cause(
        "involvedObject.namespace", f"Invalid value: {_quote(involved)}: does not match event.namespace"
    )
    if not event.get("eventTime"):
        if (not involved and namespace not in ("", "default")) or (involved and involved != namespace):
            return [mismatch]
        return []
    causes = []
    if not involved and namespace not in ("default", "kube-system"):
        causes.append(mismatch)
    for name in ("reportingComponent", "reportingInstance", "action", "reason"):
        if not event.get(name):
            causes.append(Cause(name, "Required value", "FieldValueRequired"))
    return causes


def _name(info: ResourceInfo, name: str) -> list[Cause]:
    if info.group == "rbac.authorization.k8s.io":
        bad = name in (".", "..") or "/" in name or "%" in name
        return (
            [Cause("metadata.name", f"Invalid value: {_quote(name)}: may not contain '/' or '%'")]
            if bad
            else []
        )
    if info.gvr == NAMESPACES:
        if len(name) > 63 or not _DNS_LABEL.match(name):
            return [Cause("metadata.name", f"Invalid value: {_quote(name)}: {DNS_LABEL_MSG}")]
        return []
    if len(name) > 253:
        return [Cause("metadata.name", f"Invalid value: {_quote(name)}: must be no more than 253 characters")]
    if not _SUBDOMAIN.match(name):
        return [Cause("metadata.name", f"Invalid value: {_quote(name)}: {SUBDOMAIN_MSG}")]
    return []


def _labels(labels: Any) -> list[Cause]:
    if not isinstance(labels, dict):
        return []
    causes = []
    for key, value in labels.items():
        causes += _label_key("metadata.labels", key)
        if not isinstance(value, str):
            causes.append(Cause("metadata.labels", f"Invalid value: {_quote(value)}: must be a string"))
        else:
            causes += _label_value("metadata.labels", value)
    return causes


def _label_key(field: str, key: object) -> list[Cause]:
    prefix, _, name = str(key).rpartition("/")
    if prefix and (len(prefix) > 253 or not _SUBDOMAIN.match(prefix)):
        return [Cause(field, f"Invalid value: {_quote(key)}: prefix part {SUBDOMAIN_MSG}")]
    if len(name) > 63 or not _LABEL_NAME.match(name):
        return [Cause(field, f"Invalid value: {_quote(key)}: {LABEL_NAME_MSG}")]
    return []


def _label_value(field: str, value: str) -> list[Cause]:
    if len(value) > 63:
        return [Cause(field, f"Invalid value: {_quote(value)}: must be no more than 63 characters")]
    if not _LABEL_VALUE.match(value):
        return [Cause(field, f"Invalid value: {_quote(value)}: {LABEL_VALUE_MSG}")]
    return []


def pod_decoding_error(pod: Obj) -> str:
    """What Go's JSON decoder says of a pod whose resource lists are not maps ("" if they are).

    kube-apiserver cannot even decode such a pod, so it answers 400 before any validation.
    """
    spec = pod.get("spec")
    for kind in ("initContainers", "containers"):
        for container in (spec.get(kind) or []) if isinstance(spec, dict) else []:
            resources = container.get("resources") if isinstance(container, dict) else None
            for field in ("limits", "requests"):
                value = resources.get(field) if isinstance(resources, dict) else None
                if value is not None and not isinstance(value, dict):
                    return (
                        f"json: cannot unmarshal {_json_type(value)} into Go struct field "
                        f"ResourceRequirements.spec.{kind}.resources.{field} of type v1.ResourceList"
                    )
    return ""


def _json_type(value: object) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "string"
    if isinstance(value, int | float):
        return "number"
    return "array"


def _pod(spec: dict[str, Any]) -> list[Cause]:
    containers = spec.get("containers")
    if not containers:
        return [Cause("spec.containers", "Required value", "FieldValueRequired")]
    causes = []
    for kind in ("initContainers", "containers"):
        for n, container in enumerate(spec.get(kind) or []):
            path = f"spec.{kind}[{n}]"
            name = container.get("name") if isinstance(container, dict) else None
            if not name:
                causes.append(Cause(f"{path}.name", "Required value", "FieldValueRequired"))
            elif len(name) > 63 or not _DNS_LABEL.match(name):
                causes.append(Cause(f"{path}.name", f"Invalid value: {_quote(name)}: {DNS_LABEL_MSG}"))
    return causes + _node_affinity(spec) + _tolerations(spec)


def _node_affinity(spec: dict[str, Any]) -> list[Cause]:
    """The node-affinity shapes kube-scheduler could not parse (rules in ``core.scheduling``)."""
    node_affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    path = "spec.affinity.nodeAffinity"
    causes = []
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is not None:
        terms = required.get("nodeSelectorTerms") or []
        where = f"{path}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
        if not terms:
            causes.append(
                Cause(
                    where, "Required value: must have at least one node selector term", "FieldValueRequired"
                )
            )
        for n, term in enumerate(terms):
            causes += _term(f"{where}[{n}]", term)
    preferred = node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or []
    for n, item in enumerate(preferred):
        where = f"{path}.preferredDuringSchedulingIgnoredDuringExecution[{n}].preference"
        causes += _term(where, item.get("preference") or {})
    return causes


def _term(path: str, term: dict[str, Any]) -> list[Cause]:
    causes = []
    for n, requirement in enumerate(term.get("matchExpressions") or []):
        where = f"{path}.matchExpressions[{n}]"
        causes += _problems(where, scheduling.requirement_problems(requirement))
        causes += _label_key(f"{where}.key", requirement.get("key", ""))
        for m, value in enumerate(requirement.get("values") or []):
            causes += _label_value(f"{where}.values[{m}]", str(value))
    for n, requirement in enumerate(term.get("matchFields") or []):
        causes += _problems(
            f"{path}.matchFields[{n}]", scheduling.requirement_problems(requirement, field=True)
        )
    return causes


def _tolerations(spec: dict[str, Any]) -> list[Cause]:
    causes = []
    for n, toleration in enumerate(spec.get("tolerations") or []):
        where = f"spec.tolerations[{n}]"
        if toleration.get("key"):
            causes += _label_key(f"{where}.key", toleration["key"])
        causes += _problems(where, scheduling.toleration_problems(toleration))
        if (toleration.get("operator") or "Equal") == "Equal":
            # kube-apiserver names the operator as the field of a bad value.
            causes += _label_value(f"{where}.operator", str(toleration.get("value") or ""))
    return causes


def _problems(path: str, problems: list[scheduling.Problem]) -> list[Cause]:
    return [Cause(f"{path}.{p.field}", p.message, p.reason) for p in problems]


POD_UPDATE_MSG = (
    "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
    "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
    "(allow it to be set to 1 if it was previously negative)"
)


CONTAINERS_MSG = "Forbidden: pod updates may not add or remove containers"


def validate_update(info: ResourceInfo, old: Obj, new: Obj) -> list[Cause]:
    """Rules about changes: a pod's spec is immutable but for a few fields, and its QoS class."""
    if info.gvr != PODS:
        return []
    qos_before = (old.get("status") or {}).get("qosClass")
    qos_after = (new.get("status") or {}).get("qosClass")
    if qos_before and qos_after and qos_after != qos_before:
        return [
            Cause("status.qosClass", f'Invalid value: "{qos_after}": field is immutable', "FieldValueInvalid")
        ]
    for kind in ("containers", "initContainers"):
        if len((old.get("spec") or {}).get(kind) or []) != len((new.get("spec") or {}).get(kind) or []):
            return [Cause(f"spec.{kind}", CONTAINERS_MSG, "FieldValueForbidden")]
    before, after = _mutable_removed(old.get("spec") or {}), _mutable_removed(new.get("spec") or {})
    if before != after:
        return [Cause("spec", POD_UPDATE_MSG, "FieldValueForbidden")]
    kept = [
        t
        for t in (old.get("spec") or {}).get("tolerations") or []
        if t not in ((new.get("spec") or {}).get("tolerations") or [])
    ]
    if kept:
        return [Cause("spec.tolerations", POD_UPDATE_MSG, "FieldValueForbidden")]
    return []


def _mutable_removed(spec: dict[str, Any]) -> dict[str, Any]:
    out = {
        k: v
        for k, v in spec.items()
        if k not in ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds")
    }
    for kind in ("containers", "initContainers"):
        if isinstance(out.get(kind), list):
            out[kind] = [
                {k: v for k, v in c.items() if k != "image"} if isinstance(c, dict) else c for c in out[kind]
            ]
    return out
