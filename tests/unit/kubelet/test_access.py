"""The kubelet's access rules: paths to subresources, verbs, users of certificates and reviews."""

from __future__ import annotations

import pytest

from wlmvk.kubelet import access


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
    assert access.subresources_of(path) == subresources


def test_verbs_of_methods() -> None:
    assert [access.verb_of(m) for m in ("GET", "POST", "PUT", "PATCH", "DELETE")] == [
        "get",
        "create",
        "update",
        "patch",
        "delete",
    ]


def test_pod_of_a_per_pod_path() -> None:
    assert access.pod_of("/containerLogs/default/my%2Dpod/main") == ("default", "my-pod")
    assert access.pod_of("/portForward/ns/p") == ("ns", "p")
    assert access.pod_of("/pods") is None
    assert access.pod_of("/containerLogs/ns") is None


def test_node_of_a_per_node_path() -> None:
    assert access.node_of("/metrics/resource/slurm-c-debug") == "slurm-c-debug"
    assert access.node_of("/metrics/resource/a%2Eb") == "a.b"
    assert access.node_of("/metrics/resource") is None
    assert access.node_of("/metrics/resource/") is None
    assert access.node_of("/metrics/resource/n/x") is None
    assert access.node_of("/metrics/cadvisor/n") is None


def test_user_of_a_certificate_is_its_common_name_in_its_organizations() -> None:
    peercert = {
        "subject": (
            (("organizationName", "system:masters"),),
            (("commonName", "kube-apiserver-kubelet-client"),),
        )
    }
    assert access.user_from_certificate(peercert) == access.User(
        "kube-apiserver-kubelet-client", ("system:masters", access.AUTHENTICATED)
    )
    assert access.user_from_certificate({"subject": ((("organizationName", "x"),),)}) is None


def test_bearer_token() -> None:
    assert access.bearer_token("Bearer abc") == "abc"
    assert access.bearer_token("bearer  abc ") == "abc"
    assert access.bearer_token("Basic abc") is None
    assert access.bearer_token("Bearer ") is None


def test_review_bodies_and_answers() -> None:
    user = access.User("alice", ("devs",), "u1", {"scopes": ["a"]})
    attrs = access.attributes(user, "GET", "/pods", "slurm-c-debug")
    assert [a.subresource for a in attrs] == ["pods", "proxy"]
    assert access.subject_access_review(attrs[0])["spec"] == {
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
    assert access.allowed_by({"status": {"allowed": True}})
    assert not access.allowed_by({"status": {"allowed": True, "denied": True}})
    answer = {"status": {"authenticated": True, "user": {"username": "bob", "groups": ["g"], "uid": "2"}}}
    assert access.user_from_token_review(answer) == access.User("bob", ("g",), "2")
    assert access.user_from_token_review({"status": {"authenticated": False}}) is None
