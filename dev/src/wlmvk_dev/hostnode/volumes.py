"""A host-kubelet pod's volumes as host directories, and each container's mounts.

- ``hostPath``: the host path itself, after the kubelet's type check
  (``DirectoryOrCreate`` creates a 0755 directory, ``FileOrCreate`` an empty
  0644 file; ``Directory``, ``File``, ``Socket``, ``CharDevice``,
  ``BlockDevice`` must already be one; an empty type checks nothing);
- ``emptyDir``: a fresh 0777 directory under the pod's directory (``medium:
  Memory`` is a plain directory too);
- ``configMap`` / ``secret`` / ``downwardAPI``: a directory with one file per
  key (or per ``items`` entry), mode ``defaultMode`` (0644);
- ``projected``: the files of its configMap, secret and downwardAPI sources in
  one directory, and each ``serviceAccountToken`` at its path (the tokens come
  in from the caller, keyed by :func:`token_requests`' (audience, seconds));
  this is the ``kube-api-access-*`` volume a real API server adds to pods;
- anything else fails the mount when a container mounts it.

A failure is a :class:`MountFailed` whose message is the kubelet's
``MountVolume.SetUp failed for volume "x" : ...``.
"""

from __future__ import annotations

import base64
import os
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from wlmvk.core.errors import FailedPrecondition, WlmvkError
from wlmvk_dev.hostnode import env as podenv

Lookup = podenv.Lookup
Tokens = Mapping[tuple[str, int], str]
"""(audience, expirationSeconds) -> a token of the pod's ServiceAccount bound to the pod."""
Files = dict[str, tuple[bytes, int]]


class MountFailed(FailedPrecondition):
    """A volume could not be set up (the pod stays ContainerCreating and the kubelet retries)."""


_TYPE_CHECKS: dict[str, tuple[Callable[[int], bool], str]] = {
    "Directory": (stat.S_ISDIR, "is not a directory"),
    "File": (stat.S_ISREG, "is not a file"),
    "Socket": (stat.S_ISSOCK, "is not a socket file"),
    "CharDevice": (stat.S_ISCHR, "is not a character device"),
    "BlockDevice": (stat.S_ISBLK, "is not a block device"),
}


def check_host_path(path: str, kind: str) -> None:
    """The kubelet's hostPath type check (creating for the *OrCreate types); ``ValueError`` if it fails."""
    if kind in ("", None):
        return
    if kind == "DirectoryOrCreate":
        if not os.path.lexists(path):
            os.makedirs(path, 0o755, exist_ok=True)
        kind = "Directory"
    elif kind == "FileOrCreate":
        if not os.path.lexists(path):
            fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o644)
            os.close(fd)
        kind = "File"
    check = _TYPE_CHECKS.get(kind)
    if check is None:
        raise ValueError(f"hostPath type {kind!r} is not supported")
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise ValueError(f"hostPath type check failed: {path} {check[1]}") from exc
    if not check[0](mode):
        raise ValueError(f"hostPath type check failed: {path} {check[1]}")


def token_requests(pod: Mapping[str, Any]) -> set[tuple[str, int]]:
    """The (audience, expirationSeconds) of every projected ServiceAccount token (audience "" = the API's)."""
    found: set[tuple[str, int]] = set()
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        for source in (volume.get("projected") or {}).get("sources") or []:
            token = source.get("serviceAccountToken")
            if token is not None:
                found.add((str(token.get("audience") or ""), int(token.get("expirationSeconds") or 3600)))
    return found


def prepare(
    pod: Mapping[str, Any], pod_dir: Path, lookup: Lookup, *, tokens: Tokens | None = None
) -> dict[str, str]:
    """Set up every volume the pod's containers mount; returns volume name -> host path."""
    spec = pod.get("spec") or {}
    mounted = {
        m.get("name")
        for c in list(spec.get("containers") or []) + list(spec.get("initContainers") or [])
        for m in c.get("volumeMounts") or []
    }
    paths: dict[str, str] = {}
    for volume in spec.get("volumes") or []:
        name = str(volume.get("name", ""))
        if name not in mounted:
            continue
        try:
            paths[name] = _prepare_one(pod, volume, pod_dir / "volumes" / name, lookup, tokens or {})
        except (OSError, ValueError, WlmvkError) as exc:
            text = exc.message if isinstance(exc, WlmvkError) else str(exc)
            raise MountFailed(f'MountVolume.SetUp failed for volume "{name}" : {text}') from exc
    for name in mounted - set(paths):
        raise MountFailed(
            f'Unable to attach or mount volumes: volume "{name}" is not defined in the pod spec'
        )
    return paths


