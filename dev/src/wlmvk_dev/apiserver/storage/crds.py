"""CustomResourceDefinitions: each served version of a CRD becomes a resource type.

:func:`install` hooks the store so that creating, changing or deleting a CRD registers
or unregisters its resource types at once (discovery shows them on the next request, as
kubectl needs when it applies a CR right after its CRD), marks the CRD Established, and
validates custom resources against the version's ``openAPIV3Schema`` after pruning the
fields it does not declare.
"""

from __future__ import annotations

import functools
from typing import Any

from wlmvk_dev.apiserver.objects.errors import Cause
from wlmvk_dev.apiserver.objects.resources import CRDS, GVR, Obj, ResourceInfo
from wlmvk_dev.apiserver.rules import schema
from wlmvk_dev.apiserver.storage.store import Store, clone, timestamp


def install(store: Store) -> None:
    """Serve CRDs' resources from now on (and validate CRDs themselves)."""
    info = store.info(CRDS)
    store.register(ResourceInfo(**{**_fields(info), "validate": validate_crd}))
    store.on_change(CRDS, functools.partial(_changed, store))


def _fields(info: ResourceInfo) -> dict[str, Any]:
    return {f: getattr(info, f) for f in info.__dataclass_fields__}


def validate_crd(crd: Obj) -> list[Cause]:
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    causes = []
    for field, value in (
        ("spec.group", spec.get("group")),
        ("spec.names.plural", names.get("plural")),
        ("spec.names.kind", names.get("kind")),
        ("spec.scope", spec.get("scope")),
    ):
        if not value:
            causes.append(Cause(field, "Required value", "FieldValueRequired"))
    if spec.get("scope") not in (None, "Namespaced", "Cluster"):
        causes.append(
            Cause(
                "spec.scope",
                f'Unsupported value: "{spec["scope"]}": supported values: "Cluster", "Namespaced"',
            )
        )
    versions = spec.get("versions") or []
    if not versions or sum(1 for v in versions if v.get("storage")) != 1:
        causes.append(
            Cause("spec.versions", "Invalid value: must have exactly one version marked as storage version")
        )
    want = f"{names.get('plural')}.{spec.get('group')}"
    if not causes and crd.get("metadata", {}).get("name") != want:
        causes.append(
            Cause(
                "metadata.name",
                f'Invalid value: "{crd["metadata"].get("name")}": must be spec.names.plural+"."+spec.group',
            )
        )
    return causes


def resource_infos(crd: Obj) -> list[ResourceInfo]:
    """One ResourceInfo per served version of ``crd``."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    infos = []
    for version in spec.get("versions") or []:
        if not version.get("served", True):
            continue
        subs = version.get("subresources") or {}
        sch = (version.get("schema") or {}).get("openAPIV3Schema")
        infos.append(
            ResourceInfo(
                gvr=GVR(spec["group"], version["name"], names["plural"]),
                kind=names["kind"],
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                singular=names.get("singular") or names["kind"].lower(),
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                subresources=tuple(s for s in ("status", "scale") if s in subs),
                printer_columns=tuple(version.get("additionalPrinterColumns") or ()),
                schema=sch,
                validate=functools.partial(_validate_cr, sch) if sch else None,
            )
        )
    return infos


def _validate_cr(sch: dict[str, Any], obj: Obj) -> list[Cause]:
    schema.prune(sch, obj)
    return schema.validate(sch, obj)


def _changed(store: Store, type: str, crd: Obj, previous: Obj | None) -> None:
    old = {i.gvr for i in resource_infos(previous)} if previous else set()
    if type == "DELETED":
        for gvr in old:
            store.unregister(gvr)
        return
    new = resource_infos(crd)
    for gvr in old - {i.gvr for i in new}:
        store.unregister(gvr)
    for info in new:
        store.register(info)
    if type == "ADDED":
        _establish(store, crd)


def _establish(store: Store, crd: Obj) -> None:
    status = clone(crd.get("status") or {})
    now = timestamp(store.now())
    status["acceptedNames"] = clone(crd["spec"]["names"])
    status["storedVersions"] = [v["name"] for v in crd["spec"]["versions"] if v.get("storage")]
    status["conditions"] = [
        {
            "type": "NamesAccepted",
            "status": "True",
            "reason": "NoConflicts",
            "message": "no conflicts found",
            "lastTransitionTime": now,
        },
        {
            "type": "Established",
            "status": "True",
            "reason": "InitialNamesAccepted",
            "message": "the initial names have been accepted",
            "lastTransitionTime": now,
        },
    ]
    body = {**clone(crd), "status": status}
    body["metadata"].pop("resourceVersion", None)
    store.update(CRDS, body, subresource="status")
