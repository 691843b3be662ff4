"""The pods section's goal (issue 35), from one run of bench/kubelet_submit.py.

Goal: 1,000 pods to job ids at >= 1.5x the sequential ``sbatch`` loop on the real control plane
(kube-apiserver and etcd); the in-memory plane is stated beside it. Each plane's figure is the
median of the rounds' ratios. Beside it, two bounds from the same rounds' CPU per pod: the most
the pods could reach with every core busy at that CPU per pod, and the same with wlmvk's own
parts (the kubelet and red-box) at nothing, which is what the rest of the path (the API server,
etcd, the controllers, Slurm and the benchmark's client) allows by itself on these cores: a goal
above that second bound cannot be met on this machine whatever wlmvk does.
"""

from __future__ import annotations

from typing import Any

import cpu_meter

PODS_X_LOOP = 1.5
OURS = ("kubelet", "red-box")
NAMES = {"real": "kube-apiserver", "memory": "the in-memory API server"}


def plane_cpus(result: dict[str, Any], plane: str) -> list[dict[str, float] | None]:
    """Each round's CPU per pod by part on ``plane`` (None for a round that did not read it)."""
    return [(r.get("planes") or {"memory": r})[plane].get("cpu_ms_per_pod") for r in result["rounds"]]


def bound(
    result: dict[str, Any], cpus: list[dict[str, float]], cores: int, *, less_ours: bool = False
) -> float:
    """The median over the rounds of the most the pods could reach against the round's loop with
    every core busy, at the round's CPU per pod (less wlmvk's own parts when ``less_ours``)."""
    return cpu_meter.median(
        [
            cores * 1000 / (cpu["total"] - (_ours(cpu) if less_ours else 0.0)) * r["loop_s"] / result["pods"]
            for cpu, r in zip(cpus, result["rounds"], strict=True)
        ]
    )


def _ours(cpu: dict[str, float]) -> float:
    """wlmvk's own CPU per pod in a round (the kubelet's and red-box's)."""
    return sum(cpu.get(part, 0.0) for part in OURS)


def goals(result: dict[str, Any]) -> list[str]:
    """One line per plane: its ratio to the loop, the verdict on the real plane, and both bounds."""
    planes: dict[str, Any] = result.get("planes") or {"memory": result}
    cores = int(result["machine"]["cores"])
    lines = []
    for p, plane in planes.items():
        read = plane_cpus(result, p)
        cpus = [cpu for cpu in read if cpu]
        if len(cpus) != len(read):
            continue
        x_loop = plane["x_loop"]
        verdict = (
            f" (goal >= {PODS_X_LOOP}: {'met' if x_loop >= PODS_X_LOOP else 'missed'})" if p == "real" else ""
        )
        at_cpu = bound(result, cpus, cores)
        without = bound(result, cpus, cores, less_ours=True)
        ours = cpu_meter.median([_ours(cpu) for cpu in cpus])
        lines.append(
            f"- {NAMES.get(p, p)}: {x_loop:.2f}x the loop{verdict}; on {cores} cores at its CPU per pod it"
            f" could reach at most {at_cpu:.2f}x, and {without:.2f}x with the kubelet's and red-box's"
            f" {ours:.2f} ms per pod at nothing (what the rest of the path takes"
            + (", kube-apiserver's serving of the kubelet's requests among it);" if p == "real" else ");")
        )
    return ["Pods to job ids against the loop:", *lines, *_requests(result)] if lines else []


def _requests(result: dict[str, Any]) -> list[str]:
    """kube-apiserver's requests per pod, by kind (median of the rounds), when the run counted them."""
    counted = [r["planes"]["real"]["apiserver_requests"] for r in result["rounds"] if _counted(r)]
    if not counted:
        return []
    kinds = sorted({kind for c in counted for kind in c}, key=lambda k: -max(c.get(k, 0) for c in counted))
    pods = result["pods"]
    per_pod = {kind: cpu_meter.median([c.get(kind, 0) / pods for c in counted]) for kind in kinds}
    shown = {kind: n for kind, n in per_pod.items() if n >= 0.005}  # a lease or a discovery now and then
    return [
        f"- kube-apiserver's requests per pod from the first pod created to the last annotated (its"
        f" /metrics, median of the rounds), {sum(per_pod.values()):.2f} in all: "
        + ", ".join(f"{kind} {n:.2f}" for kind, n in shown.items())
        + "; the pods are created on their node (no binding), so the kubelet's own writes are its"
        " job id annotation (PATCH pods) and its Events."
    ]


def _counted(r: dict[str, Any]) -> bool:
    return "apiserver_requests" in ((r.get("planes") or {}).get("real") or {})
