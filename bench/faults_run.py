"""The long fault suite: churn rounds under each fault, many times, printed as a table.

Real Slurm, a real red-box running as the job owner (UID 1000) and reached
through a real ``ssh -nNT -L`` forward (deploy/red-box-forward, against
Debian's sshd on loopback: tests/fixtures/sshd.py), the in-memory API server
in this process and ``wlmvk kubelet`` as a subprocess. Each fault runs
``--rounds`` rounds of ``--pods`` pods (see tests/faults/churn.py for what a
round does and how it is counted from Slurm's side). The fast versions of the
same rounds are tests/faults/test_churn.py.

    .venv/bin/python bench/faults_run.py --rounds 20 --pods 200
    .venv/bin/python bench/faults_run.py --only kill9 --rounds 3 --pods 40
    .venv/bin/python bench/faults_run.py --only slurmctld --rounds 2 --pods 20
    bench/run-all --only reliability --fault kill9-real   # one row: raw output kept, the doc's table
    nice -n 10 .venv/bin/python bench/faults_run.py --kube real --only takeover

``--kube real`` runs the rounds on the real control plane of dev/scripts/kube-local (it
must be up; it is shared with the tests, so the rounds take a cluster, node and
namespace of their own, ``faultbench``, and the kubelets run as the ServiceAccount
wlmvk/wlmvk-kubelet, as deployed); the watch row needs the in-memory server's store.

A run with the ``slurmctld`` row (its slurmctld stopped with SIGTERM and started
again once per round) runs all its rows on a Slurm of its own (tests/faults/ownslurm.py:
``dev/scripts/slurm-local`` in /var/tmp/wlmvk-faults-slurm, ports 6927-6929 and 3327),
started before the rounds and stopped after them: the shared local Slurm is never
restarted.
The rows of issue 32 strike at Slurm's side and at red-box's clock (tests/faults/slurmside.py):
``ctldstop-rest`` and ``ctldstop-cli`` stop slurmctld (SIGSTOP) 15 s, past its
MessageTimeout, while pods are submitted, with red-box on its slurmrestd or on sbatch (on the
run's own Slurm too); ``restd-stop`` stops red-box's slurmrestd; ``skew-ahead`` and
``skew-behind`` run red-box's process (only it) 30 s ahead or behind under libfaketime;
``takeover-held`` is ``takeover-stop`` with the active kubelet's red-box calls held in a gate
while the standby takes over and pods are deleted and created again under the same names. red-box
is started again between rows with each row's arguments and environment (``REDBOX``).
The own Slurm's base and port move with WLMVK_FAULTS_BENCH_SLURM_BASE and _PORT.

``--slurm-release 24.11`` (or 26.05) runs every row on that release's box (dev/scripts/slurm-release,
its files under WLMVK_SLURM_RELEASES_BASE): red-box inside it, the rounds' Slurm commands through
``slurm-release exec``, as in the release subsets. The box is then the Slurm of the run's own (the
``slurmctld`` row, which restarts slurmctld, cannot run there; ``ctldstop-*`` stop the box's);
started when down, and stopped after the rows if this run started it. Its rows are marked
"[Slurm RELEASE]".

What a row needs and is missing (sshd and ssh; libfaketime; slurmrestd) is installed with apt-get
when this runs as root on Debian, else named in one line (exit 2).
``--markdown FILE`` also writes the table there, ``--json FILE`` the rows as
JSON (bench/run-all keeps both in docs/raw/ and fills docs/reliability.md's
table from them). Exit status 1 when any count is not zero.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# --slurm-release before the imports below: tests.fixtures takes the release from the environment.
for _at, _arg in enumerate(sys.argv[1:], 1):
    if _arg.startswith("--slurm-release="):
        os.environ["WLMVK_SLURM_RELEASE"] = _arg.split("=", 1)[1]
    elif _arg == "--slurm-release" and _at + 1 < len(sys.argv):
        os.environ["WLMVK_SLURM_RELEASE"] = sys.argv[_at + 1]

from tests.faults import churn, ownslurm, slurmside  # noqa: E402
from tests.fixtures import slurm_release, sshd  # noqa: E402
from tests.fixtures.controlplane import INSTALLED, RealKube, kube_local  # noqa: E402
from tests.fixtures.gate import Gate  # noqa: E402
from tests.fixtures.redbox import JOB_OWNER, RedBox  # noqa: E402
from tests.fixtures.slurm import JOBS_ROOT  # noqa: E402

from wlmvk.kube.client import KubeClient  # noqa: E402
from wlmvk_dev.apiserver.controllers import default_controllers  # noqa: E402
from wlmvk_dev.apiserver.kubelets import default_log_handler  # noqa: E402
from wlmvk_dev.apiserver.objects.resources import PODS as PODS_GVR  # noqa: E402
from wlmvk_dev.apiserver.server import ApiServer, Config  # noqa: E402

FAULTS = (
    "none", "kill9", "kill9-running", "takeover", "takeover-stop", "redbox", "watch", "slurmctld",
    "ctldstop-rest", "ctldstop-cli", "skew-ahead", "skew-behind", "restd-stop", "takeover-held",
)  # fmt: skip
# The rows that stop or restart slurmctld: on a Slurm of the run's own (ownslurm.BENCH).
OWN_SLURM = ("slurmctld", "ctldstop-rest", "ctldstop-cli")
# red-box's arguments and environment per row (the others: as deployed by default, --slurm-api auto).
REST = ["--slurm-api", "rest"]
REDBOX: dict[str, tuple[list[str], dict[str, str]]] = {
    "ctldstop-rest": (REST, {}),
    "ctldstop-cli": (["--slurm-api", "cli"], {}),
    "skew-ahead": (REST, slurmside.skewed_clock(30)),
    "skew-behind": (REST, slurmside.skewed_clock(-30)),
    "restd-stop": (REST, {}),
}
# The rows struck at the active one of two kubelets (--leader-elect) instead of the lone kubelet.
PAIRED = ("takeover", "takeover-stop", "takeover-held")
# The rows that need the in-memory API server (its store).
MEMORY_ONLY = ("watch",)
# The real plane is shared with the tests: the rounds there take names of their own.
REAL_SITE = churn.Site(cluster="faultbench", namespace="faultbench")
# The rows whose pods run a while and whose fault strikes once one runs (a clock skew matters to
# jobs whose state changes while red-box looks).
RUNNING = ("kill9-running", "redbox", "slurmctld", "skew-ahead", "skew-behind", "takeover", "takeover-stop")
# The pods that run sleep this long in the rounds whose fault strikes while jobs run.
RUN_SECONDS = 3.0


async def _serve_paired(
    kubelet: churn.KubeletRunner, pair: tuple[churn.KubeletRunner, ...], kube: KubeClient
) -> None:
    """The lone kubelet stopped, two --leader-elect ones started; returns once the first serves."""
    await kubelet.stop()
    await pair[0].start()
    if not await churn.wait_for(lambda: churn.serving(kube, pair[0]), 120):
        raise RuntimeError("the first of the pair never served the node")
    await pair[1].start()


async def _serve_alone(
    kubelet: churn.KubeletRunner, pair: tuple[churn.KubeletRunner, ...], kube: KubeClient
) -> None:
    """Back to the lone kubelet (the pair stopped; a graceful stop releases the cluster Lease)."""
    for one in pair:
        await one.stop()
    await kubelet.start()
    if not await churn.wait_for(lambda: churn.node_ready(kube, kubelet.site), 60):
        raise RuntimeError("the node never became Ready again after the takeover rows")


SSH_PACKAGES = ("openssh-server", "openssh-client")


def _missing(faults: list[str]) -> list[tuple[str, tuple[str, ...]]]:
    """What the chosen rows need and is not there: (what is missing, its Debian packages)."""
    needs: list[tuple[str, tuple[str, ...]]] = [(sshd.missing(), SSH_PACKAGES)]
    if any(f.startswith("skew-") for f in faults):
        needs.append((slurmside.faketime_missing(), (slurmside.FAKETIME_PACKAGE,)))
    if any(REDBOX.get(f, ([], {}))[0] == REST for f in faults) and slurm_release.RELEASE is None:
        # A release's box has its slurmrestd (dev/scripts/slurm-release build installs it).
        needs.append((slurmside.slurmrestd_missing(), ("slurmrestd",)))
    return [(what, packages) for what, packages in needs if what]


def prerequisites_ready(faults: list[str]) -> str:
    """'' once what the chosen rows need is there, installed with apt-get as scripts/test does
    when this runs as root on Debian; else the one line saying what is missing."""
    missing = _missing(faults)
    if not missing:
        return ""
    if os.geteuid() == 0 and shutil.which("apt-get"):
        packages = [p for _, ps in missing for p in ps]
        print(f"faults_run: installing {' '.join(packages)} (apt-get)", file=sys.stderr)
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for argv in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *packages]):
            if subprocess.run(argv, env=env, capture_output=True, check=False).returncode:
                break
    return "; ".join(what for what, _ in _missing(faults))


# red-box's log lines a row counts (printed after it): how often the faults reached the rules.
EVENTS = (
    "the answer may mean Slurm has the job",
    "job found by key after an uncertain answer",
    "no job under the key after the bound",
    "submitting through sbatch",
    "slurmrestd hung: replaced",
    "rpc refused: a deposed holder's token",
)


def events(log: str) -> str:
    """How many of red-box's ``log`` lines name each of ``EVENTS``."""
    return "; ".join(f'"{event}" {log.count(event)}' for event in EVENTS)


