"""Benchmark: one kubelet serving many virtual nodes, soaked on the real control plane.

The local Slurm (dev/scripts/slurm-local, reconfigured in place) gets ``--partitions`` partitions
over its one node (``WLMVK_SLURM_EXTRA_PARTITIONS``); one red-box stands in front of it and one
``wlmvk kubelet`` with its default timings (node Lease renewed every 10 s and lasting 40 s, node
status heartbeat every 60 s, discovery every 30 s, pod status tick every ``--status-interval``)
serves one virtual node per partition on kube-apiserver and etcd of dev/scripts/kube-local.
Once every node is Ready, for ``--minutes``:

- the kubelet's resident memory (VmRSS) and CPU, sampled every second (one line each) and its
  VmHWM at the end;
- Lease renewals as kube-apiserver holds them: every node's Lease watched; each new renewTime is
  a renewal, its gap from the one before is what a reader of the Lease sees (late: more than the
  renew interval plus 1 s; expired: more than the Lease's duration);
- Ready flaps: every node's Ready condition read every 10 s (the controller-manager's node
  lifecycle marks a node whose Lease expired Unknown): any node once not Ready is counted;
- node status writes per minute and Lease renewals per second (the kubelet's own counters, by
  reason) and its Lease renewal lateness (from due time to answer, its histogram);
- the kubelet's CPU per minute, per pod status tick (its whole CPU over the ticks made) and per
  node write (status writes and Lease renewals together); kube-apiserver's and etcd's CPU;
- the load average at the start and every minute.

With ``--clusters N`` (N > 1) the one kubelet serves N clusters (``--cluster NAME=SOCKET``):
slurm-local gets ``--partitions``/N partitions, N red-boxes stand in front of it, each a cluster
(``<cluster>0`` .. ``<cluster>N-1``) with those partitions as its nodes, so ``--partitions`` nodes
in all; the held pods are spread over the clusters (the first ``--pods``/N nodes of each), and
the kubelet's counters (labelled by cluster) are added up over them.

Prints the samples and a summary; ``--json`` writes the figures. bench/run-all runs it as
``kubelet-scale-real`` and, with 10 clusters, ``kubelet-scale-clusters`` (docs/performance.md,
"One kubelet, many virtual nodes").

    .venv/bin/python bench/kubelet_scale.py --partitions 1000 --minutes 30
    .venv/bin/python bench/kubelet_scale.py --clusters 10 --partitions 1000 --minutes 30
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import cpu_meter
from kubelet_stack import JOBS, ROOT, RealPlane, forget_cluster, free_port, scancel_name_prefix
from quantiles import quantile

from wlmvk.core import names
from wlmvk.core.errors import NotFound, WlmvkError
from wlmvk.kube.bodies import LEASES, NODES, PODS
from wlmvk.kube.client import KubeClient

BASE_PARTITIONS = 5
"""Partitions slurm-local has of its own (debug, cpu, long, gpu, unlimited)."""
RENEW_INTERVAL = 10.0
LEASE_DURATION = 40.0
LATE_SLACK = 1.0


def slurm_partitions(count: int) -> list[str]:
    """Reconfigure slurm-local to ``count`` partitions (its own and extra ones); their names."""
    env = {**os.environ, "WLMVK_SLURM_EXTRA_PARTITIONS": str(max(count - BASE_PARTITIONS, 0))}
    subprocess.run(
        [str(ROOT / "dev" / "scripts" / "slurm-local"), "up"], check=True, env=env, stdout=subprocess.DEVNULL
    )
    out = subprocess.run(["sinfo", "-h", "-o", "%R"], capture_output=True, text=True, check=True).stdout
    return sorted(set(out.split()))


def rss_mb(pid: int, key: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1]) / 1024
    return 0.0


def micro(value: str) -> float:
    """A Lease's MicroTime as seconds since the epoch."""
    return datetime.datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.UTC).timestamp()


