"""Garbage-collector decisions over ownerReferences."""

from __future__ import annotations

from typing import Any

from wlmvk_dev.apiserver.controllers.ownership import (
    Delete,
    DropOwnerRefs,
    Keep,
    blocking_dependents,
    dependent_action,
    dependents_of,
    without_refs,
)


def obj(uid: str, ns: str | None = "default", *owners: dict[str, Any], **meta: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": uid, "uid": uid, **meta}
    if ns:
        metadata["namespace"] = ns
    if owners:
        metadata["ownerReferences"] = list(owners)
    return {"metadata": metadata}


def ref(uid: str, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "name": uid, "uid": uid, **extra}


def lookup(*objects: dict[str, Any]) -> Any:
    by_uid = {o["metadata"]["uid"]: o for o in objects}
    return by_uid.get


def test_no_owner_references_keep() -> None:
    assert dependent_action(obj("d"), lookup()) == Keep()


def test_existing_owner_keeps_the_dependent() -> None:
    owner = obj("o")
    assert dependent_action(obj("d", "default", ref("o")), lookup(owner)) == Keep()


def test_missing_owner_deletes_in_the_background() -> None:
    assert dependent_action(obj("d", "default", ref("o")), lookup()) == Delete("Background")


def test_all_owners_must_be_gone() -> None:
    dependent = obj("d", "default", ref("o1"), ref("o2"))
    assert dependent_action(dependent, lookup(obj("o2"))) == DropOwnerRefs(frozenset({"o1"}))
    assert dependent_action(dependent, lookup()) == Delete("Background")


def test_owner_in_another_namespace_dangles() -> None:
    dependent = obj("d", "team-a", ref("o"))
    assert dependent_action(dependent, lookup(obj("o", "team-b"))) == Delete("Background")


def test_cluster_scoped_owner_of_a_namespaced_dependent_is_fine() -> None:
    dependent = obj("lease", "kube-node-lease", ref("node"))
    assert dependent_action(dependent, lookup(obj("node", None))) == Keep()


def test_namespaced_owner_of_a_cluster_scoped_dependent_dangles() -> None:
    assert dependent_action(obj("d", None, ref("o")), lookup(obj("o"))) == Delete("Background")


def test_owner_deleting_in_background_still_counts() -> None:
    owner = obj("o", deletionTimestamp="2026-01-01T00:00:00Z", finalizers=["example.com/x"])
    assert dependent_action(obj("d", "default", ref("o")), lookup(owner)) == Keep()


def test_foreground_owner_takes_its_dependents_with_it() -> None:
    owner = obj("o", deletionTimestamp="2026-01-01T00:00:00Z", finalizers=["foregroundDeletion"])
    assert dependent_action(obj("d", "default", ref("o")), lookup(owner)) == Delete("Foreground")


def test_foreground_owner_is_dropped_when_another_owner_holds() -> None:
    waiting = obj("o1", deletionTimestamp="2026-01-01T00:00:00Z", finalizers=["foregroundDeletion"])
    dependent = obj("d", "default", ref("o1"), ref("o2"))
    assert dependent_action(dependent, lookup(waiting, obj("o2"))) == DropOwnerRefs(frozenset({"o1"}))


def test_a_dependent_already_being_deleted_is_left_alone() -> None:
    dependent = obj("d", "default", ref("o"), deletionTimestamp="2026-01-01T00:00:00Z")
    assert dependent_action(dependent, lookup()) == Keep()


def test_blocking_dependents_are_those_with_block_owner_deletion() -> None:
    owner = obj("o")
    blocking = obj("d1", "default", ref("o", blockOwnerDeletion=True))
    loose = obj("d2", "default", ref("o"))
    other = obj("d3", "default", ref("x", blockOwnerDeletion=True))
    assert blocking_dependents(owner, [blocking, loose, other]) == [blocking]
    assert dependents_of(owner, [blocking, loose, other]) == [blocking, loose]


def test_without_refs() -> None:
    assert without_refs([ref("a"), ref("b")], frozenset({"a"})) == [ref("b")]
