"""Shared plumbing of the benchmarks that count from Slurm's side, not ours.

Slurm here is shared with other work, so what red-box costs Slurm is read
off the daemons' own per-user counters: slurmctld's (``sdiag``, "by user")
and slurmdbd's (``sacctmgr show stats``, "by user"), for a user only these
benchmarks run as (``wlmvk-bench``, created when missing, the way
dev/scripts/slurm-local creates the job owner). Counters are read before and after
a window and subtracted: nobody else's counters are reset. A window during which
a daemon restarted (or someone ran ``sdiag -r``) shows as a changed "Data since"
and is reported as such.

``BenchRedBox`` starts ``python -m wlmvk.redbox`` as that user (through
runuser, with the system interpreter and this checkout on PYTHONPATH, as the
tests run the job owner's red-box), with shims on its PATH that count every
Slurm command it runs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cpu_meter
from kubelet_stack import RealPlane, counting_shims, free_port, wait_until

from wlmvk_dev import localslurm

ROOT = Path(__file__).resolve().parents[1]
JOBS = localslurm.jobs_root()
USER = "wlmvk-bench"
_SINCE = re.compile(r"^Data since\s+(.*)$", re.M)
_ROW = re.compile(r"^\s+(\S+)\s+\(\s*(\d+)\)\s+count:(\d+)", re.M)


def bench_user() -> str:
    """The benchmarks' own Slurm user (a system account without a home, created when missing)."""
    try:
        pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER], check=True
        )
    return USER


@dataclass(frozen=True)
class Counters:
    """One reading of a daemon's RPC counters: since when, per message type, per user."""

    since: str
    by_type: dict[str, int]
    by_user: dict[str, int]

    def minus(self, earlier: Counters) -> Counters:
        return Counters(
            since=self.since if self.since == earlier.since else f"{earlier.since} -> {self.since}",
            by_type=_minus(self.by_type, earlier.by_type),
            by_user=_minus(self.by_user, earlier.by_user),
        )

    @property
    def restarted(self) -> bool:
        return "->" in self.since


def _minus(later: dict[str, int], earlier: dict[str, int]) -> dict[str, int]:
    out = {k: v - earlier.get(k, 0) for k, v in later.items()}
    return {k: v for k, v in sorted(out.items(), key=lambda kv: -kv[1]) if v}


def parse_counters(text: str) -> Counters:
    since = _SINCE.search(text)
    by_type_text, _, rest = text.partition("statistics by user")
    by_user_text = rest.split("\n\n", 1)[0]
    by_type_text = by_type_text.split("statistics by message type", 1)[-1]
    return Counters(
        since=since.group(1).strip() if since else "?",
        by_type={m.group(1): int(m.group(3)) for m in _ROW.finditer(by_type_text)},
        by_user={m.group(1): int(m.group(3)) for m in _ROW.finditer(by_user_text)},
    )


def slurmctld_counters() -> Counters:
    return parse_counters(subprocess.run(["sdiag"], capture_output=True, text=True, check=True).stdout)


def slurmdbd_counters() -> Counters:
    done = subprocess.run(["sacctmgr", "show", "stats"], capture_output=True, text=True, check=False)
    return parse_counters(done.stdout if done.returncode == 0 else "")


def pythonpath(source: Path) -> str:
    """``source`` (a tree's src) first, then this interpreter's packages (the Rust codec, grpclib)."""
    return os.pathsep.join([str(source), *(p for p in sys.path if p.endswith("site-packages"))])


