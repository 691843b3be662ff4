"""Small helpers shared by the red-box end-to-end tests."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import trustme

from wlmvk.core.jobs import JobId, JobState, JobStatus
from wlmvk.wlm.client import RedBoxClient

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


def tls_listener(directory: Path) -> tuple[trustme.CA, int, list[str]]:
    """A CA, a free loopback port and red-box's flags for a TLS TCP listener on it.

    The certificate (for 127.0.0.1 and localhost) and its key are written to
    ``directory`` as cert.pem and key.pem, the CA's certificate as ca.pem.
    """
    authority = trustme.CA()
    cert = authority.issue_cert("127.0.0.1", "localhost")
    cert.private_key_pem.write_to_path(str(directory / "key.pem"))
    cert.cert_chain_pems[0].write_to_path(str(directory / "cert.pem"))
    authority.cert_pem.write_to_path(str(directory / "ca.pem"))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    flags = ["--tcp", f"127.0.0.1:{port}", "--tls-cert", str(directory / "cert.pem")]
    return authority, port, [*flags, "--tls-key", str(directory / "key.pem")]
