"""``wlmvk stage in|out`` as a process against a real red-box."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slurm

ROOT = Path(__file__).resolve().parents[3]
WLMVK = str(Path(sys.executable).parent / "wlmvk")
# The venv's interpreter lives under /root; another user runs the system one on the same packages.
AS_USER = [
    "/usr/bin/python3.11",
    "-c",
    "import sys; from wlmvk.cli import main; sys.exit(main(sys.argv[1:]))",
]


def stage(*args: str, user: int | None = None) -> subprocess.CompletedProcess[str]:
    argv = [WLMVK] if user is None else AS_USER
    path = [str(ROOT / "src"), *(p for p in sys.path if p.endswith("site-packages"))]
    return subprocess.run(
        [*argv, "stage", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        user=user,
        group=user,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(path)},
    )


def local_dir() -> Path:
    path = Path(tempfile.mkdtemp(prefix="stage-", dir="/tmp"))
    path.chmod(0o777)
    return path


def share_socket(redbox: Any) -> None:
    """Let the staging user (UID 1000) reach a root red-box, as it reaches the job owner's."""
    Path(redbox.socket).parent.chmod(0o711)
    Path(redbox.socket).chmod(0o666)


def test_round_trip_through_red_box(redbox: Any) -> None:
    share_socket(redbox)
    inputs = local_dir() / "inputs"
    (inputs / "sub").mkdir(parents=True)
    (inputs / "foo.txt").write_text("foo\n")
    (inputs / "sub" / "big.bin").write_bytes(os.urandom(3_000_000))
    workdir = "default/job-1234"
    up = stage("in", "--socket", redbox.socket, "--from", str(inputs), "--to", workdir, user=1000)
    assert up.returncode == 0, up.stderr
    assert "uploaded 2 files (3000004 bytes)" in up.stdout
    remote = redbox.work_dir / workdir
    assert (remote / "inputs" / "foo.txt").read_text() == "foo\n"
    assert (remote / "inputs" / "sub" / "big.bin").read_bytes() == (inputs / "sub" / "big.bin").read_bytes()

    (remote / "bar").mkdir()
    (remote / "bar" / "output.txt").write_text("foo\nslurm\n")
    outputs = local_dir() / "outputs"
    outputs.mkdir()
    outputs.chmod(0o777)
    down = stage(
        "out", "--socket", redbox.socket, "--from", f"{workdir}/bar", "--to", str(outputs), user=1000
    )
    assert down.returncode == 0, down.stderr
    result = outputs / "bar" / "output.txt"
    assert result.read_text() == "foo\nslurm\n"
    assert (result.stat().st_uid, result.stat().st_gid) == (1000, 1000)


def test_escaping_the_work_dir_is_refused(redbox: Any) -> None:
    inputs = local_dir() / "inputs"
    inputs.mkdir()
    (inputs / "x").write_text("x")
    outside = Path(tempfile.mkdtemp(prefix="outside-", dir="/tmp"))
    up = stage("in", "--socket", redbox.socket, "--from", str(inputs), "--to", str(outside))
    assert up.returncode == 1
    assert up.stderr.strip().startswith("wlmvk stage:"), up.stderr
    assert list(outside.iterdir()) == []
    down = stage("out", "--socket", redbox.socket, "--from", "../../etc/passwd", "--to", str(local_dir()))
    assert down.returncode == 1
    assert down.stderr.strip().startswith("wlmvk stage:")


def test_missing_remote_path(redbox: Any) -> None:
    down = stage("out", "--socket", redbox.socket, "--from", "no/such/thing", "--to", str(local_dir()))
    assert down.returncode == 1
    assert "no/such/thing" in down.stderr


def test_red_box_not_running() -> None:
    inputs = local_dir()
    up = stage(
        "in", "--socket", "/tmp/no-such-red-box.sock", "--from", str(inputs), "--to", "x", "--timeout", "1.5"
    )
    assert up.returncode == 3
    # Tried again once (a red-box restarting comes back), then given up at the timeout.
    lines = up.stderr.strip().splitlines()
    assert lines[0].endswith("; starting the transfer again in 1 s")
    assert lines[-1].startswith("wlmvk stage: red-box at /tmp/no-such-red-box.sock is unreachable: ")
