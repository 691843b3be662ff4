"""The SlurmJobs benchmark bench/run-all runs (bench/slurmjobs_e2e.py) and its section of
docs/performance.md: each round's ways, the medians against the goal, CPU per job by part, and
where the time went (stages, kube-apiserver's requests). Tables come from the script's JSON,
never typed; a run recorded before rounds (one ``sbatch`` and ``planes`` at the top) reads as one round.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import cpu_meter
from perf_sections import PLANE_NAMES
from quantiles import quantile

from wlmvk.kubelet.settings import Settings as KubeletSettings

SLURMJOBS = "slurmjobs-e2e"
SLURMJOBS_ARGV = ["slurmjobs_e2e.py", "--count", "200", "--rounds", "3"]
GOAL = 1.15
"""All SlurmJobs settled within this many times `sbatch` alone's time (issue 35)."""
RAW = Path(__file__).resolve().parents[1] / "docs" / "raw"
BEFORE = RAW / f"{SLURMJOBS}-before.json"
"""The kept run before the operator's Events and status writes were cut (issue 35), for the counts."""
APPLY = RAW / "slurmjobs-kubectl-apply-requests.txt"
"""kube-apiserver's requests made by the benchmark's `kubectl apply` alone (no wlmvk running)."""
STATUS_INTERVAL = KubeletSettings.status_interval
"""The kubelet's status tick in a run that recorded none (its default)."""
WLMVK_WRITES = ("POST events", "PATCH slurmjobs/status", "PATCH pods/status", "PATCH pods", "POST pods")
"""The requests per SlurmJob that wlmvk's operator and kubelet make (Events: the scheduler's too)."""


