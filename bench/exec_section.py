"""The ``kubectl exec`` benchmark bench/run-all runs (bench/kubectl_exec.py) and its section of
docs/performance.md. The table comes from the script's JSON, never typed.
"""

from __future__ import annotations

from typing import Any

EXEC = "kubectl-exec"
EXEC_ARGV = ["kubectl_exec.py", "--rounds", "5", "--execs", "10", "--lines", "100"]


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
