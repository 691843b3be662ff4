"""Patch semantics: JSON merge (RFC 7386), JSON patch (RFC 6902), strategic merge, apply.

Strategic merge follows Kubernetes' rules for the built-in kinds as far as the fields we
use: lists of containers, env, volumes, volumeMounts, conditions, ports, ownerReferences
(and a few more, see :data:`MERGE_KEYS`) merge element-wise by their key; other lists are
replaced; ``metadata.finalizers`` merges as a set. The directives ``$patch``
(replace/delete/merge), ``$retainKeys``, ``$deleteFromPrimitiveList/<f>`` and
``$setElementOrder/<f>`` are honoured. Custom resources accept merge and JSON patch only,
as the real server (415 for strategic merge).

Server-side apply (``apply``) is approximated: the applied configuration is merged into
the live object with strategic-merge rules (built-ins) or JSON-merge rules (custom
resources), after :func:`forget_unapplied` removed the fields the same field manager
applied last time and no longer applies. Ownership across managers (managedFields) is
not tracked, so apply never reports conflicts and a field another manager also set is
still removed when its applier drops it.
"""

from __future__ import annotations

from typing import Any

from wlmvk_dev.apiserver.objects.errors import ApiError, ApiInvalid, bad_request, unsupported_media_type
from wlmvk_dev.apiserver.objects.resources import Obj, ResourceInfo

BUILTIN_GROUPS = frozenset(
    {
        "",
        "apps",
        "batch",
        "rbac.authorization.k8s.io",
        "admissionregistration.k8s.io",
        "coordination.k8s.io",
        "events.k8s.io",
        "apiextensions.k8s.io",
    }
)

MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "conditions": "type",
    "imagePullSecrets": "name",
    "ownerReferences": "uid",
    "addresses": "type",
    "hostAliases": "ip",
    "secrets": "name",
    "containerStatuses": "name",
    "initContainerStatuses": "name",
    "topologySpreadConstraints": "topologyKey",
}
"""Field name -> merge key of lists merged element-wise. ``ports`` is keyed by
``containerPort`` (containers) or ``port`` (services). ``tolerations`` and ``taints``
have no merge key in Kubernetes either: they are replaced whole."""

PRIMITIVE_MERGE = frozenset({"finalizers"})

PATCH_TYPES = {
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "strategic",
    "application/json-patch+json": "json",
    "application/apply-patch+yaml": "apply",
    "application/apply-patch+cbor": "apply-cbor",
}


def apply_patch(old: Obj, patch: Any, patch_type: str, info: ResourceInfo) -> Obj:
    """The patched copy of ``old`` (``old`` itself is never changed)."""
    builtin = info.group in BUILTIN_GROUPS
    if patch_type == "merge":
        return _require_obj(merge_patch(old, _require_obj(patch)))
    if patch_type == "json":
        return _require_obj(json_patch(old, patch))
    if patch_type == "strategic":
        if not builtin:
            raise unsupported_media_type(
                "the body of the request was in an unknown format - accepted media types include: "
                "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
            )
        return _require_obj(strategic_merge(old, _require_obj(patch)))
    if patch_type == "apply":
        applied = _require_obj(patch)
        return _require_obj(strategic_merge(old, applied) if builtin else _apply_merge(old, applied))
    raise unsupported_media_type(f"patch type {patch_type!r} is not supported")


def _require_obj(value: Any) -> Obj:
    if not isinstance(value, dict):
        raise bad_request("the patch must be a JSON object")
    return value


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return _copy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _apply_merge(target: Any, patch: Any) -> Any:
    """Merge for server-side apply of custom resources: like RFC 7386 but null is kept out."""
    return merge_patch(target, patch)


# -- strategic merge ------------------------------------------------------------------------


def strategic_merge(target: Any, patch: Any) -> Any:
    """Kubernetes strategic merge patch for maps, with list merge keys by field name."""
    if not isinstance(patch, dict):
        return _copy(patch)
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: _copy(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return None
    result = dict(target) if isinstance(target, dict) else {}
    retain = patch.get("$retainKeys")
    orders: dict[str, list[Any]] = {}
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys"):
            continue
        if key.startswith("$setElementOrder/"):
            orders[key.split("/", 1)[1]] = value
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            drop = set(map(_hashable, value or []))
            if isinstance(result.get(field), list):
                result[field] = [v for v in result[field] if _hashable(v) not in drop]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list):
            result[key] = _merge_list(key, result.get(key), value)
        elif isinstance(value, dict):
            merged = strategic_merge(result.get(key), value)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        else:
            result[key] = value
    for field, order in orders.items():
        if isinstance(result.get(field), list):
            result[field] = _reorder(field, result[field], order)
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _merge_key(field: str, items: list[Any]) -> str | None:
    if field == "ports":
        sample = next((i for i in items if isinstance(i, dict)), {})
        return "containerPort" if "containerPort" in sample else "port"
    return MERGE_KEYS.get(field)


def _merge_list(field: str, live: Any, patch: list[Any]) -> list[Any]:
    current = list(live) if isinstance(live, list) else []
    if field in PRIMITIVE_MERGE:
        out = list(current)
        for v in patch:
            if v not in out:
                out.append(v)
        return out
    if any(isinstance(i, dict) and i.get("$patch") == "replace" for i in patch):
        return [_copy(i) for i in patch if not (isinstance(i, dict) and "$patch" in i)]
    key = _merge_key(field, patch + current)
    if key is None or not all(isinstance(i, dict) for i in patch):
        return [_copy(i) for i in patch]
    out = [i for i in current]
    for item in patch:
        idx = next(
            (
                n
                for n, cur in enumerate(out)
                if isinstance(cur, dict) and key in item and cur.get(key) == item[key]
            ),
            None,
        )
        if item.get("$patch") == "delete":
            if idx is not None:
                del out[idx]
            continue
        if idx is None:
            out.append(strategic_merge({}, item))
        else:
            out[idx] = strategic_merge(out[idx], item)
    return out