def _prepare_one(
    pod: Mapping[str, Any], volume: Mapping[str, Any], where: Path, lookup: Lookup, tokens: Tokens
) -> str:
    if "hostPath" in volume:
        source = volume["hostPath"]
        path = str(source.get("path", ""))
        check_host_path(path, str(source.get("type") or ""))
        return path
    if "emptyDir" in volume:
        where.mkdir(parents=True, exist_ok=True)
        where.chmod(0o777)
        return str(where)
    for kind in ("configMap", "secret", "downwardAPI"):
        if kind in volume:
            source = volume[kind]
            _write_files(
                where, _source_files(pod, kind, source, lookup, int(source.get("defaultMode", 0o644)))
            )
            return str(where)
    if "projected" in volume:
        projected = volume["projected"]
        mode = int(projected.get("defaultMode", 0o644))
        files: Files = {}
        for source in projected.get("sources") or []:
            for kind in ("configMap", "secret", "downwardAPI"):
                if kind in source:
                    files.update(_source_files(pod, kind, source[kind], lookup, mode))
            if "serviceAccountToken" in source:
                token = source["serviceAccountToken"]
                key = (str(token.get("audience") or ""), int(token.get("expirationSeconds") or 3600))
                if key not in tokens:
                    raise ValueError("no ServiceAccount token could be had for the pod")
                files[str(token.get("path", "token"))] = (tokens[key].encode(), mode)
        _write_files(where, files)
        return str(where)
    kinds = sorted(k for k in volume if k != "name")
    raise ValueError(f"volume type {', '.join(kinds) or 'none'} is not supported by the host kubelet")


def _source_files(
    pod: Mapping[str, Any], kind: str, source: Mapping[str, Any], lookup: Lookup, mode: int
) -> Files:
    """The files of one configMap, secret or downwardAPI source: relative path -> (content, mode)."""
    if kind == "downwardAPI":
        fields: Files = {}
        for item in source.get("items") or []:
            if "fieldRef" in item:
                value = podenv.field_value(pod, str(item["fieldRef"].get("fieldPath", "")))
                fields[str(item["path"])] = (value.encode(), int(item.get("mode", mode)))
        return fields
    # A secret volume names its Secret "secretName", a projected secret source "name".
    resource, name = (
        ("configmaps", source.get("name") or "")
        if kind == "configMap"
        else ("secrets", source.get("secretName") or source.get("name") or "")
    )
    obj = lookup(resource, str(name))
    if obj is None:
        if source.get("optional"):
            obj = {}
        else:
            raise ValueError(f'{resource[:-1]} "{name}" not found')
    data = _decoded(resource, obj)
    items = source.get("items")
    chosen: list[tuple[str, str, int]] = (
        [(i["key"], i.get("path", i["key"]), int(i.get("mode", mode))) for i in items]
        if items
        else [(k, k, mode) for k in data]
    )
    files: Files = {}
    for key, relative, file_mode in chosen:
        if key not in data:
            if source.get("optional"):
                continue
            raise ValueError(f"configmap references non-existent config key: {key}")
        files[relative] = (data[key], file_mode)
    return files


def _decoded(kind: str, obj: Mapping[str, Any]) -> dict[str, bytes]:
    data: dict[str, bytes] = {}
    if kind == "secrets":
        data.update({k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()})
        data.update({k: str(v).encode() for k, v in (obj.get("stringData") or {}).items()})
    else:
        data.update({k: str(v).encode() for k, v in (obj.get("data") or {}).items()})
        data.update({k: base64.b64decode(v) for k, v in (obj.get("binaryData") or {}).items()})
    return data


def _write_files(where: Path, files: Files) -> None:
    where.mkdir(parents=True, exist_ok=True)
    where.chmod(0o755)
    for relative, (content, mode) in files.items():
        if ".." in Path(relative).parts or Path(relative).is_absolute():
            raise ValueError(f"invalid path {relative!r}")
        target = where / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
        target.chmod(mode)


def container_mounts(
    container: Mapping[str, Any], volumes: Mapping[str, str], env: Mapping[str, str]
) -> list[dict[str, Any]]:
    """The container's bind mounts: host source, mountPath, read-only (subPath and subPathExpr applied)."""
    mounts = []
    for mount in container.get("volumeMounts") or []:
        source = volumes[mount["name"]]
        sub = mount.get("subPath") or (
            podenv.expand(mount["subPathExpr"], env) if mount.get("subPathExpr") else ""
        )
        if sub:
            if ".." in Path(sub).parts or Path(sub).is_absolute():
                raise MountFailed(f"subPath {sub!r} must be a relative path without '..'")
            source = os.path.join(source, sub)
            if not os.path.lexists(source):
                os.makedirs(source, 0o755, exist_ok=True)
        mounts.append(
            {"source": source, "target": str(mount["mountPath"]), "readOnly": bool(mount.get("readOnly"))}
        )
    return mounts
