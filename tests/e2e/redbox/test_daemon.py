"""red-box as a process: flags, socket handling, config, shutdown, hanging Slurm, client reconnects."""

from __future__ import annotations

import asyncio
import os
import pwd
import signal
import socket
import ssl
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from grpclib.client import Channel
from grpclib.exceptions import StreamTerminatedError

from tests.e2e.redbox.helpers import script, tls_listener, wait_for
from tests.fixtures.redbox import RedBox
from wlmvk._proto import api
from wlmvk.core.errors import Unavailable
from wlmvk.core.jobs import Feature, JobSpec, JobStatus
from wlmvk.redboxclient.client import RedBoxClient

pytestmark = pytest.mark.slurm

Factory = Callable[..., RedBox]


def run_red_box(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "wlmvk.redbox", *args], capture_output=True, text=True, timeout=60, check=False
    )


def socket_exists(path: str) -> bool:
    return os.path.exists(path)


def test_help_documents_every_flag() -> None:
    done = subprocess.run(
        [str(Path(sys.executable).parent / "red-box"), "--help"], capture_output=True, text=True, check=True
    )
    for flag in (
        "-socket",
        "-config",
        "--work-dir",
        "--allow-root",
        "--state-dir",
        "--original-api-only",
        "--tcp",
        "--tls-cert",
        "--tls-key",
        "--tls-client-ca",
        "--slurm-timeout",
        "--max-script-bytes",
    ):
        assert flag in done.stdout


def test_socket_mode_and_graceful_stop(redbox: RedBox) -> None:
    assert stat.S_IMODE(os.stat(redbox.socket).st_mode) == 0o600
    assert redbox.stop() == 0
    assert not os.path.exists(redbox.socket), "a clean stop removes its socket"


async def test_live_socket_refused_stale_socket_replaced(redbox: RedBox) -> None:
    second = run_red_box("--socket", redbox.socket, "--work-dir", str(redbox.work_dir))
    assert second.returncode == 2
    assert "already listening" in second.stderr
    assert redbox.proc is not None
    redbox.proc.send_signal(signal.SIGKILL)
    redbox.proc.wait(10)
    assert socket_exists(redbox.socket), "a killed red-box leaves its socket behind"
    redbox.start()
    client = RedBoxClient(redbox.socket)
    try:
        assert "debug" in await client.partitions()
    finally:
        await client.close()


async def test_discovery_and_config_override(redbox_factory: Factory, tmp_path: Path) -> None:
    config = tmp_path / "red-box.yaml"
    config.write_text(
        textwrap.dedent(
            """\
            debug:
              nodes: 4
              cpu_per_node: 8
              mem_per_node: 2048
              wall_time: 1h30m
              additional_features:
                - name: singularity
                  version: 3.7
                  quantity: 1
            long:
              auto_wall_time: true
              wall_time: 10h
            """
        )
    )
    box = redbox_factory("-config", str(config))
    client = RedBoxClient(box.socket)
    try:
        debug = await client.resources("debug")
        assert (debug.nodes, debug.cpu_per_node, debug.mem_per_node, debug.wall_time) == (4, 8, 2048, 5400)
        assert Feature(name="avx2", quantity=1) in debug.features, "Slurm's node features are discovered"
        assert Feature(name="singularity", version="3.7", quantity=1) in debug.features
        assert debug.default
        assert debug.gpu_per_node == 2
        long = await client.resources("long")
        assert long.wall_time == 86400, "auto_wall_time keeps Slurm's MaxTime"
        assert long.mem_per_node == 8000
        unlimited = await client.resources("unlimited")
        assert unlimited.wall_time is None
        assert unlimited.cpu_per_node == 1
        gpu = await client.resources("gpu")
        assert (gpu.wall_time, gpu.cpu_per_node, gpu.mem_per_node) == (7200, 8, 16000)
    finally:
        await client.close()


