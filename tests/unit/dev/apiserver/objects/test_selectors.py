"""Label and field selector parsing and matching."""

from __future__ import annotations

import pytest

from wlmvk_dev.apiserver.objects.errors import ApiError
from wlmvk_dev.apiserver.objects.selectors import (
    parse_field_selector,
    parse_label_selector,
    selector_from_match_labels,
)

LABELS = {"app": "web", "tier": "front", "wlm.sylabs.io/nodes": "1"}


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        ("", True),
        ("app=web", True),
        ("app==web", True),
        ("app=db", False),
        ("app!=db", True),
        ("app!=web", False),
        ("missing!=x", True),
        ("app in (web, db)", True),
        ("app in (db)", False),
        ("app notin (db,x)", True),
        ("app notin (web)", False),
        ("missing notin (web)", True),
        ("tier", True),
        ("missing", False),
        ("!missing", True),
        ("!tier", False),
        ("app=web,tier=front", True),
        ("app=web,tier=back", False),
        ("wlm.sylabs.io/nodes=1, app in (web)", True),
        ("app=", False),
    ],
)
def test_label_selector(selector: str, matches: bool) -> None:
    assert parse_label_selector(selector).matches(LABELS) is matches


def test_label_selector_on_unlabelled_object() -> None:
    assert parse_label_selector("!a").matches(None)
    assert not parse_label_selector("a").matches(None)


@pytest.mark.parametrize("bad", ["app=(x", "a b c", "=x", "app in x"])
def test_malformed_label_selector_is_400(bad: str) -> None:
    with pytest.raises(ApiError) as raised:
        parse_label_selector(bad)
    assert raised.value.code == 400


def test_match_labels_and_expressions() -> None:
    sel = selector_from_match_labels(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["front"]},
                {"key": "gone", "operator": "DoesNotExist"},
            ],
        }
    )
    assert sel.matches(LABELS)
    assert not sel.matches({"app": "web"})


POD = {
    "metadata": {"name": "p1", "namespace": "default"},
    "spec": {"nodeName": "n1", "hostNetwork": False},
    "status": {"phase": "Running"},
}
EVENT = {"involvedObject": {"kind": "Pod", "name": "p1", "uid": "u-1", "namespace": "default"}}


@pytest.mark.parametrize(
    ("selector", "obj", "matches"),
    [
        ("metadata.name=p1", POD, True),
        ("metadata.name==p1", POD, True),
        ("metadata.name!=p1", POD, False),
        ("metadata.namespace=default,spec.nodeName=n1", POD, True),
        ("spec.nodeName=", POD, False),
        ("spec.nodeName!=", POD, True),
        ("status.phase=Running", POD, True),
        ("status.phase!=Running,status.phase!=Pending", POD, False),
        ("spec.hostNetwork=false", POD, True),
        ("spec.schedulerName=", POD, True),
        ("involvedObject.uid=u-1,involvedObject.name=p1,involvedObject.namespace=default", EVENT, True),
        ("involvedObject.kind=Node", EVENT, False),
    ],
)
def test_field_selector(selector: str, obj: dict[str, object], matches: bool) -> None:
    assert parse_field_selector(selector).matches(obj) is matches


def test_field_selector_escapes_and_exact_lookup() -> None:
    sel = parse_field_selector(r"metadata.name=a\,b")
    assert sel.matches({"metadata": {"name": "a,b"}})
    assert parse_field_selector("spec.nodeName=n1,metadata.name!=x").exact("spec.nodeName") == "n1"
    with pytest.raises(ApiError):
        parse_field_selector("nonsense")
