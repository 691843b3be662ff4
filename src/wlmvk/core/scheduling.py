"""Which nodes kube-scheduler lets a pod onto: nodeSelector, node affinity, taints and tolerations.

One reading of Kubernetes' rules, shared by the operator (which predicts a job's partition
before its pod exists, to stage data there) and by wlmvk_dev's in-memory scheduler. Two
copies of these rules drifted apart before (``NotIn`` without values matched every node in
one and none in the other), so both import this module, and the in-memory scheduler's
fidelity is checked against the real kube-scheduler (tests/e2e/fidelity/test_scheduling.py).

The rules, from k8s.io/component-helpers/scheduling/corev1/nodeaffinity,
k8s.io/apimachinery's ``labels.NewRequirement`` and core/v1 ``Toleration.ToleratesTaint``:

- ``nodeSelector``: every label present with exactly that value;
- required node affinity: the terms are ORed, the requirements of one term
  (matchExpressions and matchFields) ANDed; an empty term matches nothing, and so does a
  term that does not parse: In/NotIn without values, Exists/DoesNotExist with values,
  Gt/Lt without exactly one value that parses as an int64, an unknown operator;
- Gt/Lt read the node's label as an int64 too (Go's ``strconv.ParseInt``: optional sign,
  digits only) and never match a label that does not parse;
- matchFields knows ``metadata.name`` with In/NotIn and exactly one value;
- a toleration tolerates a taint when its effect is empty or the taint's, its key empty or
  the taint's, and its operator Exists, or Equal (or empty) with the taint's value; any
  other operator tolerates nothing;
- only NoSchedule and NoExecute taints keep a pod off; an unschedulable node takes a pod
  that tolerates ``node.kubernetes.io/unschedulable:NoSchedule``.

kube-apiserver refuses most malformed shapes when the pod is created, so the scheduler
never sees them: :func:`requirement_problems` and :func:`toleration_problems` say what
its validation says, in its words (checked on a v1.36 kube-apiserver).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Body = Mapping[str, Any]

TAINT_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
TAINT_NOT_READY = "node.kubernetes.io/not-ready"
TAINT_UNREACHABLE = "node.kubernetes.io/unreachable"
FILTERING_EFFECTS = ("NoSchedule", "NoExecute")
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
FIELD_NAME = "metadata.name"

_INT64 = re.compile(r"^[+-]?[0-9]+$")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def parse_int64(text: str) -> int | None:
    """Go's ``strconv.ParseInt(text, 10, 64)``, or None where it returns an error."""
    if not _INT64.match(text):
        return None
    number = int(text)
    return number if _INT64_MIN <= number <= _INT64_MAX else None


# -- validation: the shapes kube-apiserver refuses at pod creation ------------------------------


@dataclass(frozen=True)
class Problem:
    """One refusal of kube-apiserver's validation: the field under the checked item, its words."""

    field: str
    message: str
    reason: str


def _quote(value: object) -> str:
    return '"' + str(value).replace('"', '\\"') + '"'


def requirement_problems(requirement: Body, *, field: bool = False) -> list[Problem]:
    """Why validation refuses one matchExpressions (or, ``field``, matchFields) item."""
    operator = str(requirement.get("operator") or "")
    values: Sequence[object] = requirement.get("values") or []
    if field:
        return _field_problems(requirement, operator, values)
    if operator in ("In", "NotIn"):
        if not values:
            return [_required("values", "must be specified when `operator` is 'In' or 'NotIn'")]
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            return [
                Problem(
                    "values",
                    "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    "FieldValueForbidden",
                )
            ]
    elif operator in ("Gt", "Lt"):
        if len(values) != 1:
            return [_required("values", "must be specified single value when `operator` is 'Lt' or 'Gt'")]
    else:
        return [_invalid("operator", operator, "not a valid selector operator")]
    return []


def _field_problems(requirement: Body, operator: str, values: Sequence[object]) -> list[Problem]:
    if requirement.get("key") != FIELD_NAME:
        return [_invalid("key", requirement.get("key") or "", "not a valid field selector key")]
    if operator not in ("In", "NotIn"):
        return [_invalid("operator", operator, "not a valid selector operator")]
    if len(values) != 1:
        return [
            _required(
                "values", "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"
            )
        ]
    return []