def configure(box: RedBox, args: list[str], env: dict[str, str]) -> bool:
    """red-box started again with ``args`` and ``env`` unless it runs with them already; whether it was."""
    if (box.args, box.env) == (args, env):
        return False
    box.stop()
    box.args, box.env = list(args), dict(env)
    box.start()
    return True


def own_slurm(args: argparse.Namespace) -> bool:
    """The run takes a Slurm of its own: one of its rows stops or restarts slurmctld."""
    return any(f in OWN_SLURM for f in chosen_faults(args))


def own_instance() -> ownslurm.Instance:
    """The Slurm of the run's own: a release's box (``--slurm-release``), else ``ownslurm.BENCH``."""
    return ownslurm.box(slurm_release.RELEASE) if slurm_release.RELEASE else ownslurm.BENCH


@contextlib.contextmanager
def own_running(args: argparse.Namespace) -> Iterator[None]:
    """The Slurm the rows run on, up meanwhile: the release's box (every row), the run's own for
    a run with a row that stops or restarts slurmctld, else the shared one (up already)."""
    if slurm_release.RELEASE is not None:
        started = slurm_release.status(slurm_release.RELEASE) is None
        if started:
            slurm_release.up(slurm_release.RELEASE)
        try:
            yield
        finally:
            if started:
                subprocess.run([str(slurm_release.SCRIPT), "down", slurm_release.RELEASE], check=False)
    elif own_slurm(args):
        with ownslurm.running(ownslurm.BENCH):
            yield
    else:
        yield


