"""Small helpers shared by the red-box end-to-end tests."""

from __future__ import annotations

import asyncio
import socket
import ssl
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import trustme

from wlmvk.core.jobs import JobId, JobState, JobStatus
from wlmvk.redboxclient.client import RedBoxClient

WAIT = 90.0


def script(*lines: str) -> str:
    return "\n".join(["#!/bin/sh", "#SBATCH --cpus-per-task=1", *lines]) + "\n"


async def wait_for(
    client: RedBoxClient,
    job_id: JobId,
    done: Callable[[JobState], bool],
    *,
    timeout: float = WAIT,
    seen: list[JobStatus] | None = None,
) -> JobState:
    """Poll the batched state of one job until ``done`` holds; records each distinct status."""
    deadline = time.monotonic() + timeout
    while True:
        state = (await client.states([job_id]))[job_id]
        if seen is not None and (not seen or seen[-1] is not state.status):
            seen.append(state.status)
        if done(state):
            return state
        if time.monotonic() > deadline:
            raise AssertionError(f"job {job_id} still {state} after {timeout} s")
        await asyncio.sleep(0.2)


def terminal(state: JobState) -> bool:
    return state.status.terminal


def in_squeue(job_id: int) -> bool:
    out = subprocess.run(
        ["squeue", "-h", "-t", "all", "-j", str(job_id), "-o", "%i"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    return str(job_id) in out.split()


async def wait_gone_from_squeue(job_id: int, timeout: float = 60.0) -> None:
    """Slurm drops finished jobs MinJobAge (10 s here) after their end, on a timer: 10-19 s."""
    deadline = time.monotonic() + timeout
    while in_squeue(job_id):
        if time.monotonic() > deadline:
            raise AssertionError(f"job {job_id} still in squeue after {timeout} s")
        await asyncio.sleep(1)


def scancel(*job_ids: int) -> None:
    subprocess.run(["scancel", *map(str, job_ids)], capture_output=True, check=False)


def slurm_cmd(*argv: str) -> str:
    """Run a Slurm command directly (to observe or nudge Slurm beside red-box); its stdout."""
    return subprocess.run(list(argv), capture_output=True, text=True, check=True).stdout


def read_text(path: str) -> str:
    with open(path) as handle:
        return handle.read()


@dataclass(frozen=True)
class TlsListener:
    """What a test needs for red-box's mutual-TLS TCP listener.

    ``authority`` signed red-box's certificate (for 127.0.0.1 and localhost);
    ``client_authority`` is the CA red-box trusts for clients (``--tls-client-ca``),
    and ``client.pem``/``client-key.pem`` in the directory are a client certificate
    it signed. ``flags`` are red-box's flags for a listener on ``port``.
    """

    authority: trustme.CA
    client_authority: trustme.CA
    port: int
    flags: list[str]
    directory: Path

    def client_context(self, *, with_certificate: bool = True) -> ssl.SSLContext:
        context = ssl.create_default_context()
        self.authority.configure_trust(context)
        context.set_alpn_protocols(["h2"])
        if with_certificate:
            context.load_cert_chain(self.directory / "client.pem", self.directory / "client-key.pem")
        return context


def tls_listener(directory: Path, *, host: str = "127.0.0.1") -> TlsListener:
    """A server CA and certificate, a client CA and certificate, a free port, red-box's flags.

    Written to ``directory``: cert.pem/key.pem (red-box's), ca.pem (the server CA),
    client-ca.pem, client.pem/client-key.pem. ``host`` "" gives ``--tcp PORT``.
    """
    authority, client_authority = trustme.CA(), trustme.CA()
    cert = authority.issue_cert("127.0.0.1", "localhost")
    cert.private_key_pem.write_to_path(str(directory / "key.pem"))
    cert.cert_chain_pems[0].write_to_path(str(directory / "cert.pem"))
    authority.cert_pem.write_to_path(str(directory / "ca.pem"))
    client = client_authority.issue_cert("wlmvk-kubelet")
    client.private_key_pem.write_to_path(str(directory / "client-key.pem"))
    client.cert_chain_pems[0].write_to_path(str(directory / "client.pem"))
    client_authority.cert_pem.write_to_path(str(directory / "client-ca.pem"))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    flags = ["--tcp", f"{host}:{port}" if host else str(port), "--tls-cert", str(directory / "cert.pem")]
    flags += ["--tls-key", str(directory / "key.pem"), "--tls-client-ca", str(directory / "client-ca.pem")]
    return TlsListener(authority, client_authority, port, flags, directory)
