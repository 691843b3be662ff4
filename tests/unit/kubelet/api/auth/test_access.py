"""The kubelet's access rules: paths to subresources, verbs, users of certificates and reviews."""

from __future__ import annotations

import pytest

from wlmvk.kubelet.api.auth import rules


@pytest.mark.parametrize(
    ("path", "subresources"),
    [
        ("/containerLogs/ns/pod/main", ("proxy",)),
        ("/exec/ns/pod/main", ("proxy",)),
        ("/pods", ("pods", "proxy")),
        ("/runningpods/", ("pods", "proxy")),
        ("/healthz", ("healthz", "proxy")),
        ("/metrics", ("metrics",)),
        ("/metrics/cadvisor", ("metrics",)),
        ("/stats/summary", ("stats",)),
        ("/metrics/resource", ("metrics",)),
        ("/metrics/resource/slurm-c-debug", ("metrics",)),
        ("/logs/syslog", ("log",)),
        ("/podsx", ("proxy",)),
        ("/", ("proxy",)),
    ],
)
def test_subresources_as_the_kubelet_maps_paths(path: str, subresources: tuple[str, ...]) -> None:
    assert rules.subresources_of(path) == subresources


def test_verbs_of_methods() -> None:
    assert [rules.verb_of(m) for m in ("GET", "POST", "PUT", "PATCH", "DELETE")] == [
        "get",
        "create",
        "update",
        "patch",
        "delete",
    ]


def test_pod_of_a_per_pod_path() -> None:
    assert rules.pod_of("/containerLogs/default/my%2Dpod/main") == ("default", "my-pod")
    assert rules.pod_of("/portForward/ns/p") == ("ns", "p")
    assert rules.pod_of("/pods") is None
    assert rules.pod_of("/containerLogs/ns") is None


def test_node_of_a_per_node_path() -> None:
    assert rules.node_of("/metrics/resource/slurm-c-debug") == "slurm-c-debug"
    assert rules.node_of("/metrics/resource/a%2Eb") == "a.b"
    assert rules.node_of("/metrics/resource") is None
    assert rules.node_of("/metrics/resource/") is None
    assert rules.node_of("/metrics/resource/n/x") is None
    assert rules.node_of("/metrics/cadvisor/n") is None


def test_user_of_a_certificate_is_its_common_name_in_its_organizations() -> None:
    peercert = {
        "subject": (
            (("organizationName", "system:masters"),),
            (("commonName", "kube-apiserver-kubelet-client"),),
        )
    }
    assert rules.user_from_certificate(peercert) == rules.User(
        "kube-apiserver-kubelet-client", ("system:masters", rules.AUTHENTICATED)
    )
    assert rules.user_from_certificate({"subject": ((("organizationName", "x"),),)}) is None


def test_bearer_token() -> None:
    assert rules.bearer_token("Bearer abc") == "abc"
    assert rules.bearer_token("bearer  abc ") == "abc"
    assert rules.bearer_token("Basic abc") is None
    assert rules.bearer_token("Bearer ") is None


def test_review_bodies_and_answers() -> None:
    user = rules.User("alice", ("devs",), "u1", {"scopes": ["a"]})
    attrs = rules.attributes(user, "GET", "/pods", "slurm-c-debug")
    assert [a.subresource for a in attrs] == ["pods", "proxy"]
    assert rules.subject_access_review(attrs[0])["spec"] == {
        "user": "alice",
        "groups": ["devs"],
        "uid": "u1",
        "extra": {"scopes": ["a"]},
        "resourceAttributes": {
            "verb": "get",
            "group": "",
            "version": "v1",
            "resource": "nodes",
            "subresource": "pods",
            "name": "slurm-c-debug",
        },
    }
    assert rules.allowed_by({"status": {"allowed": True}})
    assert not rules.allowed_by({"status": {"allowed": True, "denied": True}})
    answer = {"status": {"authenticated": True, "user": {"username": "bob", "groups": ["g"], "uid": "2"}}}
    assert rules.user_from_token_review(answer) == rules.User("bob", ("g",), "2")
    assert rules.user_from_token_review({"status": {"authenticated": False}}) is None
