"""The ``kubectl exec`` benchmark bench/run-all runs (bench/kubectl_exec.py) and its section of
docs/performance.md. The table comes from the script's JSON, never typed.
"""

from __future__ import annotations

from typing import Any

EXEC = "kubectl-exec"
EXEC_ARGV = ["kubectl_exec.py", "--rounds", "5", "--execs", "10", "--lines", "100"]


def exec_section(result: dict[str, Any]) -> list[str]:
    m = result["machine"]

    def row(arm: str, what: str) -> str:
        f = result[arm]
        return f"| {what} | {f['n']} | {f['p50_s'] * 1000:.0f} | {f['p95_s'] * 1000:.0f} |"

    return [
        f"`bench/{' '.join(EXEC_ARGV)}`, {m['date']} (load {m['load']}): one pod's running Slurm job,"
        f" the real kubectl (`{result['kubectl']}`) through the in-memory API server (which passes the"
        " WebSocket through to the kubelet), red-box as the job owner running `srun --overlap`; the"
        " arms interleaved round by round. Raw output: `docs/raw/kubectl-exec.txt`.",
        "",
        "| round trip | n | p50 (ms) | p95 (ms) |",
        "|---|---|---|---|",
        row("exec", "`kubectl exec <pod> -- true`, the whole command"),
        row("srun", "`srun --overlap --jobid=<job> -- true` as the job owner, no Kubernetes"),
        row("echo", "a line through an open `kubectl exec -i <pod> -- cat` and back"),
        "",
        f"`kubectl exec` takes {result['exec_x_srun_p50']:.2f}x (p50) and"
        f" {result['exec_x_srun_p95']:.2f}x (p95) the time of srun alone.",
    ]
