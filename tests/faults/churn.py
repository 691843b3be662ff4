"""Churn under faults: pods created, run and deleted while something breaks; audited from Slurm.

One *round* creates a batch of pods on a virtual node: a quarter run ``true``
to completion, the rest are held jobs (``#SBATCH --hold``: they take no CPU
on the shared Slurm) that are deleted while the round goes on. A *fault*
coroutine strikes meanwhile (kill -9 of the kubelet; kill -9 or SIGSTOP of the
active one of two kubelets for the cluster, the standby taking over; kill -9 of red-box, of
the ssh client forwarding its socket and of sshd; the API server's watches
dropped with their history gone; slurmctld restarted, in a Slurm of the suite's
own), during submission or, with ``run_seconds``, once jobs run, and always
leaves the system whole again when it returns. The round then
waits for the pods to settle and counts, from Slurm's side (``squeue -t all``
and ``sacct``, by the idempotency key ``wlmvk:<pod uid>`` in each job's
comment), never from the kubelet's records:

- duplicates: pods with more than one job;
- lost: a pod left with no job, or whose job ended without the pod reaching
  its terminal phase;
- orphaned: a deleted pod whose job is still pending or running in Slurm;
- spurious failures: a pod whose job should complete (every pod not deleted
  runs ``true``) that ended Failed, whatever Slurm says of its job;
- round problems: what went wrong in the round itself rather than in one
  pod's accounting (a pod never created, pods that did not settle, a node
  that never went NotReady or did not come back).

A round without a fault (``no_fault``) is the baseline row: every count zero.

Used by the fast tests in this directory (small counts) and by
bench/faults_run.py (the long run that prints the table in docs/reliability.md).
Every job a round creates is cancelled at its end, whatever happened.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import random
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from tests.faults import ownslurm
from tests.fixtures import processes
from wlmvk.core import names
from wlmvk.core.errors import WlmvkError as KubeError
from wlmvk.kube.bodies import LEASES, NODES, PODS
from wlmvk.kube.client import KubeClient

Body = dict[str, Any]
ALIVE = {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING"}
HELD = "#!/bin/sh\n#SBATCH --hold\n#SBATCH --cpus-per-task=1\n#SBATCH --mem=10M\ntrue\n"
RUNS = "#!/bin/sh\n#SBATCH --cpus-per-task=1\n#SBATCH --mem=10M\ntrue\n"


@dataclass(frozen=True)
class Site:
    """Where rounds run: the cluster (its node ``slurm-<cluster>-debug`` and its kubelets' Lease) and
    the pods' namespace. The fast tests use ``SITE``; the long bench on the shared real control plane
    takes names of its own, apart from the tests other sessions run there."""

    cluster: str = "faults"
    namespace: str = "default"

    @property
    def node(self) -> str:
        return f"slurm-{self.cluster}-debug"

    @property
    def lease(self) -> str:
        return f"slurm-{self.cluster}.kubelet"


SITE = Site()
CLUSTER = SITE.cluster
NODE = SITE.node


@dataclass
class Tally:
    """One line of the table."""

    fault: str
    rounds: int = 0
    pods: int = 0
    duplicates: int = 0
    lost: int = 0
    orphaned: int = 0
    spurious: int = 0
    round_problems: int = 0
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)
    # Seconds from the active kubelet's kill (or stop) until the standby held the Lease and the
    # node named its port, one per takeover.
    takeovers: list[float] = field(default_factory=list)

    def round_problem(self, text: str) -> None:
        """Something wrong with the round itself (not one pod's count): a column of its own."""
        self.round_problems += 1
        self.problems.append(text)

    @property
    def clean(self) -> bool:
        counts = (self.duplicates, self.lost, self.orphaned, self.spurious, self.round_problems)
        return not (any(counts) or self.problems)

    HEADER = (
        "fault", "rounds", "pods", "duplicates", "lost", "orphaned", "spurious failures", "round problems",
        "seconds",
    )  # fmt: skip

    def cells(self) -> tuple[str, ...]:
        return (
            self.fault, str(self.rounds), str(self.pods), str(self.duplicates), str(self.lost),
            str(self.orphaned), str(self.spurious), str(self.round_problems), f"{self.seconds:.0f}",
        )  # fmt: skip


def p95(values: list[float]) -> float:
    """The 95th percentile (nearest rank) of ``values``."""
    ordered = sorted(values)
    return ordered[max(0, -(-95 * len(ordered) // 100) - 1)]


def markdown(tallies: list[Tally]) -> str:
    lines = ["| " + " | ".join(Tally.HEADER) + " |", "|" + "---|" * len(Tally.HEADER)]
    lines += ["| " + " | ".join(t.cells()) + " |" for t in tallies]
    return "\n".join(lines)


@dataclass
class Recreations:
    """Pods a fault deletes and creates again under the same name during a round (a new uid each).

    ``churn_round`` hands it the round's pods (``begin``); ``recreate`` deletes the named pods, waits
    until each is gone (its kubelet cancelled its job), creates it again with the same script and
    counts the new uid in the round's audit. The first uids are kept (``replaced``): a job still
    alive under one is orphaned, whatever the new pod does."""

    kube: KubeClient | None = None
    site: Site = SITE
    scripts: dict[str, str] = field(default_factory=dict)
    uids: dict[str, str] = field(default_factory=dict)
    replaced: dict[str, str] = field(default_factory=dict)
    """A first uid -> its pod's name."""

    def begin(self, kube: KubeClient, site: Site, scripts: dict[str, str], uids: dict[str, str]) -> None:
        self.kube, self.site, self.scripts, self.uids, self.replaced = kube, site, scripts, uids, {}

    async def recreate(self, chosen: list[str], *, within: float = 60.0) -> list[str]:
        """Delete ``chosen`` and create each again once gone; the names it could not."""
        kube, site = self.kube, self.site
        assert kube is not None, "begin() first"
        old = {n: self.uids[n] for n in chosen if n in self.uids}
        await _gather_limited(
            [functools.partial(kube.delete, PODS, n, namespace=site.namespace) for n in old]
        )

        async def gone() -> bool:
            current = await _pods(kube, "", site)
            return not any(current.get(n, {}).get("metadata", {}).get("uid") == u for n, u in old.items())

        failed = [] if await wait_for(gone, within) else sorted(old)
        for name, uid in old.items():
            if name in failed:
                continue
            body = await kube.create(PODS, pod_body(name, self.scripts[name], site), namespace=site.namespace)
            self.replaced[uid] = name
            self.uids[name] = body["metadata"]["uid"]
        return failed


# --- Slurm's view ---------------------------------------------------------------------------


def _run(*argv: str) -> str:
    return subprocess.run(list(argv), capture_output=True, text=True, check=False).stdout


def slurm_jobs_by_key() -> dict[str, dict[str, str]]:
    """Pod uid -> {job id: state}, from squeue (all states) and then sacct for jobs squeue forgot."""
    found: dict[str, dict[str, str]] = {}
    for line in _run("squeue", "-h", "-t", "all", "-o", "%i|%k|%T").splitlines():
        job_id, comment, state = [*line.split("|"), "", ""][:3]
        if comment.startswith("wlmvk:"):
            found.setdefault(comment[len("wlmvk:") :], {})[job_id.strip()] = state.strip()
    for line in _run(
        "sacct", "-a", "-X", "-n", "-P", "-S", "now-3hours", "-o", "JobID,Comment,State"
    ).splitlines():
        job_id, comment, state = [*line.split("|"), "", ""][:3]
        if comment.startswith("wlmvk:"):
            jobs = found.setdefault(comment[len("wlmvk:") :], {})
            jobs.setdefault(job_id.strip(), state.split()[0] if state else "")
    return found


def scancel(ids: list[int] | list[str]) -> None:
    for start in range(0, len(ids), 200):
        subprocess.run(["scancel", *map(str, ids[start : start + 200])], capture_output=True, check=False)


def cancel_keys(uids: set[str]) -> None:
    """scancel every live job whose key is one of ``uids``."""
    jobs = slurm_jobs_by_key()
    scancel([j for uid in uids for j, state in jobs.get(uid, {}).items() if state in ALIVE])


# --- the kubelet as a process ---------------------------------------------------------------


@dataclass
class KubeletRunner:
    """Starts ``wlmvk kubelet`` as a subprocess; kill -9 and restart it."""

    kubeconfig: Path
    socket: str
    log: Path
    # The CA of the API server's kubelet client certificate: ``kubectl logs`` reaches this kubelet.
    client_ca: Path | None = None
    process: asyncio.subprocess.Process | None = None
    starts: int = 0
    # One port for every start, as a deployed kubelet's --port: what the API server dials for logs.
    port: int = 0
    agent_host: str = "agent-host"
    extra: list[str] = field(default_factory=list)
    site: Site = SITE

    def __post_init__(self) -> None:
        if not self.port:
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                self.port = int(probe.getsockname()[1])

    async def start(self) -> None:
        argv = [
            sys.executable, "-c", "import sys; from wlmvk.cli import main; sys.exit(main(sys.argv[1:]))",
            "kubelet", "--kubeconfig", str(self.kubeconfig), "--red-box-socket", self.socket,
            "--cluster-name", self.site.cluster, "--agent-host", self.agent_host, "--listen", "127.0.0.1",
            "--port", str(self.port), "--metrics-port", "-1", "--status-interval", "1",
            "--discovery-interval", "2", "--node-status-interval", "2", "--lease-renew-interval", "2",
            "--jobs-root", "pods", "--workers", "8", "--wlm-timeout", "10", "--log-level", "info",
        ]  # fmt: skip
        if self.client_ca is not None:
            argv += ["--client-ca", str(self.client_ca)]
        argv += self.extra
        with self.log.open("ab") as sink:
            self.process = await asyncio.create_subprocess_exec(
                *argv, stdout=sink, stderr=sink, env={**os.environ, "PYTHONUNBUFFERED": "1"}
            )
        self.starts += 1

    def kill(self) -> None:
        if self.process is not None and self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signal.SIGKILL)

    async def restart_after_kill(self) -> None:
        self.kill()
        if self.process is not None:
            await self.process.wait()
        await self.start()

    async def stop(self) -> None:
        if self.process is None or self.process.returncode is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(self.process.wait(), 20)
        except TimeoutError:
            self.kill()
            await self.process.wait()


# --- pods -----------------------------------------------------------------------------------


def pod_body(name: str, script: str, site: Site = SITE) -> Body:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": site.namespace,
            "annotations": {names.ANNOTATION_BATCH: script},
        },
        "spec": {
            "nodeName": site.node,
            "restartPolicy": "Never",
            "tolerations": [{"key": names.TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{"name": "main", "image": "busybox"}],
        },
    }


async def node_ready(kube: KubeClient, site: Site = SITE) -> bool:
    try:
        node = await kube.get(NODES, site.node)
    except KubeError:
        return False
    conditions = {c["type"]: c["status"] for c in node.get("status", {}).get("conditions", [])}
    return conditions.get("Ready") == "True"


async def wait_for(check: Callable[[], Awaitable[Any]], timeout: float, every: float = 0.5) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(KubeError, OSError):
            if await check():
                return True
        await asyncio.sleep(every)
    return False


async def _pods(kube: KubeClient, prefix: str, site: Site = SITE) -> dict[str, Body]:
    listing = await kube.list(PODS, namespace=site.namespace)
    return {p["metadata"]["name"]: p for p in listing["items"] if p["metadata"]["name"].startswith(prefix)}


async def _gather_limited(calls: list[Callable[[], Awaitable[Any]]], limit: int = 16) -> None:
    gate = asyncio.Semaphore(limit)

    async def one(call: Callable[[], Awaitable[Any]]) -> None:
        async with gate:
            with contextlib.suppress(KubeError):
                await call()

    await asyncio.gather(*(one(c) for c in calls))


Fault = Callable[[], Awaitable[None]]


def runs_for(seconds: float) -> str:
    """The script of a pod that runs: ``true``, or a job that is RUNNING for ``seconds``."""
    return RUNS if not seconds else RUNS.replace("\ntrue\n", f"\nsleep {seconds:g}\n")


async def _no_sbatch(uids: Iterable[str]) -> bool:
    return not processes.running("sbatch", naming=uids)


# A job in one of these states has started running.
STARTED = {"RUNNING", "COMPLETING", "COMPLETED", "FAILED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL"}


async def _any_started(kube: KubeClient, prefix: str, site: Site, uids: Iterable[str]) -> bool:
    """A job of the round has started: Slurm says so (``squeue``), or a pod is Running or ended.

    Both are looked at: under load the kubelet may see a short job only once it has ended, and
    ``squeue`` forgets an ended job after MinJobAge."""
    keys = {f"wlmvk:{uid}" for uid in uids}
    out = await asyncio.to_thread(_run, "squeue", "-h", "-t", "all", "-o", "%k|%T")
    if any(
        key in keys and state in STARTED
        for key, _, state in (line.partition("|") for line in out.splitlines())
    ):
        return True
    pods = await _pods(kube, prefix, site)
    return any(p.get("status", {}).get("phase") in ("Running", "Succeeded", "Failed") for p in pods.values())


async def churn_round(
    kube: KubeClient,
    *,
    pods: int,
    fault: Fault,
    tally: Tally,
    settle: float = 240.0,
    rng: random.Random,
    run_seconds: float = 0.0,
    site: Site = SITE,
    recreations: Recreations | None = None,
) -> None:
    """One round: create, strike, delete, settle, audit into ``tally``; cancels its jobs at the end.

    With ``recreations`` the fault may delete pods of the round and create them again under the
    same names (``Recreations.recreate``); the audit counts the new pods, and a job alive under a
    first uid as orphaned.

    With ``run_seconds`` the pods that run sleep that long, and the fault strikes only once a job
    of the round has started (``_any_started``): the fault lands on running jobs, not only on
    submissions.
    """
    started = time.monotonic()
    prefix = f"ch{uuid.uuid4().hex[:6]}-"
    running = max(1, pods // 4)
    runs = runs_for(run_seconds)
    scripts = {f"{prefix}{i:03d}": (runs if i < running else HELD) for i in range(pods)}
    uids: dict[str, str] = {}

    async def create(name: str) -> None:
        body = await kube.create(PODS, pod_body(name, scripts[name], site), namespace=site.namespace)
        uids[name] = body["metadata"]["uid"]

    doomed = [n for n, s in scripts.items() if s == HELD]
    rng.shuffle(doomed)
    if recreations is not None:
        recreations.begin(kube, site, scripts, uids)
    first_uids = recreations.replaced if recreations is not None else {}

    async def delete_some() -> None:
        await asyncio.sleep(rng.uniform(0.5, 3.0))
        await _gather_limited(
            [functools.partial(kube.delete, PODS, n, namespace=site.namespace) for n in doomed]
        )

    async def strike() -> None:
        started = functools.partial(_any_started, kube, prefix, site, uids.values())
        if run_seconds and not await wait_for(started, settle):
            tally.round_problem(
                f"{prefix}: no job of the round started in {settle:.0f} s; the fault struck anyway"
            )
        await fault()

    creating = asyncio.ensure_future(_gather_limited([functools.partial(create, n) for n in scripts]))
    striking = asyncio.ensure_future(strike())
    await creating
    await delete_some()
    await striking
    try:

        async def settled() -> bool:
            current = await _pods(kube, prefix, site)
            gone = all(n not in current for n in doomed)
            done = all(
                current.get(n, {}).get("status", {}).get("phase") in ("Succeeded", "Failed")
                for n in scripts
                if n not in doomed
            )
            return gone and done

        if not await wait_for(settled, settle, every=1.0):
            current = await _pods(kube, prefix, site)
            stuck = {
                n: (p.get("status", {}).get("phase"), "deleting" if n in doomed else "")
                for n, p in current.items()
                if n in doomed or p.get("status", {}).get("phase") not in ("Succeeded", "Failed")
            }
            tally.round_problem(f"{prefix}: pods did not settle in {settle:.0f} s: {stuck}")
        # A late duplicate would come from an sbatch still under way for one of the round's pods.
        if not await wait_for(lambda: _no_sbatch([*uids.values(), *first_uids]), settle, every=0.5):
            tally.round_problem(f"{prefix}: an sbatch for the round's pods still ran after {settle:.0f} s")
        jobs = slurm_jobs_by_key()
        _audit(await _pods(kube, prefix, site), scripts, set(doomed), uids, tally, jobs)
        _audit_replaced(first_uids, tally, jobs)
    finally:
        cancel_keys({*uids.values(), *first_uids})
        await _gather_limited(
            [functools.partial(kube.delete, PODS, n, namespace=site.namespace) for n in scripts]
        )
    tally.rounds += 1
    tally.pods += pods
    tally.seconds += time.monotonic() - started


def _audit(
    current: dict[str, Body],
    scripts: dict[str, str],
    doomed: set[str],
    uids: dict[str, str],
    tally: Tally,
    jobs: dict[str, dict[str, str]],
) -> None:
    """Count a settled round into ``tally``; ``jobs`` is Slurm's view (``slurm_jobs_by_key``)."""
    for name in scripts:
        uid = uids.get(name)
        if uid is None:
            tally.round_problem(f"{name}: never created")
            continue
        found = jobs.get(uid, {})
        if len(found) > 1:
            tally.duplicates += 1
            tally.problems.append(f"{name}: jobs {sorted(found)}")
        if name in doomed:
            if any(state in ALIVE for state in found.values()):
                tally.orphaned += 1
                tally.problems.append(f"{name}: deleted, job {found} alive")
            continue
        phase = current.get(name, {}).get("status", {}).get("phase")
        if not found or phase not in ("Succeeded", "Failed"):
            tally.lost += 1
            tally.problems.append(f"{name}: phase {phase}, jobs {found}")
        elif phase == "Failed":
            # Its script is ``true``: nothing but a fault mishandled can fail it, whatever Slurm says.
            tally.spurious += 1
            tally.problems.append(f"{name}: Failed, Slurm says {found}")


def _audit_replaced(first_uids: dict[str, str], tally: Tally, jobs: dict[str, dict[str, str]]) -> None:
    """Count the first pods of those created again (uid -> name) into ``tally``: each is a deleted pod,
    orphaned while a job under its uid is alive (the new pod is counted by ``_audit``)."""
    for uid, name in first_uids.items():
        if any(state in ALIVE for state in jobs.get(uid, {}).values()):
            tally.orphaned += 1
            tally.problems.append(f"{name}: created again, the first pod's job {jobs[uid]} alive")


# --- faults ---------------------------------------------------------------------------------


def kill_kubelet(kubelet: KubeletRunner, rng: random.Random, *, strikes: int = 2) -> Fault:
    """kill -9 the kubelet ``strikes`` times at random moments, restarting it each time."""

    async def strike() -> None:
        for _ in range(strikes):
            await asyncio.sleep(rng.uniform(0.2, 2.5))
            await kubelet.restart_after_kill()

    return strike


# Two kubelets for one cluster (--leader-elect): a takeover within 10 + 2 x 1 s of the last renewal.
LEADING = ["--leader-elect", "--leader-lease-duration", "10", "--leader-renew-interval", "2",
           "--leader-retry-interval", "1"]  # fmt: skip
TAKEOVER_LIMIT = 60.0


async def holder_pid(kube: KubeClient, site: Site = SITE) -> int:
    """The pid in the cluster Lease's holder identity (``<host>_<pid>_<random>``), 0 when none."""
    try:
        lease = await kube.get(LEASES, site.lease, namespace=names.NODE_LEASE_NAMESPACE)
    except KubeError:
        return 0
    parts = str(lease["spec"].get("holderIdentity") or "").split("_")
    return int(parts[-2]) if len(parts) >= 3 and parts[-2].isdigit() else 0


async def node_port(kube: KubeClient, site: Site = SITE) -> int:
    """The port the node names for its kubelet, 0 when there is no node (or no answer)."""
    try:
        node = await kube.get(NODES, site.node)
    except KubeError:
        return 0
    return int(node.get("status", {}).get("daemonEndpoints", {}).get("kubeletEndpoint", {}).get("Port", 0))


async def serving(kube: KubeClient, kubelet: KubeletRunner) -> bool:
    """``kubelet`` holds the cluster Lease and the node names its port, Ready."""
    pid = kubelet.process.pid if kubelet.process is not None else -1
    site = kubelet.site
    return (
        await holder_pid(kube, site) == pid
        and await node_port(kube, site) == kubelet.port
        and await node_ready(kube, site)
    )


def takeover(
    pair: tuple[KubeletRunner, KubeletRunner],
    kube: KubeClient,
    rng: random.Random,
    tally: Tally,
    *,
    freeze: bool,
    hold: Callable[[KubeletRunner], Awaitable[None]] | None = None,
    meanwhile: Callable[[KubeletRunner], Awaitable[None]] | None = None,
) -> Fault:
    """The agent host of the active kubelet fails: kill -9 (``freeze``: SIGSTOP, a partition that
    heals) of whichever of ``pair`` holds the cluster Lease. The standby must hold it and serve the
    node within ``TAKEOVER_LIMIT`` (timed into ``tally.takeovers``). A killed one is started again
    (a standby now); a stopped one gets SIGCONT after the takeover and must log its Lease lost and
    exit 1 by itself, and the node and the Lease must still name the new holder then (a node status
    or Lease write of the old one would put its port or identity back). Its writes are refused by the
    fence meanwhile (``write refused`` in its log); a reply to a write it sent before the stop is
    logged after SIGCONT, so its log alone cannot show which writes came late.

    ``hold`` runs just before the signal (given the active kubelet), ``meanwhile`` once the standby
    serves, before the struck one is resumed or started again (given the new holder)."""

    site = pair[0].site

    async def strike() -> None:
        await asyncio.sleep(rng.uniform(0.2, 2.5))
        pid = await holder_pid(kube, site)
        active = next((k for k in pair if k.process is not None and k.process.pid == pid), None)
        if active is None or active.process is None:
            tally.round_problem(f"no kubelet of the pair holds the cluster Lease (holder pid {pid})")
            return
        standby = pair[1] if active is pair[0] else pair[0]
        if hold is not None:
            await hold(active)
        struck = time.monotonic()
        active.process.send_signal(signal.SIGSTOP if freeze else signal.SIGKILL)
        if await wait_for(lambda: serving(kube, standby), TAKEOVER_LIMIT, every=0.25):
            tally.takeovers.append(time.monotonic() - struck)
        else:
            tally.round_problem(f"the standby did not take over within {TAKEOVER_LIMIT:.0f} s")
        if meanwhile is not None:
            await meanwhile(standby)
        if freeze:
            resumed_at = active.log.stat().st_size
            active.process.send_signal(signal.SIGCONT)
            try:
                code = await asyncio.wait_for(active.process.wait(), 60)
            except TimeoutError:
                code = None
                tally.round_problem("the fenced kubelet did not stop within 60 s of SIGCONT")
                active.kill()
                await active.process.wait()
            if code not in (None, 1):
                tally.round_problem(f"the fenced kubelet exited {code}, not 1 (Lease lost)")
            after = active.log.read_bytes()[resumed_at:].decode(errors="replace")
            if "leadership lost" not in after:
                tally.round_problem("the resumed kubelet did not log its Lease lost")
            new_pid = standby.process.pid if standby.process is not None else -1
            if await node_port(kube, site) != standby.port or await holder_pid(kube, site) != new_pid:
                tally.round_problem("after SIGCONT the node or the Lease no longer name the new holder")
        await active.restart_after_kill()

    return strike


def slurmctld_restart(instance: ownslurm.Instance, rng: random.Random, tally: Tally) -> Fault:
    """The Slurm of the suite's own (``instance``): its slurmctld stopped with SIGTERM by its pid
    file, left down 2-5 s, started again and waited for (``ownslurm.restart_slurmctld``)."""

    async def strike() -> None:
        await asyncio.sleep(rng.uniform(0.5, 2.0))
        problem = await ownslurm.restart_slurmctld(instance, down_for=rng.uniform(2.0, 5.0))
        if problem:
            tally.round_problem(problem)

    return strike


def no_fault() -> Fault:
    async def nothing() -> None:
        await asyncio.sleep(0)

    return nothing


async def node_not_ready(kube: KubeClient, site: Site = SITE) -> bool:
    return not await node_ready(kube, site)


class Restartable(Protocol):
    """What the outage faults need of a process: kill -9, and start again (blocking, until it serves)."""

    def kill(self) -> None: ...

    def start(self) -> object: ...


def redbox_outages(
    box: Restartable,
    forward: Restartable,
    sshd: Restartable,
    kube: KubeClient,
    rng: random.Random,
    tally: Tally,
    site: Site = SITE,
) -> Fault:
    """red-box killed -9 and restarted; then the ssh client of the forward to it (``ssh -L``) killed
    -9 and started again; then sshd on the login side killed -9 with its sessions, and sshd and the
    forward started again. Each time the node must go NotReady and come back Ready."""

    async def outage(label: str, down: Callable[[], None], *ups: Callable[[], object]) -> None:
        await asyncio.to_thread(down)
        if not await wait_for(lambda: node_not_ready(kube, site), 30, every=0.25):
            tally.round_problem(f"{label}: the node never went NotReady")
        for up in ups:
            await asyncio.to_thread(up)
        if not await wait_for(lambda: node_ready(kube, site), 60, every=0.25):
            tally.round_problem(f"{label}: the node did not come back Ready")

    def sshd_down() -> None:
        sshd.kill()
        # Its sessions are gone, so the client ends by itself; reap it before a new one starts.
        forward.kill()

    async def strike() -> None:
        await asyncio.sleep(rng.uniform(0.3, 1.5))
        await outage("red-box kill -9", box.kill, box.start)
        await asyncio.sleep(rng.uniform(0.3, 1.5))
        await outage("ssh client kill -9", forward.kill, forward.start)
        await asyncio.sleep(rng.uniform(0.3, 1.5))
        await outage("sshd kill -9", sshd_down, sshd.start, forward.start)

    return strike


def watch_drops(store: Any, pods_gvr: Any, rng: random.Random, *, drops: int = 3) -> Fault:
    """End every watch of the in-memory API server and forget the pods' history, so the kubelet's
    resume answers 410 Gone and it must relist; pods keep being created meanwhile.

    Reaches into the store's private bucket (test-only): there is no public knob for compaction.
    """

    async def strike() -> None:
        for index in range(drops):
            await asyncio.sleep(rng.uniform(0.2, 1.5))
            bucket = store._buckets[pods_gvr]
            store.close_watches()
            # An event the kubelet cannot have seen (another node's pod), then no history at all:
            # whatever resourceVersion it resumes from is now too old.
            filler = {
                "metadata": {"name": f"filler-{uuid.uuid4().hex[:6]}-{index}"},
                "spec": {"nodeName": "elsewhere", "containers": [{"name": "c", "image": "x"}]},
            }
            store.create(pods_gvr, filler, namespace="kube-system")
            while bucket.history:
                bucket.compacted = bucket.history.popleft().resource_version

    return strike
