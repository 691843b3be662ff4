"""Benchmark: many tenants through one kubelet, against one tenant, in the same run.

Two arms, each a fresh system (the in-memory API server, ``wlmvk kubelet`` and red-boxes, each a
process; red-box as the benchmarks' own Slurm users), each ``--pods`` held pods (``#SBATCH
--hold``: PENDING, using nothing) on one virtual node:

- ``single``: no SlurmTenant; every pod in one namespace, to the one red-box (as ``wlmvk-bench``).
- ``tenants``: ``--tenants`` SlurmTenants, one namespace each, the pods spread evenly over them;
  each tenant its own Unix user (``wlmvk-tNN``, made for this run with ``useradd --system`` and
  its own account in the local Slurm through ``sacctmgr``; both removed at the end), its own
  red-box as that user, named to the kubelet with ``--red-box USER=SOCKET``; the default red-box
  (as ``wlmvk-bench``) holds no pod.

Per arm and round: the time from creating the first pod to every pod annotated with its job id
(pods to job ids: the goal is tenants >= 0.9x single's rate), with the CPU each part of the system
spent meanwhile (``cpu_by_part``: whether the burst was bound by the machine's cores, and by whom).
``--rounds`` rounds, each a fresh system per arm, the arms' order rotated from round to round; an
arm's figures are the medians of its rounds (a burst lasts about 2 s: one alone swings with
whatever else the machine does). In the last round, at steady state (every pod's status
written), slurmctld's and slurmdbd's RPCs of this run's users over ``--window`` s (``sdiag`` by
user, ``sacctmgr show stats`` by uid: nobody else's calls count), per 5 s kubelet interval (the
goal is tenants <= single + 1 on slurmctld); and the resident memory of the tenants' red-boxes
summed (VmRSS of each red-box process and its slurmrestd, read at the end of the window).

    .venv/bin/python bench/tenants_scale.py --tenants 5 --pods 100 --window 30 --rounds 1
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import pwd
import re
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import cpu_meter
from kubelet_stack import free_port, wait_for_node, wait_until
from kubelet_submit import pod
from slurm_side import (
    USER,
    WLMVK,
    BenchRedBox,
    Processes,
    bench_user,
    cancel_bench_jobs,
    main_with_json,
    process_cpu,
    pythonpath,
    slurmctld_counters,
)
from status_steady import rss_mb

from wlmvk.core import names
from wlmvk.kube.bodies import NAMESPACES, PODS
from wlmvk.kube.client import KubeClient
from wlmvk.kube.tenants import SLURMTENANTS
from wlmvk.kube.watching import Listed, WatchOptions, watch

ROOT = Path(__file__).resolve().parents[1]
TICK = 5.0  # the kubelet's default --status-interval
QOS = "normal"
DBD_ROW = re.compile(r"^\s+\S+\s+\(\s*(\d+)\)\s+count:(\d+)", re.M)


def tenant_user(index: int) -> str:
    return f"wlmvk-t{index:02d}"


def sacctmgr(*argv: str) -> None:
    done = subprocess.run(["sacctmgr", "-i", *argv], capture_output=True, text=True, check=False)
    if done.returncode != 0 and "Nothing new added" not in done.stdout + done.stderr:
        raise RuntimeError(f"sacctmgr {' '.join(argv)}: {done.stdout}{done.stderr}")


def cluster_name() -> str:
    out = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, check=True).stdout
    return next(line.split("=", 1)[1].strip() for line in out.splitlines() if line.startswith("ClusterName"))


@contextlib.contextmanager
def tenant_users(count: int) -> Iterator[list[str]]:
    """``count`` Unix users, each with an account of its own in Slurm; all removed after."""
    users = [tenant_user(i) for i in range(1, count + 1)]
    cluster = cluster_name()
    made: list[str] = []
    try:
        for user in users:
            done = subprocess.run(["id", "-u", user], capture_output=True, check=False)
            if done.returncode != 0:
                subprocess.run(
                    ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", user],
                    check=True,
                )
                made.append(user)
            sacctmgr("add", "account", f"acct-{user}", f"cluster={cluster}")
            sacctmgr("add", "user", user, f"account=acct-{user}", f"cluster={cluster}", f"qos={QOS}")
        yield users
    finally:
        cancel_user_jobs(users)
        for user in users:
            subprocess.run(["sacctmgr", "-i", "delete", "user", user], capture_output=True, check=False)
            subprocess.run(
                ["sacctmgr", "-i", "delete", "account", f"acct-{user}"], capture_output=True, check=False
            )
        for user in made:
            subprocess.run(["userdel", user], capture_output=True, check=False)


def cancel_user_jobs(users: list[str]) -> None:
    for user in users:
        subprocess.run(["scancel", "-u", user], capture_output=True, check=False)


def slurmdbd_by_uid() -> dict[int, int]:
    """slurmdbd's RPC counts by uid (it names a user it does not know ``nobody``: uids are exact)."""
    done = subprocess.run(["sacctmgr", "show", "stats"], capture_output=True, text=True, check=False)
    rows = done.stdout.partition("statistics by user")[2]
    return {int(m.group(1)): int(m.group(2)) for m in DBD_ROW.finditer(rows)}