@dataclass
class BenchRedBox:
    """red-box as the bench user, its Slurm commands counted; ``stop()`` ends it."""

    source: Path = ROOT / "src"
    args: list[str] = field(default_factory=list)
    user: str = USER
    """Who it runs as: the bench user (created when missing), or another the caller made."""
    count_commands: bool = True
    """Slurm's commands through counting shims (a shell each); a benchmark of latency leaves them out."""
    base: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="rbs-", dir="/tmp")))
    proc: subprocess.Popen[bytes] | None = None
    _child: int = 0

    @property
    def socket(self) -> str:
        return str(self.base / "rb.sock")

    @property
    def counter(self) -> Path:
        return self.base / "slurm-commands"

    def start(self) -> BenchRedBox:
        user = bench_user() if self.user == USER else self.user
        self.base.chmod(0o755)
        shims = self.base / "bin"
        shims.mkdir()
        counting_shims(shims, self.counter)
        self.counter.touch()
        state = self.base / "state"
        state.mkdir()
        work = Path(tempfile.mkdtemp(prefix="rbs-", dir=JOBS))
        for path in (self.base, self.counter, state, work):
            shutil.chown(path, user, user)
        python = shutil.which("python3.11", path="/usr/bin:/bin") or sys.executable
        argv = ["runuser", "-u", user, "--", python, "-m", "wlmvk.redbox", "--socket", self.socket,
                "--work-dir", str(work), "--state-dir", str(state), "--log-level", "warning",
                *self.args]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": pythonpath(self.source)}
        if self.count_commands:
            env["PATH"] = f"{shims}:{os.environ['PATH']}"
        log = (self.base / "red-box.log").open("wb")
        self.proc = subprocess.Popen(argv, stdout=log, stderr=log, env=env, cwd="/", start_new_session=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"red-box exited: {(self.base / 'red-box.log').read_text()}")
            if Path(self.socket).exists():
                time.sleep(0.3)
                self._child = self.pid()
                return self
            time.sleep(0.1)
        raise RuntimeError(f"red-box did not start; see {self.base}")

    def commands(self) -> list[str]:
        return self.counter.read_text().split()

    def pid(self) -> int:
        """red-box's own process (runuser's child)."""
        assert self.proc is not None
        children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text().split()
        return int(children[0]) if children else self.proc.pid

    def cpu_seconds(self) -> float:
        return process_cpu(self.pid()) if self.proc else 0.0

    def stop(self) -> None:
        """SIGTERM to runuser's group, SIGKILL after 15 s; red-box itself too should it outlive runuser."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        if self._child and Path(f"/proc/{self._child}").exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._child, signal.SIGKILL)


WLMVK = "import sys; from wlmvk.cli import main; sys.exit(main(sys.argv[1:]))"


class Processes:
    """The API server and the kubelet (as root), stopped by ``close``."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.procs: list[subprocess.Popen[bytes]] = []

    def spawn(self, argv: list[str], log: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        with (self.base / log).open("wb") as sink:
            proc = subprocess.Popen(argv, stdout=sink, stderr=sink, cwd=ROOT, env=env, start_new_session=True)
        self.procs.append(proc)
        return proc

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


async def apiserver_and_kubelet(
    red_box: BenchRedBox,
    procs: Processes,
    prefix: str,
    *kubelet_args: str,
    client_ca: bool = True,
    controllers: bool = False,
    real: RealPlane | None = None,
) -> tuple[Path, str, subprocess.Popen[bytes]]:
    """``wlmvk dev apiserver`` and ``wlmvk kubelet`` beside red-box, from red-box's source tree.

    Returns the kubeconfig, the kubelet's cluster name (``prefix`` + 5 hex digits) and its
    process. With ``client_ca`` the kubelet trusts the API server's kubelet-client CA, so
    ``kubectl logs``/``exec`` through the API server are let in. With ``controllers`` the API
    server runs its controllers (the scheduler binds pods nobody bound, as the operator's are).
    With ``real`` (kubelet_stack.RealPlane) no in-memory API server is started and the kubelet
    registers there (trusting kube-apiserver's kubelet-client CA with ``client_ca``).
    """
    kubeconfig = real.kubeconfig if real is not None else red_box.base / "kubeconfig"
    ca = real.kubelet_client_ca if real is not None else red_box.base / "kubelet-client-ca.crt"
    if real is None:
        quiet = [] if controllers else ["--no-controllers"]
        for stale in (kubeconfig, ca):  # an earlier in-memory server's, of a run before this one
            stale.unlink(missing_ok=True)
        procs.spawn([sys.executable, "-c", WLMVK, "dev", "apiserver", "--port", str(free_port()), *quiet,
                     "--kubeconfig", str(kubeconfig), "--log-level", "warning"],
                    "apiserver.log")  # fmt: skip
        written = [kubeconfig, ca] if client_ca else [kubeconfig]
        await wait_until(lambda: asyncio.sleep(0, all(p.exists() for p in written)), timeout=30, every=0.1)
        await asyncio.sleep(0.5)
    cluster = f"{prefix}{uuid.uuid4().hex[:5]}"
    env = {**os.environ, "PYTHONPATH": pythonpath(red_box.source)}
    argv = [sys.executable, "-c", WLMVK, "kubelet", "--kubeconfig", str(kubeconfig),
            "--red-box-socket", red_box.socket, "--cluster-name", cluster, "--listen", "127.0.0.1",
            "--port", str(free_port()), "--metrics-port", "-1", "--log-level", "warning",
            *kubelet_args]  # fmt: skip
    if client_ca:
        argv += ["--client-ca", str(ca)]
    return kubeconfig, cluster, procs.spawn(argv, f"kubelet-{cluster}.log", env=env)


def process_cpu(pid: int) -> float:
    """CPU seconds used so far by ``pid`` and its waited-for children (from /proc)."""
    return sum(cpu_meter.process_times(pid))


def main_with_json(
    parser: argparse.ArgumentParser, measure: Callable[[Any], Awaitable[dict[str, Any]]]
) -> None:
    """Parse ``parser``'s arguments (plus ``--json FILE``), run ``measure``, write its figures."""
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    figures = json.dumps(asyncio.run(measure(args)), indent=1)
    if args.json is not None:
        args.json.write_text(figures)


@contextlib.asynccontextmanager
async def bench_system(
    source: Path = ROOT / "src", args: Sequence[str] = ()
) -> AsyncIterator[tuple[BenchRedBox, Processes]]:
    """red-box (with ``args``) as the bench user and a ``Processes`` beside it; all stopped, every
    bench job cancelled."""
    red_box = BenchRedBox(source=source, args=list(args)).start()
    procs = Processes(red_box.base)
    try:
        yield red_box, procs
    finally:
        procs.close()
        red_box.stop()
        cancel_bench_jobs()


def cancel_bench_jobs() -> None:
    """``scancel -u`` the bench user: only these benchmarks run as it."""
    subprocess.run(["scancel", "-u", USER], capture_output=True, check=False)