def released() -> list[str]:
    """The rows' mark when they run on a release's box."""
    return [f"[Slurm {slurm_release.RELEASE}]"] if slurm_release.RELEASE else []


def chosen_faults(args: argparse.Namespace) -> list[str]:
    return [f for f in args.only or FAULTS if args.kube == "memory" or f not in MEMORY_ONLY]


def real_plane(scratch: Path) -> RealKube:
    """dev/scripts/kube-local's plane (up already), the project's manifests applied, the rounds' namespace."""
    if subprocess.run(
        [str(ROOT / "dev" / "scripts" / "kube-local"), "status"], capture_output=True
    ).returncode:
        raise RuntimeError("the real control plane is not up (dev/scripts/kube-local up)")
    env = dict(
        line.removeprefix("export ").split("=", 1) for line in kube_local("env").splitlines() if "=" in line
    )
    admin = Path(env["KUBECONFIG"].strip("'\""))
    server = next(line.split()[-1] for line in admin.read_text().splitlines() if "server:" in line)
    kubectl = Path(kube_local("bin").strip()) / "kubectl"
    real = RealKube(server, admin, kubectl, admin.parent / "pki" / "ca.crt", scratch)
    for name in INSTALLED:
        real.must("apply", "-f", str(ROOT / "manifests" / name))
    if real.run_kubectl("get", "namespace", REAL_SITE.namespace).returncode:
        real.must("create", "namespace", REAL_SITE.namespace)
    return real


