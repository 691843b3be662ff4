"""The store's writes: create, update (and the status subresource), patch, bind.

Each write checks the object's kind and version, applies the kind's rules (``rules/``:
defaults on create, validation, schemas, patch semantics) and commits the result through
:class:`~wlmvk_dev.apiserver.storage.buckets.Buckets`; ``store.py`` documents their semantics.
"""

from __future__ import annotations

import random
import uuid
from typing import Any

from wlmvk_dev.apiserver.objects.errors import (
    STALE,
    ApiError,
    Cause,
    already_exists,
    bad_request,
    conflict,
    invalid,
    no_resource,
    not_found,
)
from wlmvk_dev.apiserver.objects.jsonvalues import clone, timestamp
from wlmvk_dev.apiserver.objects.resources import GVR, NAMESPACES, PODS, Obj, ResourceInfo
from wlmvk_dev.apiserver.rules import patching, schema, strategies, validation
from wlmvk_dev.apiserver.storage.buckets import Bucket, Buckets

_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"


class Writes(Buckets):
    """Create, update, patch and bind (see ``store.py``)."""

    def create(self, gvr: GVR, obj: Obj, namespace: str | None = None, *, dry_run: bool = False) -> Obj:
        bucket = self._bucket(gvr)
        info = bucket.info
        new = clone(obj)
        if not isinstance(new, dict):
            raise bad_request("the object must be a JSON object")
        self._check_type(info, new)
        meta = new.get("metadata")
        if not isinstance(meta, dict):
            meta = new["metadata"] = {}
        ns = self._ns(info, namespace, meta.get("namespace"))
        if info.namespaced:
            if namespace is not None and meta.get("namespace") not in (None, "", namespace):
                raise bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = ns
            if NAMESPACES in self._buckets:
                home = self._buckets[NAMESPACES].objects.get(("", ns))
                if home is None:
                    raise not_found("namespaces", ns)
                if "deletionTimestamp" in home["metadata"]:
                    raise ApiError(
                        403,
                        "Forbidden",
                        f'{info.plural} "{meta.get("name") or meta.get("generateName", "")}" is forbidden: '
                        f"unable to create new content in namespace {ns} because it is being terminated",
                    )
        else:
            meta.pop("namespace", None)
        if not meta.get("name"):
            if meta.get("generateName"):
                meta["name"] = self._generate(bucket, ns, meta["generateName"])
            else:
                raise invalid(
                    info.kind,
                    "",
                    [_cause("metadata.name", "Required value: name or generateName is required")],
                )
        name = meta["name"]
        if (ns, name) in bucket.objects:
            raise already_exists(info.plural, name, group=info.group)
        for stale in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields"):
            meta.pop(stale, None)
        strategies.prepare_create(info, new)
        self._validate(info, new)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = timestamp(self.now())
        meta["generation"] = 1
        if dry_run:
            return new
        self._commit(bucket, "ADDED", new, None)
        return clone(new)

    def update(
        self,
        gvr: GVR,
        obj: Obj,
        namespace: str | None = None,
        *,
        subresource: str | None = None,
        client: bool = False,
        dry_run: bool = False,
    ) -> Obj:
        bucket = self._bucket(gvr)
        if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
            raise bad_request("the object must be a JSON object with metadata")
        name = obj["metadata"].get("name")
        if not name:
            raise bad_request("metadata.name is required")
        old = self._raw(
            bucket, name, namespace if namespace is not None else obj["metadata"].get("namespace")
        )
        return clone(
            self._replace(bucket, old, clone(obj), subresource=subresource, client=client, dry_run=dry_run)
        )

    def _replace(
        self,
        bucket: Bucket,
        old: Obj,
        new: Obj,
        *,
        subresource: str | None,
        client: bool = False,
        dry_run: bool = False,
    ) -> Obj:
        info = bucket.info
        self._check_type(info, new)
        old_meta, meta = old["metadata"], new.setdefault("metadata", {})
        if meta.get("namespace") not in (None, "", old_meta.get("namespace")) and info.namespaced:
            raise bad_request("the namespace of the object does not match the namespace of the request")
        if meta.get("name") != old_meta["name"]:
            raise bad_request("the name of the object does not match the name on the URL")
        rv = meta.get("resourceVersion")
        if rv not in (None, "") and str(rv) != old_meta["resourceVersion"]:
            raise conflict(info.plural, old_meta["name"], STALE, group=info.group)
        if meta.get("uid") not in (None, "", old_meta["uid"]):
            raise conflict(
                info.plural, old_meta["name"], "Precondition failed: UID in object meta", group=info.group
            )
        if subresource == "status":
            merged = clone(old)
            if "status" in new:
                merged["status"] = new["status"]
            else:
                merged.pop("status", None)
            if info.group in patching.BUILTIN_GROUPS:
                # Built-in status strategies keep the spec, not the labels and annotations
                # (custom resources keep everything but the status).
                for key in ("labels", "annotations"):
                    if key in meta:
                        merged["metadata"][key] = meta[key]
                    else:
                        merged["metadata"].pop(key, None)
            new = merged
        elif subresource is not None:
            raise no_resource()
        else:
            if info.has_status:
                if "status" in old:
                    new["status"] = clone(old["status"])
                else:
                    new.pop("status", None)
            for fixed in (
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "namespace",
            ):
                if fixed in old_meta:
                    meta[fixed] = old_meta[fixed]
                else:
                    meta.pop(fixed, None)
            meta.pop("managedFields", None)
            if "deletionTimestamp" in old_meta:
                added = set(meta.get("finalizers") or ()) - set(old_meta.get("finalizers") or ())
                if added:
                    raise invalid(
                        info.kind,
                        old_meta["name"],
                        [
                            _cause(
                                "metadata.finalizers",
                                "Forbidden: no new finalizers can be added if the object is being deleted",
                            )
                        ],
                        group=info.group,
                    )
        new["metadata"]["generation"] = old_meta.get("generation", 1) + (1 if _spec_changed(old, new) else 0)
        self._validate(info, new, old if client else None, subresource=subresource)
        new["metadata"]["resourceVersion"] = old_meta["resourceVersion"]
        new["apiVersion"], new["kind"] = info.api_version, info.kind
        if new == old or dry_run:
            return new
        if (
            "deletionTimestamp" in old_meta
            and not new["metadata"].get("finalizers")
            and self._may_go(info, new)
        ):
            self._commit(bucket, "DELETED", new, old)
            return new
        self._commit(bucket, "MODIFIED", new, old)
        return new

    @staticmethod
    def _may_go(info: ResourceInfo, obj: Obj) -> bool:
        """Whether a deleting object without finalizers is gone (pods wait for their kubelet)."""
        return info.gvr != PODS or obj["metadata"].get("deletionGracePeriodSeconds", 0) == 0

    def patch(
        self,
        gvr: GVR,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool = False,
        client: bool = False,
        dry_run: bool = False,
    ) -> Obj:
        """Patch an object. ``patch_type``: merge, strategic, json, apply (server-side apply).

        A server-side apply of a missing object creates it. ``dry_run`` computes the result
        without storing it (``kubectl diff``).
        """
        bucket = self._bucket(gvr)
        info = bucket.info
        if patch_type == "apply":
            if not isinstance(patch, dict):
                raise bad_request("an apply patch must be an object")
            try:
                old = self._raw(bucket, name, namespace)
            except ApiError as e:
                if e.code != 404 or subresource:
                    raise
                body = clone(patch)
                body.setdefault("metadata", {})["name"] = name
                made = self.create(gvr, body, namespace, dry_run=dry_run)
                if not dry_run:
                    self._applied[made["metadata"]["uid"]] = {field_manager or "": clone(patch)}
                return made
        else:
            old = self._raw(bucket, name, namespace)
        base = old
        if patch_type == "apply" and subresource is None:
            managers = self._applied.get(old["metadata"]["uid"], {})
            if not dry_run:
                self._applied[old["metadata"]["uid"]] = managers
            previous = managers.get(field_manager or "")
            if previous is not None:
                builtin = info.group in patching.BUILTIN_GROUPS
                base = patching.forget_unapplied(old, previous, patch, builtin=builtin)
            if not dry_run:
                managers[field_manager or ""] = clone(patch)
        new = clone(patching.apply_patch(base, patch, patch_type, info))
        meta = new.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise bad_request("metadata must be an object")
        pinned = isinstance(patch, dict) and "resourceVersion" in (patch.get("metadata") or {})
        if patch_type == "apply" or not pinned:
            meta["resourceVersion"] = old["metadata"]["resourceVersion"]
        meta.setdefault("name", name)
        return clone(self._replace(bucket, old, new, subresource=subresource, client=client, dry_run=dry_run))

    def bind(self, namespace: str, pod_name: str, node_name: str) -> Obj:
        """Bind a pod to a node (``pods/binding``): 409 if it already has one."""
        bucket = self._bucket(PODS)
        old = self._raw(bucket, pod_name, namespace)
        if old["spec"].get("nodeName"):
            raise conflict(
                "pods", pod_name, f"pod {pod_name} is already assigned to node {old['spec']['nodeName']!r}"
            )
        if "deletionTimestamp" in old["metadata"]:
            raise conflict("pods", pod_name, "pod is being deleted, cannot be assigned to a host")
        new = clone(old)
        new["spec"]["nodeName"] = node_name
        conds = [
            c for c in new.setdefault("status", {}).get("conditions", []) if c.get("type") != "PodScheduled"
        ]
        conds.append({"type": "PodScheduled", "status": "True", "lastTransitionTime": timestamp(self.now())})
        new["status"]["conditions"] = conds
        self._commit(bucket, "MODIFIED", new, old)
        return clone(new)

    # -- checks -----------------------------------------------------------------------------

    def _check_type(self, info: ResourceInfo, obj: Obj) -> None:
        kind, api_version = obj.get("kind"), obj.get("apiVersion")
        if info.group not in patching.BUILTIN_GROUPS and api_version not in (None, "", info.api_version):
            raise bad_request(
                f"the API version in the data ({api_version}) does not match the expected API version "
                f"({info.api_version})"
            )
        if info.group == "" and api_version == "v1" and kind not in (None, "", info.kind):
            raise bad_request(
                f'{kind} in version "v1" cannot be handled as a {info.kind}: '
                f"converting (v1.{kind}) to (core.{info.kind}): unknown conversion"
            )
        if kind not in (None, "", info.kind) or api_version not in (None, "", info.api_version):
            raise bad_request(
                f"the API version in the data ({api_version}) and kind ({kind}) do not match "
                f"the expected {info.api_version} {info.kind}"
            )
        if info.gvr == PODS and (wrong := validation.pod_decoding_error(obj)):
            raise bad_request(f'Pod in version "v1" cannot be handled as a Pod: {wrong}')

    def _validate(
        self, info: ResourceInfo, obj: Obj, old: Obj | None = None, *, subresource: str | None = None
    ) -> None:
        causes = validation.validate(info, obj)
        if old is not None:
            causes += validation.validate_update(info, old, obj)
        if info.validate is not None:
            own = info.validate(obj)
            if subresource == "status" and info.schema is not None:
                own = schema.relative_to_status(own)
            causes += own
        if info.schema is not None:
            causes += schema.rule_causes(info.schema, old, obj, causes)
        if causes:
            raise invalid(info.kind, obj["metadata"].get("name", ""), causes, group=info.group)

    def _generate(self, bucket: Bucket, namespace: str, prefix: str) -> str:
        for _ in range(100):
            name = prefix + "".join(random.choices(_NAME_CHARS, k=5))
            if (namespace, name) not in bucket.objects:
                return name
        raise ApiError(500, "AlreadyExists", "could not generate a unique name")


def _spec_changed(old: Obj, new: Obj) -> bool:
    skip = ("metadata", "status", "apiVersion", "kind")
    return {k: v for k, v in old.items() if k not in skip} != {k: v for k, v in new.items() if k not in skip}


def _cause(field: str, message: str) -> Cause:
    return Cause(
        field, message, "FieldValueRequired" if message.startswith("Required") else "FieldValueInvalid"
    )
