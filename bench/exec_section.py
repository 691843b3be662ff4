"""The ``kubectl exec`` benchmarks bench/run-all runs (bench/kubectl_exec.py, the ratio, then
bench/exec_hops.py, where its time goes hop by hop) and their section of docs/performance.md.
The tables and the bound come from the scripts' JSON, never typed.
"""

from __future__ import annotations

from typing import Any

EXEC = "kubectl-exec"
EXEC_ARGV = ["kubectl_exec.py", "--rounds", "5", "--execs", "10", "--lines", "100"]
HOPS = "kubectl-exec-hops"
HOPS_ARGV = ["exec_hops.py", "--execs", "30"]
OWNERS = ("kubectl", "API server", "wlmvk", "Slurm")
LABELS = {
    "kubectl loaded": "kubectl's TLS dial and GET of the pod through the API server",
    "exec sent": "kubectl's WebSocket dial, the API server's checks, its dial and TLS to the kubelet",
}
"""Hops (by their first point) named more exactly than runs before 2026-12-06 23:00 named them."""


PLANES = {
    "real": "kube-apiserver (WebSocket ended there, SPDY to the kubelet)",
    "memory": "the in-memory API server",
}
PASSED_THROUGH = "kube-apiserver (the WebSocket passed through to the kubelet, whose Node declares it)"
"""The real plane's route when the pod's Node declared ExtendWebSocketsToKubelet (runs after 490adf2)."""


def plane_name(plane: str, figures: dict[str, Any]) -> str:
    if plane == "real" and "ExtendWebSocketsToKubelet" in figures.get("declared", []):
        return PASSED_THROUGH
    return PLANES[plane]


def exec_section(result: dict[str, Any]) -> list[str]:
    m = result["machine"]
    planes = result.get("planes") or {"memory": result}

    def row(f: dict[str, Any], what: str) -> str:
        return f"| {what} | {f['n']} | {f['p50_s'] * 1000:.0f} | {f['p95_s'] * 1000:.0f} |"

    rows = [
        f"`bench/{' '.join(EXEC_ARGV)}`, {m['date']} (load {m['load']}): one pod's running Slurm job"
        f" on each plane, the real kubectl (`{result['kubectl']}`), red-box as the job owner running"
        " `srun --overlap`; the arms interleaved round by round. Raw output: `docs/raw/kubectl-exec.txt`.",
        "",
        "| round trip | n | p50 (ms) | p95 (ms) |",
        "|---|---|---|---|",
    ]
    for plane, f in planes.items():
        rows.append(
            row(f["exec"], f"`kubectl exec <pod> -- true`, the whole command, through {plane_name(plane, f)}")
        )
    rows.append(row(result["srun"], "`srun --overlap --jobid=<job> -- true` as the job owner, no Kubernetes"))
    if "kubectl_start" in result:
        rows.append(row(result["kubectl_start"], "`kubectl version --client`: kubectl's own start"))
    for plane, f in planes.items():
        through = plane_name(plane, f)
        echo = f"a line through an open `kubectl exec -i <pod> -- cat` and back, {through}"
        rows.append(row(f["echo"], echo))
    rows.append("")
    for plane, f in planes.items():
        wlmvk = (
            f"; less kubectl's own start, {f['wlmvk_x_srun_p50']:.2f}x (goal <= 1.5x)"
            if "wlmvk_x_srun_p50" in f
            else ""
        )
        rows.append(
            f"Through {plane_name(plane, f)}, `kubectl exec` takes {f['exec_x_srun_p50']:.2f}x (p50) and"
            f" {f['exec_x_srun_p95']:.2f}x (p95) the time of srun alone{wlmvk}."
        )
        rows.append("")
    return rows[:-1]


def hops_section(result: dict[str, Any]) -> list[str]:
    """Where one exec's time goes on each plane, whose each hop is, and the bound that leaves."""
    m = result["machine"]
    planes: dict[str, Any] = result["planes"]
    names = list(planes)
    rows = [
        f"Where the time goes: `bench/{' '.join(HOPS_ARGV)}`, {m['date']} (load {m['load']}), revision"
        f" {m['revision']}: one exec at a time on each plane, kubectl with `-v=7`, the kubelet and red-box"
        " at debug; each hop from one timestamp to the next (one machine, one clock). Raw output:"
        f" `docs/raw/{HOPS}.txt`.",
        "",
        "| hop | whose | " + " | ".join(f"{n} p50 (ms) | {n} p95 (ms)" for n in names) + " |",
        "|---|---|" + "---|---|" * len(names),
    ]

    def pair(f: dict[str, Any]) -> str:
        return f"{f['p50_ms']:.1f} | {f['p95_ms']:.1f}"

    for index, hop in enumerate(planes[names[0]]["hops"]):
        cells = " | ".join(pair(planes[n]["hops"][index]) for n in names)
        rows.append(f"| {LABELS.get(hop['from'], hop['what'])} | {hop['whose']} | {cells} |")
    summed = " | ".join(f"{sum(h['p50_ms'] for h in planes[n]['hops']):.1f} | " for n in names)
    rows.append(f"| the hops' p50s summed | | {summed}|")
    rows.append(f"| the whole command | | {' | '.join(pair(planes[n]['whole']) for n in names)} |")
    rows.append("")
    srun = result["srun"]["p50_ms"]
    notes = [f"`srun --overlap -- true` alone as the job owner in this run: p50 {srun:.1f} ms."]
    if "kubelet_tls" in result:
        notes.append(
            "A TCP connect and TLS handshake to the kubelet with kube-apiserver's kubelet-client"
            f" certificate (within the API server's hop): p50 {result['kubelet_tls']['p50_ms']:.1f} ms."
        )
    if "apiserver_tls" in result:
        notes.append(
            "A TCP connect and TLS handshake to kube-apiserver with the admin's certificate (kubectl"
            " makes two per exec, one in each of the API server's hops; the in-memory API server speaks"
            f" plain HTTP): p50 {result['apiserver_tls']['p50_ms']:.1f} ms."
        )
    tls = result["kubelet_tls"]["p50_ms"] if "kubelet_tls" in result else 0.0
    for n in names:
        f = planes[n]
        share = {owner: sum(h["p50_ms"] for h in f["hops"] if h["whose"] == owner) for owner in OWNERS}
        start = f["hops"][0]["p50_ms"]
        after = f["whole"]["p50_ms"] - start
        others = after - share["wlmvk"] - tls
        notes.append(
            f"On {n}: p50s by whose hop: "
            + ", ".join(f"{o} {share[o]:.1f} ms" for o in OWNERS)
            + f"; red-box's state check beside srun's start {f['state_check']['p50_ms']:.1f} ms. Less"
            f" kubectl's start ({start:.1f} ms) the command took {after:.1f} ms, {after / srun:.2f}x srun"
            f" alone; with every wlmvk hop and the whole handshake to the kubelet at nothing,"
            f" {others:.1f} ms, {others / srun:.2f}x (goal <= 1.5x): what kubectl, the API server and"
            " srun take there by themselves."
        )
    return [*rows, " ".join(notes)]