def toleration_problems(toleration: Body) -> list[Problem]:
    """Why validation refuses one toleration (label syntax of key and value aside)."""
    problems = []
    key, operator = str(toleration.get("key") or ""), str(toleration.get("operator") or "")
    value, effect = str(toleration.get("value") or ""), str(toleration.get("effect") or "")
    if not key and operator != "Exists":
        problems.append(
            _invalid(
                "operator",
                operator,
                'operator must be Exists when `key` is empty, which means "match all values and all keys"',
            )
        )
    if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
        problems.append(
            _invalid("effect", effect, "effect must be 'NoExecute' when `tolerationSeconds` is set")
        )
    if operator == "Exists" and value:
        problems.append(_invalid("operator", value, "value must be empty when `operator` is 'Exists'"))
    elif operator not in ("", "Equal", "Exists"):
        # v1.36 lists Lt and Gt only when refusing them (TaintTolerationComparisonOperators off).
        supported = ("Equal", "Exists", "Lt", "Gt") if operator in ("Lt", "Gt") else ("Equal", "Exists")
        problems.append(_not_supported("operator", operator, supported))
    if effect and effect not in EFFECTS:
        problems.append(_not_supported("effect", effect, EFFECTS))
    return problems


def _required(field: str, detail: str) -> Problem:
    return Problem(field, f"Required value: {detail}", "FieldValueRequired")


def _invalid(field: str, value: object, detail: str) -> Problem:
    return Problem(field, f"Invalid value: {_quote(value)}: {detail}", "FieldValueInvalid")


def _not_supported(field: str, value: str, supported: Sequence[str]) -> Problem:
    listed = ", ".join(_quote(s) for s in supported)
    return Problem(
        field, f"Unsupported value: {_quote(value)}: supported values: {listed}", "FieldValueNotSupported"
    )


# -- node affinity -------------------------------------------------------------------------------


def requirement_matches(requirement: Body, labels: Mapping[str, str]) -> bool:
    """One matchExpressions item against a node's labels (False when it does not parse)."""
    if requirement_problems(requirement):
        return False
    key, operator = requirement.get("key", ""), requirement.get("operator")
    values = [str(v) for v in requirement.get("values") or []]
    value = labels.get(key)
    if operator == "In":
        return value is not None and value in values
    if operator == "NotIn":
        return value is None or value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    bound, have = parse_int64(values[0]), parse_int64(value) if value is not None else None
    if bound is None or have is None:
        return False
    return have > bound if operator == "Gt" else have < bound


def field_matches(requirement: Body, node_name: str) -> bool:
    """One matchFields item (only ``metadata.name``, In/NotIn, one value parses)."""
    if requirement_problems(requirement, field=True):
        return False
    inside = node_name in [str(v) for v in requirement.get("values") or []]
    return inside if requirement.get("operator") == "In" else not inside


def term_matches(term: Body, labels: Mapping[str, str], node_name: str) -> bool:
    """A nodeSelectorTerm: all its requirements hold; an empty term matches nothing."""
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return False
    return all(requirement_matches(e, labels) for e in expressions) and all(
        field_matches(f, node_name) for f in fields
    )


def selector_matches(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    """A pod's ``nodeSelector``: every label present with exactly that value."""
    return all(labels.get(key) == value for key, value in selector.items())


def affinity_matches(pod_spec: Body, labels: Mapping[str, str], node_name: str) -> bool:
    """kube-scheduler's NodeAffinity filter: nodeSelector AND required node affinity."""
    if not selector_matches(pod_spec.get("nodeSelector") or {}, labels):
        return False
    node_affinity = (pod_spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return True
    return any(term_matches(t, labels, node_name) for t in required.get("nodeSelectorTerms") or [])


# -- taints and tolerations ----------------------------------------------------------------------


def tolerates(toleration: Body, taint: Body) -> bool:
    """core/v1 ``Toleration.ToleratesTaint``."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    if operator == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def tolerated(tolerations: Iterable[Body], taint: Body) -> bool:
    return any(tolerates(t, taint) for t in tolerations)


def first_untolerated(
    taints: Iterable[Body], tolerations: Iterable[Body], effects: Sequence[str] = FILTERING_EFFECTS
) -> Body | None:
    """The first taint with one of ``effects`` that no toleration tolerates."""
    tolerations = list(tolerations)
    for taint in taints:
        if taint.get("effect") in effects and not tolerated(tolerations, taint):
            return taint
    return None


def unschedulable_tolerated(tolerations: Iterable[Body]) -> bool:
    """kube-scheduler's NodeUnschedulable filter lets such a pod onto a cordoned node."""
    return tolerated(tolerations, {"key": TAINT_UNSCHEDULABLE, "effect": "NoSchedule"})


def fits(pod_spec: Body, node: Body) -> bool:
    """The node passes the filters that depend on no other pod: unschedulable, taints, affinity."""
    meta, spec = node.get("metadata") or {}, node.get("spec") or {}
    tolerations = pod_spec.get("tolerations") or []
    if spec.get("unschedulable") and not unschedulable_tolerated(tolerations):
        return False
    if first_untolerated(spec.get("taints") or [], tolerations) is not None:
        return False
    return affinity_matches(pod_spec, meta.get("labels") or {}, str(meta.get("name") or ""))