def tree_rss_mb(pid: int) -> float:
    """The resident memory of a process and its descendants (red-box and its slurmrestd), in MB."""
    total, pending = 0.0, [pid]
    while pending:
        current = pending.pop()
        total += rss_mb(current)
        with contextlib.suppress(FileNotFoundError):
            pending += [int(c) for c in Path(f"/proc/{current}/task/{current}/children").read_text().split()]
    return total


def tenant(index: int, user: str) -> dict[str, Any]:
    return {
        "apiVersion": "wlm.sylabs.io/v1alpha1",
        "kind": "SlurmTenant",
        "metadata": {"name": f"team-{index:02d}"},
        "spec": {
            "namespaces": [f"ns-{user}"],
            "user": user,
            "account": f"acct-{user}",
            "qos": {"default": QOS},
        },
    }


@contextlib.asynccontextmanager
async def system(users: list[str], args: argparse.Namespace) -> AsyncIterator[dict[str, Any]]:
    """The default red-box (bench user), one red-box per tenant user, the API server (tenants
    written when there are users), then the kubelet; all stopped after, every job cancelled."""
    bench_user()
    default = BenchRedBox().start()
    boxes: dict[str, BenchRedBox] = {}
    procs = Processes(default.base)
    try:
        started = await asyncio.gather(*(asyncio.to_thread(BenchRedBox(user=user).start) for user in users))
        boxes.update(zip(users, started, strict=True))
        kubeconfig = default.base / "kubeconfig"
        apiserver = procs.spawn([sys.executable, "-c", WLMVK, "dev", "apiserver", "--port", str(free_port()),
                     "--no-controllers", "--kubeconfig", str(kubeconfig), "--log-level", "warning"],
                    "apiserver.log")  # fmt: skip
        await wait_until(lambda: asyncio.sleep(0, kubeconfig.exists()), timeout=30, every=0.1)
        await asyncio.sleep(0.5)
        kube = await KubeClient.connect(str(kubeconfig))
        namespaces = [f"ns-{u}" for u in users] or ["ns-single"]  # kubelet_submit.pod: namespace = prefix
        for namespace in namespaces:
            await kube.create(
                NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
            )
        if users:
            crd = ROOT / "manifests" / "crds" / "slurmtenants.yaml"
            applying = ["kubectl", "--kubeconfig", str(kubeconfig), "apply", "-f", str(crd)]
            await asyncio.to_thread(subprocess.run, applying, check=True, capture_output=True)
            for index, user in enumerate(users, 1):
                await kube.create(SLURMTENANTS, tenant(index, user))
        cluster = f"tn{uuid.uuid4().hex[:5]}"
        env = {**os.environ, "PYTHONPATH": pythonpath(default.source)}
        argv = [sys.executable, "-c", WLMVK, "kubelet", "--kubeconfig", str(kubeconfig),
                "--red-box-socket", default.socket, "--cluster-name", cluster, "--listen", "127.0.0.1",
                "--port", str(free_port()), "--metrics-port", "-1", "--log-level", "warning",
                "--max-pods", str(max(1000, args.pods))]  # fmt: skip
        for user, box in boxes.items():
            argv += ["--red-box", f"{user}={box.socket}"]
        kubelet = procs.spawn(argv, "kubelet.log", env=env)
        yield {"kube": kube, "cluster": cluster, "kubelet": kubelet, "default": default, "boxes": boxes,
               "namespaces": namespaces, "apiserver": apiserver}  # fmt: skip
        await kube.close()
    finally:
        procs.close()
        for box in boxes.values():
            box.stop()
        default.stop()
        cancel_bench_jobs()
        cancel_user_jobs(users)  # the next round's red-boxes start with none of this one's jobs


