"""Launcher of one host-kubelet container: mounts, user, working directory, then exec.

Run as a script by the host kubelet, as root, with only the standard library
(``python -I -S launch.py SPEC``), in its own session. It reads the JSON
spec (and removes the file), then:

1. gives the container its volumes: in a private mount namespace
   (``unshare(CLONE_NEWNS)``, ``/`` made recursively private) each volume is
   bind-mounted at its ``mountPath`` (read-only when asked) from its source,
   opened before any mount so that no volume hides another's; the process
   sees exactly the paths of its pod spec while the rest of the host is
   untouched; missing mount points are created first. Where no mount
   namespace can be had (not root, seccomp), ``isolation: auto`` falls back
   to a symbolic link at each ``mountPath`` that does not exist yet;
   ``readOnly`` cannot be enforced then;
2. writes the paths it created (as the host sees them) to ``created`` so the
   kubelet can remove them when no container uses them any more;
3. creates the working directory if missing (as container runtimes do), drops
   to the container's uid, gid and groups, changes directory, and execs
   ``argv`` with exactly ``env``.

Any failure is written to ``error_fd`` (closed on exec, so an empty read
means the command started) and the launcher exits 128, as a runtime's
StartError.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
from typing import Any

CLONE_NEWNS = 0x00020000
MS_RDONLY = 1
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18


class LaunchError(Exception):
    pass


def main(argv: list[str]) -> int:
    with open(argv[1]) as f:
        spec: dict[str, Any] = json.load(f)
    os.unlink(argv[1])
    error_fd = int(spec["error_fd"])
    os.set_inheritable(error_fd, False)
    try:
        launch(spec)
    except (LaunchError, OSError) as exc:
        os.write(error_fd, str(exc).encode("utf-8", "replace"))
        return 128
    return 128  # launch() only returns by exec


def launch(spec: dict[str, Any]) -> None:
    mounts: list[dict[str, Any]] = spec.get("mounts") or []
    created: list[str] = []
    # Opened before any mount: the report lives on the host, maybe under a path a volume hides.
    report = open(spec["created"], "w") if spec.get("created") else None  # noqa: SIM115
    if mounts:
        isolation = spec.get("isolation", "auto")
        namespace = isolation in ("auto", "namespace") and _private_namespace(
            required=isolation == "namespace"
        )
        done: list[dict[str, Any]] = []
        ordered = sorted(mounts, key=lambda m: m["target"].rstrip("/").count("/"))
        # Every source is pinned before the first mount: a volume mounted over /tmp must not
        # hide the host's /tmp/x that another volume comes from (a runtime sees the host's paths).
        pinned = [_pin(mount) for mount in ordered] if namespace else []
        kept = (
            [_pin({"source": path, "target": path}) for path in spec.get("keep") or []] if namespace else []
        )
        for n, mount in enumerate(ordered):
            if namespace:
                _bind(mount, pinned[n], done, created)
            else:
                _link(mount, done, created)
            done.append(mount)
        # An image's own files (here: host paths standing in for them) stay where they are,
        # also under a volume that covers them: bound again on top of it.
        for path, fd in zip(spec.get("keep") or [], kept, strict=True):
            if any(
                path == m["target"].rstrip("/") or path.startswith(m["target"].rstrip("/") + "/")
                for m in done
            ):
                _bind({"source": path, "target": path, "readOnly": True}, fd, done, created)
            else:
                os.close(fd)
    if report is not None:
        with report:
            json.dump(created, report)
    cwd = spec.get("cwd") or "/"
    os.makedirs(cwd, exist_ok=True)
    uid, gid = spec.get("uid"), spec.get("gid")
    if uid is not None:
        try:
            os.setgroups([int(g) for g in spec.get("groups") or []])
            os.setgid(int(gid if gid is not None else 0))
            os.setuid(int(uid))
        except PermissionError as exc:
            raise LaunchError(
                f"cannot run as uid {uid}: {exc.strerror} (the host kubelet is not root)"
            ) from exc
    elif gid is not None:
        os.setgid(int(gid))
    try:
        os.chdir(cwd)
    except OSError as exc:
        raise LaunchError(f'chdir to cwd ("{cwd}") set in the pod spec failed: {exc.strerror}') from exc
    argv: list[str] = spec["argv"]
    try:
        os.execvpe(argv[0], argv, spec.get("env") or {})
    except FileNotFoundError as exc:
        where = (
            "executable file not found in $PATH"
            if "/" not in argv[0]
            else f"stat {argv[0]}: no such file or directory"
        )
        raise LaunchError(f'exec: "{argv[0]}": {where}') from exc
    except PermissionError as exc:
        raise LaunchError(f'exec: "{argv[0]}": permission denied') from exc


def _private_namespace(*, required: bool) -> bool:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNS) != 0:
        err = ctypes.get_errno()
        if required:
            raise LaunchError(f"cannot create a mount namespace: {os.strerror(err)}")
        return False
    _mount(None, "/", MS_REC | MS_PRIVATE)
    return True


def _mount(source: str | None, target: str, flags: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    src = source.encode() if source is not None else None
    if libc.mount(src, target.encode(), None, ctypes.c_ulong(flags), None) != 0:
        err = ctypes.get_errno()
        raise LaunchError(f"mount {source or ''} on {target}: {os.strerror(err)}")


def _pin(mount: dict[str, Any]) -> int:
    """An ``O_PATH`` descriptor of the mount's source, as the host sees it now."""
    source, target = mount["source"], mount["target"]
    try:
        return os.open(source, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        raise LaunchError(f"mount source {source} for {target}: no such file or directory") from None


def _bind(mount: dict[str, Any], fd: int, done: list[dict[str, Any]], created: list[str]) -> None:
    target = mount["target"]
    pinned = f"/proc/self/fd/{fd}"
    for attempt in range(3):
        _ensure(target, os.path.isdir(pinned), done, created)
        try:
            _mount(pinned, target, MS_BIND | MS_REC)
            break
        except LaunchError:
            # Another host kubelet may remove a mount point it made, unused as far as it can see,
            # between our finding it and binding on it: made again, the bind is tried again.
            if attempt == 2 or os.path.lexists(target):
                raise
    os.close(fd)
    if mount.get("readOnly"):
        _mount(None, target, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_REC)


def _link(mount: dict[str, Any], done: list[dict[str, Any]], created: list[str]) -> None:
    source, target = mount["source"], mount["target"].rstrip("/") or "/"
    if os.path.islink(target) and os.readlink(target) == source:
        return
    if os.path.realpath(target) == os.path.realpath(source):
        return
    if os.path.lexists(target):
        raise LaunchError(
            f"cannot give {source} at {target}: the path exists and no mount namespace is available"
        )
    _ensure(os.path.dirname(target), True, done, created)
    os.symlink(source, target)
    created.append(_host_path(target, done))


def _ensure(path: str, directory: bool, done: list[dict[str, Any]], created: list[str]) -> None:
    """Create ``path`` (and missing parents) as a directory or an empty file; record what was made.

    Each step makes first and looks never: two launchers starting at once (two pods mounting
    the same target) may both find a path missing, and the one whose make comes second takes
    the other's path as it is instead of failing with "File exists". Only the maker records it.
    """
    try:
        if directory:
            os.mkdir(path, 0o755)
        else:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644))
    except FileExistsError:
        return
    except FileNotFoundError:
        _ensure(os.path.dirname(path), True, done, created)
        _ensure(path, directory, done, created)
        return
    created.append(_host_path(path, done))


def _host_path(path: str, done: list[dict[str, Any]]) -> str:
    """Where ``path`` (as this namespace sees it) lives for the host, through earlier bind mounts."""
    for mount in reversed(done):
        target = mount["target"].rstrip("/")
        if path == target or path.startswith(target + "/"):
            source: str = mount["source"]
            return source.rstrip("/") + path[len(target) :]
    return path


if __name__ == "__main__":
    sys.exit(main(sys.argv))
