"""The image the Containerfile builds, run: what the manifests' pods get.

``dev/scripts/image build`` builds it from this checkout (on a Debian 12 base made with debootstrap
here, where no registry is reachable; cached, so a rebuild with the same sources takes seconds),
then each test runs it with Podman as the manifests run it: the image's own user, a read-only
root, no capabilities. Root Podman here may not raise rlimits (no CAP_SYS_RESOURCE), so every
run lowers the two it would otherwise set (``--ulimit``).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.shared_dirs import SharedDir
from wlmvk.cli import SUBCOMMANDS

ROOT = Path(__file__).resolve().parents[3]
IMAGE = "wlmvk:latest"
# As manifests/configurator.yaml's container: read-only root, nothing gained, no capability.
CONFINED = ("--read-only", "--cap-drop=ALL", "--security-opt=no-new-privileges", "--network=none")
LIMITS = ("--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024")
# What it weighs on the Debian base: 269 MB when this was written (the base 176 MB of it).
MAX_MB = 320


@pytest.fixture(scope="module")
def image() -> str:
    done = subprocess.run(
        [str(ROOT / "dev" / "scripts" / "image"), "build"],
        capture_output=True,
        text=True,
        check=False,
        timeout=1800,
    )
    if done.returncode != 0:
        pytest.fail(f"dev/scripts/image build failed:\n{done.stderr[-4000:]}", pytrace=False)
    return IMAGE


def run(
    image: str, *args: str, entrypoint: str | None = None, mounts: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    argv = ["podman", "run", "--rm", *CONFINED, *LIMITS, *(f"--volume={m}" for m in mounts)]
    if entrypoint is not None:
        argv.append(f"--entrypoint={entrypoint}")
    return subprocess.run(
        [*argv, image, *args], capture_output=True, text=True, check=False, timeout=120, cwd="/tmp"
    )


def test_it_runs_as_user_1000_on_a_read_only_root(image: str) -> None:
    who = run(image, entrypoint="id")
    assert who.stdout.strip() == "uid=1000(wlmvk) gid=1000(wlmvk) groups=1000(wlmvk)", who.stderr
    write = run(image, "/opt/wlmvk/x", entrypoint="touch")
    assert write.returncode == 1
    assert "Read-only file system" in write.stderr


@pytest.mark.parametrize("argv", [["kubelet"], ["operator"], ["stage"], ["stage", "in"], ["stage", "out"]])
def test_each_command_the_manifests_run_starts(image: str, argv: list[str]) -> None:
    done = run(image, *argv, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: wlmvk {' '.join(argv)} ")
    assert done.stderr == ""


def test_the_entrypoint_is_wlmvk(image: str) -> None:
    done = run(image)
    assert done.returncode == 0, done.stderr
    for name in SUBCOMMANDS:
        assert f"\n  {name} " in done.stdout


def test_it_holds_the_product_without_build_tools(image: str) -> None:
    # Every module of the product imports on the read-only root (nothing compiled at run time).
    code = "import wlmvk.kubelet.app, wlmvk.operator.app, wlmvk.staging.app, wlmvk.redbox.app; print('ok')"
    imported = run(image, "-c", code, entrypoint="python3")
    assert imported.stdout == "ok\n", imported.stderr
    # No pip, no sources, no wheels: only what runs.
    listed = run(image, "-c", "ls /opt/wlmvk/bin; ls -d /src /wheels 2>&1; true", entrypoint="sh")
    assert "pip" not in listed.stdout.split()
    assert "wlmvk" in listed.stdout.split()
    assert "ls: cannot access '/src': No such file or directory" in listed.stdout
    assert "ls: cannot access '/wheels': No such file or directory" in listed.stdout


def test_its_size(image: str) -> None:
    inspected = subprocess.run(
        ["podman", "image", "inspect", image], capture_output=True, text=True, check=True
    )
    (info,) = json.loads(inspected.stdout)
    assert info["Config"]["User"] == "1000:1000"
    assert info["Config"]["Entrypoint"] == ["wlmvk"]
    assert info["Size"] / 1e6 < MAX_MB


@pytest.mark.slurm
def test_stage_in_and_out_run_in_the_image_against_red_box(
    image: str, redbox: Any, shared_dir: SharedDir
) -> None:
    """As a staging pod runs: the socket's directory and the user's volume mounted, uid 1000."""
    # The staging user (1000) reaches this red-box (root's) as it reaches the job owner's socket.
    socket = Path(redbox.socket)
    socket.parent.chmod(0o711)
    socket.chmod(0o666)
    red_box = f"{socket.parent}:/var/run/wlmvk-red-box"
    inputs = shared_dir("img-in-", mode=0o777)
    (inputs / "sub").mkdir()
    (inputs / "sub" / "data.bin").write_bytes(payload := os.urandom(100_000))
    workdir = "default/image-job"
    up = run(
        image, "stage", "in", "--socket", f"/var/run/wlmvk-red-box/{socket.name}",
        "--from", "/mnt/inputs", "--to", workdir, mounts=(red_box, f"{inputs}:/mnt/inputs:ro"),
    )  # fmt: skip
    assert up.returncode == 0, up.stderr
    assert "uploaded 1 files (100000 bytes)" in up.stdout
    assert (redbox.work_dir / workdir / "inputs" / "sub" / "data.bin").read_bytes() == payload

    (redbox.work_dir / workdir / "bar").mkdir()
    (redbox.work_dir / workdir / "bar" / "out.txt").write_text("done\n")
    outputs = shared_dir("img-out-", mode=0o777)
    down = run(
        image, "stage", "out", "--socket", f"/var/run/wlmvk-red-box/{socket.name}",
        "--from", f"{workdir}/bar", "--to", "/collect", mounts=(red_box, f"{outputs}:/collect"),
    )  # fmt: skip
    assert down.returncode == 0, down.stderr
    result = outputs / "bar" / "out.txt"
    assert result.read_text() == "done\n"
    assert (result.stat().st_uid, result.stat().st_gid) == (1000, 1000)
