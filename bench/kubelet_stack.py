"""Shared setup of the kubelet benchmarks: the in-memory API server and red-box as subprocesses
(so they do not share the kubelet's event loop), Slurm command counting shims, and helpers.
``RealPlane`` is the real control plane of dev/scripts/kube-local (kube-apiserver, etcd,
controller-manager, scheduler) for benchmarks that measure on it too.

Not a benchmark itself. Every process started here is stopped by ``Stack.close()``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cpu_meter
from redbox_common import as_job_owner

from wlmvk.core import names
from wlmvk.core.errors import NotFound
from wlmvk.kube.bodies import NODES
from wlmvk_dev import localslurm

ROOT = Path(__file__).resolve().parents[1]
localslurm.use()  # the local Slurm of dev/scripts/slurm-local, for every Slurm command from here
JOBS = localslurm.jobs_root()
SLURM_COMMANDS = ("sbatch", "scancel", "squeue", "sacct", "scontrol", "sinfo")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def counting_shims(directory: Path, counter: Path) -> None:
    """Wrappers that log each Slurm command to ``counter`` and run the real one."""
    for name in SLURM_COMMANDS:
        real = shutil.which(name)
        if real is None:
            continue
        shim = directory / name
        shim.write_text(f'#!/bin/sh\necho {name} >> "{counter}"\nexec {real} "$@"\n')
        shim.chmod(0o755)


@dataclass
class Stack:
    base: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="kb-", dir="/tmp")))
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    kubeconfig: Path = Path()
    socket: str = ""
    work_dir: Path = Path()
    counter: Path = Path()

    def start(self, *, original: bool = False, count_commands: bool = True, slurm_api: str = "") -> Stack:
        """Start the API server and red-box; red-box runs Slurm's commands through counting
        shims (a shell each) only when ``count_commands``: a benchmark of speed leaves them out.

        ``slurm_api`` is red-box's ``--slurm-api`` (its default when empty); with ``rest`` red-box
        runs as the job owner (uid JOB_OWNER), as its own slurmrestd requires and as deployed."""
        port = free_port()
        self.kubeconfig = self.base / "kubeconfig"
        self._spawn(
            [sys.executable, "-c", "import sys; from wlmvk.cli import main; sys.exit(main(sys.argv[1:]))",
             "dev", "apiserver", "--port", str(port), "--no-controllers",
             "--kubeconfig", str(self.kubeconfig), "--log-level", "warning"],
            "apiserver.log",
        )  # fmt: skip
        shims = self.base / "bin"
        shims.mkdir()
        self.counter = self.base / "slurm-commands"
        self.counter.touch()
        counting_shims(shims, self.counter)
        self.work_dir = Path(tempfile.mkdtemp(prefix="kb-", dir=JOBS))
        self.socket = str(self.base / "rb.sock")
        argv = [sys.executable, "-m", "wlmvk.redbox", "--socket", self.socket,
                "--work-dir", str(self.work_dir), "--state-dir", str(self.base / "state"),
                "--log-level", "warning"]  # fmt: skip
        if original:
            argv.append("--original-api-only")
        if slurm_api:
            argv += ["--slurm-api", slurm_api]
        if slurm_api == "rest":
            argv = as_job_owner(argv, self.base, self.work_dir)
        env = {**os.environ, "PATH": f"{shims}:{os.environ['PATH']}"} if count_commands else None
        self._spawn(argv, "red-box.log", env=env)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.kubeconfig.exists() and Path(self.socket).exists():
                time.sleep(0.5)
                return self
            time.sleep(0.1)
        raise RuntimeError(f"stack did not start; see {self.base}")

    def _spawn(self, argv: list[str], log: str, env: dict[str, str] | None = None) -> None:
        with (self.base / log).open("wb") as sink:
            self.processes.append(
                subprocess.Popen(argv, stdout=sink, stderr=sink, env=env, cwd=ROOT, start_new_session=True)
            )

    def kubelet(
        self,
        *,
        cluster: str,
        submissions: int = 16,
        status_interval: float = 5.0,
        kubeconfig: Path | None = None,
    ) -> subprocess.Popen[bytes]:
        """``wlmvk kubelet`` as a subprocess against this stack (or the plane of ``kubeconfig``)."""
        argv = [
            sys.executable, "-c", "import sys; from wlmvk.cli import main; sys.exit(main(sys.argv[1:]))",
            "kubelet", "--kubeconfig", str(kubeconfig or self.kubeconfig), "--red-box-socket", self.socket,
            "--cluster-name", cluster, "--listen", "127.0.0.1", "--port", str(free_port()),
            "--metrics-port", "-1", "--submissions", str(submissions),
            "--status-interval", str(status_interval),
            "--log-level", "warning",
        ]  # fmt: skip
        self._spawn(argv, "kubelet.log")
        return self.processes[-1]

    def cpu_seconds(self) -> dict[str, float]:
        """CPU time used so far by each process of the stack (from /proc)."""
        named = list(zip(["apiserver", "red-box"], self.processes, strict=False))
        if len(self.processes) > 2:
            named.append(("kubelet", self.processes[-1]))  # the newest kubelet
        out: dict[str, float] = {}
        for name, proc in named:
            if Path(f"/proc/{proc.pid}").exists():  # a process gone is left out
                out[name] = cpu_meter.process_times(proc.pid)[0]
        return out

    def slurm_commands(self) -> list[str]:
        return self.counter.read_text().split()

    def close(self) -> None:
        for proc in self.processes:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.processes:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


KUBE_LOCAL = ROOT / "dev" / "scripts" / "kube-local"
PLANE_PARTS = ("kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler")


@dataclass(frozen=True)
class RealPlane:
    """The real control plane of dev/scripts/kube-local (started if it is not running)."""

    kubeconfig: Path
    run: Path  # its pid files

    @classmethod
    def up(cls) -> RealPlane:
        subprocess.run([str(KUBE_LOCAL), "up"], check=True, stdout=subprocess.DEVNULL)
        env = subprocess.run([str(KUBE_LOCAL), "env"], check=True, capture_output=True, text=True).stdout
        kubeconfig = Path(env.split("KUBECONFIG=", 1)[1].split()[0])
        return cls(kubeconfig, kubeconfig.parent / "run")

    @property
    def kubelet_client_ca(self) -> Path:
        """The CA of the certificate kube-apiserver presents to kubelets (a kubelet's --client-ca)."""
        return self.run.parent / "pki" / "ca.crt"

    def cpu_seconds(self) -> dict[str, float]:
        """CPU time used so far by the plane's parts: kube-apiserver, etcd, and the controller-manager
        and scheduler together (``controllers``)."""
        seconds = {}
        for part in PLANE_PARTS:
            pid_file = self.run / f"{part}.pid"
            seconds[part] = (
                cpu_meter.process_times(int(pid_file.read_text()))[0] if pid_file.exists() else 0.0
            )
        return {
            "apiserver": seconds["kube-apiserver"],
            "etcd": seconds["etcd"],
            "controllers": seconds["kube-controller-manager"] + seconds["kube-scheduler"],
        }


async def forget_cluster(kube: Any, cluster: str) -> None:
    """Delete a stopped kubelet's nodes (every partition's) from a plane that outlives the run, so
    no later pod is bound to them (the real scheduler binds to a NotReady node it finds)."""
    nodes = await kube.list(NODES, label_selector=f"{names.LABEL_CLUSTER}={cluster}")
    for node in nodes.get("items") or []:
        with contextlib.suppress(NotFound):
            await kube.delete(NODES, node["metadata"]["name"])


def scancel_name_prefix(prefix: str) -> None:
    """Cancel every job whose name starts with ``prefix`` (the benchmark's own jobs)."""
    out = subprocess.run(["squeue", "-h", "-o", "%i|%j"], capture_output=True, text=True, check=False).stdout
    ids = [line.split("|")[0] for line in out.splitlines() if line.split("|")[-1].startswith(prefix)]
    for start in range(0, len(ids), 200):
        subprocess.run(["scancel", *ids[start : start + 200]], capture_output=True, check=False)


async def wait_for_node(kube: Any, node: str, timeout: float = 60) -> None:
    """Until the kubelet registered ``node``."""

    async def exists() -> bool:
        try:
            await kube.get(NODES, node)
        except NotFound:
            return False
        return True

    await wait_until(exists, timeout=timeout, every=0.2)


async def wait_until(check, timeout: float, every: float = 0.05):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = await check()
        if result:
            return result
        await asyncio.sleep(every)
    raise TimeoutError("condition not met")
