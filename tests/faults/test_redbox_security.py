"""Who may talk to red-box: its socket is 0600 in a directory nobody else may write to, a client
of another uid is refused, and red-box will not listen where another user could swap its socket."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.fixtures.redbox import RedBox

pytestmark = [pytest.mark.slurm]

CONNECT = """
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect(sys.argv[1])
except OSError as exc:
    print(type(exc).__name__)
else:
    print("connected")
"""


def _as_nobody(*argv: str) -> str:
    python = shutil.which("python3", path="/usr/bin:/bin") or sys.executable
    done = subprocess.run(
        ["runuser", "-u", "nobody", "--", python, "-c", CONNECT, *argv],
        capture_output=True, text=True, cwd="/", timeout=30, check=False,
    )  # fmt: skip
    return done.stdout.strip() or done.stderr.strip()


@pytest.fixture
def as_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to run a client as another user")


def test_socket_and_directory_modes(redbox: RedBox) -> None:
    assert stat.S_IMODE(os.stat(redbox.socket).st_mode) == 0o600
    parent = os.stat(Path(redbox.socket).parent).st_mode
    assert not parent & (stat.S_IWOTH | stat.S_IWGRP)


def test_a_client_of_another_uid_is_refused(as_root: None, redbox: RedBox) -> None:
    # Open the directory to everybody: the socket's own mode must still keep them out.
    os.chmod(Path(redbox.socket).parent, 0o755)
    assert _as_nobody(redbox.socket) == "PermissionError"
    assert redbox.proc is not None
    assert redbox.proc.poll() is None


def test_red_box_creates_its_socket_directory_private(tmp_path: Path) -> None:
    home = Path(tempfile.mkdtemp(prefix="rbsec", dir="/tmp"))
    sock = home / "run" / "rb.sock"
    proc = subprocess.Popen(
        [sys.executable, "-m", "wlmvk.redbox", "--socket", str(sock), "--work-dir", str(tmp_path),
         "--state-dir", str(tmp_path / "state")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while not sock.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sock.exists(), "red-box did not start"
        assert stat.S_IMODE(os.stat(home / "run").st_mode) == 0o700
        assert stat.S_IMODE(os.stat(sock).st_mode) == 0o600
    finally:
        proc.terminate()
        proc.wait(20)
        shutil.rmtree(home, ignore_errors=True)


def test_a_world_writable_socket_directory_is_refused(tmp_path: Path) -> None:
    home = Path(tempfile.mkdtemp(prefix="rbsec", dir="/tmp"))
    try:
        os.chmod(home, 0o777)
        done = subprocess.run(
            [sys.executable, "-m", "wlmvk.redbox",
             "--socket", str(home / "rb.sock"), "--work-dir", str(tmp_path)],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert "writable by anybody" in done.stderr
        assert not (home / "rb.sock").exists()
    finally:
        shutil.rmtree(home, ignore_errors=True)