def clean_real(real: RealKube) -> None:
    """What the rounds left on the shared plane: their pods, the cluster's nodes (one per
    partition) and Leases."""
    real.run_kubectl("delete", "pods", "--all", "-n", REAL_SITE.namespace, "--force", "--grace-period=0")
    prefix = f"slurm-{REAL_SITE.cluster}"
    nodes = [n for n in real.run_kubectl("get", "nodes", "-o", "name").stdout.split() if f"/{prefix}-" in n]
    if nodes:
        real.run_kubectl("delete", *nodes, "--ignore-not-found")
    leases = real.run_kubectl("get", "leases", "-n", "kube-node-lease", "-o", "name").stdout.split()
    ours = [n for n in leases if n.split("/")[-1].startswith(prefix)]
    if ours:
        real.run_kubectl("delete", "-n", "kube-node-lease", *ours, "--ignore-not-found")


async def run(args: argparse.Namespace) -> list[churn.Tally]:
    scratch = Path(tempfile.mkdtemp(prefix="faults-", dir="/tmp"))
    apiserver = ApiServer(Config(port=0, bookmark_interval=1.0), controllers=default_controllers(),
                           log_handler=default_log_handler())  # fmt: skip
    real: RealKube | None = None
    site = churn.SITE
    client_ca: Path | None = None
    if args.kube == "real":
        real = await asyncio.to_thread(real_plane, scratch)
        site = REAL_SITE
        admin, kubeconfig, client_ca = real.admin, real.account_kubeconfig("wlmvk-kubelet"), real.ca
        await asyncio.to_thread(clean_real, real)
    else:
        await apiserver.start()
        kubeconfig = admin = apiserver.write_kubeconfig(scratch / "kubeconfig")
    # Jobs run in the Slurm's own working root: the shared one's, or the run's own Slurm's.
    jobs_root = own_instance().jobs_root if own_slurm(args) else JOBS_ROOT
    work_dir = Path(tempfile.mkdtemp(prefix="faults-", dir=jobs_root))
    # red-box as the job owner, as deployed: its directories are the owner's. In a release's box
    # only the jobs directory is shared with the host, where the forward reaches red-box's socket.
    state_home = Path(tempfile.mkdtemp(prefix="rb", dir=JOBS_ROOT if slurm_release.RELEASE else "/tmp"))
    for path in (work_dir, state_home):
        shutil.chown(path, JOB_OWNER, JOB_OWNER)
    # As the first row runs it (configure() starts it again for a row that runs it otherwise).
    first_args, first_env = REDBOX.get(chosen_faults(args)[0], ([], {}))
    box = RedBox(socket=str(state_home / "rb.sock"), work_dir=work_dir, state_dir=state_home / "state",
                 log_path=scratch / "red-box.log", user=JOB_OWNER, args=list(first_args),
                 env=dict(first_env))  # fmt: skip
    login = sshd.SshServer(Path(tempfile.mkdtemp(prefix="sshd-", dir="/tmp")), JOB_OWNER)
    forward = sshd.SshForward(login, str(scratch / "fwd.sock"), box.socket, scratch / "ssh.log")
    kube = await KubeClient.connect(str(admin))
    kubelet = churn.KubeletRunner(kubeconfig, forward.local, scratch / "kubelet.log", client_ca, site=site)
    # The pair's election flags: the rig's (churn.LEADING) unless given.
    leading = ["--leader-elect", *(args.leader_flags.split() if args.leader_flags else churn.LEADING[1:])]
    pair = tuple(
        churn.KubeletRunner(
            kubeconfig,
            forward.local,
            scratch / f"kubelet-{host}.log",
            client_ca,
            agent_host=host,
            extra=leading,
            site=site,
        )
        for host in ("agent-a", "agent-b")
    )
    # The takeover-held row's pair: each kubelet reaches the forward through a gate of its own.
    gates = (Gate(forward.local), Gate(forward.local))
    gated = tuple(
        dataclasses.replace(
            one, socket=gate.path, log=scratch / f"kubelet-gated-{one.agent_host}.log", port=0
        )
        for one, gate in zip(pair, gates, strict=True)
    )
    recreations = churn.Recreations()
    pairs = {"takeover-held": gated}
    rng = random.Random(args.seed)
    tallies: list[churn.Tally] = []
    try:
        # Started inside the try: whatever fails to start, what did start is stopped.
        await asyncio.to_thread(box.start)
        await asyncio.to_thread(login.start)
        await asyncio.to_thread(forward.start)
        await kubelet.start()
        if not await churn.wait_for(lambda: churn.node_ready(kube, site), 60):
            raise RuntimeError(f"the node never became Ready; see {scratch}")
        plans: dict[str, tuple[str, Callable[[churn.Tally], churn.Fault]]] = {
            "none": ("none (baseline)", lambda t: churn.no_fault()),
            "kill9": ("kubelet kill -9 (2 per round)", lambda t: churn.kill_kubelet(kubelet, rng, strikes=2)),
            "kill9-running": (
                "kubelet kill -9 while jobs run (2 per round)",
                lambda t: churn.kill_kubelet(kubelet, rng, strikes=2),
            ),
            "takeover": (
                "agent host lost: active kubelet kill -9, standby takes over, while jobs run",
                lambda t: churn.takeover((pair[0], pair[1]), kube, rng, t, freeze=False),
            ),
            "takeover-stop": (
                "agent host partitioned: active kubelet SIGSTOP, standby takes over, SIGCONT, while jobs run",
                lambda t: churn.takeover((pair[0], pair[1]), kube, rng, t, freeze=True),
            ),
            "redbox": (
                "red-box, ssh client, sshd kill -9 while jobs run (1 each per round)",
                lambda t: churn.redbox_outages(box, forward, login, kube, rng, t, site),
            ),
            "watch": (
                "watch dropped + 410 Gone (3 per round)",
                lambda t: churn.watch_drops(apiserver.store, PODS_GVR, rng, drops=3),
            ),
            "slurmctld": (
                "slurmctld restarted while jobs run (1 per round, on a Slurm of its own)",
                lambda t: churn.slurmctld_restart(own_instance(), rng, t),
            ),
            "ctldstop-rest": (
                "slurmctld stopped (SIGSTOP) 15 s, past MessageTimeout, during submission, slurmrestd path"
                " (1 per round, on a Slurm of its own)",
                lambda t: slurmside.slurmctld_stopped(own_instance(), rng, t),
            ),
            "ctldstop-cli": (
                "slurmctld stopped (SIGSTOP) 15 s, past MessageTimeout, during submission, sbatch path"
                " (1 per round, on a Slurm of its own)",
                lambda t: slurmside.slurmctld_stopped(own_instance(), rng, t),
            ),
            "skew-ahead": (
                "red-box's clock 30 s ahead (libfaketime), slurmrestd path, jobs run",
                lambda t: churn.no_fault(),
            ),
            "skew-behind": (
                "red-box's clock 30 s behind (libfaketime), slurmrestd path, jobs run",
                lambda t: churn.no_fault(),
            ),
            "restd-stop": (
                "red-box's slurmrestd stopped (SIGSTOP: hung, not dead) during submission (1 per round)",
                lambda t: slurmside.slurmrestd_stopped(box, rng, t),
            ),
            "takeover-held": (
                "agent host partitioned with its red-box calls held on their way: active kubelet's gate"
                " closed, SIGSTOP, standby takes over, 10 pods deleted and created again under the same"
                " names, gate opened, SIGCONT, during submission",
                lambda t: slurmside.takeover_held((gated[0], gated[1]), gates, kube, rng, t, recreations),
            ),
        }
        chosen = chosen_faults(args)
        for key in chosen:
            label, make = plans[key]
            marks = [*([] if real is None else ["[real plane]"]), *released()]
            tally = churn.Tally(" ".join([label, *marks]))
            rounds = args.rounds
            run_seconds = RUN_SECONDS if key in RUNNING else 0.0
            restarted = await asyncio.to_thread(configure, box, *REDBOX.get(key, ([], {})))
            if restarted and not await churn.wait_for(lambda: churn.node_ready(kube, site), 60):
                raise RuntimeError(f"the node never became Ready with red-box as row {key} runs it")
            logged = box.log_path.stat().st_size if box.log_path.exists() else 0
            two = pairs.get(key, pair)
            if key == "takeover-held":
                for gate in gates:
                    await gate.start()
                    gate.open.set()
            if key in PAIRED:
                await _serve_paired(kubelet, two, kube)
            for _ in range(rounds):
                again = recreations if key == "takeover-held" else None
                await churn.churn_round(kube, pods=args.pods, fault=make(tally), tally=tally, rng=rng,
                                        settle=args.settle, run_seconds=run_seconds, site=site,
                                        recreations=again)  # fmt: skip
                took = f", takeover p95 {churn.p95(tally.takeovers):.1f} s" if tally.takeovers else ""
                print(
                    f"  {label}: round {tally.rounds}/{rounds} ({tally.seconds:.0f} s{took})", file=sys.stderr
                )
            if key in PAIRED:
                await _serve_alone(kubelet, two, kube)
            tallies.append(tally)
            with box.log_path.open("rb") as log:
                log.seek(logged)
                print(
                    f"  red-box's log over the row: {events(log.read().decode(errors='replace'))}",
                    file=sys.stderr,
                )
            for problem in tally.problems[:20]:
                print(f"  ! {problem}", file=sys.stderr)
    finally:
        await kubelet.stop()
        for one in (*pair, *gated):
            await one.stop()
        for gate in gates:
            await gate.close()
        await kube.close()
        forward.stop()
        login.stop()
        await asyncio.to_thread(box.stop)
        ids = box.journal_job_ids()
        if ids:
            await asyncio.to_thread(churn.scancel, sorted(ids))
        if real is not None:
            await asyncio.to_thread(clean_real, real)
        else:
            await apiserver.stop()
        shutil.rmtree(work_dir, ignore_errors=True)
        shutil.rmtree(state_home, ignore_errors=True)
        shutil.rmtree(login.directory, ignore_errors=True)
        if args.keep:
            print(f"logs kept in {scratch}", file=sys.stderr)
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    return tallies


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20, help="rounds per fault")
    parser.add_argument("--pods", type=int, default=200, help="pods per round")
    parser.add_argument("--settle", type=float, default=300.0, help="seconds a round may take to settle")
    parser.add_argument("--only", action="append", choices=FAULTS, help="run only this fault (repeatable)")
    parser.add_argument(
        "--leader-flags",
        default="",
        help="the takeover rows' election flags, e.g. '--leader-lease-duration 15 --leader-renew-interval 5"
        " --leader-retry-interval 2' (the kubelet's defaults); default: tests/faults/churn.py's LEADING",
    )
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument(
        "--kube", choices=("memory", "real"), default="memory",
        help="the control plane: the in-memory API server in this process, or dev/scripts/kube-local's",
    )  # fmt: skip
    parser.add_argument("--markdown", help="also write the table to this file")
    parser.add_argument("--json", help="also write the rows (and the run's arguments) to this file as JSON")
    parser.add_argument(
        "--slurm-release",
        choices=("24.11", "26.05"),
        help="run every row on this Slurm release's box (dev/scripts/slurm-release), not the host's Slurm",
    )
    parser.add_argument("--keep", action="store_true", help="keep the logs")
    args = parser.parse_args()
    if missing := prerequisites_ready(chosen_faults(args)):
        print(f"faults_run: {missing}", file=sys.stderr)
        return 2
    started = time.monotonic()
    if slurm_release.RELEASE is not None and "slurmctld" in chosen_faults(args):
        print(
            "faults_run: the slurmctld row restarts slurmctld, which a release's box does not",
            file=sys.stderr,
        )
        return 2
    with own_running(args):
        tallies = asyncio.run(run(args))
    table = churn.markdown(tallies)
    print(table)
    for tally in tallies:
        if tally.takeovers:
            print(f"{tally.fault}: takeover p95 {churn.p95(tally.takeovers):.1f} s, max"
                  f" {max(tally.takeovers):.1f} s over {len(tally.takeovers)} takeovers")  # fmt: skip
    print(f"\n{sum(t.pods for t in tallies)} pods in {time.monotonic() - started:.0f} s")
    if args.markdown:
        Path(args.markdown).write_text(table + "\n")
    if args.json:
        rows = [
            {
                **{k: v for k, v in dataclasses.asdict(t).items() if k != "problems"},
                "takeover_p95": churn.p95(t.takeovers) if t.takeovers else None,
            }
            for t in tallies
        ]
        problems = [p for t in tallies for p in t.problems]
        figures = {"argv": sys.argv[1:], "kube": args.kube, "rows": rows, "problems": problems}
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n")
    return 0 if all(t.clean for t in tallies) else 1


if __name__ == "__main__":
    sys.exit(main())
