"""Benchmark: where the time of one ``kubectl exec <pod> -- true`` goes, hop by hop, from timestamps.

One pod runs a real Slurm job (``sleep``) on each plane (``--plane``: ``real``, kube-apiserver of
dev/scripts/kube-local, ``memory``, the in-memory API server, or ``both``); the kubelet and red-box
log at debug and kubectl runs with ``-v=7``, so every exec leaves wall-clock timestamps (one
machine, one clock) at each hop:

- the bench: kubectl spawned, kubectl exited;
- kubectl (klog): its config loaded (its start done), the exec request sent (after its GET of the
  pod), the 101 answer, the session closed;
- the kubelet: the request received (after the API server's dial and the TLS handshake), let in
  by its gate (authentication and authorization), the WebSocket session up (101 sent), the
  command started (red-box said Started), ended;
- red-box: the Exec call asked, srun spawned, srun ended, and apart the job's state checked
  (beside srun's start from a job's second exec on, so outside the hops' sum).

Execs run one at a time, so each one's lines fall between its spawn and its exit. Prints the
median and p95 of each hop, whose it is (kubectl, the API server, wlmvk, Slurm), and their sum
against the median of the whole command; ``--json``
writes them. ``-v=7`` costs kubectl a little time: this script breaks the command down, it is not
the ratio (bench/kubectl_exec.py is).

    .venv/bin/python bench/exec_hops.py --execs 30
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import re
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from apiserver_requests import kubectl
from kubectl_exec import PARTITION, forget_clusters, sleeping_pod
from kubelet_stack import RealPlane
from quantiles import quantile
from slurm_side import USER, BenchRedBox, Processes, main_with_json

from wlmvk.core import names

K, A, W, S = "kubectl", "API server", "wlmvk", "Slurm"
HOPS: list[tuple[str, str, str, str]] = [
    ("spawned", "kubectl loaded", K, "kubectl's start (its process, its config)"),
    ("kubectl loaded", "exec sent", A, "kubectl's TLS dial and GET of the pod through the API server"),
    (
        "exec sent",
        "kubelet received",
        A,
        "kubectl's WebSocket dial, the API server's checks, its dial and TLS to the kubelet",
    ),
    ("kubelet received", "kubelet let in", W, "the kubelet's gate (authentication, authorization)"),
    ("kubelet let in", "kubelet upgraded", W, "the kubelet: the pod looked up, the WebSocket upgrade"),
    ("kubelet upgraded", "red-box asked", W, "the kubelet to red-box: the Exec call (gRPC)"),
    ("red-box asked", "srun spawned", W, "red-box: srun spawned (after the state on a job's first exec)"),
    ("srun spawned", "srun ended", S, "srun --overlap -- true, spawned to its end"),
    ("srun ended", "kubectl closed", W, "back: red-box, the kubelet, the API server, kubectl's close"),
    ("kubectl closed", "exited", K, "kubectl's exit"),
]
"""(from, to, whose, what): consecutive points, so the hops add up to the whole command."""

KLOG = re.compile(r"^I(\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2}\.\d{6}) ")
KUBECTL_POINTS: dict[str, Callable[[str], bool]] = {
    "kubectl loaded": lambda line: "Config loaded" in line,
    "exec sent": lambda line: '"Request"' in line and "/exec?" in line,
    "kubectl upgraded": lambda line: "101 Switching Protocols" in line,
    "kubectl closed": lambda line: "Closed channel" in line,
}
KUBELET_POINTS: dict[str, Callable[[str], bool]] = {
    "kubelet received": lambda e: e == "request received",
    "kubelet let in": lambda e: e == "request let in",
    "kubelet upgraded": lambda e: e.startswith("exec session over"),
}
RED_BOX_POINTS: dict[str, Callable[[str], bool]] = {
    "red-box asked": lambda e: e == "exec asked",
    "srun spawned": lambda e: e == "exec: srun spawned",
    "state checked": lambda e: e == "exec: state checked",
    "srun ended": lambda e: e == "exec ended",
}


def klog_time(line: str, year: int) -> float | None:
    """The wall-clock second of a klog line (kubectl runs with TZ=UTC)."""
    m = KLOG.match(line)
    if m is None:
        return None
    month, day, hour, minute, second = m.groups()
    whole, fraction = second.split(".")
    when = datetime.datetime(
        year, int(month), int(day), int(hour), int(minute), int(whole), tzinfo=datetime.UTC
    )
    return when.timestamp() + int(fraction) / 1e6


def log_events(path: Path) -> list[tuple[float, str, str]]:
    """(time, event, path) of each JSON line of a structlog log."""
    events = []
    for line in path.read_text(errors="replace").splitlines():
        if not line.startswith("{"):
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        stamp = entry.get("timestamp")
        if not stamp:
            continue
        when = datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
        events.append((when, str(entry.get("event", "")), str(entry.get("path", ""))))
    return events


def one_exec(argv: list[str], env: dict[str, str]) -> tuple[float, float, list[str]]:
    spawned = time.time()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    exited = time.time()
    if done.returncode != 0:
        raise SystemExit(f"kubectl exec failed ({done.returncode}): {done.stderr[-2000:]}")
    return spawned, exited, done.stderr.splitlines()


def points_of(
    spawned: float, exited: float, klog: list[str], kubelet: list[tuple[float, str, str]],
    red_box: list[tuple[float, str, str]],
) -> dict[str, float]:  # fmt: skip
    points = {"spawned": spawned, "exited": exited}
    year = datetime.datetime.fromtimestamp(spawned, datetime.UTC).year
    for line in klog:
        for name, hit in KUBECTL_POINTS.items():
            if name not in points and hit(line):
                when = klog_time(line, year)
                if when is not None:
                    points[name] = when
    for events, table in ((kubelet, KUBELET_POINTS), (red_box, RED_BOX_POINTS)):
        for when, event, path in events:
            if not spawned <= when <= exited:
                continue
            if event.startswith("request ") and not path.startswith("/exec/"):
                continue
            for name, hit in table.items():
                if name not in points and hit(event):
                    points[name] = when
    return points


def handshakes(port: int, cert: Path, key: Path, count: int) -> list[float]:
    """Seconds of each of ``count`` fresh TCP connects and TLS handshakes to ``port`` on loopback
    with the client certificate ``cert`` (as a dial per exec; no request sent)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # kube-apiserver does not verify kubelets here either; the
    # server's side of the handshake is the same whether the client verifies it or not
    context.load_cert_chain(str(cert), str(key))
    took = []
    for _ in range(count):
        start = time.perf_counter()
        with socket.create_connection(("127.0.0.1", port)) as raw, context.wrap_socket(raw):
            took.append(time.perf_counter() - start)
    return took


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50_ms": quantile(ordered, 0.5) * 1000,
        "p95_ms": quantile(ordered, 0.95) * 1000,
        "n": len(values),
    }


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    planes = ["real", "memory"] if args.plane == "both" else [args.plane]
    real = RealPlane.up() if "real" in planes else None
    red_box = BenchRedBox(args=["--log-level", "debug"], count_commands=False).start()
    procs = Processes(red_box.base)
    binary = kubectl()
    sessions: dict[str, tuple[str, dict[str, str], str]] = {}
    execs: dict[str, list[dict[str, float]]] = {plane: [] for plane in planes}
    srun_took: list[float] = []
    tls_took: list[float] = []
    apiserver_tls: list[float] = []
    try:
        for plane in planes:
            namespace, env, job, _ = await sleeping_pod(
                red_box, procs, real if plane == "real" else None, "--log-level", "debug"
            )
            sessions[plane] = (namespace, env | {"TZ": "UTC"}, job)
        first_job = sessions[planes[0]][2]
        srun = ["runuser", "-u", USER, "--", "srun", "--overlap", f"--jobid={first_job}", "--quiet"]
        runs: dict[str, list[tuple[float, float, list[str]]]] = {plane: [] for plane in planes}
        for _ in range(args.execs):
            start = time.perf_counter()
            await asyncio.to_thread(subprocess.run, [*srun, "--", "true"], capture_output=True, check=True)
            srun_took.append(time.perf_counter() - start)
            for plane, (namespace, env, _) in sessions.items():
                argv = [binary, "-v=7", "-n", namespace, "exec", "sleeper", "--", "true"]
                runs[plane].append(await asyncio.to_thread(one_exec, argv, env))
        if real is not None:
            namespace = sessions["real"][0]
            argv = [binary, "get", "node", names.node_name(namespace, PARTITION), "-o", "json"]
            env = sessions["real"][1]
            got = await asyncio.to_thread(subprocess.run, argv, capture_output=True, text=True, env=env)
            node = json.loads(got.stdout)
            port = int(node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"])
            pki = real.run.parent / "pki"
            cert, key = pki / "apiserver-kubelet-client.crt", pki / "apiserver-kubelet-client.key"
            tls_took = await asyncio.to_thread(handshakes, port, cert, key, args.execs)
            # kubectl's two dials per exec (the GET, the WebSocket) to kube-apiserver, as the admin.
            server = re.search(r"server: https://[^\s:]+:(\d+)", real.kubeconfig.read_text())
            assert server is not None, f"no server in {real.kubeconfig}"
            plane_port = int(server.group(1))
            admin = (pki / "admin.crt", pki / "admin.key")
            apiserver_tls = await asyncio.to_thread(handshakes, plane_port, *admin, args.execs)
        await asyncio.sleep(0.5)  # the last lines written
        red_box_events = log_events(red_box.base / "red-box.log")
        for plane, (namespace, _, _) in sessions.items():
            kubelet_events = log_events(red_box.base / f"kubelet-{namespace}.log")
            for spawned, exited, klog in runs[plane]:
                execs[plane].append(points_of(spawned, exited, klog, kubelet_events, red_box_events))
    finally:
        procs.close()
        red_box.stop()
        for _, _, job in sessions.values():
            await asyncio.to_thread(subprocess.run, ["scancel", job], capture_output=True, check=False)
        if real is not None:
            await forget_clusters(real, [namespace for namespace, _, _ in sessions.values()])
    figures: dict[str, Any] = {
        "execs": args.execs,
        "kubectl": binary,
        "srun": summary(srun_took),
        "planes": {},
    }
    if tls_took:
        figures["kubelet_tls"] = summary(tls_took)
        figures["apiserver_tls"] = summary(apiserver_tls)
    print(f"kubectl: {binary} (-v=7); {args.execs} execs per plane, one at a time")
    if tls_took:
        tls = figures["kubelet_tls"]
        print(f"a TCP connect and TLS handshake to the kubelet, with kube-apiserver's kubelet-client"
              f" certificate: p50 {tls['p50_ms']:.1f} ms, p95 {tls['p95_ms']:.1f} ms")  # fmt: skip
        tls = figures["apiserver_tls"]
        print(f"a TCP connect and TLS handshake to kube-apiserver, with the admin's certificate:"
              f" p50 {tls['p50_ms']:.1f} ms, p95 {tls['p95_ms']:.1f} ms")  # fmt: skip
    print(f"srun --overlap -- true alone (the job owner): p50 {figures['srun']['p50_ms']:.1f} ms")
    for plane in planes:
        complete = [p for p in execs[plane] if all(a in p and b in p for a, b, _, _ in HOPS)]
        hops: list[dict[str, Any]] = []
        for a, b, whose, what in HOPS:
            hop = summary([p[b] - p[a] for p in complete])
            hops.append({"from": a, "to": b, "whose": whose, "what": what, **hop})
        whole = summary([p["exited"] - p["spawned"] for p in complete])
        # Beside the hops, not in their sum: the state check runs alongside srun's start.
        check = summary([p["state checked"] - p["red-box asked"] for p in complete if "state checked" in p])
        figures["planes"][plane] = {
            "hops": hops,
            "whole": whole,
            "complete": len(complete),
            "state_check": check,
        }
        print(f"{plane}: {len(complete)} of {len(execs[plane])} execs with every point;"
              f" the whole command p50 {whole['p50_ms']:.1f} ms, p95 {whole['p95_ms']:.1f} ms")  # fmt: skip
        for h in hops:
            print(f"  {h['p50_ms']:6.1f} ms p50, {h['p95_ms']:6.1f} ms p95  {h['whose']:10}  {h['what']}")
        print(f"  {sum(h['p50_ms'] for h in hops):6.1f} ms: the p50s summed")
        print(f"  beside them: red-box's state check, asked to answered, p50 {check['p50_ms']:.1f} ms")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--execs", type=int, default=30, help="kubectl exec calls per plane")
    parser.add_argument("--plane", default="both", choices=("both", "real", "memory"))
    # A benchmark stopped from outside still stops what it started (measure's finally).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    main_with_json(parser, measure)


if __name__ == "__main__":
    main()
