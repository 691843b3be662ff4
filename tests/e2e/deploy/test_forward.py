"""The forward as docs/deployment.md sets it up: deploy/red-box-forward through a real sshd, logged in
with a key the login node lets only forward (``restrict,port-forwarding,command="/bin/false"``).

The whole install under systemd (units, tmpfiles, restarts) is dev/scripts/site-systemd's, kept in
docs/raw/site-systemd.txt: it boots a machine, too slow for the suite.
"""

from __future__ import annotations

import socket
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures import prerequisites, sshd
from tests.fixtures.redbox import JOB_OWNER

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def server() -> Iterator[sshd.SshServer]:
    if reason := sshd.missing():
        prerequisites.missing(reason)
    running = sshd.SshServer(Path(tempfile.mkdtemp(prefix="sshd-", dir="/tmp")), JOB_OWNER).start()
    yield running
    running.stop()


@pytest.fixture
def echo_socket() -> Iterator[str]:
    """A Unix socket the job owner may reach on the "login node", answering each line with itself."""
    directory = Path(tempfile.mkdtemp(prefix="login-", dir="/tmp"))
    directory.chmod(0o755)
    path = str(directory / "red-box.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    Path(path).chmod(0o666)
    listener.listen()

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.sendall(conn.recv(100))

    threading.Thread(target=serve, daemon=True).start()
    yield path
    listener.close()


def test_the_documented_key_option_is_the_one_the_suite_logs_in_with() -> None:
    page = (ROOT / "docs" / "deployment.md").read_text()
    assert f"{sshd.AUTHORIZED_KEY_OPTIONS} $(cat id_ed25519.pub)" in page.replace('\\"', '"')


def test_the_forward_brings_the_socket_over_with_a_key_that_may_only_forward(
    server: sshd.SshServer, echo_socket: str, tmp_path: Path
) -> None:
    forward = sshd.SshForward(server, str(tmp_path / "fwd.sock"), echo_socket, tmp_path / "ssh.log").start()
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.connect(forward.local)
            client.sendall(b"ping\n")
            assert client.recv(100) == b"ping\n"
        assert Path(forward.local).stat().st_mode & 0o777 == 0o600
    finally:
        forward.stop()


def test_the_forwards_key_runs_no_command_on_the_login_node(server: sshd.SshServer) -> None:
    done = subprocess.run(
        ["ssh", "-o", "BatchMode=yes", *server.ssh_options(), f"{JOB_OWNER}@127.0.0.1", "id"],
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    assert (done.returncode, done.stdout) == (1, "")