def counters(text: str) -> dict[str, float]:
    """Prometheus text lines (name{labels} value) as a mapping; comments left out."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            out[key] = float(value)
    return out


def folded(values: dict[str, float]) -> dict[str, float]:
    """Counters of a kubelet serving several clusters added up over its clusters (label dropped)."""
    out: dict[str, float] = {}
    for key, value in values.items():
        bare = re.sub(r'cluster="[^"]*",?', "", key).replace(",}", "}").replace("{}", "")
        out[bare] = out.get(bare, 0.0) + value
    return out


@dataclass
class Observed:
    renew_times: dict[str, float] = field(default_factory=dict)
    gaps: list[float] = field(default_factory=list)
    not_ready: list[tuple[float, str, str]] = field(default_factory=list)
    rss: list[float] = field(default_factory=list)
    soaking: bool = False


async def watch_leases(kube: KubeClient, wanted: set[str], seen: Observed) -> None:
    """Every renewal of the nodes' Leases, from a watch (relisted when it expires or fails)."""

    def note(item: dict[str, Any]) -> None:
        name = item["metadata"]["name"]
        renewed = (item.get("spec") or {}).get("renewTime")
        if name not in wanted or not renewed:
            return
        at = micro(renewed)
        before = seen.renew_times.get(name)
        if before is not None and at > before and seen.soaking:
            seen.gaps.append(at - before)
        seen.renew_times[name] = max(at, before or at)

    version = ""
    while True:
        try:
            if not version:
                listing = await kube.list(LEASES, namespace=names.NODE_LEASE_NAMESPACE)
                version = str(listing["metadata"]["resourceVersion"])
                for item in listing.get("items") or []:
                    note(item)
            query: dict[str, str | int | bool | None] = {
                "watch": True,
                "allowWatchBookmarks": True,
                "resourceVersion": version,
                "timeoutSeconds": 300,
            }
            async for event in kube.stream_lines(
                LEASES.path(namespace=names.NODE_LEASE_NAMESPACE), query=query, read_timeout=330
            ):
                if event.get("type") == "ERROR":
                    version = ""
                    break
                item = event.get("object") or {}
                version = str(item.get("metadata", {}).get("resourceVersion") or version)
                if event.get("type") in ("ADDED", "MODIFIED"):
                    note(item)
        except WlmvkError as exc:
            print(f"lease watch: {exc}; relisting", flush=True)
            version = ""
            await asyncio.sleep(1)


async def ready_nodes(kube: KubeClient, clusters: list[str]) -> dict[str, str]:
    out = {}
    for cluster in clusters:
        listing = await kube.list(NODES, label_selector=f"{names.LABEL_CLUSTER}={cluster}")
        for item in listing.get("items") or []:
            ready = [c for c in item.get("status", {}).get("conditions", []) if c.get("type") == "Ready"]
            out[item["metadata"]["name"]] = ready[0]["status"] if ready else "None"
    return out


async def watch_ready(
    kube: KubeClient, clusters: list[str], seen: Observed, stop: asyncio.Event, t0: float
) -> None:
    while not stop.is_set():
        for name, status in (await ready_nodes(kube, clusters)).items():
            if status != "True":
                seen.not_ready.append((time.monotonic() - t0, name, status))
        await asyncio.sleep(10)


async def scrape(port: int) -> dict[str, float]:
    async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{port}/metrics") as answer:
        return counters(await answer.text())


def kubelet_figures(first: dict[str, float], last: dict[str, float], minutes: float) -> dict[str, Any]:
    def delta(key: str) -> float:
        return last.get(key, 0.0) - first.get(key, 0.0)

    writes = {
        reason: delta(f'wlmvk_kubelet_node_status_writes_total{{reason="{reason}"}}')
        for reason in ("registered", "changed", "heartbeat")
    }
    late = "wlmvk_kubelet_node_lease_renewal_lateness_seconds"
    buckets = {
        key.split('le="')[1].rstrip('"}'): delta(key) for key in last if key.startswith(f"{late}_bucket")
    }
    return {
        "status_writes": writes,
        "status_writes_per_min": sum(writes.values()) / minutes,
        "lease_renewals": delta("wlmvk_kubelet_node_lease_renewals_total"),
        "lease_renewals_per_s": delta("wlmvk_kubelet_node_lease_renewals_total") / (minutes * 60),
        "lateness_buckets": buckets,
        "lateness_mean_s": delta(f"{late}_sum") / max(delta(f"{late}_count"), 1.0),
        "status_ticks": delta("wlmvk_kubelet_status_ticks_total"),
    }


def bucket_bound(buckets: dict[str, float], share: float) -> str:
    """The smallest histogram bound holding ``share`` of the observations."""
    total = buckets.get("+Inf", 0.0)
    for bound, count in sorted(
        ((b, c) for b, c in buckets.items() if b != "+Inf"), key=lambda item: float(item[0])
    ):
        if total and count >= share * total:
            return bound
    return "+Inf"


HELD = "#!/bin/sh\n#SBATCH --hold\ntrue\n"
NAMESPACE = "default"
PREFIX = "kscale"


