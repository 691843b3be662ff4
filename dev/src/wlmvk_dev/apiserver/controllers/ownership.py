"""Garbage-collection decisions over ownerReferences, as functions of values.

The rules are the kube-controller-manager garbage collector's:

- An owner reference is *dangling* when no object with that uid exists, or the
  one that does lives in another namespace than its namespaced dependent (or is
  namespaced while the dependent is cluster-scoped).
- An owner is *waiting* when it is being deleted in the foreground (it carries
  a deletionTimestamp and the ``foregroundDeletion`` finalizer); otherwise it
  is *solid*.
- A dependent with at least one solid owner stays; references to dangling and
  waiting owners are removed from it. A dependent with no solid owner is
  deleted: in the foreground when one of its owners waits, else in the
  background.
- A foreground owner loses its finalizer (and so is deleted) once no dependent
  with ``blockOwnerDeletion: true`` remains. An owner deleted with the
  ``orphan`` finalizer first has its references removed from every dependent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from wlmvk.kube.bodies import Body

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"


@dataclass(frozen=True)
class Keep:
    pass


@dataclass(frozen=True)
class DropOwnerRefs:
    uids: frozenset[str]


@dataclass(frozen=True)
class Delete:
    propagation: Literal["Background", "Foreground"]


DependentAction = Keep | DropOwnerRefs | Delete
OwnerLookup = Callable[[str], Body | None]
"""Finds an object of any kind by uid, or None."""


def uid(body: Mapping[str, Any]) -> str:
    found: str = (body.get("metadata") or {}).get("uid", "")
    return found


def namespace(body: Mapping[str, Any]) -> str:
    found: str = (body.get("metadata") or {}).get("namespace") or ""
    return found


def owner_refs(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    refs: list[Mapping[str, Any]] = (body.get("metadata") or {}).get("ownerReferences") or []
    return refs


def finalizers(body: Mapping[str, Any]) -> list[str]:
    found: list[str] = (body.get("metadata") or {}).get("finalizers") or []
    return found


def is_deleting(body: Mapping[str, Any]) -> bool:
    return bool((body.get("metadata") or {}).get("deletionTimestamp"))


def is_waiting(owner: Mapping[str, Any]) -> bool:
    """Being deleted in the foreground, waiting for its blocking dependents."""
    return is_deleting(owner) and FOREGROUND in finalizers(owner)


def resolve_owner(dependent: Mapping[str, Any], ref: Mapping[str, Any], find: OwnerLookup) -> Body | None:
    """The owner ``ref`` points at, or None when the reference dangles."""
    owner = find(str(ref.get("uid", "")))
    if owner is None:
        return None
    owner_ns = namespace(owner)
    if owner_ns and owner_ns != namespace(dependent):
        return None
    return owner


def dependent_action(dependent: Mapping[str, Any], find: OwnerLookup) -> DependentAction:
    """What the collector does to an object given the current state of its owners."""
    refs = owner_refs(dependent)
    if not refs or is_deleting(dependent):
        return Keep()
    solid, dropped, waiting = False, set(), False
    for ref in refs:
        owner = resolve_owner(dependent, ref, find)
        if owner is None:
            dropped.add(str(ref.get("uid", "")))
        elif is_waiting(owner):
            waiting = True
            dropped.add(str(ref.get("uid", "")))
        else:
            solid = True
    if solid:
        return DropOwnerRefs(frozenset(dropped)) if dropped else Keep()
    return Delete("Foreground" if waiting else "Background")


def blocking_dependents(
    owner: Mapping[str, Any], objects: Iterable[Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    """Dependents whose ``blockOwnerDeletion`` holds ``owner``'s foreground deletion."""
    owner_uid = uid(owner)
    return [
        obj
        for obj in objects
        if any(r.get("uid") == owner_uid and r.get("blockOwnerDeletion") for r in owner_refs(obj))
    ]


def dependents_of(owner: Mapping[str, Any], objects: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    owner_uid = uid(owner)
    return [obj for obj in objects if any(r.get("uid") == owner_uid for r in owner_refs(obj))]


def without_refs(refs: Iterable[Mapping[str, Any]], uids: frozenset[str]) -> list[Mapping[str, Any]]:
    return [r for r in refs if r.get("uid") not in uids]
