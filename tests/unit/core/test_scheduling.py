"""kube-scheduler's rules: nodeSelector, node affinity, taints, tolerations, and validation's refusals."""

from __future__ import annotations

from typing import Any

import pytest

from wlmvk.core import scheduling
from wlmvk.core.scheduling import Problem, parse_int64, requirement_matches, tolerates


def node(name: str = "n1", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}}


def req(key: str, operator: str, *values: str) -> dict[str, Any]:
    r: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        r["values"] = list(values)
    return r


def pod_matches_node(pod: dict[str, Any], node: dict[str, Any]) -> bool:
    return scheduling.affinity_matches(pod["spec"], node["metadata"]["labels"], node["metadata"]["name"])


def term_matches(term: dict[str, Any], node: dict[str, Any]) -> bool:
    return scheduling.term_matches(term, node["metadata"]["labels"], node["metadata"]["name"])


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


@pytest.mark.parametrize(
    "requirement",
    [
        req("missing", "NotIn"),
        req("zone", "In"),
        req("missing", "DoesNotExist", "x"),
        req("cpus", "Lt", "9", "10"),
    ],
)
def test_shapes_validation_refuses_match_no_node(requirement: dict[str, Any]) -> None:
    # The scheduler's parser refuses them too: the term they are in matches nothing.
    assert requirement_matches(requirement, LABELS) is False


PROVIDER = {"key": "virtual-kubelet.io/provider", "value": "wlm", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("toleration", "expected"),
    [
        ({"key": PROVIDER["key"], "operator": "Equal", "value": "wlm", "effect": "NoSchedule"}, True),
        ({"key": "virtual-kubelet.io/provider", "value": "wlm"}, True),
        ({"key": "virtual-kubelet.io/provider", "operator": "Equal", "value": "other"}, False),
        ({"key": "virtual-kubelet.io/provider", "operator": "Exists"}, True),
        ({"key": "virtual-kubelet.io/provider", "operator": "Exists", "effect": "NoExecute"}, False),
        ({"key": "virtual-kubelet.io/provider", "operator": "Exists", "effect": "NoSchedule"}, True),
        ({"operator": "Exists"}, True),
        ({"key": "", "operator": "Exists"}, True),
        ({"operator": "Exists", "effect": "NoExecute"}, False),
        ({"key": "other", "operator": "Exists"}, False),
        ({"key": "virtual-kubelet.io/provider", "operator": "Bogus", "value": "wlm"}, False),
        ({"key": "virtual-kubelet.io/provider", "operator": "Gt", "value": "wlm"}, False),
        ({"key": "virtual-kubelet.io/provider"}, False),
        ({"operator": "Equal", "value": "wlm"}, True),
    ],
)
def test_tolerates(toleration: dict[str, Any], expected: bool) -> None:
    assert tolerates(toleration, PROVIDER) is expected


def test_empty_value_taint_is_tolerated_by_equal_without_value() -> None:
    taint = {"key": "gpu", "effect": "NoSchedule"}
    assert tolerates({"key": "gpu", "operator": "Equal"}, taint)
    assert tolerates({"key": "gpu", "value": ""}, taint)
    assert not tolerates({"key": "gpu", "value": "x"}, taint)


def test_only_noschedule_and_noexecute_keep_pods_away() -> None:
    prefer = {"key": "a", "effect": "PreferNoSchedule"}
    execute = {"key": "b", "effect": "NoExecute"}
    assert scheduling.first_untolerated([prefer], []) is None
    assert scheduling.first_untolerated([prefer, execute], []) == execute
    assert scheduling.first_untolerated([prefer, execute], [{"key": "b", "operator": "Exists"}]) is None


def test_first_untolerated_is_in_node_order() -> None:
    a = {"key": "a", "effect": "NoSchedule"}
    b = {"key": "b", "value": "1", "effect": "NoSchedule"}
    assert scheduling.first_untolerated([a, b], []) == a
    assert scheduling.first_untolerated([a, b], [{"key": "a", "operator": "Exists"}]) == b