def cpu_by_part(s: dict[str, Any]) -> dict[str, float]:
    """CPU seconds so far of each part: the kubelet, the API server, the red-boxes (the default and
    every tenant's), the Slurm commands they ran (sbatch, squeue, sacct: their reaped children),
    their slurmrestds, Slurm's daemons, and this script (it creates the pods and watches them)."""
    readings = [cpu_meter.reading(box.pid()) for box in [s["default"], *s["boxes"].values()]]
    return {
        "kubelet": process_cpu(s["kubelet"].pid),
        "API server": process_cpu(s["apiserver"].pid),
        "red-boxes": sum(r["server"] for r in readings),
        "their Slurm commands": sum(r["sbatch"] for r in readings),
        "slurmrestd": sum(r["slurmrestd"] for r in readings),
        **{part: readings[0][part] for part in cpu_meter.DAEMONS},
        "this script": readings[0]["client"],
    }


async def checked(kube: KubeClient, count: int) -> bool:
    """Whether the kubelet has written its entry in each of ``count`` SlurmTenants' status."""
    listed = await kube.list(SLURMTENANTS)
    done = [t for t in listed.get("items") or [] if (t.get("status") or {}).get("clusters")]
    return len(done) >= count


async def arm(label: str, users: list[str], args: argparse.Namespace, *, window: bool) -> dict[str, Any]:
    """One fresh system's burst; with ``window``, its steady state's RPCs and memory too."""
    async with system(users, args) as s:
        kube: KubeClient = s["kube"]
        node = names.node_name(s["cluster"], "debug")
        await wait_for_node(kube, node, timeout=120)
        if users:
            # A site's tenants exist before their pods: the kubelet's first check of each (an
            # Associations call per tenant user, two sacctmgr) is done before the pods come.
            await wait_until(lambda: checked(kube, len(users)), timeout=600, every=1.0)
        await asyncio.sleep(args.settle + args.idle)
        namespaces: list[str] = s["namespaces"]
        job_of: dict[tuple[str, str], int] = {}
        phase_of: dict[tuple[str, str], str] = {}

        async def watcher() -> None:
            async for event in watch(kube, PODS, WatchOptions()):
                items = event.items if isinstance(event, Listed) else [event.object]
                for item in items:
                    key = (item["metadata"]["namespace"], item["metadata"]["name"])
                    job = (item["metadata"].get("annotations") or {}).get(names.ANNOTATION_JOB_ID)
                    if job:
                        job_of[key] = int(job)
                    written = "containerStatuses" in (item.get("status") or {})
                    phase_of[key] = (item.get("status") or {}).get("phase", "") if written else ""

        watching = asyncio.create_task(watcher())
        gate = asyncio.Semaphore(32)

        async def create(index: int) -> None:
            namespace = namespaces[index % len(namespaces)]
            async with gate:
                await kube.create(PODS, pod(namespace, index, node), namespace=namespace)

        cpu0 = cpu_by_part(s)
        start = time.perf_counter()
        await asyncio.gather(*(create(i) for i in range(args.pods)))

        async def all_jobs() -> bool:
            return len(job_of) >= args.pods

        await wait_until(all_jobs, timeout=1800, every=0.2)
        to_jobs = time.perf_counter() - start
        burst_cpu = {part: spent - cpu0[part] for part, spent in cpu_by_part(s).items()}
        print(
            f"[{label}] {args.pods} pods in {len(namespaces)} namespaces with job ids after {to_jobs:.1f} s"
        )
        burst = {
            "tenants": len(users),
            "namespaces": len(namespaces),
            "pods": args.pods,
            "to_jobs_s": to_jobs,
            "pods_per_s": args.pods / to_jobs,
            "burst_cpu_s": burst_cpu,
        }
        if not window:
            watching.cancel()
            print(f"[{label}] " + json.dumps(burst))
            return burst

        async def steady() -> bool:
            return len(phase_of) >= args.pods and all(p == "Pending" for p in phase_of.values())

        await wait_until(steady, timeout=1800, every=0.5)
        await asyncio.sleep(args.settle)
        ours = {USER, *users}
        ctld0, dbd0 = slurmctld_counters(), slurmdbd_by_uid()
        kubelet_cpu0 = process_cpu(s["kubelet"].pid)
        t0 = time.perf_counter()
        await asyncio.sleep(args.window)
        ctld, dbd1 = slurmctld_counters().minus(ctld0), slurmdbd_by_uid()
        elapsed = time.perf_counter() - t0
        kubelet_cpu = process_cpu(s["kubelet"].pid) - kubelet_cpu0
        boxes: dict[str, BenchRedBox] = s["boxes"]
        rss = {user: tree_rss_mb(box.pid()) for user, box in boxes.items()}
        own = sorted(rss_mb(box.pid()) for box in boxes.values())  # red-box alone, without children
        default_rss = tree_rss_mb(s["default"].pid())
        watching.cancel()
        ticks = elapsed / TICK
        ctld_ours = {u: n for u, n in ctld.by_user.items() if u in ours}
        uids = {pwd.getpwnam(u).pw_uid: u for u in ours}
        dbd_ours = {uids[i]: n - dbd0.get(i, 0) for i, n in dbd1.items() if i in uids and n > dbd0.get(i, 0)}
        result = {
            **burst,
            "window_s": elapsed,
            "slurmctld_per_tick": sum(ctld_ours.values()) / ticks,
            "slurmdbd_per_tick": sum(dbd_ours.values()) / ticks,
            "slurmctld_by_user": ctld_ours,
            "slurmctld_by_type": ctld.by_type,
            "slurmdbd_by_user": dbd_ours,
            "restarted": ctld.restarted,
            "kubelet_cpu_s_per_min": kubelet_cpu * 60 / elapsed,
            "tenant_red_boxes_rss_mb": sum(rss.values()),
            "tenant_red_box_rss_mb_max": max(rss.values(), default=0.0),
            "tenant_red_box_rss_mb_median": sorted(rss.values())[len(rss) // 2] if rss else 0.0,
            "tenant_red_box_own_rss_mb_median": own[len(own) // 2] if own else 0.0,
            "default_red_box_rss_mb": default_rss,
        }
        print(f"[{label}] " + json.dumps(result))
        return result


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    print(f"load at start: {' '.join(f'{x:.1f}' for x in os.getloadavg())}; {os.cpu_count()} cores")
    rounds: list[dict[str, Any]] = []
    with tenant_users(args.tenants) as users:
        for index in range(args.rounds):
            order = ["single", "tenants"] if index % 2 == 0 else ["tenants", "single"]
            ran: dict[str, Any] = {"order": order}
            for label in order:
                last = index == args.rounds - 1
                ran[label] = await arm(
                    f"{label} {index + 1}", users if label == "tenants" else [], args, window=last
                )
            rounds.append(ran)
    single, tenants = medians(rounds, "single"), medians(rounds, "tenants")
    figures = {
        "pods": args.pods,
        "tenants": args.tenants,
        "window_s": args.window,
        "arms": {"single": single, "tenants": tenants},
        "rounds": [
            {label: {k: v for k, v in r[label].items() if k in ROUND_KEYS} for label in ("single", "tenants")}
            | {"order": r["order"]}
            for r in rounds
        ],
        "rate_ratio": tenants["pods_per_s"] / single["pods_per_s"],
        "slurmctld_per_tick_added": tenants["slurmctld_per_tick"] - single["slurmctld_per_tick"],
        "status_check": "look",  # the SlurmTenant status: one ObserveAssociations per check
    }
    print(json.dumps({k: v for k, v in figures.items() if k != "arms"}))
    return figures


ROUND_KEYS = ("to_jobs_s", "pods_per_s", "burst_cpu_s")


def medians(rounds: list[dict[str, Any]], label: str) -> dict[str, Any]:
    """An arm's figures: the last round's (its window's RPCs and memory), with the burst's time and
    CPU by part the medians of the rounds."""
    arms = [r[label] for r in rounds]
    out = dict(arms[-1])
    out["to_jobs_s"] = statistics.median(a["to_jobs_s"] for a in arms)
    out["pods_per_s"] = out["pods"] / out["to_jobs_s"]
    out["burst_cpu_s"] = {
        part: statistics.median(a["burst_cpu_s"][part] for a in arms) for part in arms[-1]["burst_cpu_s"]
    }
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tenants", type=int, default=50)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--window", type=float, default=60.0, help="seconds of steady state counted")
    parser.add_argument("--rounds", type=int, default=3, help="bursts per arm, each a fresh system")
    parser.add_argument(
        "--idle",
        type=float,
        default=0.0,
        help="more seconds before the pods (past 120, red-box's key index read at start is too old to"
        " answer a submission: each red-box reads it again)",
    )
    parser.add_argument(
        "--settle", type=float, default=15.0, help="seconds after steady state, before the window"
    )
    main_with_json(parser, measure)
