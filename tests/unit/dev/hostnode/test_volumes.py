"""hostPath type checks, volume directories and container mounts."""

from __future__ import annotations

import base64
import os
import socket
import tempfile
from pathlib import Path
from typing import Any

import pytest

from wlmvk_dev.hostnode.volumes import MountFailed, check_host_path, container_mounts, prepare


def test_directory_checks(tmp_path: Path) -> None:
    check_host_path(str(tmp_path), "Directory")
    check_host_path(str(tmp_path), "")
    with pytest.raises(ValueError, match=f"hostPath type check failed: {tmp_path}/none is not a directory"):
        check_host_path(str(tmp_path / "none"), "Directory")
    (tmp_path / "f").write_text("x")
    with pytest.raises(ValueError, match="is not a directory"):
        check_host_path(str(tmp_path / "f"), "Directory")
    check_host_path(str(tmp_path / "f"), "File")


def test_or_create_types_create(tmp_path: Path) -> None:
    check_host_path(str(tmp_path / "a" / "b"), "DirectoryOrCreate")
    assert (tmp_path / "a" / "b").is_dir()
    check_host_path(str(tmp_path / "new"), "FileOrCreate")
    assert (tmp_path / "new").is_file()
    assert oct((tmp_path / "new").stat().st_mode & 0o777) == oct(0o644 & ~_umask())


def test_socket_check() -> None:
    where = tempfile.mkdtemp(dir="/tmp")
    path = os.path.join(where, "s.sock")
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    try:
        check_host_path(path, "Socket")
        with pytest.raises(ValueError, match="is not a socket file"):
            check_host_path(where, "Socket")
    finally:
        server.close()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def pod(volumes: list[dict[str, Any]], mounts: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "default", "uid": "u"},
        "spec": {"volumes": volumes, "containers": [{"name": "c", "volumeMounts": mounts}]},
    }


def test_prepare_each_kind(tmp_path: Path) -> None:
    host = tmp_path / "host"
    host.mkdir()
    objects = {
        ("configmaps", "cm"): {"data": {"a.txt": "A"}},
        ("secrets", "s"): {"data": {"token": base64.b64encode(b"T").decode()}},
    }
    volumes = [
        {"name": "h", "hostPath": {"path": str(host), "type": "Directory"}},
        {"name": "e", "emptyDir": {}},
        {"name": "cm", "configMap": {"name": "cm"}},
        {"name": "s", "secret": {"secretName": "s", "items": [{"key": "token", "path": "dir/tok"}]}},
        {
            "name": "d",
            "downwardAPI": {"items": [{"path": "name", "fieldRef": {"fieldPath": "metadata.name"}}]},
        },
        {"name": "unused", "nfs": {"server": "x", "path": "/"}},
    ]
    mounts = [{"name": v["name"], "mountPath": f"/m/{v['name']}"} for v in volumes[:5]]
    paths = prepare(pod(volumes, mounts), tmp_path / "pod", lambda kind, name: objects.get((kind, name)))
    assert paths["h"] == str(host)
    assert oct(os.stat(paths["e"]).st_mode & 0o777) == oct(0o777)
    assert Path(paths["cm"], "a.txt").read_text() == "A"
    assert Path(paths["s"], "dir", "tok").read_text() == "T"
    assert Path(paths["d"], "name").read_text() == "p"
    assert "unused" not in paths


def test_failures_read_like_the_kubelet(tmp_path: Path) -> None:
    volumes = [{"name": "data", "hostPath": {"path": str(tmp_path / "nope"), "type": "Directory"}}]
    with pytest.raises(MountFailed) as failed:
        prepare(pod(volumes, [{"name": "data", "mountPath": "/d"}]), tmp_path / "pod", lambda k, n: None)
    assert failed.value.message == (
        'MountVolume.SetUp failed for volume "data" : '
        f"hostPath type check failed: {tmp_path}/nope is not a directory"
    )
    with pytest.raises(MountFailed, match='configmap "gone" not found'):
        prepare(
            pod([{"name": "c", "configMap": {"name": "gone"}}], [{"name": "c", "mountPath": "/c"}]),
            tmp_path / "pod",
            lambda k, n: None,
        )
    with pytest.raises(MountFailed, match="not supported"):
        prepare(
            pod([{"name": "n", "nfs": {}}], [{"name": "n", "mountPath": "/n"}]),
            tmp_path / "pod",
            lambda k, n: None,
        )
    with pytest.raises(MountFailed, match='volume "x" is not defined'):
        prepare(pod([], [{"name": "x", "mountPath": "/x"}]), tmp_path / "pod", lambda k, n: None)


def test_container_mounts_with_sub_paths(tmp_path: Path) -> None:
    container = {
        "volumeMounts": [
            {"name": "v", "mountPath": "/a", "readOnly": True},
            {"name": "v", "mountPath": "/b", "subPath": "sub"},
            {"name": "v", "mountPath": "/c", "subPathExpr": "$(POD)"},
        ]
    }
    mounts = container_mounts(container, {"v": str(tmp_path)}, {"POD": "p1"})
    assert mounts == [
        {"source": str(tmp_path), "target": "/a", "readOnly": True},
        {"source": str(tmp_path / "sub"), "target": "/b", "readOnly": False},
        {"source": str(tmp_path / "p1"), "target": "/c", "readOnly": False},
    ]
    assert (tmp_path / "sub").is_dir()
    with pytest.raises(MountFailed):
        container_mounts(
            {"volumeMounts": [{"name": "v", "mountPath": "/x", "subPath": "../up"}]}, {"v": "/"}, {}
        )