@pytest.mark.parametrize(
    ("yaml_text", "words"),
    [
        ("debug:\n  nodes: 2\n  additional_feautres: []\n", "debug.additional_feautres: line 3: unknown key"),
        ("debug:\n  wall_time: 3600\n", "debug.wall_time: line 2"),
        ("debug:\n  cpu_per_node: many\n", "debug.cpu_per_node: line 2"),
        ("debug:\n  nodes: 1\nnosuchpartition:\n  nodes: 1\n", "nosuchpartition: line 3: unknown partition"),
        ("debug:\n  additional_features:\n    - name: x\n      colour: red\n", "colour: line 4"),
    ],
)
def test_bad_config_is_a_startup_error_naming_key_and_line(
    tmp_path: Path, yaml_text: str, words: str
) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(yaml_text)
    done = run_red_box(
        "--socket", str(tmp_path / "s.sock"), "-config", str(config), "--state-dir", str(tmp_path)
    )
    assert done.returncode == 2
    assert words in done.stderr


async def test_hanging_slurm_command_is_unavailable_and_red_box_keeps_serving(
    redbox_factory: Factory, tmp_path: Path
) -> None:
    shims = tmp_path / "shims"
    shims.mkdir()
    (shims / "squeue").write_text("#!/bin/sh\nsleep 300\n")
    (shims / "squeue").chmod(0o755)
    box = redbox_factory("--slurm-timeout", "1", env={"PATH": f"{shims}:{os.environ['PATH']}"})
    client = RedBoxClient(box.socket)
    try:
        with pytest.raises(Unavailable, match="no answer from Slurm"):
            await client.states([1])
        assert "debug" in await client.partitions()
    finally:
        await client.close()


async def test_client_reconnects_after_restart_and_vanished_socket(redbox: RedBox) -> None:
    client = RedBoxClient(redbox.socket, timeout=10)
    try:
        assert await client.partitions()
        redbox.stop()
        with pytest.raises(Unavailable, match="does not exist"):
            await client.partitions()
        redbox.start()
        assert await client.partitions(), "the next call after a restart works"
        redbox.proc.send_signal(signal.SIGKILL)  # type: ignore[union-attr]
        redbox.proc.wait(10)  # type: ignore[union-attr]
        with pytest.raises(Unavailable):
            await client.partitions()
        os.unlink(redbox.socket)
        redbox.start()
        assert await client.partitions()
    finally:
        await client.close()


async def test_red_box_running_as_the_job_owner(redbox_factory: Factory) -> None:
    box = redbox_factory(user="slurmuser")
    client = RedBoxClient(box.socket)
    try:
        info = await client.info()
        assert info.uid == pwd.getpwnam("slurmuser").pw_uid
        job_id = await client.submit(
            JobSpec(script=script("id -un", "touch made-here"), std_out="whoami.out")
        )
        final = await wait_for(client, job_id, lambda s: s.status.terminal)
        assert final.status is JobStatus.COMPLETED
        out = box.work_dir / "whoami.out"
        assert out.read_text() == "slurmuser\n"
        assert out.stat().st_uid == info.uid
        assert (box.work_dir / "made-here").stat().st_uid == info.uid
        assert b"".join([c async for c in client.open_file("whoami.out")]) == b"slurmuser\n"
    finally:
        await client.close()


# TLS 1.3: the client's handshake ends before red-box checks its certificate, so the
# refusal reaches the client as the connection dropped before any answer.
REFUSED = (StreamTerminatedError, ssl.SSLError, ConnectionError)


async def partitions_over(host: str, port: int, context: ssl.SSLContext) -> list[str]:
    channel = Channel(host, port, ssl=context)
    try:
        reply = await api.WorkloadManagerStub(channel).partitions(api.PartitionsRequest())
        return list(reply.partition)
    finally:
        channel.close()