def held_pod(prefix: str, index: int, node: str) -> dict[str, Any]:
    """A pod bound to ``node`` whose job stays held (PENDING, using nothing) in Slurm."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{prefix}-{index}", "annotations": {names.ANNOTATION_BATCH: HELD}},
        "spec": {"nodeName": node, "containers": [{"name": "job", "image": "none"}]},
    }


async def forget_pods(kube: KubeClient) -> None:
    """Remove the held pods an interrupted run left behind (at once: their node's kubelet is gone)."""
    listing = await kube.list(PODS, namespace=NAMESPACE)
    for item in listing.get("items") or []:
        if item["metadata"]["name"].startswith(f"{PREFIX}-"):
            with contextlib.suppress(NotFound):
                await kube.delete(PODS, item["metadata"]["name"], namespace=NAMESPACE, grace_period_seconds=0)


@dataclass
class Started:
    """The processes of one run and what the measurement needs of them."""

    plane: RealPlane
    redboxes: list[subprocess.Popen[bytes]]
    kubelet: subprocess.Popen[bytes]
    metrics_port: int
    base: Path
    started_at: float


def cluster_names(args: argparse.Namespace) -> list[str]:
    """The kubelet's clusters: ``--cluster`` alone, or ``--cluster`` numbered from 0 (``--clusters``)."""
    return [args.cluster] if args.clusters == 1 else [f"{args.cluster}{i}" for i in range(args.clusters)]


def start(args: argparse.Namespace) -> Started:
    plane = RealPlane.up()
    base = Path(tempfile.mkdtemp(prefix="kscale-", dir="/tmp"))
    redboxes, sockets = [], []
    for index in range(args.clusters):
        # One red-box: its files as they always were; several: each in its own numbered ones.
        own = "" if args.clusters == 1 else str(index)
        work = Path(tempfile.mkdtemp(prefix="kscale-", dir=JOBS))
        sock = base / f"rb{own}.sock"
        with (base / f"red-box{own}.log").open("wb") as log:
            redboxes.append(subprocess.Popen(
                [sys.executable, "-m", "wlmvk.redbox", "--socket", str(sock), "--work-dir", str(work),
                 "--state-dir", str(base / f"state{own}"), "--log-level", "warning"],
                stdout=log, stderr=log, cwd=ROOT, start_new_session=True,
            ))  # fmt: skip
        sockets.append(sock)
    deadline = time.monotonic() + 30
    while not all(sock.exists() for sock in sockets) and time.monotonic() < deadline:
        time.sleep(0.1)
    if args.clusters == 1:
        served = ["--red-box-socket", str(sockets[0]), "--cluster-name", args.cluster]
    else:
        served = [f"--cluster={name}={sock}" for name, sock in zip(cluster_names(args), sockets, strict=True)]
    metrics_port = free_port()
    started_at = time.monotonic()
    with (base / "kubelet.log").open("wb") as log:
        kubelet = subprocess.Popen(
            [sys.executable, "-c", "import sys; from wlmvk.cli import main; sys.exit(main(sys.argv[1:]))",
             "kubelet", "--kubeconfig", str(plane.kubeconfig), *served,
             "--listen", "127.0.0.1", "--port", str(free_port()),
             "--metrics-port", str(metrics_port), "--status-interval", str(args.status_interval),
             "--log-level", "warning"],
            stdout=log, stderr=log, cwd=ROOT, start_new_session=True,
            env={**os.environ, "PYTHONPATH": args.source} if args.source else None,
        )  # fmt: skip
    return Started(plane, redboxes, kubelet, metrics_port, base, started_at)


def stop(run: Started) -> None:
    for proc in (run.kubelet, *run.redboxes):
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--partitions", type=int, default=1000, help="virtual nodes (partitions x clusters)")
    p.add_argument(
        "--clusters", type=int, default=1, help="clusters the kubelet serves, one red-box each (--cluster)"
    )
    p.add_argument("--minutes", type=float, default=30.0, help="soak length once every node is Ready")
    p.add_argument("--pods", type=int, default=100, help="held pods, one on each of the first nodes")
    p.add_argument("--status-interval", type=float, default=5.0, help="the kubelet's pod status tick")
    p.add_argument("--cluster", default="scale", help="the kubelet's --cluster-name")
    p.add_argument("--source", default="", help="the kubelet's sources from this src directory instead")
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    if args.clusters < 1 or args.partitions % args.clusters:
        p.error(f"--partitions ({args.partitions}) must be a multiple of --clusters ({args.clusters})")
    revision = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout.strip()
    started = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    load_start = os.getloadavg()
    print(
        "kubelet_scale.py"
        + (f" --clusters {args.clusters}" if args.clusters > 1 else "")
        + f" --partitions {args.partitions} --minutes {args.minutes:g} --pods {args.pods}"
        + (f" --source {args.source}" if args.source else "")
        + ","
        f" {started}, revision {revision}, load {' '.join(f'{x:.2f}' for x in load_start)}",
        flush=True,
    )
    partitions = slurm_partitions(args.partitions // args.clusters)
    print(f"slurm-local: {len(partitions)} partitions", flush=True)
    run = start(args)
    try:
        result = asyncio.run(measure(args, run, partitions))
    finally:
        stop(run)
        scancel_name_prefix(PREFIX)
    result["load_start"] = list(load_start)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0


async def measure(args: argparse.Namespace, run: Started, partitions: list[str]) -> dict[str, Any]:
    kube = await KubeClient.connect(str(run.plane.kubeconfig))
    clusters = cluster_names(args)
    wanted = {names.node_name(cluster, part) for cluster in clusters for part in partitions}
    kubelet, plane, base = run.kubelet, run.plane, run.base
    seen = Observed()
    halt = asyncio.Event()
    t0 = run.started_at
    try:
        await forget_pods(kube)
        while True:
            states = await ready_nodes(kube, clusters)
            ready = sum(1 for name, s in states.items() if name in wanted and s == "True")
            if ready == len(wanted):
                break
            if kubelet.poll() is not None:
                raise SystemExit(f"the kubelet exited ({kubelet.returncode}); see {base / 'kubelet.log'}")
            if time.monotonic() - t0 > 900:
                raise SystemExit(f"{ready} of {len(wanted)} nodes Ready after 900 s")
            await asyncio.sleep(1)
        registered_s = time.monotonic() - t0
        print(f"all {len(wanted)} nodes Ready {registered_s:.1f} s after the kubelet started", flush=True)
        if len(clusters) == 1:
            bound = sorted(wanted)[: args.pods]
        else:  # the first nodes of each cluster
            each = args.pods // len(clusters)
            bound = [n for c in clusters for n in sorted(names.node_name(c, p) for p in partitions)[:each]]
        for index, node in enumerate(bound):
            await kube.create(PODS, held_pod(PREFIX, index, node), namespace=NAMESPACE)

        async def submitted() -> int:
            listing = await kube.list(PODS, namespace=NAMESPACE)
            return sum(
                1
                for item in listing.get("items") or []
                if item["metadata"]["name"].startswith(f"{PREFIX}-")
                and names.ANNOTATION_JOB_ID in (item["metadata"].get("annotations") or {})
            )

        while (count := await submitted()) < len(bound):
            if time.monotonic() - t0 > 1200:
                raise SystemExit(f"{count} of {len(bound)} held pods submitted after 1200 s")
            await asyncio.sleep(1)
        print(f"{len(bound)} held pods submitted (one on each of the first nodes)", flush=True)
        tasks = [
            asyncio.ensure_future(watch_leases(kube, wanted, seen)),
            asyncio.ensure_future(watch_ready(kube, clusters, seen, halt, t0)),
        ]
        await asyncio.sleep(12)  # every Lease read once before the gaps count
        seen.soaking = True
        first = folded(await scrape(run.metrics_port))
        cpu0, plane0 = cpu_meter.process_times(kubelet.pid)[0], plane.cpu_seconds()
        soak0 = time.monotonic()
        loads = [os.getloadavg()[0]]
        print("samples: seconds into the soak, kubelet RSS (MB), kubelet CPU so far (s), load (1 min)")
        while (elapsed := time.monotonic() - soak0) < args.minutes * 60:
            if kubelet.poll() is not None:
                raise SystemExit(f"the kubelet exited ({kubelet.returncode}); see {base / 'kubelet.log'}")
            rss = rss_mb(kubelet.pid)
            seen.rss.append(rss)
            cpu = cpu_meter.process_times(kubelet.pid)[0] - cpu0
            load = os.getloadavg()[0]
            if int(elapsed) % 60 == 0 and elapsed > 1:
                loads.append(load)
            print(f"t={elapsed:7.1f} rss_mb={rss:6.1f} cpu_s={cpu:7.2f} load={load:.2f}", flush=True)
            await asyncio.sleep(1.0 - (time.monotonic() - soak0) % 1.0)
        minutes = (time.monotonic() - soak0) / 60
        last = folded(await scrape(run.metrics_port))
        cpu = cpu_meter.process_times(kubelet.pid)[0] - cpu0
        plane1 = plane.cpu_seconds()
        halt.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        figures = kubelet_figures(first, last, minutes)
        gaps = seen.gaps
        writes = sum(figures["status_writes"].values()) + figures["lease_renewals"]
        flapped = sorted({name for _, name, _ in seen.not_ready})
        result = {
            "partitions": len(partitions) * len(clusters),
            "clusters": len(clusters),
            "partitions_per_cluster": len(partitions),
            "nodes": len(wanted),
            "minutes": minutes,
            "registered_s": registered_s,
            "load_max": max(loads),
            "load_mean": statistics.fmean(loads),
            "rss_samples": len(seen.rss),
            "rss_max_mb": max(seen.rss),
            "rss_end_mb": seen.rss[-1],
            "rss_median_mb": statistics.median(seen.rss),
            "rss_hwm_mb": rss_mb(kubelet.pid, "VmHWM"),
            "kubelet_cpu_s": cpu,
            "kubelet_cpu_s_per_min": cpu / minutes,
            "kubelet_cpu_ms_per_tick": 1000 * cpu / max(figures["status_ticks"], 1.0),
            "kubelet_cpu_ms_per_write": 1000 * cpu / max(writes, 1.0),
            "plane_cpu_s_per_min": {k: (plane1[k] - plane0[k]) / minutes for k in plane1},
            "lease_gaps": len(gaps),
            "lease_gap_max_s": max(gaps, default=0.0),
            "lease_gap_p99_s": quantile(gaps, 0.99) if gaps else 0.0,
            "lease_gap_median_s": quantile(gaps, 0.5) if gaps else 0.0,
            "lease_late": sum(1 for g in gaps if g > RENEW_INTERVAL + LATE_SLACK),
            "lease_expired": sum(1 for g in gaps if g > LEASE_DURATION),
            "lease_gap_buckets": {
                f"{low:g}-{high:g}": sum(1 for g in gaps if low < g <= high)
                for low, high in (
                    (0, 9),
                    (9, 10.5),
                    (10.5, 11),
                    (11, 12),
                    (12, 15),
                    (15, 20),
                    (20, 40),
                    (40, 1e9),
                )
            },
            "lateness_p99_bound_s": bucket_bound(figures["lateness_buckets"], 0.99),
            "not_ready_reads": len(seen.not_ready),
            "not_ready_nodes": flapped[:20],
            **figures,
        }
        print(
            f"soak: {minutes:.1f} min, {len(wanted)} nodes, {len(bound)} held pods, load mean"
            f" {result['load_mean']:.2f}, max {result['load_max']:.2f}"
        )
        print(
            f"kubelet RSS: max {result['rss_max_mb']:.1f} MB, end {result['rss_end_mb']:.1f} MB, median"
            f" {result['rss_median_mb']:.1f} MB ({len(seen.rss)} samples),"
            f" VmHWM {result['rss_hwm_mb']:.1f} MB"
        )
        print(
            f"Lease renewals read back: {len(gaps)} gaps, median {result['lease_gap_median_s']:.2f} s, p99"
            f" {result['lease_gap_p99_s']:.2f} s, max {result['lease_gap_max_s']:.2f} s; late (> "
            f"{RENEW_INTERVAL + LATE_SLACK:g} s) {result['lease_late']}, expired (> {LEASE_DURATION:g} s)"
            f" {result['lease_expired']}; by gap (s): {result['lease_gap_buckets']}"
        )
        print(
            f"kubelet: {result['lease_renewals_per_s']:.1f} Lease renewals/s, lateness mean"
            f" {result['lateness_mean_s'] * 1000:.1f} ms, 99% within {result['lateness_p99_bound_s']} s;"
            f" node status writes {result['status_writes_per_min']:.1f}/min {figures['status_writes']}"
        )
        print(f"nodes read not Ready: {len(seen.not_ready)} reads, nodes {flapped[:20]}")
        print(
            f"kubelet CPU: {cpu:.1f} s, {result['kubelet_cpu_s_per_min']:.2f} s/min,"
            f" {result['kubelet_cpu_ms_per_tick']:.1f} ms per pod status tick ({figures['status_ticks']:.0f}"
            f" ticks), {result['kubelet_cpu_ms_per_write']:.2f} ms per node write; plane CPU s/min"
            f" {json.dumps({k: round(v, 2) for k, v in result['plane_cpu_s_per_min'].items()})}"
        )
        result["pods"] = len(bound)
        for index in range(len(bound)):
            with contextlib.suppress(NotFound):
                await kube.delete(PODS, f"{PREFIX}-{index}", namespace=NAMESPACE)
        return result
    finally:
        halt.set()
        for cluster in clusters:
            await forget_cluster(kube, cluster)
        await kube.close()


if __name__ == "__main__":
    sys.exit(main())
