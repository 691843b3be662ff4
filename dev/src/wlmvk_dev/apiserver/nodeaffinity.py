"""Does a node match a pod's nodeSelector and required node affinity?

The rules are kube-scheduler's NodeAffinity filter:

- ``spec.nodeSelector``: every label must be present with exactly that value;
- ``requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms``: the terms
  are ORed, the requirements inside one term (matchExpressions and matchFields)
  are ANDed, and a term with no requirement matches nothing;
- operators In, NotIn, Exists, DoesNotExist, and Gt/Lt which parse both the
  label and the single value as base-10 int64 (as Go's ``strconv.ParseInt``:
  optional sign, digits only) and never match when either does not parse;
- matchFields knows only ``metadata.name`` with In/NotIn.

A malformed term (unknown operator, wrong number of values) matches nothing,
like the scheduler, which drops terms it cannot parse.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

Body = dict[str, Any]

_INT64 = re.compile(r"^[+-]?[0-9]+$")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def parse_int64(text: str) -> int | None:
    """Go's ``strconv.ParseInt(text, 10, 64)``, or None where it returns an error."""
    if not _INT64.match(text):
        return None
    number = int(text)
    return number if _INT64_MIN <= number <= _INT64_MAX else None


def requirement_matches(requirement: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """One ``matchExpressions`` item against a node's labels."""
    key = requirement.get("key", "")
    operator = requirement.get("operator", "")
    values: list[str] = list(requirement.get("values") or [])
    present = key in labels
    if operator == "In":
        return bool(values) and present and labels[key] in values
    if operator == "NotIn":
        return bool(values) and (not present or labels[key] not in values)
    if operator == "Exists":
        return not values and present
    if operator == "DoesNotExist":
        return not values and not present
    if operator in ("Gt", "Lt"):
        if not present or len(values) != 1:
            return False
        label, bound = parse_int64(labels[key]), parse_int64(values[0])
        if label is None or bound is None:
            return False
        return label > bound if operator == "Gt" else label < bound
    return False


def field_matches(requirement: Mapping[str, Any], node_name: str) -> bool:
    """One ``matchFields`` item; only ``metadata.name`` with In/NotIn and one value is valid."""
    values: list[str] = list(requirement.get("values") or [])
    if requirement.get("key") != "metadata.name" or len(values) != 1:
        return False
    if requirement.get("operator") == "In":
        return node_name in values
    if requirement.get("operator") == "NotIn":
        return node_name not in values
    return False


def term_matches(term: Mapping[str, Any], node: Body) -> bool:
    """A nodeSelectorTerm: all its requirements hold; an empty term matches nothing."""
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return False
    labels = node_labels(node)
    name = node.get("metadata", {}).get("name", "")
    return all(requirement_matches(r, labels) for r in expressions) and all(
        field_matches(f, name) for f in fields
    )


def node_selector_matches(selector: Mapping[str, Any], node: Body) -> bool:
    """A NodeSelector: any of its terms matches."""
    return any(term_matches(term, node) for term in selector.get("nodeSelectorTerms") or [])


def pod_matches_node(pod: Body, node: Body) -> bool:
    """The NodeAffinity filter: nodeSelector AND required node affinity."""
    spec = pod.get("spec", {})
    labels = node_labels(node)
    for key, wanted in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != wanted:
            return False
    affinity = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    return affinity is None or node_selector_matches(affinity, node)


def preferred_weight(pod: Body, node: Body) -> int:
    """Sum of the weights of the preferred node-affinity terms the node matches."""
    node_affinity = (pod.get("spec", {}).get("affinity") or {}).get("nodeAffinity") or {}
    preferred = node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or []
    return sum(
        int(item.get("weight", 0)) for item in preferred if term_matches(item.get("preference") or {}, node)
    )


def node_labels(node: Body) -> dict[str, str]:
    labels: dict[str, str] = node.get("metadata", {}).get("labels") or {}
    return labels