async def test_tcp_listener_requires_a_client_certificate_of_its_client_ca(
    redbox_factory: Factory, tmp_path: Path
) -> None:
    listener = tls_listener(tmp_path)
    box = redbox_factory(*listener.flags)
    assert "debug" in await partitions_over("127.0.0.1", listener.port, listener.client_context())
    with pytest.raises(REFUSED):
        await partitions_over("127.0.0.1", listener.port, listener.client_context(with_certificate=False))
    stranger = tmp_path / "stranger"
    stranger.mkdir()
    # A certificate of another CA (here the server's own) is no better than none.
    other = listener.authority.issue_cert("wlmvk-kubelet")
    other.private_key_pem.write_to_path(str(stranger / "key.pem"))
    other.cert_chain_pems[0].write_to_path(str(stranger / "cert.pem"))
    foreign = listener.client_context(with_certificate=False)
    foreign.load_cert_chain(stranger / "cert.pem", stranger / "key.pem")
    with pytest.raises(REFUSED):
        await partitions_over("127.0.0.1", listener.port, foreign)
    assert "debug" in await partitions_over("127.0.0.1", listener.port, listener.client_context())
    assert box.stop() == 0


def test_a_runtime_path_that_is_no_directory_refuses_to_start(tmp_path: Path) -> None:
    where = tmp_path / "apptainer" / "bin"
    done = run_red_box("--socket", str(tmp_path / "s.sock"), "--runtime-path", f"/usr/bin:{where}")
    assert done.returncode == 2
    assert done.stderr == f"red-box: --runtime-path {where}: no such directory\n"
    assert not socket_exists(str(tmp_path / "s.sock"))


def test_an_image_dir_that_is_no_directory_refuses_to_start(tmp_path: Path) -> None:
    done = run_red_box("--socket", str(tmp_path / "s.sock"), "--image-dir", str(tmp_path / "sifs"))
    assert done.returncode == 2
    assert done.stderr == f"red-box: --image-dir {tmp_path / 'sifs'}: no such directory\n"


@pytest.mark.parametrize("missing", ["--tls-client-ca", "--tls-cert"])
def test_tcp_without_a_client_ca_or_certificate_refuses_to_start(tmp_path: Path, missing: str) -> None:
    flags = tls_listener(tmp_path).flags
    at = flags.index(missing)
    del flags[at : at + 2]
    done = run_red_box("--socket", str(tmp_path / "s.sock"), "--state-dir", str(tmp_path), *flags)
    assert done.returncode == 2
    assert f"--tcp needs {missing}: the TCP listener accepts only mutual TLS" in done.stderr
    assert not os.path.exists(tmp_path / "s.sock")


def host_address() -> str:
    """An address of this host that is not loopback (the test needs one)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the outgoing address
        address = str(probe.getsockname()[0])
    assert not address.startswith("127."), "this test needs a non-loopback address"
    return address


async def test_tcp_port_alone_listens_on_loopback_only(redbox_factory: Factory, tmp_path: Path) -> None:
    listener = tls_listener(tmp_path, host="")
    assert listener.flags[:2] == ["--tcp", str(listener.port)]
    redbox_factory(*listener.flags)
    assert "debug" in await partitions_over("127.0.0.1", listener.port, listener.client_context())
    with pytest.raises(ConnectionRefusedError), socket.create_connection((host_address(), listener.port), 5):
        pass


async def test_sigterm_with_an_open_tail_stream_stops_promptly(redbox: RedBox) -> None:
    (redbox.work_dir / "forever.log").write_text("x\n")
    client = RedBoxClient(redbox.socket)
    tail = client.tail_file("forever.log")
    try:
        assert await anext(tail) == b"x\n"
        started = time.monotonic()
        code = await asyncio.to_thread(redbox.stop)
        assert code == 0
        assert time.monotonic() - started < 12
        with pytest.raises(Unavailable):
            await anext(tail)
    finally:
        await client.close()