def full_node(name: str, labels: dict[str, str], *, taints: list[Any] | None = None, **spec: Any) -> Any:
    return {"metadata": {"name": name, "labels": labels}, "spec": {"taints": taints or [], **spec}}


def test_fits_combines_unschedulable_taints_and_affinity() -> None:
    cordoned = full_node("c", {"zone": "a"}, unschedulable=True)
    tainted = full_node("t", {"zone": "a"}, taints=[PROVIDER])
    assert not scheduling.fits({}, cordoned)
    assert scheduling.fits(
        {"tolerations": [{"key": scheduling.TAINT_UNSCHEDULABLE, "operator": "Exists"}]}, cordoned
    )
    assert not scheduling.fits({}, tainted)
    assert scheduling.fits({"tolerations": [{"operator": "Exists"}]}, tainted)
    assert not scheduling.fits(
        {"tolerations": [{"operator": "Exists"}], "nodeSelector": {"zone": "b"}}, tainted
    )


@pytest.mark.parametrize(
    ("requirement", "field", "problem"),
    [
        (
            req("a", "NotIn"),
            False,
            Problem(
                "values",
                "Required value: must be specified when `operator` is 'In' or 'NotIn'",
                "FieldValueRequired",
            ),
        ),
        (
            req("a", "Exists", "x"),
            False,
            Problem(
                "values",
                "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                "FieldValueForbidden",
            ),
        ),
        (
            req("a", "Gt", "1", "2"),
            False,
            Problem(
                "values",
                "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'",
                "FieldValueRequired",
            ),
        ),
        (
            req("a", "Bogus", "1"),
            False,
            Problem("operator", 'Invalid value: "Bogus": not a valid selector operator', "FieldValueInvalid"),
        ),
        (
            {"key": "metadata.name", "operator": "In", "values": ["a", "b"]},
            True,
            Problem(
                "values",
                "Required value: must be only one value when `operator` is 'In' or 'NotIn'"
                " for node field selector",
                "FieldValueRequired",
            ),
        ),
        (
            {"key": "metadata.labels", "operator": "In", "values": ["a"]},
            True,
            Problem(
                "key", 'Invalid value: "metadata.labels": not a valid field selector key', "FieldValueInvalid"
            ),
        ),
    ],
)
def test_requirement_problems_in_kube_apiservers_words(
    requirement: dict[str, Any], field: bool, problem: Problem
) -> None:
    assert scheduling.requirement_problems(requirement, field=field) == [problem]


def test_valid_requirements_have_no_problem() -> None:
    # Gt with a bound that does not parse passes validation; only the scheduler refuses it.
    for requirement in (req("a", "In", "x"), req("a", "Exists"), req("a", "Gt", "x")):
        assert scheduling.requirement_problems(requirement) == []


@pytest.mark.parametrize(
    ("toleration", "messages"),
    [
        (
            {"key": "a", "operator": "Bogus", "value": "x"},
            ['Unsupported value: "Bogus": supported values: "Equal", "Exists"'],
        ),
        (
            {"key": "a", "operator": "Gt", "value": "5"},
            ['Unsupported value: "Gt": supported values: "Equal", "Exists", "Lt", "Gt"'],
        ),
        (
            {"key": "a", "operator": "Exists", "value": "x"},
            ["Invalid value: \"x\": value must be empty when `operator` is 'Exists'"],
        ),
        (
            {"operator": "Equal", "value": "x"},
            [
                'Invalid value: "Equal": operator must be Exists when `key` is empty,'
                ' which means "match all values and all keys"'
            ],
        ),
        (
            {"key": "a", "effect": "NoSchedule", "tolerationSeconds": 5},
            ["Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set"],
        ),
        (
            {"key": "a", "effect": "Bogus"},
            ['Unsupported value: "Bogus": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"'],
        ),
        ({"key": "a", "value": "x"}, []),
        ({"operator": "Exists"}, []),
    ],
)
def test_toleration_problems_in_kube_apiservers_words(
    toleration: dict[str, Any], messages: list[str]
) -> None:
    assert [p.message for p in scheduling.toleration_problems(toleration)] == messages