def slurmjobs_section(result: dict[str, Any]) -> list[str]:
    m = result["machine"]
    rounds = result.get("rounds") or [{"sbatch": result.get("sbatch"), "planes": result.get("planes")}]
    planes = list(rounds[0]["planes"])
    rows = [
        f"`bench/slurmjobs_e2e.py --count {result['count']}`, {m['date']} (load {m['load']}), {len(rounds)}"
        f" round(s): one `kubectl apply` of {result['count']} SlurmJobs (no staging, each a one-line batch"
        " script) through the whole system as processes (a control plane with its scheduler, operator,"
        " kubelet, red-box, real Slurm), until every one has Succeeded; latency from the apply to each"
        " one Succeeded; beside it the same scripts by `sbatch` alone to the same Slurm, timed from the"
        " first submission to each job leaving the queue. Each round runs every way in an order rotated"
        " from round to round; a ratio is taken against the same round's `sbatch` alone. Raw output:"
        f" `docs/raw/{SLURMJOBS}.txt`.",
        "",
        "| round | way | Succeeded | Failed | all settled (s) | jobs/s | p50 (s) | p95 (s) | x sbatch's time "
        "| x sbatch's p95 | operator CPU (s) | operator peak RSS sampled / VmHWM (MB) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for number, round_ in enumerate(rounds, 1):
        sbatch = round_["sbatch"]
        for plane, r in round_["planes"].items():
            x_time = r["total_s"] / sbatch["total_s"]
            rows.append(
                f"| {number} | SlurmJobs, {PLANE_NAMES[plane]} | {r['succeeded']} | {r['failed']}"
                f" | {r['total_s']:.1f} | {r['per_s']:.2f} | {r['p50_s']:.1f} | {r['p95_s']:.1f}"
                f" | {x_time:.2f}"
                f" | {r['p95_s'] / sbatch['p95_s']:.2f} | {r['operator_cpu_s']:.1f}"
                f" | {r['operator_rss_peak_sampled_mb']:.0f} / {r['operator_rss_hwm_mb']:.0f} |"
            )
        rows.append(
            f"| {number} | `sbatch` alone | | | {sbatch['total_s']:.1f} | {sbatch['per_s']:.2f}"
            f" | {sbatch['p50_s']:.1f} | {sbatch['p95_s']:.1f} | 1.00 | 1.00 | | |"
        )
    ratios = {plane: _ratios(rounds, plane) for plane in planes}
    verdicts = "; ".join(
        f"{PLANE_NAMES[plane]} {cpu_meter.median(x):.2f}x"
        f" ({'met' if cpu_meter.median(x) <= GOAL else 'missed'}; rounds {', '.join(f'{v:.2f}' for v in x)}),"
        f" p95 {cpu_meter.median(p95):.2f}x sbatch's p95"
        for plane, (x, p95) in ratios.items()
    )
    return [
        *rows,
        "",
        f"All settled against `sbatch` alone, median of the rounds, goal <= {GOAL}x: {verdicts}.",
        *_cpu(result["count"], rounds),
        *_where(rounds, ratios),
        *_writes(rounds, ratios),
        *_bound(rounds, ratios, cores=int(m.get("cores") or 2), tick=result.get("status_interval_s")),
    ]


def _ratios(rounds: list[dict[str, Any]], plane: str) -> tuple[list[float], list[float]]:
    """A plane's all-settled and p95 ratios to its round's ``sbatch`` alone, round by round."""
    times = [r["planes"][plane]["total_s"] / r["sbatch"]["total_s"] for r in rounds]
    p95s = [r["planes"][plane]["p95_s"] / r["sbatch"]["p95_s"] for r in rounds]
    return times, p95s


def _cpu(count: int, rounds: list[dict[str, Any]]) -> list[str]:
    """CPU per job by part in each way, median of the rounds (runs recorded before it: none)."""
    ways: dict[str, list[dict[str, float]]] = {}
    for round_ in rounds:
        for plane, r in round_["planes"].items():
            if "cpu_s" in r:
                ways.setdefault(f"SlurmJobs, {PLANE_NAMES[plane]}", []).append(r["cpu_s"])
        if "cpu_s" in round_["sbatch"]:
            ways.setdefault("`sbatch` alone", []).append(round_["sbatch"]["cpu_s"])
    if not ways:
        return []
    parts = list(dict.fromkeys(p for cpus in ways.values() for cpu in cpus for p in cpu if p != "total"))
    parts.append("total")

    def cell(cpus: list[dict[str, float]], part: str) -> str:
        if not any(part in cpu for cpu in cpus):
            return ""
        return f"{cpu_meter.median([cpu.get(part, 0.0) for cpu in cpus]) * 1000 / count:.1f}"

    return [
        "",
        "CPU per job from the apply (or the first `sbatch`) to the last one settled, by part (ms, median"
        " of the rounds, read from /proc: red-box children are its `sbatch` and `scancel`; apiserver is"
        " kube-apiserver or the in-memory server with its controllers; controllers the"
        " controller-manager and scheduler; client the benchmark's own process (its watches); for"
        " `sbatch` alone, sbatch is every process the benchmark ran: `runuser`, `sbatch` and its"
        " `squeue` polls every 0.2 s):",
        "",
        "| way | " + " | ".join(parts) + " |",
        "|---|" + "---|" * len(parts),
        *(f"| {way} | " + " | ".join(cell(cpus, p) for p in parts) + " |" for way, cpus in ways.items()),
    ]


def _where(rounds: list[dict[str, Any]], ratios: dict[str, tuple[list[float], list[float]]]) -> list[str]:
    """Where the time went in each plane's median round: the stages, kube-apiserver's requests."""
    chosen: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    for plane, (times, _) in ratios.items():
        number = times.index(cpu_meter.median(times))
        r = rounds[number]["planes"][plane]
        if r.get("stages"):
            chosen[plane] = (r, rounds[number]["sbatch"])
    if not chosen:
        return []
    stages = list(next(iter(chosen.values()))[0]["stages"])

    def marks(after: list[float]) -> str:
        return " / ".join(f"{quantile(after, q):.1f}" for q in (0, 0.5, 0.95, 1))

    lines = [
        "",
        "Where the time went, in each plane's median round: when the SlurmJobs and their pods reached"
        " each stage, seconds after the apply (first / 50% / 95% / last, each first seen on a watch):",
        "",
        "| plane | " + " | ".join(stages) + " |",
        "|---|" + "---|" * len(stages),
        *(
            f"| {PLANE_NAMES[plane]} | " + " | ".join(marks(r["stages"][s]) for s in stages) + " |"
            for plane, (r, _) in chosen.items()
        ),
    ]
    for r, _ in chosen.values():
        if requests := r.get("apiserver_requests"):
            count = sum(requests.values())
            top = ", ".join(f"{kind} {n}" for kind, n in list(requests.items())[:8])
            lines += [
                "",
                f"kube-apiserver answered {count} requests in that round's run ({count / r['count']:.1f} per"
                f" SlurmJob; its /metrics), the most: {top}.",
            ]
    last_id = " and ".join(
        f"{r['stages']['job id annotated'][-1]:.1f} s ({PLANE_NAMES[p]}, `sbatch` alone all settled in"
        f" {s['total_s']:.1f} s that round)"
        for p, (r, s) in chosen.items()
    )
    cpu = " and ".join(
        f"{r['cpu_s']['total'] * 1000 / r['count']:.0f} ms ({PLANE_NAMES[p]}"
        + (f", kube-apiserver {r['cpu_s']['apiserver'] * 1000 / r['count']:.0f} ms" if p == "real" else "")
        + ")"
        for p, (r, _) in chosen.items()
        if "cpu_s" in r
    )
    return [
        *lines,
        "",
        f"Every job id was written (the last job submitted) by {last_id}. From then on the jobs wait in"
        " Slurm's queue, which starts them one after another in both ways (the pods' Running column),"
        f" on the same two cores as the control plane: a SlurmJob cost {cpu} of CPU in all, against the"
        " `sbatch` row above for a job by `sbatch` alone; then the kubelet's status tick (every 5 s,"
        " deferred while submissions wait) tells the pod.",
    ]


def _median_round(rounds: list[dict[str, Any]], times: list[float]) -> dict[str, Any]:
    return rounds[times.index(cpu_meter.median(times))]


def _writes(rounds: list[dict[str, Any]], ratios: dict[str, tuple[list[float], list[float]]]) -> list[str]:
    """kube-apiserver's requests per SlurmJob now and in the kept run before the cut, and whose."""
    if "real" not in ratios or not BEFORE.exists():
        return []
    now = _median_round(rounds, ratios["real"][0])["planes"]["real"]
    old = json.loads(BEFORE.read_text())
    old_rounds = old["rounds"]
    old_r = _median_round(old_rounds, _ratios(old_rounds, "real")[0])["planes"]["real"]

    def per(r: dict[str, Any], kind: str) -> str:
        return f"{r['apiserver_requests'].get(kind, 0) / r['count']:.2f}"

    rows = [
        "",
        "kube-apiserver's requests per SlurmJob (median rounds, its /metrics), before the operator's"
        " per-step Events and status writes were cut (revision"
        f" {old['machine']['revision']}, `docs/raw/{BEFORE.stem}.txt`) and now:",
        "",
        "| requests per SlurmJob | before | now |",
        "|---|---|---|",
        *(f"| {kind} | {per(old_r, kind)} | {per(now, kind)} |" for kind in WLMVK_WRITES),
        f"| all | {sum(old_r['apiserver_requests'].values()) / old_r['count']:.2f}"
        f" | {sum(now['apiserver_requests'].values()) / now['count']:.2f} |",
    ]
    sbatch_now = cpu_meter.median([r["sbatch"]["total_s"] for r in rounds])
    sbatch_old = cpu_meter.median([r["sbatch"]["total_s"] for r in old_rounds])
    rows += [
        "",
        f"The same {now['count']} scripts by `sbatch` alone took {sbatch_now:.1f} s (median of the rounds)"
        f" in this run and {sbatch_old:.1f} s in the run before (load {old['machine']['load']} at its"
        " start): each run's ratios are against its own `sbatch` alone, not against each other.",
    ]
    if APPLY.exists():
        made = dict(re.findall(r"^(\w+ [\w/]+) \d+: (\d+)$", APPLY.read_text(), re.M))
        alone = ", ".join(f"{kind} {n}" for kind, n in made.items())
        rows += [
            "",
            f"GET namespaces and GET slurmjobs are not wlmvk's: the benchmark's own `kubectl apply` of"
            f" {now['count']} SlurmJobs, with no wlmvk component running, made {alone}"
            f" (`docs/raw/{APPLY.name}`): it reads each object's namespace and the object before"
            " creating it.",
        ]
    return rows


def _bound(
    rounds: list[dict[str, Any]],
    ratios: dict[str, tuple[list[float], list[float]]],
    *,
    cores: int,
    tick: float | None,
) -> list[str]:
    """Where the goal is missed: when the last job ended and was told, and the CPU the way adds."""
    lines: list[str] = []
    interval = tick or STATUS_INTERVAL
    for plane, (times, _) in ratios.items():
        ratio = cpu_meter.median(times)
        if ratio <= GOAL:
            continue
        round_ = _median_round(rounds, times)
        r, sbatch = round_["planes"][plane], round_["sbatch"]
        if "cpu_s" not in r or "cpu_s" not in sbatch or not r.get("stages"):
            continue
        count = r["count"]
        ms = {part: v * 1000 / count for part, v in r["cpu_s"].items()}
        base = sbatch["cpu_s"]["total"] * 1000 / count
        plane_parts = [p for p in ("apiserver", "etcd", "controllers") if p in ms]
        ours = [p for p in ("operator", "kubelet", "red-box", "red-box children", "slurmrestd") if p in ms]
        extra = (ms["total"] - base) * count / 1000
        share = 100 * extra / (sbatch["total_s"] * cores)
        told = r["stages"]["pod Succeeded"][-1]
        lines += [
            "",
            f"What bounds {PLANE_NAMES[plane]} ({ratio:.2f}x, median round): `sbatch` alone saw its last"
            f" job leave the queue {sbatch['total_s']:.1f} s after the first submission (its `squeue`"
            f" every 0.2 s); here the last pod was told Succeeded {told:.1f} s after the apply and the"
            f" last SlurmJob settled at {r['total_s']:.1f} s. The kubelet learns that a job ended at its"
            f" next status tick (`--status-interval`, {interval:g} s in this run, {STATUS_INTERVAL:g} s by"
            f" default): up to {interval:g} s, {interval / sbatch['total_s']:.2f}x of"
            f" `sbatch` alone's time, after the job ended. CPU: a SlurmJob cost {ms['total']:.1f} ms in"
            f" all against {base:.1f} ms by `sbatch` alone, the control plane"
            f" ({', '.join(f'{p} {ms[p]:.1f}' for p in plane_parts) or 'none apart'})"
            f" {sum(ms[p] for p in plane_parts):.1f} ms, wlmvk"
            f" ({', '.join(f'{p} {ms[p]:.1f}' for p in ours)}) {sum(ms[p] for p in ours):.1f} ms; over"
            f" {count} SlurmJobs {extra:.1f} CPU s more than `sbatch` alone, {share:.0f}%"
            f" of the {cores} cores during `sbatch` alone's {sbatch['total_s']:.1f} s.",
        ]
    return lines