def _reorder(field: str, items: list[Any], order: list[Any]) -> list[Any]:
    key = _merge_key(field, items)

    def ident(v: Any) -> Any:
        return _hashable(v.get(key) if key and isinstance(v, dict) else v)

    rank = {ident(o): n for n, o in enumerate(order)}
    if key:
        rank = {_hashable(o.get(key)): n for n, o in enumerate(order) if isinstance(o, dict)}
    return sorted(items, key=lambda v: rank.get(ident(v), len(rank)))


def _hashable(v: Any) -> Any:
    return repr(v) if isinstance(v, dict | list) else v


# -- JSON patch -----------------------------------------------------------------------------


def json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902 JSON patch; a failed ``test`` or a bad path is 422 Invalid."""
    if not isinstance(operations, list):
        raise bad_request("a JSON patch must be an array of operations")
    doc = _copy(target)
    for op in operations:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise bad_request(f"invalid JSON patch operation: {op!r}")
        try:
            doc = _json_op(doc, op)
        except ApiError:
            raise
        except (KeyError, IndexError, ValueError, TypeError) as e:
            # kube-apiserver names neither the operation nor the path
            raise ApiInvalid(
                422, "Invalid", "the server rejected our request due to an error in our request", details={}
            ) from e
    return doc


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise ValueError(f"JSON pointer must start with '/': {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc: Any, parts: list[str]) -> Any:
    cur = doc
    for p in parts:
        cur = cur[int(p)] if isinstance(cur, list) else cur[p]
    return cur


def _json_op(doc: Any, op: dict[str, Any]) -> Any:
    kind, parts = op["op"], _pointer(op["path"])
    if kind == "test":
        if _walk(doc, parts) != op.get("value"):
            raise ValueError("test failed")
        return doc
    if kind in ("move", "copy"):
        src = _pointer(op["from"])
        value = _copy(_walk(doc, src))
        if kind == "move":
            doc = _remove(doc, src)
        return _add(doc, parts, value)
    if kind == "add":
        return _add(doc, parts, _copy(op.get("value")))
    if kind == "remove":
        return _remove(doc, parts)
    if kind == "replace":
        if not parts:
            return _copy(op.get("value"))
        _walk(doc, parts)
        parent = _walk(doc, parts[:-1])
        if isinstance(parent, list):
            parent[int(parts[-1])] = _copy(op.get("value"))
        else:
            parent[parts[-1]] = _copy(op.get("value"))
        return doc
    raise ValueError(f"unknown operation {kind!r}")


def _add(doc: Any, parts: list[str], value: Any) -> Any:
    if not parts:
        return value
    parent = _walk(doc, parts[:-1])
    last = parts[-1]
    if isinstance(parent, list):
        idx = len(parent) if last == "-" else int(last)
        if idx > len(parent) or idx < 0:
            raise IndexError("index out of range")
        parent.insert(idx, value)
    elif isinstance(parent, dict):
        parent[last] = value
    else:
        raise TypeError("parent is not a container")
    return doc


def _remove(doc: Any, parts: list[str]) -> Any:
    parent = _walk(doc, parts[:-1])
    if isinstance(parent, list):
        del parent[int(parts[-1])]
    else:
        del parent[parts[-1]]
    return doc


def _copy(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _copy(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_copy(x) for x in v]
    return v


def forget_unapplied(live: Any, previous: Any, applied: Any, *, builtin: bool, field: str = "") -> Any:
    """``live`` without the fields ``previous`` (an earlier apply) set and ``applied`` drops."""
    if not isinstance(live, dict) or not isinstance(previous, dict) or not isinstance(applied, dict):
        return live
    out = dict(live)
    for key, before in previous.items():
        if key in ("apiVersion", "kind"):
            continue
        if key not in applied:
            out.pop(key, None)
            continue
        now = applied[key]
        if isinstance(before, dict) and isinstance(now, dict):
            out[key] = forget_unapplied(out.get(key), before, now, builtin=builtin, field=key)
        elif (
            builtin and isinstance(before, list) and isinstance(now, list) and isinstance(out.get(key), list)
        ):
            out[key] = _forget_items(key, out[key], before, now, builtin)
    return out


def _forget_items(field: str, live: list[Any], before: list[Any], now: list[Any], builtin: bool) -> list[Any]:
    if field in PRIMITIVE_MERGE:
        dropped = {_hashable(v) for v in before} - {_hashable(v) for v in now}
        return [v for v in live if _hashable(v) not in dropped]
    key = _merge_key(field, before + now)
    if key is None:
        return live

    def index(items: list[Any]) -> dict[Any, Any]:
        return {_hashable(i.get(key)): i for i in items if isinstance(i, dict)}

    was, still = index(before), index(now)
    kept = []
    for item in live:
        ident = _hashable(item.get(key)) if isinstance(item, dict) else None
        if ident in was and ident not in still:
            continue
        if ident in was:
            item = forget_unapplied(item, was[ident], still[ident], builtin=builtin)
        kept.append(item)
    return kept
