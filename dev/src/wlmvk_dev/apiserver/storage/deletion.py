"""The store's deletions: graceful pod deletion, finalizers, propagation, namespaces.

As kube-apiserver: finalizers (and ``Foreground``'s ``foregroundDeletion``) hold an object
with a ``deletionTimestamp``; a pod bound to a node is marked with its grace period and
goes when its kubelet deletes it with grace 0; ``Orphan`` strips the owner's references
from its dependents; a namespace is marked Terminating, its contents deleted by these same
rules, and removed once empty (``Buckets._finish_namespace``). ``store.py`` documents the API.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from wlmvk_dev.apiserver.objects import timestamps
from wlmvk_dev.apiserver.objects.errors import ApiError, bad_request, conflict
from wlmvk_dev.apiserver.objects.jsonvalues import clone, timestamp
from wlmvk_dev.apiserver.objects.resources import GVR, NAMESPACES, PODS, Obj
from wlmvk_dev.apiserver.objects.selectors import FieldSelector, LabelSelector
from wlmvk_dev.apiserver.rules import strategies
from wlmvk_dev.apiserver.storage.buckets import Bucket, Buckets, ObjList


class Deletions(Buckets):
    """Delete and delete a collection (see ``store.py``)."""

    def delete(
        self,
        gvr: GVR,
        name: str,
        namespace: str | None = None,
        *,
        grace_period_seconds: int | None = None,
        propagation_policy: str | None = None,
        preconditions: dict[str, Any] | None = None,
        dry_run: bool = False,
    ) -> Obj:
        bucket = self._bucket(gvr)
        info = bucket.info
        old = self._raw(bucket, name, namespace)
        if dry_run:
            return clone(old)
        meta = old["metadata"]
        for key, label, why in (
            ("uid", "UID", "deleted and then recreated"),
            ("resourceVersion", "ResourceVersion", "modified"),
        ):
            want = (preconditions or {}).get(key)
            if want and want != meta.get(key):
                raise conflict(
                    info.kind,
                    name,
                    f"the {label} in the precondition ({want}) does not match the {label} in record "
                    f"({meta.get(key)}). The object might have been {why}",
                )
        if propagation_policy not in (None, "Background", "Foreground", "Orphan"):
            raise bad_request(f"unsupported propagationPolicy {propagation_policy!r}")
        if gvr == NAMESPACES:
            return self._terminate_namespace(old)
        if propagation_policy == "Orphan":
            self._orphan(meta["uid"])
        finalizers = list(meta.get("finalizers") or ())
        if propagation_policy == "Foreground" and "foregroundDeletion" not in finalizers:
            finalizers.append("foregroundDeletion")
        if gvr == PODS:
            return self._delete_pod(bucket, old, finalizers, grace_period_seconds)
        if not finalizers:
            gone_obj = clone(old)
            self._commit(bucket, "DELETED", gone_obj, old)
            return clone(gone_obj)
        new = clone(old)
        nmeta = new["metadata"]
        nmeta["finalizers"] = finalizers
        if "deletionTimestamp" not in nmeta:
            nmeta["deletionTimestamp"] = timestamp(self.now())
            nmeta["deletionGracePeriodSeconds"] = 0
            nmeta["generation"] = nmeta.get("generation", 0) + 1
        if new != old:
            self._commit(bucket, "MODIFIED", new, old)
        return clone(new)

    def _delete_pod(self, bucket: Bucket, old: Obj, finalizers: Sequence[str], requested: int | None) -> Obj:
        """Pod deletion as kube-apiserver's graceful strategy does it: the pod is first marked
        (``deletionTimestamp``, ``deletionGracePeriodSeconds``, generation + 1 the first time),
        a later delete may only shorten the grace period, and a grace period of 0 is written
        (MODIFIED) before the pod goes (DELETED), unless it already was 0."""
        meta = old["metadata"]
        grace = strategies.pod_grace_seconds(old, requested)
        marked_grace = meta.get("deletionGracePeriodSeconds")
        if "deletionTimestamp" in meta and not marked_grace:
            new = old  # marked with grace 0 already: it goes now (or when its finalizers do)
        elif "deletionTimestamp" in meta and grace >= marked_grace:
            return clone(old)  # a deletion with a shorter grace period is pending
        else:
            new = clone(old)
            nmeta = new["metadata"]
            if finalizers:
                nmeta["finalizers"] = list(finalizers)
            if "deletionTimestamp" in meta:
                marked = timestamps.parse(meta["deletionTimestamp"]) or self.now()
                started = marked - timedelta(seconds=marked_grace)
            else:
                started = self.now()
                nmeta["generation"] = nmeta.get("generation", 0) + 1
            nmeta["deletionTimestamp"] = timestamp(started + timedelta(seconds=grace))
            nmeta["deletionGracePeriodSeconds"] = grace
            self._commit(bucket, "MODIFIED", new, old)
        if finalizers or new["metadata"]["deletionGracePeriodSeconds"]:
            return clone(new)
        gone_obj = clone(new)
        self._commit(bucket, "DELETED", gone_obj, new)
        return clone(gone_obj)

    def delete_collection(
        self,
        gvr: GVR,
        namespace: str | None = None,
        *,
        label_selector: str | LabelSelector | None = None,
        field_selector: str | FieldSelector | None = None,
        grace_period_seconds: int | None = None,
        propagation_policy: str | None = None,
    ) -> ObjList:
        found = self.list(
            gvr, namespace, label_selector=label_selector, field_selector=field_selector, copy=False
        )
        done = []
        for obj in found.items:
            meta = obj["metadata"]
            try:
                done.append(
                    self.delete(
                        gvr,
                        meta["name"],
                        meta.get("namespace"),
                        grace_period_seconds=grace_period_seconds,
                        propagation_policy=propagation_policy,
                    )
                )
            except ApiError as e:
                if e.code != 404:
                    raise
        return done

    def _terminate_namespace(self, namespace: Obj) -> Obj:
        """Mark the namespace Terminating, delete its contents as clients would, and let it go
        once it is empty (bound pods wait for their kubelet, finalizers hold their objects)."""
        name = namespace["metadata"]["name"]
        if "deletionTimestamp" not in namespace["metadata"]:
            marked = clone(namespace)
            marked["metadata"]["deletionTimestamp"] = timestamp(self.now())
            marked["metadata"]["deletionGracePeriodSeconds"] = 0
            marked.setdefault("status", {})["phase"] = "Terminating"
            self._commit(self._buckets[NAMESPACES], "MODIFIED", marked, namespace)
            for bucket in list(self._buckets.values()):
                if not bucket.info.namespaced:
                    continue
                for (ns, obj_name), obj in list(bucket.objects.items()):
                    if ns == name and "deletionTimestamp" not in obj["metadata"]:
                        try:
                            self.delete(bucket.info.gvr, obj_name, ns)
                        except ApiError as e:
                            if e.code != 404:  # gone already, e.g. a mirrored Event
                                raise
        self._finish_namespace(name)
        current = self._buckets[NAMESPACES].objects.get(("", name))
        if current is not None:
            return clone(current)
        return clone(self._buckets[NAMESPACES].history[-1].object)

    def _orphan(self, owner_uid: str) -> None:
        for bucket in list(self._buckets.values()):
            for obj in list(bucket.objects.values()):
                refs = obj["metadata"].get("ownerReferences") or []
                kept = [r for r in refs if r.get("uid") != owner_uid]
                if len(kept) != len(refs):
                    new = clone(obj)
                    if kept:
                        new["metadata"]["ownerReferences"] = kept
                    else:
                        del new["metadata"]["ownerReferences"]
                    self._commit(bucket, "MODIFIED", new, obj)
