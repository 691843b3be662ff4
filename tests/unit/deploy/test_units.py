"""deploy/: the systemd units, the tmpfiles entry and the manifests name the same paths and user.

How they behave under systemd (restarts, the directory's inode) is dev/scripts/site-systemd's run,
kept in docs/raw/real-node-lane.txt (the stand-in's earlier run: docs/raw/site-systemd.txt).
"""

from __future__ import annotations

import shlex
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "deploy"


def _unit(name: str) -> dict[str, dict[str, str]]:
    """A unit file's sections and keys (continuation lines joined; one value per key here)."""
    text = (DEPLOY / "systemd" / name).read_text().replace("\\\n", " ")
    sections: dict[str, dict[str, str]] = {}
    current: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
        elif line and not line.startswith("#"):
            key, value = line.split("=", 1)
            current[key] = value
    return sections


def _argv(unit: dict[str, dict[str, str]]) -> list[str]:
    return shlex.split(unit["Service"]["ExecStart"])


def _option(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def _configurator() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((ROOT / "manifests" / "configurator.yaml").read_text())
    pod: dict[str, Any] = doc["spec"]["template"]["spec"]
    return pod


def _run(path: str) -> PurePosixPath:
    """/var/run is /run on every systemd host."""
    return PurePosixPath(path.replace("/var/run/", "/run/", 1))


def test_the_forward_puts_the_socket_where_the_configurator_mounts_and_reads_it() -> None:
    pod = _configurator()
    (container,) = pod["containers"]
    socket = _run(next(a.split("=", 1)[1] for a in container["args"] if a.startswith("--red-box-socket=")))
    (host_path,) = [v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v]
    argv = _argv(_unit("wlmvk-red-box-forward.service"))
    assert argv[0] == "/usr/local/bin/red-box-forward"
    assert _run(argv[1]) == socket
    assert socket.parent == _run(host_path)


def test_the_forwards_directory_is_made_at_boot_for_its_user_and_not_by_the_unit() -> None:
    unit = _unit("wlmvk-red-box-forward.service")
    assert not [key for key in unit["Service"] if key.startswith("RuntimeDirectory")]
    (entry,) = [
        line.split()
        for line in (DEPLOY / "tmpfiles.d" / "wlmvk.conf").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    kind, path, mode, user, group, _age = entry
    assert (kind, mode, user, group) == ("d", "0700", unit["Service"]["User"], unit["Service"]["User"])
    assert PurePosixPath(path) == _run(_argv(unit)[1]).parent


def test_the_forward_reaches_the_socket_red_box_serves() -> None:
    red_box = _argv(_unit("wlmvk-red-box.service"))
    assert red_box[0] == "/opt/wlmvk/venv/bin/red-box"
    assert _argv(_unit("wlmvk-red-box-forward.service"))[2] == _option(red_box, "--socket")
    assert PurePosixPath(_option(red_box, "--socket")).parent == PurePosixPath("/run/wlmvk-red-box")
    assert _option(red_box, "--state-dir") == "/var/lib/wlmvk-red-box"


def test_both_units_restart_forever() -> None:
    for name in ("wlmvk-red-box.service", "wlmvk-red-box-forward.service"):
        unit = _unit(name)
        assert unit["Unit"]["StartLimitIntervalSec"] == "0", name
        assert (unit["Service"]["Restart"], unit["Service"]["RestartSec"]) == ("always", "2"), name
        assert unit["Install"]["WantedBy"] == "multi-user.target", name


def test_the_forwards_user_has_the_configurators_uid() -> None:
    page = (ROOT / "docs" / "deployment.md").read_text()
    context = _configurator()["securityContext"]
    uid, gid = context["runAsUser"], context["runAsGroup"]
    user = _unit("wlmvk-red-box-forward.service")["Service"]["User"]
    assert f"groupadd --system --gid {gid} {user}" in page
    assert f"useradd --system --uid {uid} --gid {gid} --home-dir /var/lib/{user}" in page
