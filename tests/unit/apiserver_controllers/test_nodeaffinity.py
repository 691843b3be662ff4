"""nodeSelector and required node affinity, as kube-scheduler's NodeAffinity filter."""

from __future__ import annotations

from typing import Any

import pytest

from wlmvk_dev.apiserver.nodeaffinity import (
    parse_int64,
    pod_matches_node,
    preferred_weight,
    requirement_matches,
    term_matches,
)


def node(name: str = "n1", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}}


def req(key: str, operator: str, *values: str) -> dict[str, Any]:
    r: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        r["values"] = list(values)
    return r


def pod(*terms: dict[str, Any], selector: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if selector is not None:
        spec["nodeSelector"] = selector
    if terms:
        required = {"nodeSelectorTerms": list(terms)}
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}
    return {"metadata": {"name": "p"}, "spec": spec}


LABELS = {"zone": "a", "cpus": "8", "mem": "-16", "big": "9223372036854775807", "word": "x8", "empty": ""}


@pytest.mark.parametrize(
    ("requirement", "matches"),
    [
        (req("zone", "In", "a", "b"), True),
        (req("zone", "In", "b"), False),
        (req("missing", "In", "a"), False),
        (req("zone", "NotIn", "b"), True),
        (req("zone", "NotIn", "a", "b"), False),
        (req("missing", "NotIn", "a"), True),
        (req("zone", "Exists"), True),
        (req("empty", "Exists"), True),
        (req("missing", "Exists"), False),
        (req("zone", "Exists", "a"), False),
        (req("missing", "DoesNotExist"), True),
        (req("zone", "DoesNotExist"), False),
        (req("cpus", "Gt", "4"), True),
        (req("cpus", "Gt", "8"), False),
        (req("cpus", "Gt", "+7"), True),
        (req("cpus", "Lt", "9"), True),
        (req("cpus", "Lt", "8"), False),
        (req("mem", "Lt", "-15"), True),
        (req("mem", "Gt", "-17"), True),
        (req("big", "Gt", "9223372036854775806"), True),
        (req("cpus", "Gt", "4", "5"), False),
        (req("cpus", "Gt"), False),
        (req("cpus", "Gt", "4.5"), False),
        (req("cpus", "Gt", " 4"), False),
        (req("cpus", "Gt", "1_0"), False),
        (req("word", "Gt", "1"), False),
        (req("missing", "Lt", "100"), False),
        (req("cpus", "Gt", "9223372036854775808"), False),
        (req("zone", "Matches", "a"), False),
        (req("zone", "in", "a"), False),
    ],
)
def test_each_operator(requirement: dict[str, Any], matches: bool) -> None:
    assert requirement_matches(requirement, LABELS) is matches


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("0", 0),
        ("-1", -1),
        ("+5", 5),
        ("007", 7),
        ("9223372036854775807", 2**63 - 1),
        ("-9223372036854775808", -(2**63)),
    ],
)
def test_parse_int64_accepts_go_integers(text: str, number: int) -> None:
    assert parse_int64(text) == number


@pytest.mark.parametrize(
    "text", ["", "1.0", "1e3", "0x10", "\u0661", "9223372036854775808", " 1", "1_000", "+"]
)
def test_parse_int64_rejects_what_go_rejects(text: str) -> None:
    assert parse_int64(text) is None


def test_node_selector_needs_every_label() -> None:
    assert pod_matches_node(pod(selector={"zone": "a"}), node(zone="a", rack="1"))
    assert not pod_matches_node(pod(selector={"zone": "a", "rack": "2"}), node(zone="a", rack="1"))
    assert not pod_matches_node(pod(selector={"zone": "a"}), node())


def test_empty_selector_and_no_affinity_match_every_node() -> None:
    assert pod_matches_node(pod(selector={}), node())
    assert pod_matches_node({"spec": {}}, node())


def test_terms_are_ored_and_expressions_anded() -> None:
    both = {"matchExpressions": [req("zone", "In", "a"), req("cpus", "Gt", "16")]}
    other = {"matchExpressions": [req("word", "Exists")]}
    n = node(**LABELS)
    assert not pod_matches_node(pod(both), n)
    assert pod_matches_node(pod(both, other), n)


def test_empty_term_matches_nothing() -> None:
    assert not term_matches({}, node(**LABELS))
    assert not term_matches({"matchExpressions": [], "matchFields": []}, node(**LABELS))
    assert not pod_matches_node(pod({}), node(**LABELS))


def test_no_terms_match_nothing() -> None:
    p = {"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}}}}
    assert not pod_matches_node(p, node())


def test_match_fields_on_node_name() -> None:
    term_in = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}
    term_not = {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n2"]}]}
    assert pod_matches_node(pod(term_in), node("n2"))
    assert not pod_matches_node(pod(term_in), node("n1"))
    assert pod_matches_node(pod(term_not), node("n1"))
    assert not pod_matches_node(pod(term_not), node("n2"))


@pytest.mark.parametrize(
    "field",
    [
        {"key": "metadata.labels", "operator": "In", "values": ["n1"]},
        {"key": "metadata.name", "operator": "Exists"},
        {"key": "metadata.name", "operator": "In", "values": ["n1", "n2"]},
    ],
)
def test_invalid_match_fields_match_nothing(field: dict[str, Any]) -> None:
    assert not pod_matches_node(pod({"matchFields": [field]}), node("n1"))


def test_fields_and_expressions_in_one_term_are_anded() -> None:
    term = {
        "matchExpressions": [req("zone", "In", "a")],
        "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}],
    }
    assert pod_matches_node(pod(term), node("n1", zone="a"))
    assert not pod_matches_node(pod(term), node("n2", zone="a"))
    assert not pod_matches_node(pod(term), node("n1", zone="b"))


def test_selector_and_affinity_must_both_hold() -> None:
    p = pod({"matchExpressions": [req("zone", "In", "a")]}, selector={"rack": "1"})
    assert pod_matches_node(p, node(zone="a", rack="1"))
    assert not pod_matches_node(p, node(zone="a", rack="2"))
    assert not pod_matches_node(p, node(zone="b", rack="1"))


def test_preferred_weights_add_up_over_matching_terms() -> None:
    p = {
        "spec": {
            "affinity": {
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 10, "preference": {"matchExpressions": [req("zone", "In", "a")]}},
                        {"weight": 5, "preference": {"matchExpressions": [req("rack", "Exists")]}},
                        {"weight": 80, "preference": {}},
                    ]
                }
            }
        }
    }
    assert preferred_weight(p, node(zone="a", rack="1")) == 15
    assert preferred_weight(p, node(zone="b")) == 0
